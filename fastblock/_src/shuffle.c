/* Byte shuffles of gathered runs (shuffle.h): 16-byte pieces by SSSE3
   pshufb, 64-byte pieces by AVX-512 VBMI vpermb, each piece built from
   unaligned source loads (windows) under masks the plan computed. */
#include "shuffle.h"

#if FB_X86_SIMD
#include <immintrin.h>

/* Window slots of a periodic program (period * windows per piece). */
#define FB_PERIOD_SLOTS 16

/* SSSE3: 16-byte pieces */

/* Piece q is written at advance * q, the last one at last_start. */
#define FB_PIECE_AT(q, advance) ((q) == n_pieces - 1 ? last_start : (advance) * (q))
#define FB_WINDOW(w) _mm_shuffle_epi8( \
    _mm_loadu_si128((const __m128i *)(src + offset[w])), \
    _mm_loadu_si128((const __m128i *)(mask + 16 * (w))))
/* Every piece takes W windows (a constant after inlining): no dispatch
   per piece. */
static inline __attribute__((always_inline, target("ssse3")))
void fb_shuffle_uniform(char *dst, const char *src, fb_intp n_pieces, fb_intp last_start,
                        const fb_intp *window_offset, const unsigned char *window_mask,
                        int max_windows, const int W) {
    fb_intp q;
    int w;
    for (q = 0; q < n_pieces; q++) {
        const fb_intp *offset = window_offset + q * max_windows;
        const unsigned char *mask = window_mask + q * max_windows * 16;
        __m128i acc = FB_WINDOW(0);
        _Pragma("GCC unroll 4")
        for (w = 1; w < W; w++)
            acc = _mm_or_si128(acc, FB_WINDOW(w));
        _mm_storeu_si128((__m128i *)(dst + FB_PIECE_AT(q, 16)), acc);
    }
}

__attribute__((target("ssse3")))
void fb_shuffle_pieces(char *dst, const char *src, fb_intp n_pieces, fb_intp last_start,
                       const unsigned char *n_windows, const fb_intp *window_offset,
                       const unsigned char *window_mask, int max_windows, int uniform) {
    fb_intp q;
    int w;
    switch (uniform) {
    case 1: fb_shuffle_uniform(dst, src, n_pieces, last_start, window_offset, window_mask, max_windows, 1); return;
    case 2: fb_shuffle_uniform(dst, src, n_pieces, last_start, window_offset, window_mask, max_windows, 2); return;
    case 3: fb_shuffle_uniform(dst, src, n_pieces, last_start, window_offset, window_mask, max_windows, 3); return;
    case 4: fb_shuffle_uniform(dst, src, n_pieces, last_start, window_offset, window_mask, max_windows, 4); return;
    }
    for (q = 0; q < n_pieces; q++) {
        const fb_intp *offset = window_offset + q * max_windows;
        const unsigned char *mask = window_mask + q * max_windows * 16;
        __m128i acc;
        /* Unrolled for the usual window counts: the loop costs more than the work. */
        switch (n_windows[q]) {
        case 1: acc = FB_WINDOW(0); break;
        case 2: acc = _mm_or_si128(FB_WINDOW(0), FB_WINDOW(1)); break;
        case 3: acc = _mm_or_si128(_mm_or_si128(FB_WINDOW(0), FB_WINDOW(1)), FB_WINDOW(2)); break;
        case 4: acc = _mm_or_si128(_mm_or_si128(FB_WINDOW(0), FB_WINDOW(1)),
                                   _mm_or_si128(FB_WINDOW(2), FB_WINDOW(3))); break;
        case 5: acc = _mm_or_si128(_mm_or_si128(_mm_or_si128(FB_WINDOW(0), FB_WINDOW(1)),
                                                _mm_or_si128(FB_WINDOW(2), FB_WINDOW(3))),
                                   FB_WINDOW(4)); break;
        case 6: acc = _mm_or_si128(_mm_or_si128(_mm_or_si128(FB_WINDOW(0), FB_WINDOW(1)),
                                                _mm_or_si128(FB_WINDOW(2), FB_WINDOW(3))),
                                   _mm_or_si128(FB_WINDOW(4), FB_WINDOW(5))); break;
        default:
            acc = FB_WINDOW(0);
            for (w = 1; w < n_windows[q]; w++)
                acc = _mm_or_si128(acc, FB_WINDOW(w));
        }
        _mm_storeu_si128((__m128i *)(dst + FB_PIECE_AT(q, 16)), acc);
    }
}

/* AVX-512 VBMI: 64-byte pieces */

/* 64-byte pieces: window w's source bytes go where its mask byte is
   below 0x80 (vpermb under that mask, merged into the piece). */
#define FB_WINDOW64(acc, w) do { \
        __m512i index_ = _mm512_loadu_si512((const void *)(mask + 64 * (w))); \
        acc = _mm512_mask_permutexvar_epi8(acc, _knot_mask64(_mm512_movepi8_mask(index_)), index_, \
                                           _mm512_loadu_si512((const void *)(src + offset[w]))); \
    } while (0)
static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vbmi")))
void fb_shuffle_wide_n(char *dst, const char *src, fb_intp first, fb_intp n_pieces,
                       fb_intp advance, fb_intp last_start, const unsigned char *n_windows,
                       const fb_intp *window_offset, const unsigned char *window_mask,
                       int max_windows, const int W) {
    fb_intp q;
    int w;
    for (q = first; q < n_pieces; q++) {
        const fb_intp *offset = window_offset + q * max_windows;
        const unsigned char *mask = window_mask + q * max_windows * 64;
        const int windows = W ? W : n_windows[q];
        __m512i acc = _mm512_setzero_si512();
        _Pragma("GCC unroll 4")
        for (w = 0; w < windows; w++)
            FB_WINDOW64(acc, w);
        _mm512_storeu_si512((void *)(dst + FB_PIECE_AT(q, advance)), acc);
    }
}

