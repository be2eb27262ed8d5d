# Planner step 3 (_engine/plan/planner.pxi), lane transposes (_engine/types.pxd):
# whether a copy is one (plan_lanes), its lanes' offsets, the byte shuffles
# of the kernel's rows (plan_lane_masks) and the kernel (fb_lanes_rows_for).

from fastblock._engine.types cimport Axes, KERNEL_LANES, LANES_MAX, LANE_GROUP, LANE_MASKS, LaneTranspose, Plan, intp
from fastblock._engine.kernels_c cimport fb_lanes_rows_for


# Two lanes of 4-byte items (bs 2 float32 channels_first) go through the
# lane kernel's rows (fb_pair_rows) from this many pixels a row; shorter
# rows, and streamed interleaves, keep the block kernel (rows of 16
# pixels: 1.43 -> 2.66 x np.copyto in the pair rows).
cdef enum:
    PAIR_MIN_PIXELS = 32


cdef inline bint lanes_by_permutes(const Plan* p, intp pixels) noexcept nogil:
    """Whether a lane transpose's rows of ``pixels`` go by 64-byte permutes
    (fb_lanes_rows_wide, AVX-512 VBMI), in rows of at least one step (64
    bytes of each lane): 3 or 4 lanes of 1- or 2-byte items, or 2 where
    the destination is not streamed; 3 or 4 lanes of 4-byte items where it
    is not, and 3 interleaved where it is. 1 MiB in cache, one thread, over
    np.copyto: RGB uint8 pixels to planes 2.2 -> 1.2 and back 2.6 -> 1.1,
    float32 1.8 -> 1.1 and back 1.3 -> 1.0; SpaceToDepth uint8 and float16
    bs 2 2.2 -> 1.5 and 2.1 -> 1.3, float32 bs 3 2.4 -> 1.3 and back 1.7 ->
    1.2. Streamed, two lanes of 1- and 2-byte items lost on two threads (64
    MiB float16 bs 2: 0.61 -> 0.95; one thread level), and so did splits
    of float32 (64 MiB bs 4: 0.66 -> 0.84) and 4 interleaved float32 lanes
    on one thread (16 MiB RGBA planes to pixels: 0.74-0.86 -> 1.04-1.07);
    3 interleaved gained (12 MiB RGB: 1.4-1.5 -> 0.8-1.0). Two float32
    lanes keep their own kernel (fb_pair_rows: 1.14, 1.20 by permutes);
    shorter rows are all masked tails (64 KiB uint8 bs 4: 5.9 -> 8.7)."""
    cdef int lanes = p.lanes.n_lanes
    if not (2 <= lanes <= 4 and pixels * p.width >= 64 and tuning.wide_shuffles and use_vbmi()):
        return False
    if p.width <= 2:
        return lanes > 2 or not p.stream
    return p.width == 4 and lanes > 2 and (not p.stream or p.lanes.interleave and lanes == 3)


cdef inline bint rows_across_groups(const Plan* p, intp dst_group, intp dst_in,
                                    const intp* lane_offset) noexcept nogil:
    """Whether a lane transpose's block runs the first row of every group,
    then the second, and so on (its FbLaneRows swapped), rather than group
    by group. On the side where the lanes lie apart (a split's destination,
    ``dst_group`` and ``dst_in`` bytes apart, an interleave's source): where
    the rows of a group lie whole L1 ways apart and the groups do not, and a
    group's rows and the lanes that share their sets are more lines than a
    set holds. SpaceToDepth channels-first writes a group's bs rows into
    planes bs x C apart and its bs lanes into planes C apart, DepthToSpace
    reads them. Over np.copyto, 1 MiB to 4 MiB, one thread:
    SpaceToDepth float32 bs 4 [1, 16, 256, 256] 1.76 -> 1.46, [1, 64, 64,
    64] 2.94 -> 1.84, uint8 bs 4 [1, 3, 512, 512] 1.95 -> 1.42;
    DepthToSpace uint8 bs 4 [1, 16, 512, 512] 2.15 -> 1.67. Rows that lie
    apart keep the group order (SpaceToDepth at 120 x 120: 1.45, 1.77
    across), and so do fewer lines (bs 2: 1.16, 1.35 across) and streamed
    destinations, whose kernel writes the stage (64 MiB float32 bs 4, one
    thread: 0.77, 0.82 across)."""
    cdef intp group = p.src_a if p.lanes.interleave else dst_group
    cdef intp within = p.lanes.src_in if p.lanes.interleave else dst_in
    cdef int l, crowded = 0
    if p.stream or p.lanes.rows_in < 2 or within % L1_WAY_BYTES != 0 \
            or group % L1_WAY_BYTES == 0:
        return False
    for l in range(p.lanes.n_lanes):
        crowded += (lane_offset[l] - lane_offset[0]) % L1_WAY_BYTES == 0
    return crowded * p.lanes.rows_in > L1_WAYS


