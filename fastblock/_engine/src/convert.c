/* The convert stage's tables and dispatch: see convert.h for the rule. A
   run goes in pieces of FB_CONVERT_PIECE items through v, a buffer of the
   compute type that stays in L1: load, scale and offset, store
   (convert_passes.h, portable and, on x86-64, for AVX2), with the SIMD
   kernels of each instruction set (convert_kernels.h) put into the tables
   once, at init; a few pairs go by a fused loop or straight. Each tile
   shape's run conversion and one-pass lanes kernel are chosen once, when
   its plan is made (fb_convert_run_for, fb_convert_lanes_for). */
#include "convert_kernels.h"
#include "convert_lanes.h"

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

#if FB_X86_SIMD
/* float32 into packed uint8 by AVX2 rounds, the last items by the portable
   fused loop. */
static void fused_f32_u8_simd(char *dst, const char *src, fb_intp n, const float *s, int sm,
                              const float *o, int om) {
    fb_intp i = fused_f32_u8_x86(dst, src, n, s, sm, o, om);
    fused_f32_u8_portable(dst + i, src + 4 * i, n - i, sm == FB_AFFINE_LINE ? s + i : s, sm,
                          om == FB_AFFINE_LINE ? o + i : o, om);
}
#endif

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
    passes_simd.fused[FB_NUM_U8][FB_NUM_F32] = fused_f32_u8_simd;
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

static const FbConvertPasses *cv_passes(const FbConvert *cv) {
#if FB_X86_SIMD || FB_NEON
    if (cv->simd)
        return &passes_simd;
#else
    (void)cv;
#endif
    return &passes_portable;
}

static int cv_affine(const FbConvert *cv) {
    return cv->scale != FB_AFFINE_NONE || cv->offset != FB_AFFINE_NONE;
}

/* A run in pieces through v, in the compute type CT (SUF its passes'
   suffix, NUM its type code). Lines advance with the run; one value (or
   none: NULL) stays. A source of the compute type, aligned (the stage
   always is), is read where it lies: no load pass. */
