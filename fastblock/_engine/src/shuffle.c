/* Byte shuffles of gathered runs (shuffle.h): 16-byte pieces by SSSE3
   pshufb or NEON tbl (simd128.h), 64-byte pieces by AVX-512 VBMI vpermb, each piece built from
   unaligned source loads (windows) under masks the plan computed. */
#include "shuffle.h"

#if FB_SIMD128
#include "simd128.h"

/* Window slots of a periodic program (period * windows per piece), of
   64-byte and of 16-byte pieces. */
#define FB_PERIOD_SLOTS 16
#define FB_PERIOD16_SLOTS 8

/* 16-byte pieces */

/* Piece q is written at advance * q, the last one at last_start. */
#define FB_PIECE_AT(q, advance) ((q) == n_pieces - 1 ? last_start : (advance) * (q))
#define FB_WINDOW(w) fb_v128_shuffle( \
    fb_v128_load(src + offset[w]), \
    fb_v128_load(mask + 16 * (w)))
/* Pieces first .. n_pieces - 1, every one taking W windows (a constant
   after inlining): no dispatch per piece. */
static inline FB_ALWAYS_INLINE FB_V128_TARGET
void fb_shuffle_uniform(char *dst, const char *src, fb_intp first, fb_intp n_pieces,
                        fb_intp last_start, const fb_intp *window_offset,
                        const unsigned char *window_mask, int max_windows, const int W) {
    fb_intp q;
    int w;
    for (q = first; q < n_pieces; q++) {
        const fb_intp *offset = window_offset + q * max_windows;
        const unsigned char *mask = window_mask + q * max_windows * 16;
        fb_v128 acc = FB_WINDOW(0);
        _Pragma("GCC unroll 4")
        for (w = 1; w < W; w++)
            acc = fb_v128_or(acc, FB_WINDOW(w));
        fb_v128_store(dst + FB_PIECE_AT(q, 16), acc);
    }
}

/* The first n_rounds * P pieces of a program whose pieces repeat every
   P, each window `step` source bytes further on: the P * W masks stay in
   registers, so each piece loads only its W windows. Through the table
   loop, which also loads a mask and an offset a window, a 3-byte item
   repeated 8 times (P 3, W 1) took about 6 cycles a piece (Tile of a
   1.5 MiB result, one thread). */
static inline FB_ALWAYS_INLINE FB_V128_TARGET
void fb_shuffle_periodic16_n(char *dst, const char *src, fb_intp n_rounds, fb_intp step,
                             const fb_intp *window_offset, const unsigned char *window_mask,
                             int max_windows, const int P, const int W) {
    fb_v128 index[FB_PERIOD16_SLOTS];
    fb_intp offset[FB_PERIOD16_SLOTS];
    fb_intp r;
    int p, w;
    _Pragma("GCC unroll 8")
    for (p = 0; p < P; p++) {
        _Pragma("GCC unroll 8")
        for (w = 0; w < W; w++) {
            index[p * W + w] = fb_v128_load(window_mask + 16 * (p * max_windows + w));
            offset[p * W + w] = window_offset[p * max_windows + w];
        }
    }
    for (r = 0; r < n_rounds; r++, src += step, dst += 16 * P) {
        _Pragma("GCC unroll 8")
        for (p = 0; p < P; p++) {
            fb_v128 acc = fb_v128_shuffle(
                fb_v128_load(src + offset[p * W]), index[p * W]);
            _Pragma("GCC unroll 8")
            for (w = 1; w < W; w++)
                acc = fb_v128_or(acc, fb_v128_shuffle(
                    fb_v128_load(src + offset[p * W + w]), index[p * W + w]));
            fb_v128_store(dst + 16 * p, acc);
        }
    }
}

/* The periodic pieces of a run, by the periodic kernel `KERNEL` (16- or
   64-byte pieces, `advance` bytes apart) for each (period, windows) pair
   its fb_periodic_has answers for: lead_rounds periods from the lead's
   windows, then n_segments segments of whole periods from the table's. */
