# The convert stage's plan: a copy that also converts its items (another
# dtype, a scale, an offset) as a ConvertPlan. Nothing here touches the data.
#
# The copy is cut into tiles: boxes of its axes of at most
# tuning.convert_tile_bytes bytes of its widest side. A tile's source moves
# into a per-thread stage in the source's dtype, packed in the result's
# axis order, by an ordinary Plan (the engine's kernels, unchanged); the
# stage's rows are then converted into the result (src/convert.c). The
# stage stays in L1, so the result is written once, in its own dtype.
# Where the source's rows already run forwards like the result's (a
# conversion without a layout change, channels first to channels first),
# they are converted where they lie, with no move.
#
# A tile takes the axes innermost on either side first (the smaller of
# each axis's two steps, in items), so that the move keeps its kernel: a
# channels-last image to channels-first takes its channels and a row of
# pixels whole, and as many rows as fit. A transpose whose two innermost
# axes are both long takes a box of each (at least CONVERT_MIN_SIDE items
# of the source's), except that packed pixels whose lanes the one-pass
# kernels split or interleave keep all their lanes, and at least
# tuning.convert_lanes_run_bytes of each plane (no stage bounds them). A
# tile cut from an axis takes a divisor of its extent
# where one is near, else the last tile is shorter: at most CUTS_MAX axes
# are cut, so a copy has at most TILE_SHAPES tile shapes, each planned once.
#
# The scale and the offset are read along the same axes (their steps are
# 0 where they are broadcast). Where they vary along a row (channels
# last), each tile's values are first moved into lines packed as the stage
# (the same engine, from a source of steps 0 and 4); else one value a row.

from libc.stdlib cimport free, malloc

from fastblock._engine.types cimport (CONVERT_SIDES, CUTS_MAX, ConvertPlan, MAX_AXES, Plan,
                                      SIDE_DST, SIDE_OFFSET, SIDE_SCALE, SIDE_SRC, TileShape,
                                      intp)
from fastblock._engine.kernels_c cimport (FB_AFFINE_LINE, FB_AFFINE_NONE, FB_AFFINE_VALUE,
                                          fb_convert_compute, fb_convert_lanes_for,
                                          fb_convert_lanes_runs, fb_convert_run_for)

# A tile's move is one part, at offset 0 on both sides.
cdef intp NO_OFFSET = 0

cdef enum:
    # Source items a tile cut from two long axes keeps of the source's
    # innermost one: a cache line of float32.
    CONVERT_MIN_SIDE = 16
    # Items a row needs for a tile whose source rows run forwards to be
    # converted in place, not through the stage (a row costs a call of the
    # convert kernel; the stage merges the rows the source keeps apart).
    CONVERT_IN_PLACE_MIN_RUN = 256


cdef int plan_convert(ConvertPlan* c, int ndim, const intp* extents, const intp* const* steps,
                      intp* base_shift) except -1:
    """Fill ``c`` (its cv types set by the caller, and its scale and offset
    modes to anything but FB_AFFINE_NONE where given) for a copy over
    ``ndim`` axes with ``steps[side]`` byte steps; 0 when it copies
    nothing, else 1. ``base_shift[side]``: bytes each side's base moves (a
    negative result step is made positive, every side moving to that
    axis's last item)."""
    cdef int k, s, m = 0
    for s in range(CONVERT_SIDES):
        base_shift[s] = 0
    for k in range(ndim):
        if extents[k] == 0:
            return 0
        if extents[k] == 1:
            continue
        if m == MAX_AXES:
            raise ValueError("fastblock: too many axes of extent > 1 in one copy")
        c.extent[m] = extents[k]
        for s in range(CONVERT_SIDES):
            c.step[s][m] = steps[s][k]
        if c.step[SIDE_DST][m] < 0:
            for s in range(CONVERT_SIDES):
                base_shift[s] += (extents[k] - 1) * c.step[s][m]
                c.step[s][m] = -c.step[s][m]
        m += 1
    c.n = m
    sort_convert_axes(c)
    merge_convert_axes(c)
    choose_tile(c)
    c.cv.scale = affine_mode(c, SIDE_SCALE, c.cv.scale != FB_AFFINE_NONE)
    c.cv.offset = affine_mode(c, SIDE_OFFSET, c.cv.offset != FB_AFFINE_NONE)
    plan_tile_shapes(c)
    return 1


