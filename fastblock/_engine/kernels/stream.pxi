# Streaming (non-temporal) stores for large destinations.
#
# An ordinary store to a line that is not in cache first reads the line from
# memory (to own it), so a copy into a large destination moves three bytes
# per byte copied: the source read, that read of the destination, and the
# write-back. Streaming stores write whole lines without reading them (64
# MiB by 16-byte loads and stores, one thread: 8.6 ms with ordinary stores,
# 5.8 ms with streaming ones).
#
# The kernels keep their ordinary stores but, for a large copy, write each
# block into a small per-thread buffer that stays in L1; the block's
# destination rows are then streamed out of it. Streamed lines bypass the
# cache, so a destination that fits in cache (and will be read again soon)
# keeps ordinary stores: the plan streams only copies of tuning.stream_min_bytes or
# more.
#
# Only destinations whose pages are already in memory stream; the others
# fault ahead (``_engine/kernels/faults.pxi``). A fresh page is zeroed by the kernel on its
# first write, which leaves its lines in cache, and streaming over cached
# lines costs more than writing them: a new 64 MiB result took 0.85 of
# ``x.copy()`` streamed against 0.6 with ordinary stores. Three pages
# (first, middle, last) are asked (``mincore``).
#
# Streaming stores need 16-byte aligned addresses: a row's first bytes up to
# a 64-byte boundary, and its last partial line, are copied by memcpy. They
# are also weakly ordered: every thread fences after its last one. Where the
# CPU has AVX (checked at run time), whole lines go by 32-byte stores.
#
# A span's unaligned ends go by masked streaming stores (fb_stream_copy): a
# line mixing both kinds of store is the cost to avoid (64 MiB in adjacent 486-byte spans, one
# thread: masked ends 3.78 ms, ends by ordinary stores 42.0). Streaming
# does not gain everywhere: some channels_last C=3 space_to_depth cases
# run faster unstreamed, and no plan property found yet tells them apart.
#
# A span's partial last line is held back (FbHeldLine) for the span that
# continues it, the next block's, so that the line is streamed whole: a
# line streamed in two parts is written to memory twice, partly, and on a
# 16-core Xeon that dominated 64 MiB SpaceToDepth float32 bs 4 into
# NumPy's result (16 bytes past a line; 16 lane spans a block, each ending
# mid-line): 2.6 x a two-thread copy, 1.3 holding the lines, 1.1 into a
# result on a line. A span that starts mid-line, with nothing held before
# it, writes that line by ordinary stores.
#
# Staging costs time: the phases of a block (read the source, stream the
# stage out) do not overlap (two source rows interleaved by 32-byte items,
# 64 MiB, one thread: 4.0-4.3 ms streamed straight from the registers,
# 6.3-7.6 staged through 16 KiB); a kernel that streams its own stores
# would avoid both.

from fastblock._engine.types cimport intp
from fastblock._engine.kernels_c cimport (FB_STREAM_BUILT, FbHeldLine, fb_cpu_has_avx,
                                          fb_pages_resident, fb_release_line, fb_stream_avx,
                                          fb_stream_copy, fb_stream_fence, fb_stream_lines,
                                          fb_stream_span)


