/* NCHW_VECT_C depth_first SpaceToDepth and DepthToSpace with bs 3 in one
   pass (vect_c_pixels.h), by AVX-512 VBMI two-register byte permutes: NP
   depth pixels a step, the 3 space rows' 12 NP items in two 64-byte
   registers each, each depth plane's NP pixels in one. 18 permutes, 15
   loads and stores move 360 bytes of uint8. */
#include "vect_c_pixels.h"

const signed char fb_vect_c_row_planes[FB_VECT_C_BS][6] = {
    {0, 2, 4, 5, 6, 7}, {0, 1, 3, 5, 7, 8}, {1, 2, 3, 4, 6, 8}};

#if FB_VECT_C_PIXELS_BUILT
#include <immintrin.h>

/* AVX-512 VBMI */

static inline __mmask64 fb_low_bytes(fb_intp n) {
    return n <= 0 ? 0 : n >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << n) - 1);
}
#define FB_PERMUTE(k, a, b) _mm512_maskz_permutex2var_epi8( \
    masks[k], (a), _mm512_loadu_si512((const void *)(idx + 64 * (k))), (b))

/* space_to_depth: depth row y of out_w pixels of W-byte items in the 9
   planes from space rows 3y .. 3y+2, NP pixels a step (W and NP are
   constants after inlining). Entry 3g + r: plane g's bytes from row r. */
static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vbmi")))
void fb_vect_c_split_row(char *depth, fb_intp plane_step, const char *space,
                         fb_intp space_row_step, fb_intp out_w,
                         const unsigned char *idx, const unsigned long long *masks,
                         const int W, const int NP) {
    const fb_intp space_px = FB_VECT_C_BS * 4 * W, depth_px = 4 * W;
    fb_intp x, left;
    int g, r;
    for (x = 0; x < out_w; x += NP) {
        __m512i lo[FB_VECT_C_BS], hi[FB_VECT_C_BS];
        const char *s = space + x * space_px;
        char *d = depth + x * depth_px;
        left = out_w - x < NP ? out_w - x : NP;
        if (x + NP < out_w) {
            /* The row goes on past these 128 bytes ((NP + 1) * space_px > 128). */
            #pragma GCC unroll 3
            for (r = 0; r < FB_VECT_C_BS; r++) {
                lo[r] = _mm512_loadu_si512((const void *)(s + r * space_row_step));
                hi[r] = _mm512_loadu_si512((const void *)(s + r * space_row_step + 64));
            }
        } else {
            __mmask64 lo_mask = fb_low_bytes(left * space_px);
            __mmask64 hi_mask = fb_low_bytes(left * space_px - 64);
            #pragma GCC unroll 3
            for (r = 0; r < FB_VECT_C_BS; r++) {
                lo[r] = _mm512_maskz_loadu_epi8(lo_mask, s + r * space_row_step);
                hi[r] = _mm512_maskz_loadu_epi8(hi_mask, s + r * space_row_step + 64);
            }
        }
        /* Unrolled, so that g is a constant and lo and hi stay in registers. */
        #pragma GCC unroll 9
        for (g = 0; g < FB_VECT_C_M; g++) {
            const int first = 4 * g % FB_VECT_C_M / FB_VECT_C_BS;
            const int last = (4 * g + 3) % FB_VECT_C_M / FB_VECT_C_BS;
            const int k = FB_VECT_C_BS * g + first, k2 = FB_VECT_C_BS * g + last;
            __m512i item = _mm512_or_si512(FB_PERMUTE(k, lo[first], hi[first]),
                                           FB_PERMUTE(k2, lo[last], hi[last]));
            if (x + 2 * NP <= out_w)
                _mm512_storeu_si512((void *)(d + g * plane_step), item);
            else
                _mm512_mask_storeu_epi8(d + g * plane_step, fb_low_bytes(left * depth_px), item);
        }
    }
}

/* depth_to_space: space rows 3y .. 3y+2 from depth row y of the 9
   planes. Entry 6r + 3h + q: half h (64 bytes) of row r's register
   pair from the q-th pair of planes of fb_vect_c_row_planes[r]. */
