/* The convert stage's x86 kernels for the passes (convert.c): AVX2 stores
   into 8- and 16-bit integers, float16 by F16C both ways, bfloat16 loads,
   the fused float32-to-uint8 rounds, and bfloat16 straight from float64
   and 32/64-bit integers. Each carries its own target attribute and runs
   only where cpu.h reports the instructions. */
#include "convert_kernels.h"

#if FB_X86_SIMD
#include "convert_x86.h"

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

CV_INT_STORE(store_f32_u8_x86, FB_INTERNAL __attribute__((target("avx2"))), uint8_t, 0.0f, 255.0f, 32,
    CV_SATURATED_AVX2(0.0f, 255.0f)
    __m256i ab = cv_int16s_avx2(a, b, 0), cd = cv_int16s_avx2(c, d, 0);
    __m256i bytes = _mm256_permute4x64_epi64(_mm256_packus_epi16(ab, cd), 0xd8);
    _mm256_storeu_si256((__m256i *)(dst + i), bytes);
)
CV_INT_STORE(store_f32_i8_x86, FB_INTERNAL __attribute__((target("avx2"))), int8_t, -128.0f, 127.0f, 32,
    CV_SATURATED_AVX2(-128.0f, 127.0f)
    __m256i ab = cv_int16s_avx2(a, b, 0), cd = cv_int16s_avx2(c, d, 0);
    __m256i bytes = _mm256_permute4x64_epi64(_mm256_packs_epi16(ab, cd), 0xd8);
    _mm256_storeu_si256((__m256i *)(dst + i), bytes);
)
CV_INT_STORE(store_f32_u16_x86, FB_INTERNAL __attribute__((target("avx2"))), uint16_t, 0.0f, 65535.0f, 32,
    CV_SATURATED_AVX2(0.0f, 65535.0f)
    _mm256_storeu_si256((__m256i *)(dst + 2 * i), cv_int16s_avx2(a, b, 1));
    _mm256_storeu_si256((__m256i *)(dst + 2 * i + 32), cv_int16s_avx2(c, d, 1));
)
CV_INT_STORE(store_f32_i16_x86, FB_INTERNAL __attribute__((target("avx2"))), int16_t, -32768.0f, 32767.0f,
             32,
    CV_SATURATED_AVX2(-32768.0f, 32767.0f)
    _mm256_storeu_si256((__m256i *)(dst + 2 * i), cv_int16s_avx2(a, b, 0));
    _mm256_storeu_si256((__m256i *)(dst + 2 * i + 32), cv_int16s_avx2(c, d, 0));
)

/* float32 into packed uint8 with the scale and offset in registers, 32
   items a round (the passes' affine and store in one: no round trip
   through v); returns the items done, the last ones left to the portable
   fused loop (convert.c). SCALED, OFFSET: how a register of the 8 items
   from i + k takes them. */
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

FB_INTERNAL __attribute__((target("avx2"))) fb_intp fused_f32_u8_x86(char *dst, const char *src,
                                                                     fb_intp n, const float *s,
                                                                     int sm, const float *o,
                                                                     int om) {
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
    return i;
}
#undef CV_FUSED_U8_ROUND
#undef CV_BY_VALUE
#undef CV_BY_LINE

/* float32 to float16 by F16C: rounded to nearest even as NumPy rounds,
   overflow to inf, subnormals exact, a NaN by the NaN rule. */
FB_INTERNAL __attribute__((target("avx2,f16c"))) void store_f32_f16_x86(char *dst, fb_intp step,
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
FB_INTERNAL __attribute__((target("avx2,f16c"))) void load_f16_f32_x86(float *v, const char *src,
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
FB_INTERNAL __attribute__((target("avx2"))) void load_bf16_f32_x86(float *v, const char *src,
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

/* bfloat16 straight from float64 or int32 by AVX2, 8 items a round: each
   rounded to nearest in float32 (cvtpd2ps, cvtdq2ps), then to nearest
   even (a NaN by the rule: cvtpd2ps keeps the top of its payload). A round
   holding a float32 that is a bfloat16 tie goes again item by item, by
   cv_bf16_near's rule: rare, one float32 in 65536 is a tie. */
#define CV_BF16_STRAIGHT_AVX2(NAME, T, FLOATS, SCALAR)                                        \
    FB_INTERNAL __attribute__((target("avx2"))) void NAME(char *dst, fb_intp step,          \
                                                          const char *src, fb_intp n) {     \
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
#endif
