# Planner step 3 (_engine/plan/planner.pxi): choose the kernel and its two axes
# (choose_kernel), and the block kernel's loop (choose_block_copy).

from fastblock._engine.types cimport (Axes, BLOCK_ITEMS, BLOCK_REPEATS, BLOCK_ROWS, BLOCK_WEAVE,
                                      BlockCopy, KERNEL_BLOCK, KERNEL_TRANSPOSE, KernelAxes, Plan,
                                      intp)


cdef void choose_kernel(Plan* p, Axes* axes, KernelAxes* k, bint force_shuffles) noexcept nogil:
    """The kernel and its axes, in that order of preference: a table axis
    is gathered; lane transposes (plan_lanes); staged transposes or the
    block kernel (choose_block_axes), whose tiny blocks are gathered
    instead (gather_tiny_blocks). ``axes`` loses the lane axes, or gains
    the split of a gathered run's axis."""
    p.kernel = KERNEL_BLOCK
    p.gather_len = 0
    p.lanes.n_lanes = 0
    k.ragged = -1
    if p.source_table != NULL:
        # The table axis is read only by gathered runs.
        k.a = axes.n - 2
        k.b = axes.n - 1
        plan_gather(p, axes, 0, False, k)
    elif plan_lanes(p, axes):
        choose_lane_axes(p, axes, k)
    else:
        choose_block_axes(p, axes, k)
        gather_tiny_blocks(p, axes, k, force_shuffles)


cdef void choose_lane_axes(Plan* p, const Axes* axes, KernelAxes* k) noexcept nogil:
    """A lane transpose's axes: the pixel axis is the kernel's b axis, in
    groups of LANE_GROUP pixels; rows step along its outer neighbour."""
    cdef int i
    k.b = axes.n - 1
    k.a = k.b - 1
    for i in range(axes.n):
        k.grouped[i] = False
    p.lanes.rows_in = 1
    p.lanes.src_in = 0
    p.lanes.dst_in = 0
    # Split rows read the source rows in turn (the one source stream);
    # interleaved rows write the destination rows in turn.
    if not p.lanes.interleave:
        for i in range(k.b):
            if iabs(axes.src_step[i]) < iabs(axes.src_step[k.a]):
                k.a = i
    group_lane_rows(p, axes, k)
    k.first = k.b
    lane_tiles(p, axes.extent[k.b])


cdef void group_lane_rows(Plan* p, const Axes* axes, KernelAxes* k) noexcept nogil:
    """Take the row axis ``k.a`` whole as groups of rows (LaneTranspose) when
    another axis continues its rows, which then becomes the kernel's a
    axis: a block is then many groups instead of one. A split's groups are
    rows the next one continues in the source (read in order; each lane's
    rows of a group follow those of the one before where the destination
    continues them too); an interleave's, whole destination rows that the
    next continues (a block is one span). SpaceToDepth channels-first
    splits the bs rows of a row of blocks, DepthToSpace interleaves them:
    blocks of bs rows cost more than their copy (1 MiB in cache, 32-pixel
    rows: 2048 blocks). Only where a whole group fits a block."""
    cdef const intp* ext = &axes.extent[0]
    cdef const intp* steps = &axes.src_step[0]
    cdef intp row_bytes = ext[k.b] * p.lanes.n_lanes * p.width
    cdef int a = k.a, i
    if p.lanes.interleave:
        steps = &axes.dst_step[0]
    # (No row axis: the pixel axis is the only one.)
    if a < 0 or ext[a] * row_bytes > p.block_bytes or (p.lanes.interleave and steps[a] != row_bytes):
        return
    for i in range(k.b):
        if i != a and steps[i] == ext[a] * steps[a]:
            p.lanes.rows_in = ext[a]
            p.lanes.src_in = axes.src_step[a]
            p.lanes.dst_in = axes.dst_step[a]
            k.grouped[a] = True
            k.a = i
            return


cdef void choose_block_axes(Plan* p, const Axes* axes, KernelAxes* k) noexcept nogil:
    """Kernel axes: b is the innermost destination axis; a is the source's
    contiguous axis when that is another one (a transpose: staged, or else
    the block kernel over tiles that fit in L1), else b's outer neighbour."""
    cdef const intp* ss = &axes.src_step[0]
    cdef int i, j = -1
    k.b = axes.n - 1
    for i in range(axes.n):
        if ss[i] != 0 and (j < 0 or iabs(ss[i]) < iabs(ss[j])):
            j = i
    if j >= 0 and j != k.b and ss[k.b] != 0 and iabs(ss[k.b]) > iabs(ss[j]):
        k.a = j
        if not plan_transpose(p, axes, k):
            strided_transpose_tiles(p, axes.extent[k.a], axes.extent[k.b])
    else:
        k.a = k.b - 1
        block_tiles(p, axes.extent[k.b])
    k.first = axes.n if p.kernel == KERNEL_TRANSPOSE else k.b


