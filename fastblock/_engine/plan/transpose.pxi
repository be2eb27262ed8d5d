# Planner step 3 (_engine/plan/planner.pxi), staged transposes (_engine/kernels/transpose.pxi):
# whether a copy whose source is contiguous along another axis than the
# destination's pays as one (plan_transpose), its rows and items.

from fastblock._engine.types cimport (Axes, KERNEL_TRANSPOSE, KernelAxes, LANE_GROUP, MAX_AXES,
                                      Plan, TRANSPOSE_MAX, intp)


cdef intp transpose_tile_edge(intp width) noexcept nogil:
    """Largest power of two ``e`` <= 128 with ``e * e * width <= TRANSPOSE_BYTES``."""
    cdef intp edge = 128
    while edge > 1 and edge * edge * width > TRANSPOSE_BYTES:
        edge //= 2
    return edge


cdef int grow_run(int m, const intp* ext, const intp* step, bint* taken, int* axes,
                  intp* inner, intp edge, intp width) noexcept nogil:
    """Grow the contiguous run of axis ``axes[0]`` (one item a ``step``) by
    the axes not yet taken whose step continues it, until it holds ``edge``
    items. ``axes`` gets the run's axes, innermost first, and ``inner`` the
    items of all but the last (outermost); returns their count."""
    cdef int n = 1, i, j
    cdef int outer = axes[0]
    inner[0] = 1
    taken[outer] = True
    while inner[0] * ext[outer] < edge:
        j = -1
        for i in range(m):
            if not taken[i] and step[i] == inner[0] * ext[outer] * width:
                j = i
                break
        if j < 0:
            break
        inner[0] *= ext[outer]
        outer = j
        taken[j] = True
        axes[n] = j
        n += 1
    return n


