# Streaming (non-temporal) stores for large destinations.
#
# An ordinary store to a line that is not in cache first reads the line from
# memory (to own it), so a copy into a large destination moves three bytes
# per byte copied: the source read, that read of the destination, and the
# write-back. Streaming stores write whole lines without reading them. On the
# 2-core CI machine, 64 MiB moved by 16-byte loads and stores took 8.6 ms
# with ordinary stores and 5.8 ms with streaming ones on one thread (4.2 and
# 3.2-3.4 ms on two; glibc's memcpy 7.4 and 3.7).
#
# The kernels keep their ordinary stores but, for a large copy, write each
# block into a small per-thread buffer that stays in L1; the block's
# destination rows are then streamed out of it. Streamed lines bypass the
# cache, so a destination that fits in cache (and will be read again soon)
# keeps ordinary stores: the plan streams only copies of STREAM_MIN_BYTES or
# more.
#
# Only destinations whose pages are already in memory stream; the others
# fault ahead (``_kernel_faults.pxi``). A fresh page is zeroed by the kernel on its
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
# On the 2-core AMD EPYC (Zen 4, family 25 model 17) CI machine, a C model of
# 64 MiB streamed in adjacent 486-byte spans, one thread: masked ends 3.78 ms,
# whole lines only (ends carried to the next span) 3.60, ends by ordinary
# stores 42.0, plain memcpy per span 4.83. So masked ends are the right
# choice there too; a line mixing both kinds of store is the cost to avoid.
# There, with 16-byte streaming stores and 16 KiB blocks, 39 of the 69
# target-1 cases ran faster unstreamed (two threads), by up to 0.24 x
# np.copyto; 28 gained. With 32-byte stores and 8 KiB blocks (below) and
# this engine's 2026-11-24 kernels, 31 gain 0.05 or more from streaming
# and 14 lose as much (most of them channels_last C=3 space_to_depth: a
# block of 24-byte items, 0.89 streamed against 0.75; gathered uint8 bs=3
# runs, 1.08 against 0.84). A second run of the eight channels_last C=3
# uint8 cases (9 rounds) put every one within -0.07 to +0.05, so part of
# that split is noise; no plan property found yet tells the groups apart.
#
# A C model on that machine (64 MiB, one thread, two source rows
# interleaved by 32-byte items) shows what staging costs: 32-byte streaming
# stores straight from the registers 4.0-4.3 ms (one run of five 5.1);
# staged through 16 KiB, then streamed by 16-byte stores 7.1-8.2 or by
# 32-byte ones 6.3-7.6; through 1 KiB by 32-byte ones 4.6-4.8 (np.copyto
# 6.5-7.0). The phases of a block (read the source, stream the stage out)
# do not overlap; a kernel that streams its own stores would avoid both.

from ._kernels_c cimport (FB_STREAM_BUILT, fb_cpu_has_avx, fb_pages_resident, fb_stream_avx,
                          fb_stream_copy, fb_stream_fence, fb_stream_lines)


