# Operators as copies: SpaceToDepth, DepthToSpace and Tile as the axes and
# steps of one copy (copy_parts plans and runs it), which item of the source
# lands where. NCHW_VECT_C depth_first with bs*bs not a multiple of 4 has no
# such axes: it runs in _engine/operators/vect_c.pxi.
#
# Built in C because the axes are rebuilt on every call: for a tiny input they
# cost more than the copy, and building them in Python cost ~20 us.
#
# SpaceToDepth and DepthToSpace are one copy read in opposite directions: the
# "space" array [N, C, D1, ..., DK] and the "depth" array
# [N, C * bs**K, D1/bs, ..., DK/bs] are both split into the axes
#
#     n, d1 .. dK (block positions), c (space channel), b1 .. bK (offsets in a block)
#
# (splitting an axis of a strided array is always a view, so neither side is
# ever reshaped through a copy). With B = b1 .. bK read as a base-bs number,
# the last spatial axis the lowest digit, and M = bs**K, the depth channel is
#     blocks_first (DCR): B * C + c        depth_first (CRD): c * M + B
# space_to_depth copies space -> depth and depth_to_space depth -> space.

# The layout codes and NCHW_VECT_C's group width: compile-time constants
# for the C code, and Python names (CHANNELS_FIRST, ...) for
# fastblock._call.layouts, which reads them from here.
cdef enum:
    LAYOUT_CHANNELS_FIRST = 0
    LAYOUT_CHANNELS_LAST = 1
    LAYOUT_NCHW_VECT_C = 2
    VECT_C_GROUP = 4

CHANNELS_FIRST = LAYOUT_CHANNELS_FIRST
CHANNELS_LAST = LAYOUT_CHANNELS_LAST
NCHW_VECT_C = LAYOUT_NCHW_VECT_C
NCHW_VECT_C_GROUP = VECT_C_GROUP

from fastblock._engine.types cimport MAX_INPUT_AXES, intp


cdef struct LogicalView:
    # An array seen as [N, C, D1, ..., DK] whatever its layout (N may be
    # several batch axes). NCHW_VECT_C ([N, C/4, H, W, 4]) keeps channel c at
    # group c // 4, lane c % 4.
    int n_batch
    intp batch[MAX_INPUT_AXES]
    intp batch_stride[MAX_INPUT_AXES]
    intp channels
    intp channel_stride         # step of a channel, or of a group (NCHW_VECT_C)
    intp lane_stride            # step of a lane (NCHW_VECT_C), else 0
    int n_spatial
    intp spatial[MAX_INPUT_AXES]
    intp spatial_stride[MAX_INPUT_AXES]


cdef void read_view(LogicalView* view, cnp.ndarray array, int layout, int n_batch) noexcept:
    cdef intp* shape = cnp.PyArray_DIMS(array)
    cdef intp* strides = cnp.PyArray_STRIDES(array)
    cdef int ndim = cnp.PyArray_NDIM(array), k, first = n_batch + 1
    view.n_batch = n_batch
    for k in range(n_batch):
        view.batch[k] = shape[k]
        view.batch_stride[k] = strides[k]
    view.lane_stride = 0
    view.n_spatial = ndim - n_batch - 1
    if layout == LAYOUT_CHANNELS_FIRST:
        view.channels = shape[n_batch]
        view.channel_stride = strides[n_batch]
    elif layout == LAYOUT_CHANNELS_LAST:
        view.channels = shape[ndim - 1]
        view.channel_stride = strides[ndim - 1]
        first = n_batch
    else:
        view.channels = shape[n_batch] * VECT_C_GROUP
        view.channel_stride = strides[n_batch]
        view.lane_stride = strides[ndim - 1]
        view.n_spatial = 2
    for k in range(view.n_spatial):
        view.spatial[k] = shape[first + k]
        view.spatial_stride[k] = strides[first + k]


