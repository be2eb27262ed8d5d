/* Lane transposes (lanes.h): interleave L rows ("lanes") of 1-, 2-, 4- or
   8-byte items into pixels of L items, or split pixels back into lanes, a
   register of each lane at a time. Up to 16 bytes of lanes of 1- or 2-byte
   items: one register transpose of P = L rounded up to a power of two
   registers and a byte shuffle into pixel order (fb_lanes_row). Wider
   pixels: blocks of G = 16 / W lanes, each one G x G register transpose
   that leaves a pixel's G items in one register (fb_wide_*). */
#include "lanes.h"
#include "register_transpose.h"

#if FB_SIMD128


/* Pixels i .. n-1 of a row, item by item (a run shorter than a group, or
   the end of one of fb_wide_lines). */
static inline FB_ALWAYS_INLINE
void fb_lanes_tail(char *dst, const char *src, fb_intp i, fb_intp n, int L,
                   const fb_intp *lane, const int interleave, const int W) {
    int l;
    for (; i < n; i++)
        for (l = 0; l < L; l++) {
            if (interleave)
                memcpy(dst + (i * L + l) * W, src + lane[l] + i * W, W);
            else
                memcpy(dst + lane[l] + i * W, src + (i * L + l) * W, W);
        }
}

#define FB_MASK(k) fb_v128_load(masks + 16 * (k))

/* One row of n pixels of L lanes of W-byte items (P = L rounded up to a
   power of two; W, P and interleave are constants after inlining).
   masks: pixel order, end of run (last two registers), lane order, lane
   order of the run's last load. */
static inline FB_ALWAYS_INLINE FB_V128_TARGET
void fb_lanes_row(char *dst, const char *src, fb_intp n, int L, const fb_intp *lane,
                  const unsigned char *masks, const int interleave, const int P, const int W) {
    const int e = 16 / P;               /* bytes of one lane in one element */
    const int G = 16 / W;               /* pixels in a group (a lane register) */
    const fb_intp span = 16 * (fb_intp)L;     /* bytes of a group's pixels */
    const fb_v128 pixel_order = FB_MASK(0), lane_order = FB_MASK(3);
    fb_v128 r[16];
    fb_intp i;
    int c, l;
    for (i = 0; i + G <= n; i += G) {
        int run_end = i + 2 * G > n;    /* no whole group follows */
        /* Every register index is a constant once the loops over P are
           unrolled, so the registers stay registers; L is checked at
           run time. */
        if (interleave) {
            char *d = dst + i * L * W;
            FB_UNROLL
            for (l = 0; l < P; l++)
                r[l] = l < L ? fb_v128_load(src + lane[l] + i * W)
                             : fb_v128_zero();
            fb_transpose_registers(r, P);
            FB_UNROLL
            for (c = 0; c < P; c++) {
                if (P < 16)
                    r[c] = fb_v128_shuffle(r[c], pixel_order);
                if (c < P - 1)
                    fb_v128_store(d + c * e * L, r[c]);
            }
            if (L == P || !run_end)
                fb_v128_store(d + (P - 1) * e * L, r[P - 1]);
            else
                fb_v128_store(d + span - 16, fb_v128_or(fb_v128_shuffle(r[P - 2], FB_MASK(1)),
                                              fb_v128_shuffle(r[P - 1], FB_MASK(2))));
        } else {
            const char *s = src + i * L * W;
            FB_UNROLL
            for (c = 0; c < P - 1; c++) {
                r[c] = fb_v128_load(s + c * e * L);
                if (P < 16)
                    r[c] = fb_v128_shuffle(r[c], lane_order);
            }
            if (L == P || !run_end) {
                r[P - 1] = fb_v128_load(s + (P - 1) * e * L);
                if (P < 16)
                    r[P - 1] = fb_v128_shuffle(r[P - 1], lane_order);
            } else {
                r[P - 1] = fb_v128_shuffle(fb_v128_load(s + span - 16),
                                            FB_MASK(4));
            }
            fb_transpose_registers(r, P);
            FB_UNROLL
            for (l = 0; l < P; l++)
                if (l < L)
                    fb_v128_store(dst + lane[l] + i * W, r[l]);
        }
        /* Pixels left that are not a whole group: the last group ends at
           the run's end instead, over pixels already moved (the same
           bytes again), rather than item by item. */
        if (i + G < n && i + 2 * G > n)
            i = n - 2 * G;
    }
    fb_lanes_tail(dst, src, i, n, L, lane, interleave, W);
}
#undef FB_MASK