cdef enum:
    # The per-thread buffer a streamed block is written into (fits in L1
    # with the block's source lines).
    STAGE_BYTES = 16 * 1024
    # The stage starts this many bytes past a page boundary (it is on each
    # thread's stack). Where it started only on a line, the same copy took
    # a different time in each process, by where the stack fell: on the AMD
    # EPYC (Zen 4) CI machine, 64 MiB depth_to_space blocks_first
    # channels_last C 3 bs 3 uint8, one thread, eight processes 1.04-1.12
    # or 1.91-2.13 x np.copyto; with the stack moved by 2048 bytes (and
    # address randomisation off) 1.93 three times in three. An in-process
    # sweep of the stage's page offset (source and destination at page
    # offset 16, as NumPy allocates them): 3072 and 3584 took 2.0-2.2, the
    # other offsets 0.9-1.1; in-process A/B of offsets 0-2048 over the 35
    # uint8 and Tile cases of target 1, two threads, mean 0.699 / 0.688 /
    # 0.686 / 0.698 / 0.704 x np.copyto, 0 best for space_to_depth
    # channels_last C 3 bs 3 (0.67 against 0.74-0.83) and worst for
    # depth_to_space channels_last C 3 bs 2 (0.67 against 0.57-0.59). Which
    # load or store the stage's stores are mistaken for was not found.
    PAGE_BYTES = 4096
    STAGE_PAGE_OFFSET = 1024
    # Destination bytes of a streamed kernel block (plans whose blocks are
    # sized by the block bytes; others fill up to STAGE_BYTES). A thread
    # reads a block's source, then streams it out: the smaller the block,
    # the more the two overlap. On the AMD EPYC (Zen 4) CI machine, the 67
    # target-1 cases of 4-D block operators and Tile, two threads, x
    # np.copyto, 16-byte stores: 16 KiB blocks median 0.81 (mean 0.81);
    # 32-byte stores 0.79 (0.78), and with 8 KiB blocks 0.77 (0.76), 24
    # cases gaining 0.05 or more, 1 losing as much (in-process A/B). In a C
    # model (two rows interleaved by 32-byte halves, 64 MiB, one thread,
    # 16-byte stores) 4 KiB blocks took 5.6-6.1 ms against 6.7-8.4 for
    # 16 KiB, but in the engine
    # they lost on lane transposes (space_to_depth channels_first bs 3
    # float32, one thread: 1.05 -> 2.88), whose tiles they cut too short.
    STREAM_BLOCK_BYTES = 8 * 1024
    # Destination rows that are not whole lines stream only if at least this
    # long. Their partial end lines are flushed as partial writes, which cost
    # several times a whole line: 5-D space_to_depth float32 (rows of 256
    # bytes, 16 bytes past a line) took 0.72 x np.copyto streamed against
    # 0.51 with ordinary stores (0.51 streamed when the rows were lines).
    STREAM_MIN_ROW = 1024
    # A streamed block of short rows (two or more to this many bytes) is
    # run and streamed out this many bytes at a time, so that reading the
    # source and streaming the result overlap (the C model above: a 1 KiB
    # stage nearly matches streaming from registers). Where its rows are
    # one span, each piece streams up to its last line boundary and carries
    # the rest into the next: chunks ending mid-line, each end streamed by
    # a masked store, lost (channels_last C=3 bs=3 float32, rows of 108
    # bytes: 0.87 -> 1.34 and 1.02 x np.copyto). Lane kernels and Tile's
    # repeats, whose set-up is paid on every call, keep whole blocks (they
    # lost 0.16 to 0.57 at two threads). 64 MiB, two threads, in-process
    # A/B of the 41 target-1 cases whose plans take gathered runs or block
    # kernels: median 0.75 -> 0.70 (1 KiB: 0.72), channels_last C=16
    # blocks_first space_to_depth 0.64-0.70 -> 0.48-0.50, depth_to_space
    # NCHW_VECT_C blocks_first float32 0.68 -> 0.60, bs=3 0.58 -> 0.54.
    STREAM_CHUNK_BYTES = 2 * 1024

# Copies of this many bytes or more stream their destination: well past the
# 2 MiB L2 of the CI machine's cores, where the destination would be evicted
# before it is read again anyway.
cdef intp STREAM_MIN_BYTES = 8 * 1024 * 1024


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


cdef inline void stream_rows(char* dst, intp dst_row, const char* staged, intp n_rows,
                             intp row_bytes) noexcept nogil:
    """Stream ``n_rows`` staged rows of ``row_bytes`` (packed) to destination
    rows ``dst_row`` bytes apart; adjacent rows go as one span."""
    cdef intp i
    if dst_row == row_bytes:
        fb_stream_copy(dst, staged, n_rows * row_bytes)
        return
    for i in range(n_rows):
        fb_stream_copy(dst + i * dst_row, staged + i * row_bytes, row_bytes)


