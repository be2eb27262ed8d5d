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
    cdef intp bs = block_size, blocks = 1, channels, groups, per_block = 0, weight
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
        _run_block_copy(space, depth, n, extent, space_step, depth_step, to_depth, num_threads)
        return
    else:
        # M odd, or bs = 2 mod 4: B's digits do not split into group and
        # lane digits; the copy goes through planes (see StagedVectC).
        _staged_vect_c_copy(&s, &d, space, depth, bs, to_depth, num_threads)
        return

    weight = blocks
    for k in range(n_spatial):
        weight //= bs
        extent[n] = bs
        space_step[n] = s.spatial_stride[k]
        depth_step[n] = per_block * weight
        n += 1
    _run_block_copy(space, depth, n, extent, space_step, depth_step, to_depth, num_threads)


cdef int _run_block_copy(cnp.ndarray space, cnp.ndarray depth, int n, intp* extent,
                         intp* space_step, intp* depth_step, bint to_depth,
                         int num_threads) except -1:
    cdef intp itemsize = cnp.PyArray_ITEMSIZE(depth), zero = 0
    if to_depth:
        copy_parts(<char*>cnp.PyArray_DATA(space), <char*>cnp.PyArray_DATA(depth), n, extent,
                   space_step, depth_step, itemsize, 1, &zero, &zero, num_threads)
    else:
        copy_parts(<char*>cnp.PyArray_DATA(depth), <char*>cnp.PyArray_DATA(space), n, extent,
                   depth_step, space_step, itemsize, 1, &zero, &zero, num_threads)
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


cdef enum:
    # Scratch bytes per thread for the planes of one NCHW_VECT_C block: in
    # L2, and as large as that allows, since each block reads its source in
    # one phase and writes its result in the next, and fewer, longer phases
    # keep the memory streams going (64 MiB bs=3 depth_first, two threads,
    # x np.copyto; 64 KiB -> 256 KiB: space_to_depth uint8 0.84 -> 0.73,
    # float32 0.70 -> 0.56, depth_to_space float32 0.70 -> 0.66; 2 MiB
    # planes, as large as L2, lose it again).
    VECT_C_STAGE_BYTES = 256 * 1024

# For the tests: the staged path takes rows in blocks of about this many bytes.
VECT_C_SCRATCH_BYTES = VECT_C_STAGE_BYTES


cdef struct StagedVectC:
    # NCHW_VECT_C depth_first with bs*bs = M not a multiple of 4. Depth
    # channel (4*g + r)*M + B, r the space lane and B the block offset, is
    # depth group g*M + t // 4, lane t % 4 with t = r*M + B: t mixes r and B
    # in a way no axes describe. So each block of `rows` depth rows of one
    # space group goes through 4*M planes [t][rows][W/bs] in a per-thread
    # scratch: space <-> planes is a plain permutation (for bytes a split or
    # an interleave of 4*bs lanes) and planes <-> depth another (4 lanes).
    Plan to_planes[2]           # source side -> planes: whole blocks, last block
    Plan from_planes[2]         # planes -> destination side
    # Each plan's base-pointer moves (source, destination), run as its one part.
    intp shifts[8]
    intp rows, last_rows, n_row_blocks, groups, blocks
    intp scratch_bytes
    int n_batch
    intp batch[MAX_INPUT_AXES]
    intp src_batch_step[MAX_INPUT_AXES]
    intp dst_batch_step[MAX_INPUT_AXES]
    intp src_group_step, dst_group_step, src_row_step, dst_row_step
    char* src
    char* dst