cdef inline bint splits_by_lines(const Plan* p, const intp* lane_offset) noexcept nogil:
    """Whether a lane split writes each lane's line by four stores in a
    row (fb_lanes_rows' line_split): more than 8 lanes of 1-, 2- or 4-byte
    items, all whole L1 ways apart, in a copy under stream_min_bytes. A
    block of 16 byte lanes (8 of 2 bytes) then shares one set of 8 ways;
    16 bytes of every lane at a time, each line was fetched four times.
    Channels-last to channels-first, one thread, over np.copyto: uint8 64
    channels [1, 64, 64, 64] 7.4 -> 3.5, [1, 128, 128, 64] 9.1 -> 5.5;
    uint16 16 channels 4.6 -> 3.6 and float32 12 channels 4.1 -> 2.7, both
    at 128 x 128. Lanes that do not all share a set lost (uint8 64
    channels at 224 x 224: 3.5 -> 4.9), and so did interleaves read a line
    at a time and copies past the caches, where the buffer's moves cost
    more than the fetches (uint8 64 channels at 512 x 512, unstreamed, two
    threads: 2.7 -> 5.1)."""
    cdef int l
    if not tuning.line_splits or p.lanes.interleave or p.width > 4 or p.lanes.n_lanes <= 8 \
            or p.copy_bytes >= tuning.stream_min_bytes:
        return False
    for l in range(1, p.lanes.n_lanes):
        if (lane_offset[l] - lane_offset[0]) % L1_WAY_BYTES != 0:
            return False
    return True


cdef bint plan_lanes(Plan* p, Axes* axes) noexcept nogil:
    """Set up a lane transpose of 1-, 2-, 4- or 8-byte items (``_engine/types.pxd``)
    if the copy is one; the lane axes are then removed and the pixel axis is
    the last one. Pixels of up to LANES_MAX bytes. 3 lanes of 4-byte items
    gain over the block kernel (5-D space_to_depth bs=3 float32 rows of 52
    pixels 1.40 -> 0.66 x np.copyto, the rows batched in one call); 2 lanes
    of them (fb_pair_rows) in rows of PAIR_MIN_PIXELS pixels or more, but
    for a streamed interleave (lanes_pay). The two forms: find_interleave
    and find_split. Lanes that repeat a source item (Tile) are left to the
    other kernels, and so are pixel axes shorter than a register of items."""
    cdef intp w = p.width, n_lanes
    cdef int pixel_axis, n_lane_axes
    cdef int lane_axis[LANES_MAX]
    cdef LaneTranspose* t = &p.lanes
    t.n_lanes = 0
    if not use_simd128() or (w != 1 and w != 2 and w != 4 and w != 8) or axes.n < 2:
        return False
    pixel_axis = choose_lane_form(t, axes, w, lane_axis, &n_lane_axes, &n_lanes)
    if pixel_axis < 0 or not lanes_pay(p, n_lanes, axes.extent[pixel_axis]):
        return False
    t.n_lanes = <int>n_lanes
    p.kernel = KERNEL_LANES
    set_lane_offsets(t, axes, lane_axis, n_lane_axes, w)
    if (w == 1 and n_lanes <= 16) or (w == 2 and n_lanes <= 8):
        plan_lane_masks(t, w)
    t.rows_kernel = fb_lanes_rows_for(t.n_lanes, <int>w, t.interleave,
                                      splits_by_lines(p, &t.offset[0]), &t.offset[0])
    remove_axes(axes, lane_axis, n_lane_axes)
    return True


