/* What the one-pass lanes kernels of each instruction set share
   (convert_lanes_x86.c, convert_neon.c): their bfloat16 roundings, the
   item-by-item tails, and the macros that spell out their cases. */
#ifndef FASTBLOCK_CONVERT_LANES_H
#define FASTBLOCK_CONVERT_LANES_H

#include "convert_scalar.h"

#if FB_X86_SIMD || FB_NEON
/* How a lanes kernel rounds float32 to bfloat16, its own parameter beside
   the result type (fb_convert_lanes picks it from each call's scale and
   offset):
   - CV_BF16_NAN_RULE: rounded to nearest even, a NaN cut to its top half
     and quieted (convert.h's rule), where the scale or offset is not finite;
   - CV_BF16_ROUND_ONLY: the rounding alone, where the scale and offset are
     finite. Then no NaN can come of the arithmetic (a uint8 times a finite
     scale is finite or overflows to an infinity, plus a finite offset stays
     one): an infinity rounds to itself, the largest floats to an infinity,
     as the rule rounds;
   - CV_BF16_BY_CPU (x86): the CPU's conversion (vcvtne2ps2bf16, AVX-512
     BF16: rounded to nearest even, but subnormal inputs and results taken
     as 0), where cv->bf16 says the CPU has it and no result can be NaN or
     subnormal: the scale and offset finite, each 0 or of magnitude
     CV_BF16_NORMAL_MIN or more. Then, the sources being integers, x * s is
     0 or at least |s|, and a sum of two such floats is a multiple of
     2^-123, so 0 or normal. */
enum { CV_BF16_NAN_RULE, CV_BF16_ROUND_ONLY, CV_BF16_BY_CPU };
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
   inlining CASE: the lanes, the result type and its bfloat16 rounding,
   whether a scale and an offset are given (the registers stay registers,
   the loops unroll). */
#define CV_LANES_AFFINE(CASE, LANES, DST, ROUNDING)                                         \
    do {                                                                                    \
        if (s && o)                                                                         \
            CASE(dst, plane_step, src, n, LANES, DST, ROUNDING, s, o, 1, 1);                \
        else if (s)                                                                         \
            CASE(dst, plane_step, src, n, LANES, DST, ROUNDING, s, o, 1, 0);                \
        else if (o)                                                                         \
            CASE(dst, plane_step, src, n, LANES, DST, ROUNDING, s, o, 0, 1);                \
        else                                                                                \
            CASE(dst, plane_step, src, n, LANES, DST, ROUNDING, s, o, 0, 0);                \
    } while (0)

/* The CPU's bfloat16 conversion is a case on x86 alone. */
#if FB_X86_SIMD
#define CV_LANES_BF16_BY_CPU(CASE, LANES)                                                   \
    if (bf16_rounding == CV_BF16_BY_CPU)                                                    \
        CV_LANES_AFFINE(CASE, LANES, FB_NUM_BF16, CV_BF16_BY_CPU);                          \
    else
#else
#define CV_LANES_BF16_BY_CPU(CASE, LANES)
#endif

#define CV_LANES_RESULT(CASE, LANES)                                                        \
    do {                                                                                    \
        if (dst_type == FB_NUM_F32)                                                         \
            CV_LANES_AFFINE(CASE, LANES, FB_NUM_F32, CV_BF16_NAN_RULE);                     \
        else if (dst_type == FB_NUM_F16)                                                    \
            CV_LANES_AFFINE(CASE, LANES, FB_NUM_F16, CV_BF16_NAN_RULE);                     \
        else CV_LANES_BF16_BY_CPU(CASE, LANES)                                              \
        if (bf16_rounding == CV_BF16_ROUND_ONLY)                                            \
            CV_LANES_AFFINE(CASE, LANES, FB_NUM_BF16, CV_BF16_ROUND_ONLY);                  \
        else                                                                                \
            CV_LANES_AFFINE(CASE, LANES, FB_NUM_BF16, CV_BF16_NAN_RULE);                    \
    } while (0)

#define CV_LANES_KERNEL(NAME, ATTR, CASE)                                                   \
    ATTR void NAME(int dst_type, int bf16_rounding, char *dst, fb_intp plane_step,          \
                   const uint8_t *src, fb_intp n, int lanes, const float *s, const float *o) { \
        if (lanes == 3)                                                                     \
            CV_LANES_RESULT(CASE, 3);                                                       \
        else                                                                                \
            CV_LANES_RESULT(CASE, 4);                                                       \
    }

/* An interleave kernel's cases (uint8 results), as CV_LANES_KERNEL's. */
#define CV_PIXELS_KERNEL(NAME, ATTR, CASE)                                                  \
    ATTR void NAME(uint8_t *dst, fb_intp plane_step, const char *src, fb_intp n, int lanes, \
                   const float *s, const float *o) {                                        \
        if (lanes == 3)                                                                     \
            CV_LANES_AFFINE(CASE, 3, FB_NUM_U8, CV_BF16_NAN_RULE);                          \
        else                                                                                \
            CV_LANES_AFFINE(CASE, 4, FB_NUM_U8, CV_BF16_NAN_RULE);                          \
    }
#endif


#endif
