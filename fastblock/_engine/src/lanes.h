/* Lane transposes of 1-, 2-, 4- and 8-byte items (lanes.c): the inner move
   of SpaceToDepth/DepthToSpace on small items, lanes being the block
   offsets. Called only where cpu.h reports SSSE3. */
#ifndef FASTBLOCK_LANES_H
#define FASTBLOCK_LANES_H

#include "fb_common.h"

/* Bytes in one pixel at most (lanes of bytes; of wider items, as many as
   fit): the size of the plan's lane offset table. */
#define FB_LANES_MAX 256

/* The rows of one call: n_groups groups (dst_group / src_group bytes
   apart) of n_in rows (dst_in / src_in apart), run group by group. A
   group is the rows of a source axis taken whole, so that a call reads
   the source in order (SpaceToDepth: a group is the bs rows of a space
   row of blocks). */
typedef struct {
    fb_intp n_groups, dst_group, src_group;
    fb_intp n_in, dst_in, src_in;
} FbLaneRows;

/* A lane transpose's kernel: the rows of n pixels of L lanes of
   `width`-byte items; lane l at lane[l] bytes from the row (the source's
   if interleave, else the destination's), the pixels packed on the other
   side. masks: the plan's 5 byte shuffles (plan_lane_masks): pixel order,
   the run's last 16 bytes (two), lane order, lane order of the run's last
   load. */
typedef void (*FbLanesRows)(char *dst, const char *src, const FbLaneRows *rows, fb_intp n,
                            int L, const fb_intp *lane, const unsigned char *masks,
                            int interleave, int width);

/* The kernel of a plan's lane transpose, chosen once when the plan is
   made. line_split: a split of more than 8 lanes of 1- to 4-byte items
   that writes each lane's line by consecutive stores (the planner's
   splits_by_lines says where). */
#if FB_SIMD128
FB_INTERNAL FbLanesRows fb_lanes_rows_for(int L, int width, int interleave, int line_split,
                                          const fb_intp *lane);
#else
/* Without 16-byte kernels the planner chooses no lane transposes (cpu.h
   answers 0): there is no kernel to choose. */
#define fb_lanes_rows_for(...) ((FbLanesRows)0)
#endif
#if FB_X86_SIMD
#include <immintrin.h>

/* The same for 2 to 4 lanes of 1-, 2- or 4-byte items by 64-byte permutes
   (lanes_wide.c): called only where the CPU has AVX-512 VBMI. */
FB_INTERNAL void fb_lanes_rows_wide(char *dst, const char *src, const FbLaneRows *rows, fb_intp n,
                                    int L, const fb_intp *lane, int interleave, int width);

/* The permutes of one (lanes, width, direction), for kernels that move 64
   bytes of each lane at a time (also the convert stage's way back to
   pixels): result register k is pair_a[k] of inputs 0 and 1 where
   `from_b` is clear, pair_b[k] of inputs 2 and 3 where it is set. */
typedef struct {
    int lanes, width, interleave;
    unsigned char pair_a[4][64], pair_b[4][64];
    unsigned long long from_b[4];
} FbLanePermutes;

/* Those of L lanes of W-byte items, split or interleaved, built into t. */
FB_INTERNAL void fb_lane_permutes_build(FbLanePermutes *t, int L, int W, int interleave);

/* Permutes in registers: loaded once a call, not once a step (the
   stores, through char pointers, could change them in memory). */
typedef struct {
    __m512i a[4], b[4];
    __mmask64 from_b[4];
} FbLaneIndex;

static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vbmi")))
void fb_lane_index(FbLaneIndex *x, const FbLanePermutes *t) {
    int l;
    for (l = 0; l < t->lanes; l++) {
        x->a[l] = _mm512_loadu_si512((const void *)t->pair_a[l]);
        x->b[l] = _mm512_loadu_si512((const void *)t->pair_b[l]);
        x->from_b[l] = t->from_b[l];
    }
}

/* Result register k of the L inputs `in` (L a constant after inlining). */
static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vbmi")))
__m512i fb_lane_result(const FbLaneIndex *x, int k, const __m512i *in, const int L) {
    const __m512i a = _mm512_permutex2var_epi8(in[0], x->a[k], in[1]);
    if (L == 2)
        return a;
    if (L == 3)     /* input 2 alone: one permute that merges into a */
        return _mm512_mask_permutexvar_epi8(a, x->from_b[k], x->b[k], in[2]);
    return _mm512_mask_blend_epi8(x->from_b[k], a,
                                  _mm512_permutex2var_epi8(in[2], x->b[k], in[3]));
}
#else
#define fb_lanes_rows_wide(...) ((void)0)
#endif

#endif
