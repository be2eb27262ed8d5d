# The runner: a Plan's kernel blocks over a range of its loop (run_range),
# each block streamed or faulted ahead as the plan says. The one switch on
# the plan's kernel is run_kernel.

from libc.string cimport memmove

from ._engine_types cimport (BlockCopy, KERNEL_BLOCK, KERNEL_GATHER, KERNEL_LANES, KERNEL_TRANSPOSE, MAX_LOOP,
                             Plan, ShuffleProgram, TRANSPOSE_MAX, intp)
from ._kernels_c cimport (fb_lanes_rows, fb_stream_copy, fb_stream_fence, fb_stream_lines,
                          fb_transpose_runs)


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
        fb_lanes_rows(dst, src, size_a, dst_a, p.src_a, size_b, p.lanes.n_lanes,
                      offsets, p.lanes.masks, p.lanes.interleave, <int>p.width)
    elif not staged:
        run_block_copy(p, &p.block_copy, dst, src, size_a, size_b, dst_a)
    else:
        # The stage's rows are size_b items apart: one item apart in a block
        # one item wide, which its size alone tells.
        run_block_copy(p, &p.staged_column_copy if size_b == 1 else &p.staged_copy, dst, src,
                       size_a, size_b, dst_a)


cdef inline void run_block_copy(const Plan* p, const BlockCopy* how, char* dst, const char* src,
                                intp size_a, intp size_b, intp dst_a) noexcept nogil:
    """A block of the block kernel by the plan's loop (``how``), the a axis
    inside where it says."""
    if how.a_inside:
        copy_block(how.loop, dst, src, size_b, size_a, p.dst_b, dst_a, p.src_b, p.src_a, p.width)
    else:
        copy_block(how.loop, dst, src, size_a, size_b, dst_a, p.dst_b, p.src_a, p.src_b, p.width)


cdef struct BlockRows:
    # Where one kernel block writes: n_rows destination rows, each spanning
    # row_bytes bytes (its items contiguous where packed), row i at
    # (i // per_table) * step + table[i % per_table] (table NULL: i * step).
    intp n_rows, row_bytes, step, per_table
    const intp* table
    bint packed


cdef void block_rows(const Plan* p, intp run, intp size_a, intp size_b,
                     BlockRows* rows) noexcept nogil:
    """The destination rows of a kernel block of ``size_a`` x ``size_b``
    (a gathered block: ``run`` items a row), for streaming and faulting."""
    rows.n_rows = size_a
    rows.step = p.dst_a
    rows.table = NULL
    rows.per_table = 1
    rows.packed = True
    if p.kernel == KERNEL_TRANSPOSE:
        rows.n_rows = size_a * p.a_in
        rows.row_bytes = size_b * p.b_in * p.width
        rows.step = 0
        rows.table = &p.transpose_rows[0]
        rows.per_table = rows.n_rows
    elif p.kernel == KERNEL_GATHER:
        rows.row_bytes = run * p.width
    elif p.kernel == KERNEL_LANES and p.lanes.interleave:
        rows.row_bytes = size_b * p.width * p.lanes.n_lanes
    elif p.kernel == KERNEL_LANES:
        # A split: each lane's rows, placed by the lane offsets.
        rows.n_rows = size_a * p.lanes.n_lanes
        rows.row_bytes = size_b * p.width
        rows.table = &p.lanes.offset[0]
        rows.per_table = p.lanes.n_lanes
    else:
        rows.row_bytes = (size_b - 1) * p.dst_b + p.width
        rows.packed = p.dst_b == p.width