/* One group of G pixels of fb_wide_lanes_row_q (below). */
static inline FB_ALWAYS_INLINE FB_V128_TARGET
void fb_wide_group(char *dst, const char *src, fb_intp i, int L, const fb_intp *lane,
                   const int interleave, const int W, const int Q, const int padded,
                   const int at_end) {
    const int G = 16 / W;
    const int last_bytes = (L - (Q - 1) * G) * W;
    fb_v128 r[64];
    unsigned char edge[16];
    int q, k, l;
    if (interleave) {
        FB_UNROLL
        for (q = 0; q < Q; q++) {
            FB_UNROLL
            for (k = 0; k < G; k++)
                r[q * G + k] = fb_v128_load(src + lane[q * G + k] + i * W);
            fb_transpose_registers(r + q * G, G);
            /* Whole blocks are stored as soon as they are transposed. */
            FB_UNROLL
            for (k = 0; k < G && !padded; k++)
                fb_v128_store(dst + ((i + k) * L + q * G) * W, r[q * G + k]);
        }
        FB_UNROLL
        for (k = 0; k < G && padded; k++) {
            FB_UNROLL
            for (q = 0; q < Q; q++) {
                char *at = dst + ((i + k) * L + q * G) * W;
                if (at_end && q == Q - 1 && k == G - 1) {
                    fb_v128_store(edge, r[q * G + k]);
                    memcpy(at, edge, (size_t)last_bytes);
                } else {
                    fb_v128_store(at, r[q * G + k]);
                }
            }
        }
    } else {
        FB_UNROLL
        for (q = 0; q < Q; q++) {
            FB_UNROLL
            for (k = 0; k < G; k++) {
                const char *at = src + ((i + k) * L + q * G) * W;
                if (at_end && q == Q - 1 && k == G - 1) {
                    memset(edge, 0, 16);
                    memcpy(edge, at, (size_t)last_bytes);
                    r[q * G + k] = fb_v128_load(edge);
                } else {
                    r[q * G + k] = fb_v128_load(at);
                }
            }
            fb_transpose_registers(r + q * G, G);
        }
        FB_UNROLL
        for (l = 0; l < Q * G; l++)
            if (l < L)
                fb_v128_store(dst + lane[l] + i * W, r[l]);
    }
}

/* One row of n pixels of L lanes of W-byte items in Q blocks of G = 16 / W
   lanes (W = 1, 2, 4 or 8, Q <= 4; W, Q, interleave and padded are
   constants after inlining): each block of G lanes x G pixels is one register transpose,
   which leaves each pixel's G items of the block in one register.
   When L is not Q * G (padded), the last block of a pixel has only
   (L - (Q-1) G) W bytes: the padding lanes repeat lane L-1; interleave
   stores pixel by pixel, each pixel's last block running over into the
   next pixel, which is written after it, and split loads a pixel's last
   block running over into the next pixel. In the run's last group, where
   the last pixel has no next one, that block goes through a 16-byte
   buffer (a separate copy of the group's code, so that the library calls
   do not make the main loop keep its registers in memory). The lane
   offsets are copied to a local array first: the stores (through char
   pointers) could otherwise alias them and force a reload. */
static inline FB_ALWAYS_INLINE FB_V128_TARGET
void fb_wide_lanes_row_q(char *dst, const char *src, fb_intp n, int L,
                         const fb_intp *lane_in, const int interleave, const int W,
                         const int Q, const int padded) {
    const int G = 16 / W;
    fb_intp lane[64];
    fb_intp i;
    int l;
    FB_UNROLL
    for (l = 0; l < Q * G; l++)
        lane[l] = lane_in[l < L ? l : L - 1];
    /* The last group ends at the run's end, over pixels already moved
       where the run is not whole groups (fb_lanes_row). */
    for (i = 0; i + G < n; i += G)
        fb_wide_group(dst, src, i, L, lane, interleave, W, Q, padded, 0);
    if (n >= G) {
        fb_wide_group(dst, src, n - G, L, lane, interleave, W, Q, padded, padded);
        i = n;
    }
    fb_lanes_tail(dst, src, i, n, L, lane, interleave, W);
}