cdef int find_interleave(const Axes* axes, intp w, intp* n_lanes) noexcept nogil:
    """An interleave: the innermost destination axes hold at most
    LANES_MAX bytes of items contiguously (the lanes, read at any source
    steps), and the next destination axis continues them while stepping one
    item in the source (the pixels). As many lane axes as fit, backing off
    to the last axis that could be the pixel axis when the one after them
    cannot (a [4, 3, 60] byte transpose: 3 lanes, 60 pixels, not 180 lanes
    and none). Returns the pixel axis (-1: none), ``n_lanes`` the lanes."""
    cdef const intp* ext = &axes.extent[0]
    cdef const intp* ss = &axes.src_step[0]
    cdef const intp* ds = &axes.dst_step[0]
    cdef int k = axes.n - 1, pixel_axis = -1
    cdef intp lanes = 1, max_lanes = LANES_MAX // w, group = LANE_GROUP // w
    n_lanes[0] = 0
    while k >= 0 and ds[k] == lanes * w and ss[k] != 0:
        if lanes >= 2 and ss[k] == w and ext[k] >= group:
            pixel_axis = k
            n_lanes[0] = lanes
        if lanes * ext[k] > max_lanes:
            break
        lanes *= ext[k]
        k -= 1
    return pixel_axis


cdef bint find_split(const Axes* axes, intp w, int* lane_axis, int* n_lane_axes,
                     intp* n_lanes) noexcept nogil:
    """A split: the destination's innermost axis (the pixels) steps L items
    in the source, and axes stepping 1, e1, e1*e2 ... items in the source
    make up those L items (the lanes, written at any destination steps),
    their axes into ``lane_axis``, innermost first. Pixels of 8-byte items
    stop at 64 bytes: beyond, a 2 x 2 transpose a block saves too little (16
    lanes of float64: 0.88 x np.copyto against 0.72 in the block kernel;
    interleaves of 9 lanes gain, 0.91 -> 0.51)."""
    cdef const intp* ext = &axes.extent[0]
    cdef const intp* ss = &axes.src_step[0]
    cdef int m = axes.n, i, j
    cdef intp lanes = 1, max_lanes = LANES_MAX // w
    n_lane_axes[0] = 0
    while ss[m - 1] != lanes * w:
        j = -1
        for i in range(m - 1):
            if ss[i] == lanes * w and lanes * ext[i] <= max_lanes:
                j = i
                break
        if j < 0:
            return False
        lane_axis[n_lane_axes[0]] = j
        n_lane_axes[0] += 1
        lanes *= ext[j]
    n_lanes[0] = lanes
    return lanes >= 2 and axes.dst_step[m - 1] == w and ext[m - 1] >= LANE_GROUP // w \
        and not (w == 8 and lanes * w > 64)


cdef int choose_lane_form(LaneTranspose* t, const Axes* axes, intp w, int* lane_axis,
                          int* n_lane_axes, intp* n_lanes) noexcept nogil:
    """An interleave or a split (``t.interleave``), its lane axes in order
    of position into ``lane_axis`` and its lanes into ``n_lanes``; returns
    the pixel axis, -1 for neither. When both forms exist, the one that
    moves more items a row wins, then the one with more pixels
    (depth_to_space depth_first NHWC, C 4, bs 4, float32: a split of 16
    lanes of 4 pixels, 0.52 x np.copyto, against an interleave of 4 lanes
    of 4 pixels, 0.78)."""
    cdef const intp* ext = &axes.extent[0]
    cdef int m = axes.n, k, i, j, d
    cdef intp interleave_lanes, pixels
    cdef bint can_split
    k = find_interleave(axes, w, &interleave_lanes)
    can_split = find_split(axes, w, lane_axis, n_lane_axes, n_lanes)
    if k >= 0 and can_split:
        pixels = n_lanes[0] * ext[m - 1]
        if pixels < interleave_lanes * ext[k] or (pixels == interleave_lanes * ext[k]
                                                 and ext[m - 1] <= ext[k]):
            can_split = False
    if can_split:
        t.interleave = False
        # Insertion sort by position, for remove_axes.
        for i in range(1, n_lane_axes[0]):
            d = lane_axis[i]
            j = i - 1
            while j >= 0 and lane_axis[j] > d:
                lane_axis[j + 1] = lane_axis[j]
                j -= 1
            lane_axis[j + 1] = d
        return m - 1
    if k < 0:
        return -1
    t.interleave = True
    n_lanes[0] = interleave_lanes
    n_lane_axes[0] = 0
    for i in range(k + 1, m):
        lane_axis[n_lane_axes[0]] = i
        n_lane_axes[0] += 1
    return k