cdef enum:
    # The per-thread buffer a streamed block is written into (fits in L1
    # with the block's source lines).
    STAGE_BYTES = 16 * 1024
    # The stage starts this many bytes past a page boundary (it is on each
    # thread's stack). Where it started only on a line, the same copy took
    # a different time in each process, by where the stack fell (64 MiB
    # depth_to_space blocks_first channels_last C 3 bs 3 uint8, one thread:
    # 1.04-1.12 or 1.91-2.13 x np.copyto). With source and destination at
    # page offset 16, as NumPy allocates them, stage offsets 3072 and 3584
    # are the slow ones, and 0 to 2048 about even. Which load or store the
    # stage's stores are mistaken for was not found.
    PAGE_BYTES = 4096
    STAGE_PAGE_OFFSET = 1024
    # Destination bytes of a streamed kernel block (plans whose blocks are
    # sized by the block bytes; others fill up to STAGE_BYTES). A thread
    # reads a block's source, then streams it out: the smaller the block,
    # the more the two overlap (4-D block operators and Tile, two threads:
    # median 0.79 with 16 KiB blocks, 0.77 with 8 KiB, x np.copyto). 4 KiB
    # blocks lost on lane transposes, whose tiles they cut too short.
    STREAM_BLOCK_BYTES = 8 * 1024
    # Destination rows that are not whole lines stream only if at least this
    # long. Their partial end lines are flushed as partial writes, which cost
    # several times a whole line: 5-D space_to_depth float32 (rows of 256
    # bytes, 16 bytes past a line) took 0.72 x np.copyto streamed against
    # 0.51 with ordinary stores (0.51 streamed when the rows were lines).
    STREAM_MIN_ROW = 1024
    # A streamed block of short rows (two or more to this many bytes) is
    # run and streamed out this many bytes at a time, so that reading the
    # source and streaming the result overlap (64 MiB, two threads, plans
    # of gathered runs or block kernels: median 0.75 -> 0.70 x np.copyto).
    # Where its rows are one span, each piece streams up to its last line
    # boundary and holds the rest for the next (fb_stream_span): chunks ending
    # mid-line, each end streamed by a masked store, lost. Lane kernels and Tile's
    # repeats, whose set-up is paid on every call, keep whole blocks.
    STREAM_CHUNK_BYTES = 2 * 1024
    # Spans of a block whose partial last lines a thread holds (SpaceToDepth
    # bs 4 channels-first: 16, a lane split's bs x bs planes).
    HELD_SPANS = 16


cdef struct HeldLines:
    # The partial last lines of a thread's streamed spans (fb_stream_span).
    FbHeldLine span[HELD_SPANS]


cdef inline void hold_nothing(HeldLines* held) noexcept nogil:
    cdef int i
    for i in range(HELD_SPANS):
        held.span[i].n = 0


cdef inline void release_lines(HeldLines* held) noexcept nogil:
    cdef int i
    for i in range(HELD_SPANS):
        fb_release_line(&held.span[i])


cdef inline bint streams_pay(intp copy_bytes, int resident) noexcept nogil:
    """Whether a copy of ``copy_bytes`` bytes into a destination whose pages
    are ``resident`` (``fb_pages_resident``) should stream them."""
    return tuning.streaming and copy_bytes >= tuning.stream_min_bytes and resident == 1


cdef inline bint whole_lines(const char* dst, intp dst_row, intp row_bytes) noexcept nogil:
    """Whether rows of ``row_bytes`` from ``dst``, ``dst_row`` apart, are whole cache lines."""
    return (<size_t>dst % CACHE_LINE == 0 and dst_row % CACHE_LINE == 0
            and row_bytes % CACHE_LINE == 0)


cdef inline bint rows_stream(const char* dst, intp dst_row, intp n_rows, intp row_bytes,
                             const char* stream_end) noexcept nogil:
    """Whether destination rows should be streamed: whole lines, rows long
    enough that their partial lines are few, or one span (adjacent rows)
    that continues the span streamed before it (``stream_end``): its partial
    lines are then completed while still being combined. 5-D
    depth_to_space float64 (768-byte spans one after another): 0.30 x
    np.copyto streamed against 0.58."""
    if n_rows == 1 or dst_row == row_bytes:
        return dst == stream_end or n_rows * row_bytes >= STREAM_MIN_ROW
    return row_bytes >= STREAM_MIN_ROW or whole_lines(dst, dst_row, row_bytes)


cdef inline void stream_rows(HeldLines* held, char* dst, intp dst_row, const char* staged,
                             intp n_rows, intp row_bytes) noexcept nogil:
    """Stream ``n_rows`` staged rows of ``row_bytes`` (packed) to destination
    rows ``dst_row`` bytes apart; adjacent rows, or one row, go as one span
    that may continue the last (fb_stream_span)."""
    cdef intp i
    if dst_row == row_bytes or n_rows == 1:
        fb_stream_span(&held.span[0], dst, staged, n_rows * row_bytes)
        return
    for i in range(n_rows):
        fb_stream_copy(dst + i * dst_row, staged + i * row_bytes, row_bytes)


