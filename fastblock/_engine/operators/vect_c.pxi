# NCHW_VECT_C depth_first SpaceToDepth and DepthToSpace with bs*bs = M not a
# multiple of 4: the operator copies that are not one copy plan.
#
# Depth channel (4*g + r)*M + B (space group g, lane r, block offset B) is
# depth group g*M + t // 4, lane t % 4 with t = r*M + B. With 4 not dividing
# M, t mixes the space lane and the block offset in a way no strided axes
# describe, so no Plan copies the whole array (every other block copy is
# axes and steps, _engine/operators/axes.pxi). Instead the copy is cut into blocks
# of rows of one space group (VectCBlocks), each moved by a few plans or a
# kernel of its own: tables (VectCRows), register permutes (VectCPixels,
# _engine/kernels/vect_c_pixels.pxi) or per-thread planes (StagedVectC). The blocks
# are the units of the common schedule (copy_team and run_units,
# _engine/run/schedule.pxi), as a plan's chunks are: the same small-copy rule,
# thread policy and calling-thread faults.

from libc.stdlib cimport free, malloc

from fastblock._engine.types cimport (MAX_INPUT_AXES, Plan, VECT_C_PIXELS_BS, VECT_C_PIXELS_ENTRIES,
                                      VECT_C_PIXELS_M, intp)
from fastblock._engine.kernels_c cimport fb_pages_resident, fb_vect_c_pixels
from fastblock._engine.array_bytes cimport byte_range
from fastblock._engine.schedule_types cimport FAULTS_NONE, FAULTS_ONLY, FAULTS_OWN, UnitRunner


cdef enum:
    # Result bytes of a block of rows of one NCHW_VECT_C group: in L2, and
    # as large as that allows. A staged block (StagedVectC) reads its
    # source in one phase and writes its result in the next, and fewer,
    # longer phases keep the memory streams going (64 MiB bs=3 depth_first
    # space_to_depth float32, two threads, 64 KiB -> 256 KiB: 0.70 -> 0.56
    # x np.copyto; 2 MiB planes, as large as L2, lose it again). The row
    # kinds of a block of VectCRows read the same source rows, which stay in
    # L2 while the kinds run.
    VECT_C_BLOCK_BYTES = 256 * 1024

cdef enum:
    # At most this many row kinds (bs) read through tables (each table of
    # 4*bs offsets then fits a gathered run, GATHER_MAX).
    VECT_C_ROWS_MAX_KINDS = 16


cdef enum:
    # How an NCHW_VECT_C depth_first copy with bs*bs not a multiple of 4 runs.
    VECT_C_PLANES = 0           # through per-thread planes (StagedVectC)
    VECT_C_ROWS = 1             # depth_to_space through tables (VectCRows)
    VECT_C_PIXELS = 2           # bs 3 in registers (VectCPixels)


cdef int choose_vect_c_path(const LogicalView* s, const LogicalView* d, intp bs, intp itemsize,
                            intp nbytes, bint to_depth) noexcept:
    """The runner of a copy of ``nbytes`` bytes (the enum above)."""
    if vect_c_pixels_fit(s, d, bs, itemsize, to_depth):
        return VECT_C_PIXELS
    if not to_depth and nbytes >= tuning.vect_c_rows_min_bytes and vect_c_rows_fit(s, d, bs, itemsize):
        return VECT_C_ROWS
    return VECT_C_PLANES


def vect_c_path(cnp.ndarray space not None, cnp.ndarray depth not None, intp block_size,
                bint to_depth, int n_batch=1):
    """Which way space_depth_copy runs NCHW_VECT_C depth_first between these
    arrays when bs*bs is not a multiple of 4: "planes", "rows" or "pixels"
    (for tests)."""
    cdef LogicalView s, d
    read_view(&s, space, LAYOUT_NCHW_VECT_C, n_batch)
    read_view(&d, depth, LAYOUT_NCHW_VECT_C, n_batch)
    enter_copy()
    try:
        return ("planes", "rows", "pixels")[choose_vect_c_path(&s, &d, block_size,
                                                               cnp.PyArray_ITEMSIZE(depth),
                                                               cnp.PyArray_NBYTES(depth), to_depth)]
    finally:
        leave_copy()


