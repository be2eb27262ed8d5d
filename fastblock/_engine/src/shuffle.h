/* Byte shuffles for gathered runs of 1-, 2- and 4-byte items (shuffle.c).
   A program (the plan's) builds each piece of a destination run from
   unaligned source loads ("windows"), each shuffled into place by a mask.
   Every load lies between the smallest and the largest source byte the run
   reads. Called only where cpu.h reports the instructions: the 16-byte
   pieces where it reports 16-byte shuffles (SSSE3, NEON), the 64-byte
   ones where it reports AVX-512 VBMI. */
#ifndef FASTBLOCK_SHUFFLE_H
#define FASTBLOCK_SHUFFLE_H

#include "fb_common.h"

#if FB_SIMD128
/* One run of n_pieces 16-byte pieces (piece q at 16 q, the last at
   last_start), piece q taking n_windows[q] windows; `uniform` > 0: every
   piece takes that many. With a `period` (fb_shuffle_wide's fields), its
   repeating pieces by the periodic kernel, the rest by the table loop. */
FB_INTERNAL void fb_shuffle_pieces(char *dst, const char *src, fb_intp n_pieces, fb_intp last_start,
                                   const unsigned char *n_windows, const fb_intp *window_offset,
                                   const unsigned char *window_mask, int max_windows, int uniform,
                                   int period, fb_intp period_step, fb_intp segment_pieces,
                                   fb_intp n_segments, fb_intp segment_step,
                                   fb_intp last_segment_pieces, fb_intp lead_rounds,
                                   const fb_intp *lead_offset, const unsigned char *lead_mask);

/* Whether the pieces of `piece_bytes` (16: fb_shuffle_pieces, 64:
   fb_shuffle_wide) run (period, windows a piece) by the periodic kernel. */
FB_INTERNAL int fb_periodic_has(int piece_bytes, int period, int windows);
#else
/* Without 16-byte kernels the planner builds no shuffle programs (cpu.h
   answers 0): the calls compile to nothing, and no period runs
   periodically. */
#define fb_shuffle_pieces(...) ((void)0)
#define fb_periodic_has(piece_bytes, period, windows) 0
#endif

#if FB_X86_SIMD
/* One run of 64-byte pieces `advance` bytes apart; with a `period`, its
   repeating pieces by the periodic kernel (masks kept in registers) in
   segments, the rest by the table loop. A long run first repeats the
   lead's period (its period * uniform windows' offsets and masks, in
   order) lead_rounds times, the table's pieces after it. */
FB_INTERNAL void fb_shuffle_wide(char *dst, const char *src, fb_intp n_pieces, fb_intp advance,
                                 fb_intp last_start,
                                 const unsigned char *n_windows, const fb_intp *window_offset,
                                 const unsigned char *window_mask, int max_windows, int uniform,
                                 int period, fb_intp period_step, fb_intp segment_pieces,
                                 fb_intp n_segments, fb_intp segment_step,
                                 fb_intp last_segment_pieces, fb_intp lead_rounds,
                                 const fb_intp *lead_offset, const unsigned char *lead_mask);
#else
/* Without AVX-512 VBMI the planner builds no 64-byte programs. */
#define fb_shuffle_wide(...) ((void)0)
#endif

#endif