cdef int _stage_plan(StagedVectC* job, Plan* plan, intp* shifts, int ndim, intp* ext,
                     intp* src_step, intp* dst_step, intp itemsize, intp whole_bytes) except -1:
    """Build one staging plan. A negative destination step (an ``out=`` with
    a reversed axis) moves the plan's base pointers; the move, measured from
    the arrays' own data pointers, is kept in ``shifts`` (source,
    destination) and applied as the plan's one part. ``whole_bytes``: the
    result's size for the plan that writes it (it may stream), else 0."""
    cdef char* src = job.src
    cdef char* dst = job.dst
    build_plan(plan, ndim, ext, src_step, dst_step, itemsize, 1, &src, &dst, whole_bytes)
    if not whole_bytes:
        # It runs into the scratch, not into job.dst: nothing to fault.
        plan.fault_ahead = False
    shifts[0] = src - job.src
    shifts[1] = dst - job.dst
    plan.src_offsets = &shifts[0]
    plan.dst_offsets = &shifts[1]
    return 0


cdef int _staged_plans(StagedVectC* job, int which, const LogicalView* s, const LogicalView* d,
                       intp bs, intp rows, intp itemsize, bint to_depth, intp whole_bytes) except -1:
    """Plans for a block of ``rows`` depth rows (``which``: 0 whole, 1 last);
    the result has ``whole_bytes`` bytes."""
    cdef intp out_w = s.spatial[1] // bs, blocks = job.blocks
    cdef intp ext[5]
    cdef intp space_step[5]
    cdef intp plane_step[5]
    cdef intp depth_step[4]
    cdef intp plane = rows * out_w * itemsize   # bytes of one plane t
    cdef Plan* to_planes = &job.to_planes[which]
    cdef Plan* from_planes = &job.from_planes[which]
    cdef intp* to_shifts = &job.shifts[4 * which]
    cdef intp* from_shifts = &job.shifts[4 * which + 2]
    # space [r, b1, b2, row, x] <-> planes t = r*M + b1*bs + b2
    ext[0] = VECT_C_GROUP; space_step[0] = s.lane_stride; plane_step[0] = blocks * plane
    ext[1] = bs; space_step[1] = s.spatial_stride[0]; plane_step[1] = bs * plane
    ext[2] = bs; space_step[2] = s.spatial_stride[1]; plane_step[2] = plane
    ext[3] = rows; space_step[3] = bs * s.spatial_stride[0]; plane_step[3] = out_w * itemsize
    ext[4] = out_w; space_step[4] = bs * s.spatial_stride[1]; plane_step[4] = itemsize
    if to_depth:
        _stage_plan(job, to_planes, to_shifts, 5, ext, space_step, plane_step, itemsize, 0)
    else:
        _stage_plan(job, from_planes, from_shifts, 5, ext, plane_step, space_step, itemsize, whole_bytes)
    # planes t = 4*u + lane <-> depth [u, lane, row, x] of this group
    ext[0] = blocks; plane_step[0] = VECT_C_GROUP * plane; depth_step[0] = d.channel_stride
    ext[1] = VECT_C_GROUP; plane_step[1] = plane; depth_step[1] = d.lane_stride
    ext[2] = rows; plane_step[2] = out_w * itemsize; depth_step[2] = d.spatial_stride[0]
    ext[3] = out_w; plane_step[3] = itemsize; depth_step[3] = d.spatial_stride[1]
    if to_depth:
        _stage_plan(job, from_planes, from_shifts, 4, ext, plane_step, depth_step, itemsize, whole_bytes)
    else:
        _stage_plan(job, to_planes, to_shifts, 4, ext, depth_step, plane_step, itemsize, 0)
    return 0


cdef void _staged_block(const StagedVectC* job, intp item, char* scratch) noexcept nogil:
    """Block ``item`` (batch index, group, row block): source -> planes -> destination."""
    cdef intp row_block = item % job.n_row_blocks, rest = item // job.n_row_blocks
    cdef intp g = rest % job.groups, src_offset, dst_offset, digit
    cdef int k, which = 1 if row_block == job.n_row_blocks - 1 and job.last_rows != job.rows else 0
    rest //= job.groups
    src_offset = g * job.src_group_step + row_block * job.rows * job.src_row_step
    dst_offset = g * job.dst_group_step + row_block * job.rows * job.dst_row_step
    for k in range(job.n_batch - 1, -1, -1):
        digit = rest % job.batch[k]
        rest //= job.batch[k]
        src_offset += digit * job.src_batch_step[k]
        dst_offset += digit * job.dst_batch_step[k]
    run_range(&job.to_planes[which], scratch, job.src + src_offset, 0, job.to_planes[which].n_iter)
    run_range(&job.from_planes[which], job.dst + dst_offset, scratch, 0, job.from_planes[which].n_iter)


