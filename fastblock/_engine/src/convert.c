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

#if FB_NEON
/* aarch64: NumPy converts float16 by the CPU's FCVT (one rounding, to
   nearest even; a NaN quieted, the top of its payload kept), and so do
   these. The floating-point control state is Linux's default (no flush
   to zero), never changed here. */
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

/* float16 bits to float32, exactly; a NaN keeps its payload (as NumPy's
   software conversion: no quieting). A subnormal is its significand times
   2**-24, exact in float32. */
static inline float cv_f32_from_f16(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = h & 0x7c00u, mant = h & 0x03ffu;
    uint32_t bits = ((uint32_t)(h & 0x7fffu) + 0x1c000u) << 13;
    if (exp == 0x7c00u)
        bits = 0x7f800000u | (mant << 13);
    if (exp == 0)
        bits = cv_bits_of_f32((float)mant * 0x1p-24f);
    return cv_f32_from_bits(bits | sign);
}

/* float16 bits to float64 straight, exactly (NumPy: not by way of float32,
   whose hardware conversion to float64 would quiet a signalling NaN). */
static inline double cv_f64_from_f16(uint16_t h) {
    uint64_t sign = (uint64_t)(h & 0x8000u) << 48, exp = h & 0x7c00u, mant = h & 0x03ffu;
    uint64_t bits = ((uint64_t)(h & 0x7fffu) + 0xfc000u) << 42;
    if (exp == 0x7c00u)
        bits = 0x7ff0000000000000ull | (mant << 42);
    if (exp == 0)
        bits = cv_bits_of_f64((double)mant * 0x1p-24);
    return cv_f64_from_bits(bits | sign);
}

/* Round the integer h up by one where the bits dropped below it, rem, are
   more than half, or exactly half and h is odd: round half to even. */
#define CV_ROUND_EVEN(h, rem, half) ((h) + (((rem) > (half)) | (((rem) == (half)) & ((h) & 1))))

/* float32 to float16 bits, rounded to nearest even, as NumPy rounds (a NaN
   keeps the top of its payload and stays a NaN; no quieting). */