cdef void gather_tiny_blocks(Plan* p, Axes* axes, KernelAxes* k, bint force_shuffles) noexcept nogil:
    """Gather whole destination runs instead of the block kernel's tiny
    blocks (depth_first with channels last: bs x C items), unless they are
    a weave (find_weave) long enough for its vector loop or packed repeats
    (repeats_by_permutes, repeats_by_shuffles); and instead of
    the blocks that byte shuffles move faster (``force_shuffles``: all they
    can build)."""
    cdef const intp* ext = &axes.extent[0]
    cdef const intp* ss = &axes.src_step[0]
    cdef const intp* ds = &axes.dst_step[0]
    cdef int a = k.a, b = k.b
    cdef intp block_rows, block_items
    cdef Weave weave
    cdef bint shuffle_block
    if p.kernel == KERNEL_TRANSPOSE:
        return
    # Packed items repeated go by permutes or shuffles however small the
    # block (an RGB uint8 image upsampled (h 2) (w 2), 128 x 128, one image
    # row a block: 10.5 x np.copyto gathered, 2.6 so; uint8 tiled 3 times,
    # 1 MiB: 1.4 gathered, 1.0 by shuffles).
    if a >= 0 and ss[b] == 0 and ds[b] == p.width and (
            repeats_by_permutes(p.width, p.tile_b, ss[a], ds[a])
            or repeats_by_shuffles(p.width, p.tile_b, ss[a], ds[a])):
        return
    block_rows = imin(p.tile_a, ext[a]) if a >= 0 else 1
    block_items = block_rows * p.tile_b
    weave.n = 0
    weave.n_rows = find_weave(block_rows, p.tile_b, ds[a] if a >= 0 else 0, ds[b],
                              ss[a] if a >= 0 else 0, ss[b], p.width, &weave)
    # A weave of three rows of bytes does not vectorise in C, nor does a
    # block moved item by item; byte shuffles do them, where they can build
    # the run (depth_to_space of a stepped uint8 view [..., ::2], 64 MiB:
    # 2.9 -> 0.68 x np.copyto).
    shuffle_block = shuffles_pay(p.copy_bytes) and p.width <= 2 and (
        force_shuffles or weave.n_rows == 3 or (a >= 0 and moves_item_by_item(
            block_rows, p.tile_b, ds[a], ds[b], ss[a], ss[b], p.width)))
    if (block_items * p.width < tuning.small_block_bytes and weave.n < tuning.weave_min_run) or shuffle_block:
        plan_gather(p, axes, 0 if shuffle_block else block_items, shuffle_block, k)


cdef bint moves_item_by_item(intp n_outer, intp n_inner, intp dst_outer, intp dst_inner,
                             intp src_outer, intp src_inner, intp width) noexcept nogil:
    """Whether the block kernel would take its general item loop for this
    block: no repeated item, no rows contiguous on both sides, no weave, and
    along the longer axis (the inner one in ``copy_strided_block``) not one
    side stepping an item while the other steps 1 to 4."""
    cdef intp d, s
    if src_outer == 0 or src_inner == 0:
        return False
    if (dst_outer == width and src_outer == width) or (dst_inner == width and src_inner == width):
        return False
    if find_weave(n_outer, n_inner, dst_outer, dst_inner, src_outer, src_inner, width, NULL):
        return False
    d = dst_outer if n_outer > n_inner else dst_inner
    s = src_outer if n_outer > n_inner else src_inner
    return not ((d == width and width <= s <= 4 * width and s % width == 0)
                or (s == width and width <= d <= 4 * width and d % width == 0))


cdef void choose_block_copy(BlockCopy* c, const Plan* p, intp dst_a, intp b_items) noexcept nogil:
    """The block kernel's loop (BlockLoop) for blocks whose rows are
    ``dst_a`` bytes apart and hold ``b_items`` items of b (or fewer: the
    last tile), from the kernel axes' steps, and whether it takes the a
    axis inside, in order of preference: an axis that repeats one source
    item into adjacent destination items; an axis contiguous on both sides;
    a weave, where one axis steps one item in the destination and the other
    one item in the source (the block's size decides: copy_block); else
    item by item."""
    cdef intp w = p.width
    c.a_inside = False
    if p.src_a == 0 and dst_a == w and not (p.src_b == 0 and p.dst_b == w):
        c.loop = BLOCK_REPEATS
        c.a_inside = True
    elif p.src_b == 0 and p.dst_b == w and b_items > 1:
        c.loop = BLOCK_REPEATS
    elif p.dst_b == w and p.src_b == w:
        c.loop = BLOCK_ROWS
    elif dst_a == w and p.src_a == w:
        c.loop = BLOCK_ROWS
        c.a_inside = True
    elif is_register_width(w) and ((dst_a == w and p.src_b == w) or (p.dst_b == w and p.src_a == w)):
        c.loop = BLOCK_WEAVE
    else:
        c.loop = BLOCK_ITEMS