/* The first n_rounds * P pieces (advance bytes apart) of a program
   whose pieces repeat every P, each window `step` source bytes further
   on: the P * W masks and offsets stay in registers, so each piece
   loads only its W windows (the table loop also loads a 64-byte mask
   and an offset per window: 2.6 times the cycles of a piece of 4
   windows in L1). */
static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vbmi")))
void fb_shuffle_periodic_n(char *dst, const char *src, fb_intp n_rounds, fb_intp step,
                           fb_intp advance, const fb_intp *window_offset,
                           const unsigned char *window_mask, int max_windows, const int P, const int W) {
    __m512i index[FB_PERIOD_SLOTS];
    __mmask64 keep[FB_PERIOD_SLOTS];
    fb_intp offset[FB_PERIOD_SLOTS];
    fb_intp r;
    int p, w;
    _Pragma("GCC unroll 16")
    for (p = 0; p < P; p++) {
        _Pragma("GCC unroll 16")
        for (w = 0; w < W; w++) {
            index[p * W + w] = _mm512_loadu_si512(
                (const void *)(window_mask + 64 * (p * max_windows + w)));
            keep[p * W + w] = _knot_mask64(_mm512_movepi8_mask(index[p * W + w]));
            offset[p * W + w] = window_offset[p * max_windows + w];
        }
    }
    for (r = 0; r < n_rounds; r++, src += step, dst += advance * P) {
        _Pragma("GCC unroll 16")
        for (p = 0; p < P; p++) {
            __m512i acc = _mm512_setzero_si512();
            _Pragma("GCC unroll 16")
            for (w = 0; w < W; w++)
                acc = _mm512_mask_permutexvar_epi8(
                    acc, keep[p * W + w], index[p * W + w],
                    _mm512_loadu_si512((const void *)(src + offset[p * W + w])));
            _mm512_storeu_si512((void *)(dst + advance * p), acc);
        }
    }
}
/* The (period, windows a piece) pairs fb_shuffle_wide's switch runs
   by the periodic kernel; find_period takes no other. */
int fb_periodic_has(int period, int windows) {
    return windows >= 1 && ((period == 1 && windows <= 8) || ((period == 2 || period == 3) && windows <= 4)
                            || (period == 4 && windows <= 3));
}
#define FB_PERIODIC(P, W) case 16 * P + W: \
    if (lead_rounds) { \
        fb_shuffle_periodic_n(dst, src, lead_rounds, period_step, advance, window_offset, \
                              window_mask, max_windows, P, W); \
        dst += advance * P * lead_rounds; \
        src += period_step * lead_rounds; \
    } \
    for (k = 0; k < n_segments; k++) \
        fb_shuffle_periodic_n(dst + advance * segment_pieces * k, src + segment_step * k, \
                              (k < n_segments - 1 ? segment_pieces : last_segment_pieces) / P, \
                              period_step, advance, window_offset, window_mask, max_windows, P, W); \
    break;

__attribute__((target("avx512f,avx512bw,avx512vbmi")))
void fb_shuffle_wide(char *dst, const char *src, fb_intp n_pieces, fb_intp advance,
                     fb_intp last_start,
                     const unsigned char *n_windows, const fb_intp *window_offset,
                     const unsigned char *window_mask, int max_windows, int uniform,
                     int period, fb_intp period_step, fb_intp segment_pieces,
                     fb_intp n_segments, fb_intp segment_step,
                     fb_intp last_segment_pieces, fb_intp lead_rounds) {
    fb_intp first = 0, k;
    /* A long run (plan_long_run, never without a period): the
       program's pieces come after lead_rounds periods of its first ones. */
    if (period) {
        /* Every pair fb_periodic_has answers for. */
        switch (16 * period + uniform) {
        FB_PERIODIC(1, 1) FB_PERIODIC(1, 2) FB_PERIODIC(1, 3) FB_PERIODIC(1, 4)
        FB_PERIODIC(1, 5) FB_PERIODIC(1, 6) FB_PERIODIC(1, 7) FB_PERIODIC(1, 8)
        FB_PERIODIC(2, 1) FB_PERIODIC(2, 2) FB_PERIODIC(2, 3) FB_PERIODIC(2, 4)
        FB_PERIODIC(3, 1) FB_PERIODIC(3, 2) FB_PERIODIC(3, 3) FB_PERIODIC(3, 4)
        FB_PERIODIC(4, 1) FB_PERIODIC(4, 2) FB_PERIODIC(4, 3)
        }
        first = segment_pieces * (n_segments - 1) + last_segment_pieces;
    }
    /* The rest by the table loop, W windows a piece (0: n_windows). */
    #define FB_TABLE(W) fb_shuffle_wide_n(dst, src, first, n_pieces, advance, last_start, n_windows, \
                                          window_offset, window_mask, max_windows, W)
    switch (uniform) {
    case 1: FB_TABLE(1); return;
    case 2: FB_TABLE(2); return;
    case 3: FB_TABLE(3); return;
    case 4: FB_TABLE(4); return;
    }
    FB_TABLE(0);
    #undef FB_TABLE
}
#endif