cdef int vect_c_copy(const LogicalView* s, const LogicalView* d, cnp.ndarray space,
                     cnp.ndarray depth, intp bs, bint to_depth, int num_threads) except -1:
    """space_depth_copy where block_axes has no axes (``s`` and ``d`` read)."""
    cdef int path = choose_vect_c_path(s, d, bs, cnp.PyArray_ITEMSIZE(depth),
                                       cnp.PyArray_NBYTES(depth), to_depth)
    if path == VECT_C_ROWS:
        return vect_c_rows_copy(s, d, space, depth, bs, num_threads)
    if path == VECT_C_PIXELS:
        return vect_c_pixels_copy(s, d, space, depth, to_depth, num_threads)
    return staged_vect_c_copy(s, d, space, depth, bs, to_depth, num_threads)


cdef struct VectCBlocks:
    # An NCHW_VECT_C depth_first copy in blocks of rows of one space group:
    # item (batch index, group, row block) starts at these source and
    # destination offsets.
    intp rows, last_rows, n_row_blocks, groups, n_items
    int n_batch
    intp batch[MAX_INPUT_AXES]
    intp src_batch_step[MAX_INPUT_AXES]
    intp dst_batch_step[MAX_INPUT_AXES]
    intp src_group_step, dst_group_step, src_row_step, dst_row_step
    char* src
    char* dst
    int team                    # threads that run the blocks (copy_team)
    int num_threads             # threads the call asked for
    intp item_bytes             # result bytes of a block, about