static inline uint16_t cv_f16_from_f32(float f) {
    uint32_t b = cv_bits_of_f32(f), sign = (b >> 16) & 0x8000u, a = b & 0x7fffffffu, h;
    if (a >= 0x7f800000u) {                 /* inf or NaN */
        h = 0x7c00u + ((a & 0x7fffffu) >> 13);
        if (a != 0x7f800000u && h == 0x7c00u)
            h = 0x7c01u;
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
        h = 0x7c00u + ((a & 0xfffffffffffffull) >> 42);
        if (a != 0x7ff0000000000000ull && h == 0x7c00u)
            h = 0x7c01u;
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

/* float32 to bfloat16 bits as ml_dtypes rounds: to nearest even, every
   NaN to the quiet NaN 0x7fc0 with its sign. */
static inline uint16_t cv_bf16_from_f32(float f) {
    uint32_t b = cv_bits_of_f32(f);
    uint32_t rounded = (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
    uint32_t nan = ((b >> 16) & 0x8000u) | 0x7fc0u;
    /* Both computed, one chosen: no branch, so the loop vectorises. */
    return (uint16_t)((b & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

/* bfloat16 bits straight to float16 bits, as ml_dtypes converts: by way
   of float32 (exact), rounded as NumPy rounds, but every NaN to the quiet
   NaN 0x7e00 with its sign. */
static inline uint16_t cv_f16_from_bf16(uint16_t h) {
    if ((h & 0x7fffu) > 0x7f80u)
        return (uint16_t)((h & 0x8000u) | 0x7e00u);
    return cv_f16_from_f32(cv_f32_from_bits((uint32_t)h << 16));
}

static inline float cv_f32_from_bf16(uint16_t h) {
    return cv_f32_from_bits((uint32_t)h << 16);
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

#if FB_X86_SIMD
#include <immintrin.h>

/* AVX2 stores of float32 into packed 8- and 16-bit integers and float16:
   the portable loops' conditions on floats do not vectorise (a comparison
   with a NaN may trap, so the compiler keeps the branches). Same results:
   saturated by max and min (a NaN gives lo: maxps returns its second
   operand when one is a NaN), a NaN set to 0 where lo is not 0, then
   converted to int32 in the current rounding mode (cvtps2dq rounds as
   MXCSR says, which is np.rint's rounding) and packed. */
#define CV_SATURATED_AVX2(v, lo, hi, LO)                                                      \
    (LO == 0.0f ? _mm256_min_ps(_mm256_max_ps(v, lo), hi)                                     \
                : _mm256_andnot_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q),                         \
                                   _mm256_min_ps(_mm256_max_ps(v, lo), hi)))

/* 16 saturated floats to 16 int16s, in order, rounded as they convert. */
static inline __attribute__((always_inline, target("avx2"))) __m256i
cv_int16s_avx2(__m256 a, __m256 b, int to_unsigned) {
    __m256i ia = _mm256_cvtps_epi32(a), ib = _mm256_cvtps_epi32(b);
    __m256i packed = to_unsigned ? _mm256_packus_epi32(ia, ib) : _mm256_packs_epi32(ia, ib);
    return _mm256_permute4x64_epi64(packed, 0xd8);
}

#define CV_INT_STORE_AVX2(NAME, T, LO, HI, ...)                                               \
    static __attribute__((target("avx2"))) void NAME(char *dst, fb_intp step, const float *v,  \
                                                     fb_intp n) {                             \
        const __m256 lo = _mm256_set1_ps(LO), hi = _mm256_set1_ps(HI);                        \
        fb_intp i = 0;                                                                      \
        if (step == (fb_intp)sizeof(T)) {                                                   \
            for (; i + 32 <= n; i += 32) {                                                  \
                __m256 a = CV_SATURATED_AVX2(_mm256_loadu_ps(v + i), lo, hi, LO);                \
                __m256 b = CV_SATURATED_AVX2(_mm256_loadu_ps(v + i + 8), lo, hi, LO);            \
                __m256 c = CV_SATURATED_AVX2(_mm256_loadu_ps(v + i + 16), lo, hi, LO);           \
                __m256 d = CV_SATURATED_AVX2(_mm256_loadu_ps(v + i + 24), lo, hi, LO);           \
                __VA_ARGS__                                                                 \
            }                                                                               \
        }                                                                                   \
        for (; i < n; i++) {                                                                \
            T y = (T)(int32_t)cv_saturate(v[i], LO, HI);                                    \
            memcpy(dst + i * step, &y, sizeof(T));                                          \
        }                                                                                   \
    }

CV_INT_STORE_AVX2(store_u8_f32_x86, uint8_t, 0.0f, 255.0f, {
    __m256i ab = cv_int16s_avx2(a, b, 0), cd = cv_int16s_avx2(c, d, 0);
    __m256i bytes = _mm256_permute4x64_epi64(_mm256_packus_epi16(ab, cd), 0xd8);
    _mm256_storeu_si256((__m256i *)(dst + i), bytes);
})
CV_INT_STORE_AVX2(store_i8_f32_x86, int8_t, -128.0f, 127.0f, {
    __m256i ab = cv_int16s_avx2(a, b, 0), cd = cv_int16s_avx2(c, d, 0);
    __m256i bytes = _mm256_permute4x64_epi64(_mm256_packs_epi16(ab, cd), 0xd8);
    _mm256_storeu_si256((__m256i *)(dst + i), bytes);
})
CV_INT_STORE_AVX2(store_u16_f32_x86, uint16_t, 0.0f, 65535.0f, {
    _mm256_storeu_si256((__m256i *)(dst + 2 * i), cv_int16s_avx2(a, b, 1));
    _mm256_storeu_si256((__m256i *)(dst + 2 * i + 32), cv_int16s_avx2(c, d, 1));
})
CV_INT_STORE_AVX2(store_i16_f32_x86, int16_t, -32768.0f, 32767.0f, {
    _mm256_storeu_si256((__m256i *)(dst + 2 * i), cv_int16s_avx2(a, b, 0));
    _mm256_storeu_si256((__m256i *)(dst + 2 * i + 32), cv_int16s_avx2(c, d, 0));
})

/* float32 to float16 by F16C: rounded to nearest even as NumPy rounds,
   overflow to inf, subnormals exact. Only NaNs differ (F16C quiets them,
   NumPy keeps the payload's top bits): lanes holding one are redone by
   the portable rule. */
static __attribute__((target("avx2,f16c"))) void store_f16_f32_x86(char *dst, fb_intp step,
                                                                   const float *v, fb_intp n) {
    const __m256i magnitude = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    fb_intp i = 0, k;
    if (step == 2) {
        for (; i + 8 <= n; i += 8) {
            __m256 x = _mm256_loadu_ps(v + i);
            __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(_mm256_castps_si256(x), magnitude),
                                             inf);
            _mm_storeu_si128((__m128i *)(dst + 2 * i),
                             _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
            if (!_mm256_testz_si256(nan, nan)) {
                for (k = i; k < i + 8; k++) {
                    uint16_t y = cv_f16_from_f32(v[k]);
                    memcpy(dst + 2 * k, &y, 2);
                }
            }
        }
    }
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

typedef void (*cv_store_f16_from_bf16)(char *dst, fb_intp step, const char *src, fb_intp n);

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
    cv_store_f16_from_bf16 f16_from_bf16;       /* that pair without scale or offset */
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

/* The AVX2 passes, with the stores above: their pairs go by the passes,
   not the fused loops (whose stores to these types stay scalar). Built by
   fb_convert_init, before any thread converts. */
static FbConvertPasses passes_x86;

static void build_x86_passes(void) {
    int s;
    passes_x86 = passes_avx2;
    passes_x86.store_f32[FB_NUM_U8] = store_u8_f32_x86;
    passes_x86.store_f32[FB_NUM_I8] = store_i8_f32_x86;
    passes_x86.store_f32[FB_NUM_U16] = store_u16_f32_x86;
    passes_x86.store_f32[FB_NUM_I16] = store_i16_f32_x86;
    passes_x86.store_f32[FB_NUM_F16] = store_f16_f32_x86;
    for (s = 0; s < FB_NUM_TYPES; s++) {
        passes_x86.fused[FB_NUM_U8][s] = NULL;
        passes_x86.fused[FB_NUM_F16][s] = NULL;
    }
}
#endif

static const fb_intp cv_item_bytes[FB_NUM_TYPES] = {1, 1, 1, 2, 2, 4, 4, 8, 8, 2, 2, 4, 8};

int fb_convert_compute(int src, int dst, int affine) {
    if (dst == FB_NUM_F64 || (src == FB_NUM_F64 && !affine && dst >= FB_NUM_F16))
        return FB_NUM_F64;
    return FB_NUM_F32;
}

void fb_convert_run(const FbConvert *cv, char *dst, fb_intp dst_step, const char *src,
                    fb_intp n, const char *scale, const char *offset) {
    const FbConvertPasses *passes = &passes_portable;
    fb_intp i, m, item = cv_item_bytes[cv->src];
    /* Lines advance with the run; one value (or none: NULL) stays. A source
       of the compute type, aligned (the stage always is), is read where
       it lies: no load pass. */
    int s_line = cv->scale == FB_AFFINE_LINE, o_line = cv->offset == FB_AFFINE_LINE;
    int affine = cv->scale != FB_AFFINE_NONE || cv->offset != FB_AFFINE_NONE;
#if FB_X86_SIMD
    if (cv->simd)
        passes = &passes_x86;
#endif
    if (cv->src == FB_NUM_BF16 && cv->dst == FB_NUM_F16 && cv->scale == FB_AFFINE_NONE
            && cv->offset == FB_AFFINE_NONE) {
        passes->f16_from_bf16(dst, dst_step, src, n);
    } else if (cv->compute == FB_NUM_F32 && dst_step == cv_item_bytes[cv->dst]
            && passes->fused[cv->dst][cv->src] != NULL) {
        passes->fused[cv->dst][cv->src](dst, src, n, (const float *)scale, cv->scale,
                                        (const float *)offset, cv->offset);
    } else if (cv->compute == FB_NUM_F32) {
        float v[FB_CONVERT_PIECE];
        const float *s = (const float *)scale, *o = (const float *)offset, *x;
        int direct = cv->src == FB_NUM_F32 && (uintptr_t)src % sizeof(float) == 0;
        for (i = 0; i < n; i += m) {
            m = n - i < FB_CONVERT_PIECE ? n - i : FB_CONVERT_PIECE;
            if (direct && !affine) {
                x = (const float *)src + i;
            } else if (direct) {
                passes->affine_from_f32(v, (const float *)src + i, m, s_line ? s + i : s,
                                        cv->scale, o_line ? o + i : o, cv->offset);
                x = v;
            } else {
                passes->load_f32[cv->src](v, src + i * item, m);
                passes->affine_f32(v, m, s_line ? s + i : s, cv->scale, o_line ? o + i : o,
                                   cv->offset);
                x = v;
            }
            passes->store_f32[cv->dst](dst + i * dst_step, dst_step, x, m);
        }
    } else {
        double v[FB_CONVERT_PIECE];
        const double *s = (const double *)scale, *o = (const double *)offset, *x;
        int direct = cv->src == FB_NUM_F64 && (uintptr_t)src % sizeof(double) == 0;
        for (i = 0; i < n; i += m) {
            m = n - i < FB_CONVERT_PIECE ? n - i : FB_CONVERT_PIECE;
            if (direct && !affine) {
                x = (const double *)src + i;
            } else if (direct) {
                passes->affine_from_f64(v, (const double *)src + i, m, s_line ? s + i : s,
                                        cv->scale, o_line ? o + i : o, cv->offset);
                x = v;
            } else {
                passes->load_f64[cv->src](v, src + i * item, m);
                passes->affine_f64(v, m, s_line ? s + i : s, cv->scale, o_line ? o + i : o,
                                   cv->offset);
                x = v;
            }
            passes->store_f64[cv->dst](dst + i * dst_step, dst_step, x, m);
        }
    }
}

#if FB_X86_SIMD
static void cv_build_lane_masks(void);
#endif

/* The lane split and conversion in one pass (convert.h). 16 pixels at a
   time: their 48 or 64 bytes gathered into one register a lane by byte
   shuffles (one mask a 16-byte chunk), then widened to float32, scaled,
   offset and stored as the result type; the last pixels item by item by
   the same operations. */
void fb_convert_init(void) {
#if FB_X86_SIMD
    build_x86_passes();
    cv_build_lane_masks();
#endif
}

int fb_convert_lanes_runs(const FbConvert *cv, int lanes) {
#if FB_X86_SIMD
    return cv->simd && cv->src == FB_NUM_U8 && cv->compute == FB_NUM_F32
           && (lanes == 3 || lanes == 4)
           && (cv->dst == FB_NUM_F32 || cv->dst == FB_NUM_F16 || cv->dst == FB_NUM_BF16)
           && cv->scale != FB_AFFINE_LINE && cv->offset != FB_AFFINE_LINE;
#else
    (void)cv;
    (void)lanes;
    return 0;
#endif
}

#if FB_X86_SIMD
/* masks[lanes - 3][lane][chunk]: the bytes of `lane` in 16-byte chunk
   `chunk` of 16 pixels, at their pixel's place (0x80: none). */
static unsigned char cv_lane_masks[2][4][4][16];

static void cv_build_lane_masks(void) {
    int l, lane, chunk, j;
    for (l = 3; l <= 4; l++)
        for (lane = 0; lane < l; lane++)
            for (chunk = 0; chunk < l; chunk++)
                for (j = 0; j < 16; j++) {
                    int at = l * j + lane;
                    cv_lane_masks[l - 3][lane][chunk][j] =
                        (unsigned char)(at / 16 == chunk ? at % 16 : 0x80);
                }
}

static inline __attribute__((always_inline, target("avx2,f16c"))) void
cv_store_lane_avx2(int dst_type, char *at, __m256 lo, __m256 hi) {
    if (dst_type == FB_NUM_F32) {
        _mm256_storeu_ps((float *)at, lo);
        _mm256_storeu_ps((float *)(at + 32), hi);
    } else if (dst_type == FB_NUM_F16) {
        /* From uint8 sources a NaN can only come of the arithmetic, a
           quiet one, which F16C converts as NumPy does. */
        _mm_storeu_si128((__m128i *)at, _mm256_cvtps_ph(lo, _MM_FROUND_TO_NEAREST_INT));
        _mm_storeu_si128((__m128i *)(at + 16), _mm256_cvtps_ph(hi, _MM_FROUND_TO_NEAREST_INT));
    } else {
        const __m256i magnitude = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
        const __m256i half = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1);
        const __m256i quiet = _mm256_set1_epi32(0x7fc0), sign = _mm256_set1_epi32(0x8000);
        __m256i words[2];
        int k;
        for (k = 0; k < 2; k++) {
            __m256i b = _mm256_castps_si256(k ? hi : lo);
            __m256i rounded = _mm256_srli_epi32(
                _mm256_add_epi32(_mm256_add_epi32(b, half),
                                 _mm256_and_si256(_mm256_srli_epi32(b, 16), one)), 16);
            __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(b, magnitude), inf);
            __m256i canonical = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(b, 16), sign),
                                                quiet);
            words[k] = _mm256_blendv_epi8(rounded, canonical, nan);
        }
        _mm256_storeu_si256((__m256i *)at,
                            _mm256_permute4x64_epi64(_mm256_packus_epi32(words[0], words[1]),
                                                     0xd8));
    }
}

/* One case of cv_lanes_avx2, every argument but the arrays a constant
   after inlining: the lanes, the result type, whether a scale and an
   offset are given (the registers stay registers, the loops unroll). */
static inline __attribute__((always_inline, target("avx2,f16c"))) void cv_lanes_case(
        char *dst, fb_intp plane_step, const uint8_t *src, fb_intp n, const int lanes,
        const int dst_type, const float *s, const float *o, const int has_s, const int has_o) {
    const unsigned char (*masks)[4][16] = cv_lane_masks[lanes - 3];
    const fb_intp out_item = dst_type == FB_NUM_F32 ? 4 : 2;
    __m256 scale[4], offset[4];
    __m128i mask[4][4];
    int lane, chunk;
    fb_intp i;
    FB_UNROLL
    for (lane = 0; lane < lanes; lane++) {
        scale[lane] = _mm256_set1_ps(has_s ? s[lane] : 1.0f);
        offset[lane] = _mm256_set1_ps(has_o ? o[lane] : 0.0f);
        FB_UNROLL
        for (chunk = 0; chunk < lanes; chunk++)
            mask[lane][chunk] = _mm_loadu_si128((const __m128i *)masks[lane][chunk]);
    }
    for (i = 0; i + 16 <= n; i += 16) {
        __m128i bytes[4];
        FB_UNROLL
        for (chunk = 0; chunk < lanes; chunk++)
            bytes[chunk] = _mm_loadu_si128((const __m128i *)(src + lanes * i + 16 * chunk));
        FB_UNROLL
        for (lane = 0; lane < lanes; lane++) {
            __m128i mine = _mm_shuffle_epi8(bytes[0], mask[lane][0]);
            __m256 lo, hi;
            FB_UNROLL
            for (chunk = 1; chunk < lanes; chunk++)
                mine = _mm_or_si128(mine, _mm_shuffle_epi8(bytes[chunk], mask[lane][chunk]));
            lo = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(mine));
            hi = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(mine, 8)));
            /* Each operation only where given: no multiply by 1, no add of 0. */
            if (has_s) {
                lo = _mm256_mul_ps(lo, scale[lane]);
                hi = _mm256_mul_ps(hi, scale[lane]);
            }
            if (has_o) {
                lo = _mm256_add_ps(lo, offset[lane]);
                hi = _mm256_add_ps(hi, offset[lane]);
            }
            cv_store_lane_avx2(dst_type, dst + lane * plane_step + i * out_item, lo, hi);
        }
    }
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

