/* The convert stage's NEON kernels (aarch64): stores into 8- and 16-bit
   integers and float16 for the passes (convert.c), and the one-pass lanes
   kernels, packed uint8 pixels into float planes (LD3/LD4) and float32
   planes back into uint8 pixels (ST3/ST4). */
#include "convert_kernels.h"

#if FB_NEON
#include <arm_neon.h>

#include "convert_lanes.h"

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

CV_INT_STORE(store_f32_u8_neon, FB_INTERNAL, uint8_t, 0.0f, 255.0f, 16,
    CV_INT32S_NEON(uint32x4_t, cv_uint32s_neon)
    vst1q_u8((uint8_t *)(dst + i), cv_u8s_neon(a, b, c, d));
)
CV_INT_STORE(store_f32_i8_neon, FB_INTERNAL, int8_t, -128.0f, 127.0f, 16,
    CV_INT32S_NEON(int32x4_t, cv_int32s_neon)
    vst1q_s8((int8_t *)(dst + i), vqmovn_high_s16(vqmovn_s16(vqmovn_high_s32(vqmovn_s32(a), b)),
                                                  vqmovn_high_s32(vqmovn_s32(c), d)));
)
CV_INT_STORE(store_f32_u16_neon, FB_INTERNAL, uint16_t, 0.0f, 65535.0f, 16,
    CV_INT32S_NEON(uint32x4_t, cv_uint32s_neon)
    vst1q_u16((uint16_t *)(dst + 2 * i), vqmovn_high_u32(vqmovn_u32(a), b));
    vst1q_u16((uint16_t *)(dst + 2 * i + 16), vqmovn_high_u32(vqmovn_u32(c), d));
)
CV_INT_STORE(store_f32_i16_neon, FB_INTERNAL, int16_t, -32768.0f, 32767.0f, 16,
    CV_INT32S_NEON(int32x4_t, cv_int32s_neon)
    vst1q_s16((int16_t *)(dst + 2 * i), vqmovn_high_s32(vqmovn_s32(a), b));
    vst1q_s16((int16_t *)(dst + 2 * i + 16), vqmovn_high_s32(vqmovn_s32(c), d));
)

/* float32 to float16 by FCVTN, as cv_f16_from_f32 converts (FCVT). */
FB_INTERNAL void store_f32_f16_neon(char *dst, fb_intp step, const float *v, fb_intp n) {
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

/* 16 float32 into the result type at `at`: float32; float16 by FCVTN (a
   NaN from the arithmetic is a quiet one, converted as FCVT does);
   bfloat16 rounded to nearest even, a NaN cut to its top half, quieted. */
static inline FB_ALWAYS_INLINE void cv_store_lane_neon(int dst_type, int rounding, char *at,
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
    } else if (rounding == CV_BF16_ROUND_ONLY) {
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
        const int dst_type, const int rounding, const float *s, const float *o, const int has_s,
        const int has_o) {
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
            cv_store_lane_neon(dst_type, rounding, dst + lane * plane_step + i * out_item, f);
        }
    }
    cv_lanes_tail(dst, plane_step, src, i, n, lanes, dst_type, s, o, has_s, has_o);
}

CV_LANES_KERNEL(cv_lanes_neon, FB_INTERNAL, cv_lanes_case_neon)

/* One case of cv_pixels_neon (CV_PIXELS_KERNEL): each plane's 16 floats
   rounded, converted and narrowed to 16 bytes with saturation, as
   store_f32_u8_neon does, then interleaved by ST3/ST4. */
static inline FB_ALWAYS_INLINE void cv_pixels_case_neon(
        uint8_t *dst, fb_intp plane_step, const char *src, fb_intp n, const int lanes,
        const int dst_type, const int rounding, const float *s, const float *o, const int has_s,
        const int has_o) {
    float32x4_t scale[4], offset[4];
    int lane, k;
    fb_intp i;
    (void)dst_type; (void)rounding;
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

CV_PIXELS_KERNEL(cv_pixels_neon, FB_INTERNAL, cv_pixels_case_neon)
#endif
