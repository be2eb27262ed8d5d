/* The convert stage's kernels: see convert.h for the rule. A run goes in
   pieces of FB_CONVERT_PIECE items through v, a buffer of the compute type
   that stays in L1: load, scale and offset, store (convert_passes.h). The
   scalar conversions below are written without branches on the data where
   they can be, so that the compiler vectorises the passes. */
#include "convert.h"

#include <math.h>

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
    static ATTR void NAME(char *dst, fb_intp step, const float *v, fb_intp n) {             \
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

#if FB_X86_SIMD
#include <immintrin.h>

#include "lanes.h"

/* AVX2: saturated, then converted to int32 in the current rounding mode
   (cvtps2dq rounds as MXCSR says, which is np.rint's rounding) and packed.
   lo 0 (unsigned results, packed with unsigned saturation): by min alone,
   hi first (minps returns its second operand when one is a NaN, so a NaN
   stays one); cvtps2dq makes a NaN, and anything below -2^31, 0x80000000,
   and the packs take it and every negative to 0. Else by max and min (a
   NaN gives lo), the NaN then set to 0. */
static inline __attribute__((always_inline, target("avx2"))) __m256
cv_saturated_avx2(__m256 v, float lo, float hi) {
    __m256 c;
    if (lo == 0.0f)
        return _mm256_min_ps(_mm256_set1_ps(hi), v);
    c = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(lo)), _mm256_set1_ps(hi));
    return _mm256_andnot_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q), c);
}

/* 16 saturated floats to 16 int16s, in order, rounded as they convert. */
static inline __attribute__((always_inline, target("avx2"))) __m256i
cv_int16s_avx2(__m256 a, __m256 b, int to_unsigned) {
    __m256i ia = _mm256_cvtps_epi32(a), ib = _mm256_cvtps_epi32(b);
    __m256i packed = to_unsigned ? _mm256_packus_epi32(ia, ib) : _mm256_packs_epi32(ia, ib);
    return _mm256_permute4x64_epi64(packed, 0xd8);
}

/* The 32 floats of a round, saturated: a, b, c, d. */
#define CV_SATURATED_AVX2(LO, HI)                                                           \
    __m256 a = cv_saturated_avx2(_mm256_loadu_ps(v + i), LO, HI);                           \
    __m256 b = cv_saturated_avx2(_mm256_loadu_ps(v + i + 8), LO, HI);                       \
    __m256 c = cv_saturated_avx2(_mm256_loadu_ps(v + i + 16), LO, HI);                      \
    __m256 d = cv_saturated_avx2(_mm256_loadu_ps(v + i + 24), LO, HI);

CV_INT_STORE(store_u8_f32_x86, __attribute__((target("avx2"))), uint8_t, 0.0f, 255.0f, 32,
    CV_SATURATED_AVX2(0.0f, 255.0f)
    __m256i ab = cv_int16s_avx2(a, b, 0), cd = cv_int16s_avx2(c, d, 0);
    __m256i bytes = _mm256_permute4x64_epi64(_mm256_packus_epi16(ab, cd), 0xd8);
    _mm256_storeu_si256((__m256i *)(dst + i), bytes);
)
CV_INT_STORE(store_i8_f32_x86, __attribute__((target("avx2"))), int8_t, -128.0f, 127.0f, 32,
    CV_SATURATED_AVX2(-128.0f, 127.0f)
    __m256i ab = cv_int16s_avx2(a, b, 0), cd = cv_int16s_avx2(c, d, 0);
    __m256i bytes = _mm256_permute4x64_epi64(_mm256_packs_epi16(ab, cd), 0xd8);
    _mm256_storeu_si256((__m256i *)(dst + i), bytes);
)
CV_INT_STORE(store_u16_f32_x86, __attribute__((target("avx2"))), uint16_t, 0.0f, 65535.0f, 32,
    CV_SATURATED_AVX2(0.0f, 65535.0f)
    _mm256_storeu_si256((__m256i *)(dst + 2 * i), cv_int16s_avx2(a, b, 1));
    _mm256_storeu_si256((__m256i *)(dst + 2 * i + 32), cv_int16s_avx2(c, d, 1));
)
CV_INT_STORE(store_i16_f32_x86, __attribute__((target("avx2"))), int16_t, -32768.0f, 32767.0f,
             32,
    CV_SATURATED_AVX2(-32768.0f, 32767.0f)
    _mm256_storeu_si256((__m256i *)(dst + 2 * i), cv_int16s_avx2(a, b, 0));
    _mm256_storeu_si256((__m256i *)(dst + 2 * i + 32), cv_int16s_avx2(c, d, 0));
)

/* float32 into packed uint8 with the scale and offset in registers, 32
   items a round (the passes' affine and store in one: no round trip
   through v); the last items by the portable fused loop. SCALED, OFFSET:
   how a register of the 8 items from i + k takes them. */
#define CV_FUSED_U8_ROUND(SCALED, OFFSET)                                                   \
    for (; i + 32 <= n; i += 32) {                                                          \
        __m256 f[4];                                                                        \
        __m256i ab, cd;                                                                     \
        int k;                                                                              \
        for (k = 0; k < 4; k++) {                                                           \
            f[k] = _mm256_loadu_ps((const float *)src + i + 8 * k);                         \
            SCALED;                                                                         \
            OFFSET;                                                                         \
            f[k] = cv_saturated_avx2(f[k], 0.0f, 255.0f);                                   \
        }                                                                                   \
        ab = cv_int16s_avx2(f[0], f[1], 0);                                                 \
        cd = cv_int16s_avx2(f[2], f[3], 0);                                                 \
        _mm256_storeu_si256((__m256i *)(dst + i),                                           \
                            _mm256_permute4x64_epi64(_mm256_packus_epi16(ab, cd), 0xd8));   \
    }

#define CV_BY_VALUE(v, x) f[k] = _mm256_##x##_ps(f[k], v)
#define CV_BY_LINE(p, x) f[k] = _mm256_##x##_ps(f[k], _mm256_loadu_ps((p) + i + 8 * k))

static void fused_f32_u8_portable(char *dst, const char *src, fb_intp n, const float *s, int sm,
                                  const float *o, int om);

static __attribute__((target("avx2"))) void fused_f32_u8_x86(char *dst, const char *src,
                                                             fb_intp n, const float *s, int sm,
                                                             const float *o, int om) {
    const __m256 s0 = _mm256_set1_ps(sm == FB_AFFINE_VALUE ? s[0] : 1.0f);
    const __m256 o0 = _mm256_set1_ps(om == FB_AFFINE_VALUE ? o[0] : 0.0f);
    fb_intp i = 0;
    switch (sm * 3 + om) {
    case FB_AFFINE_NONE * 3 + FB_AFFINE_NONE: CV_FUSED_U8_ROUND(, ) break;
    case FB_AFFINE_NONE * 3 + FB_AFFINE_VALUE: CV_FUSED_U8_ROUND(, CV_BY_VALUE(o0, add)) break;
    case FB_AFFINE_NONE * 3 + FB_AFFINE_LINE: CV_FUSED_U8_ROUND(, CV_BY_LINE(o, add)) break;
    case FB_AFFINE_VALUE * 3 + FB_AFFINE_NONE: CV_FUSED_U8_ROUND(CV_BY_VALUE(s0, mul), ) break;
    case FB_AFFINE_VALUE * 3 + FB_AFFINE_VALUE:
        CV_FUSED_U8_ROUND(CV_BY_VALUE(s0, mul), CV_BY_VALUE(o0, add)) break;
    case FB_AFFINE_VALUE * 3 + FB_AFFINE_LINE:
        CV_FUSED_U8_ROUND(CV_BY_VALUE(s0, mul), CV_BY_LINE(o, add)) break;
    case FB_AFFINE_LINE * 3 + FB_AFFINE_NONE: CV_FUSED_U8_ROUND(CV_BY_LINE(s, mul), ) break;
    case FB_AFFINE_LINE * 3 + FB_AFFINE_VALUE:
        CV_FUSED_U8_ROUND(CV_BY_LINE(s, mul), CV_BY_VALUE(o0, add)) break;
    default: CV_FUSED_U8_ROUND(CV_BY_LINE(s, mul), CV_BY_LINE(o, add)) break;
    }
    fused_f32_u8_portable(dst + i, src + 4 * i, n - i, sm == FB_AFFINE_LINE ? s + i : s, sm,
                          om == FB_AFFINE_LINE ? o + i : o, om);
}
#undef CV_FUSED_U8_ROUND
#undef CV_BY_VALUE
#undef CV_BY_LINE

/* float32 to float16 by F16C: rounded to nearest even as NumPy rounds,
   overflow to inf, subnormals exact, a NaN by the NaN rule. */
static __attribute__((target("avx2,f16c"))) void store_f16_f32_x86(char *dst, fb_intp step,
                                                                   const float *v, fb_intp n) {
    fb_intp i = 0;
    if (step == 2)
        for (; i + 8 <= n; i += 8)
            _mm_storeu_si128((__m128i *)(dst + 2 * i),
                             _mm256_cvtps_ph(_mm256_loadu_ps(v + i),
                                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (; i < n; i++) {
        uint16_t y = cv_f16_from_f32(v[i]);
        memcpy(dst + i * step, &y, 2);
    }
}

/* float16 into float32 by F16C, 8 items a round: exact, a NaN by the NaN
   rule (vcvtph2ps quiets it, keeping its payload). */
static __attribute__((target("avx2,f16c"))) void load_f16_f32_x86(float *v, const char *src,
                                                                  fb_intp n) {
    fb_intp i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(v + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + 2 * i))));
    for (; i < n; i++) {
        uint16_t h;
        memcpy(&h, src + 2 * i, 2);
        v[i] = cv_f32_from_f16(h);
    }
}