/* Block q (lanes qG .. qG+G-1) of the G pixels from pixel i: one G x G
   register transpose. ``edge_bytes`` > 0: the block is the last pixel's
   padded last block at the end of a run, moved through a buffer. */
static inline FB_ALWAYS_INLINE FB_V128_TARGET
void fb_wide_block(char *dst, const char *src, fb_intp i, int L, const fb_intp *lane,
                   int q, const int interleave, const int W, int edge_bytes) {
    const int G = 16 / W;
    fb_v128 r[16];
    unsigned char edge[16];
    int k;
    if (interleave) {
        FB_UNROLL
        for (k = 0; k < G; k++)
            r[k] = fb_v128_load(src + lane[q * G + k] + i * W);
        fb_transpose_registers(r, G);
        FB_UNROLL
        for (k = 0; k < G; k++) {
            char *at = dst + ((i + k) * L + q * G) * W;
            if (k == G - 1 && edge_bytes) {
                fb_v128_store(edge, r[k]);
                memcpy(at, edge, (size_t)edge_bytes);
            } else {
                fb_v128_store(at, r[k]);
            }
        }
    } else {
        FB_UNROLL
        for (k = 0; k < G; k++) {
            const char *at = src + ((i + k) * L + q * G) * W;
            if (k == G - 1 && edge_bytes) {
                memset(edge, 0, 16);
                memcpy(edge, at, (size_t)edge_bytes);
                r[k] = fb_v128_load(edge);
            } else {
                r[k] = fb_v128_load(at);
            }
        }
        fb_transpose_registers(r, G);
        FB_UNROLL
        for (k = 0; k < G; k++)
            if (q * G + k < L)
                fb_v128_store(dst + lane[q * G + k] + i * W, r[k]);
    }
}

/* A split's block q of the 4 G pixels from pixel i (64 bytes of each of
   its G lanes), through a buffer, so that each lane's line is written by
   four stores in a row: in pixel order, 16 bytes of every lane at a
   time, the 16 lines of a byte block that share a set of 8 ways were
   each fetched four times. The padding lanes are not stored. */
static inline FB_ALWAYS_INLINE FB_V128_TARGET
void fb_wide_line_split(char *dst, const char *src, fb_intp i, int L, const fb_intp *lane,
                        int q, const int W) {
    const int G = 16 / W;
    fb_v128 r[16];
    fb_v128 stage[16][4];
    int g, k;
    FB_UNROLL
    for (g = 0; g < 4; g++) {
        FB_UNROLL
        for (k = 0; k < G; k++)
            r[k] = fb_v128_load(src + ((i + g * G + k) * L + q * G) * W);
        fb_transpose_registers(r, G);
        FB_UNROLL
        for (k = 0; k < G; k++)
            stage[k][g] = r[k];
    }
    FB_UNROLL
    for (k = 0; k < G; k++) {
        fb_v128 *to;
        if (q * G + k >= L)
            break;
        to = (fb_v128 *)(dst + lane[q * G + k] + i * W);
        FB_UNROLL
        for (g = 0; g < 4; g++)
            fb_v128_store(to + g, stage[k][g]);
    }
}

/* One row of more than 8 lanes whose lines crowd a cache set (lanes a
   power of two apart: the planes of a channels-first <-> channels-last
   copy), a line of every lane at a time: the G x G blocks of 4 G pixels
   (64 bytes of each lane) go lane block by lane block, so that each
   lane's line is written (split) or read (interleave) whole while it is
   held. In pixel-group order every lane takes 16 bytes before any takes
   more, and the lines evict each other first (split float32 in cache: 16
   lanes took 4.6 times as long as 8). The 4 G pixels stay in L1 for the
   other blocks. A padded interleave stores each pixel's last block, which
   runs over into the next pixel, before that pixel's whole blocks.
   ``lane`` has an entry for each of the Q G lanes, the padding ones
   included. ``line_split``: a split's whole blocks go through
   fb_wide_line_split. */
