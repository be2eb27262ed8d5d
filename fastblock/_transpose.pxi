# Staged transposes: the kernel block of a copy whose source is contiguous
# along one set of axes and whose destination is contiguous along another.
#
# The block is R rows by C items. Row r is contiguous in the source (all
# rows one run: the source's innermost axes) and written at its own
# destination offset; item c of every row is read at its own source offset
# and the items of a row are contiguous in the destination (the
# destination's innermost axes). Both offset tables come from the plan, so
# each side may be several axes: a Fortran-order float32 input has runs of
# only 8 items (32 bytes) along N, but N and C together are 1 KiB.
#
# When the C runs of R source items lie far apart, they are first copied
# whole into a buffer in L1 (each source line read once, in order: steps
# that are powers of two map every run to the same cache sets, so lines
# read a piece at a time are evicted before their next piece is used);
# runs side by side are read in place. The block is then read G x G
# items at a time (G = 16 / item bytes: 16 bytes, 8 two-byte items, 4
# float32, 2 float64) into SSE2 registers, transposed by unpacks, and each
# register stored as 16 bytes of one destination row. Other item sizes, and
# the block's edges, go item by item. Each run copied asks for its lines
# two blocks on in L2 (fb_prefetch_run).
#
# A streamed destination takes the block through a stage instead
# (fb_transpose_runs, run by stream_transpose): the tiles go G source runs
# at a time, each run read start to end in place (only G source lines in
# use, so no copy first), into packed destination rows that then stream
# out in whole lines; each run's lines two blocks on are asked for in L2
# as it is finished, the plan walking the blocks in source order.

