# Byte shuffles for gathered runs of 1-, 2- and 4-byte items.
#
# A gathered run (the plan's gather mode) reads each destination item from
# its own source offset: one load and one store per item, which for bytes is
# several times slower than memory. Where the CPU has a byte shuffle (x86-64
# SSSE3 ``pshufb``, checked at run time), each 16-byte piece of the run is
# built from unaligned 16-byte source loads (windows), each shuffled into
# place by a mask computed when the plan is built and OR-ed together (mask
# bytes of 0x80 give zeros). Even a window per item beats the item loop.
#
# Where the CPU also has AVX-512 VBMI (``vpermb``: any byte of a 64-byte
# register to any place), pieces and windows are 64 bytes instead: a 3-byte
# pixel row interleaved from two source rows takes two windows per 64 bytes
# rather than two per 16, so a quarter of the loads, shuffles and stores. A
# window's bytes are merged into the piece under a mask (its mask bytes
# below 0x80), so no OR is needed. On the AMD EPYC (Zen 4) CI machine
# (in-process A/B of the two piece sizes, x np.copyto, 64 MiB): the seven
# channels_last C 3 uint8 cases of target 1 that shuffle, one thread
# 1.68-3.12 -> 1.29-2.19, two threads 0.99-1.33 -> 0.81-1.04; 3 MiB
# depth_to_space depth_first C 3 bs 2, two threads, 2.28 -> 1.50.
#
# With 64-byte pieces, runs of 4-byte items shuffle too where every piece
# takes at most 4 windows (space_to_depth depth_first channels_last C 3
# float32, 64 MiB, in-process A/B of the piece sizes: one thread bs 2 1.45
# -> 1.01, bs 3 1.60 -> 1.06; two threads 0.80 -> 0.57, 0.84 -> 0.65;
# depth_to_space bs 2 one thread 1.67 -> 1.14, two threads even). Pieces
# needing more windows lost (depth_to_space bs 3: 0.78 -> 1.11).
#
# A run whose length is not a whole number of pieces ends with a piece
# that overlaps the one before it (it ends at the run's end; the bytes
# written twice are the same), so only runs shorter than a piece gather
# item by item.
#
# Every load lies between the smallest and the largest source byte the run
# reads, so it never leaves the source array's memory.
#
# The package is built without -march flags; each SIMD function carries its
# own target attribute and runs only if the CPU reports the instructions.
# Other CPUs and compilers get the portable item loop.

