# The convert stage's run: a ConvertPlan's tiles (times its parts), in runs
# of consecutive tiles, as the units of the common schedule (run_units). A
# tile's source moves into its thread's stage by the tile shape's Plan
# (run_range, on this thread), and the stage's rows are converted into the
# result (the tile shape's convert_run); a tile shape without a move has
# its rows converted from the source. A team's threads each take runs of
# tuning.chunks_per_thread-th of their share, not a tile at a time: two
# threads on neighbouring tiles (each a few KiB of every result plane) ran
# 2.6 times slower than one (13x256x256 float32 from uint16 bands: 493 us
# against 188; now 123).
# Where the scale or offset varies along the rows, their lines are moved
# first, unless the thread's last tile of the same shape read the same
# values (channels last: every tile of a shape reads the same values).
# A result large enough and not yet in memory has each tile's rows faulted
# ahead at the end of their huge pages, the calling thread faulting for a
# team of two (kernels/faults.pxi, run/schedule.pxi), as a plain copy's:
# a new 64x3x224x224 float32 batch from uint8 images took 1.79 x np.copyto
# of its bytes against 0.62 into out= before (copy and allocation: 1.47).

from fastblock._engine.types cimport (CONVERT_SIDES, ConvertPlan, MAX_AXES, SIDE_DST, SIDE_OFFSET,
                                      SIDE_SCALE, SIDE_SRC, TileShape, intp)
from fastblock._engine.kernels_c cimport FB_AFFINE_LINE, fb_convert_lanes
from fastblock._engine.schedule_types cimport FAULTS_NONE, FAULTS_ONLY
from fastblock._engine.kernels_c cimport fb_pages_resident

cdef enum:
    # Per-thread scratch is laid out in lines.
    SCRATCH_ALIGN = 64


cdef struct ThreadLines:
    # What a thread's scale and offset lines hold now: the tile shape
    # (-1: nothing) and the first value each was moved from.
    int shape
    const char* scale_from
    const char* offset_from


cdef struct ConvertJob:
    const ConvertPlan* plan
    const char* base[CONVERT_SIDES]     # each side's first item
    intp n_parts
    const intp* part_offsets            # CONVERT_SIDES byte offsets a part
    char* scratch                       # per thread: stage, scale line, offset line
    intp stage_bytes, line_bytes, scratch_bytes
    ThreadLines* lines                  # per thread
    intp n_tiles                        # every part's
    intp tiles_per_unit
    bint fault_ahead                    # the result's pages are fresh: fault each tile's
    const char* dst_end                 # the result's last byte + 1


cdef void run_convert_unit(const void* job_, intp unit, int faults, int thread) noexcept nogil:
    """Unit ``unit`` of a ConvertJob (its run of tiles) on OpenMP thread ``thread``."""
    cdef const ConvertJob* job = <const ConvertJob*>job_
    cdef intp tile = unit * job.tiles_per_unit
    cdef intp stop = imin(tile + job.tiles_per_unit, job.n_tiles)
    cdef const char* at[CONVERT_SIDES]
    cdef const TileShape* t
    cdef RecentPages recent
    forget_pages(&recent)
    while tile < stop:
        t = tile_at(job, tile, at)
        if job.fault_ahead and faults != FAULTS_NONE:
            fault_tile(job, t, at[SIDE_DST], &recent)
        if faults != FAULTS_ONLY:
            run_convert_tile(job, t, at, thread)
        tile += 1


cdef const TileShape* tile_at(const ConvertJob* job, intp unit,
                              const char** at) noexcept nogil:
    """Tile ``unit`` (part-major) of a ConvertJob: its shape, and in ``at``
    its first item on each side."""
    cdef const ConvertPlan* c = job.plan
    cdef intp tile = unit % c.n_tiles, part = unit // c.n_tiles, idx
    cdef int k, s, j, shape = 0
    for s in range(CONVERT_SIDES):
        at[s] = job.base[s] + job.part_offsets[part * CONVERT_SIDES + s]
    for k in range(c.n - 1, -1, -1):
        idx = tile % c.tiles[k]
        tile = tile // c.tiles[k]
        for s in range(CONVERT_SIDES):
            at[s] += idx * c.box[k] * c.step[s][k]
        for j in range(c.n_cuts):
            if c.cut[j] == k and idx == c.tiles[k] - 1:
                shape |= 1 << j
    return &c.shapes[shape]