#define CV_PIECES(CT, SUF, NUM)                                                             \
    do {                                                                                    \
        const FbConvertPasses *passes = cv_passes(cv);                                      \
        fb_intp i, m, item = cv_item_bytes[cv->src];                                        \
        int s_line = cv->scale == FB_AFFINE_LINE, o_line = cv->offset == FB_AFFINE_LINE;    \
        int affine = cv_affine(cv);                                                         \
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

static void cv_run_pieces_f32(const FbConvert *cv, char *dst, fb_intp dst_step, const char *src,
                              fb_intp n, const char *scale, const char *offset) {
    CV_PIECES(float, f32, FB_NUM_F32);
}

static void cv_run_pieces_f64(const FbConvert *cv, char *dst, fb_intp dst_step, const char *src,
                              fb_intp n, const char *scale, const char *offset) {
    CV_PIECES(double, f64, FB_NUM_F64);
}
#undef CV_PIECES

static void cv_run_bf16_straight(const FbConvert *cv, char *dst, fb_intp dst_step,
                                 const char *src, fb_intp n, const char *scale,
                                 const char *offset) {
    (void)scale; (void)offset;
    cv_passes(cv)->bf16_straight[cv->src](dst, dst_step, src, n);
}

static void cv_run_fused(const FbConvert *cv, char *dst, fb_intp dst_step, const char *src,
                         fb_intp n, const char *scale, const char *offset) {
    (void)dst_step;
    cv_passes(cv)->fused[cv->dst][cv->src](dst, src, n, (const float *)scale, cv->scale,
                                           (const float *)offset, cv->offset);
}

/* float32 results without scale or offset: the load is the conversion,
   straight into an aligned result (else by the pieces). */
static void cv_run_load_f32(const FbConvert *cv, char *dst, fb_intp dst_step, const char *src,
                            fb_intp n, const char *scale, const char *offset) {
    if ((uintptr_t)dst % 4 == 0)
        cv_passes(cv)->load_f32[cv->src]((float *)dst, src, n);
    else
        cv_run_pieces_f32(cv, dst, dst_step, src, n, scale, offset);
}

FbConvertRun fb_convert_run_for(const FbConvert *cv, fb_intp dst_step) {
    const FbConvertPasses *passes = cv_passes(cv);
    int affine = cv_affine(cv);
    if (cv->dst == FB_NUM_BF16 && !affine && passes->bf16_straight[cv->src] != NULL)
        return cv_run_bf16_straight;
    if (cv->compute == FB_NUM_F32 && dst_step == cv_item_bytes[cv->dst]
            && passes->fused[cv->dst][cv->src] != NULL)
        return cv_run_fused;
    if (cv->dst == FB_NUM_F32 && cv->compute == FB_NUM_F32 && !affine && dst_step == 4)
        return cv_run_load_f32;
    return cv->compute == FB_NUM_F32 ? cv_run_pieces_f32 : cv_run_pieces_f64;
}

void fb_convert_init(void) {
#if FB_X86_SIMD
    build_simd_passes(&passes_avx2, store_f32_u8_x86, store_f32_i8_x86, store_f32_u16_x86,
                      store_f32_i16_x86, store_f32_f16_x86);
    cv_build_lane_masks();
#elif FB_NEON
    build_simd_passes(&passes_portable, store_f32_u8_neon, store_f32_i8_neon, store_f32_u16_neon,
                      store_f32_i16_neon, store_f32_f16_neon);
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


/* The lanes kernels, each behind the one signature of FbConvertLanes. */
#if FB_X86_SIMD
static void cv_lanes_by_pixels_avx512(const FbConvert *cv, char *dst, const char *src,
                                      fb_intp plane_step, fb_intp n, int lanes, const float *s,
                                      const float *o, int bf16_rounding) {
    (void)cv; (void)bf16_rounding;
    cv_pixels_avx512((uint8_t *)dst, plane_step, src, n, lanes, s, o);
}

static void cv_lanes_by_pixels_avx2(const FbConvert *cv, char *dst, const char *src,
                                    fb_intp plane_step, fb_intp n, int lanes, const float *s,
                                    const float *o, int bf16_rounding) {
    (void)cv; (void)bf16_rounding;
    cv_pixels_avx2((uint8_t *)dst, plane_step, src, n, lanes, s, o);
}

static void cv_lanes_by_wide_avx2(const FbConvert *cv, char *dst, const char *src,
                                  fb_intp plane_step, fb_intp n, int lanes, const float *s,
                                  const float *o, int bf16_rounding) {
    cv_wide_lanes_avx2(cv->dst, bf16_rounding, dst, plane_step, src, n, lanes,
                       cv->src == FB_NUM_I16, s, o);
}

static void cv_lanes_by_avx2(const FbConvert *cv, char *dst, const char *src, fb_intp plane_step,
                             fb_intp n, int lanes, const float *s, const float *o,
                             int bf16_rounding) {
    cv_lanes_avx2(cv->dst, bf16_rounding, dst, plane_step, (const uint8_t *)src, n, lanes, s, o);
}
#elif FB_NEON
static void cv_lanes_by_pixels_neon(const FbConvert *cv, char *dst, const char *src,
                                    fb_intp plane_step, fb_intp n, int lanes, const float *s,
                                    const float *o, int bf16_rounding) {
    (void)cv; (void)bf16_rounding;
    cv_pixels_neon((uint8_t *)dst, plane_step, src, n, lanes, s, o);
}

static void cv_lanes_by_neon(const FbConvert *cv, char *dst, const char *src, fb_intp plane_step,
                             fb_intp n, int lanes, const float *s, const float *o,
                             int bf16_rounding) {
    cv_lanes_neon(cv->dst, bf16_rounding, dst, plane_step, (const uint8_t *)src, n, lanes, s, o);
}
#endif

FbConvertLanes fb_convert_lanes_for(const FbConvert *cv, int lanes, int interleave,
                                    fb_intp n_pixels) {
    if (!fb_convert_lanes_runs(cv, lanes, interleave))
        return NULL;
#if FB_X86_SIMD
    if (interleave)
        return cv->vbmi && n_pixels >= 64 ? cv_lanes_by_pixels_avx512 : cv_lanes_by_pixels_avx2;
    return cv->src != FB_NUM_U8 ? cv_lanes_by_wide_avx2 : cv_lanes_by_avx2;
#elif FB_NEON
    (void)n_pixels;
    return interleave ? cv_lanes_by_pixels_neon : cv_lanes_by_neon;
#else
    (void)n_pixels;
    return NULL;
#endif
}

void fb_convert_lanes(FbConvertLanes kernel, const FbConvert *cv, char *dst, const char *src,
                      fb_intp plane_step, fb_intp n_pixels, int lanes, const char *scale,
                      fb_intp scale_step, const char *offset, fb_intp offset_step) {
#if FB_X86_SIMD || FB_NEON
    float s[FB_CONVERT_WIDE_LANES_MAX], o[FB_CONVERT_WIDE_LANES_MAX];
    int lane, finite = 1, normal = 1, bf16_rounding;
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
    bf16_rounding = !finite                ? CV_BF16_NAN_RULE
                    : FB_X86_SIMD && cv->bf16 && normal ? CV_BF16_BY_CPU
                                                        : CV_BF16_ROUND_ONLY;
    kernel(cv, dst, src, plane_step, n_pixels, lanes, has_s, has_o, bf16_rounding);
#else
    /* No lanes kernels here: fb_convert_lanes_for gave none to call. */
    (void)kernel; (void)cv; (void)dst; (void)src; (void)plane_step; (void)n_pixels;
    (void)lanes; (void)scale; (void)scale_step; (void)offset; (void)offset_step;
#endif
}