cdef void vect_c_blocks(VectCBlocks* b, const LogicalView* s, const LogicalView* d,
                        cnp.ndarray space, cnp.ndarray depth, intp bs, bint to_depth,
                        int num_threads) noexcept:
    """Blocks of about VECT_C_BLOCK_BYTES result bytes (whole depth rows),
    and the team that runs them."""
    cdef intp blocks = bs * bs, itemsize = cnp.PyArray_ITEMSIZE(depth)
    cdef intp out_h = s.spatial[0] // bs, out_w = s.spatial[1] // bs
    cdef intp row_bytes = VECT_C_GROUP * blocks * out_w * itemsize    # a depth row of a space group
    cdef int k
    b.groups = s.channels // VECT_C_GROUP
    b.rows = imax(1, imin(out_h, VECT_C_BLOCK_BYTES // row_bytes))
    b.n_row_blocks = (out_h + b.rows - 1) // b.rows
    b.last_rows = out_h - (b.n_row_blocks - 1) * b.rows
    b.n_batch = s.n_batch
    b.n_items = b.groups * b.n_row_blocks
    for k in range(s.n_batch):
        b.batch[k] = s.batch[k]
        b.src_batch_step[k] = s.batch_stride[k] if to_depth else d.batch_stride[k]
        b.dst_batch_step[k] = d.batch_stride[k] if to_depth else s.batch_stride[k]
        b.n_items *= s.batch[k]
    if to_depth:
        b.src = <char*>cnp.PyArray_DATA(space); b.dst = <char*>cnp.PyArray_DATA(depth)
        b.src_group_step = s.channel_stride; b.dst_group_step = blocks * d.channel_stride
        b.src_row_step = bs * s.spatial_stride[0]; b.dst_row_step = d.spatial_stride[0]
    else:
        b.src = <char*>cnp.PyArray_DATA(depth); b.dst = <char*>cnp.PyArray_DATA(space)
        b.src_group_step = blocks * d.channel_stride; b.dst_group_step = s.channel_stride
        b.src_row_step = d.spatial_stride[0]; b.dst_row_step = bs * s.spatial_stride[0]
    b.num_threads = num_threads
    b.team = copy_team(cnp.PyArray_NBYTES(depth), b.n_items, num_threads)
    b.item_bytes = cnp.PyArray_NBYTES(depth) // b.n_items


cdef int vect_c_block_at(const VectCBlocks* b, intp item, intp* src_offset,
                         intp* dst_offset) noexcept nogil:
    """Where block ``item`` starts; returns 1 for the last, shorter row
    block (its own plans), else 0."""
    cdef intp row_block = item % b.n_row_blocks, rest = item // b.n_row_blocks
    cdef intp g = rest % b.groups, digit
    cdef int k
    rest //= b.groups
    src_offset[0] = g * b.src_group_step + row_block * b.rows * b.src_row_step
    dst_offset[0] = g * b.dst_group_step + row_block * b.rows * b.dst_row_step
    for k in range(b.n_batch - 1, -1, -1):
        digit = rest % b.batch[k]
        rest //= b.batch[k]
        src_offset[0] += digit * b.src_batch_step[k]
        dst_offset[0] += digit * b.dst_batch_step[k]
    return 1 if row_block == b.n_row_blocks - 1 and b.last_rows != b.rows else 0


cdef inline void run_vect_c_blocks(const VectCBlocks* b, const void* job, UnitRunner run_block,
                                   bint fresh) noexcept nogil:
    """Every block of ``job`` by ``run_block``, as units of run_units on
    the blocks' team (``fresh``: the result's pages fault ahead)."""
    run_units(job, run_block, b.n_items, b.item_bytes, b.team, b.num_threads, fresh)


cdef void* checked_malloc(size_t size) except NULL:
    cdef void* memory = malloc(size)
    if memory == NULL:
        raise MemoryError()
    return memory


cdef int vect_c_block_plan(Plan* plan, intp* shifts, char* src0, char* dst0, intp src_move,
                           intp dst_move, int ndim, intp* ext, intp* src_step, intp* dst_step,
                           intp itemsize, intp whole_bytes, const intp* table=NULL) except -1:
    """Build one plan of a block (``src0``, ``dst0``: the arrays' data,
    ``src_move``, ``dst_move``: the plan's own place from them). A negative
    destination step (an ``out=`` with a reversed axis) moves the base
    pointers further; the whole move is kept in ``shifts`` (source,
    destination) and applied as the plan's one part. ``whole_bytes``: the
    result's size for a plan that writes it (it may stream), else 0."""
    cdef char* src = src0 + src_move
    cdef char* dst = dst0 + dst_move
    build_plan(plan, ndim, ext, src_step, dst_step, itemsize, 1, &src, &dst, whole_bytes, table)
    if not whole_bytes:
        # It runs into the scratch, not into the result: nothing to fault.
        plan.fault_ahead = False
    shifts[0] = src - src0
    shifts[1] = dst - dst0
    plan.src_offsets = &shifts[0]
    plan.dst_offsets = &shifts[1]
    return 0


cdef void bound_faults(Plan* plans, intp n_plans, cnp.ndarray result) noexcept:
    """Plans built over one block fault ahead up to the whole result's end."""
    cdef char* low
    cdef char* high
    cdef intp i
    if byte_range(result, &low, &high):
        for i in range(n_plans):
            plans[i].dst_end = high


cdef struct VectCRows:
    # depth_to_space NCHW_VECT_C depth_first with M = bs*bs not a multiple
    # of 4. Depth channel (4*g + r)*M + B, r the space lane and B = bs*b1 +
    # b2 the block offset, is depth group g*M + t // 4, lane t % 4 with t =
    # r*M + B: t mixes r and B in a way no axes describe. Space row bs*y +
    # b1 of group g holds, at pixel x, the 4*bs items (b2, r), contiguous
    # when the lanes and pixels are; they come from depth pixel (y, x) at
    # offsets that depend on b1 alone: a table axis (build_plan), one plan
    # for each b1 (a row kind). A block of rows runs every kind before
    # the next, so the depth rows they share come from memory once.
    # Against StagedVectC, bs 3, two threads: 64 MiB uint8 1.38 -> 0.80 x
    # np.copyto, but in cache the gathers cost more than the planes'
    # register transposes, so results under tuning.vect_c_rows_min_bytes keep the
    # planes. (space_to_depth the same way, a kind per depth group of 4
    # lanes, lost at 64 MiB: its 64-byte pieces each take 6 windows.) With
    # bs 3 both operators run VectCPixels where the CPU has AVX-512 VBMI:
    # the tables serve other block sizes.
    VectCBlocks blocks
    int n_kinds                 # bs
    intp* tables                # bs tables of 4*bs source offsets
    Plan* plans                 # bs plans for whole blocks, then bs for the last
    intp* shifts                # each plan's base moves (source, destination)


cdef bint vect_c_rows_fit(const LogicalView* s, const LogicalView* d, intp bs,
                          intp itemsize) noexcept:
    """Whether a space pixel's (b2, r) items are contiguous (a table axis
    must be), and the row kinds few enough to hold (two plans of about
    60 KB each a kind; larger blocks go through planes)."""
    return (s.lane_stride == itemsize and s.spatial_stride[1] == VECT_C_GROUP * itemsize
            and bs <= VECT_C_ROWS_MAX_KINDS)


cdef void vect_c_rows_block(const void* rows_job, intp item, int faults,
                            int thread) noexcept nogil:
    """Block ``item`` (batch index, group, row block), every kind of row (a
    unit of run_units)."""
    cdef const VectCRows* job = <const VectCRows*>rows_job
    cdef intp src_offset, dst_offset
    cdef int which = vect_c_block_at(&job.blocks, item, &src_offset, &dst_offset), k
    cdef const Plan* plan
    cdef const Plan* kinds = &job.plans[which * job.n_kinds]
    for k in range(job.n_kinds):
        plan = &kinds[k]
        run_whole_plan(plan, job.blocks.dst + dst_offset, job.blocks.src + src_offset, faults)


cdef int vect_c_rows_plans(VectCRows* job, int which, const LogicalView* s, const LogicalView* d,
                           intp bs, intp rows, intp itemsize, intp whole_bytes) except -1:
    """The kinds' plans for a block of ``rows`` depth rows (``which``: 0
    whole blocks, 1 the last): depth [row, x] -> space row bs*row + b1,
    pixel x, items (b2, r) from table b1."""
    cdef intp ext[3]
    cdef intp depth_step[3]
    cdef intp space_step[3]
    cdef int b1, kind
    ext[0] = rows; depth_step[0] = d.spatial_stride[0]; space_step[0] = bs * s.spatial_stride[0]
    ext[1] = s.spatial[1] // bs; depth_step[1] = d.spatial_stride[1]
    space_step[1] = bs * s.spatial_stride[1]
    ext[2] = VECT_C_GROUP * bs; depth_step[2] = 0; space_step[2] = itemsize
    for b1 in range(job.n_kinds):
        kind = which * job.n_kinds + b1
        vect_c_block_plan(&job.plans[kind], &job.shifts[2 * kind], job.blocks.src, job.blocks.dst,
                          0, b1 * s.spatial_stride[0], 3, ext, depth_step, space_step, itemsize,
                          whole_bytes, &job.tables[b1 * VECT_C_GROUP * bs])
    return 0


cdef int vect_c_rows_job(VectCRows* job, const LogicalView* s, const LogicalView* d,
                         cnp.ndarray space, cnp.ndarray depth, intp bs,
                         int num_threads) except -1:
    """The blocks, tables and plans of a depth_to_space (``job``'s arrays
    NULL, or its own)."""
    cdef intp itemsize = cnp.PyArray_ITEMSIZE(depth), blocks = bs * bs, i, t
    cdef intp n_table = VECT_C_GROUP * bs, n_plans
    cdef int b1
    vect_c_blocks(&job.blocks, s, d, space, depth, bs, False, num_threads)
    job.n_kinds = <int>bs
    n_plans = (2 if job.blocks.last_rows != job.blocks.rows else 1) * bs
    job.tables = <intp*>checked_malloc(bs * n_table * sizeof(intp))
    job.plans = <Plan*>checked_malloc(n_plans * sizeof(Plan))
    job.shifts = <intp*>checked_malloc(2 * n_plans * sizeof(intp))
    # Item i = VECT_C_GROUP*b2 + r of row kind b1 reads t = r*M + bs*b1 + b2.
    for b1 in range(bs):
        for i in range(n_table):
            t = i % VECT_C_GROUP * blocks + bs * b1 + i // VECT_C_GROUP
            job.tables[b1 * n_table + i] = (t // VECT_C_GROUP * d.channel_stride
                                            + t % VECT_C_GROUP * d.lane_stride)
    vect_c_rows_plans(job, 0, s, d, bs, job.blocks.rows, itemsize, cnp.PyArray_NBYTES(space))
    if job.blocks.last_rows != job.blocks.rows:
        vect_c_rows_plans(job, 1, s, d, bs, job.blocks.last_rows, itemsize,
                          cnp.PyArray_NBYTES(space))
    bound_faults(job.plans, n_plans, space)
    return 0


cdef int vect_c_rows_copy(const LogicalView* s, const LogicalView* d, cnp.ndarray space,
                          cnp.ndarray depth, intp bs, int num_threads) except -1:
    cdef VectCRows* job = <VectCRows*>checked_malloc(sizeof(VectCRows))
    job.tables = NULL
    job.plans = NULL
    job.shifts = NULL
    try:
        vect_c_rows_job(job, s, d, space, depth, bs, num_threads)
        with nogil:
            run_vect_c_blocks(&job.blocks, job, vect_c_rows_block, job.plans[0].fault_ahead)
    finally:
        free(job.tables)
        free(job.plans)
        free(job.shifts)
        free(job)
    return 0


cdef struct VectCPixels:
    # NCHW_VECT_C depth_first with bs 3 in one pass, either way: the 9 depth
    # rows of a space group and its 3 space rows at a time, by the kernel of
    # _engine/kernels/vect_c_pixels.pxi, in blocks of rows (the units of run_units).
    VectCBlocks blocks
    bint to_depth
    intp plane_step, depth_row_step, space_row_step, out_w, itemsize
    bint fault_ahead            # the result's pages are fresh (faults_pay)
    const char* dst_end
    unsigned char idx[64 * VECT_C_PIXELS_ENTRIES]
    unsigned long long masks[VECT_C_PIXELS_ENTRIES]


cdef bint vect_c_pixels_fit(const LogicalView* s, const LogicalView* d, intp bs, intp itemsize,
                            bint to_depth) noexcept:
    """Whether the kernel takes this copy: bs 3, items of 1, 2 or 4 bytes,
    each pixel's lanes contiguous and the pixels adjacent on both sides, and
    the result's rows (and depth planes) forwards (fault_rows walks them so).
    The steps of a depth axis of one pixel or row are not looked at (NumPy
    sets them freely)."""
    return (tuning.vect_c_pixels and use_vbmi() and bs == VECT_C_PIXELS_BS
            and (itemsize == 1 or itemsize == 2 or itemsize == 4)
            and s.lane_stride == itemsize and s.spatial_stride[1] == VECT_C_GROUP * itemsize
            and d.lane_stride == itemsize
            and (d.spatial_stride[1] == VECT_C_GROUP * itemsize or d.spatial[1] == 1)
            and ((d.channel_stride > 0 and (d.spatial_stride[0] > 0 or d.spatial[0] == 1))
                 if to_depth else s.spatial_stride[0] > 0))


cdef void vect_c_pixels_block(const void* pixels_job, intp item, int faults,
                              int thread) noexcept nogil:
    """Block ``item`` (batch index, group, row block), a unit of run_units."""
    cdef const VectCPixels* job = <const VectCPixels*>pixels_job
    cdef intp src_offset, dst_offset, rows = job.blocks.rows, g
    cdef intp depth_bytes = job.out_w * VECT_C_GROUP * job.itemsize     # of a depth row
    cdef RecentPages recent
    cdef char* depth
    cdef char* space
    if vect_c_block_at(&job.blocks, item, &src_offset, &dst_offset):
        rows = job.blocks.last_rows
    if job.to_depth:
        depth = job.blocks.dst + dst_offset
        space = job.blocks.src + src_offset
    else:
        depth = job.blocks.src + src_offset
        space = job.blocks.dst + dst_offset
    if job.fault_ahead and faults != FAULTS_NONE:
        forget_pages(&recent)
        if job.to_depth:
            for g in range(VECT_C_PIXELS_M):
                fault_rows(&recent, depth + g * job.plane_step, rows, job.depth_row_step,
                           depth_bytes, job.dst_end)
        else:
            fault_rows(&recent, space, VECT_C_PIXELS_BS * rows, job.space_row_step,
                       VECT_C_PIXELS_BS * depth_bytes, job.dst_end)
    if faults != FAULTS_ONLY:
        fb_vect_c_pixels(depth, job.plane_step, job.depth_row_step, space, job.space_row_step,
                         rows, job.out_w, job.idx, job.masks, <int>job.itemsize, job.to_depth)


cdef void vect_c_pixels_job(VectCPixels* job, const LogicalView* s, const LogicalView* d,
                            cnp.ndarray space, cnp.ndarray depth, bint to_depth,
                            int num_threads) noexcept:
    """The blocks, steps and permute tables, and whether to fault ahead."""
    cdef char* low
    cdef char* high
    cdef cnp.ndarray result = depth if to_depth else space
    vect_c_blocks(&job.blocks, s, d, space, depth, VECT_C_PIXELS_BS, to_depth, num_threads)
    job.to_depth = to_depth
    job.plane_step = d.channel_stride
    job.depth_row_step = d.spatial_stride[0]
    job.space_row_step = s.spatial_stride[0]
    job.out_w = s.spatial[1] // VECT_C_PIXELS_BS
    job.itemsize = cnp.PyArray_ITEMSIZE(depth)
    vect_c_pixel_tables(job.idx, job.masks, job.itemsize, to_depth)
    job.fault_ahead = False
    job.dst_end = NULL
    if byte_range(result, &low, &high):
        job.dst_end = high
        job.fault_ahead = faults_pay(high - low, fb_pages_resident(low, high)
                                     if high - low >= tuning.fault_ahead_min_bytes else -1)


cdef int vect_c_pixels_copy(const LogicalView* s, const LogicalView* d, cnp.ndarray space,
                            cnp.ndarray depth, bint to_depth, int num_threads) except -1:
    cdef VectCPixels* job = <VectCPixels*>checked_malloc(sizeof(VectCPixels))
    vect_c_pixels_job(job, s, d, space, depth, to_depth, num_threads)
    with nogil:
        run_vect_c_blocks(&job.blocks, job, vect_c_pixels_block, job.fault_ahead)
        free(job)
    return 0


cdef struct StagedVectC:
    # NCHW_VECT_C depth_first with bs*bs = M not a multiple of 4 (as for
    # VectCRows) where neither VectCPixels nor VectCRows runs. Each block of
    # `rows` depth rows of one space group goes
    # through 4*M planes [t][rows][W/bs] in a per-thread scratch: space <->
    # planes is a plain permutation (for bytes a split or an interleave of
    # 4*bs lanes) and planes <-> depth another (4 lanes).
    VectCBlocks blocks
    Plan to_planes[2]           # source side -> planes: whole blocks, last block
    Plan from_planes[2]         # planes -> destination side
    # Each plan's base-pointer moves (source, destination), run as its one part.
    intp shifts[8]
    char* scratch               # scratch_bytes for each thread of the team
    intp scratch_bytes


cdef int staged_plans(StagedVectC* job, int which, const LogicalView* s, const LogicalView* d,
                      intp bs, intp rows, intp itemsize, bint to_depth, intp whole_bytes) except -1:
    """Plans for a block of ``rows`` depth rows (``which``: 0 whole, 1 last);
    the result has ``whole_bytes`` bytes."""
    cdef intp out_w = s.spatial[1] // bs, blocks = bs * bs
    cdef intp ext[5]
    cdef intp space_step[5]
    cdef intp plane_step[5]
    cdef intp depth_step[4]
    cdef intp plane = rows * out_w * itemsize   # bytes of one plane t
    cdef char* src = job.blocks.src
    cdef char* dst = job.blocks.dst
    cdef intp* to_shifts = &job.shifts[4 * which]
    cdef intp* from_shifts = &job.shifts[4 * which + 2]
    # space [r, b1, b2, row, x] <-> planes t = r*M + b1*bs + b2
    ext[0] = VECT_C_GROUP; space_step[0] = s.lane_stride; plane_step[0] = blocks * plane
    ext[1] = bs; space_step[1] = s.spatial_stride[0]; plane_step[1] = bs * plane
    ext[2] = bs; space_step[2] = s.spatial_stride[1]; plane_step[2] = plane
    ext[3] = rows; space_step[3] = bs * s.spatial_stride[0]; plane_step[3] = out_w * itemsize
    ext[4] = out_w; space_step[4] = bs * s.spatial_stride[1]; plane_step[4] = itemsize
    if to_depth:
        vect_c_block_plan(&job.to_planes[which], to_shifts, src, dst, 0, 0, 5, ext, space_step,
                          plane_step, itemsize, 0)
    else:
        vect_c_block_plan(&job.from_planes[which], from_shifts, src, dst, 0, 0, 5, ext, plane_step,
                          space_step, itemsize, whole_bytes)
    # planes t = 4*u + lane <-> depth [u, lane, row, x] of this group
    ext[0] = blocks; plane_step[0] = VECT_C_GROUP * plane; depth_step[0] = d.channel_stride
    ext[1] = VECT_C_GROUP; plane_step[1] = plane; depth_step[1] = d.lane_stride
    ext[2] = rows; plane_step[2] = out_w * itemsize; depth_step[2] = d.spatial_stride[0]
    ext[3] = out_w; plane_step[3] = itemsize; depth_step[3] = d.spatial_stride[1]
    if to_depth:
        vect_c_block_plan(&job.from_planes[which], from_shifts, src, dst, 0, 0, 4, ext, plane_step,
                          depth_step, itemsize, whole_bytes)
    else:
        vect_c_block_plan(&job.to_planes[which], to_shifts, src, dst, 0, 0, 4, ext, depth_step,
                          plane_step, itemsize, 0)
    return 0


cdef void staged_block(const void* staged_job, intp item, int faults, int thread) noexcept nogil:
    """Block ``item`` (batch index, group, row block): source -> planes ->
    destination, through thread ``thread``'s scratch (a unit of run_units;
    FAULTS_ONLY leaves the planes alone)."""
    cdef const StagedVectC* job = <const StagedVectC*>staged_job
    cdef char* scratch = job.scratch + thread * job.scratch_bytes
    cdef intp src_offset, dst_offset
    cdef int which = vect_c_block_at(&job.blocks, item, &src_offset, &dst_offset)
    if faults != FAULTS_ONLY:
        run_whole_plan(&job.to_planes[which], scratch, job.blocks.src + src_offset)
    run_whole_plan(&job.from_planes[which], job.blocks.dst + dst_offset, scratch, faults)


cdef int staged_vect_c_job(StagedVectC* job, const LogicalView* s, const LogicalView* d,
                           cnp.ndarray space, cnp.ndarray depth, intp bs, bint to_depth,
                           int num_threads) except -1:
    """The blocks, plans and a scratch for each thread of the blocks' team
    (``job.scratch`` NULL, or its own)."""
    cdef intp itemsize = cnp.PyArray_ITEMSIZE(depth)
    vect_c_blocks(&job.blocks, s, d, space, depth, bs, to_depth, num_threads)
    job.scratch_bytes = job.blocks.rows * VECT_C_GROUP * bs * bs * (s.spatial[1] // bs) * itemsize
    staged_plans(job, 0, s, d, bs, job.blocks.rows, itemsize, to_depth, cnp.PyArray_NBYTES(depth))
    if job.blocks.last_rows != job.blocks.rows:
        staged_plans(job, 1, s, d, bs, job.blocks.last_rows, itemsize, to_depth,
                     cnp.PyArray_NBYTES(depth))
    bound_faults(job.from_planes, 2, depth if to_depth else space)
    job.scratch = <char*>checked_malloc(job.blocks.team * job.scratch_bytes)
    return 0


cdef int staged_vect_c_copy(const LogicalView* s, const LogicalView* d, cnp.ndarray space,
                            cnp.ndarray depth, intp bs, bint to_depth, int num_threads) except -1:
    cdef StagedVectC* job = <StagedVectC*>checked_malloc(sizeof(StagedVectC))
    job.scratch = NULL
    try:
        staged_vect_c_job(job, s, d, space, depth, bs, to_depth, num_threads)
        with nogil:
            run_vect_c_blocks(&job.blocks, job, staged_block, job.from_planes[0].fault_ahead)
    finally:
        free(job.scratch)
        free(job)
    return 0