static inline FB_ALWAYS_INLINE FB_V128_TARGET
void fb_wide_lines(char *dst, const char *src, fb_intp n, int L, const fb_intp *lane,
                   const int interleave, const int W, const int padded,
                   int line_split) {
    const int G = 16 / W;
    const int Q = (L + G - 1) / G, last = Q - 1;
    const int last_bytes = (L - last * G) * W;
    const fb_intp whole = n - n % G;
    fb_intp i0, i1, i;
    int step, q;
    for (i0 = 0; i0 < whole; i0 = i1) {
        i1 = i0 + 4 * G < whole ? i0 + 4 * G : whole;
        for (step = 0; step < Q; step++) {
            q = padded ? (step + last) % Q : step;     /* last first */
            if (!interleave && line_split && i1 - i0 == 4 * G
                    && !(padded && q == last && i1 == n)) {
                fb_wide_line_split(dst, src, i0, L, lane, q, W);
                continue;
            }
            for (i = i0; i < i1; i += G) {
                if (padded && q == last && i + G == n)
                    fb_wide_block(dst, src, i, L, lane, q, interleave, W, last_bytes);
                else
                    fb_wide_block(dst, src, i, L, lane, q, interleave, W, 0);
            }
        }
    }
    fb_lanes_tail(dst, src, whole, n, L, lane, interleave, W);
}

/* fb_wide_lanes_row_q for pixels of more than 4 blocks (over 64 bytes),
   a block at a time so that only G registers are live: one row of n
   pixels of L lanes of W-byte items (W = 1, 2, 4 or 8; W, interleave and
   padded are constants after inlining), in Q = ceil(L/G) blocks of G =
   16 / W lanes: each block of G lanes x G pixels is one register
   transpose, which leaves each pixel's G items of the block in one
   register. When L is not Q * G (padded), the last block of a pixel
   has only (L - (Q-1) G) W bytes and its padding lanes repeat lane L-1.
   Interleave stores a group's last blocks first, pixel by pixel, each
   running over into the next pixel, whose whole blocks are stored after
   it; split loads a pixel's last block running over into the next pixel.
   At the end of a run, where the last pixel has no next one, that block
   goes through a 16-byte buffer (its own copy of the block code, so that
   the library calls do not make the main loop keep its registers in
   memory). The lane offsets are copied to a local array first: the
   stores (through char pointers) could otherwise alias them and force a
   reload. */
static inline FB_ALWAYS_INLINE FB_V128_TARGET
void fb_wide_lanes_row_long(char *dst, const char *src, fb_intp n, int L,
                            const fb_intp *lane_in, const int interleave, const int W,
                            const int padded) {
    const int G = 16 / W;
    const int Q = (L + G - 1) / G, last = Q - 1;
    const int last_bytes = (L - last * G) * W;
    fb_intp lane[FB_LANES_MAX];
    fb_intp i;
    int l, q;
    for (l = 0; l < Q * G; l++)
        lane[l] = lane_in[l < L ? l : L - 1];
    for (i = 0; i + G <= n; i += G) {
        if (!padded) {
            for (q = 0; q < Q; q++)
                fb_wide_block(dst, src, i, L, lane, q, interleave, W, 0);
        } else {
            if (i + G == n) {
                fb_wide_block(dst, src, i, L, lane, last, interleave, W, last_bytes);
            } else {
                fb_wide_block(dst, src, i, L, lane, last, interleave, W, 0);
            }
            for (q = 0; q < last; q++)
                fb_wide_block(dst, src, i, L, lane, q, interleave, W, 0);
        }
        /* The last group ends at the run's end (fb_lanes_row). */
        if (i + G < n && i + 2 * G > n)
            i = n - 2 * G;
    }
    fb_lanes_tail(dst, src, i, n, L, lane, interleave, W);
}

/* Every row of `r` (a function's FbLaneRows), in source order: row m of
   group k at FB_ROW_DST / FB_ROW_SRC. Where a row is short, the function
   reads them from a local copy (through the pointer, every store, through
   a char pointer, makes the fields be read again: 1 MiB DepthToSpace of
   32-pixel float32 rows, 1.52 -> 1.25 x np.copyto); fb_wide_rows reads
   them through the pointer (64 MiB SpaceToDepth float64 bs 2 from a local
   copy: 0.70 -> 0.85, the cause not found). */
#define FB_EACH_ROW                                                          \
    for (k = 0; k < r.n_groups; k++)                                         \
        for (m = 0; m < r.n_in; m++)
#define FB_ROW_DST (dst + k * r.dst_group + m * r.dst_in)
#define FB_ROW_SRC (src + k * r.src_group + m * r.src_in)

#define FB_LANE_ROWS(INTERLEAVE, P, W)                                       \
    FB_EACH_ROW                                                              \
        fb_lanes_row(FB_ROW_DST, FB_ROW_SRC, n, L, lane, masks, INTERLEAVE, P, W)
