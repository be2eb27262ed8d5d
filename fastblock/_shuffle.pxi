# Byte shuffles for gathered runs of 1- and 2-byte items.
#
# A gathered run (the plan's gather mode) reads each destination item from
# its own source offset: one load and one store per item, which for bytes is
# several times slower than memory. Where the CPU has a byte shuffle (x86-64
# SSSE3 ``pshufb``, checked at run time), each 16-byte piece of the run is
# built from unaligned 16-byte source loads (windows), each shuffled into
# place by a mask computed when the plan is built and OR-ed together (mask
# bytes of 0x80 give zeros). Even a window per item beats the item loop; the
# run's last partial piece keeps the item-by-item gather.
#
# Every 16-byte load lies between the smallest and the largest source byte
# the run reads, so it never leaves the source array's memory.
#
# The package is built without -march flags; the SSSE3 function carries its
# own target attribute and runs only if the CPU reports SSSE3. Other CPUs and
# compilers get the portable item loop.

cdef extern from *:
    """
    #if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    #include <immintrin.h>
    #define FB_SHUFFLE_BUILT 1
    static int fb_cpu_can_shuffle(void) {
        __builtin_cpu_init();
        return __builtin_cpu_supports("ssse3");
    }
    #define FB_WINDOW(w) _mm_shuffle_epi8( \
        _mm_loadu_si128((const __m128i *)(src + offset[w])), \
        _mm_loadu_si128((const __m128i *)(mask + 16 * (w))))
    /* Every piece takes W windows (a constant after inlining): no dispatch
       per piece. */
    static inline __attribute__((always_inline, target("ssse3")))
    void fb_shuffle_uniform(char *dst, const char *src, Py_ssize_t n_pieces,
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
            _mm_storeu_si128((__m128i *)(dst + 16 * q), acc);
        }
    }

    __attribute__((target("ssse3")))
    static void fb_shuffle_pieces(char *dst, const char *src, Py_ssize_t n_pieces,
                                  const unsigned char *n_windows, const Py_ssize_t *window_offset,
                                  const unsigned char *window_mask, int max_windows, int uniform) {
        Py_ssize_t q;
        int w;
        switch (uniform) {
        case 1: fb_shuffle_uniform(dst, src, n_pieces, window_offset, window_mask, max_windows, 1); return;
        case 2: fb_shuffle_uniform(dst, src, n_pieces, window_offset, window_mask, max_windows, 2); return;
        case 3: fb_shuffle_uniform(dst, src, n_pieces, window_offset, window_mask, max_windows, 3); return;
        case 4: fb_shuffle_uniform(dst, src, n_pieces, window_offset, window_mask, max_windows, 4); return;
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
            _mm_storeu_si128((__m128i *)(dst + 16 * q), acc);
        }
    }
    #undef FB_WINDOW
    #else
    #define FB_SHUFFLE_BUILT 0
    static int fb_cpu_can_shuffle(void) { return 0; }
    static void fb_shuffle_pieces(char *dst, const char *src, Py_ssize_t n_pieces,
                                  const unsigned char *n_windows, const Py_ssize_t *window_offset,
                                  const unsigned char *window_mask, int max_windows, int uniform) {
        (void)dst; (void)src; (void)n_pieces; (void)n_windows;
        (void)window_offset; (void)window_mask; (void)max_windows; (void)uniform;
    }
    #endif
    """
    int fb_cpu_can_shuffle() nogil
    void fb_shuffle_pieces(char* dst, const char* src, intp n_pieces,
                           const unsigned char* n_windows, const intp* window_offset,
                           const unsigned char* window_mask, int max_windows, int uniform) noexcept nogil

cdef enum:
    SHUFFLE_BYTES = 16
    # Source loads per 16-byte piece, at most one per item.
    SHUFFLE_WINDOWS = 16
    # Pieces in the longest gathered run of 1- or 2-byte items.
    SHUFFLE_PIECES = GATHER_MAX * 2 // SHUFFLE_BYTES

# Whether this process runs the byte shuffles (the CPU has them); tests
# switch it off to check the item-by-item path gives the same bytes.
cdef bint shuffle_enabled = fb_cpu_can_shuffle() != 0
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
    intp n_pieces               # leading 16-byte pieces of the run (0: none)
    int uniform                 # windows in every piece (0: they differ)
    unsigned char n_windows[SHUFFLE_PIECES]
    intp window_offset[SHUFFLE_PIECES * SHUFFLE_WINDOWS]
    unsigned char window_mask[SHUFFLE_PIECES * SHUFFLE_WINDOWS * SHUFFLE_BYTES]


