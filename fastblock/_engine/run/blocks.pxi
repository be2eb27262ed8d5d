# The runner: a Plan's kernel blocks over a range of its loop (run_range),
# each block streamed or faulted ahead as the plan says. The one switch on
# the plan's kernel is run_kernel.

from fastblock._engine.types cimport (BlockCopy, KERNEL_BLOCK, KERNEL_GATHER, KERNEL_LANES,
                                      KERNEL_TRANSPOSE, LANES_MAX, MAX_LOOP, Plan, ShuffleProgram,
                                      intp)
from fastblock._engine.kernels_c cimport (FbLaneRows, fb_lanes_rows_wide,
                                          fb_prefetch_run, fb_stream_copy, fb_stream_fence,
                                          fb_stream_lines, fb_stream_span, fb_transpose_runs)


cdef inline void run_kernel(const Plan* p, const ShuffleProgram* program, intp run,
                            char* dst, const char* src, intp size_a, intp size_b, intp dst_a,
                            const intp* offsets, bint staged) noexcept nogil:
    """One kernel block, its rows ``dst_a`` bytes apart in the destination,
    or in the stream stage (``staged``: packed rows).
    ``offsets``: the lanes' offsets of a lane transpose (destination for a
    split, source for an interleave), the destination rows of a transpose."""
    if p.kernel == KERNEL_TRANSPOSE:
        transpose_block(dst, src, size_a * p.a_in, size_b * p.b_in, offsets, p.gather, p.width,
                        p.transpose_staged, p.source_ahead)
    elif p.kernel == KERNEL_GATHER:
        if program.n_pieces:
            shuffle_rows(program, dst, src, size_a, dst_a, p.src_a)
        else:
            gather_rows(dst, src, size_a, dst_a, p.src_a, p.gather, run, p.width)
    elif p.kernel == KERNEL_LANES:
        run_lanes(p, dst, src, size_a, size_b, dst_a, p.lanes.dst_in, offsets)
    elif not staged:
        run_block_copy(p, &p.block_copy, dst, src, size_a, size_b, dst_a)
    else:
        # The stage's rows are size_b items apart: one item apart in a block
        # one item wide, which its size alone tells.
        run_block_copy(p, &p.staged_column_copy if size_b == 1 else &p.staged_copy, dst, src,
                       size_a, size_b, dst_a)


cdef inline void run_lanes(const Plan* p, char* dst, const char* src, intp size_a, intp size_b,
                           intp dst_a, intp dst_in, const intp* offsets) noexcept nogil:
    """A lane transpose's block: ``size_a`` groups of rows ``dst_a`` bytes
    apart, their rows ``dst_in`` apart, each of ``size_b`` pixels."""
    cdef FbLaneRows rows
    cdef intp l, run = size_b * p.width
    if rows_across_groups(p, dst_a, dst_in, offsets):
        rows.n_groups = p.lanes.rows_in
        rows.dst_group = dst_in
        rows.src_group = p.lanes.src_in
        rows.n_in = size_a
        rows.dst_in = dst_a
        rows.src_in = p.src_a
    else:
        rows.n_groups = size_a
        rows.dst_group = dst_a
        rows.src_group = p.src_a
        rows.n_in = p.lanes.rows_in
        rows.dst_in = dst_in
        rows.src_in = p.lanes.src_in
    # Many lanes are more read streams than the hardware follows: a copy
    # from memory asks for each lane's run two blocks on (channels-first
    # to channels-last float32, 64 channels, one thread: 32 MiB 4.5 x
    # np.copyto -> 1.3, 16 MiB 2.2 -> 1.9). Copies in cache do not ask:
    # there it cost up to a tenth.
    if p.lanes.interleave and p.lanes.n_lanes > 8 and tuning.prefetch and size_a == 1 \
            and p.lanes.rows_in == 1 and p.copy_bytes >= tuning.stream_min_bytes:
        for l in range(p.lanes.n_lanes):
            fb_prefetch_run(src + offsets[l] + 2 * run, run)
    if lanes_by_permutes(p, size_b):
        fb_lanes_rows_wide(dst, src, &rows, size_b, p.lanes.n_lanes, offsets, p.lanes.interleave,
                           <int>p.width)
    else:
        p.lanes.rows_kernel(dst, src, &rows, size_b, p.lanes.n_lanes, offsets, p.lanes.masks,
                            p.lanes.interleave, <int>p.width)