cdef extern from *:
    """
    #if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    #include <immintrin.h>
    #define FB_SHUFFLE_BUILT 1
    static int fb_cpu_can_shuffle(void) {
        __builtin_cpu_init();
        return __builtin_cpu_supports("ssse3");
    }
    static int fb_cpu_can_shuffle_wide(void) {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
               && __builtin_cpu_supports("avx512vbmi");
    }
    /* Piece q of P bytes is written at P * q, the last one at last_start. */
    #define FB_PIECE_AT(q, P) ((q) == n_pieces - 1 ? last_start : (P) * (q))
    #define FB_WINDOW(w) _mm_shuffle_epi8( \
        _mm_loadu_si128((const __m128i *)(src + offset[w])), \
        _mm_loadu_si128((const __m128i *)(mask + 16 * (w))))
    /* Every piece takes W windows (a constant after inlining): no dispatch
       per piece. */
    static inline __attribute__((always_inline, target("ssse3")))
    void fb_shuffle_uniform(char *dst, const char *src, Py_ssize_t n_pieces, Py_ssize_t last_start,
                            const Py_ssize_t *window_offset, const unsigned char *window_mask,
                            int max_windows, const int W) {
        Py_ssize_t q;
        int w;
        for (q = 0; q < n_pieces; q++) {
            const Py_ssize_t *offset = window_offset + q * max_windows;
            const unsigned char *mask = window_mask + q * max_windows * 16;
            __m128i acc = FB_WINDOW(0);
            _Pragma("GCC unroll 4")
            for (w = 1; w < W; w++)
                acc = _mm_or_si128(acc, FB_WINDOW(w));
            _mm_storeu_si128((__m128i *)(dst + FB_PIECE_AT(q, 16)), acc);
        }
    }

    __attribute__((target("ssse3")))
    static void fb_shuffle_pieces(char *dst, const char *src, Py_ssize_t n_pieces, Py_ssize_t last_start,
                                  const unsigned char *n_windows, const Py_ssize_t *window_offset,
                                  const unsigned char *window_mask, int max_windows, int uniform) {
        Py_ssize_t q;
        int w;
        switch (uniform) {
        case 1: fb_shuffle_uniform(dst, src, n_pieces, last_start, window_offset, window_mask, max_windows, 1); return;
        case 2: fb_shuffle_uniform(dst, src, n_pieces, last_start, window_offset, window_mask, max_windows, 2); return;
        case 3: fb_shuffle_uniform(dst, src, n_pieces, last_start, window_offset, window_mask, max_windows, 3); return;
        case 4: fb_shuffle_uniform(dst, src, n_pieces, last_start, window_offset, window_mask, max_windows, 4); return;
        }
        for (q = 0; q < n_pieces; q++) {
            const Py_ssize_t *offset = window_offset + q * max_windows;
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

    /* 64-byte pieces: window w's source bytes go where its mask byte is
       below 0x80 (vpermb under that mask, merged into the piece). */
    #define FB_WINDOW64(acc, w) do { \
            __m512i index_ = _mm512_loadu_si512((const void *)(mask + 64 * (w))); \
            acc = _mm512_mask_permutexvar_epi8(acc, _knot_mask64(_mm512_movepi8_mask(index_)), index_, \
                                               _mm512_loadu_si512((const void *)(src + offset[w]))); \
        } while (0)
    static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vbmi")))
    void fb_shuffle_wide_n(char *dst, const char *src, Py_ssize_t n_pieces, Py_ssize_t last_start,
                           const unsigned char *n_windows, const Py_ssize_t *window_offset,
                           const unsigned char *window_mask, int max_windows, const int W) {
        Py_ssize_t q;
        int w;
        for (q = 0; q < n_pieces; q++) {
            const Py_ssize_t *offset = window_offset + q * max_windows;
            const unsigned char *mask = window_mask + q * max_windows * 64;
            const int windows = W ? W : n_windows[q];
            __m512i acc = _mm512_setzero_si512();
            _Pragma("GCC unroll 4")
            for (w = 0; w < windows; w++)
                FB_WINDOW64(acc, w);
            _mm512_storeu_si512((void *)(dst + FB_PIECE_AT(q, 64)), acc);
        }
    }

    __attribute__((target("avx512f,avx512bw,avx512vbmi")))
    static void fb_shuffle_wide(char *dst, const char *src, Py_ssize_t n_pieces, Py_ssize_t last_start,
                                const unsigned char *n_windows, const Py_ssize_t *window_offset,
                                const unsigned char *window_mask, int max_windows, int uniform) {
        switch (uniform) {
        case 1: fb_shuffle_wide_n(dst, src, n_pieces, last_start, n_windows, window_offset, window_mask, max_windows, 1); return;
        case 2: fb_shuffle_wide_n(dst, src, n_pieces, last_start, n_windows, window_offset, window_mask, max_windows, 2); return;
        case 3: fb_shuffle_wide_n(dst, src, n_pieces, last_start, n_windows, window_offset, window_mask, max_windows, 3); return;
        case 4: fb_shuffle_wide_n(dst, src, n_pieces, last_start, n_windows, window_offset, window_mask, max_windows, 4); return;
        }
        fb_shuffle_wide_n(dst, src, n_pieces, last_start, n_windows, window_offset, window_mask, max_windows, 0);
    }
    #undef FB_WINDOW64
    #undef FB_PIECE_AT
    #undef FB_WINDOW
    #else
    #define FB_SHUFFLE_BUILT 0
    static int fb_cpu_can_shuffle(void) { return 0; }
    static int fb_cpu_can_shuffle_wide(void) { return 0; }
    /* Never called: fb_cpu_can_shuffle is false. */
    static void fb_shuffle_pieces(char *dst, const char *src, Py_ssize_t n_pieces, Py_ssize_t last_start,
                                  const unsigned char *n_windows, const Py_ssize_t *window_offset,
                                  const unsigned char *window_mask, int max_windows, int uniform) {
        (void)dst; (void)src; (void)n_pieces; (void)last_start; (void)n_windows;
        (void)window_offset; (void)window_mask; (void)max_windows; (void)uniform;
    }
    #define fb_shuffle_wide fb_shuffle_pieces
    #endif
    """
    int fb_cpu_can_shuffle() nogil
    int fb_cpu_can_shuffle_wide() nogil
    void fb_shuffle_pieces(char* dst, const char* src, intp n_pieces, intp last_start,
                           const unsigned char* n_windows, const intp* window_offset,
                           const unsigned char* window_mask, int max_windows, int uniform) noexcept nogil
    void fb_shuffle_wide(char* dst, const char* src, intp n_pieces, intp last_start,
                         const unsigned char* n_windows, const intp* window_offset,
                         const unsigned char* window_mask, int max_windows, int uniform) noexcept nogil