static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vbmi")))
void fb_vect_c_join_row(char *space, fb_intp space_row_step, const char *depth,
                        fb_intp plane_step, fb_intp out_w,
                        const unsigned char *idx, const unsigned long long *masks,
                        const int W, const int NP) {
    const fb_intp space_px = FB_VECT_C_BS * 4 * W, depth_px = 4 * W;
    fb_intp x, left;
    int g, r, h;
    for (x = 0; x < out_w; x += NP) {
        __m512i plane[FB_VECT_C_M];
        const char *s = depth + x * depth_px;
        char *d = space + x * space_px;
        left = out_w - x < NP ? out_w - x : NP;
        if ((x + 16 / W) <= out_w) {
            /* 64 bytes of each plane row (16 / W pixels) are there. */
            #pragma GCC unroll 9
            for (g = 0; g < FB_VECT_C_M; g++)
                plane[g] = _mm512_loadu_si512((const void *)(s + g * plane_step));
        } else {
            __mmask64 mask = fb_low_bytes(left * depth_px);
            #pragma GCC unroll 9
            for (g = 0; g < FB_VECT_C_M; g++)
                plane[g] = _mm512_maskz_loadu_epi8(mask, s + g * plane_step);
        }
        /* Unrolled, so that r, h and the planes are constants. */
        #pragma GCC unroll 3
        for (r = 0; r < FB_VECT_C_BS; r++) {
            #pragma GCC unroll 2
            for (h = 0; h < 2; h++) {
                const int k = 6 * r + 3 * h;
                const signed char *pair = fb_vect_c_row_planes[r];
                __m512i item = _mm512_or_si512(
                    _mm512_or_si512(FB_PERMUTE(k, plane[pair[0]], plane[pair[1]]),
                                    FB_PERMUTE(k + 1, plane[pair[2]], plane[pair[3]])),
                    FB_PERMUTE(k + 2, plane[pair[4]], plane[pair[5]]));
                char *row = d + r * space_row_step + 64 * h;
                /* The row goes on past this step's NP * space_px bytes
                   by at least space_px > 128 - NP * space_px. */
                if (x + NP < out_w)
                    _mm512_storeu_si512((void *)row, item);
                else
                    _mm512_mask_storeu_epi8(row, fb_low_bytes(left * space_px - 64 * h), item);
            }
        }
    }
}
#undef FB_PERMUTE

__attribute__((target("avx512f,avx512bw,avx512vbmi")))
void fb_vect_c_pixels(char *depth, fb_intp plane_step, fb_intp depth_row_step,
                      char *space, fb_intp space_row_step, fb_intp rows,
                      fb_intp out_w, const unsigned char *idx,
                      const unsigned long long *masks, int W, int to_depth) {
    fb_intp y;
    for (y = 0; y < rows; y++) {
        char *d = depth + y * depth_row_step;
        char *s = space + y * FB_VECT_C_BS * space_row_step;
        #define FB_VECT_C_ROW(W_, NP_) \
            if (to_depth) fb_vect_c_split_row(d, plane_step, s, space_row_step, out_w, idx, masks, W_, NP_); \
            else fb_vect_c_join_row(s, space_row_step, d, plane_step, out_w, idx, masks, W_, NP_);
        switch (W) {
            case 1: FB_VECT_C_ROW(1, 10) break;
            case 2: FB_VECT_C_ROW(2, 5) break;
            default: FB_VECT_C_ROW(4, 2) break;
        }
        #undef FB_VECT_C_ROW
    }
}

#else

/* Portable fallback: never called (the engine plans the kernel only where
   it is built and cpu.h reports AVX-512 VBMI). */
void fb_vect_c_pixels(char *depth, fb_intp plane_step, fb_intp depth_row_step,
                      char *space, fb_intp space_row_step, fb_intp rows,
                      fb_intp out_w, const unsigned char *idx,
                      const unsigned long long *masks, int W, int to_depth) {
    (void)depth; (void)plane_step; (void)depth_row_step; (void)space; (void)space_row_step;
    (void)rows; (void)out_w; (void)idx; (void)masks; (void)W; (void)to_depth;
}

#endif
