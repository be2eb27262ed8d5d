/* The 16-byte vector that the engine's 16-byte kernels are written in:
   the lane transposes (lanes.c), the register tile transposes
   (register_transpose.h, transpose.h), the byte-shuffle gathers
   (shuffle.c) and Tile's repeats (repeat.c). One source, two
   instruction sets: SSE2/SSSE3 on x86 (the CPU checked at run time,
   cpu.h), NEON on
   aarch64 (baseline there: no check). FB_V128_TARGET /
   FB_V128_BASE_TARGET: see below. The wider x86 kernels (AVX, AVX2,
   AVX-512) use their intrinsics directly, under FB_X86_SIMD.

   fb_v128_shuffle(v, m) is byte j = v[m[j]] for m[j] < 16 and 0 for
   m[j] >= 0x80, the masks the engine builds (pshufb reads only the low 4
   bits and the top one; tbl zeroes every index past 15). */
#ifndef FASTBLOCK_SIMD128_H
#define FASTBLOCK_SIMD128_H

#include "fb_common.h"

#if FB_X86_SIMD
#include <immintrin.h>

/* Functions that shuffle bytes need SSSE3; the others SSE2, which every
   x86-64 CPU has. */
#define FB_V128_TARGET __attribute__((target("ssse3")))
#define FB_V128_BASE_TARGET __attribute__((target("sse2")))
typedef __m128i fb_v128;

#define fb_v128_load(p) _mm_loadu_si128((const __m128i *)(p))
#define fb_v128_store(p, v) _mm_storeu_si128((__m128i *)(p), (v))
#define fb_v128_zero() _mm_setzero_si128()
#define fb_v128_or(a, b) _mm_or_si128((a), (b))
#define fb_v128_shuffle(v, m) _mm_shuffle_epi8((v), (m))
/* Bytes 0-7 from lo, 8-15 from hi. */
#define fb_v128_from_u64(hi, lo) _mm_set_epi64x((long long)(hi), (long long)(lo))
/* Elements of 1, 2, 4, 8 bytes from the low (high) halves of a and b,
   alternately: a0 b0 a1 b1 ... */
#define fb_v128_zip_lo8(a, b) _mm_unpacklo_epi8((a), (b))
#define fb_v128_zip_hi8(a, b) _mm_unpackhi_epi8((a), (b))
#define fb_v128_zip_lo16(a, b) _mm_unpacklo_epi16((a), (b))
#define fb_v128_zip_hi16(a, b) _mm_unpackhi_epi16((a), (b))
#define fb_v128_zip_lo32(a, b) _mm_unpacklo_epi32((a), (b))
#define fb_v128_zip_hi32(a, b) _mm_unpackhi_epi32((a), (b))
#define fb_v128_zip_lo64(a, b) _mm_unpacklo_epi64((a), (b))
#define fb_v128_zip_hi64(a, b) _mm_unpackhi_epi64((a), (b))
/* The even (odd) 4-byte elements of a, then those of b. */
#define fb_v128_even32(a, b) \
    _mm_castps_si128(_mm_shuffle_ps(_mm_castsi128_ps(a), _mm_castsi128_ps(b), 0x88))
#define fb_v128_odd32(a, b) \
    _mm_castps_si128(_mm_shuffle_ps(_mm_castsi128_ps(a), _mm_castsi128_ps(b), 0xDD))

#elif FB_NEON
#include <arm_neon.h>

#define FB_V128_TARGET
#define FB_V128_BASE_TARGET
typedef uint8x16_t fb_v128;

#define fb_v128_load(p) vld1q_u8((const uint8_t *)(p))
#define fb_v128_store(p, v) vst1q_u8((uint8_t *)(p), (v))
#define fb_v128_zero() vdupq_n_u8(0)
#define fb_v128_or(a, b) vorrq_u8((a), (b))
#define fb_v128_shuffle(v, m) vqtbl1q_u8((v), (m))
#define fb_v128_from_u64(hi, lo) \
    vreinterpretq_u8_u64(vcombine_u64(vcreate_u64((uint64_t)(lo)), vcreate_u64((uint64_t)(hi))))
#define FB_NEON_ZIP(OP, N, a, b) \
    vreinterpretq_u8_u##N(OP##_u##N(vreinterpretq_u##N##_u8(a), vreinterpretq_u##N##_u8(b)))
#define fb_v128_zip_lo8(a, b) vzip1q_u8((a), (b))
#define fb_v128_zip_hi8(a, b) vzip2q_u8((a), (b))
#define fb_v128_zip_lo16(a, b) FB_NEON_ZIP(vzip1q, 16, a, b)
#define fb_v128_zip_hi16(a, b) FB_NEON_ZIP(vzip2q, 16, a, b)
#define fb_v128_zip_lo32(a, b) FB_NEON_ZIP(vzip1q, 32, a, b)
#define fb_v128_zip_hi32(a, b) FB_NEON_ZIP(vzip2q, 32, a, b)
#define fb_v128_zip_lo64(a, b) FB_NEON_ZIP(vzip1q, 64, a, b)
#define fb_v128_zip_hi64(a, b) FB_NEON_ZIP(vzip2q, 64, a, b)
#define fb_v128_even32(a, b) FB_NEON_ZIP(vuzp1q, 32, a, b)
#define fb_v128_odd32(a, b) FB_NEON_ZIP(vuzp2q, 32, a, b)

#else
/* No 16-byte kernels: the functions that would carry these are portable. */
#define FB_V128_TARGET
#define FB_V128_BASE_TARGET
#endif

#endif