cdef inline void run_block_copy(const Plan* p, const BlockCopy* how, char* dst, const char* src,
                                intp size_a, intp size_b, intp dst_a) noexcept nogil:
    """A block of the block kernel by the plan's loop (``how``), the a axis
    inside where it says."""
    if how.a_inside:
        copy_block(how.loop, dst, src, size_b, size_a, p.dst_b, dst_a, p.src_b, p.src_a, p.width)
    else:
        copy_block(how.loop, dst, src, size_a, size_b, dst_a, p.dst_b, p.src_a, p.src_b, p.width)


cdef struct BlockRows:
    # Where one kernel block writes: n_rows destination rows ``step`` apart,
    # each spanning row_bytes bytes (its items contiguous where packed); a
    # table (not NULL) repeats them at each of its per_table offsets (a
    # transpose's rows, a split's lanes), and a split's groups at each of
    # n_in offsets in_step apart. Row (i, m, t) at i * step + m * in_step +
    # table[t].
    intp n_rows, row_bytes, step, n_in, in_step, per_table
    const intp* table
    bint packed


cdef void block_rows(const Plan* p, intp run, intp size_a, intp size_b,
                     BlockRows* rows) noexcept nogil:
    """The destination rows of a kernel block of ``size_a`` x ``size_b``
    (a gathered block: ``run`` items a row), for streaming and faulting."""
    rows.n_rows = size_a
    rows.step = p.dst_a
    rows.n_in = 1
    rows.in_step = 0
    rows.table = NULL
    rows.per_table = 1
    rows.packed = True
    if p.kernel == KERNEL_TRANSPOSE:
        rows.n_rows = 1
        rows.row_bytes = size_b * p.b_in * p.width
        rows.table = &p.transpose_rows[0]
        rows.per_table = size_a * p.a_in
    elif p.kernel == KERNEL_GATHER:
        rows.row_bytes = run * p.width
    elif p.kernel == KERNEL_LANES and p.lanes.interleave:
        # A group of interleaved rows is one span (group_lane_rows).
        rows.row_bytes = size_b * p.width * p.lanes.n_lanes * p.lanes.rows_in
    elif p.kernel == KERNEL_LANES:
        # A split: each lane's rows, placed by the lane offsets.
        rows.row_bytes = size_b * p.width
        rows.n_in = p.lanes.rows_in
        rows.in_step = p.lanes.dst_in
        rows.table = &p.lanes.offset[0]
        rows.per_table = p.lanes.n_lanes
    else:
        rows.row_bytes = (size_b - 1) * p.dst_b + p.width
        rows.packed = p.dst_b == p.width


