/* Lane transposes of 2 to 4 lanes of 1-, 2- or 4-byte items by 64-byte
   permutes (lanes.h, AVX-512 VBMI): a step takes 64 bytes of each lane
   (interleave) or the same pixels' L * 64 packed bytes (split), and each
   of the L result registers is one two-source byte permute (vpermt2b) of
   lanes or registers 0 and 1, blended under a byte mask with one of 2 and
   3. The 16-byte kernel (fb_lanes_row) pads 3 lanes to 4 and moves a
   register a lane: 1.9-2.8 x np.copyto for RGB uint8 pixels to planes
   and back. */
#include "lanes.h"

#if FB_X86_SIMD

/* Each thread keeps the last permutes it built (a block's call would
   otherwise build them again: 512 index bytes for a few KiB moved). */
static FB_THREAD_LOCAL FbLanePermutes fb_lane_permutes;

void fb_lane_permutes_build(FbLanePermutes *t, int L, int W, int interleave) {
    int k, j;
    for (k = 0; k < L; k++) {
        t->from_b[k] = 0;
        for (j = 0; j < 64; j++) {
            /* The input (lane, or packed register) and its byte that
               result byte j of register k takes. */
            int input, byte;
            if (interleave) {
                const int q = 64 * k + j;            /* byte of the pixels */
                input = (q / W) % L;
                byte = q / (L * W) * W + q % W;
            } else {
                const int q = (j / W * L + k) * W + j % W;   /* lane k's item j / W */
                input = q / 64;
                byte = q % 64;
            }
            t->pair_a[k][j] = (unsigned char)((input == 1 ? 64 : 0) + byte);
            t->pair_b[k][j] = (unsigned char)((input == 3 ? 64 : 0) + byte);
            if (input >= 2)
                t->from_b[k] |= 1ULL << j;
        }
    }
    t->lanes = L;
    t->width = W;
    t->interleave = interleave;
}

/* This thread's permutes of (L, W, interleave), built where they are not
   the last it built. */
static const FbLanePermutes *fb_lane_permutes_for(int L, int W, int interleave) {
    FbLanePermutes *t = &fb_lane_permutes;
    if (t->lanes != L || t->width != W || t->interleave != interleave)
        fb_lane_permutes_build(t, L, W, interleave);
    return t;
}

/* The low `n` bytes (n <= 64) as a byte mask. */
static inline unsigned long long fb_low_bytes(fb_intp n) {
    return n >= 64 ? ~0ULL : (1ULL << n) - 1;
}

/* One row of n pixels of L lanes of W-byte items (L, W and interleave
   constants after inlining); lane l at lane[l] from the row (source if
   interleave, else destination), the pixels packed on the other side.
   The last pixels, under 64 / W, read and write under byte masks, which
   leave the bytes past the row untouched. */
static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vbmi")))
void fb_lanes_row_wide(char *dst, const char *src, fb_intp n, const fb_intp *lane,
                       const FbLaneIndex *t, const int L, const int W,
                       const int interleave) {
    const fb_intp G = 64 / W;
    __m512i in[4];
    fb_intp i, left;
    int k;
    for (i = 0; i + G <= n; i += G) {
        if (interleave) {
            for (k = 0; k < L; k++)
                in[k] = _mm512_loadu_si512((const void *)(src + lane[k] + i * W));
            for (k = 0; k < L; k++)
                _mm512_storeu_si512((void *)(dst + (i * L + G * k) * W),
                                    fb_lane_result(t, k, in, L));
        } else {
            for (k = 0; k < L; k++)
                in[k] = _mm512_loadu_si512((const void *)(src + (i * L + G * k) * W));
            for (k = 0; k < L; k++)
                _mm512_storeu_si512((void *)(dst + lane[k] + i * W), fb_lane_result(t, k, in, L));
        }
    }
    if (i == n)
        return;
    left = (n - i) * W;                 /* bytes of each lane left */
    if (interleave) {
        for (k = 0; k < L; k++)
            in[k] = _mm512_maskz_loadu_epi8(fb_low_bytes(left), src + lane[k] + i * W);
        for (k = 0; k < L && 64 * k < left * L; k++)
            _mm512_mask_storeu_epi8(dst + (i * L + G * k) * W, fb_low_bytes(left * L - 64 * k),
                                    fb_lane_result(t, k, in, L));
    } else {
        for (k = 0; k < L; k++)
            in[k] = 64 * k < left * L
                ? _mm512_maskz_loadu_epi8(fb_low_bytes(left * L - 64 * k),
                                          src + (i * L + G * k) * W)
                : _mm512_setzero_si512();
        for (k = 0; k < L; k++)
            _mm512_mask_storeu_epi8(dst + lane[k] + i * W, fb_low_bytes(left),
                                    fb_lane_result(t, k, in, L));
    }
}

#define FB_WIDE_LANE_ROWS(L, W, INTERLEAVE)                                  \
    for (k = 0; k < r.n_groups; k++)                                         \
        for (m = 0; m < r.n_in; m++)                                         \
            fb_lanes_row_wide(dst + k * r.dst_group + m * r.dst_in,          \
                              src + k * r.src_group + m * r.src_in, n, lane, \
                              &x, L, W, INTERLEAVE)
#define FB_WIDE_LANE_DIRECTIONS(L, W)                                        \
    if (interleave) { FB_WIDE_LANE_ROWS(L, W, 1); }                          \
    else { FB_WIDE_LANE_ROWS(L, W, 0); }
#define FB_WIDE_LANE_WIDTHS(L)                                               \
    if (width == 1) { FB_WIDE_LANE_DIRECTIONS(L, 1) }                        \
    else if (width == 2) { FB_WIDE_LANE_DIRECTIONS(L, 2) }                   \
    else { FB_WIDE_LANE_DIRECTIONS(L, 4) }

__attribute__((target("avx512f,avx512bw,avx512vbmi")))
void fb_lanes_rows_wide(char *dst, const char *src, const FbLaneRows *rows, fb_intp n, int L,
                        const fb_intp *lane, int interleave, int width) {
    const FbLaneRows r = *rows;
    FbLaneIndex x;
    fb_intp k, m;
    fb_lane_index(&x, fb_lane_permutes_for(L, width, interleave));
    if (L == 2) {
        FB_WIDE_LANE_WIDTHS(2)
    } else if (L == 3) {
        FB_WIDE_LANE_WIDTHS(3)
    } else {
        FB_WIDE_LANE_WIDTHS(4)
    }
}

#endif