cdef void sort_convert_axes(ConvertPlan* c) noexcept nogil:
    """The axes by result step, largest first (insertion sort: few axes)."""
    cdef int i, j, s
    cdef intp e, st[CONVERT_SIDES]
    for i in range(1, c.n):
        e = c.extent[i]
        for s in range(CONVERT_SIDES):
            st[s] = c.step[s][i]
        j = i - 1
        while j >= 0 and c.step[SIDE_DST][j] < st[SIDE_DST]:
            c.extent[j + 1] = c.extent[j]
            for s in range(CONVERT_SIDES):
                c.step[s][j + 1] = c.step[s][j]
            j -= 1
        c.extent[j + 1] = e
        for s in range(CONVERT_SIDES):
            c.step[s][j + 1] = st[s]


cdef void merge_convert_axes(ConvertPlan* c) noexcept nogil:
    """Merge each axis into the one inside it where every side continues it."""
    cdef int k, s, m = 0
    cdef bint joins
    for k in range(1, c.n):
        joins = True
        for s in range(CONVERT_SIDES):
            joins = joins and c.step[s][m] == c.step[s][k] * c.extent[k]
        if joins:
            c.extent[m] *= c.extent[k]
            for s in range(CONVERT_SIDES):
                c.step[s][m] = c.step[s][k]
        else:
            m += 1
            c.extent[m] = c.extent[k]
            for s in range(CONVERT_SIDES):
                c.step[s][m] = c.step[s][k]
    c.n = m + 1 if c.n else 0


cdef inline intp items_step(intp step, intp item) noexcept nogil:
    return iabs(step) // item