cdef bint lanes_pay(const Plan* p, intp n_lanes, intp pixels) noexcept nogil:
    """Whether the lane kernel beats the others for rows of ``pixels``
    pixels of ``n_lanes`` lanes (``p.lanes.interleave``: of that form)."""
    cdef intp w = p.width
    if w == 4 and n_lanes == 2 and (pixels < PAIR_MIN_PIXELS or (p.lanes.interleave and p.stream)):
        return False
    # Padded blocks of lanes end each run through a buffer: a run must be
    # long for that to pay (runs of 4 pixels of 3 float64 lanes ran at 1.06
    # x np.copyto against 0.45 in the block kernel).
    # So do pixels of more than 64 bytes, a block of lanes at a time (16
    # lanes of float64 with runs of 4 pixels: 1.07 x np.copyto against 0.43
    # for gathered rows).
    return not ((((w >= 4 or n_lanes * w > 16) and n_lanes % (LANE_GROUP // w) != 0)
                 or n_lanes * w > 64) and pixels < LANE_GROUP)


cdef void set_lane_offsets(LaneTranspose* t, const Axes* axes, const int* lane_axis,
                           int n_lane_axes, intp w) noexcept nogil:
    """Each lane's offset on the side where the lanes lie apart. Lane j (its
    place in the packed pixel) has digit (j // packed step) % extent on
    each lane axis; its offset is those digits times the other side's steps."""
    cdef const intp* ext = &axes.extent[0]
    cdef const intp* ss = &axes.src_step[0]
    cdef const intp* ds = &axes.dst_step[0]
    cdef intp offset
    cdef int i, j, a
    for j in range(t.n_lanes):
        offset = 0
        for i in range(n_lane_axes):
            a = lane_axis[i]
            if t.interleave:
                offset += (j // (ds[a] // w)) % ext[a] * ss[a]
            else:
                offset += (j // (ss[a] // w)) % ext[a] * ds[a]
        t.offset[j] = offset


cdef void remove_axes(Axes* axes, const int* removed, int n_removed) noexcept nogil:
    """Remove the ``removed`` axes (in order of position), keeping the order
    of the others."""
    cdef int i, j = 0, d = 0
    for i in range(axes.n):
        if d < n_removed and removed[d] == i:
            d += 1
            continue
        axes.extent[j] = axes.extent[i]
        axes.src_step[j] = axes.src_step[i]
        axes.dst_step[j] = axes.dst_step[i]
        j += 1
    axes.n = j


cdef void plan_lane_masks(LaneTranspose* t, intp width) noexcept nogil:
    """The byte shuffles of ``fb_lanes_row`` for ``t.n_lanes`` lanes of
    ``width``-byte items. A register holds P elements of e bytes (e * P =
    16): e / width pixels of one lane (lane order) or, after the transpose,
    of every lane (pixel order)."""
    cdef int L = t.n_lanes, P = 2, e, per, q, l, b, k, z, edge
    while P < L:
        P *= 2
    e = 16 // P
    per = e // <int>width
    for k in range(LANE_MASKS * 16):
        t.masks[k] = 0x80
    for q in range(per):
        for l in range(L):
            for b in range(width):
                t.masks[(q * L + l) * width + b] = <unsigned char>((l * per + q) * width + b)
                t.masks[48 + (l * per + q) * width + b] = <unsigned char>((q * L + l) * width + b)
                t.masks[64 + (l * per + q) * width + b] = \
                    <unsigned char>(16 - e * L + (q * L + l) * width + b)
    # The run's last 16 bytes: the end of register P-2, then register P-1
    # (both already in pixel order; e*L >= 8, so no other register is needed).
    edge = (P - 1) * e * L
    for k in range(16):
        z = 16 * L - 16 + k
        if z < edge:
            t.masks[16 + k] = <unsigned char>(z - (P - 2) * e * L)
        else:
            t.masks[32 + k] = <unsigned char>(z - edge)
