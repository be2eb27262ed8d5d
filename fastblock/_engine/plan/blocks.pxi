# Planner step 4 (_engine/plan/planner.pxi): the sizes of the kernel's blocks
# (plan_memory; the tiles, which step 3 weighs as it chooses), the kernel
# axes into the plan (set_kernel_axes), and the loop over the other axes
# and the tiles (build_loop), ordered to follow the source where that pays.

from fastblock._engine.types cimport (Axes, KERNEL_BLOCK, KERNEL_GATHER, KERNEL_LANES,
                                      KERNEL_TRANSPOSE, KernelAxes, LANE_GROUP, Plan, intp)
from fastblock._engine.kernels_c cimport fb_pages_resident


cdef void plan_memory(Plan* p, intp total, intp reach, intp itemsize, intp n_parts,
                      intp whole_bytes, const char* dst, bint staged) noexcept nogil:
    """The copy's bytes (``total`` a part, ``reach`` from its first
    destination byte to its last item), its block bytes, and whether its
    destination streams or faults ahead (build_plan's ``whole_bytes`` and
    ``staged``)."""
    cdef intp part_bytes
    cdef int resident
    p.total_bytes = total
    p.n_parts = n_parts
    p.copy_bytes = imax(total * n_parts, whole_bytes)
    p.block_bytes = imax(tuning.block_bytes // n_parts, tuning.min_block_bytes)
    p.dst_end = dst + reach + itemsize
    # Bytes one part writes, or the whole result of a plan run block by block.
    part_bytes = imax(total, whole_bytes)
    # Asking which pages are resident takes three system calls (a few us):
    # only copies large enough to stream or to fault ahead ask.
    resident = -1
    if dst != NULL and not staged \
            and part_bytes >= imin(tuning.stream_min_bytes, tuning.fault_ahead_min_bytes):
        resident = fb_pages_resident(dst, p.dst_end)
    # Parts write neighbouring bytes of the same lines: those stay ordinary.
    p.stream = n_parts == 1 and streams_pay(part_bytes, resident)
    # (A copy in parts moves dst_end past its last part: copy_parts.)
    p.fault_ahead = faults_pay(part_bytes, resident)
    if p.stream:
        p.block_bytes = STREAM_BLOCK_BYTES


cdef void lane_tiles(Plan* p, intp n_pixels) noexcept nogil:
    """A lane transpose's tiles: whole groups of LANE_GROUP pixels, as many
    rows (of rows_in rows each) as fill the block bytes."""
    cdef intp pixel_bytes = p.lanes.n_lanes * p.width
    p.tile_b = imin(n_pixels, imax(LANE_GROUP, p.block_bytes // (pixel_bytes * LANE_GROUP) * LANE_GROUP))
    p.tile_a = imax(1, p.block_bytes // (p.tile_b * pixel_bytes * p.lanes.rows_in))


cdef void block_tiles(Plan* p, intp n_b) noexcept nogil:
    """The block kernel's tiles: as many items of b, then rows of a, as fill
    the block bytes."""
    p.tile_b = imin(n_b, imax(1, p.block_bytes // p.width))
    p.tile_a = imax(1, p.block_bytes // (p.tile_b * p.width))


cdef void strided_transpose_tiles(Plan* p, intp n_a, intp n_b) noexcept nogil:
    """A strided or small transpose in the block kernel: tiles that fit in
    L1, item by item; a short side leaves its share to the other."""
    cdef intp edge = transpose_tile_edge(p.width)
    p.tile_a = imin(n_a, edge)
    p.tile_b = imin(n_b, edge)
    if p.tile_a < edge:
        p.tile_b = imin(n_b, imax(edge, TRANSPOSE_BYTES // (p.tile_a * p.width)))
    elif p.tile_b < edge:
        p.tile_a = imin(n_a, imax(edge, TRANSPOSE_BYTES // (p.tile_b * p.width)))


cdef void set_kernel_axes(Plan* p, const Axes* axes, const KernelAxes* k) noexcept nogil:
    """The kernel's a and b axes into the plan (a gathered run has no b
    axis, and its rows fill the block bytes), and the block kernel's loops."""
    if p.kernel == KERNEL_GATHER:
        p.n_b = 1; p.src_b = 0; p.dst_b = 0; p.tile_b = 1
        p.tile_a = imax(1, p.block_bytes // (p.gather_len * p.width))
    else:
        p.n_b = axes.extent[k.b]; p.src_b = axes.src_step[k.b]; p.dst_b = axes.dst_step[k.b]
    if k.a >= 0:
        p.n_a = axes.extent[k.a]; p.src_a = axes.src_step[k.a]; p.dst_a = axes.dst_step[k.a]
    else:
        p.n_a = 1; p.src_a = 0; p.dst_a = 0
    p.tile_a = imin(p.tile_a, p.n_a)
    if p.kernel == KERNEL_BLOCK:
        choose_block_copy(&p.block_copy, p, p.dst_a, p.tile_b)
        # Into the stream stage, a block's rows are packed (run_streamed):
        # one item apart where the block is one item wide.
        choose_block_copy(&p.staged_copy, p, p.tile_b * p.width, p.tile_b)
        choose_block_copy(&p.staged_column_copy, p, p.width, 1)


cdef void build_loop(Plan* p, const Axes* axes, const KernelAxes* k, const char* dst) noexcept nogil:
    """The loop: the axes outside the kernel's, outermost first, then the
    tile counters of a and of b (the first b tile of a transpose shortened
    to start the others on a line: line_phase); reordered to follow the
    source where that pays (continue_source_run, follow_source)."""
    cdef intp n_tiles_a, n_tiles_b
    cdef int i
    loop_outer_axes(p, axes, k)
    n_tiles_a = (p.n_a + p.tile_a - 1) // p.tile_a
    p.b_shift = line_phase(p, dst) if p.kernel == KERNEL_TRANSPOSE else 0
    n_tiles_b = (p.n_b + p.b_shift + p.tile_b - 1) // p.tile_b
    if n_tiles_a == 1 and n_tiles_b == 1 and p.kernel == KERNEL_BLOCK:
        continue_source_run(p, axes.extent[k.b], axes.src_step[k.b])
    p.extent[p.n_loop] = n_tiles_a
    p.src_step[p.n_loop] = p.tile_a * p.src_a
    p.dst_step[p.n_loop] = p.tile_a * p.dst_a
    p.extent[p.n_loop + 1] = n_tiles_b
    p.src_step[p.n_loop + 1] = p.tile_b * p.src_b
    p.dst_step[p.n_loop + 1] = p.tile_b * p.dst_b
    p.a_loop = p.n_loop
    p.b_loop = p.n_loop + 1
    p.n_loop += 2
    if p.kernel == KERNEL_TRANSPOSE:
        follow_source(p)
        # The innermost loop axis that moves goes to the next block: two
        # of its steps on is the block after that.
        p.source_ahead = 0
        for i in range(p.n_loop - 1, -1, -1):
            if p.extent[i] > 1 and tuning.prefetch:
                p.source_ahead = 2 * p.src_step[i]
                break
    p.n_iter = 1
    for i in range(p.n_loop):
        p.n_iter *= p.extent[i]


cdef void loop_outer_axes(Plan* p, const Axes* axes, const KernelAxes* k) noexcept nogil:
    """The loop axes outside the kernel's, outermost first: those before
    ``k.first`` but a (and the axes a transpose or a lane split groups), the ragged split's
    outer axis marked."""
    cdef int i
    p.n_loop = 0
    p.ragged_loop = -1
    # A ragged split along the rows: the row that holds the shorter run is
    # run apart (run_range), so the other rows run several a block (64 MiB
    # uint8 C=3 space_to_depth, one thread: 1.60 -> 1.24 x np.copyto).
    # Runs longer than RAGGED_ROWS_MAX_BYTES keep a block a piece.
    p.ragged_rows = p.kernel == KERNEL_GATHER and k.ragged >= 0 and k.a == k.ragged
    for i in range(k.first):
        if i != k.a and not ((p.kernel == KERNEL_TRANSPOSE or p.kernel == KERNEL_LANES) and k.grouped[i]):
            if i == k.ragged:
                p.ragged_loop = p.n_loop
            p.extent[p.n_loop] = axes.extent[i]
            p.src_step[p.n_loop] = axes.src_step[i]
            p.dst_step[p.n_loop] = axes.dst_step[i]
            p.n_loop += 1


cdef void follow_source(Plan* p) noexcept nogil:
    """Order the loop axes of a transpose by source step, largest first, so
    that consecutive blocks continue the source's runs.

    A block's destination rows are whole lines (or end lines shared with
    the next b tile) wherever the loop goes next, but its source runs are
    short pieces of longer source rows; walked in destination order, the
    next piece of a row came a whole sweep later, its page and the line
    shared with it long gone (2-D float32 4096 x 4096, one thread: 3.8 ->
    2.6 x np.copyto)."""
    cdef int i, k, a_loop = p.a_loop, b_loop = p.b_loop
    cdef intp e, s_step, d_step
    for i in range(1, p.n_loop):
        e = p.extent[i]; s_step = p.src_step[i]; d_step = p.dst_step[i]
        k = i - 1
        while k >= 0 and iabs(p.src_step[k]) < iabs(s_step):
            p.extent[k + 1] = p.extent[k]; p.src_step[k + 1] = p.src_step[k]; p.dst_step[k + 1] = p.dst_step[k]
            k -= 1
        p.extent[k + 1] = e; p.src_step[k + 1] = s_step; p.dst_step[k + 1] = d_step
        # Axis i moved to k + 1; the axes between moved out by one.
        if a_loop == i:
            a_loop = k + 1
        elif k + 1 <= a_loop < i:
            a_loop += 1
        if b_loop == i:
            b_loop = k + 1
        elif k + 1 <= b_loop < i:
            b_loop += 1
    p.a_loop = a_loop
    p.b_loop = b_loop


cdef intp line_phase(const Plan* p, const char* dst) noexcept nogil:
    """Indices of b the first b tile of a transpose is short by, so that
    the other tiles start on a cache line of the destination (0: none).

    NumPy's large arrays start 16 bytes past a line, so tiles counted from
    a row's first item never write whole lines, and streaming
    (stream_transpose) writes whole lines only: a 256-byte row then streams
    3 of its 5 lines, 4 with the phase (2-D float32, one thread: 3.1 -> 1.7
    x np.copyto). Only where every block starts at the same place in a
    line: every row and loop step is whole lines, and so is a tile."""
    cdef intp item = p.width * p.b_in, lead, i    # bytes of one index of b
    if not p.stream or p.dst_b != item or (p.tile_b * item) % CACHE_LINE != 0 \
            or p.tile_b >= p.n_b:
        return 0
    if p.dst_a % CACHE_LINE != 0:
        return 0
    for i in range(p.a_in * p.tile_a):
        if p.transpose_rows[i] % CACHE_LINE != 0:
            return 0
    for i in range(p.n_loop):
        if p.dst_step[i] % CACHE_LINE != 0:
            return 0
    lead = (CACHE_LINE - <size_t>dst % CACHE_LINE) % CACHE_LINE
    if lead % item != 0:
        return 0
    return (p.tile_b - (lead // item) % p.tile_b) % p.tile_b


cdef void continue_source_run(Plan* p, intp n_b, intp src_b) noexcept nogil:
    """Make the loop axis that continues a whole block's source the
    innermost one, when the blocks are whole kernel axes.

    The loop runs in destination order, which writes sequentially. When
    each block reads short source runs, the next block in destination
    order reads elsewhere and the source is swept in strips: 5-D
    space_to_depth (a block is one source row of W items, bs of them
    interleaved: 2.6x np.copyto on one thread for float32 bs=2, 1.0 with
    this), or a Fortran-order input (a block reads the 8 batch items of
    128 pixels, half a cache line each; the other half is the next
    channel's). The axis whose source step is the length of the block's
    contiguous source run, if that is under a cache line, else the block's
    whole source span, goes next."""
    cdef intp small_step = p.src_a, small_n = p.n_a, large_step = src_b, large_n = n_b
    cdef intp run = 0, span, e, s_step, d_step
    cdef int i, j = -1
    if iabs(small_step) > iabs(large_step):
        small_step = src_b; small_n = n_b; large_step = p.src_a; large_n = p.n_a
    if small_step == p.width:
        run = small_n * p.width
        if large_step == run:
            run *= large_n
    span = imax(iabs(p.src_a) * p.n_a, iabs(src_b) * n_b)
    # A run shorter than a cache line leaves the rest of its lines to a
    # later block; longer runs only follow the span (whole source rows:
    # reordering for them made 5-D depth_to_space write every other row).
    for i in range(p.n_loop):
        if 0 < run < CACHE_LINE and p.src_step[i] == run:
            j = i
            break
    if j < 0:
        for i in range(p.n_loop):
            if p.src_step[i] == span:
                j = i
                break
    if j < 0 or j == p.n_loop - 1:
        return
    # Not past an axis that writes between the block's destination rows
    # when those rows are a few cache lines at most, most of them shared
    # with the gaps (5-D space_to_depth blocks_first channels_last, rows of
    # 144 bytes 432 apart: the bd offsets of the same pixels would come a
    # whole sweep of the moved axis later, each pass writing part of every
    # line: 1.3 x np.copyto against 0.85). Longer rows share only their end
    # lines and keep the source order (space_to_depth channels_first bs=3,
    # rows of 680 bytes: 0.62 against 1.05).
    if p.dst_b == p.width and n_b * p.width < 4 * CACHE_LINE and n_b * p.width % CACHE_LINE != 0:
        for i in range(j + 1, p.n_loop):
            if iabs(p.dst_step[i]) < iabs(p.dst_a) and p.extent[i] > 1:
                return
    e = p.extent[j]; s_step = p.src_step[j]; d_step = p.dst_step[j]
    for i in range(j, p.n_loop - 1):
        p.extent[i] = p.extent[i + 1]
        p.src_step[i] = p.src_step[i + 1]
        p.dst_step[i] = p.dst_step[i + 1]
    p.extent[p.n_loop - 1] = e; p.src_step[p.n_loop - 1] = s_step; p.dst_step[p.n_loop - 1] = d_step
