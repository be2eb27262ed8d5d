/* What the x86 convert kernels share (convert_x86.c, convert_lanes_x86.c):
   saturation before a conversion to integers, and bfloat16 rounding, of 8
   floats in AVX2 registers. */
#ifndef FASTBLOCK_CONVERT_X86_H
#define FASTBLOCK_CONVERT_X86_H

#include "convert_lanes.h"

#if FB_X86_SIMD
#include <immintrin.h>

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

/* 8 floats as bfloat16, each in the high half of its 32-bit lane (the
   low half is left over): rounded to nearest even; by CV_BF16_ROUND_ONLY
   (convert_lanes.h) the rounding alone, else a NaN is cut to its top
   half, quieted (the NaN rule). */
static inline __attribute__((always_inline, target("avx2"))) __m256i
cv_bf16_high_avx2(int rounding, __m256 v) {
    const __m256i half = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1);
    __m256i b = _mm256_castps_si256(v);
    __m256i rounded =
        _mm256_add_epi32(_mm256_add_epi32(b, half), _mm256_and_si256(_mm256_srli_epi32(b, 16), one));
    if (rounding == CV_BF16_ROUND_ONLY) {
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
cv_bf16_words_avx2(int rounding, __m256 v) {
    return _mm256_srli_epi32(cv_bf16_high_avx2(rounding, v), 16);
}
#endif

#endif