/* bfloat16 into float32 by AVX2, 16 items a round: the top halves, a NaN
   quieted (cv_f32_from_bf16's carry, in 16-bit lanes). */
static __attribute__((target("avx2"))) void load_bf16_f32_x86(float *v, const char *src,
                                                              fb_intp n) {
    fb_intp i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i h = _mm256_loadu_si256((const __m256i *)(src + 2 * i));
        __m256i carry = _mm256_add_epi16(_mm256_and_si256(h, _mm256_set1_epi16(0x7fff)),
                                         _mm256_set1_epi16(0x7f));
        h = _mm256_or_si256(h, _mm256_srli_epi16(_mm256_and_si256(carry, _mm256_set1_epi16(
                                                     (short)0x8000)), 9));
        /* 64-bit quarters 0, 2, 1, 3: each unpack then takes items in order. */
        h = _mm256_permute4x64_epi64(h, 0xd8);
        _mm256_storeu_si256((__m256i *)(v + i), _mm256_unpacklo_epi16(_mm256_setzero_si256(), h));
        _mm256_storeu_si256((__m256i *)(v + i + 8), _mm256_unpackhi_epi16(_mm256_setzero_si256(), h));
    }
    for (; i < n; i++) {
        uint16_t h;
        memcpy(&h, src + 2 * i, 2);
        v[i] = cv_f32_from_bf16(h);
    }
}

/* bfloat16 straight from float64 and 32/64-bit integers (with the lanes
   kernels, whose bfloat16 rounding they share). */
static void bf16_from_f64_x86(char *dst, fb_intp step, const char *src, fb_intp n);
static void bf16_from_i32_x86(char *dst, fb_intp step, const char *src, fb_intp n);
static void bf16_from_u32_x86(char *dst, fb_intp step, const char *src, fb_intp n);
static void bf16_from_i64_x86(char *dst, fb_intp step, const char *src, fb_intp n);
static void bf16_from_u64_x86(char *dst, fb_intp step, const char *src, fb_intp n);
#endif

#if FB_NEON
#include <arm_neon.h>

/* NEON: rounded to an integer in the current mode (FRINTI: np.rint's
   rounding), then converted and narrowed with saturation: FCVTZS/FCVTZU
   saturate to 32 bits (a NaN gives 0; below 0 gives 0 unsigned), and
   SQXTN/UQXTN to each narrower width. So no FMAX/FMIN: 3 instructions
   for 4 floats, not 5. */
static inline int32x4_t cv_int32s_neon(float32x4_t v) {
    return vcvtq_s32_f32(vrndiq_f32(v));
}
static inline uint32x4_t cv_uint32s_neon(float32x4_t v) {
    return vcvtq_u32_f32(vrndiq_f32(v));
}

/* The 16 floats of a round, rounded and converted as TYPE (int32x4_t or
   uint32x4_t, by CONVERT): a, b, c, d. */
#define CV_INT32S_NEON(TYPE, CONVERT)                                                       \
    TYPE a = CONVERT(vld1q_f32(v + i)), b = CONVERT(vld1q_f32(v + i + 4));                  \
    TYPE c = CONVERT(vld1q_f32(v + i + 8)), d = CONVERT(vld1q_f32(v + i + 12));

/* 16 unsigned 32-bit items (a, b, c, d) as 16 bytes, saturated. */
static inline uint8x16_t cv_u8s_neon(uint32x4_t a, uint32x4_t b, uint32x4_t c, uint32x4_t d) {
    return vqmovn_high_u16(vqmovn_u16(vqmovn_high_u32(vqmovn_u32(a), b)),
                           vqmovn_high_u32(vqmovn_u32(c), d));
}

CV_INT_STORE(store_u8_f32_neon, , uint8_t, 0.0f, 255.0f, 16,
    CV_INT32S_NEON(uint32x4_t, cv_uint32s_neon)
    vst1q_u8((uint8_t *)(dst + i), cv_u8s_neon(a, b, c, d));
)
CV_INT_STORE(store_i8_f32_neon, , int8_t, -128.0f, 127.0f, 16,
    CV_INT32S_NEON(int32x4_t, cv_int32s_neon)
    vst1q_s8((int8_t *)(dst + i), vqmovn_high_s16(vqmovn_s16(vqmovn_high_s32(vqmovn_s32(a), b)),
                                                  vqmovn_high_s32(vqmovn_s32(c), d)));
)
CV_INT_STORE(store_u16_f32_neon, , uint16_t, 0.0f, 65535.0f, 16,
    CV_INT32S_NEON(uint32x4_t, cv_uint32s_neon)
    vst1q_u16((uint16_t *)(dst + 2 * i), vqmovn_high_u32(vqmovn_u32(a), b));
    vst1q_u16((uint16_t *)(dst + 2 * i + 16), vqmovn_high_u32(vqmovn_u32(c), d));
)
CV_INT_STORE(store_i16_f32_neon, , int16_t, -32768.0f, 32767.0f, 16,
    CV_INT32S_NEON(int32x4_t, cv_int32s_neon)
    vst1q_s16((int16_t *)(dst + 2 * i), vqmovn_high_s32(vqmovn_s32(a), b));
    vst1q_s16((int16_t *)(dst + 2 * i + 16), vqmovn_high_s32(vqmovn_s32(c), d));
)

/* float32 to float16 by FCVTN, as cv_f16_from_f32 converts (FCVT). */
static void store_f16_f32_neon(char *dst, fb_intp step, const float *v, fb_intp n) {
    fb_intp i = 0;
    if (step == 2)
        for (; i + 8 <= n; i += 8)
            vst1q_u16((uint16_t *)(dst + 2 * i),
                      vreinterpretq_u16_f16(vcvt_high_f16_f32(vcvt_f16_f32(vld1q_f32(v + i)),
                                                              vld1q_f32(v + i + 4))));
    for (; i < n; i++) {
        uint16_t y = cv_f16_from_f32(v[i]);
        memcpy(dst + i * step, &y, 2);
    }
}
#endif

typedef void (*cv_load_f32)(float *v, const char *src, fb_intp n);
typedef void (*cv_load_f64)(double *v, const char *src, fb_intp n);
typedef void (*cv_affine_f32)(float *v, fb_intp n, const float *s, int sm, const float *o, int om);
typedef void (*cv_affine_f64)(double *v, fb_intp n, const double *s, int sm, const double *o,
                              int om);
typedef void (*cv_affine_from_f32)(float *__restrict v, const float *__restrict x, fb_intp n,
                                   const float *s, int sm, const float *o, int om);
typedef void (*cv_affine_from_f64)(double *__restrict v, const double *__restrict x, fb_intp n,
                                   const double *s, int sm, const double *o, int om);
typedef void (*cv_store_f32)(char *dst, fb_intp step, const float *v, fb_intp n);
typedef void (*cv_store_f64)(char *dst, fb_intp step, const double *v, fb_intp n);

typedef void (*cv_fused)(char *dst, const char *src, fb_intp n, const float *s, int sm,
                         const float *o, int om);

typedef void (*cv_bf16_straight)(char *dst, fb_intp step, const char *src, fb_intp n);

typedef struct {
    cv_load_f32 load_f32[FB_NUM_TYPES];
    cv_load_f64 load_f64[FB_NUM_TYPES];
    cv_affine_f32 affine_f32;
    cv_affine_f64 affine_f64;
    cv_affine_from_f32 affine_from_f32; /* sources of the compute type: no load pass */
    cv_affine_from_f64 affine_from_f64;
    cv_store_f32 store_f32[FB_NUM_TYPES];       /* NULL: no such result from float32 */
    cv_store_f64 store_f64[FB_NUM_TYPES];       /* NULL: no such result from float64 */
    cv_fused fused[FB_NUM_TYPES][FB_NUM_TYPES]; /* [result][source]; NULL: by the passes */
    cv_bf16_straight bf16_straight[FB_NUM_TYPES]; /* without scale or offset; NULL: by the passes */
} FbConvertPasses;

#define FB_CV_ATTR
#define FB_CV_NAME(x) x##_portable
#include "convert_passes.h"
#undef FB_CV_ATTR
#undef FB_CV_NAME

#if FB_X86_SIMD
#define FB_CV_ATTR __attribute__((target("avx2")))
#define FB_CV_NAME(x) x##_avx2
#include "convert_passes.h"
#undef FB_CV_ATTR
#undef FB_CV_NAME
#endif

#if FB_X86_SIMD || FB_NEON
/* The SIMD passes: the AVX2 ones (on NEON the portable ones, which the
   compiler vectorises for NEON) with the SIMD stores above; their pairs
   go by the passes, not the fused loops, whose conversions into these
   types stay scalar (NEON, float32 to float16: 6.7 instructions an item
   by the fused loop, 1.7 by the passes, counted under qemu). Built by
   fb_convert_init, before any thread converts. */
static FbConvertPasses passes_simd;