#define FB_LANE_SIZES(INTERLEAVE)                                            \
    if (width == 1) {                                                        \
        if (P == 2) FB_LANE_ROWS(INTERLEAVE, 2, 1);                          \
        else if (P == 4) FB_LANE_ROWS(INTERLEAVE, 4, 1);                     \
        else if (P == 8) FB_LANE_ROWS(INTERLEAVE, 8, 1);                     \
        else FB_LANE_ROWS(INTERLEAVE, 16, 1);                                \
    } else {                                                                 \
        if (P == 2) FB_LANE_ROWS(INTERLEAVE, 2, 2);                          \
        else if (P == 4) FB_LANE_ROWS(INTERLEAVE, 4, 2);                     \
        else FB_LANE_ROWS(INTERLEAVE, 8, 2);                                 \
    }

#define FB_WIDE_ROW_Q(INTERLEAVE, W, Q)                                      \
    if (L == Q * (16 / W)) {                                                 \
        FB_EACH_ROW                                                          \
            fb_wide_lanes_row_q(FB_ROW_DST, FB_ROW_SRC, n, L, lane,          \
                                INTERLEAVE, W, Q, 0);                        \
    } else {                                                                 \
        FB_EACH_ROW                                                          \
            fb_wide_lanes_row_q(FB_ROW_DST, FB_ROW_SRC, n, L, lane,          \
                                INTERLEAVE, W, Q, 1);                        \
    }
#define FB_WIDE_ROWS(INTERLEAVE, W)                                          \
    switch ((L + 16 / W - 1) / (16 / W)) {                                   \
    case 1: FB_WIDE_ROW_Q(INTERLEAVE, W, 1); break;                          \
    case 2: FB_WIDE_ROW_Q(INTERLEAVE, W, 2); break;                          \
    case 3: FB_WIDE_ROW_Q(INTERLEAVE, W, 3); break;                          \
    case 4: FB_WIDE_ROW_Q(INTERLEAVE, W, 4); break;                          \
    default:                                                                 \
        if (L % (16 / W) == 0) {                                             \
            FB_EACH_ROW                                                      \
                fb_wide_lanes_row_long(FB_ROW_DST, FB_ROW_SRC, n, L, lane,   \
                                       INTERLEAVE, W, 0);                    \
        } else {                                                             \
            FB_EACH_ROW                                                      \
                fb_wide_lanes_row_long(FB_ROW_DST, FB_ROW_SRC, n, L, lane,   \
                                       INTERLEAVE, W, 1);                    \
        }                                                                    \
    }

/* Whether more than 8 lanes start in the same set of a cache with 4 KiB
   ways (L1: 8 or 12 ways), lanes a power of two apart, say: their lines
   evict each other when moved 16 bytes at a time. */
static int fb_lanes_crowd_a_set(const fb_intp *lane, int L) {
    unsigned char in_set[64] = {0};
    int l;
    for (l = 0; l < L; l++)
        if (++in_set[(lane[l] >> 6) & 63] > 8)
            return 1;
    return 0;
}

/* Rows of more than 8 lanes that crowd a cache set (fb_wide_lines), in
   a function of their own: added to fb_wide_rows, they made the
   compiler spill a register in the 4-lane interleave's loop (1.8 times
   as long in cache). */
FB_NOINLINE FB_V128_TARGET
static void fb_wide_crowded_rows(char *dst, const char *src, const FbLaneRows *rows,
                                 fb_intp n, int L, const fb_intp *lane_in, int interleave,
                                 int width, int line_split) {
    const int G = 16 / width, Q = (L + G - 1) / G;
    const FbLaneRows r = *rows;
    fb_intp lane[FB_LANES_MAX];
    fb_intp k, m;
    int l;
    for (l = 0; l < Q * G; l++)
        lane[l] = lane_in[l < L ? l : L - 1];
    #define FB_LINES_ROWS(INTERLEAVE, W)                                      \
        if (L % (16 / W) == 0) {                                              \
            FB_EACH_ROW                                                       \
                fb_wide_lines(FB_ROW_DST, FB_ROW_SRC, n, L, lane, INTERLEAVE, \
                              W, 0, line_split);                              \
        } else {                                                              \
            FB_EACH_ROW                                                       \
                fb_wide_lines(FB_ROW_DST, FB_ROW_SRC, n, L, lane, INTERLEAVE, \
                              W, 1, line_split);                              \
        }
    #define FB_LINES_SIZES(INTERLEAVE)                                        \
        switch (width) {                                                      \
        case 1: FB_LINES_ROWS(INTERLEAVE, 1) break;                           \
        case 2: FB_LINES_ROWS(INTERLEAVE, 2) break;                           \
        case 4: FB_LINES_ROWS(INTERLEAVE, 4) break;                           \
        default: FB_LINES_ROWS(INTERLEAVE, 8) break;                          \
        }
    if (interleave) {
        FB_LINES_SIZES(1)
    } else {
        FB_LINES_SIZES(0)
    }
    #undef FB_LINES_SIZES
    #undef FB_LINES_ROWS
}