cdef intp near_divisor(intp b, intp extent) noexcept nogil:
    """A tile of about ``b`` items along an axis of ``extent``: the largest
    divisor of ``extent`` from b/2 to b, else b."""
    cdef intp d
    if b >= extent:
        return extent
    for d in range(b, (b + 1) // 2 - 1, -1):
        if d >= 1 and extent % d == 0:
            return d
    return imax(b, 1)


cdef void choose_tile(ConvertPlan* c) noexcept nogil:
    """The tile's extent along each axis (c.box) and the axes cut short."""
    cdef intp budget = c.tile_items, whole = 1, b, key_k, key_j
    cdef int k, j, taken = 0, a_dst = c.n - 1, a_src = -1
    cdef int order[MAX_AXES]
    for k in range(c.n):
        c.box[k] = 1
        order[k] = k
        if a_src < 0 or iabs(c.step[SIDE_SRC][k]) < iabs(c.step[SIDE_SRC][a_src]):
            a_src = k
    # Innermost first by the nearer of the two sides; ties to the result's order.
    for k in range(1, c.n):
        j = k
        while j > 0:
            key_k = imin(items_step(c.step[SIDE_SRC][order[j]], c.item[SIDE_SRC]),
                         c.step[SIDE_DST][order[j]] // c.item[SIDE_DST])
            key_j = imin(items_step(c.step[SIDE_SRC][order[j - 1]], c.item[SIDE_SRC]),
                         c.step[SIDE_DST][order[j - 1]] // c.item[SIDE_DST])
            if key_k < key_j or (key_k == key_j and order[j] > order[j - 1]):
                order[j], order[j - 1] = order[j - 1], order[j]
                j -= 1
            else:
                break
    if c.n >= 2 and a_src >= 0 and a_src != a_dst \
            and c.extent[a_src] * c.extent[a_dst] > budget:
        # A transpose of two long axes: a box of each. Packed pixels whose
        # lanes the one-pass kernel splits keep them all (64 uint16 lanes
        # cut into boxes of 16 went through the stage at 0.75 ns an item).
        # Their tiles need no stage: at least convert_lanes_run_bytes of
        # each plane (the way back likewise keeps the result's lanes).
        if iabs(c.step[SIDE_SRC][a_src]) == c.item[SIDE_SRC] \
                and fb_convert_lanes_runs(&c.cv, <int>imin(c.extent[a_src], 1 << 30), 0):
            box_lanes_whole(c, a_src, a_dst, c.item[SIDE_DST], budget)
        elif c.step[SIDE_DST][a_dst] == c.item[SIDE_DST] \
                and fb_convert_lanes_runs(&c.cv, <int>imin(c.extent[a_dst], 1 << 30), 1):
            box_lanes_whole(c, a_dst, a_src, c.item[SIDE_SRC], budget)
        else:
            c.box[a_src] = near_divisor(imin(c.extent[a_src],
                                             imax(CONVERT_MIN_SIDE, budget // c.extent[a_dst])),
                                        c.extent[a_src])
            c.box[a_dst] = near_divisor(imax(1, budget // c.box[a_src]), c.extent[a_dst])
    else:
        for taken in range(c.n):
            k = order[taken]
            if whole * c.extent[k] <= budget:
                c.box[k] = c.extent[k]
                whole *= c.extent[k]
            else:
                c.box[k] = near_divisor(imax(1, budget // whole), c.extent[k])
                break
    c.n_cuts = 0
    c.n_tiles = 1
    c.tile_items = 1
    for k in range(c.n):
        c.tiles[k] = (c.extent[k] + c.box[k] - 1) // c.box[k]
        c.n_tiles *= c.tiles[k]
        c.tile_items *= c.box[k]
        if c.extent[k] % c.box[k] != 0:
            c.cut[c.n_cuts] = k
            c.n_cuts += 1


cdef void box_lanes_whole(ConvertPlan* c, int lane, int pixel, intp planar_item,
                          intp budget) noexcept nogil:
    """A one-pass lanes tile's box: every lane, and pixels for ``budget``
    items or convert_lanes_run_bytes of each plane (``planar_item`` bytes
    an item), whichever is more."""
    c.box[lane] = c.extent[lane]
    budget = imax(budget, c.extent[lane] * imax(1, tuning.convert_lanes_run_bytes // planar_item))
    c.box[pixel] = near_divisor(imax(1, budget // c.box[lane]), c.extent[pixel])


cdef int plan_tile_shapes(ConvertPlan* c) except -1:
    """Plan every tile shape: its moves into the stage and lines, its rows."""
    cdef int shape, j, k
    cdef TileShape* t
    c.shapes = <TileShape*>malloc((1 << c.n_cuts) * sizeof(TileShape))
    if c.shapes == NULL:
        raise MemoryError()
    c.n_shapes = 1 << c.n_cuts
    for shape in range(c.n_shapes):
        c.shapes[shape].move = c.shapes[shape].scale_line = c.shapes[shape].offset_line = NULL
    for shape in range(c.n_shapes):
        t = &c.shapes[shape]
        for k in range(c.n):
            t.extent[k] = c.box[k]
        for j in range(c.n_cuts):
            if shape & (1 << j):
                k = c.cut[j]
                t.extent[k] = c.extent[k] - (c.tiles[k] - 1) * c.box[k]
        plan_tile_shape(c, t)
    return 0


cdef int plan_tile_shape(ConvertPlan* c, TileShape* t) except -1:
    """One tile shape's plans and rows (see the top of this file). The
    stage is packed in the result's order; an axis the source reads
    backwards (BGR as ``img[..., ::-1]``) is packed backwards too, so that
    the move reads it forwards and keeps its kernel (a lane split), unless
    it is the stage's innermost (rows are converted forwards)."""
    cdef intp packed[MAX_AXES]
    cdef intp stage_step[MAX_AXES]
    cdef intp line_step[MAX_AXES]
    cdef intp acc = 1
    cdef int k, inner = -1
    for k in range(c.n - 1, -1, -1):
        packed[k] = acc
        acc *= t.extent[k]
        if inner < 0 and t.extent[k] > 1:
            inner = k
    if plan_direct_lanes(c, t):
        return 0
    t.stage_origin = 0
    t.line_origin = 0
    for k in range(c.n):
        line_step[k] = packed[k] * c.item[SIDE_SCALE]
    if inner >= 0 and c.step[SIDE_SRC][inner] == c.item[SIDE_SRC]:
        # The source's rows run forwards like the result's: converted where
        # they lie (no move), unless that leaves rows too short to pay.
        plan_tile_rows(c, t, &c.step[SIDE_SRC][0], line_step)
        if t.run >= CONVERT_IN_PLACE_MIN_RUN:
            plan_tile_lines(c, t, line_step)
            return 0
    for k in range(c.n):
        stage_step[k] = packed[k] * c.item[SIDE_SRC]
        if c.step[SIDE_SRC][k] < 0 and k != inner and t.extent[k] > 1:
            t.stage_origin += (t.extent[k] - 1) * stage_step[k]
            t.line_origin += (t.extent[k] - 1) * line_step[k]
            stage_step[k] = -stage_step[k]
            line_step[k] = -line_step[k]
    t.move = plan_tile_move(t.move_shift, c, t, &c.step[SIDE_SRC][0], stage_step,
                   c.item[SIDE_SRC])
    plan_tile_lines(c, t, line_step)
    plan_tile_rows(c, t, stage_step, line_step)
    return 0


cdef int plan_tile_lines(ConvertPlan* c, TileShape* t, const intp* line_step) except -1:
    """The moves of a tile's scale and offset values into lines (where they
    vary along its rows), packed by ``line_step``."""
    if c.cv.scale == FB_AFFINE_LINE:
        t.scale_line = plan_tile_move(t.scale_shift, c, t, &c.step[SIDE_SCALE][0], line_step,
                       c.item[SIDE_SCALE])
    if c.cv.offset == FB_AFFINE_LINE:
        t.offset_line = plan_tile_move(t.offset_shift, c, t, &c.step[SIDE_OFFSET][0], line_step,
                       c.item[SIDE_OFFSET])
    return 0


cdef bint plan_direct_lanes(ConvertPlan* c, TileShape* t) noexcept nogil:
    """Whether the tile is packed pixels of 3 or 4 lanes split into as many
    result planes (channels last to channels first), or planes interleaved
    into packed result pixels (the way back), converted in one pass
    without the stage (fb_convert_lanes_runs says where it runs); then
    ``t`` is set for it. The packed side may hold the lanes backwards."""
    cdef int k, n = 0, axes[2], lane, pixel, packed, planar, interleave
    t.lanes = 0
    t.lanes_interleave = False
    t.lanes_reversed = False
    for k in range(c.n):
        if t.extent[k] > 1:
            if n == 2:
                return False
            axes[n] = k
            n += 1
    if n != 2:
        return False
    for interleave in range(2):
        # Result order: planes outermost for a split, lanes innermost for
        # an interleave. The packed side's pixels hold their lanes in
        # order or backwards, the planar side's items are packed, and
        # scale and offset are one value a plane.
        if interleave:
            lane, pixel, packed, planar = axes[1], axes[0], SIDE_DST, SIDE_SRC
        else:
            lane, pixel, packed, planar = axes[0], axes[1], SIDE_SRC, SIDE_DST
        if fb_convert_lanes_runs(&c.cv, <int>t.extent[lane], interleave) \
                and iabs(c.step[packed][lane]) == c.item[packed] \
                and c.step[packed][pixel] == t.extent[lane] * c.item[packed] \
                and c.step[planar][pixel] == c.item[planar] \
                and c.step[SIDE_SCALE][pixel] == 0 and c.step[SIDE_OFFSET][pixel] == 0:
            t.lanes = <int>t.extent[lane]
            t.lanes_interleave = interleave
            t.lanes_reversed = c.step[packed][lane] < 0
            t.plane_step = c.step[planar][lane]
            t.lane_scale_step = c.step[SIDE_SCALE][lane]
            t.lane_offset_step = c.step[SIDE_OFFSET][lane]
            t.run = t.extent[pixel]
            t.n_rows = 0
            t.convert_lanes = fb_convert_lanes_for(&c.cv, t.lanes, interleave, t.run)
            return True
    return False


cdef Plan* plan_tile_move(intp* shift, const ConvertPlan* c, const TileShape* t,
                          const intp* from_steps, const intp* to_steps, intp item) except NULL:
    """A new Plan of the tile from ``from_steps`` into a packed buffer;
    ``shift``: how far build_plan moved its source and buffer bases (for
    the buffer's axes packed backwards)."""
    cdef char origin = 0
    cdef char* src = &origin
    cdef char* dst = &origin
    cdef Plan* p = <Plan*>malloc(sizeof(Plan))
    if p == NULL:
        raise MemoryError()
    try:
        build_plan(p, c.n, t.extent, from_steps, to_steps, item, 1, &src, &dst, 0, NULL, True)
    except BaseException:
        free(p)
        raise
    shift[0] = src - &origin
    shift[1] = dst - &origin
    p.src_offsets = &NO_OFFSET
    p.dst_offsets = &NO_OFFSET
    return p


cdef void plan_tile_rows(ConvertPlan* c, TileShape* t, const intp* stage_step,
                         const intp* line_step) noexcept nogil:
    """The tile's rows out of the stage: its axes of extent > 1 in the
    result's order, merged where every side continues them; the innermost
    is the run."""
    cdef intp ext[MAX_AXES]
    cdef intp st[CONVERT_SIDES][MAX_AXES]
    cdef int k, s, m = -1
    cdef bint joins
    for k in range(c.n):
        if t.extent[k] == 1:
            continue
        if m >= 0:
            # Every side must continue: the stage and lines too (an axis
            # packed backwards does not).
            joins = True
            for s in range(CONVERT_SIDES):
                joins = joins and st[s][m] == side_step_of(c, s, k, stage_step,
                                                           line_step) * t.extent[k]
            if joins:
                ext[m] *= t.extent[k]
                for s in range(CONVERT_SIDES):
                    st[s][m] = side_step_of(c, s, k, stage_step, line_step)
                continue
        m += 1
        ext[m] = t.extent[k]
        for s in range(CONVERT_SIDES):
            st[s][m] = side_step_of(c, s, k, stage_step, line_step)
    t.run = 1
    t.run_step = c.item[SIDE_DST]
    # A run of one value a row must not step through the scale or offset.
    if m >= 0 and (c.cv.scale != FB_AFFINE_VALUE or st[SIDE_SCALE][m] == 0) \
            and (c.cv.offset != FB_AFFINE_VALUE or st[SIDE_OFFSET][m] == 0):
        t.run = ext[m]
        t.run_step = st[SIDE_DST][m]
        m -= 1
    t.convert_run = fb_convert_run_for(&c.cv, t.run_step)
    t.n_rows = m + 1
    for k in range(t.n_rows):
        t.row_extent[k] = ext[k]
        for s in range(CONVERT_SIDES):
            t.row_step[s][k] = st[s][k]


cdef inline intp side_step_of(const ConvertPlan* c, int s, int k, const intp* stage_step,
                              const intp* line_step) noexcept nogil:
    """Axis ``k``'s step in a tile's rows on side ``s``: the stage's, the
    result's, or the scale's or offset's (its own steps for one value a
    row, the line's for a line)."""
    if s == SIDE_SRC:
        return stage_step[k]
    if s == SIDE_DST:
        return c.step[SIDE_DST][k]
    if (s == SIDE_SCALE and c.cv.scale == FB_AFFINE_LINE) or \
            (s == SIDE_OFFSET and c.cv.offset == FB_AFFINE_LINE):
        return line_step[k]
    return c.step[s][k]


cdef int affine_mode(const ConvertPlan* c, int side, bint given) noexcept nogil:
    """How a scale or offset (``side``) is read: none, one value a row
    (steps 0 along the result's innermost axis of the tile), or lines."""
    cdef int k
    if not given:
        return FB_AFFINE_NONE
    for k in range(c.n - 1, -1, -1):
        if c.box[k] > 1:
            return FB_AFFINE_VALUE if c.step[side][k] == 0 else FB_AFFINE_LINE
    return FB_AFFINE_VALUE


cdef void free_convert_plan(ConvertPlan* c) noexcept nogil:
    cdef int i
    if c.shapes != NULL:
        for i in range(c.n_shapes):
            free(c.shapes[i].move)
            free(c.shapes[i].scale_line)
            free(c.shapes[i].offset_line)
    free(c.shapes)
    c.shapes = NULL