static void build_simd_passes(const FbConvertPasses *base, cv_store_f32 u8, cv_store_f32 i8,
                              cv_store_f32 u16, cv_store_f32 i16, cv_store_f32 f16) {
    int s;
    passes_simd = *base;
    passes_simd.store_f32[FB_NUM_U8] = u8;
    passes_simd.store_f32[FB_NUM_I8] = i8;
    passes_simd.store_f32[FB_NUM_U16] = u16;
    passes_simd.store_f32[FB_NUM_I16] = i16;
    passes_simd.store_f32[FB_NUM_F16] = f16;
    for (s = 0; s < FB_NUM_TYPES; s++) {
        passes_simd.fused[FB_NUM_U8][s] = NULL;
        passes_simd.fused[FB_NUM_F16][s] = NULL;
    }
#if FB_X86_SIMD
    /* float16 and bfloat16 sources by their SIMD loads, then the passes
       (float16 into float32, 128x128x3: 18 -> 2 times a copy of the
       result, against the fused loops' scalar conversion). */
    for (s = 0; s < FB_NUM_TYPES; s++) {
        passes_simd.fused[s][FB_NUM_F16] = NULL;
        passes_simd.fused[s][FB_NUM_BF16] = NULL;
    }
    passes_simd.load_f32[FB_NUM_F16] = load_f16_f32_x86;
    passes_simd.load_f32[FB_NUM_BF16] = load_bf16_f32_x86;
    passes_simd.fused[FB_NUM_U8][FB_NUM_F32] = fused_f32_u8_x86;
    passes_simd.bf16_straight[FB_NUM_F64] = bf16_from_f64_x86;
    passes_simd.bf16_straight[FB_NUM_I32] = bf16_from_i32_x86;
    passes_simd.bf16_straight[FB_NUM_U32] = bf16_from_u32_x86;
    passes_simd.bf16_straight[FB_NUM_I64] = bf16_from_i64_x86;
    passes_simd.bf16_straight[FB_NUM_U64] = bf16_from_u64_x86;
#endif
}
#endif

static const fb_intp cv_item_bytes[FB_NUM_TYPES] = {1, 1, 1, 2, 2, 4, 4, 8, 8, 2, 2, 4, 8};

int fb_convert_compute(int src, int dst, int affine) {
    if (dst == FB_NUM_F64 || (src == FB_NUM_F64 && !affine && dst >= FB_NUM_F16))
        return FB_NUM_F64;
    return FB_NUM_F32;
}

/* fb_convert_run's pieces in the compute type CT (SUF its passes' suffix,
   NUM its type code). */
#define CV_PIECES(CT, SUF, NUM)                                                             \
    do {                                                                                    \
        CT v[FB_CONVERT_PIECE];                                                             \
        const CT *s = (const CT *)scale, *o = (const CT *)offset, *x;                       \
        int direct = cv->src == (NUM) && (uintptr_t)src % sizeof(CT) == 0;                  \
        for (i = 0; i < n; i += m) {                                                        \
            m = n - i < FB_CONVERT_PIECE ? n - i : FB_CONVERT_PIECE;                        \
            if (direct && !affine) {                                                        \
                x = (const CT *)src + i;                                                    \
            } else if (direct) {                                                            \
                passes->affine_from_##SUF(v, (const CT *)src + i, m, s_line ? s + i : s,    \
                                          cv->scale, o_line ? o + i : o, cv->offset);       \
                x = v;                                                                      \
            } else {                                                                        \
                passes->load_##SUF[cv->src](v, src + i * item, m);                          \
                passes->affine_##SUF(v, m, s_line ? s + i : s, cv->scale,                   \
                                     o_line ? o + i : o, cv->offset);                       \
                x = v;                                                                      \
            }                                                                               \
            passes->store_##SUF[cv->dst](dst + i * dst_step, dst_step, x, m);               \
        }                                                                                   \
    } while (0)

void fb_convert_run(const FbConvert *cv, char *dst, fb_intp dst_step, const char *src,
                    fb_intp n, const char *scale, const char *offset) {
    const FbConvertPasses *passes = &passes_portable;
    fb_intp i, m, item = cv_item_bytes[cv->src];
    /* Lines advance with the run; one value (or none: NULL) stays. A source
       of the compute type, aligned (the stage always is), is read where
       it lies: no load pass. */
    int s_line = cv->scale == FB_AFFINE_LINE, o_line = cv->offset == FB_AFFINE_LINE;
    int affine = cv->scale != FB_AFFINE_NONE || cv->offset != FB_AFFINE_NONE;
#if FB_X86_SIMD || FB_NEON
    if (cv->simd)
        passes = &passes_simd;
#endif
    if (cv->dst == FB_NUM_BF16 && !affine && passes->bf16_straight[cv->src] != NULL) {
        passes->bf16_straight[cv->src](dst, dst_step, src, n);
    } else if (cv->compute == FB_NUM_F32 && dst_step == cv_item_bytes[cv->dst]
            && passes->fused[cv->dst][cv->src] != NULL) {
        passes->fused[cv->dst][cv->src](dst, src, n, (const float *)scale, cv->scale,
                                        (const float *)offset, cv->offset);
    } else if (cv->dst == FB_NUM_F32 && cv->compute == FB_NUM_F32 && !affine && dst_step == 4
            && (uintptr_t)dst % 4 == 0) {
        passes->load_f32[cv->src]((float *)dst, src, n); /* the load is the conversion */
    } else if (cv->compute == FB_NUM_F32) {
        CV_PIECES(float, f32, FB_NUM_F32);
    } else {
        CV_PIECES(double, f64, FB_NUM_F64);
    }
}
#undef CV_PIECES

#if FB_X86_SIMD
static void cv_build_lane_masks(void);
#endif

void fb_convert_init(void) {
#if FB_X86_SIMD
    build_simd_passes(&passes_avx2, store_u8_f32_x86, store_i8_f32_x86, store_u16_f32_x86,
                      store_i16_f32_x86, store_f16_f32_x86);
    cv_build_lane_masks();
#elif FB_NEON
    build_simd_passes(&passes_portable, store_u8_f32_neon, store_i8_f32_neon, store_u16_f32_neon,
                      store_i16_f32_neon, store_f16_f32_neon);
#endif
}

/* The lane split and conversion in one pass (convert.h), 16 pixels at a
   time: their 48 or 64 bytes split into one register a lane (AVX2: byte
   shuffles, one mask a 16-byte chunk; NEON: LD3/LD4), then widened to
   float32, scaled, offset and stored as the result type; the last pixels
   item by item by the same operations (cv_lanes_tail). The interleave
   the other way: each plane's floats scaled, offset, rounded and
   saturated into bytes, then interleaved into pixels (AVX2: 32 pixels a
   round, byte shuffles or unpacks; NEON: 16, ST3/ST4); the last pixels by
   cv_pixels_tail. */
int fb_convert_lanes_runs(const FbConvert *cv, int lanes, int interleave) {
    int few = lanes == 3 || lanes == 4;
    if (!(FB_X86_SIMD || FB_NEON) || !cv->simd || cv->compute != FB_NUM_F32)
        return 0;
    if (interleave)
        return few && cv->src == FB_NUM_F32 && cv->dst == FB_NUM_U8;
    if (cv->dst != FB_NUM_F32 && cv->dst != FB_NUM_F16 && cv->dst != FB_NUM_BF16)
        return 0;
    if (cv->src == FB_NUM_U8)
        return few;
    /* Many lanes of 2-byte integers: AVX2 (elsewhere by the stage). */
    return FB_X86_SIMD && (cv->src == FB_NUM_U16 || cv->src == FB_NUM_I16)
           && lanes >= FB_CONVERT_WIDE_LANES_MIN && lanes <= FB_CONVERT_WIDE_LANES_MAX;
}

#if FB_X86_SIMD || FB_NEON
/* A lanes kernel's result type: bfloat16 where the scale and offset are
   finite. Then no NaN can come of the arithmetic (a uint8 times a finite
   scale is finite or overflows to an infinity, plus a finite offset stays
   one), and the rounding alone is vectorised: an infinity rounds to
   itself, the largest floats to an infinity, as the float rule rounds. */
#define CV_BF16_FINITE FB_NUM_TYPES

/* A lanes kernel's result type: bfloat16 by the CPU's conversion
   (vcvtne2ps2bf16, AVX-512 BF16: rounded to nearest even, but subnormal
   inputs and results taken as 0), where cv->bf16 says the CPU has it and
   no result can be NaN or subnormal: the scale and offset finite, each 0
   or of magnitude CV_BF16_NORMAL_MIN or more. Then, the sources being
   integers, x * s is 0 or at least |s|, and a sum of two such floats is
   a multiple of 2^-123, so 0 or normal. (On aarch64, the rounding alone.) */
#if FB_X86_SIMD
#define CV_BF16_NATIVE (FB_NUM_TYPES + 1)
#else
#define CV_BF16_NATIVE CV_BF16_FINITE
#endif
#define CV_BF16_NORMAL_MIN 0x1p-100f

#if FB_X86_SIMD
/* Where an AVX2 split kernel's second round starts (its first runs at
   pixel 0): the first pixel whose store into the first plane starts a
   whole round's bytes (`round` bytes, a power of two), or 0 where `dst`
   is not item-aligned. So each later round fills whole lines: NumPy's
   large arrays start 16 bytes past a page, and a bands split storing
   across lines took 0.150 ns an item against 0.123 (float32 planes). */
static inline FB_ALWAYS_INLINE fb_intp cv_round_start(const char *dst, fb_intp out_item,
                                                      fb_intp round) {
    fb_intp past = (fb_intp)((uintptr_t)dst & (uintptr_t)(round - 1));
    return past % out_item ? 0 : ((round - past) & (round - 1)) / out_item;
}
#endif