/* The register-transpose rows in a function of their own: inlined beside
   the byte shuffles' rows, their large frame slowed the byte kernel's short rows
   (24-pixel rows of 4 byte lanes by 12%). */
FB_NOINLINE FB_V128_TARGET
static void fb_wide_rows(char *dst, const char *src, const FbLaneRows *rows, fb_intp n,
                         int L, const fb_intp *lane, int interleave, int width) {
    #define r (*rows)
    fb_intp k, m;
    if (width == 1) {
        if (interleave) { FB_WIDE_ROWS(1, 1) } else { FB_WIDE_ROWS(0, 1) }
    } else if (width == 2) {
        if (interleave) { FB_WIDE_ROWS(1, 2) } else { FB_WIDE_ROWS(0, 2) }
    } else if (width == 4) {
        if (interleave) { FB_WIDE_ROWS(1, 4) } else { FB_WIDE_ROWS(0, 4) }
    } else {
        if (interleave) { FB_WIDE_ROWS(1, 8) } else { FB_WIDE_ROWS(0, 8) }
    }
    #undef r
}

/* Two lanes of 4-byte items, 4 pixels a step: a split takes each
   lane's items of two registers by one shufps (NEON: uzp), an interleave
   pairs them by unpacks (zips); the padded register transposes below would
   move two empty lanes as well (PAIR_MIN_PIXELS has figures). A run of
   n >= 4 pixels ends with a step that ends at its end (over pixels
   already moved). */
FB_NOINLINE FB_V128_TARGET
static void fb_pair_rows(char *dst, const char *src, const FbLaneRows *rows, fb_intp n,
                         const fb_intp *lane, int interleave) {
    const FbLaneRows r = *rows;
    const fb_intp lane0 = lane[0], lane1 = lane[1];
    fb_intp k, m, i, j;
    FB_EACH_ROW {
        char *d = FB_ROW_DST;
        const char *s = FB_ROW_SRC;
        for (j = 0; j < n; j += 4) {
            i = j + 4 <= n ? j : n - 4;
            if (interleave) {
                fb_v128 a = fb_v128_load(s + lane0 + 4 * i);
                fb_v128 b = fb_v128_load(s + lane1 + 4 * i);
                fb_v128_store(d + 8 * i, fb_v128_zip_lo32(a, b));
                fb_v128_store(d + 8 * i + 16, fb_v128_zip_hi32(a, b));
            } else {
                fb_v128 a = fb_v128_load(s + 8 * i);
                fb_v128 b = fb_v128_load(s + 8 * i + 16);
                fb_v128_store(d + lane0 + 4 * i, fb_v128_even32(a, b));
                fb_v128_store(d + lane1 + 4 * i, fb_v128_odd32(a, b));
            }
        }
    }
}

#if FB_NEON
/* NEON's structured loads and stores, for 2 to 4 lanes of 1-, 2-, 4- or
   8-byte items: a split's ld2/ld3/ld4 reads 16 bytes of every lane from
   the packed pixels in one instruction, and st1 writes each lane's
   register; an interleave reads each lane by ld1 and writes the pixels
   by one st2/st3/st4. The 16-byte kernel above pads 3 lanes to 4 and
   shuffles each register: 3 byte lanes split took 1.18 arm64
   instructions a byte against 0.46 by the portable item loop, which gcc
   vectorises with ld3; this kernel takes 0.15 against 0.17 at 4 MiB
   (asv_bench/arm64_instructions.py). A run that is
   not whole registers ends with a step that ends at its end, over pixels
   already moved (the same bytes again); a run shorter than a register
   goes item by item. */