cdef void fault_tile(const ConvertJob* job, const TileShape* t, const char* dst,
                     RecentPages* recent) noexcept nogil:
    """Fault ahead the huge pages a tile writes: its result rows (the
    planes of a lane split, the pixels of an interleave, the stage's rows
    out, the last row axis at a time)."""
    cdef intp item = job.plan.item[SIDE_DST], idx[MAX_AXES]
    cdef intp row_bytes = (t.run - 1) * t.run_step + item
    cdef int k, n = t.n_rows
    if t.lanes:
        if t.lanes_interleave:
            fault_rows(recent, dst, 1, 0, t.run * t.lanes * item, job.dst_end)
        else:
            fault_rows(recent, dst, t.lanes, t.plane_step, t.run * item, job.dst_end)
        return
    if n == 0:
        fault_rows(recent, dst, 1, 0, row_bytes, job.dst_end)
        return
    for k in range(n):
        idx[k] = 0
    while True:
        fault_rows(recent, dst, t.row_extent[n - 1], t.row_step[SIDE_DST][n - 1], row_bytes,
                   job.dst_end)
        k = n - 2
        while k >= 0:
            idx[k] += 1
            dst += t.row_step[SIDE_DST][k]
            if idx[k] < t.row_extent[k]:
                break
            dst -= t.row_extent[k] * t.row_step[SIDE_DST][k]
            idx[k] = 0
            k -= 1
        if k < 0:
            return


cdef void run_direct_lanes(const ConvertPlan* c, const TileShape* t,
                           const char** at) noexcept nogil:
    """A one-pass lanes tile (plan_direct_lanes). Lanes the packed side
    holds backwards go in its memory order: each pixel read (or written)
    forwards from its last lane, the planes, scale and offset from the
    last lane's, stepping back."""
    cdef int packed = SIDE_DST if t.lanes_interleave else SIDE_SRC
    cdef intp last = t.lanes - 1 if t.lanes_reversed else 0
    cdef intp way = -1 if t.lanes_reversed else 1
    cdef const char* side[CONVERT_SIDES]
    cdef int s
    for s in range(CONVERT_SIDES):
        side[s] = at[s]
    side[packed] -= last * c.item[packed]
    side[SIDE_SRC if t.lanes_interleave else SIDE_DST] += last * t.plane_step
    side[SIDE_SCALE] += last * t.lane_scale_step
    side[SIDE_OFFSET] += last * t.lane_offset_step
    fb_convert_lanes(t.convert_lanes, &c.cv, <char*>side[SIDE_DST], side[SIDE_SRC],
                     way * t.plane_step, t.run, t.lanes, side[SIDE_SCALE],
                     way * t.lane_scale_step, side[SIDE_OFFSET], way * t.lane_offset_step)


cdef void run_convert_tile(const ConvertJob* job, const TileShape* t, const char** at,
                           int thread) noexcept nogil:
    """A tile of a ConvertJob (tile_at's) on OpenMP thread ``thread``."""
    cdef const ConvertPlan* c = job.plan
    cdef int shape = t - c.shapes
    cdef char* stage = job.scratch + thread * job.scratch_bytes
    cdef char* scale_line = stage + job.stage_bytes
    cdef char* offset_line = scale_line + job.line_bytes
    cdef ThreadLines* lines = &job.lines[thread]
    cdef const char* rows       # the tile's rows to convert: the stage's, or the source's
    if t.lanes:
        run_direct_lanes(c, t, at)
        return
    rows = at[SIDE_SRC]
    if t.move != NULL:
        run_range(t.move, stage + t.stage_origin + t.move_shift[1],
                  at[SIDE_SRC] + t.move_shift[0], 0, t.move.n_iter)
        rows = stage + t.stage_origin
    if c.cv.scale == FB_AFFINE_LINE or c.cv.offset == FB_AFFINE_LINE:
        if lines.shape != shape or lines.scale_from != at[SIDE_SCALE] \
                or lines.offset_from != at[SIDE_OFFSET]:
            if c.cv.scale == FB_AFFINE_LINE:
                run_range(t.scale_line, scale_line + t.line_origin + t.scale_shift[1],
                          at[SIDE_SCALE] + t.scale_shift[0], 0, t.scale_line.n_iter)
            if c.cv.offset == FB_AFFINE_LINE:
                run_range(t.offset_line, offset_line + t.line_origin + t.offset_shift[1],
                          at[SIDE_OFFSET] + t.offset_shift[0], 0, t.offset_line.n_iter)
            lines.shape = shape
            lines.scale_from = at[SIDE_SCALE]
            lines.offset_from = at[SIDE_OFFSET]
        if c.cv.scale == FB_AFFINE_LINE:
            at[SIDE_SCALE] = scale_line + t.line_origin
        if c.cv.offset == FB_AFFINE_LINE:
            at[SIDE_OFFSET] = offset_line + t.line_origin
    convert_rows(c, t, <char*>at[SIDE_DST], rows, at[SIDE_SCALE], at[SIDE_OFFSET])