cdef void axes_offsets(intp* offset, intp n, intp inner, const int* axes, int n_inner,
                       const intp* ext, const intp* step, intp outer_step) noexcept nogil:
    """``offset[j]`` for ``j < n``: item ``j // inner`` of the outer axis
    (``outer_step`` bytes each) and item ``j % inner`` of the inner ``axes``
    (innermost first) as a mixed-radix number, in bytes of ``step``."""
    cdef intp j, rest, total
    cdef int i
    for j in range(n):
        total = (j // inner) * outer_step
        rest = j % inner
        for i in range(n_inner):
            total += (rest % ext[axes[i]]) * step[axes[i]]
            rest //= ext[axes[i]]
        offset[j] = total


cdef bint runs_alias(const intp* offset, intp n, intp run_bytes) noexcept nogil:
    """Whether ``n`` source runs of ``run_bytes`` at ``offset`` crowd into
    few L1 sets (64 sets of 64-byte lines): fewer than a quarter of the sets
    their lines would fill if spread out."""
    cdef unsigned long long used = 0
    cdef intp j, line, lines = 0, first, last
    cdef int n_sets = 0
    for j in range(n):
        first = offset[j] // CACHE_LINE
        last = (offset[j] + run_bytes - 1) // CACHE_LINE
        line = first
        while line <= last and lines < 64:
            used |= 1ULL << (line & 63)
            line += 1
            lines += 1
    while used:
        n_sets += <int>(used & 1)
        used >>= 1
    return 4 * n_sets < lines


cdef bint plan_transpose(Plan* p, const Axes* axes, KernelAxes* k) noexcept nogil:
    """Set up a staged transpose (``_engine/kernels/transpose.pxi``) when the source is
    contiguous along ``k.a`` and the destination along ``k.b``.

    Each side's run grows by the axes that continue it (a Fortran-order
    input: N then C in the source) until it holds a tile edge of items. On
    return ``k.a`` and ``k.b`` are the outermost axes of the two runs,
    tiled by the loop, and ``k.grouped`` marks every axis of both runs. False
    when the source does not step one item along ``k.a``, or the block
    would not pay (the plan is then as before, but for ``k.grouped``, the
    tiles and ``p.gather``, which the other kernels set afresh)."""
    cdef int m = axes.n
    cdef const intp* ext = &axes.extent[0]
    cdef const intp* ss = &axes.src_step[0]
    cdef const intp* ds = &axes.dst_step[0]
    cdef bint* grouped = k.grouped
    cdef intp w = p.width, edge = transpose_tile_edge(w), a_in, b_in, tile_a, tile_b, span
    cdef int a, b, i, n_a_axes, n_b_axes
    cdef int a_axes[MAX_AXES]
    cdef int b_axes[MAX_AXES]
    if ss[k.a] != w or ds[k.b] != w or edge < 2:
        return False
    for i in range(m):
        grouped[i] = False
    grouped[k.a] = True
    a_axes[0] = k.a
    b_axes[0] = k.b
    n_b_axes = grow_run(m, ext, ds, grouped, b_axes, &b_in, edge, w)
    n_a_axes = grow_run(m, ext, ss, grouped, a_axes, &a_in, edge, w)
    a = a_axes[n_a_axes - 1]
    b = b_axes[n_b_axes - 1]
    transpose_tiles(p, edge, a_in, b_in, ext[a], ext[b])
    tile_a = p.tile_a
    tile_b = p.tile_b
    # Fewer rows or items than a register tile (and at least 8: 2 to 4 rows
    # are (de-)interleaved lanes, which the block kernel vectorises) go item
    # by item anyway.
    if (a_in * tile_a < imax(8, LANE_GROUP // w) or b_in * tile_b < imax(8, LANE_GROUP // w)
            or a_in * tile_a * b_in * tile_b * w < tuning.small_block_bytes):
        return False
    # Rows made of several source axes need items the kernel moves whole
    # (register tiles, or 16 bytes): other sizes go item by item in short
    # rows, slower than the gathered rows they would replace (6-byte items:
    # 0.99 against 0.67 x np.copyto).
    if a_in > 1 and not is_register_width(w):
        return False
    axes_offsets(p.gather, b_in * tile_b, b_in, b_axes, n_b_axes - 1, ext, ss, ss[b])
    # Items of several destination axes in fewer than 32 rows of 2- to
    # 8-byte items are left to the gathered rows, unless their source runs
    # crowd into a few cache sets (runs_alias; 16 rows of float64: 0.44
    # x np.copyto gathered against 0.82 transposed).
    if a_in == 1 and b_in > 1 and (w == 2 or w == 4 or w == 8) and tile_a < 32 \
            and not runs_alias(p.gather, b_in * tile_b, tile_a * w):
        return False
    axes_offsets(p.transpose_rows, a_in * tile_a, a_in, a_axes, n_a_axes - 1, ext, ds, ds[a])
    # Source runs close together are read in place (their lines stay in L1
    # as they are); runs far apart go through the buffer.
    span = 0
    for i in range(b_in * tile_b):
        span = imax(span, iabs(p.gather[i]))
    p.transpose_staged = span + a_in * tile_a * w > 2 * a_in * tile_a * b_in * tile_b * w
    p.kernel = KERNEL_TRANSPOSE
    p.a_in = a_in
    p.b_in = b_in
    k.a = a
    k.b = b
    return True


cdef void transpose_tiles(Plan* p, intp edge, intp a_in, intp b_in, intp n_a, intp n_b) noexcept nogil:
    """A staged transpose's tiles of its a and b axes (``n_a``, ``n_b``
    indices, each ``a_in`` rows, ``b_in`` items): square tiles of edge x
    edge items, a short side leaving its share of the block's bytes to the
    other, within the plan's offset tables (TRANSPOSE_MAX)."""
    cdef intp w = p.width
    cdef intp tile_a = imin(n_a, imax(1, edge // a_in))
    cdef intp tile_b = imin(n_b, imax(1, edge // b_in))
    if a_in * tile_a < edge:
        tile_b = imin(n_b, imax(tile_b, TRANSPOSE_BYTES // (a_in * tile_a * w) // b_in))
    elif b_in * tile_b < edge:
        tile_a = imin(n_a, imax(tile_a, TRANSPOSE_BYTES // (b_in * tile_b * w) // a_in))
    p.tile_a = imin(tile_a, TRANSPOSE_MAX // a_in)
    p.tile_b = imin(tile_b, TRANSPOSE_MAX // b_in)