cdef extern from *:
    """
    #include <string.h>
    #if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    #include <emmintrin.h>
    #define FB_TRANSPOSE_SIMD 1
    #define FB_SSE2 __attribute__((target("sse2")))

    /* One round: register i is paired with register i + P/2, elements of
       the given size interleaved. log2(P) rounds rotate the (row, column)
       bit address of each element by log2(P) bits: a transpose (register j
       ends up holding element j of every input register, in order). */
    #define FB_UNROLL _Pragma("GCC unroll 16")
    #define FB_LANE_ROUND(LO, HI) do {                                   \\
            __m128i t_[16];                                              \\
            int i_;                                                      \\
            FB_UNROLL                                                    \\
            for (i_ = 0; i_ < P / 2; i_++) {                             \\
                t_[2 * i_] = LO(r[i_], r[i_ + P / 2]);                   \\
                t_[2 * i_ + 1] = HI(r[i_], r[i_ + P / 2]);               \\
            }                                                            \\
            FB_UNROLL                                                    \\
            for (i_ = 0; i_ < P; i_++)                                   \\
                r[i_] = t_[i_];                                          \\
        } while (0)

    static inline __attribute__((always_inline, target("sse2")))
    void fb_transpose_registers(__m128i *r, const int P) {
        int round;
        if (P == 2) {
            FB_LANE_ROUND(_mm_unpacklo_epi64, _mm_unpackhi_epi64);
        } else if (P == 4) {
            FB_UNROLL
            for (round = 0; round < 2; round++)
                FB_LANE_ROUND(_mm_unpacklo_epi32, _mm_unpackhi_epi32);
        } else if (P == 8) {
            FB_UNROLL
            for (round = 0; round < 3; round++)
                FB_LANE_ROUND(_mm_unpacklo_epi16, _mm_unpackhi_epi16);
        } else {
            FB_UNROLL
            for (round = 0; round < 4; round++)
                FB_LANE_ROUND(_mm_unpacklo_epi8, _mm_unpackhi_epi8);
        }
    }
    #undef FB_LANE_ROUND
    #else
    #define FB_TRANSPOSE_SIMD 0
    #define FB_SSE2
    #endif

    /* One item of W bytes (a constant after inlining where it can be).
       Other sizes up to 16 move as two overlapping copies of a power of two
       inside the item; past 16 bytes, one library call. */
    static inline __attribute__((always_inline))
    void fb_move_item(char *dst, const char *src, const Py_ssize_t W) {
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

    /* Rows a0 .. a1-1, items b0 .. b1-1 of a block into their destination
       rows, item by item; item b of row a is read at src + item_offset[b]
       + a * W. */
    static inline __attribute__((always_inline))
    void fb_transpose_items(char *dst, const char *src, Py_ssize_t a0, Py_ssize_t a1,
                            Py_ssize_t b0, Py_ssize_t b1, const Py_ssize_t *item_offset,
                            const Py_ssize_t *row_offset, const Py_ssize_t W) {
        Py_ssize_t a, b;
        for (a = a0; a < a1; a++) {
            char *d = dst + row_offset[a];
            for (b = b0; b < b1; b++)
                fb_move_item(d + b * W, src + item_offset[b] + a * W, W);
        }
    }

    #if FB_TRANSPOSE_SIMD
    /* Register tile (a, b) of a block: items b .. b+G-1 of rows a ..
       a+G-1, transposed so that register k holds row a+k's G items. */
    static inline __attribute__((always_inline)) FB_SSE2
    void fb_tile(__m128i *r, const char *src, const Py_ssize_t *item_offset, Py_ssize_t a,
                 Py_ssize_t b, const Py_ssize_t W, const int G) {
        int k;
        FB_UNROLL
        for (k = 0; k < G; k++)
            r[k] = _mm_loadu_si128((const __m128i *)(src + item_offset[b + k] + a * W));
        fb_transpose_registers(r, G);
    }
    #endif

    /* A block into destination rows, G x G register tiles where the item
       size has them, then the edges item by item: a row's tiles one after
       another, so the destination is written in order. */
    static inline __attribute__((always_inline)) FB_SSE2
    void fb_transpose_rows_w(char *dst, const char *src, Py_ssize_t n_rows, Py_ssize_t n_items,
                             const Py_ssize_t *item_offset, const Py_ssize_t *row_offset,
                             const Py_ssize_t W) {
    #if FB_TRANSPOSE_SIMD
        if (W == 1 || W == 2 || W == 4 || W == 8) {
            const int G = 16 / (int)W;
            const Py_ssize_t whole_items = n_items - n_items % G;
            Py_ssize_t a, b;
            int k;
            for (a = 0; a + G <= n_rows; a += G) {
                char *d[16];
                FB_UNROLL
                for (k = 0; k < G; k++)
                    d[k] = dst + row_offset[a + k];
                for (b = 0; b < whole_items; b += G) {
                    __m128i r[16];
                    fb_tile(r, src, item_offset, a, b, W, G);
                    FB_UNROLL
                    for (k = 0; k < G; k++)
                        _mm_storeu_si128((__m128i *)(d[k] + b * W), r[k]);
                }
            }
            /* The items after the last whole tile, then the rows after it. */
            fb_transpose_items(dst, src, 0, a, whole_items, n_items, item_offset, row_offset, W);
            fb_transpose_items(dst, src, a, n_rows, 0, n_items, item_offset, row_offset, W);
            return;
        }
    #endif
        fb_transpose_items(dst, src, 0, n_rows, 0, n_items, item_offset, row_offset, W);
    }

    /* Ask for the lines of [p, p + n) in L2, ahead of their use. */
    static inline __attribute__((always_inline))
    void fb_prefetch_run(const char *p, Py_ssize_t n) {
    #if defined(__GNUC__) || defined(__clang__)
        Py_ssize_t i;
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
    static inline __attribute__((always_inline)) FB_SSE2
    void fb_transpose_runs_w(char *dst, const char *src, Py_ssize_t n_rows, Py_ssize_t n_items,
                             const Py_ssize_t *item_offset, Py_ssize_t row_bytes,
                             const Py_ssize_t W, Py_ssize_t ahead) {
        const Py_ssize_t run = n_rows * W;
        Py_ssize_t a, b = 0;
        int k;
    #if FB_TRANSPOSE_SIMD
        if (W == 1 || W == 2 || W == 4 || W == 8) {
            const int G = 16 / (int)W;
            const Py_ssize_t whole_rows = n_rows - n_rows % G;
            for (; b + G <= n_items; b += G) {
                const char *runs[16];
                FB_UNROLL
                for (k = 0; k < G; k++)
                    runs[k] = src + item_offset[b + k];
                for (a = 0; a < whole_rows; a += G) {
                    __m128i r[16];
                    char *d = dst + a * row_bytes + b * W;
                    FB_UNROLL
                    for (k = 0; k < G; k++)
                        r[k] = _mm_loadu_si128((const __m128i *)(runs[k] + a * W));
                    fb_transpose_registers(r, G);
                    FB_UNROLL
                    for (k = 0; k < G; k++)
                        _mm_storeu_si128((__m128i *)(d + k * row_bytes), r[k]);
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

    static FB_SSE2 void fb_transpose_runs(char *dst, const char *src, Py_ssize_t n_rows,
                                          Py_ssize_t n_items, const Py_ssize_t *item_offset,
                                          Py_ssize_t row_bytes, Py_ssize_t width, Py_ssize_t ahead) {
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

    static FB_SSE2 void fb_transpose_rows(char *dst, const char *src, Py_ssize_t n_rows,
                                          Py_ssize_t n_items, const Py_ssize_t *item_offset,
                                          const Py_ssize_t *row_offset, Py_ssize_t width) {
        #define FB_ROWS(W) fb_transpose_rows_w(dst, src, n_rows, n_items, item_offset, row_offset, W)
        switch (width) {
        case 1: FB_ROWS(1); break;
        case 2: FB_ROWS(2); break;
        case 4: FB_ROWS(4); break;
        case 8: FB_ROWS(8); break;
        case 16: FB_ROWS(16); break;
        default: fb_transpose_items(dst, src, 0, n_rows, 0, n_items, item_offset, row_offset, width);
        }
        #undef FB_ROWS
    }
    """
    void fb_transpose_rows(char* dst, const char* src, intp n_rows, intp n_items,
                           const intp* item_offset, const intp* row_offset, intp width) noexcept nogil
    void fb_transpose_runs(char* dst, const char* src, intp n_rows, intp n_items,
                           const intp* item_offset, intp row_bytes, intp width,
                           intp ahead) noexcept nogil
    void fb_prefetch_run(const char* p, intp n) noexcept nogil