cdef void convert_rows(const ConvertPlan* c, const TileShape* t, char* dst, const char* stage,
                       const char* scale, const char* offset) noexcept nogil:
    """Every row of a staged tile into the result (the row loop: an odometer)."""
    cdef intp idx[MAX_AXES]
    cdef int k, n = t.n_rows
    for k in range(n):
        idx[k] = 0
    while True:
        t.convert_run(&c.cv, dst, t.run_step, stage, t.run, scale, offset)
        k = n - 1
        while k >= 0:
            idx[k] += 1
            stage += t.row_step[SIDE_SRC][k]
            dst += t.row_step[SIDE_DST][k]
            scale += t.row_step[SIDE_SCALE][k]
            offset += t.row_step[SIDE_OFFSET][k]
            if idx[k] < t.row_extent[k]:
                break
            stage -= t.row_extent[k] * t.row_step[SIDE_SRC][k]
            dst -= t.row_extent[k] * t.row_step[SIDE_DST][k]
            scale -= t.row_extent[k] * t.row_step[SIDE_SCALE][k]
            offset -= t.row_extent[k] * t.row_step[SIDE_OFFSET][k]
            idx[k] = 0
            k -= 1
        if k < 0:
            return


cdef int run_convert(const ConvertPlan* c, const char** base, intp n_parts,
                     const intp* part_offsets, int num_threads) except -1:
    """Run every tile of every part, on the team the call's size allows."""
    cdef ConvertJob job
    cdef intp n_tiles = c.n_tiles * n_parts, n_units, i
    cdef intp result_bytes = c.n_tiles * c.tile_items * c.item[SIDE_DST] * n_parts
    cdef int team = copy_team(result_bytes, n_tiles, num_threads), s
    cdef bint staged
    cdef char* memory
    job.n_tiles = n_tiles
    job.tiles_per_unit = imax(1, n_tiles // (team * tuning.chunks_per_thread))
    job.fault_ahead = fresh_result(c, base[SIDE_DST], n_parts, part_offsets, result_bytes,
                                   &job.dst_end)
    if job.fault_ahead:
        # Units small enough for the calling thread to fault just ahead.
        job.tiles_per_unit = imin(job.tiles_per_unit, imax(
            1, tuning.fault_unit_bytes // (c.tile_items * c.item[SIDE_DST])))
    n_units = (n_tiles + job.tiles_per_unit - 1) // job.tiles_per_unit
    job.plan = c
    for s in range(CONVERT_SIDES):
        job.base[s] = base[s]
    job.n_parts = n_parts
    job.part_offsets = part_offsets
    # One-pass lanes tiles use no stage and no lines (and may be larger).
    staged = 0
    for s in range(c.n_shapes):
        staged |= c.shapes[s].lanes == 0
    job.stage_bytes = round_up(c.tile_items * c.item[SIDE_SRC], SCRATCH_ALIGN) * staged
    job.line_bytes = round_up(c.tile_items * c.item[SIDE_SCALE], SCRATCH_ALIGN) * staged
    job.scratch_bytes = job.stage_bytes + 2 * job.line_bytes
    memory = <char*>malloc(team * job.scratch_bytes + SCRATCH_ALIGN
                           + team * sizeof(ThreadLines))
    if memory == NULL:
        raise MemoryError()
    job.scratch = memory + (SCRATCH_ALIGN - <size_t>memory % SCRATCH_ALIGN) % SCRATCH_ALIGN
    job.lines = <ThreadLines*>(job.scratch + team * job.scratch_bytes)
    for i in range(team):
        job.lines[i].shape = -1
    with nogil:
        run_units(&job, run_convert_unit, n_units, result_bytes // n_units, team, num_threads,
                  job.fault_ahead)
    free(memory)
    return 0


cdef bint fresh_result(const ConvertPlan* c, const char* dst, intp n_parts,
                       const intp* part_offsets, intp result_bytes,
                       const char** dst_end) noexcept nogil:
    """Whether the result's tiles fault ahead (faults_pay: large enough,
    none of its pages resident); ``dst_end``: the byte after its last item
    (its steps are positive once planned)."""
    cdef intp reach = c.item[SIDE_DST], low = part_offsets[SIDE_DST], high = low, part
    cdef int k, resident = -1
    for k in range(c.n):
        reach += (c.extent[k] - 1) * c.step[SIDE_DST][k]
    for part in range(1, n_parts):
        low = imin(low, part_offsets[part * CONVERT_SIDES + SIDE_DST])
        high = imax(high, part_offsets[part * CONVERT_SIDES + SIDE_DST])
    dst_end[0] = dst + high + reach
    if result_bytes >= tuning.fault_ahead_min_bytes:
        resident = fb_pages_resident(dst + low, dst_end[0])
    return faults_pay(result_bytes, resident)


cdef inline intp round_up(intp n, intp unit) noexcept nogil:
    return (n + unit - 1) // unit * unit