/* Pixels i to n of a lanes kernel, item by item. */
static inline FB_ALWAYS_INLINE void cv_lanes_tail(char *dst, fb_intp plane_step,
                                                  const uint8_t *src, fb_intp i, fb_intp n,
                                                  const int lanes, const int dst_type,
                                                  const float *s, const float *o,
                                                  const int has_s, const int has_o) {
    const fb_intp out_item = dst_type == FB_NUM_F32 ? 4 : 2;
    int lane;
    for (; i < n; i++)
        for (lane = 0; lane < lanes; lane++) {
            float t = (float)src[lanes * i + lane];
            char *at = dst + lane * plane_step + i * out_item;
            if (has_s)
                t = t * s[lane];
            if (has_o)
                t = t + o[lane];
            if (dst_type == FB_NUM_F32) {
                memcpy(at, &t, 4);
            } else {
                uint16_t y = dst_type == FB_NUM_F16 ? cv_f16_from_f32(t) : cv_bf16_from_f32(t);
                memcpy(at, &y, 2);
            }
        }
}

/* Pixels i to n of an interleave into uint8 pixels, item by item. */
static inline FB_ALWAYS_INLINE void cv_pixels_tail(uint8_t *dst, fb_intp plane_step,
                                                   const char *src, fb_intp i, fb_intp n,
                                                   const int lanes, const float *s,
                                                   const float *o, const int has_s,
                                                   const int has_o) {
    int lane;
    for (; i < n; i++)
        for (lane = 0; lane < lanes; lane++) {
            float t;
            memcpy(&t, src + lane * plane_step + 4 * i, 4);
            if (has_s)
                t = t * s[lane];
            if (has_o)
                t = t + o[lane];
            dst[lanes * i + lane] = (uint8_t)(int32_t)cv_saturate(t, 0.0f, 255.0f);
        }
}

/* A lanes kernel's cases, every argument but the arrays a constant after
   inlining CASE: the lanes, the result type, whether a scale and an offset
   are given (the registers stay registers, the loops unroll). */
#define CV_LANES_AFFINE(CASE, LANES, DST)                                                   \
    do {                                                                                    \
        if (s && o)                                                                         \
            CASE(dst, plane_step, src, n, LANES, DST, s, o, 1, 1);                          \
        else if (s)                                                                         \
            CASE(dst, plane_step, src, n, LANES, DST, s, o, 1, 0);                          \
        else if (o)                                                                         \
            CASE(dst, plane_step, src, n, LANES, DST, s, o, 0, 1);                          \
        else                                                                                \
            CASE(dst, plane_step, src, n, LANES, DST, s, o, 0, 0);                          \
    } while (0)

#define CV_LANES_RESULT(CASE, LANES)                                                        \
    do {                                                                                    \
        if (dst_type == FB_NUM_F32)                                                         \
            CV_LANES_AFFINE(CASE, LANES, FB_NUM_F32);                                       \
        else if (dst_type == FB_NUM_F16)                                                    \
            CV_LANES_AFFINE(CASE, LANES, FB_NUM_F16);                                       \
        else if (bf16_type == CV_BF16_NATIVE)                                               \
            CV_LANES_AFFINE(CASE, LANES, CV_BF16_NATIVE);                                   \
        else if (bf16_type == CV_BF16_FINITE)                                               \
            CV_LANES_AFFINE(CASE, LANES, CV_BF16_FINITE);                                   \
        else                                                                                \
            CV_LANES_AFFINE(CASE, LANES, FB_NUM_BF16);                                      \
    } while (0)

#define CV_LANES_KERNEL(NAME, ATTR, CASE)                                                   \
    static ATTR void NAME(int dst_type, char *dst, fb_intp plane_step, const uint8_t *src,  \
                          fb_intp n, int lanes, const float *s, const float *o,             \
                          int bf16_type) {                                                  \
        if (lanes == 3)                                                                     \
            CV_LANES_RESULT(CASE, 3);                                                       \
        else                                                                                \
            CV_LANES_RESULT(CASE, 4);                                                       \
    }

/* An interleave kernel's cases (uint8 results), as CV_LANES_KERNEL's. */
#define CV_PIXELS_KERNEL(NAME, ATTR, CASE)                                                  \
    static ATTR void NAME(uint8_t *dst, fb_intp plane_step, const char *src, fb_intp n,     \
                          int lanes, const float *s, const float *o) {                      \
        if (lanes == 3)                                                                     \
            CV_LANES_AFFINE(CASE, 3, FB_NUM_U8);                                            \
        else                                                                                \
            CV_LANES_AFFINE(CASE, 4, FB_NUM_U8);                                            \
    }
#endif

#if FB_X86_SIMD
/* Byte shuffles of cv_lanes_case_avx2 over a 16-byte chunk of 16 pixels
   broadcast to both halves of a register (0x80: a zero byte).
   cv_lane_items[lanes - 3][lane][group][k], over chunk lanes * group / 2
   + k: `lane` of pixel 8 * group + j as the 32-bit item j.
   cv_lane_pairs[lanes - 3][lane][chunk]: `lane` of pixels 2j and 2j + 1
   as the low two bytes of 32-bit item j (the chunks ORed). */
static unsigned char cv_lane_items[2][4][2][2][32];
static unsigned char cv_lane_pairs[2][4][4][32];

/* cv_pixel_masks[lane][chunk]: byte j of 16-byte chunk `chunk` of 16
   3-lane pixels, where it lies in `lane`'s register (0x80: in another
   lane's). A lane's register holds its pixels in the order its packs
   leave them (cv_pixels_case_avx2): 0-3, 8-11, 4-7, 12-15. */
static unsigned char cv_pixel_masks[3][3][16];

/* cv_pixel_permutes[lanes - 3]: lanes.h's permutes that interleave 3 or
   4 lanes of bytes, each index composed with the order that
   cv_pixels_case_avx512's packs leave the pixels in (CV_PACKED_AT64). */
static FbLanePermutes cv_pixel_permutes[2];

/* Where pixel p of 64 lies in a lane's bytes after those packs: each
   pack works within 16-byte quarters, so byte 16k + 4j + m holds pixel
   16j + 4k + m. */
#define CV_PACKED_AT64(p) (16 * ((p) % 16 / 4) + 4 * ((p) / 16) + (p) % 4)

#define CV_PACKED_AT(p) (((p) & 3) | (((p) & 4) << 1) | (((p) & 8) >> 1))

/* The byte of `lane` of pixel p of 16 `lanes`-lane pixels, where chunk
   `chunk` holds it, else 0x80. */
static unsigned char cv_lane_byte(int lanes, int lane, int p, int chunk) {
    int at = lanes * p + lane;
    return (unsigned char)(at / 16 == chunk ? at % 16 : 0x80);
}

static void cv_build_lane_masks(void) {
    int l, lane, chunk, j, g, k, b;
    for (l = 3; l <= 4; l++)
        for (lane = 0; lane < l; lane++)
            for (b = 0; b < 32; b++) {
                /* Byte b lies in 32-bit item j, at byte b % 4 of it. */
                j = b / 4;
                for (g = 0; g < 2; g++)
                    for (k = 0; k < 2; k++)
                        cv_lane_items[l - 3][lane][g][k][b] =
                            b % 4 ? 0x80 : cv_lane_byte(l, lane, 8 * g + j, l * g / 2 + k);
                for (chunk = 0; chunk < l; chunk++)
                    cv_lane_pairs[l - 3][lane][chunk][b] =
                        b % 4 > 1 ? 0x80 : cv_lane_byte(l, lane, 2 * j + b % 4, chunk);
            }
    for (l = 3; l <= 4; l++) {
        FbLanePermutes *t = &cv_pixel_permutes[l - 3];
        fb_lane_permutes_build(t, l, 1, 1);
        for (lane = 0; lane < l; lane++)
            for (j = 0; j < 64; j++) {
                /* Bit 6 picks the input; the byte, below it, is a pixel. */
                int a = t->pair_a[lane][j], b = t->pair_b[lane][j];
                t->pair_a[lane][j] = (unsigned char)((a & 64) | CV_PACKED_AT64(a & 63));
                t->pair_b[lane][j] = (unsigned char)((b & 64) | CV_PACKED_AT64(b & 63));
            }
    }
    for (lane = 0; lane < 3; lane++)
        for (chunk = 0; chunk < 3; chunk++)
            for (j = 0; j < 16; j++) {
                int at = 16 * chunk + j;
                cv_pixel_masks[lane][chunk][j] =
                    (unsigned char)(at % 3 == lane ? CV_PACKED_AT(at / 3) : 0x80);
            }
}

/* 8 floats as bfloat16, each in the high half of its 32-bit lane (the
   low half is left over): rounded to nearest even; where the result type
   is CV_BF16_FINITE no NaN can occur and the rounding alone runs, else a
   NaN is cut to its top half, quieted (the NaN rule). */
static inline __attribute__((always_inline, target("avx2"))) __m256i
cv_bf16_high_avx2(int dst_type, __m256 v) {
    const __m256i half = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1);
    __m256i b = _mm256_castps_si256(v);
    __m256i rounded =
        _mm256_add_epi32(_mm256_add_epi32(b, half), _mm256_and_si256(_mm256_srli_epi32(b, 16), one));
    if (dst_type == CV_BF16_FINITE) {
        return rounded;
    } else {
        const __m256i magnitude = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
        __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(b, magnitude), inf);
        __m256i quieted = _mm256_or_si256(b, _mm256_set1_epi32(0x400000));
        return _mm256_blendv_epi8(rounded, quieted, nan);
    }
}