#define FB_PERIODIC_RUN(KERNEL, P, W) \
    if (lead_rounds) { \
        KERNEL(dst, src, lead_rounds, period_step, advance, lead_offset, lead_mask, W, P, W); \
        dst += advance * P * lead_rounds; \
        src += period_step * lead_rounds; \
    } \
    for (k = 0; k < n_segments; k++) \
        KERNEL(dst + advance * segment_pieces * k, src + segment_step * k, \
               (k < n_segments - 1 ? segment_pieces : last_segment_pieces) / P, \
               period_step, advance, window_offset, window_mask, max_windows, P, W);
/* Each (P, W) of the 16-byte periodic kernel in a function of its own:
   inlined into fb_shuffle_pieces, the kernel's window went through the
   stack on every piece (gcc's register allocation over the whole switch;
   6 against 3 instructions a piece). */
#define FB_DEFINE_PERIODIC16(P, W) \
    static FB_NOINLINE FB_V128_TARGET \
    void fb_periodic16_##P##_##W(char *dst, const char *src, fb_intp n_rounds, fb_intp step, \
                                 fb_intp advance_16, const fb_intp *window_offset, \
                                 const unsigned char *window_mask, int max_windows, \
                                 int unused_p, int unused_w) { \
        (void)advance_16; (void)unused_p; (void)unused_w; \
        fb_shuffle_periodic16_n(dst, src, n_rounds, step, window_offset, window_mask, \
                                max_windows, P, W); \
    }