cdef int block_axes(LogicalView* s, LogicalView* d, cnp.ndarray space, cnp.ndarray depth,
                    int layout, intp bs, bint depth_first, int n_batch, intp* extent,
                    intp* space_step, intp* depth_step) except -2:
    """The axes of SpaceToDepth / DepthToSpace between ``space`` and
    ``depth`` (see space_depth_copy): their count, with each axis's extent
    and its step on either side; -1 where no axes describe the copy
    (NCHW_VECT_C depth_first with bs*bs not a multiple of 4: vect_c_copy,
    with ``s`` and ``d`` read)."""
    cdef intp blocks = 1, channels, groups, per_block = 0, weight
    cdef int n = 0, k, n_spatial
    if n_batch < 0 or space.ndim < n_batch + 2 or space.ndim != depth.ndim:
        raise ValueError("fastblock: space_depth_copy got arrays that do not match n_batch")
    read_view(s, space, layout, n_batch)
    read_view(d, depth, layout, n_batch)
    n_spatial = s.n_spatial
    channels = s.channels
    for k in range(n_spatial):
        blocks *= bs            # <= the depth channel count: no overflow

    for k in range(s.n_batch):
        extent[n] = s.batch[k]; space_step[n] = s.batch_stride[k]; depth_step[n] = d.batch_stride[k]
        n += 1
    for k in range(n_spatial):
        extent[n] = s.spatial[k] // bs
        space_step[n] = s.spatial_stride[k] * bs
        depth_step[n] = d.spatial_stride[k]
        n += 1

    if layout != LAYOUT_NCHW_VECT_C:
        extent[n] = channels
        space_step[n] = s.channel_stride
        depth_step[n] = d.channel_stride * blocks if depth_first else d.channel_stride
        n += 1
        per_block = d.channel_stride if depth_first else d.channel_stride * channels
    elif not depth_first:
        # c_depth = B*C + 4*g + r and 4 divides C: group B*C/4 + g, lane r.
        groups = channels // VECT_C_GROUP
        extent[n] = groups; space_step[n] = s.channel_stride; depth_step[n] = d.channel_stride; n += 1
        extent[n] = VECT_C_GROUP; space_step[n] = s.lane_stride; depth_step[n] = d.lane_stride; n += 1
        per_block = d.channel_stride * groups
    else:
        return vect_c_depth_first_axes(s, d, bs, n, extent, space_step, depth_step)

    weight = blocks
    for k in range(n_spatial):
        weight //= bs
        extent[n] = bs
        space_step[n] = s.spatial_stride[k]
        depth_step[n] = per_block * weight
        n += 1
    return n