/* The same, each in the low half of its 32-bit lane (the high half 0). */
static inline __attribute__((always_inline, target("avx2"))) __m256i
cv_bf16_words_avx2(int dst_type, __m256 v) {
    return _mm256_srli_epi32(cv_bf16_high_avx2(dst_type, v), 16);
}

/* bfloat16 straight from float64 or int32 by AVX2, 8 items a round: each
   rounded to nearest in float32 (cvtpd2ps, cvtdq2ps), then to nearest
   even (a NaN by the rule: cvtpd2ps keeps the top of its payload). A round
   holding a float32 that is a bfloat16 tie goes again item by item, by
   cv_bf16_near's rule: rare, one float32 in 65536 is a tie. */
#define CV_BF16_STRAIGHT_AVX2(NAME, T, FLOATS, SCALAR)                                        \
    static __attribute__((target("avx2"))) void NAME(char *dst, fb_intp step, const char *src, \
                                                     fb_intp n) {                           \
        fb_intp i = 0, k;                                                                   \
        T x;                                                                                \
        uint16_t y;                                                                         \
        if (step == 2)                                                                      \
            for (; i + 8 <= n; i += 8) {                                                    \
                __m256 f = (FLOATS);                                                        \
                __m256i low = _mm256_and_si256(_mm256_castps_si256(f), _mm256_set1_epi32(0xffff)); \
                __m256i ties = _mm256_cmpeq_epi32(low, _mm256_set1_epi32(0x8000));          \
                __m256i words = cv_bf16_words_avx2(FB_NUM_BF16, f);                        \
                _mm_storeu_si128((__m128i *)(dst + 2 * i),                                  \
                                 _mm_packus_epi32(_mm256_castsi256_si128(words),            \
                                                  _mm256_extracti128_si256(words, 1)));     \
                if (!_mm256_testz_si256(ties, ties))                                        \
                    for (k = i; k < i + 8; k++) {                                           \
                        memcpy(&x, src + k * (fb_intp)sizeof(T), sizeof(T));                \
                        y = SCALAR(x);                                                      \
                        memcpy(dst + 2 * k, &y, 2);                                         \
                    }                                                                       \
            }                                                                               \
        for (; i < n; i++) {                                                                \
            memcpy(&x, src + i * (fb_intp)sizeof(T), sizeof(T));                            \
            y = SCALAR(x);                                                                  \
            memcpy(dst + i * step, &y, 2);                                                  \
        }                                                                                   \
    }

#define CV_F64_PAIR(at)                                                                     \
    _mm256_set_m128(_mm256_cvtpd_ps(_mm256_loadu_pd((const double *)(at) + 4)),             \
                    _mm256_cvtpd_ps(_mm256_loadu_pd((const double *)(at))))
#define CV_BF16_OF_F64(x) cv_bf16_from_f64((double)(x))

/* 8 integers of type T at `at` as float32, each converted by the compiler
   (AVX2 has no 64-bit or unsigned integer conversion). */
#define CV_FLOATS8(NAME, T)                                                                 \
    static inline __attribute__((always_inline, target("avx2"))) __m256 NAME(const char *at) { \
        float f[8];                                                                         \
        int k;                                                                              \
        for (k = 0; k < 8; k++) {                                                           \
            T x;                                                                            \
            memcpy(&x, at + k * (fb_intp)sizeof(T), sizeof(T));                             \
            f[k] = (float)x;                                                                \
        }                                                                                   \
        return _mm256_loadu_ps(f);                                                          \
    }
CV_FLOATS8(cv_floats8_u32, uint32_t)
CV_FLOATS8(cv_floats8_i64, int64_t)
CV_FLOATS8(cv_floats8_u64, uint64_t)

CV_BF16_STRAIGHT_AVX2(bf16_from_f64_x86, double, CV_F64_PAIR(src + 8 * i), cv_bf16_from_f64)
CV_BF16_STRAIGHT_AVX2(bf16_from_i32_x86, int32_t,
                      _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(src + 4 * i))),
                      CV_BF16_OF_F64)
CV_BF16_STRAIGHT_AVX2(bf16_from_u32_x86, uint32_t, cv_floats8_u32(src + 4 * i), CV_BF16_OF_F64)
CV_BF16_STRAIGHT_AVX2(bf16_from_i64_x86, int64_t, cv_floats8_i64(src + 8 * i), cv_bf16_from_i64)
CV_BF16_STRAIGHT_AVX2(bf16_from_u64_x86, uint64_t, cv_floats8_u64(src + 8 * i), cv_bf16_from_u64)
#undef CV_BF16_STRAIGHT_AVX2
#undef CV_F64_PAIR
#undef CV_BF16_OF_F64
#undef CV_FLOATS8

/* 16 floats as bfloat16 at `at`, given as items 0, 2, ..., 14 (even) and
   1, 3, ..., 15 (odd): a word blend leaves them in order, where 16 floats
   in order take a pack and a lane permute. */
static inline __attribute__((always_inline, target("avx2"))) void
cv_store_bf16_pairs_avx2(int dst_type, char *at, __m256 even, __m256 odd) {
    _mm256_storeu_si256((__m256i *)at, _mm256_blend_epi16(cv_bf16_words_avx2(dst_type, even),
                                                          cv_bf16_high_avx2(dst_type, odd),
                                                          0xaa));
}

/* 16 floats (lo, hi) into the result type at `at`: float32; float16 by
   F16C (from these kernels' sources a NaN can only come of the
   arithmetic, a quiet one, which F16C converts by the NaN rule); bfloat16
   (cv_bf16_words_avx2). */
static inline __attribute__((always_inline, target("avx2,f16c"))) void
cv_store_lane_avx2(int dst_type, char *at, __m256 lo, __m256 hi) {
    if (dst_type == FB_NUM_F32) {
        _mm256_storeu_ps((float *)at, lo);
        _mm256_storeu_ps((float *)(at + 32), hi);
    } else if (dst_type == FB_NUM_F16) {
        _mm_storeu_si128((__m128i *)at, _mm256_cvtps_ph(lo, _MM_FROUND_TO_NEAREST_INT));
        _mm_storeu_si128((__m128i *)(at + 16), _mm256_cvtps_ph(hi, _MM_FROUND_TO_NEAREST_INT));
    } else if (dst_type == CV_BF16_NATIVE) {
        /* vcvtne2ps2bf16 (AT&T order: lo into the low half), by asm: the
           kernels are compiled for AVX2, which its intrinsic's target
           attribute would not inline into. */
        __m256i both;
        __asm__("vcvtne2ps2bf16 %2, %1, %0" : "=v"(both) : "v"(hi), "v"(lo));
        _mm256_storeu_si256((__m256i *)at, both);
    } else {
        _mm256_storeu_si256((__m256i *)at,
                            _mm256_permute4x64_epi64(
                                _mm256_packus_epi32(cv_bf16_words_avx2(dst_type, lo),
                                                    cv_bf16_words_avx2(dst_type, hi)),
                                0xd8));
    }
}

/* A byte shuffle of cv_lanes_case_avx2's tables. */
#define CV_LANE_SHUFFLE(chunk, mask) \
    _mm256_shuffle_epi8(chunk, _mm256_loadu_si256((const __m256i *)(mask)))

/* One case of cv_lanes_avx2 (CV_LANES_KERNEL), 16 pixels a round: each
   16-byte chunk broadcast to both halves of a register, each lane's items
   gathered by byte shuffles straight into 32-bit items (cv_lane_items:
   two shuffles of 8 items; for bfloat16, pairs of items by
   cv_lane_pairs, split into even and odd ones by cv_store_bf16_pairs_avx2),
   converted, scaled, offset and stored. */