cdef enum:
    SHUFFLE_BYTES = 16
    # Source loads per 16-byte piece, at most one per item.
    SHUFFLE_WINDOWS = 16
    # Pieces in the longest gathered run of 1- or 2-byte items (the last
    # one may overlap the one before it).
    SHUFFLE_PIECES = GATHER_MAX * 2 // SHUFFLE_BYTES + 1
    # The 64-byte pieces' sizes: the same tables hold at most this many
    # windows per piece (more, and the run takes 16-byte pieces).
    WIDE_SHUFFLE_BYTES = 64
    WIDE_SHUFFLE_WINDOWS = SHUFFLE_PIECES * SHUFFLE_WINDOWS * SHUFFLE_BYTES // (
        (GATHER_MAX * 2 // WIDE_SHUFFLE_BYTES + 1) * WIDE_SHUFFLE_BYTES)

# Whether this process runs the byte shuffles (the CPU has them); tests
# switch it off to check the item-by-item path gives the same bytes.
cdef bint shuffle_enabled = fb_cpu_can_shuffle() != 0
# Whether it builds 64-byte pieces where it can (the CPU has AVX-512 VBMI);
# tests switch it off to reach the 16-byte pieces on such CPUs too.
cdef bint wide_shuffle_enabled = shuffle_enabled and fb_cpu_can_shuffle_wide() != 0
# Copies smaller than this gather item by item: building the masks costs
# about 2 K instructions per 16-byte piece of the run, paid on every call,
# against about 6 saved per byte copied (callgrind). Tests lower it to
# reach the shuffles with small inputs.
cdef intp SHUFFLE_MIN_BYTES = 64 * 1024
cdef intp shuffle_min_bytes = SHUFFLE_MIN_BYTES


cdef inline bint shuffles_pay(intp copy_bytes) noexcept nogil:
    """Whether a copy of ``copy_bytes`` bytes should use the byte shuffles."""
    return shuffle_enabled and copy_bytes >= shuffle_min_bytes


cdef enum:
    # Programs whose pieces need at most this many windows, all within one
    # of the most, run every piece with the most (the extra ones empty).
    SHUFFLE_UNIFORM_MAX = 4

cdef struct ShuffleProgram:
    intp n_pieces               # pieces covering the run (0: none)
    intp piece_bytes            # 16 (SSSE3) or 64 (AVX-512 VBMI)
    int max_windows             # window slots per piece in the tables
    intp last_start             # the last piece's first byte in the run
    int uniform                 # windows in every piece (0: they differ)
    unsigned char n_windows[SHUFFLE_PIECES]
    intp window_offset[SHUFFLE_PIECES * SHUFFLE_WINDOWS]
    unsigned char window_mask[SHUFFLE_PIECES * SHUFFLE_WINDOWS * SHUFFLE_BYTES]


cdef void plan_shuffle(ShuffleProgram* prog, const intp* offsets, intp n_items,
                       intp width, intp copy_bytes) noexcept nogil:
    """Build the shuffle program of a gathered run of ``n_items`` items of
    ``width`` bytes (1, 2 or 4) at source ``offsets``, for a copy of
    ``copy_bytes`` bytes: 64-byte pieces where the CPU has them and they
    apply, else 16-byte ones (not for 4-byte items). ``prog.n_pieces`` stays
    0 if shuffles are off, do not pay for so small a copy, or do not apply
    (a source span or a run under a piece)."""
    prog.n_pieces = 0
    prog.uniform = 0
    if not shuffles_pay(copy_bytes) or (width != 1 and width != 2 and width != 4):
        return
    # 4-byte items gain only where every piece takes a few windows (and
    # so their longer runs fit in the tables).
    if wide_shuffle_enabled and plan_pieces(prog, offsets, n_items, width, WIDE_SHUFFLE_BYTES,
                                            SHUFFLE_UNIFORM_MAX if width == 4 else WIDE_SHUFFLE_WINDOWS):
        if width == 4 and prog.uniform == 0:
            prog.n_pieces = 0
        return
    if width <= 2:
        plan_pieces(prog, offsets, n_items, width, SHUFFLE_BYTES, SHUFFLE_WINDOWS)


cdef bint plan_pieces(ShuffleProgram* prog, const intp* offsets, intp n_items, intp width,
                      intp piece_bytes, int max_windows) noexcept nogil:
    """``plan_shuffle`` with pieces and windows of ``piece_bytes`` bytes and
    at most ``max_windows`` windows a piece; False (and no pieces) if the run
    or its source span is shorter than a piece, the run is longer than the
    tables hold, or a piece needs more windows."""
    cdef intp per_piece = piece_bytes // width, lowest, highest, start, first, i, j, q, n_pieces, slot
    cdef int w, pending_count
    cdef bint pending[WIDE_SHUFFLE_BYTES]
    prog.n_pieces = 0
    prog.uniform = 0
    if n_items < per_piece:
        return False
    lowest = offsets[0]
    highest = offsets[0]
    for i in range(n_items):
        lowest = imin(lowest, offsets[i])
        highest = imax(highest, offsets[i])
    highest += width - 1        # the last source byte read
    if highest - lowest + 1 < piece_bytes:
        return False
    n_pieces = (n_items + per_piece - 1) // per_piece
    # The tables hold runs of up to GATHER_MAX 2-byte items at up to
    # max_windows windows a piece.
    if n_pieces > imin(SHUFFLE_PIECES, SHUFFLE_PIECES * SHUFFLE_WINDOWS * SHUFFLE_BYTES
                       // (max_windows * piece_bytes)):
        return False
    for q in range(n_pieces):
        # The last piece ends at the run's end (overlapping the one before).
        first = imin(q * per_piece, n_items - per_piece)
        pending_count = <int>per_piece
        for i in range(per_piece):
            pending[i] = True
        w = 0
        # Each window takes at least the lowest pending item, so a piece
        # needs at most one window per item.
        while pending_count > 0:
            if w == max_windows:
                return False
            # The window starts at the lowest pending item, moved back if
            # it would end past the last source byte.
            start = highest
            for i in range(per_piece):
                if pending[i]:
                    start = imin(start, offsets[first + i])
            start = imin(start, highest - piece_bytes + 1)
            slot = q * max_windows + w
            prog.window_offset[slot] = start
            for i in range(per_piece):
                for j in range(width):
                    prog.window_mask[slot * piece_bytes + i * width + j] = 0x80
                if pending[i] and offsets[first + i] + width <= start + piece_bytes:
                    for j in range(width):
                        prog.window_mask[slot * piece_bytes + i * width + j] = \
                            <unsigned char>(offsets[first + i] - start + j)
                    pending[i] = False
                    pending_count -= 1
            w += 1
        prog.n_windows[q] = <unsigned char>w
    prog.n_pieces = n_pieces
    prog.piece_bytes = piece_bytes
    prog.max_windows = max_windows
    prog.last_start = (n_items - per_piece) * width
    pad_to_uniform(prog)
    return True


cdef void pad_to_uniform(ShuffleProgram* prog) noexcept nogil:
    """Give every piece the most windows any piece has, if that is at most
    SHUFFLE_UNIFORM_MAX and no piece has two fewer: an added window loads
    the piece's first window again and places nothing (a mask of 0x80s).
    The kernel then needs no dispatch per piece."""
    cdef intp q, slot
    cdef int most = 0, least = SHUFFLE_WINDOWS, w, j
    prog.uniform = 0
    for q in range(prog.n_pieces):
        most = max(most, <int>prog.n_windows[q])
        least = min(least, <int>prog.n_windows[q])
    if prog.n_pieces == 0 or most > SHUFFLE_UNIFORM_MAX or most - least > 1:
        return
    for q in range(prog.n_pieces):
        for w in range(prog.n_windows[q], most):
            slot = q * prog.max_windows + w
            prog.window_offset[slot] = prog.window_offset[q * prog.max_windows]
            for j in range(prog.piece_bytes):
                prog.window_mask[slot * prog.piece_bytes + j] = 0x80
        prog.n_windows[q] = <unsigned char>most
    prog.uniform = most


cdef inline void shuffle_rows(const ShuffleProgram* prog, char* dst, const char* src,
                              intp n_rows, intp dst_row, intp src_row) noexcept nogil:
    """The gathered rows, every one by the program's pieces."""
    cdef intp i
    for i in range(n_rows):
        if prog.piece_bytes == WIDE_SHUFFLE_BYTES:
            fb_shuffle_wide(dst + i * dst_row, src + i * src_row, prog.n_pieces, prog.last_start,
                            prog.n_windows, prog.window_offset, prog.window_mask,
                            prog.max_windows, prog.uniform)
        else:
            fb_shuffle_pieces(dst + i * dst_row, src + i * src_row, prog.n_pieces, prog.last_start,
                              prog.n_windows, prog.window_offset, prog.window_mask,
                              prog.max_windows, prog.uniform)


def shuffles_available(bint wide=False):
    """Whether this build and CPU have the byte shuffles (``wide``: the
    64-byte ones)."""
    if wide:
        return fb_cpu_can_shuffle() != 0 and fb_cpu_can_shuffle_wide() != 0
    return fb_cpu_can_shuffle() != 0


def set_shuffles(bint enabled, intp min_bytes=SHUFFLE_MIN_BYTES, bint wide=True):
    """Use byte shuffles in plans built from now on, if the CPU has them, for
    copies of ``min_bytes`` bytes or more, with 64-byte pieces if ``wide``
    and the CPU has those; return the previous ``(enabled, min_bytes,
    wide)``. For tests and benchmarks."""
    global shuffle_enabled, shuffle_min_bytes, wide_shuffle_enabled
    before = (shuffle_enabled, shuffle_min_bytes, wide_shuffle_enabled)
    shuffle_enabled = enabled and fb_cpu_can_shuffle() != 0
    wide_shuffle_enabled = shuffle_enabled and wide and fb_cpu_can_shuffle_wide() != 0
    shuffle_min_bytes = min_bytes
    return before
