/* The convert stage's scalar conversions, one item at a time: float16 and
   bfloat16 to and from float32 and float64 by the float rule (convert.h),
   and the saturating rounding into integers. The SIMD kernels and the
   portable passes share them (convert.c, convert_x86.c, convert_neon.c);
   they are written without branches on the data where they can be, so
   that the compiler vectorises the passes. */
#ifndef FASTBLOCK_CONVERT_SCALAR_H
#define FASTBLOCK_CONVERT_SCALAR_H

#include <math.h>

#include "convert.h"

static inline float cv_f32_from_bits(uint32_t b) {
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static inline uint32_t cv_bits_of_f32(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

/* NaNs, by fastblock's one rule (convert.h): a NaN result keeps the
   source's sign, has its quiet bit set, and keeps the top of the
   payload (the fraction below the quiet bit): cut from the bottom where
   the result is narrower, zeros below where wider. The CPU's conversions
   between float32, float64 and float16 (x86-64 cvtss2sd, cvtsd2ss, F16C;
   aarch64 FCVT, whose default-NaN mode Linux leaves off) do exactly this;
   the software conversions below do it in bits. */

#if FB_NEON
/* aarch64: float16 by the CPU's FCVT (one rounding, to nearest even; a
   NaN by the rule above). The floating-point control state is Linux's
   default (no flush to zero), never changed here. */
static inline float cv_f32_from_f16(uint16_t h) {
    __fp16 x;
    memcpy(&x, &h, 2);
    return (float)x;
}

static inline double cv_f64_from_f16(uint16_t h) {
    __fp16 x;
    memcpy(&x, &h, 2);
    return (double)x;
}

static inline uint16_t cv_f16_from_f32(float f) {
    __fp16 x = (__fp16)f;
    uint16_t h;
    memcpy(&h, &x, 2);
    return h;
}

static inline uint16_t cv_f16_from_f64(double d) {
    __fp16 x = (__fp16)d;
    uint16_t h;
    memcpy(&h, &x, 2);
    return h;
}
#else
static inline double cv_f64_from_bits(uint64_t b) {
    double d;
    memcpy(&d, &b, 8);
    return d;
}

static inline uint64_t cv_bits_of_f64(double d) {
    uint64_t b;
    memcpy(&b, &d, 8);
    return b;
}

/* float16 bits to float32, exactly; a NaN quieted (0x400000), its payload
   kept. A subnormal is its significand times 2**-24, exact in float32. */
static inline float cv_f32_from_f16(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = h & 0x7c00u, mant = h & 0x03ffu;
    uint32_t bits = ((uint32_t)(h & 0x7fffu) + 0x1c000u) << 13;
    if (exp == 0x7c00u)
        bits = 0x7f800000u | (mant << 13) | (mant ? 0x400000u : 0u);
    if (exp == 0)
        bits = cv_bits_of_f32((float)mant * 0x1p-24f);
    return cv_f32_from_bits(bits | sign);
}

/* float16 bits to float64, exactly; a NaN quieted, its payload kept. */
static inline double cv_f64_from_f16(uint16_t h) {
    uint64_t sign = (uint64_t)(h & 0x8000u) << 48, exp = h & 0x7c00u, mant = h & 0x03ffu;
    uint64_t bits = ((uint64_t)(h & 0x7fffu) + 0xfc000u) << 42;
    if (exp == 0x7c00u)
        bits = 0x7ff0000000000000ull | (mant << 42) | (mant ? 0x8000000000000ull : 0u);
    if (exp == 0)
        bits = cv_bits_of_f64((double)mant * 0x1p-24);
    return cv_f64_from_bits(bits | sign);
}

/* Round the integer h up by one where the bits dropped below it, rem, are
   more than half, or exactly half and h is odd: round half to even. */
#define CV_ROUND_EVEN(h, rem, half) ((h) + (((rem) > (half)) | (((rem) == (half)) & ((h) & 1))))

/* float32 to float16 bits, rounded to nearest even, as NumPy rounds (a NaN
   quieted, the top of its payload kept). */
static inline uint16_t cv_f16_from_f32(float f) {
    uint32_t b = cv_bits_of_f32(f), sign = (b >> 16) & 0x8000u, a = b & 0x7fffffffu, h;
    if (a >= 0x7f800000u) {                 /* inf or NaN */
        h = 0x7c00u | ((a & 0x7fffffu) >> 13) | (a != 0x7f800000u ? 0x200u : 0u);
    } else if (a >= 0x47800000u) {          /* >= 2**16: past the largest float16 */
        h = 0x7c00u;
    } else if (a >= 0x38800000u) {          /* >= 2**-14: a normal float16 (may round to inf) */
        h = CV_ROUND_EVEN((a - 0x38000000u) >> 13, a & 0x1fffu, 0x1000u);
    } else if (a >= 0x33000000u) {          /* >= 2**-25: a subnormal, in units of 2**-24 */
        uint32_t m = (a & 0x7fffffu) | 0x800000u, shift = 126u - (a >> 23);
        h = CV_ROUND_EVEN(m >> shift, m & ((1u << shift) - 1u), 1u << (shift - 1u));
    } else {
        h = 0;
    }
    return (uint16_t)(sign | h);
}

/* float64 to float16 bits in one rounding (NumPy's rule, as above). */
static inline uint16_t cv_f16_from_f64(double d) {
    uint64_t b = cv_bits_of_f64(d), a = b & 0x7fffffffffffffffull, h;
    uint16_t sign = (uint16_t)((b >> 48) & 0x8000u);
    if (a >= 0x7ff0000000000000ull) {
        h = 0x7c00u | ((a & 0xfffffffffffffull) >> 42) | (a != 0x7ff0000000000000ull ? 0x200u : 0u);
    } else if (a >= 0x40f0000000000000ull) {
        h = 0x7c00u;
    } else if (a >= 0x3f10000000000000ull) {
        h = CV_ROUND_EVEN((a - 0x3f00000000000000ull) >> 42, a & 0x3ffffffffffull, 0x20000000000ull);
    } else if (a >= 0x3e60000000000000ull) {
        uint64_t m = (a & 0xfffffffffffffull) | 0x10000000000000ull, shift = 1051u - (a >> 52);
        h = CV_ROUND_EVEN(m >> shift, m & ((1ull << shift) - 1u), 1ull << (shift - 1u));
    } else {
        h = 0;
    }
    return (uint16_t)(sign | h);
}
#endif

/* float32 to bfloat16 bits, rounded to nearest even; a NaN quieted
   (0x40), the top of its payload kept. */
static inline uint16_t cv_bf16_from_f32(float f) {
    uint32_t b = cv_bits_of_f32(f);
    uint32_t rounded = (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
    /* Both computed, one chosen: no branch, so the loop vectorises. */
    return (uint16_t)((b & 0x7fffffffu) > 0x7f800000u ? (b >> 16) | 0x40u : rounded);
}

/* bfloat16 bits to float32, exactly; a NaN quieted, its payload kept. In
   16 bits: a magnitude past 0x7f80 (a NaN) carries into bit 15 when 0x7f
   is added, and that bit shifted down is the quiet bit 0x40 (so the loop
   vectorises 16 items a register). */
static inline float cv_f32_from_bf16(uint16_t h) {
    uint16_t quiet = (uint16_t)((((h & 0x7fffu) + 0x7fu) & 0x8000u) >> 9);
    return cv_f32_from_bits((uint32_t)(uint16_t)(h | quiet) << 16);
}

/* bfloat16 bits of a value x, from f, x rounded to nearest in float32,
   and whether |x| is above |f| (more) or below it (less). Rounding f to
   nearest even rounds x once, except where f is a bfloat16 tie (its low
   half 0x8000) and x is not: a rounding to float32 cannot step over a
   tie, which float32 holds, but can land on one. There x goes the way it
   lies: (b >> 16) is the tie's lower neighbour, + 1 its upper one. */
static inline uint16_t cv_bf16_near(float f, int more, int less) {
    uint32_t b = cv_bits_of_f32(f);
    if ((b & 0xffffu) == 0x8000u && (more | less))
        return (uint16_t)((b >> 16) + (uint32_t)more);
    return cv_bf16_from_f32(f);
}

/* float64 to bfloat16 bits in one rounding, to nearest even; a NaN from
   its own bits by the NaN rule (some CPUs' (float) of a NaN drops the
   payload). */
static inline uint16_t cv_bf16_from_f64(double d) {
    float f = (float)d;
    uint64_t bits;
    memcpy(&bits, &d, 8);
    if (d != d)
        return (uint16_t)(((bits >> 48) & 0x8000u) | 0x7fc0u | ((bits >> 45) & 0x7fu));
    return cv_bf16_near(f, fabs(d) > fabs((double)f), fabs(d) < fabs((double)f));
}

/* A 64-bit integer's magnitude to bfloat16 bits in one rounding. A tie is
   integer-valued and below 2**64, so it converts back exactly. */
static inline uint16_t cv_bf16_from_u64(uint64_t a) {
    float f = (float)a;
    uint64_t t = (cv_bits_of_f32(f) & 0xffffu) == 0x8000u ? (uint64_t)f : a;
    return cv_bf16_near(f, a > t, a < t);
}

static inline uint16_t cv_bf16_from_i64(int64_t x) {
    uint64_t a = x < 0 ? 0u - (uint64_t)x : (uint64_t)x;
    return (uint16_t)(cv_bf16_from_u64(a) | (x < 0 ? 0x8000u : 0u));
}

/* v rounded half to even (in the current rounding mode, as np.rint) and
   saturated to [lo, hi], NaN to 0. Saturating first is the same for these
   integer bounds; within them, adding and taking away 2**23 (with v's
   sign) leaves v rounded to an integer. */
static inline float cv_saturate(float v, float lo, float hi) {
    float c = v < lo ? lo : (v > hi ? hi : v);
    float big = c < 0 ? -0x1p23f : 0x1p23f;
    c = (c + big) - big;
    return v == v ? c : 0.0f;
}

/* A store of float32 into packed 8- or 16-bit integers (T, saturated to
   [LO, HI]) by SIMD: WIDTH items a round by the architecture's BODY (its
   floats at v + i, its result at dst + i * sizeof(T)); the last items,
   and results whose items are apart, by the portable rule. The portable
   loops' conditions on floats do not vectorise (a comparison with a NaN
   may trap, so the compiler keeps the branches). */
#define CV_INT_STORE(NAME, ATTR, T, LO, HI, WIDTH, ...)                                     \
    ATTR void NAME(char *dst, fb_intp step, const float *v, fb_intp n) {                    \
        fb_intp i = 0;                                                                      \
        if (step == (fb_intp)sizeof(T)) {                                                   \
            for (; i + (WIDTH) <= n; i += (WIDTH)) {                                        \
                __VA_ARGS__                                                                 \
            }                                                                               \
        }                                                                                   \
        for (; i < n; i++) {                                                                \
            T y = (T)(int32_t)cv_saturate(v[i], LO, HI);                                    \
            memcpy(dst + i * step, &y, sizeof(T));                                          \
        }                                                                                   \
    }

#endif