static inline __attribute__((always_inline, target("avx2,f16c"))) void cv_lanes_case_avx2(
        char *dst, fb_intp plane_step, const uint8_t *src, fb_intp n, const int lanes,
        const int dst_type, const float *s, const float *o, const int has_s, const int has_o) {
    const fb_intp out_item = dst_type == FB_NUM_F32 ? 4 : 2;
    /* bfloat16 rounded by the kernel: items in pairs (cv_store_bf16_pairs_avx2). */
    const int bf16 = dst_type == FB_NUM_BF16 || dst_type == CV_BF16_FINITE;
    const fb_intp second = cv_round_start(dst, out_item, 16 * out_item);
    __m256 scale[4], offset[4];
    int lane, chunk, g;
    fb_intp i;
    FB_UNROLL
    for (lane = 0; lane < lanes; lane++) {
        scale[lane] = _mm256_set1_ps(has_s ? s[lane] : 1.0f);
        offset[lane] = _mm256_set1_ps(has_o ? o[lane] : 0.0f);
    }
    for (i = 0; i + 16 <= n; i = i ? i + 16 : (second ? second : 16)) {
        __m256i chunks[4];
        FB_UNROLL
        for (chunk = 0; chunk < lanes; chunk++)
            chunks[chunk] = _mm256_broadcastsi128_si256(
                _mm_loadu_si128((const __m128i *)(src + lanes * i + 16 * chunk)));
        FB_UNROLL
        for (lane = 0; lane < lanes; lane++) {
            __m256 f[2];
            if (!bf16) {
                const unsigned char(*items)[2][32] = cv_lane_items[lanes - 3][lane];
                FB_UNROLL
                for (g = 0; g < 2; g++)
                    f[g] = _mm256_cvtepi32_ps(_mm256_or_si256(
                        CV_LANE_SHUFFLE(chunks[lanes * g / 2], items[g][0]),
                        CV_LANE_SHUFFLE(chunks[lanes * g / 2 + 1], items[g][1])));
            } else {
                /* bfloat16: even items as f[0], odd ones as f[1]. */
                const unsigned char(*pairs)[32] = cv_lane_pairs[lanes - 3][lane];
                __m256i both = CV_LANE_SHUFFLE(chunks[0], pairs[0]);
                FB_UNROLL
                for (chunk = 1; chunk < lanes; chunk++)
                    both = _mm256_or_si256(both, CV_LANE_SHUFFLE(chunks[chunk], pairs[chunk]));
                f[0] = _mm256_cvtepi32_ps(_mm256_and_si256(both, _mm256_set1_epi32(0xff)));
                f[1] = _mm256_cvtepi32_ps(_mm256_srli_epi32(both, 8));
            }
            /* Each operation only where given: no multiply by 1, no add of 0. */
            FB_UNROLL
            for (g = 0; g < 2; g++) {
                if (has_s)
                    f[g] = _mm256_mul_ps(f[g], scale[lane]);
                if (has_o)
                    f[g] = _mm256_add_ps(f[g], offset[lane]);
            }
            if (!bf16)
                cv_store_lane_avx2(dst_type, dst + lane * plane_step + i * out_item, f[0], f[1]);
            else
                cv_store_bf16_pairs_avx2(dst_type, dst + lane * plane_step + i * out_item, f[0],
                                         f[1]);
        }
    }
    cv_lanes_tail(dst, plane_step, src, i, n, lanes, dst_type, s, o, has_s, has_o);
}
#undef CV_LANE_SHUFFLE

CV_LANES_KERNEL(cv_lanes_avx2, __attribute__((target("avx2,f16c"))), cv_lanes_case_avx2)

/* One case of cv_pixels_avx2 (CV_PIXELS_KERNEL), 32 pixels a round: each
   plane's 32 floats saturated and converted as store_u8_f32_x86 does,
   packed to 32 bytes whose 16-byte halves hold pixels 0-15 and 16-31
   (each in the order CV_PACKED_AT says), then interleaved half by half:
   3 lanes by byte shuffles, 4 by unpacks. The last round ends at the last
   pixel (it may write a few again, with the same bytes); rows of fewer
   than 32 pixels go item by item. */
static inline __attribute__((always_inline, target("avx2"))) void cv_pixels_case_avx2(
        uint8_t *dst, fb_intp plane_step, const char *src, fb_intp n, const int lanes,
        const int dst_type, const float *s, const float *o, const int has_s, const int has_o) {
    __m256 scale[4], offset[4];
    __m256i mask[3][3];
    int lane, chunk, k;
    fb_intp i, next;
    (void)dst_type;
    if (n < 32) {
        cv_pixels_tail(dst, plane_step, src, 0, n, lanes, s, o, has_s, has_o);
        return;
    }
    FB_UNROLL
    for (lane = 0; lane < lanes; lane++) {
        scale[lane] = _mm256_set1_ps(has_s ? s[lane] : 1.0f);
        offset[lane] = _mm256_set1_ps(has_o ? o[lane] : 0.0f);
        if (lanes == 3) {
            FB_UNROLL
            for (chunk = 0; chunk < 3; chunk++)
                mask[lane][chunk] = _mm256_broadcastsi128_si256(
                    _mm_loadu_si128((const __m128i *)cv_pixel_masks[lane][chunk]));
        }
    }
    for (next = 0; next < n; next += 32) {
        __m256i bytes[4];
        uint8_t *d;
        i = next + 32 > n ? n - 32 : next;
        d = dst + lanes * i;
        FB_UNROLL
        for (lane = 0; lane < lanes; lane++) {
            const float *from = (const float *)(src + lane * plane_step) + i;
            __m256i ints[4];
            FB_UNROLL
            for (k = 0; k < 4; k++) {
                __m256 f = _mm256_loadu_ps(from + 8 * k);
                /* Each operation only where given: no multiply by 1, no add of 0. */
                if (has_s)
                    f = _mm256_mul_ps(f, scale[lane]);
                if (has_o)
                    f = _mm256_add_ps(f, offset[lane]);
                ints[k] = _mm256_cvtps_epi32(cv_saturated_avx2(f, 0.0f, 255.0f));
            }
            bytes[lane] = _mm256_permute4x64_epi64(
                _mm256_packus_epi16(_mm256_packs_epi32(ints[0], ints[1]),
                                    _mm256_packs_epi32(ints[2], ints[3])), 0xd8);
        }
        if (lanes == 3) {
            FB_UNROLL
            for (chunk = 0; chunk < 3; chunk++) {
                __m256i out = _mm256_or_si256(_mm256_or_si256(
                                                  _mm256_shuffle_epi8(bytes[0], mask[0][chunk]),
                                                  _mm256_shuffle_epi8(bytes[1], mask[1][chunk])),
                                              _mm256_shuffle_epi8(bytes[2], mask[2][chunk]));
                _mm_storeu_si128((__m128i *)(d + 16 * chunk), _mm256_castsi256_si128(out));
                _mm_storeu_si128((__m128i *)(d + 48 + 16 * chunk),
                                 _mm256_extracti128_si256(out, 1));
            }
        } else {
            /* Pairs of lanes, then pixels: in each half the low bytes
               hold pixels 0-3 and 8-11 of its 16, the high ones 4-7 and
               12-15. */
            __m256i rg_lo = _mm256_unpacklo_epi8(bytes[0], bytes[1]);
            __m256i ba_lo = _mm256_unpacklo_epi8(bytes[2], bytes[3]);
            __m256i rg_hi = _mm256_unpackhi_epi8(bytes[0], bytes[1]);
            __m256i ba_hi = _mm256_unpackhi_epi8(bytes[2], bytes[3]);
            __m256i p0 = _mm256_unpacklo_epi16(rg_lo, ba_lo), p1 = _mm256_unpacklo_epi16(rg_hi, ba_hi);
            __m256i p2 = _mm256_unpackhi_epi16(rg_lo, ba_lo), p3 = _mm256_unpackhi_epi16(rg_hi, ba_hi);
            _mm256_storeu_si256((__m256i *)d, _mm256_permute2x128_si256(p0, p1, 0x20));
            _mm256_storeu_si256((__m256i *)(d + 32), _mm256_permute2x128_si256(p2, p3, 0x20));
            _mm256_storeu_si256((__m256i *)(d + 64), _mm256_permute2x128_si256(p0, p1, 0x31));
            _mm256_storeu_si256((__m256i *)(d + 96), _mm256_permute2x128_si256(p2, p3, 0x31));
        }
    }
}

CV_PIXELS_KERNEL(cv_pixels_avx2, __attribute__((target("avx2"))), cv_pixels_case_avx2)

/* cv_pixels_case_avx2 in 64-byte registers, 64 pixels a round (rows of
   64 or more): each plane's 64 floats saturated and converted alike,
   packed, then interleaved by the lane permutes of lanes.h (vpermt2b:
   two or three byte permutes a result register, where 32-byte registers
   take shuffles and ORs a half) composed with the packs' order
   (cv_pixel_permutes). The last round ends at the last pixel. */
static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vbmi"))) void
cv_pixels_case_avx512(uint8_t *dst, fb_intp plane_step, const char *src, fb_intp n,
                      const int lanes, const int dst_type, const float *s, const float *o,
                      const int has_s, const int has_o) {
    const __m512 hi = _mm512_set1_ps(255.0f);
    __m512 scale[4], offset[4];
    FbLaneIndex x;
    int lane, k;
    fb_intp i, next;
    (void)dst_type;
    fb_lane_index(&x, &cv_pixel_permutes[lanes - 3]);
    FB_UNROLL
    for (lane = 0; lane < lanes; lane++) {
        scale[lane] = _mm512_set1_ps(has_s ? s[lane] : 1.0f);
        offset[lane] = _mm512_set1_ps(has_o ? o[lane] : 0.0f);
    }
    for (next = 0; next < n; next += 64) {
        __m512i bytes[4];
        i = next + 64 > n ? n - 64 : next;
        FB_UNROLL
        for (lane = 0; lane < lanes; lane++) {
            const float *from = (const float *)(src + lane * plane_step) + i;
            __m512i ints[4];
            FB_UNROLL
            for (k = 0; k < 4; k++) {
                __m512 f = _mm512_loadu_ps(from + 16 * k);
                if (has_s)
                    f = _mm512_mul_ps(f, scale[lane]);
                if (has_o)
                    f = _mm512_add_ps(f, offset[lane]);
                /* min returns f where it is a NaN, which converts to
                   0x80000000 and packs to 0, as cv_saturated_avx2's. */
                ints[k] = _mm512_cvtps_epi32(_mm512_min_ps(hi, f));
            }
            bytes[lane] = _mm512_packus_epi16(_mm512_packs_epi32(ints[0], ints[1]),
                                              _mm512_packs_epi32(ints[2], ints[3]));
        }
        FB_UNROLL
        for (k = 0; k < lanes; k++)
            _mm512_storeu_si512((void *)(dst + lanes * i + 64 * k),
                                fb_lane_result(&x, k, bytes, lanes));
    }
}