cdef void plan_shuffle(ShuffleProgram* prog, const intp* offsets, intp n_items,
                       intp width, intp copy_bytes) noexcept nogil:
    """Build the shuffle program of a gathered run of ``n_items`` items of
    ``width`` bytes (1 or 2) at source ``offsets``, for a copy of
    ``copy_bytes`` bytes; ``prog.n_pieces`` stays 0 if shuffles are off, do
    not pay for so small a copy, or do not apply (a source span under 16
    bytes)."""
    cdef intp per_piece = SHUFFLE_BYTES // width, lowest, highest, start, i, j, q
    cdef int w, pending_count
    cdef bint pending[SHUFFLE_BYTES]
    prog.n_pieces = 0
    prog.uniform = 0
    if not shuffles_pay(copy_bytes) or (width != 1 and width != 2) or n_items < per_piece:
        return
    lowest = offsets[0]
    highest = offsets[0]
    for i in range(n_items):
        lowest = imin(lowest, offsets[i])
        highest = imax(highest, offsets[i])
    highest += width - 1        # the last source byte read
    if highest - lowest + 1 < SHUFFLE_BYTES:
        return
    for q in range(n_items // per_piece):
        pending_count = <int>per_piece
        for i in range(per_piece):
            pending[i] = True
        w = 0
        # Each window takes at least the lowest pending item, so a piece
        # needs at most one window per item.
        while pending_count > 0:
            # The window starts at the lowest pending item, moved back if
            # it would end past the last source byte.
            start = highest
            for i in range(per_piece):
                if pending[i]:
                    start = imin(start, offsets[q * per_piece + i])
            start = imin(start, highest - SHUFFLE_BYTES + 1)
            prog.window_offset[q * SHUFFLE_WINDOWS + w] = start
            for i in range(per_piece):
                for j in range(width):
                    prog.window_mask[(q * SHUFFLE_WINDOWS + w) * SHUFFLE_BYTES + i * width + j] = 0x80
                if pending[i] and offsets[q * per_piece + i] + width <= start + SHUFFLE_BYTES:
                    for j in range(width):
                        prog.window_mask[(q * SHUFFLE_WINDOWS + w) * SHUFFLE_BYTES + i * width + j] = \
                            <unsigned char>(offsets[q * per_piece + i] - start + j)
                    pending[i] = False
                    pending_count -= 1
            w += 1
        prog.n_windows[q] = <unsigned char>w
    prog.n_pieces = n_items // per_piece
    pad_to_uniform(prog)


cdef void pad_to_uniform(ShuffleProgram* prog) noexcept nogil:
    """Give every piece the most windows any piece has, if that is at most
    SHUFFLE_UNIFORM_MAX and no piece has two fewer: an added window loads
    the piece's first window again and places nothing (a mask of 0x80s).
    The kernel then needs no dispatch per piece."""
    cdef intp q
    cdef int most = 0, least = SHUFFLE_WINDOWS, w, j
    prog.uniform = 0
    for q in range(prog.n_pieces):
        most = max(most, <int>prog.n_windows[q])
        least = min(least, <int>prog.n_windows[q])
    if prog.n_pieces == 0 or most > SHUFFLE_UNIFORM_MAX or most - least > 1:
        return
    for q in range(prog.n_pieces):
        for w in range(prog.n_windows[q], most):
            prog.window_offset[q * SHUFFLE_WINDOWS + w] = prog.window_offset[q * SHUFFLE_WINDOWS]
            for j in range(SHUFFLE_BYTES):
                prog.window_mask[(q * SHUFFLE_WINDOWS + w) * SHUFFLE_BYTES + j] = 0x80
        prog.n_windows[q] = <unsigned char>most
    prog.uniform = most


cdef inline void shuffle_rows(const ShuffleProgram* prog, char* dst, const char* src,
                              intp n_rows, intp dst_row, intp src_row, const intp* offsets,
                              intp n_items, intp width) noexcept nogil:
    """The gathered rows: 16-byte pieces by shuffles, the last partial piece
    item by item."""
    cdef intp first = prog.n_pieces * (SHUFFLE_BYTES // width), i
    cdef char* d
    cdef const char* s
    for i in range(n_rows):
        d = dst + i * dst_row
        s = src + i * src_row
        fb_shuffle_pieces(d, s, prog.n_pieces, prog.n_windows, prog.window_offset,
                          prog.window_mask, SHUFFLE_WINDOWS, prog.uniform)
        gather_rows(d + first * width, s, 1, 0, 0, offsets + first, n_items - first, width)


def shuffles_available():
    """Whether this build and CPU have the byte shuffles."""
    return fb_cpu_can_shuffle() != 0


def set_shuffles(bint enabled, intp min_bytes=SHUFFLE_MIN_BYTES):
    """Use byte shuffles in plans built from now on, if the CPU has them, for
    copies of ``min_bytes`` bytes or more; return the previous
    ``(enabled, min_bytes)``. For tests and benchmarks."""
    global shuffle_enabled, shuffle_min_bytes
    before = (shuffle_enabled, shuffle_min_bytes)
    shuffle_enabled = enabled and fb_cpu_can_shuffle() != 0
    shuffle_min_bytes = min_bytes
    return before