cdef int vect_c_depth_first_axes(const LogicalView* s, const LogicalView* d, intp bs, int n,
                                 intp* extent, intp* space_step, intp* depth_step) noexcept:
    """block_axes for NCHW_VECT_C depth_first, after its first ``n`` axes
    (batch and block positions): the count, or -1 where bs*bs is not a
    multiple of 4."""
    cdef intp groups = s.channels // VECT_C_GROUP, blocks = bs * bs
    if bs != 2 and bs % VECT_C_GROUP != 0:
        # M odd, or bs = 2 mod 4: B's digits do not split into group and
        # lane digits (vect_c_copy's paths).
        return -1
    # c_depth = (4*g + r)*M + B with 4 | M: depth group g*M + r*M/4 + B // 4,
    # lane B % 4, and both split B's digits (b1, b2) into whole axes.
    extent[n] = groups; space_step[n] = s.channel_stride; depth_step[n] = d.channel_stride * blocks
    n += 1
    extent[n] = VECT_C_GROUP; space_step[n] = s.lane_stride
    depth_step[n] = d.channel_stride * (blocks // VECT_C_GROUP)
    n += 1
    if bs == 2:
        # B = 2*b1 + b2 < 4 is the lane.
        extent[n] = 2; space_step[n] = s.spatial_stride[0]; depth_step[n] = 2 * d.lane_stride
        n += 1
        extent[n] = 2; space_step[n] = s.spatial_stride[1]; depth_step[n] = d.lane_stride
        n += 1
        return n
    # B = bs*b1 + b2: group (bs/4)*b1 + b2 // 4, lane b2 % 4.
    extent[n] = bs; space_step[n] = s.spatial_stride[0]
    depth_step[n] = (bs // VECT_C_GROUP) * d.channel_stride
    n += 1
    extent[n] = bs // VECT_C_GROUP; space_step[n] = VECT_C_GROUP * s.spatial_stride[1]
    depth_step[n] = d.channel_stride
    n += 1
    extent[n] = VECT_C_GROUP; space_step[n] = s.spatial_stride[1]; depth_step[n] = d.lane_stride
    n += 1
    return n


def space_depth_copy(cnp.ndarray space not None, cnp.ndarray depth not None, int layout,
                     intp block_size, bint depth_first, bint to_depth, int num_threads=1,
                     int n_batch=1):
    """SpaceToDepth (``to_depth``) or DepthToSpace between two checked arrays.

    ``space`` and ``depth`` have matching shapes for ``block_size`` and
    ``layout`` with ``n_batch`` leading batch axes (checked by the caller),
    the same item size, no references, and do not overlap."""
    cdef LogicalView s, d
    cdef intp extent[MAX_INPUT_AXES]
    cdef intp space_step[MAX_INPUT_AXES]
    cdef intp depth_step[MAX_INPUT_AXES]
    cdef int n
    if cnp.PyArray_SIZE(space) == 0:
        return
    n = block_axes(&s, &d, space, depth, layout, block_size, depth_first, n_batch, extent,
                   space_step, depth_step)
    enter_copy()
    try:
        if n < 0:
            vect_c_copy(&s, &d, space, depth, block_size, to_depth, num_threads)
        elif to_depth:
            copy_axes(space, depth, n, extent, space_step, depth_step, num_threads)
        else:
            copy_axes(depth, space, n, extent, depth_step, space_step, num_threads)
    finally:
        leave_copy()


def space_depth_axes(cnp.ndarray space not None, cnp.ndarray depth not None, int layout,
                     intp block_size, bint depth_first, bint to_depth, int n_batch=1):
    """space_depth_copy's copy as ``(extents, src_strides, dst_strides)``
    (source: ``space`` if ``to_depth``, else ``depth``), or None where it
    has no axes (NCHW_VECT_C depth_first, bs*bs not a multiple of 4:
    vect_c_copy)."""
    cdef LogicalView s, d
    cdef intp extent[MAX_INPUT_AXES]
    cdef intp space_step[MAX_INPUT_AXES]
    cdef intp depth_step[MAX_INPUT_AXES]
    cdef int n = block_axes(&s, &d, space, depth, layout, block_size, depth_first, n_batch,
                            extent, space_step, depth_step)
    if n < 0:
        return None
    if to_depth:
        return axes_tuples(n, extent, space_step, depth_step)
    return axes_tuples(n, extent, depth_step, space_step)


cdef int copy_axes(cnp.ndarray src, cnp.ndarray dst, int n, const intp* extent,
                   const intp* src_step, const intp* dst_step, int num_threads) except -1:
    """Copy ``src`` into ``dst`` over ``n`` axes (one part, no table)."""
    cdef intp zero = 0
    return copy_parts(<char*>cnp.PyArray_DATA(src), <char*>cnp.PyArray_DATA(dst), n, extent,
                      src_step, dst_step, cnp.PyArray_ITEMSIZE(dst), 1, &zero, &zero, num_threads)


cdef tuple axes_tuples(int n, const intp* extent, const intp* src_step, const intp* dst_step):
    """``n`` axes as ``(extents, src_strides, dst_strides)``."""
    cdef int k
    return (tuple([extent[k] for k in range(n)]), tuple([src_step[k] for k in range(n)]),
            tuple([dst_step[k] for k in range(n)]))


cdef int tile_axes(cnp.ndarray src, cnp.ndarray dst, tuple repeats, intp* extent,
                   intp* src_step, intp* dst_step) except -1:
    """``numpy.tile``'s axes (see tile_copy); returns their count."""
    cdef int n_axes = len(repeats), lead = n_axes - src.ndim, i
    cdef intp size, step
    cdef intp* dst_strides = cnp.PyArray_STRIDES(dst)
    if 2 * n_axes > MAX_INPUT_AXES:
        raise ValueError(f"fastblock: tile over {n_axes} axes, at most {MAX_INPUT_AXES // 2}")
    for i in range(n_axes):
        size = 1 if i < lead else cnp.PyArray_DIMS(src)[i - lead]
        step = 0 if i < lead else cnp.PyArray_STRIDES(src)[i - lead]
        extent[2 * i] = repeats[i]
        src_step[2 * i] = 0
        dst_step[2 * i] = dst_strides[i] * size
        extent[2 * i + 1] = size
        src_step[2 * i + 1] = step
        dst_step[2 * i + 1] = dst_strides[i]
    return 2 * n_axes


def tile_copy(cnp.ndarray src not None, cnp.ndarray dst not None, tuple repeats, int num_threads=1):
    """``numpy.tile``: destination axis i is split into (repeat, item) axes,
    and the source does not move along the repeat axis (step 0).

    ``repeats`` has ``dst.ndim`` entries, at least ``src.ndim``; ``src`` is
    promoted with leading axes of size 1."""
    cdef intp extent[MAX_INPUT_AXES]
    cdef intp src_step[MAX_INPUT_AXES]
    cdef intp dst_step[MAX_INPUT_AXES]
    cdef int n = tile_axes(src, dst, repeats, extent, src_step, dst_step)
    enter_copy()
    try:
        copy_axes(src, dst, n, extent, src_step, dst_step, num_threads)
    finally:
        leave_copy()


def tile_copy_axes(cnp.ndarray src not None, cnp.ndarray dst not None, tuple repeats):
    """tile_copy's copy as ``(extents, src_strides, dst_strides)``."""
    cdef intp extent[MAX_INPUT_AXES]
    cdef intp src_step[MAX_INPUT_AXES]
    cdef intp dst_step[MAX_INPUT_AXES]
    cdef int n = tile_axes(src, dst, repeats, extent, src_step, dst_step)
    return axes_tuples(n, extent, src_step, dst_step)