CV_PIXELS_KERNEL(cv_pixels_avx512, __attribute__((target("avx512f,avx512bw,avx512vbmi"))),
                 cv_pixels_case_avx512)

/* Pixels i to n of a split of 2-byte integer lanes, item by item. */
static inline FB_ALWAYS_INLINE void cv_wide_lanes_tail(char *dst, fb_intp plane_step,
                                                       const char *src, fb_intp i, fb_intp n,
                                                       int lanes, const int dst_type,
                                                       const float *s, const float *o,
                                                       const int has_s, const int has_o,
                                                       const int is_signed) {
    const fb_intp out_item = dst_type == FB_NUM_F32 ? 4 : 2;
    int lane;
    for (; i < n; i++)
        for (lane = 0; lane < lanes; lane++) {
            uint16_t x;
            float t;
            char *at = dst + lane * plane_step + i * out_item;
            memcpy(&x, src + 2 * (lanes * i + lane), 2);
            t = is_signed ? (float)(int16_t)x : (float)x;
            if (has_s)
                t = t * s[lane];
            if (has_o)
                t = t + o[lane];
            if (dst_type == FB_NUM_F32) {
                memcpy(at, &t, 4);
            } else {
                uint16_t y = dst_type == FB_NUM_F16 ? cv_f16_from_f32(t) : cv_bf16_from_f32(t);
                memcpy(at, &y, 2);
            }
        }
}

/* Pixels at to at + 7 * pixel of cv_wide_lanes_case_avx2's block: the
   16 bytes of pixels k and k + 4 share a register, and a 4 x 4 transpose
   of 32-bit items within its halves leaves pair m of the block's lanes
   of the 8 pixels in pairs[m], in pixel order. With `end_shift`, pixel 7
   reads its 16 bytes ending `over` bytes before, shifted into place. */
static inline __attribute__((always_inline, target("avx2"))) void cv_lane_pairs_avx2(
        __m256i pairs[4], const char *at, fb_intp pixel, const int shifted, __m128i end_shift,
        int over) {
    __m256i r[4], t[4];
    int k;
    FB_UNROLL
    for (k = 0; k < 4; k++) {
        const char *p = at + k * pixel;
        __m128i high = k == 3 && shifted
                           ? _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 4 * pixel - over)),
                                              end_shift)
                           : _mm_loadu_si128((const __m128i *)(p + 4 * pixel));
        r[k] = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)p)),
                                       high, 1);
    }
    t[0] = _mm256_unpacklo_epi32(r[0], r[1]);
    t[1] = _mm256_unpacklo_epi32(r[2], r[3]);
    t[2] = _mm256_unpackhi_epi32(r[0], r[1]);
    t[3] = _mm256_unpackhi_epi32(r[2], r[3]);
    pairs[0] = _mm256_unpacklo_epi64(t[0], t[1]);
    pairs[1] = _mm256_unpackhi_epi64(t[0], t[1]);
    pairs[2] = _mm256_unpacklo_epi64(t[2], t[3]);
    pairs[3] = _mm256_unpackhi_epi64(t[2], t[3]);
}

/* One lane of a pair (cv_lane_pairs_avx2) as 8 float32: the low half of
   each 32-bit item (HIGH 0) or the high one, zero- or sign-extended by
   shifts, which run on every vector pipe. */
static inline __attribute__((always_inline, target("avx2"))) __m256 cv_pair_half_avx2(
        __m256i pair, const int high, const int is_signed) {
    if (is_signed)
        return _mm256_cvtepi32_ps(_mm256_srai_epi32(high ? pair : _mm256_slli_epi32(pair, 16), 16));
    return _mm256_cvtepi32_ps(high ? _mm256_srli_epi32(pair, 16)
                                   : _mm256_and_si256(pair, _mm256_set1_epi32(0xffff)));
}

/* One case of cv_wide_lanes_avx2: pixels of `lanes` 2-byte integers
   (FB_CONVERT_WIDE_LANES_MIN or more) into planes, a block of 8 lanes at
   a time over the row (so that at most 8 planes are written at once:
   planes a multiple of 4 KiB apart share L1 sets; 13 at once took 1.6
   times as long), 16 pixels a round: two sets of lane pairs
   (cv_lane_pairs_avx2: 12 shuffles for 64 items, where an 8 x 8
   transpose of 16-bit items and widening took 32), then each lane split
   from its pair, scaled, offset and stored as the result type, its scale
   and offset loaded once for 16 items. A block's load reads up to 16
   bytes, into the next pixel where the lanes end short of a block; the
   row's last pixel reads its last block ending at its own end instead
   (end_shift). Rows of fewer than 16 pixels go item by item. */
static inline __attribute__((always_inline, target("avx2,f16c"))) void cv_wide_lanes_case_avx2(
        char *dst, fb_intp plane_step, const char *src, fb_intp n, int lanes, const int dst_type,
        const float *s, const float *o, const int has_s, const int has_o, const int is_signed) {
    const fb_intp out_item = dst_type == FB_NUM_F32 ? 4 : 2, pixel = 2 * (fb_intp)lanes;
    const int blocks = (lanes + 7) / 8, over = 16 * blocks - 2 * lanes;
    /* Loaded from `over` on: byte j takes byte j + over, zeros past 15. */
    static const unsigned char shift_bytes[32] = {
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
        0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
        0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80};
    const __m128i end_shift = _mm_loadu_si128((const __m128i *)(shift_bytes + over));
    const fb_intp start = cv_round_start(dst, out_item, 16 * out_item);
    const fb_intp second = start ? start : 16;
    fb_intp i, next;
    int q, j;
    if (n < 16) {
        cv_wide_lanes_tail(dst, plane_step, src, 0, n, lanes, dst_type, s, o, has_s, has_o,
                           is_signed);
        return;
    }
    for (q = 0; q < blocks; q++) {
        const int block_lanes = lanes - 8 * q < 8 ? lanes - 8 * q : 8;
        const int end_block = q == blocks - 1 && over;
        /* Broadcast once a block: locals no store can alias, which
           the multiplies and adds read as operands. */
        __m256 scale[8], offset[8];
        for (j = 0; j < block_lanes; j++) {
            scale[j] = _mm256_set1_ps(has_s ? s[8 * q + j] : 1.0f);
            offset[j] = _mm256_set1_ps(has_o ? o[8 * q + j] : 0.0f);
        }
        for (next = 0; next < n; next = next ? next + 16 : second) {
            /* The last round ends at the last pixel (it may redo a few). */
            const int last = next + 16 >= n;
            __m256i pairs[2][4];
            char *at;
            i = last ? n - 16 : next;
            cv_lane_pairs_avx2(pairs[0], src + i * pixel + 16 * q, pixel, 0, end_shift, over);
            cv_lane_pairs_avx2(pairs[1], src + (i + 8) * pixel + 16 * q, pixel,
                               last && end_block, end_shift, over);
            /* One pointer a side for the block, stepped lane by lane,
               so that no lane's address waits on the stack. */
            at = dst + 8 * q * plane_step + i * out_item;
            FB_UNROLL
            for (j = 0; j < 8; j++) {
                __m256 v0, v1;
                if (j >= block_lanes)
                    break;
                v0 = cv_pair_half_avx2(pairs[0][j / 2], j % 2, is_signed);
                v1 = cv_pair_half_avx2(pairs[1][j / 2], j % 2, is_signed);
                /* Each operation only where given: no multiply by 1, no add of 0. */
                if (has_s) {
                    v0 = _mm256_mul_ps(v0, scale[j]);
                    v1 = _mm256_mul_ps(v1, scale[j]);
                }
                if (has_o) {
                    v0 = _mm256_add_ps(v0, offset[j]);
                    v1 = _mm256_add_ps(v1, offset[j]);
                }
                cv_store_lane_avx2(dst_type, at, v0, v1);
                at += plane_step;
            }
        }
    }
}

#define CV_WIDE_LANES_CASE(dst, plane_step, src, n, SIGNED, DST, s, o, HS, HO)               \
    cv_wide_lanes_case_avx2(dst, plane_step, src, n, lanes, DST, s, o, HS, HO, SIGNED)

/* cv_wide_lanes_case_avx2's cases: signedness, result type, scale, offset. */
static __attribute__((target("avx2,f16c"))) void cv_wide_lanes_avx2(
        int dst_type, char *dst, fb_intp plane_step, const char *src, fb_intp n, int lanes,
        int is_signed, const float *s, const float *o, int bf16_type) {
    if (is_signed)
        CV_LANES_RESULT(CV_WIDE_LANES_CASE, 1);
    else
        CV_LANES_RESULT(CV_WIDE_LANES_CASE, 0);
}
#undef CV_WIDE_LANES_CASE
#endif

#if FB_NEON
/* 16 float32 into the result type at `at`: float32; float16 by FCVTN (a
   NaN from the arithmetic is a quiet one, converted as FCVT does);
   bfloat16 rounded to nearest even, a NaN cut to its top half, quieted. */
