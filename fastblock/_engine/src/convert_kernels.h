/* The convert stage's kernels by instruction set, as convert.c's tables
   take them: the x86 ones (convert_x86.c, convert_lanes_x86.c) and the
   NEON ones (convert_neon.c). Each runs only where cpu.h reports its
   instructions; the portable passes are convert_passes.h's. */
#ifndef FASTBLOCK_CONVERT_KERNELS_H
#define FASTBLOCK_CONVERT_KERNELS_H

#include "convert.h"

#if FB_X86_SIMD
/* The passes' stores (float32 into the result type), loads (the source
   into float32) and bfloat16 straight from a wide source. */
FB_INTERNAL void store_f32_u8_x86(char *dst, fb_intp step, const float *v, fb_intp n);
FB_INTERNAL void store_f32_i8_x86(char *dst, fb_intp step, const float *v, fb_intp n);
FB_INTERNAL void store_f32_u16_x86(char *dst, fb_intp step, const float *v, fb_intp n);
FB_INTERNAL void store_f32_i16_x86(char *dst, fb_intp step, const float *v, fb_intp n);
FB_INTERNAL void store_f32_f16_x86(char *dst, fb_intp step, const float *v, fb_intp n);
FB_INTERNAL void load_f16_f32_x86(float *v, const char *src, fb_intp n);
FB_INTERNAL void load_bf16_f32_x86(float *v, const char *src, fb_intp n);
FB_INTERNAL void bf16_from_f64_x86(char *dst, fb_intp step, const char *src, fb_intp n);
FB_INTERNAL void bf16_from_i32_x86(char *dst, fb_intp step, const char *src, fb_intp n);
FB_INTERNAL void bf16_from_u32_x86(char *dst, fb_intp step, const char *src, fb_intp n);
FB_INTERNAL void bf16_from_i64_x86(char *dst, fb_intp step, const char *src, fb_intp n);
FB_INTERNAL void bf16_from_u64_x86(char *dst, fb_intp step, const char *src, fb_intp n);
/* float32 into packed uint8, scaled and offset, 32 items a round: returns
   the items done (the rest is the caller's). */
FB_INTERNAL fb_intp fused_f32_u8_x86(char *dst, const char *src, fb_intp n, const float *s,
                                     int sm, const float *o, int om);

/* The one-pass lanes kernels (convert.h: fb_convert_lanes). bf16_rounding:
   how a bfloat16 result is rounded (convert_lanes.h). */
FB_INTERNAL void cv_lanes_avx2(int dst_type, int bf16_rounding, char *dst, fb_intp plane_step,
                               const uint8_t *src, fb_intp n, int lanes, const float *s,
                               const float *o);
FB_INTERNAL void cv_pixels_avx2(uint8_t *dst, fb_intp plane_step, const char *src, fb_intp n,
                                int lanes, const float *s, const float *o);
FB_INTERNAL void cv_pixels_avx512(uint8_t *dst, fb_intp plane_step, const char *src, fb_intp n,
                                  int lanes, const float *s, const float *o);
FB_INTERNAL void cv_wide_lanes_avx2(int dst_type, int bf16_rounding, char *dst,
                                    fb_intp plane_step, const char *src, fb_intp n, int lanes,
                                    int is_signed, const float *s, const float *o);
/* Their byte shuffles and permutes, built once (fb_convert_init). */
FB_INTERNAL void cv_build_lane_masks(void);
#endif

#if FB_NEON
FB_INTERNAL void store_f32_u8_neon(char *dst, fb_intp step, const float *v, fb_intp n);
FB_INTERNAL void store_f32_i8_neon(char *dst, fb_intp step, const float *v, fb_intp n);
FB_INTERNAL void store_f32_u16_neon(char *dst, fb_intp step, const float *v, fb_intp n);
FB_INTERNAL void store_f32_i16_neon(char *dst, fb_intp step, const float *v, fb_intp n);
FB_INTERNAL void store_f32_f16_neon(char *dst, fb_intp step, const float *v, fb_intp n);
FB_INTERNAL void cv_lanes_neon(int dst_type, int bf16_rounding, char *dst, fb_intp plane_step,
                               const uint8_t *src, fb_intp n, int lanes, const float *s,
                               const float *o);
FB_INTERNAL void cv_pixels_neon(uint8_t *dst, fb_intp plane_step, const char *src, fb_intp n,
                                int lanes, const float *s, const float *o);
#endif

#endif