#define FB_NEON_STEP(L, T, SUF, i)                                              \
    do {                                                                        \
        if (interleave) {                                                       \
            T##x##L##_t v_;                                                     \
            FB_UNROLL                                                           \
            for (l = 0; l < L; l++)                                             \
                v_.val[l] = vld1q_##SUF((const void *)(s + lane[l] + (i) * W));   \
            vst##L##q_##SUF((void *)(d + (i) * L * W), v_);                       \
        } else {                                                                \
            T##x##L##_t v_ = vld##L##q_##SUF((const void *)(s + (i) * L * W));    \
            FB_UNROLL                                                           \
            for (l = 0; l < L; l++)                                             \
                vst1q_##SUF((void *)(d + lane[l] + (i) * W), v_.val[l]);          \
        }                                                                       \
    } while (0)

#define FB_NEON_SIZES(T, SUF, i)                                                \
    do {                                                                        \
        if (L == 2)                                                             \
            FB_NEON_STEP(2, T, SUF, i);                                         \
        else if (L == 3)                                                        \
            FB_NEON_STEP(3, T, SUF, i);                                         \
        else                                                                    \
            FB_NEON_STEP(4, T, SUF, i);                                         \
    } while (0)

static inline FB_ALWAYS_INLINE
void fb_neon_lanes_row(char *d, const char *s, fb_intp n, const fb_intp *lane,
                       const int interleave, const int L, const int W) {
    const fb_intp G = 16 / W;       /* pixels a step */
    fb_intp i;
    int l;
    /* The step of pixel I, for this W. */
    #define FB_NEON_WIDTHS(I)                                                   \
        do {                                                                    \
            const fb_intp at_ = (I);                                            \
            switch (W) {                                                        \
            case 1: FB_NEON_SIZES(uint8x16, u8, at_); break;                    \
            case 2: FB_NEON_SIZES(uint16x8, u16, at_); break;                   \
            case 4: FB_NEON_SIZES(uint32x4, u32, at_); break;                   \
            default: FB_NEON_SIZES(uint64x2, u64, at_); break;                  \
            }                                                                   \
        } while (0)
    if (n < G) {
        fb_lanes_tail(d, s, 0, n, L, lane, interleave, W);
        return;
    }
    /* Four steps a round (a quarter of the loop's own instructions a
       byte), then whole steps, then the last one ending at the end. */
    for (i = 0; i + 4 * G <= n; i += 4 * G) {
        FB_NEON_WIDTHS(i);
        FB_NEON_WIDTHS(i + G);
        FB_NEON_WIDTHS(i + 2 * G);
        FB_NEON_WIDTHS(i + 3 * G);
    }
    for (; i + G <= n; i += G)
        FB_NEON_WIDTHS(i);
    if (i < n)
        FB_NEON_WIDTHS(n - G);
}
#undef FB_NEON_WIDTHS
#undef FB_NEON_SIZES
#undef FB_NEON_STEP

/* Every row of a lane transpose by fb_neon_lanes_row, with L, W and
   interleave constants. */
FB_NOINLINE
static void fb_neon_lanes_rows(char *dst, const char *src, const FbLaneRows *rows, fb_intp n,
                               int L, const fb_intp *lane_in, int interleave, int width) {
    const FbLaneRows r = *rows;
    fb_intp lane[4] = {lane_in[0], lane_in[1], L > 2 ? lane_in[2] : 0, L > 3 ? lane_in[3] : 0};
    fb_intp k, m;
    #define FB_NEON_ROWS(INTERLEAVE, L_, W_)                                    \
        FB_EACH_ROW                                                            \
            fb_neon_lanes_row(FB_ROW_DST, FB_ROW_SRC, n, lane, INTERLEAVE, L_, W_)
    #define FB_NEON_LANES(INTERLEAVE, W_)                                       \
        if (L == 2) { FB_NEON_ROWS(INTERLEAVE, 2, W_); }                       \
        else if (L == 3) { FB_NEON_ROWS(INTERLEAVE, 3, W_); }                  \
        else { FB_NEON_ROWS(INTERLEAVE, 4, W_); }
    #define FB_NEON_WIDTHS(INTERLEAVE)                                          \
        switch (width) {                                                       \
        case 1: FB_NEON_LANES(INTERLEAVE, 1) break;                            \
        case 2: FB_NEON_LANES(INTERLEAVE, 2) break;                            \
        case 4: FB_NEON_LANES(INTERLEAVE, 4) break;                            \
        default: FB_NEON_LANES(INTERLEAVE, 8) break;                           \
        }
    if (interleave) {
        FB_NEON_WIDTHS(1)
    } else {
        FB_NEON_WIDTHS(0)
    }
    #undef FB_NEON_WIDTHS
    #undef FB_NEON_LANES
    #undef FB_NEON_ROWS
}
#endif