static inline FB_ALWAYS_INLINE void cv_store_lane_neon(int dst_type, char *at,
                                                       const float32x4_t f[4]) {
    int k;
    if (dst_type == FB_NUM_F32) {
        FB_UNROLL
        for (k = 0; k < 4; k++)
            vst1q_f32((float *)at + 4 * k, f[k]);
    } else if (dst_type == FB_NUM_F16) {
        FB_UNROLL
        for (k = 0; k < 2; k++)
            vst1q_u16((uint16_t *)at + 8 * k,
                      vreinterpretq_u16_f16(
                          vcvt_high_f16_f32(vcvt_f16_f32(f[2 * k]), f[2 * k + 1])));
    } else if (dst_type == CV_BF16_FINITE) {
        /* The top halves of b + 0x7fff + (b's bit 16), by ADDHN. */
        uint16x4_t words[4];
        FB_UNROLL
        for (k = 0; k < 4; k++) {
            uint32x4_t b = vreinterpretq_u32_f32(f[k]);
            uint32x4_t bias = vaddq_u32(vandq_u32(vshrq_n_u32(b, 16), vdupq_n_u32(1)),
                                        vdupq_n_u32(0x7fff));
            words[k] = vaddhn_u32(b, bias);
        }
        vst1q_u16((uint16_t *)at, vcombine_u16(words[0], words[1]));
        vst1q_u16((uint16_t *)at + 8, vcombine_u16(words[2], words[3]));
    } else {
        uint16x4_t words[4];
        FB_UNROLL
        for (k = 0; k < 4; k++) {
            uint32x4_t b = vreinterpretq_u32_f32(f[k]), high = vshrq_n_u32(b, 16);
            uint32x4_t rounded = vshrq_n_u32(
                vaddq_u32(vaddq_u32(b, vdupq_n_u32(0x7fff)), vandq_u32(high, vdupq_n_u32(1))), 16);
            uint32x4_t nan = vcgtq_u32(vandq_u32(b, vdupq_n_u32(0x7fffffff)),
                                       vdupq_n_u32(0x7f800000));
            uint32x4_t quieted = vorrq_u32(high, vdupq_n_u32(0x40));
            words[k] = vmovn_u32(vbslq_u32(nan, quieted, rounded));
        }
        vst1q_u16((uint16_t *)at, vcombine_u16(words[0], words[1]));
        vst1q_u16((uint16_t *)at + 8, vcombine_u16(words[2], words[3]));
    }
}

/* One case of cv_lanes_neon (CV_LANES_KERNEL). */
static inline FB_ALWAYS_INLINE void cv_lanes_case_neon(
        char *dst, fb_intp plane_step, const uint8_t *src, fb_intp n, const int lanes,
        const int dst_type, const float *s, const float *o, const int has_s, const int has_o) {
    const fb_intp out_item = dst_type == FB_NUM_F32 ? 4 : 2;
    float32x4_t scale[4], offset[4];
    int lane, k;
    fb_intp i;
    FB_UNROLL
    for (lane = 0; lane < lanes; lane++) {
        scale[lane] = vdupq_n_f32(has_s ? s[lane] : 1.0f);
        offset[lane] = vdupq_n_f32(has_o ? o[lane] : 0.0f);
    }
    for (i = 0; i + 16 <= n; i += 16) {
        uint8x16_t bytes[4];
        if (lanes == 3) {
            uint8x16x3_t split = vld3q_u8(src + 3 * i);
            bytes[0] = split.val[0], bytes[1] = split.val[1], bytes[2] = split.val[2];
        } else {
            uint8x16x4_t split = vld4q_u8(src + 4 * i);
            bytes[0] = split.val[0], bytes[1] = split.val[1], bytes[2] = split.val[2];
            bytes[3] = split.val[3];
        }
        FB_UNROLL
        for (lane = 0; lane < lanes; lane++) {
            uint16x8_t lo = vmovl_u8(vget_low_u8(bytes[lane])), hi = vmovl_high_u8(bytes[lane]);
            float32x4_t f[4] = {vcvtq_f32_u32(vmovl_u16(vget_low_u16(lo))),
                                vcvtq_f32_u32(vmovl_high_u16(lo)),
                                vcvtq_f32_u32(vmovl_u16(vget_low_u16(hi))),
                                vcvtq_f32_u32(vmovl_high_u16(hi))};
            /* Each operation only where given: no multiply by 1, no add of 0. */
            FB_UNROLL
            for (k = 0; k < 4; k++) {
                if (has_s)
                    f[k] = vmulq_f32(f[k], scale[lane]);
                if (has_o)
                    f[k] = vaddq_f32(f[k], offset[lane]);
            }
            cv_store_lane_neon(dst_type, dst + lane * plane_step + i * out_item, f);
        }
    }
    cv_lanes_tail(dst, plane_step, src, i, n, lanes, dst_type, s, o, has_s, has_o);
}

CV_LANES_KERNEL(cv_lanes_neon, , cv_lanes_case_neon)

/* One case of cv_pixels_neon (CV_PIXELS_KERNEL): each plane's 16 floats
   rounded, converted and narrowed to 16 bytes with saturation, as
   store_u8_f32_neon does, then interleaved by ST3/ST4. */
static inline FB_ALWAYS_INLINE void cv_pixels_case_neon(
        uint8_t *dst, fb_intp plane_step, const char *src, fb_intp n, const int lanes,
        const int dst_type, const float *s, const float *o, const int has_s, const int has_o) {
    float32x4_t scale[4], offset[4];
    int lane, k;
    fb_intp i;
    (void)dst_type;
    FB_UNROLL
    for (lane = 0; lane < lanes; lane++) {
        scale[lane] = vdupq_n_f32(has_s ? s[lane] : 1.0f);
        offset[lane] = vdupq_n_f32(has_o ? o[lane] : 0.0f);
    }
    for (i = 0; i + 16 <= n; i += 16) {
        uint8x16_t bytes[4];
        FB_UNROLL
        for (lane = 0; lane < lanes; lane++) {
            const float *from = (const float *)(src + lane * plane_step) + i;
            uint32x4_t w[4];
            FB_UNROLL
            for (k = 0; k < 4; k++) {
                float32x4_t f = vld1q_f32(from + 4 * k);
                /* Each operation only where given: no multiply by 1, no add of 0. */
                if (has_s)
                    f = vmulq_f32(f, scale[lane]);
                if (has_o)
                    f = vaddq_f32(f, offset[lane]);
                w[k] = cv_uint32s_neon(f);
            }
            bytes[lane] = cv_u8s_neon(w[0], w[1], w[2], w[3]);
        }
        if (lanes == 3) {
            uint8x16x3_t pixels = {{bytes[0], bytes[1], bytes[2]}};
            vst3q_u8(dst + 3 * i, pixels);
        } else {
            uint8x16x4_t pixels = {{bytes[0], bytes[1], bytes[2], bytes[3]}};
            vst4q_u8(dst + 4 * i, pixels);
        }
    }
    cv_pixels_tail(dst, plane_step, src, i, n, lanes, s, o, has_s, has_o);
}

CV_PIXELS_KERNEL(cv_pixels_neon, , cv_pixels_case_neon)
#endif

void fb_convert_lanes(const FbConvert *cv, char *dst, const char *src, fb_intp plane_step,
                      fb_intp n_pixels, int lanes, int interleave, const char *scale,
                      fb_intp scale_step, const char *offset, fb_intp offset_step) {
#if FB_X86_SIMD || FB_NEON
    float s[FB_CONVERT_WIDE_LANES_MAX], o[FB_CONVERT_WIDE_LANES_MAX];
    int lane, finite = 1, normal = 1, bf16_type;
    const float *has_s = cv->scale != FB_AFFINE_NONE ? s : NULL;
    const float *has_o = cv->offset != FB_AFFINE_NONE ? o : NULL;
    for (lane = 0; lane < lanes; lane++) {
        if (has_s) {
            memcpy(&s[lane], scale + lane * scale_step, 4);
            finite &= isfinite(s[lane]) != 0;
            normal &= s[lane] == 0.0f || fabsf(s[lane]) >= CV_BF16_NORMAL_MIN;
        }
        if (has_o) {
            memcpy(&o[lane], offset + lane * offset_step, 4);
            finite &= isfinite(o[lane]) != 0;
            normal &= o[lane] == 0.0f || fabsf(o[lane]) >= CV_BF16_NORMAL_MIN;
        }
    }
    bf16_type = !finite ? FB_NUM_BF16 : cv->bf16 && normal ? CV_BF16_NATIVE : CV_BF16_FINITE;
#if FB_X86_SIMD
    if (interleave && cv->vbmi && n_pixels >= 64)
        cv_pixels_avx512((uint8_t *)dst, plane_step, src, n_pixels, lanes, has_s, has_o);
    else if (interleave)
        cv_pixels_avx2((uint8_t *)dst, plane_step, src, n_pixels, lanes, has_s, has_o);
    else if (cv->src != FB_NUM_U8)
        cv_wide_lanes_avx2(cv->dst, dst, plane_step, src, n_pixels, lanes,
                           cv->src == FB_NUM_I16, has_s, has_o, bf16_type);
    else
        cv_lanes_avx2(cv->dst, dst, plane_step, (const uint8_t *)src, n_pixels, lanes, has_s,
                      has_o, bf16_type);
#else
    if (interleave)
        cv_pixels_neon((uint8_t *)dst, plane_step, src, n_pixels, lanes, has_s, has_o);
    else
        cv_lanes_neon(cv->dst, dst, plane_step, (const uint8_t *)src, n_pixels, lanes, has_s,
                      has_o, bf16_type);
#endif
#else
    (void)cv; (void)dst; (void)src; (void)plane_step; (void)n_pixels; (void)lanes;
    (void)interleave; (void)scale; (void)scale_step; (void)offset; (void)offset_step;
#endif
}
