# Operators as copy plans: which item of the source lands where.
#
# Built in C because a plan is rebuilt on every call: for a tiny input the plan
# costs more than the copy, and Python-level plan building cost ~20 us.
#
# SpaceToDepth and DepthToSpace are one plan read in opposite directions: the
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

cdef enum:
    LAYOUT_CHANNELS_FIRST = 0
    LAYOUT_CHANNELS_LAST = 1
    LAYOUT_NCHW_VECT_C = 2
    # NCHW_VECT_C keeps channels in groups of this many, innermost.
    VECT_C_GROUP = 4

CHANNELS_FIRST = LAYOUT_CHANNELS_FIRST
CHANNELS_LAST = LAYOUT_CHANNELS_LAST
NCHW_VECT_C = LAYOUT_NCHW_VECT_C


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


def block_copy(cnp.ndarray space not None, cnp.ndarray depth not None, int layout,
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
    cdef intp zero = 0
    cdef intp bs = block_size, blocks = 1, channels, groups, per_block = 0, weight
    cdef intp lane, block, rest, within, space_offset
    cdef intp[::1] space_offsets, depth_offsets
    cdef int n = 0, k, n_spatial
    if cnp.PyArray_SIZE(space) == 0:
        return
    if n_batch < 0 or space.ndim < n_batch + 2 or space.ndim != depth.ndim:
        raise ValueError("fastblock: block_copy got arrays that do not match n_batch")
    read_view(&s, space, layout, n_batch)
    read_view(&d, depth, layout, n_batch)
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
    elif bs == 2 or bs % VECT_C_GROUP == 0:
        # c_depth = (4*g + r)*M + B with 4 | M: depth group g*M + r*M/4 + B // 4,
        # lane B % 4, and both split B's digits (b1, b2) into whole axes.
        groups = channels // VECT_C_GROUP
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
        else:
            # B = bs*b1 + b2: group (bs/4)*b1 + b2 // 4, lane b2 % 4.
            extent[n] = bs; space_step[n] = s.spatial_stride[0]
            depth_step[n] = (bs // VECT_C_GROUP) * d.channel_stride
            n += 1
            extent[n] = bs // VECT_C_GROUP; space_step[n] = VECT_C_GROUP * s.spatial_stride[1]
            depth_step[n] = d.channel_stride
            n += 1
            extent[n] = VECT_C_GROUP; space_step[n] = s.spatial_stride[1]; depth_step[n] = d.lane_stride
            n += 1
        _run_block_copy(space, depth, n, extent, space_step, depth_step, 1,
                        &zero, &zero, to_depth, num_threads)
        return
    else:
        # c_depth = (4*g + r)*M + B = 4*g*M + (r*M + B): a group step of M
        # groups, and each (r, B) pair is one part of the copy at fixed offsets
        # (M odd, or bs = 2 mod 4: no split of B into group and lane digits).
        groups = channels // VECT_C_GROUP
        extent[n] = groups; space_step[n] = s.channel_stride; depth_step[n] = d.channel_stride * blocks
        n += 1
        space_offsets = cvarray_intp(VECT_C_GROUP * blocks)
        depth_offsets = cvarray_intp(VECT_C_GROUP * blocks)
        for lane in range(VECT_C_GROUP):
            for block in range(blocks):
                space_offset = lane * s.lane_stride
                rest = block
                for k in range(n_spatial - 1, -1, -1):
                    space_offset += (rest % bs) * s.spatial_stride[k]
                    rest //= bs
                within = lane * blocks + block
                space_offsets[lane * blocks + block] = space_offset
                depth_offsets[lane * blocks + block] = ((within // VECT_C_GROUP) * d.channel_stride
                                                        + (within % VECT_C_GROUP) * d.lane_stride)
        _run_block_copy(space, depth, n, extent, space_step, depth_step, VECT_C_GROUP * blocks,
                        &space_offsets[0], &depth_offsets[0], to_depth, num_threads)
        return

    weight = blocks
    for k in range(n_spatial):
        weight //= bs
        extent[n] = bs
        space_step[n] = s.spatial_stride[k]
        depth_step[n] = per_block * weight
        n += 1
    _run_block_copy(space, depth, n, extent, space_step, depth_step, 1,
                    &zero, &zero, to_depth, num_threads)


cdef int _run_block_copy(cnp.ndarray space, cnp.ndarray depth, int n, intp* extent,
                         intp* space_step, intp* depth_step, intp n_parts,
                         const intp* space_offsets, const intp* depth_offsets,
                         bint to_depth, int num_threads) except -1:
    cdef intp itemsize = cnp.PyArray_ITEMSIZE(depth)
    if to_depth:
        copy_parts(<char*>cnp.PyArray_DATA(space), <char*>cnp.PyArray_DATA(depth), n, extent,
                   space_step, depth_step, itemsize, n_parts, space_offsets,
                   depth_offsets, num_threads)
    else:
        copy_parts(<char*>cnp.PyArray_DATA(depth), <char*>cnp.PyArray_DATA(space), n, extent,
                   depth_step, space_step, itemsize, n_parts, depth_offsets,
                   space_offsets, num_threads)
    return 0


def tile_copy(cnp.ndarray src not None, cnp.ndarray dst not None, tuple repeats, int num_threads=1):
    """``numpy.tile``: destination axis i is split into (repeat, item) axes,
    and the source does not move along the repeat axis (step 0).

    ``repeats`` has ``dst.ndim`` entries, at least ``src.ndim``; ``src`` is
    promoted with leading axes of size 1."""
    cdef intp extent[MAX_INPUT_AXES]
    cdef intp src_step[MAX_INPUT_AXES]
    cdef intp dst_step[MAX_INPUT_AXES]
    cdef intp zero = 0
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
    copy_parts(<char*>cnp.PyArray_DATA(src), <char*>cnp.PyArray_DATA(dst), 2 * n_axes, extent,
               src_step, dst_step, cnp.PyArray_ITEMSIZE(dst), 1, &zero, &zero, num_threads)