/* The rows kernels fb_lanes_rows_for chooses among, each behind the one
   signature of FbLanesRows. */
#if FB_NEON
static void fb_rows_by_neon(char *dst, const char *src, const FbLaneRows *rows, fb_intp n,
                            int L, const fb_intp *lane, const unsigned char *masks,
                            int interleave, int width) {
    (void)masks;
    fb_neon_lanes_rows(dst, src, rows, n, L, lane, interleave, width);
}
#endif

/* Two 4-byte lanes; a row of fewer than 4 pixels (a remainder block) by
   fb_wide_rows, whose tail takes it item by item. */
static void fb_rows_by_pairs(char *dst, const char *src, const FbLaneRows *rows, fb_intp n,
                             int L, const fb_intp *lane, const unsigned char *masks,
                             int interleave, int width) {
    (void)masks;
    if (n >= 4)
        fb_pair_rows(dst, src, rows, n, lane, interleave);
    else
        fb_wide_rows(dst, src, rows, n, L, lane, interleave, width);
}

static void fb_rows_by_lines(char *dst, const char *src, const FbLaneRows *rows, fb_intp n,
                             int L, const fb_intp *lane, const unsigned char *masks,
                             int interleave, int width) {
    (void)masks; (void)interleave;
    fb_wide_crowded_rows(dst, src, rows, n, L, lane, 0, width, 1);
}

static void fb_rows_crowded(char *dst, const char *src, const FbLaneRows *rows, fb_intp n,
                            int L, const fb_intp *lane, const unsigned char *masks,
                            int interleave, int width) {
    (void)masks;
    fb_wide_crowded_rows(dst, src, rows, n, L, lane, interleave, width, 0);
}

static void fb_rows_wide(char *dst, const char *src, const FbLaneRows *rows, fb_intp n, int L,
                         const fb_intp *lane, const unsigned char *masks, int interleave,
                         int width) {
    (void)masks;
    fb_wide_rows(dst, src, rows, n, L, lane, interleave, width);
}

/* Pixels of up to 16 bytes by the plan's byte shuffles (masks), padded to
   P lanes: an interleave, and a split. */
FB_V128_TARGET
static void fb_rows_by_shuffles_interleave(char *dst, const char *src, const FbLaneRows *rows,
                                           fb_intp n, int L, const fb_intp *lane,
                                           const unsigned char *masks, int interleave,
                                           int width) {
    const FbLaneRows r = *rows;
    fb_intp k, m;
    int P = L <= 2 ? 2 : L <= 4 ? 4 : L <= 8 ? 8 : 16;
    (void)interleave;
    FB_LANE_SIZES(1)
}

FB_V128_TARGET
static void fb_rows_by_shuffles_split(char *dst, const char *src, const FbLaneRows *rows,
                                      fb_intp n, int L, const fb_intp *lane,
                                      const unsigned char *masks, int interleave, int width) {
    const FbLaneRows r = *rows;
    fb_intp k, m;
    int P = L <= 2 ? 2 : L <= 4 ? 4 : L <= 8 ? 8 : 16;
    (void)interleave;
    FB_LANE_SIZES(0)
}

FbLanesRows fb_lanes_rows_for(int L, int width, int interleave, int line_split,
                              const fb_intp *lane) {
#if FB_NEON
    if (L <= 4 && !line_split)
        return fb_rows_by_neon;
#endif
    if (width == 4 && L == 2)
        return fb_rows_by_pairs;
    if (line_split)
        return fb_rows_by_lines;
    if (L > 8 && (width * L > 16 || width >= 4) && fb_lanes_crowd_a_set(lane, L))
        return fb_rows_crowded;
    if (width * L > 16 || width >= 4)
        return fb_rows_wide;
    return interleave ? fb_rows_by_shuffles_interleave : fb_rows_by_shuffles_split;
}

#endif