cdef int _staged_vect_c_copy(const LogicalView* s, const LogicalView* d, cnp.ndarray space,
                             cnp.ndarray depth, intp bs, bint to_depth, int num_threads) except -1:
    cdef intp itemsize = cnp.PyArray_ITEMSIZE(depth)
    cdef intp out_h = s.spatial[0] // bs, out_w = s.spatial[1] // bs, n_items, item, row_bytes
    cdef int k, n_threads
    cdef char* scratch
    cdef char* result_low
    cdef char* result_high
    cdef StagedVectC* job = <StagedVectC*>malloc(sizeof(StagedVectC))
    if job == NULL:
        raise MemoryError()
    try:
        job.blocks = bs * bs
        job.groups = s.channels // VECT_C_GROUP
        row_bytes = VECT_C_GROUP * job.blocks * out_w * itemsize
        job.rows = imax(1, imin(out_h, VECT_C_STAGE_BYTES // row_bytes))
        job.n_row_blocks = (out_h + job.rows - 1) // job.rows
        job.last_rows = out_h - (job.n_row_blocks - 1) * job.rows
        job.scratch_bytes = job.rows * row_bytes
        job.n_batch = s.n_batch
        n_items = job.groups * job.n_row_blocks
        for k in range(s.n_batch):
            job.batch[k] = s.batch[k]
            job.src_batch_step[k] = s.batch_stride[k] if to_depth else d.batch_stride[k]
            job.dst_batch_step[k] = d.batch_stride[k] if to_depth else s.batch_stride[k]
            n_items *= s.batch[k]
        if to_depth:
            job.src = <char*>cnp.PyArray_DATA(space); job.dst = <char*>cnp.PyArray_DATA(depth)
            job.src_group_step = s.channel_stride; job.dst_group_step = job.blocks * d.channel_stride
            job.src_row_step = bs * s.spatial_stride[0]; job.dst_row_step = d.spatial_stride[0]
        else:
            job.src = <char*>cnp.PyArray_DATA(depth); job.dst = <char*>cnp.PyArray_DATA(space)
            job.src_group_step = job.blocks * d.channel_stride; job.dst_group_step = s.channel_stride
            job.src_row_step = d.spatial_stride[0]; job.dst_row_step = bs * s.spatial_stride[0]
        _staged_plans(job, 0, s, d, bs, job.rows, itemsize, to_depth, cnp.PyArray_NBYTES(depth))
        if job.last_rows != job.rows:
            _staged_plans(job, 1, s, d, bs, job.last_rows, itemsize, to_depth, cnp.PyArray_NBYTES(depth))
        # The result's plans are built over one block; their faults ahead
        # are bounded by the whole result.
        if byte_range(depth if to_depth else space, &result_low, &result_high):
            job.from_planes[0].dst_end = job.from_planes[1].dst_end = result_high
        n_threads = num_threads
        if n_items < 2 or cnp.PyArray_NBYTES(depth) < PARALLEL_MIN_BYTES:
            n_threads = 1
        n_threads = <int>imin(n_threads, n_items)
        scratch = <char*>malloc(n_threads * job.scratch_bytes)
        if scratch == NULL:
            raise MemoryError()
        try:
            if n_threads == 1:
                with nogil:
                    for item in range(n_items):
                        _staged_block(job, item, scratch)
            else:
                with nogil, parallel(num_threads=n_threads):
                    for item in prange(n_items, schedule="dynamic"):
                        _staged_block(job, item, scratch + threadid() * job.scratch_bytes)
        finally:
            free(scratch)
    finally:
        free(job)
    return 0