cdef bint run_streamed(const Plan* p, const ShuffleProgram* program, intp run, char* dst,
                       const char* src, intp size_a, intp size_b, char* stage,
                       char** stream_end) noexcept nogil:
    """Run one kernel block into ``stage`` (packed rows) and stream its rows
    to the destination; False (nothing done) when the block's destination is
    not whole rows that fit the stage, or its rows are short and apart.
    ``stream_end``: where the last streamed row ended (updated)."""
    cdef BlockRows rows
    cdef intp row_bytes, n_rows, i, chunk, table_rows
    cdef const intp* table
    cdef intp staged_offset[TRANSPOSE_MAX]
    cdef bint streams
    if p.kernel == KERNEL_TRANSPOSE:
        return stream_transpose(p, dst, src, size_a, size_b, stage)
    block_rows(p, run, size_a, size_b, &rows)
    if not rows.packed:
        return False
    row_bytes = rows.row_bytes
    n_rows = rows.n_rows
    table = rows.table
    table_rows = rows.per_table
    if table == NULL and size_a > 1 and p.dst_a < row_bytes:
        return False
    if n_rows * row_bytes > STAGE_BYTES:
        return False
    if table != NULL:
        # Rows apart: each must be long or whole lines.
        if row_bytes < STREAM_MIN_ROW:
            if not whole_lines(dst, p.dst_a, row_bytes):
                return False
            for i in range(table_rows):
                if table[i] % CACHE_LINE != 0:
                    return False
    else:
        # Where this block's rows end, streamed or not: the next block may
        # continue them.
        streams = rows_stream(dst, p.dst_a, size_a, row_bytes, stream_end[0])
        stream_end[0] = dst + (size_a - 1) * p.dst_a + row_bytes
        if not streams:
            return False
    if p.kernel == KERNEL_BLOCK and p.src_b == p.width:
        # Contiguous on both sides: stream straight from the source.
        for i in range(size_a):
            fb_stream_copy(dst + i * p.dst_a, src + i * p.src_a, row_bytes)
        return True
    if table != NULL:
        for i in range(table_rows):
            staged_offset[i] = i * row_bytes
        run_kernel(p, program, run, stage, src, size_a, size_b, table_rows * row_bytes, staged_offset,
                   True)
        for i in range(n_rows):
            fb_stream_copy(dst + (i // table_rows) * p.dst_a + table[i % table_rows],
                           stage + i * row_bytes, row_bytes)
        return True
    # Gathered runs go a row at a time if their rows are longer than a
    # chunk; block kernels keep such blocks whole (they lost 0.09, rows of
    # 2 KiB apart).
    chunk = imax(STREAM_CHUNK_BYTES // row_bytes, 1 if p.kernel == KERNEL_GATHER else 0)
    if p.kernel == KERNEL_LANES or (p.kernel == KERNEL_BLOCK and p.src_b == 0) \
            or not 1 <= chunk < size_a:
        run_kernel(p, program, run, stage, src, size_a, size_b, row_bytes, p.lanes.offset, True)
        stream_rows(dst, p.dst_a, stage, size_a, row_bytes)
    else:
        stream_in_chunks(p, program, run, dst, src, size_a, size_b, row_bytes, chunk, stage)
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
                           intp chunk, char* stage) noexcept nogil:
    """``run_streamed`` for a block of short rows (gathered runs, block
    kernels): ``chunk`` rows at a time. Rows that are one
    span stream each chunk up to its last line boundary and carry the bytes
    past it into the next, so no line is streamed in two parts."""
    cdef intp i = 0, n_rows, carry = 0, held, cut
    if p.dst_a != row_bytes:
        while i < size_a:
            n_rows = imin(chunk, size_a - i)
            run_kernel(p, program, run, stage, src + i * p.src_a, n_rows, size_b, row_bytes,
                       p.lanes.offset, True)
            stream_rows(dst + i * p.dst_a, p.dst_a, stage, n_rows, row_bytes)
            i += n_rows
        return
    while i < size_a:
        n_rows = imin(chunk, size_a - i)
        run_kernel(p, program, run, stage + carry, src + i * p.src_a, n_rows, size_b, row_bytes,
                   p.lanes.offset, True)
        held = carry + n_rows * row_bytes
        i += n_rows
        if i == size_a:
            fb_stream_copy(dst, stage, held)
            return
        # The bytes up to the last line boundary go now, the rest later.
        cut = <intp>(<size_t>(dst + held) & ~(<size_t>CACHE_LINE - 1)) - <intp>dst
        if cut > 0:
            fb_stream_copy(dst, stage, cut)
            memmove(stage, stage + cut, held - cut)
            dst += cut
            held -= cut
        carry = held


cdef void fault_block(const Plan* p, RecentPages* recent, intp run, const char* dst, intp size_a,
                      intp size_b) noexcept nogil:
    """Fault ahead the huge pages one kernel block (one part of it) writes:
    its destination rows (block_rows)."""
    cdef BlockRows rows
    cdef intp i
    block_rows(p, run, size_a, size_b, &rows)
    if rows.table == NULL:
        fault_rows(recent, dst, rows.n_rows, rows.step, rows.row_bytes, p.dst_end)
        return
    for i in range(rows.per_table):
        fault_rows(recent, dst + rows.table[i], rows.n_rows // rows.per_table, rows.step,
                   rows.row_bytes, p.dst_end)


cdef inline void run_block(const Plan* p, const ShuffleProgram* program, intp run, char* block_dst,
                           const char* block_src, intp size_a, intp size_b, char* stage,
                           char** stream_end, RecentPages* recent, int faults) noexcept nogil:
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
                                 block_src + p.src_offsets[0], size_a, size_b, stage, stream_end):
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
                          &recent, faults)
            run_block(p, &p.tail_shuffle, p.gather_tail_len, block_dst + size_a * p.dst_a,
                      block_src + size_a * p.src_a, 1, size_b, stage, &stream_end, &recent, faults)
        else:
            run_block(p, program, run, block_dst, block_src, size_a, size_b, stage, &stream_end,
                      &recent, faults)
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
        fb_stream_fence()