#define CV_LANES_AFFINE(LANES, DST)                                                           \
    do {                                                                                    \
        if (s && o)                                                                         \
            cv_lanes_case(dst, plane_step, src, n, LANES, DST, s, o, 1, 1);                 \
        else if (s)                                                                         \
            cv_lanes_case(dst, plane_step, src, n, LANES, DST, s, o, 1, 0);                 \
        else if (o)                                                                         \
            cv_lanes_case(dst, plane_step, src, n, LANES, DST, s, o, 0, 1);                 \
        else                                                                                \
            cv_lanes_case(dst, plane_step, src, n, LANES, DST, s, o, 0, 0);                 \
    } while (0)

#define CV_LANES_RESULT(LANES)                                                                \
    do {                                                                                    \
        if (dst_type == FB_NUM_F32)                                                         \
            CV_LANES_AFFINE(LANES, FB_NUM_F32);                                              \
        else if (dst_type == FB_NUM_F16)                                                    \
            CV_LANES_AFFINE(LANES, FB_NUM_F16);                                              \
        else                                                                                \
            CV_LANES_AFFINE(LANES, FB_NUM_BF16);                                             \
    } while (0)

static __attribute__((target("avx2,f16c"))) void cv_lanes_avx2(
        int dst_type, char *dst, fb_intp plane_step, const uint8_t *src, fb_intp n, int lanes,
        const float *s, const float *o) {
    if (lanes == 3)
        CV_LANES_RESULT(3);
    else
        CV_LANES_RESULT(4);
}
#endif

void fb_convert_lanes(const FbConvert *cv, char *dst, fb_intp plane_step, const char *src,
                      fb_intp n_pixels, int lanes, const char *scale, fb_intp scale_step,
                      const char *offset, fb_intp offset_step) {
#if FB_X86_SIMD
    float s[4], o[4];
    int lane;
    for (lane = 0; lane < lanes; lane++) {
        if (cv->scale == FB_AFFINE_VALUE)
            memcpy(&s[lane], scale + lane * scale_step, 4);
        if (cv->offset == FB_AFFINE_VALUE)
            memcpy(&o[lane], offset + lane * offset_step, 4);
    }
    cv_lanes_avx2(cv->dst, dst, plane_step, (const uint8_t *)src, n_pixels, lanes,
                  cv->scale == FB_AFFINE_VALUE ? s : NULL,
                  cv->offset == FB_AFFINE_VALUE ? o : NULL);
#else
    (void)cv; (void)dst; (void)plane_step; (void)src; (void)n_pixels; (void)lanes;
    (void)scale; (void)scale_step; (void)offset; (void)offset_step;
#endif
}