cdef enum:
    # Bytes of one staged block (a buffer on the stack): with the block's
    # destination lines, it stays in L1.
    TRANSPOSE_WORDS = 2048
    TRANSPOSE_BYTES = TRANSPOSE_WORDS * 8
    # Rows, and items a row, of a block at most (the plan's offset tables).
    TRANSPOSE_MAX = 512


cdef inline void transpose_block(char* dst, const char* src, intp n_rows, intp n_items,
                                 const intp* row_offset, const intp* item_offset,
                                 intp width, bint staged, intp ahead) noexcept nogil:
    """One transpose block: ``n_items`` source runs of ``n_rows`` items (run
    ``c`` at ``src + item_offset[c]``) become ``n_rows`` destination rows of
    ``n_items`` contiguous items (row ``r`` at ``dst + row_offset[r]``);
    through the buffer if ``staged`` (then ``n_rows * n_items * width`` is
    at most TRANSPOSE_BYTES), asking for each run's lines ``ahead`` bytes
    on as it is copied (0: none). Streamed blocks go by
    ``fb_transpose_runs`` instead (``stream_transpose``)."""
    cdef uint64_t buffer[TRANSPOSE_WORDS]
    cdef intp buffer_offset[TRANSPOSE_MAX]
    cdef char* copied = <char*>buffer
    cdef intp run = n_rows * width, c
    if not staged:
        fb_transpose_rows(dst, src, n_rows, n_items, item_offset, row_offset, width)
        return
    for c in range(n_items):
        memcpy(copied + c * run, src + item_offset[c], <size_t>run)
        if ahead:
            fb_prefetch_run(src + item_offset[c] + ahead, run)
        buffer_offset[c] = c * run
    fb_transpose_rows(dst, copied, n_rows, n_items, buffer_offset, row_offset, width)


