/* Staged transposes: a kernel block whose source runs (n_items runs of
   n_rows items) become destination rows of n_items contiguous items, G x
   G items at a time in 16-byte registers (G = 16 / item bytes;
   simd128.h), the edges and other item sizes item by item. fb_transpose_rows writes the rows in
   place (transpose.c); fb_transpose_runs writes them into a stage for
   streaming, inlined into the engine's per-block loop. */
#ifndef FASTBLOCK_TRANSPOSE_H
#define FASTBLOCK_TRANSPOSE_H

#include "fb_common.h"
#include "register_transpose.h"

/* One item of W bytes (a constant after inlining where it can be).
   Other sizes up to 16 move as two overlapping copies of a power of two
   inside the item; past 16 bytes, one library call. */
static inline FB_ALWAYS_INLINE
void fb_move_item(char *dst, const char *src, const fb_intp W) {
    if (W == 1 || W == 2 || W == 4 || W == 8 || W == 16) {
        memcpy(dst, src, W);
    } else if (W > 16) {
        memcpy(dst, src, (size_t)W);
    } else if (W > 8) {
        memcpy(dst, src, 8);
        memcpy(dst + W - 8, src + W - 8, 8);
    } else if (W > 4) {
        memcpy(dst, src, 4);
        memcpy(dst + W - 4, src + W - 4, 4);
    } else {
        memcpy(dst, src, 2);
        memcpy(dst + W - 2, src + W - 2, 2);
    }
}

/* Ask for the lines of [p, p + n) in L2, ahead of their use. */
static inline FB_ALWAYS_INLINE
void fb_prefetch_run(const char *p, fb_intp n) {
#if defined(__GNUC__) || defined(__clang__)
    fb_intp i;
    for (i = 0; i < n; i += 64)
        __builtin_prefetch(p + i, 0, 2);
    __builtin_prefetch(p + n - 1, 0, 2);
#else
    (void)p; (void)n;
#endif
}

/* A block into a stage of packed destination rows (row r at dst + r *
   row_bytes), in source order: G source runs at a time (register tiles
   where the item size has them, else a run at a time), each read from
   its start to its end, so only G source lines are in use at once
   wherever the runs lie (no copy of the runs first). After each run is
   used, its lines `ahead` bytes further on are asked for in L2 (0:
   none): the runs of the block the plan runs two blocks later. */
static inline FB_ALWAYS_INLINE FB_V128_BASE_TARGET
void fb_transpose_runs_w(char *dst, const char *src, fb_intp n_rows, fb_intp n_items,
                         const fb_intp *item_offset, fb_intp row_bytes,
                         const fb_intp W, fb_intp ahead) {
    const fb_intp run = n_rows * W;
    fb_intp a, b = 0;
#if FB_SIMD128
    if (W == 1 || W == 2 || W == 4 || W == 8) {
        const int G = 16 / (int)W;
        int k;
        const fb_intp whole_rows = n_rows - n_rows % G;
        for (; b + G <= n_items; b += G) {
            const char *runs[16];
            FB_UNROLL
            for (k = 0; k < G; k++)
                runs[k] = src + item_offset[b + k];
            for (a = 0; a < whole_rows; a += G) {
                fb_v128 r[16];
                char *d = dst + a * row_bytes + b * W;
                FB_UNROLL
                for (k = 0; k < G; k++)
                    r[k] = fb_v128_load(runs[k] + a * W);
                fb_transpose_registers(r, G);
                FB_UNROLL
                for (k = 0; k < G; k++)
                    fb_v128_store(d + k * row_bytes, r[k]);
            }
            for (a = whole_rows; a < n_rows; a++)
                for (k = 0; k < G; k++)
                    fb_move_item(dst + a * row_bytes + (b + k) * W, runs[k] + a * W, W);
            if (ahead)
                for (k = 0; k < G; k++)
                    fb_prefetch_run(runs[k] + ahead, run);
        }
    }
#endif
    for (; b < n_items; b++) {
        const char *from = src + item_offset[b];
        for (a = 0; a < n_rows; a++)
            fb_move_item(dst + a * row_bytes + b * W, from + a * W, W);
        if (ahead)
            fb_prefetch_run(from + ahead, run);
    }
}

/* Every block of a streamed transpose, through the stage (the engine's
   stream_transpose). */
static inline FB_V128_BASE_TARGET void fb_transpose_runs(char *dst, const char *src, fb_intp n_rows,
                                             fb_intp n_items, const fb_intp *item_offset,
                                             fb_intp row_bytes, fb_intp width, fb_intp ahead) {
    #define FB_RUNS(W) fb_transpose_runs_w(dst, src, n_rows, n_items, item_offset, row_bytes, W, ahead)
    switch (width) {
    case 1: FB_RUNS(1); break;
    case 2: FB_RUNS(2); break;
    case 4: FB_RUNS(4); break;
    case 8: FB_RUNS(8); break;
    case 16: FB_RUNS(16); break;
    default: FB_RUNS(width);
    }
    #undef FB_RUNS
}

/* One block into destination rows (row r at dst + row_offset[r]), item c
   of every row read at src + item_offset[c]. */
FB_INTERNAL FB_V128_BASE_TARGET void fb_transpose_rows(char *dst, const char *src, fb_intp n_rows,
                                           fb_intp n_items, const fb_intp *item_offset,
                                           const fb_intp *row_offset, fb_intp width);

#endif