cdef bint run_streamed(const Plan* p, const ShuffleProgram* program, intp run, char* dst,
                       const char* src, intp size_a, intp size_b, char* stage,
                       char** stream_end, HeldLines* held) noexcept nogil:
    """Run one kernel block into ``stage`` (packed rows) and stream its rows
    to the destination; False (nothing done) when the block's destination is
    not whole rows that fit the stage, or its rows are short and apart.
    ``stream_end``: where the last streamed row ended (updated); ``held``:
    the partial last lines of the spans streamed so far (fb_stream_span)."""
    cdef BlockRows rows
    cdef intp row_bytes, i, chunk
    cdef bint streams
    if p.kernel == KERNEL_TRANSPOSE:
        return stream_transpose(p, dst, src, size_a, size_b, stage)
    if p.kernel == KERNEL_LANES and not p.lanes.interleave:
        return stream_lane_split(p, dst, src, size_a, size_b, stage, held)
    block_rows(p, run, size_a, size_b, &rows)
    if not rows.packed:
        return False
    row_bytes = rows.row_bytes
    if size_a > 1 and p.dst_a < row_bytes:
        return False
    if size_a * row_bytes > STAGE_BYTES:
        return False
    # Where this block's rows end, streamed or not: the next block may
    # continue them.
    streams = rows_stream(dst, p.dst_a, size_a, row_bytes, stream_end[0])
    stream_end[0] = dst + (size_a - 1) * p.dst_a + row_bytes
    if not streams:
        return False
    if p.kernel == KERNEL_BLOCK and p.src_b == p.width:
        # Contiguous on both sides: stream straight from the source.
        for i in range(size_a):
            if p.dst_a == row_bytes or size_a == 1:
                fb_stream_span(&held.span[0], dst + i * row_bytes, src + i * p.src_a, row_bytes)
            else:
                fb_stream_copy(dst + i * p.dst_a, src + i * p.src_a, row_bytes)
        return True
    # Gathered runs go a row at a time if their rows are longer than a
    # chunk; block kernels keep such blocks whole (they lost 0.09, rows of
    # 2 KiB apart).
    chunk = imax(STREAM_CHUNK_BYTES // row_bytes, 1 if p.kernel == KERNEL_GATHER else 0)
    if p.kernel == KERNEL_LANES or (p.kernel == KERNEL_BLOCK and p.src_b == 0) \
            or not 1 <= chunk < size_a:
        run_kernel(p, program, run, stage, src, size_a, size_b, row_bytes, p.lanes.offset, True)
        stream_rows(held, dst, p.dst_a, stage, size_a, row_bytes)
    else:
        stream_in_chunks(p, program, run, dst, src, size_a, size_b, row_bytes, chunk, stage, held)
    return True


cdef bint stream_lane_split(const Plan* p, char* dst, const char* src, intp size_a, intp size_b,
                            char* stage, HeldLines* held) noexcept nogil:
    """``run_streamed`` for a lane split: each lane's rows of a block go
    into the stage one after another, and stream out as one run where the
    destination rows follow each other too (``dst_a`` one row: SpaceToDepth
    channels-first, whose next block continues the run: the first
    HELD_SPANS runs hold their partial last lines for it), else row by row.
    False (nothing done) when the block does not fit the stage, or its runs
    are short and not whole lines."""
    cdef intp row_bytes = size_b * p.width, n_in = p.lanes.rows_in, n_lanes = p.lanes.n_lanes
    cdef bint runs = p.dst_a == row_bytes
    cdef intp lane_bytes = size_a * row_bytes, i, m, l, k
    cdef char* at
    cdef const char* staged
    cdef intp staged_offset[LANES_MAX]
    if n_in * n_lanes * lane_bytes > STAGE_BYTES:
        return False
    if not runs and row_bytes < STREAM_MIN_ROW:
        if not whole_lines(dst, p.dst_a, row_bytes) or p.lanes.dst_in % CACHE_LINE != 0:
            return False
        for l in range(n_lanes):
            if p.lanes.offset[l] % CACHE_LINE != 0:
                return False
    staged_offset[0] = 0
    for l in range(1, n_lanes):
        staged_offset[l] = l * lane_bytes
    run_lanes(p, stage, src, size_a, size_b, row_bytes, n_lanes * lane_bytes, staged_offset)
    for m in range(n_in):
        for l in range(n_lanes):
            at = dst + m * p.lanes.dst_in + p.lanes.offset[l]
            k = m * n_lanes + l
            staged = stage + k * lane_bytes
            if runs and k < HELD_SPANS:
                fb_stream_span(&held.span[k], at, staged, lane_bytes)
            elif runs:
                fb_stream_copy(at, staged, lane_bytes)
            else:
                for i in range(size_a):
                    fb_stream_copy(at + i * p.dst_a, staged + i * row_bytes, row_bytes)
    return True


cdef bint stream_transpose(const Plan* p, char* dst, const char* src, intp size_a, intp size_b,
                           char* stage) noexcept nogil:
    """``run_streamed`` for a transpose block: into the stage in source
    order (``fb_transpose_runs``, which asks for the source of the block two
    blocks on), then out by streaming stores, the partial lines at the ends
    of its rows by ordinary ones; rows side by side go as one span. False
    (nothing done) when the block does not fit the stage, or its rows are
    apart and under two lines long. (Streaming from the register tiles
    wrote 16 bytes of many lines at a time: 2-D float32 4096 x 4096, 2.48
    against 0.77 x np.copyto.)"""
    cdef intp row_bytes = size_b * p.b_in * p.width, n_rows = size_a * p.a_in, i
    cdef bint span = True
    if n_rows * row_bytes > STAGE_BYTES:
        return False
    for i in range(n_rows):
        if p.transpose_rows[i] != i * row_bytes:
            span = False
            break
    if not span and row_bytes < 2 * CACHE_LINE:
        return False
    fb_transpose_runs(stage, src, n_rows, size_b * p.b_in, p.gather, row_bytes, p.width,
                      p.source_ahead)
    if span:
        fb_stream_lines(dst, stage, n_rows * row_bytes)
    else:
        for i in range(n_rows):
            fb_stream_lines(dst + p.transpose_rows[i], stage + i * row_bytes, row_bytes)
    return True


cdef void stream_in_chunks(const Plan* p, const ShuffleProgram* program, intp run, char* dst,
                           const char* src, intp size_a, intp size_b, intp row_bytes,
                           intp chunk, char* stage, HeldLines* held) noexcept nogil:
    """``run_streamed`` for a block of short rows (gathered runs, block
    kernels): ``chunk`` rows at a time (stream_rows: rows that are one
    span go whole lines only)."""
    cdef intp i = 0, n_rows
    while i < size_a:
        n_rows = imin(chunk, size_a - i)
        run_kernel(p, program, run, stage, src + i * p.src_a, n_rows, size_b, row_bytes,
                   p.lanes.offset, True)
        stream_rows(held, dst + i * p.dst_a, p.dst_a, stage, n_rows, row_bytes)
        i += n_rows


cdef void fault_block(const Plan* p, RecentPages* recent, intp run, const char* dst, intp size_a,
                      intp size_b) noexcept nogil:
    """Fault ahead the huge pages one kernel block (one part of it) writes:
    its destination rows (block_rows)."""
    cdef BlockRows rows
    cdef intp m, t
    block_rows(p, run, size_a, size_b, &rows)
    for m in range(rows.n_in):
        for t in range(rows.per_table):
            fault_rows(recent, dst + m * rows.in_step + (0 if rows.table == NULL else rows.table[t]),
                       rows.n_rows, rows.step, rows.row_bytes, p.dst_end)


cdef inline void run_block(const Plan* p, const ShuffleProgram* program, intp run, char* block_dst,
                           const char* block_src, intp size_a, intp size_b, char* stage,
                           char** stream_end, HeldLines* held, RecentPages* recent,
                           int faults) noexcept nogil:
    """One kernel block, streamed (``run_streamed``) or once for every part,
    its fresh pages faulted ahead (``fault_block``) unless ``faults`` says
    they are in place; with FAULTS_ONLY, only that."""
    cdef intp part
    # The rows' offsets a kernel takes: a transpose's destination rows, or the lanes'.
    cdef const intp* offsets = &p.lanes.offset[0]
    if p.kernel == KERNEL_TRANSPOSE:
        offsets = &p.transpose_rows[0]
    if p.fault_ahead and faults != FAULTS_NONE:
        for part in range(p.n_parts):
            fault_block(p, recent, run, block_dst + p.dst_offsets[part], size_a, size_b)
    if faults == FAULTS_ONLY:
        return
    if p.stream and run_streamed(p, program, run, block_dst + p.dst_offsets[0],
                                 block_src + p.src_offsets[0], size_a, size_b, stage, stream_end,
                                 held):
        return
    for part in range(p.n_parts):
        run_kernel(p, program, run, block_dst + p.dst_offsets[part], block_src + p.src_offsets[part],
                   size_a, size_b, p.dst_a, offsets, False)


cdef void run_range(const Plan* p, char* dst0, const char* src0, intp start, intp stop,
                    int faults=FAULTS_OWN) noexcept nogil:
    """Run loop iterations ``start`` to ``stop`` (linear odometer positions),
    each kernel block once for every part; ``faults``: who faults fresh
    pages (run_units)."""
    cdef intp idx[MAX_LOOP]
    cdef intp rem = start, it, size_a, size_b, run, b_back
    cdef const ShuffleProgram* program
    cdef char* block_dst
    cdef const char* block_src
    cdef char stage_memory[STAGE_BYTES + PAGE_BYTES + STAGE_PAGE_OFFSET]
    cdef char* stage = stage_memory + ((PAGE_BYTES - (<size_t>stage_memory & (PAGE_BYTES - 1)))
                                       & (PAGE_BYTES - 1)) + STAGE_PAGE_OFFSET
    cdef char* stream_end = NULL
    cdef HeldLines held
    cdef RecentPages recent
    cdef int k, n = p.n_loop
    cdef char* dst = dst0
    cdef const char* src = src0
    for k in range(n - 1, -1, -1):
        idx[k] = rem % p.extent[k]
        rem = rem // p.extent[k]
        src += idx[k] * p.src_step[k]
        dst += idx[k] * p.dst_step[k]
    forget_pages(&recent)
    if p.stream:
        hold_nothing(&held)
    for it in range(start, stop):
        size_a = imin(p.tile_a, p.n_a - idx[p.a_loop] * p.tile_a)
        # b tiles after the first start b_shift items back (line_phase).
        b_back = p.b_shift if idx[p.b_loop] > 0 else 0
        size_b = imin(p.tile_b - p.b_shift + b_back, p.n_b - idx[p.b_loop] * p.tile_b + b_back)
        block_dst = dst - b_back * p.dst_b
        block_src = src - b_back * p.src_b
        run = p.gather_len
        program = &p.shuffle
        if p.ragged_loop >= 0 and idx[p.ragged_loop] == p.extent[p.ragged_loop] - 1:
            run = p.gather_tail_len
            program = &p.tail_shuffle
        if p.ragged_rows and idx[p.a_loop] * p.tile_a + size_a == p.n_a:
            # The block's last row is the shorter run.
            size_a -= 1
            if size_a:
                run_block(p, program, run, block_dst, block_src, size_a, size_b, stage, &stream_end,
                          &held, &recent, faults)
            run_block(p, &p.tail_shuffle, p.gather_tail_len, block_dst + size_a * p.dst_a,
                      block_src + size_a * p.src_a, 1, size_b, stage, &stream_end, &held,
                      &recent, faults)
        else:
            run_block(p, program, run, block_dst, block_src, size_a, size_b, stage, &stream_end,
                      &held, &recent, faults)
        k = n - 1
        while k >= 0:
            idx[k] += 1
            src += p.src_step[k]
            dst += p.dst_step[k]
            if idx[k] < p.extent[k]:
                break
            src -= p.extent[k] * p.src_step[k]
            dst -= p.extent[k] * p.dst_step[k]
            idx[k] = 0
            k -= 1
    if p.stream:
        release_lines(&held)
        fb_stream_fence()