FB_DEFINE_PERIODIC16(1, 1) FB_DEFINE_PERIODIC16(1, 2) FB_DEFINE_PERIODIC16(1, 3)
FB_DEFINE_PERIODIC16(1, 4) FB_DEFINE_PERIODIC16(2, 1) FB_DEFINE_PERIODIC16(2, 2)
FB_DEFINE_PERIODIC16(2, 3) FB_DEFINE_PERIODIC16(2, 4) FB_DEFINE_PERIODIC16(3, 1)
FB_DEFINE_PERIODIC16(3, 2) FB_DEFINE_PERIODIC16(4, 1) FB_DEFINE_PERIODIC16(4, 2)
#undef FB_DEFINE_PERIODIC16
#define FB_PERIODIC16(P, W) case 16 * P + W: \
    FB_PERIODIC_RUN(fb_periodic16_##P##_##W, P, W) \
    break;

/* (period, windows a piece) pairs of 16-byte pieces that the periodic
   kernel runs: their masks fit the 16 registers with room to work. */
static int fb_periodic16_has(int period, int windows) {
    return windows >= 1 && ((period <= 2 && windows <= 4) || (period <= 4 && windows <= 2));
}

FB_V128_TARGET
void fb_shuffle_pieces(char *dst, const char *src, fb_intp n_pieces, fb_intp last_start,
                       const unsigned char *n_windows, const fb_intp *window_offset,
                       const unsigned char *window_mask, int max_windows, int uniform,
                       int period, fb_intp period_step, fb_intp segment_pieces,
                       fb_intp n_segments, fb_intp segment_step,
                       fb_intp last_segment_pieces, fb_intp lead_rounds,
                       const fb_intp *lead_offset, const unsigned char *lead_mask) {
    const fb_intp advance = 16;
    fb_intp q, k, first = 0;
    int w;
    if (period) {
        /* Every pair fb_periodic16_has answers for. */
        switch (16 * period + uniform) {
        FB_PERIODIC16(1, 1) FB_PERIODIC16(1, 2) FB_PERIODIC16(1, 3) FB_PERIODIC16(1, 4)
        FB_PERIODIC16(2, 1) FB_PERIODIC16(2, 2) FB_PERIODIC16(2, 3) FB_PERIODIC16(2, 4)
        FB_PERIODIC16(3, 1) FB_PERIODIC16(3, 2) FB_PERIODIC16(4, 1) FB_PERIODIC16(4, 2)
        }
        first = segment_pieces * (n_segments - 1) + last_segment_pieces;
    }
    #define FB_UNIFORM(W) fb_shuffle_uniform(dst, src, first, n_pieces, last_start, window_offset, \
                                             window_mask, max_windows, W)
    switch (uniform) {
    case 1: FB_UNIFORM(1); return;
    case 2: FB_UNIFORM(2); return;
    case 3: FB_UNIFORM(3); return;
    case 4: FB_UNIFORM(4); return;
    }
    #undef FB_UNIFORM
    for (q = 0; q < n_pieces; q++) {
        const fb_intp *offset = window_offset + q * max_windows;
        const unsigned char *mask = window_mask + q * max_windows * 16;
        fb_v128 acc;
        /* Unrolled for the usual window counts: the loop costs more than the work. */
        switch (n_windows[q]) {
        case 1: acc = FB_WINDOW(0); break;
        case 2: acc = fb_v128_or(FB_WINDOW(0), FB_WINDOW(1)); break;
        case 3: acc = fb_v128_or(fb_v128_or(FB_WINDOW(0), FB_WINDOW(1)), FB_WINDOW(2)); break;
        case 4: acc = fb_v128_or(fb_v128_or(FB_WINDOW(0), FB_WINDOW(1)),
                                   fb_v128_or(FB_WINDOW(2), FB_WINDOW(3))); break;
        case 5: acc = fb_v128_or(fb_v128_or(fb_v128_or(FB_WINDOW(0), FB_WINDOW(1)),
                                                fb_v128_or(FB_WINDOW(2), FB_WINDOW(3))),
                                   FB_WINDOW(4)); break;
        case 6: acc = fb_v128_or(fb_v128_or(fb_v128_or(FB_WINDOW(0), FB_WINDOW(1)),
                                                fb_v128_or(FB_WINDOW(2), FB_WINDOW(3))),
                                   fb_v128_or(FB_WINDOW(4), FB_WINDOW(5))); break;
        default:
            acc = FB_WINDOW(0);
            for (w = 1; w < n_windows[q]; w++)
                acc = fb_v128_or(acc, FB_WINDOW(w));
        }
        fb_v128_store(dst + FB_PIECE_AT(q, 16), acc);
    }
}

#endif

#if FB_X86_SIMD
#include <immintrin.h>

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
/* The (period, windows a piece) pairs of 64-byte pieces that
   fb_shuffle_wide's switch runs by the periodic kernel. */
static int fb_periodic64_has(int period, int windows) {
    return windows >= 1 && ((period == 1 && windows <= 8) || ((period == 2 || period == 3) && windows <= 4)
                            || (period == 4 && windows <= 3));
}
#define FB_PERIODIC(P, W) case 16 * P + W: \
    FB_PERIODIC_RUN(fb_shuffle_periodic_n, P, W) \
    break;

__attribute__((target("avx512f,avx512bw,avx512vbmi")))
void fb_shuffle_wide(char *dst, const char *src, fb_intp n_pieces, fb_intp advance,
                     fb_intp last_start,
                     const unsigned char *n_windows, const fb_intp *window_offset,
                     const unsigned char *window_mask, int max_windows, int uniform,
                     int period, fb_intp period_step, fb_intp segment_pieces,
                     fb_intp n_segments, fb_intp segment_step,
                     fb_intp last_segment_pieces, fb_intp lead_rounds,
                     const fb_intp *lead_offset, const unsigned char *lead_mask) {
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

#if FB_SIMD128
int fb_periodic_has(int piece_bytes, int period, int windows) {
#if FB_X86_SIMD
    if (piece_bytes == 64)
        return fb_periodic64_has(period, windows);
#else
    (void)piece_bytes;
#endif
    return fb_periodic16_has(period, windows);
}
#endif
