# The planner: a copy's axes normalised and its kernel, blocking and loop
# chosen, as a Plan (build_plan). Nothing here touches the data.

cdef enum Kernel:
    # The kernel that runs a plan's blocks (run_kernel); each reads the Plan
    # fields named by its comment.
    KERNEL_BLOCK        # rows of the a axis, items of the b axis (copy_block)
    KERNEL_GATHER       # rows of gather_len destination items read through
                        # gather: by byte shuffles where a program was built
    KERNEL_LANES        # lane transposes of pixels (lanes, _kernel_lanes.pxi)
    KERNEL_TRANSPOSE    # staged transposes (transpose_rows, gather, _kernel_transpose.pxi)


cdef struct Plan:
    Kernel kernel
    int n_loop                  # loop axes, outermost first
    int a_loop, b_loop          # the loop axes that count tiles of a and of b
    intp extent[MAX_LOOP]
    intp src_step[MAX_LOOP]
    intp dst_step[MAX_LOOP]
    intp n_iter                 # product of the loop extents
    intp width                  # bytes per (folded) item
    intp n_a, n_b               # kernel axes: a (outer) and b (inner, destination-innermost)
    intp tile_a, tile_b
    intp src_a, src_b, dst_a, dst_b
    intp total_bytes
    # Bytes of the whole copy this plan is run in: all parts, or the
    # whole_bytes of a plan run block by block. Shuffle programs (built
    # once, _kernel_shuffle.pxi) must pay for themselves over these.
    intp copy_bytes
    # KERNEL_GATHER: the kernel writes rows of gather_len
    # contiguous destination items, item j read at gather[j] bytes past the
    # row's source position; the b axis is unused (extent 1).
    intp gather_len
    intp gather[GATHER_MAX]
    # A table axis (source_table not NULL): the innermost axis, contiguous
    # in the destination, reads its items at these source offsets, which no
    # step describes (NCHW_VECT_C depth_first, _operator_plans.pxi). It is always
    # part of the gathered run.
    const intp* source_table
    # KERNEL_TRANSPOSE (_kernel_transpose.pxi): the a and b
    # axes are the outermost of the source's and the destination's
    # innermost axes; one index of a is a_in rows (transpose_rows: their
    # destination offsets, over a tile of a), one of b is b_in items
    # (gather: their source offsets, over a tile of b).
    bint transpose_staged       # through a buffer (source runs far apart)
    intp source_ahead           # a transpose asks for its source this far on (0: not)
    intp a_in, b_in
    intp b_shift                # the first b tile is this many items short (line_phase)
    intp transpose_rows[TRANSPOSE_MAX]
    ShuffleProgram shuffle      # the gathered run by byte shuffles, if any
    # A run split from an axis with no fitting divisor: the last index of
    # loop axis ragged_loop (-1: none), or the last row of the a axis
    # (ragged_rows), runs the first gather_tail_len items.
    int ragged_loop
    bint ragged_rows
    intp gather_tail_len
    ShuffleProgram tail_shuffle
    # KERNEL_LANES: the b axis runs over pixels
    # of n_lanes bytes, packed on one side and split into lanes on the other.
    LaneTranspose lanes
    # Each kernel block is copied once per part, shifted by these byte offsets.
    intp n_parts
    intp block_bytes            # destination bytes per kernel block, all parts together
    bint stream                 # blocks go through a buffer and stream out (_kernel_stream.pxi)
    bint fault_ahead            # fresh destination pages are faulted at their ends (_kernel_faults.pxi)
    const char* dst_end         # one past the destination's last byte
    const intp* src_offsets
    const intp* dst_offsets


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


cdef bint plan_transpose(Plan* p, int m, const intp* ext, const intp* ss, const intp* ds,
                         int* a_axis, int* b_axis, bint* grouped) noexcept nogil:
    """Set up a staged transpose (``_kernel_transpose.pxi``) when the source is
    contiguous along ``a_axis`` and the destination along ``b_axis``.

    Each side's run grows by the axes that continue it (a Fortran-order
    input: N then C in the source) until it holds a tile edge of items. On
    return ``a_axis`` and ``b_axis`` are the outermost axes of the two runs,
    tiled by the loop, and ``grouped`` marks every axis of both runs. False
    when the source does not step one item along ``a_axis``, or the block
    would not pay (the plan is then as before, but for ``grouped`` and
    ``p.gather``, which the other kernels set afresh)."""
    cdef intp w = p.width, edge = transpose_tile_edge(w), a_in, b_in, tile_a, tile_b, span
    cdef int a, b, i, n_a_axes, n_b_axes
    cdef int a_axes[MAX_AXES]
    cdef int b_axes[MAX_AXES]
    if ss[a_axis[0]] != w or ds[b_axis[0]] != w or edge < 2:
        return False
    for i in range(m):
        grouped[i] = False
    grouped[a_axis[0]] = True
    a_axes[0] = a_axis[0]
    b_axes[0] = b_axis[0]
    n_b_axes = grow_run(m, ext, ds, grouped, b_axes, &b_in, edge, w)
    n_a_axes = grow_run(m, ext, ss, grouped, a_axes, &a_in, edge, w)
    a = a_axes[n_a_axes - 1]
    b = b_axes[n_b_axes - 1]
    # Square tiles of edge x edge items; a short side leaves its share of
    # the block's bytes to the other.
    tile_a = imin(ext[a], imax(1, edge // a_in))
    tile_b = imin(ext[b], imax(1, edge // b_in))
    if a_in * tile_a < edge:
        tile_b = imin(ext[b], imax(tile_b, TRANSPOSE_BYTES // (a_in * tile_a * w) // b_in))
    elif b_in * tile_b < edge:
        tile_a = imin(ext[a], imax(tile_a, TRANSPOSE_BYTES // (b_in * tile_b * w) // a_in))
    tile_a = imin(tile_a, TRANSPOSE_MAX // a_in)
    tile_b = imin(tile_b, TRANSPOSE_MAX // b_in)
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
    p.tile_a = tile_a
    p.tile_b = tile_b
    a_axis[0] = a
    b_axis[0] = b
    return True


# Two lanes of 4-byte items (bs 2 float32 channels_first) go through the
# lane kernel's rows (fb_pair_rows) from this many pixels a row; shorter
# rows, and streamed interleaves, keep the block kernel (rows of 16
# pixels: 1.43 -> 2.66 x np.copyto in the pair rows).
cdef enum:
    PAIR_MIN_PIXELS = 32


cdef bint plan_lanes(Plan* p, int* n_axes, intp* ext, intp* ss, intp* ds) noexcept nogil:
    """Set up a lane transpose of 1-, 2-, 4- or 8-byte items (``_kernel_lanes.pxi``)
    if the copy is one; the lane axes are then removed and the pixel axis is
    the last one. Pixels of up to LANES_MAX bytes. 3 lanes of 4-byte items
    gain over the block kernel (5-D space_to_depth bs=3 float32 rows of 52
    pixels 1.40 -> 0.66 x np.copyto, the rows batched in one call); 2 lanes
    of them (fb_pair_rows) in rows of PAIR_MIN_PIXELS pixels or more, but
    for a streamed interleave (below).

    Interleave: the innermost destination axes hold at most that many
    items contiguously (the lanes, read at any source steps), and the next
    destination axis continues them while stepping one item in the source
    (the pixels). Split: the destination's innermost axis (the pixels) steps
    L items in the source, and axes stepping 1, e1, e1*e2 ... items in the
    source make up those L items (the lanes, written at any destination
    steps). Lanes that repeat a source item (Tile) are left to the other
    kernels, and so are pixel axes shorter than a register of items."""
    cdef int m = n_axes[0], k, i, j, a, d, n_lane_axes = 0
    cdef intp interleave_lanes
    cdef int best_k
    cdef bint can_interleave, can_split
    cdef intp w = p.width, n_lanes = 1, offset
    cdef intp max_lanes = LANES_MAX // p.width
    # Pixels in a register: pixel axes shorter than this are left to the
    # other kernels.
    cdef intp group = LANE_GROUP // p.width
    cdef int lane_axis[LANES_MAX]
    cdef LaneTranspose* t = &p.lanes
    t.n_lanes = 0
    if not use_ssse3() or (w != 1 and w != 2 and w != 4 and w != 8) or m < 2:
        return False
    # Interleave: as many lane axes as fit, backing off to the last axis
    # that could be the pixel axis when the one after them cannot (a [4, 3,
    # 60] byte transpose: 3 lanes, 60 pixels, not 180 lanes and none).
    k = m - 1
    best_k = -1
    interleave_lanes = 0
    while k >= 0 and ds[k] == n_lanes * w and ss[k] != 0:
        if n_lanes >= 2 and ss[k] == w and ext[k] >= group:
            best_k = k
            interleave_lanes = n_lanes
        if n_lanes * ext[k] > max_lanes:
            break
        n_lanes *= ext[k]
        k -= 1
    k = best_k
    can_interleave = k >= 0
    # Split: find the axes that pack the source items of one pixel,
    # innermost first. When both forms exist, the one that moves more items
    # a row wins, then the one with more pixels (depth_to_space depth_first
    # NHWC, C 4, bs 4, float32: a split of 16 lanes of 4 pixels, 0.52 x
    # np.copyto, against an interleave of 4 lanes of 4 pixels, 0.78).
    n_lanes = 1
    can_split = True
    while ss[m - 1] != n_lanes * w:
        j = -1
        for i in range(m - 1):
            if ss[i] == n_lanes * w and n_lanes * ext[i] <= max_lanes:
                j = i
                break
        if j < 0:
            can_split = False
            break
        lane_axis[n_lane_axes] = j
        n_lane_axes += 1
        n_lanes *= ext[j]
    can_split = can_split and n_lanes >= 2 and ds[m - 1] == w and ext[m - 1] >= group
    # Splits of 8-byte items stop at 64-byte pixels: beyond, a 2 x 2
    # transpose a block saves too little (16 lanes of float64: 0.88 x
    # np.copyto against 0.72 in the block kernel; interleaves of 9 lanes
    # gain, 0.91 -> 0.51).
    can_split = can_split and not (w == 8 and n_lanes * w > 64)
    if can_interleave and can_split:
        if n_lanes * ext[m - 1] < interleave_lanes * ext[k] or (
                n_lanes * ext[m - 1] == interleave_lanes * ext[k] and ext[m - 1] <= ext[k]):
            can_split = False
    if can_split:
        t.interleave = False
        # Lane axes sorted by position for the removal below.
        for i in range(1, n_lane_axes):
            d = lane_axis[i]
            j = i - 1
            while j >= 0 and lane_axis[j] > d:
                lane_axis[j + 1] = lane_axis[j]
                j -= 1
            lane_axis[j + 1] = d
    elif can_interleave:
        t.interleave = True
        n_lanes = interleave_lanes
        n_lane_axes = 0
        for i in range(k + 1, m):
            lane_axis[n_lane_axes] = i
            n_lane_axes += 1
    else:
        return False
    if w == 4 and n_lanes == 2 and (ext[m - 1 if not t.interleave else k] < PAIR_MIN_PIXELS
                                    or (t.interleave and p.stream)):
        return False
    # Padded blocks of lanes end each run through a buffer: a run must be
    # long for that to pay (runs of 4 pixels of 3 float64 lanes ran at 1.06
    # x np.copyto against 0.45 in the block kernel).
    # So do pixels of more than 64 bytes, a block of lanes at a time (16
    # lanes of float64 with runs of 4 pixels: 1.07 x np.copyto against 0.43
    # for gathered rows).
    if (((w >= 4 or n_lanes * w > 16) and n_lanes % group != 0) or n_lanes * w > 64) and \
            ext[m - 1 if not t.interleave else k] < LANE_GROUP:
        return False
    # Lane j (its place in the packed pixel) has digit (j // packed step)
    # % extent on each lane axis; its offset is those digits times the
    # other side's steps.
    t.n_lanes = <int>n_lanes
    p.kernel = KERNEL_LANES
    for j in range(n_lanes):
        offset = 0
        for i in range(n_lane_axes):
            a = lane_axis[i]
            if t.interleave:
                offset += (j // (ds[a] // w)) % ext[a] * ss[a]
            else:
                offset += (j // (ss[a] // w)) % ext[a] * ds[a]
        t.offset[j] = offset
    if (w == 1 and n_lanes <= 16) or (w == 2 and n_lanes <= 8):
        plan_lane_masks(t, w)
    # Remove the lane axes, keeping the order of the others.
    j = 0
    d = 0
    for i in range(m):
        if d < n_lane_axes and lane_axis[d] == i:
            d += 1
            continue
        ext[j] = ext[i]; ss[j] = ss[i]; ds[j] = ds[i]
        j += 1
    n_axes[0] = j
    return True


cdef enum:
    # Runs of a ragged split up to this long are the kernel's rows, several
    # a block (plan_kernels); longer ones run a block each.
    RAGGED_ROWS_MAX_BYTES = 1024
    # A repeating shuffle program's run (plan_long_run) spans at most this
    # many bytes of the destination or, where further, of the source
    # (pixels x source step): a block's rows read the same source lines,
    # which longer runs push out of L1 (8 KiB spans lost against 4 KiB:
    # 0.68 against 0.61 x np.copyto).
    LONG_RUN_REACH = 4 * 1024


cdef int plan_gather(Plan* p, int* n_axes, intp* ext, intp* ss, intp* ds,
                     intp block_items, bint need_shuffle, int* row_axis,
                     int* ragged_axis) noexcept nogil:
    """Set up gather mode if it gives longer kernel rows than ``block_items``.

    The gathered run is the innermost destination axes over which the
    destination is contiguous, as many whole axes as fit in GATHER_MAX items,
    then a divisor of the next contiguous axis (which is split in two). When
    that axis has no divisor near the best size (1182 = 6 * 197, say), it is
    split raggedly: its last piece is shorter, a prefix of the run
    (``ragged_axis`` is the outer part's axis, else -1). Where the run's
    shuffle program repeats, the pieces of that axis may be longer than
    GATHER_MAX items (plan_long_run). The offsets of the run's items in
    the source (up to GATHER_MAX) go into ``p.gather``. The
    kernel's rows step along the remaining axis with the smallest source
    step (``row_axis``), so rows that read the same source lines run back to
    back: for a ragged split of short runs, the split axis itself (its
    last row is the shorter run). Returns the first of the run's axes, or
    -1 when gather mode does not pay: the block kernel is as good for a
    single strided axis, and for blocks not much smaller, and
    ``need_shuffle`` asks for a run that byte shuffles can build."""
    cdef int m = n_axes[0], k = m - 1, i, row = -1
    cdef intp run = 1, part = 1, rows = 1, j, offset, step, best_step = 0, ideal, n_pieces, tail = 0
    cdef intp head_pixels, long_part, long_tail, pixel_reach, shuffle_pixel_items
    cdef bint long_runs
    cdef const ShuffleProgram* pattern
    cdef intp digit[MAX_AXES]
    cdef intp digit_extent[MAX_AXES]
    cdef intp digit_step[MAX_AXES]
    cdef int n_digits
    while k >= 0 and ds[k] == p.width * run and run * ext[k] <= GATHER_MAX:
        run *= ext[k]
        k -= 1
    if k >= 0 and ds[k] == p.width * run:
        # Split the next contiguous axis by its largest divisor that fits,
        # or into near-equal pieces and a shorter last one.
        ideal = GATHER_MAX // run
        part = ideal
        while ext[k] % part != 0:
            part -= 1
        if 2 * part < ideal and ext[k] > ideal:
            n_pieces = (ext[k] + ideal - 1) // ideal
            part = (ext[k] + n_pieces - 1) // n_pieces
            tail = ext[k] - (n_pieces - 1) * part
    # One strided axis is what the block kernel does already (but for a
    # table axis, which only a gathered run reads).
    if m - 1 - k < 2 and part == 1 and p.source_table == NULL:
        return -1
    # The run's source offsets, counted through the run's axes (the split
    # part of axis k, then the whole axes after it) like an odometer; for a
    # split axis, as many of its pixels as the table holds (the head of a
    # long run, and the prefix that a shorter last part runs).
    head_pixels = imin(ext[k], GATHER_MAX // run) if part > 1 else 1
    n_digits = 0
    if part > 1:
        digit_extent[0] = head_pixels; digit_step[0] = ss[k]; n_digits = 1
    for i in range(k + 1, m):
        digit_extent[n_digits] = ext[i]; digit_step[n_digits] = ss[i]; digit[n_digits] = 0
        n_digits += 1
    digit[0] = 0
    offset = 0
    for j in range(run * head_pixels):
        # A table axis (step 0) is the last digit.
        p.gather[j] = offset + (p.source_table[digit[n_digits - 1]] if p.source_table != NULL else 0)
        i = n_digits - 1
        while i >= 0:
            digit[i] += 1
            offset += digit_step[i]
            if digit[i] < digit_extent[i]:
                break
            offset -= digit_extent[i] * digit_step[i]
            digit[i] = 0
            i -= 1
    # The run's pixels, whose shuffle pieces may advance by whole pixels
    # (pixel_pieces): the items of the axes inside its outermost (the split
    # axis k, else axis k + 1). Not those of fewer axes: space_to_depth
    # depth_first channels_last C 3 bs 3 float32 has 108-byte pixels, and
    # pieces of one 36-byte bs x bs block each repeat only as far as the
    # pixel (every 3 pieces), 1 MiB one thread 2.38 -> 3.08 x np.copyto.
    shuffle_pixel_items = run if part > 1 else run // ext[k + 1]
    plan_shuffle(&p.shuffle, p.gather, run * part, p.width, p.copy_bytes,
                 shuffle_pixel_items)
    if need_shuffle and p.shuffle.n_pieces == 0:
        return -1
    # A program that repeats can run parts longer than the table
    # (plan_long_run): fewer, longer runs. The period shows in the part's
    # program, or else in the whole table's (tail_shuffle serves to hold it).
    # Here axis k is split, so its pixels (shuffle_pixel_items) are run items.
    long_runs = False
    pixel_reach = imax(run * p.width, iabs(ss[k])) if part > 1 else 0
    if tuning.long_shuffle_runs and part > 1 and part < ext[k] and p.shuffle.n_pieces \
            and part * pixel_reach < LONG_RUN_REACH \
            and (pieces_per_period(run * p.width) <= SHUFFLE_PERIOD_MAX or pixel_pieces(run * p.width)):
        pattern = &p.shuffle
        if not p.shuffle.period and head_pixels > part:
            plan_shuffle(&p.tail_shuffle, p.gather, run * head_pixels, p.width, p.copy_bytes,
                         shuffle_pixel_items)
            pattern = &p.tail_shuffle
        n_pieces = (ext[k] * pixel_reach + LONG_RUN_REACH - 1) // LONG_RUN_REACH
        long_part = (ext[k] + n_pieces - 1) // n_pieces
        # Parts of long_part pixels may need fewer than n_pieces parts
        # (2658 pixels in 63 parts of 43: 62 parts, the last of 35).
        n_pieces = (ext[k] + long_part - 1) // long_part
        long_tail = ext[k] - (n_pieces - 1) * long_part
        if long_tail == long_part:
            long_tail = 0
        if pattern.period and long_part > part:
            if plan_long_run(&p.shuffle, pattern, p.gather, head_pixels, long_part, run, ss[k],
                             p.width, p.copy_bytes) and p.shuffle.n_pieces \
                    and plan_long_run(&p.tail_shuffle, &p.shuffle, p.gather, head_pixels, long_tail,
                                      run, ss[k], p.width, p.copy_bytes):
                long_runs = True
                part = long_part
                tail = long_tail
            else:
                plan_shuffle(&p.shuffle, p.gather, run * part, p.width, p.copy_bytes,
                             shuffle_pixel_items)
    if not long_runs:
        # The last part's run is the table's prefix (its outer digit is axis k's).
        plan_shuffle(&p.tail_shuffle, p.gather, run * tail, p.width, p.copy_bytes,
                     shuffle_pixel_items)
    p.gather_tail_len = run * tail
    for i in range(k + 1):
        # The ragged axis stays a loop axis, and the pieces along it come
        # one after another: rows may only step less in the source (rows
        # that step further would walk the source in strips one piece wide).
        if tail and (iabs(ss[i]) > iabs(ss[k] * part) if i != k
                     else run * part * p.width > RAGGED_ROWS_MAX_BYTES):
            continue
        # A split into one part leaves no rows along it.
        if i == k and part == ext[k]:
            continue
        step = iabs(ss[i] * part) if i == k else iabs(ss[i])
        if row < 0 or step < best_step:
            row = i
            best_step = step
    if row >= 0:
        rows = imin((ext[row] + part - 1) // part if row == k else ext[row],
                    imax(1, p.block_bytes // (run * part * p.width)))
    # The gathered block (rows of the run) must be much larger than the block.
    if rows * run * part < 4 * block_items:
        return -1
    ragged_axis[0] = k if tail else -1
    if part > 1:
        for i in range(m, k + 1, -1):
            ext[i] = ext[i - 1]; ss[i] = ss[i - 1]; ds[i] = ds[i - 1]
        ext[k + 1] = part; ss[k + 1] = ss[k]; ds[k + 1] = ds[k]
        ext[k] = (ext[k] + part - 1) // part; ss[k] = ss[k] * part; ds[k] = ds[k] * part
        n_axes[0] = m + 1
    p.gather_len = run * part
    p.kernel = KERNEL_GATHER
    row_axis[0] = row
    return k + 1


cdef int build_plan(Plan* p, int ndim, const intp* extents, const intp* src_strides,
                    const intp* dst_strides, intp itemsize, intp n_parts,
                    char** src, char** dst, intp whole_bytes=0,
                    const intp* source_table=NULL) except -1:
    """Fill ``p`` for the copy; return 0 when there is nothing to copy, else 1.

    ``src`` and ``dst`` are moved to the first item when a destination step
    is negative. ``whole_bytes``: the bytes written by the whole copy when
    this plan runs only a piece of it (the NCHW_VECT_C blocks); with
    the plan's own bytes, it decides whether the destination is streamed.
    ``source_table``: the last axis is a table axis (see Plan), its
    destination step ``itemsize`` and its source stride unused; the table
    must outlive the plan."""
    cdef intp ext_given[MAX_AXES]
    cdef intp ss_given[MAX_AXES]
    cdef intp ds_given[MAX_AXES]
    cdef intp ext_kept[MAX_AXES]
    cdef intp ss_kept[MAX_AXES]
    cdef intp ds_kept[MAX_AXES]
    cdef intp* ext = ext_given
    cdef intp* ss = ss_given
    cdef intp* ds = ds_given
    cdef intp te, ts, td, total, fold_bytes, part_bytes, reach = 0
    cdef int m = 0, i, k, resident

    if source_table != NULL and (ndim < 1 or dst_strides[ndim - 1] != itemsize
                                 or extents[ndim - 1] > GATHER_MAX):
        raise ValueError(f"fastblock: a table axis must be the destination's innermost "
                         f"and at most {GATHER_MAX} items")
    p.source_table = source_table
    total = itemsize
    for i in range(ndim):
        if extents[i] == 0:
            return 0
        if source_table != NULL and i == ndim - 1 and extents[i] == 1:
            # One item: its offset moves the source, and no table is left.
            src[0] += source_table[0]
            p.source_table = NULL
            continue
        if extents[i] == 1:
            continue
        if m == MAX_AXES:
            raise ValueError("fastblock: too many axes of extent > 1 in one copy")
        if p.source_table != NULL and i == ndim - 1:
            # Step 0 here; plan_gather adds the table's offsets.
            ext[m] = extents[i]; ss[m] = 0; ds[m] = itemsize
            total *= extents[i]
            reach += (ext[m] - 1) * itemsize
            m += 1
            continue
        ext[m] = extents[i]
        ss[m] = src_strides[i]
        ds[m] = dst_strides[i]
        total *= extents[i]
        if ds[m] < 0:
            dst[0] += (ext[m] - 1) * ds[m]
            src[0] += (ext[m] - 1) * ss[m]
            ds[m] = -ds[m]
            ss[m] = -ss[m]
        reach += (ext[m] - 1) * ds[m]
        m += 1
    p.total_bytes = total
    p.n_parts = n_parts
    p.copy_bytes = imax(total * n_parts, whole_bytes)
    p.block_bytes = imax(tuning.block_bytes // n_parts, tuning.min_block_bytes)
    p.dst_end = dst[0] + reach + itemsize
    # Bytes one part writes, or the whole result of a plan run block by block.
    part_bytes = imax(total, whole_bytes)
    # Asking which pages are resident takes three system calls (a few us):
    # only copies large enough to stream or to fault ahead ask.
    resident = -1
    if dst[0] != NULL and part_bytes >= imin(tuning.stream_min_bytes, tuning.fault_ahead_min_bytes):
        resident = fb_pages_resident(dst[0], p.dst_end)
    # Parts write neighbouring bytes of the same lines: those stay ordinary.
    p.stream = n_parts == 1 and streams_pay(part_bytes, resident)
    # (A copy in parts moves dst_end past its last part: copy_parts.)
    p.fault_ahead = faults_pay(part_bytes, resident)
    if p.stream:
        p.block_bytes = STREAM_BLOCK_BYTES

    # Sort by destination step, largest first (insertion sort: m is small).
    for i in range(1, m):
        te = ext[i]; ts = ss[i]; td = ds[i]
        k = i - 1
        while k >= 0 and (ds[k] < td or (ds[k] == td and iabs(ss[k]) < iabs(ts))):
            ext[k + 1] = ext[k]; ss[k + 1] = ss[k]; ds[k + 1] = ds[k]
            k -= 1
        ext[k + 1] = te; ss[k + 1] = ts; ds[k + 1] = td

    # Merge an axis into its inner neighbour when both sides step over it as
    # one longer axis.
    # (The table axis, innermost by its step, is never merged.)
    k = 0
    for i in range(1, m):
        if ds[k] == ds[i] * ext[i] and ss[k] == ss[i] * ext[i] \
                and not (p.source_table != NULL and i == m - 1):
            ext[k] *= ext[i]
            ss[k] = ss[i]
            ds[k] = ds[i]
        else:
            k += 1
            ext[k] = ext[i]; ss[k] = ss[i]; ds[k] = ds[i]
    if m > 0:
        m = k + 1

    # Fold a run contiguous on both sides into a wider item. A fold of 1- or
    # 2-byte items into 3 to 15 bytes (not 4 or 8) leaves the block kernel to
    # move them one at a time (two overlapping copies each); unfolded, the
    # same runs may be gathered by byte shuffles instead (uint8 C=1 bs=3
    # space_to_depth channels_last, 64 MiB: 1.17 -> 0.64 x np.copyto). So
    # the unfolded plan is tried first and kept only if it shuffles and reads
    # each source line in one sweep: for copies that stream, and for 3-byte
    # folds (5- and 6-byte ones with 64-byte pieces) from
    # tuning.unfold_short_min_bytes. Folds up to 6 bytes shuffle with 16-byte
    # pieces, up to 12 with 64-byte ones; wider folds lost.
    fold_bytes = itemsize * ext[m - 1] if m >= 1 else 0
    if p.source_table == NULL and m >= 2 and ds[m - 1] == itemsize and ss[m - 1] == itemsize and itemsize <= 2 \
            and fold_bytes < 16 and not is_register_width(fold_bytes) \
            and (total >= tuning.stream_min_bytes or (total >= tuning.unfold_short_min_bytes and (
                fold_bytes == 3 or (fold_bytes <= 6 and use_wide_shuffles())))):
        memcpy(ext_kept, ext, m * sizeof(intp))
        memcpy(ss_kept, ss, m * sizeof(intp))
        memcpy(ds_kept, ds, m * sizeof(intp))
        plan_kernels(p, m, ext, ss, ds, itemsize, False,
                     fold_bytes <= (12 if use_wide_shuffles() else 6), dst[0])
        if p.kernel == KERNEL_GATHER and p.shuffle.n_pieces and not revisits_source_lines(p):
            return 1
        ext = ext_kept
        ss = ss_kept
        ds = ds_kept
    plan_kernels(p, m, ext, ss, ds, itemsize, True, False, dst[0])
    return 1


cdef bint revisits_source_lines(const Plan* p) noexcept nogil:
    """Whether a loop axis that steps the source by less than a line
    encloses one that steps farther: the lines it shares are read again a
    whole sweep of the inner axis later."""
    cdef int i, j
    for i in range(p.n_loop):
        if p.extent[i] > 1 and iabs(p.src_step[i]) < CACHE_LINE:
            for j in range(i + 1, p.n_loop):
                if p.extent[j] > 1 and iabs(p.src_step[j]) > iabs(p.src_step[i]):
                    return True
    return False


cdef void plan_kernels(Plan* p, int m, intp* ext, intp* ss, intp* ds, intp itemsize, bint fold,
                       bint force_shuffles, const char* dst) noexcept nogil:
    """The kernel, its block and the loop over the sorted and merged axes
    (``m`` of them; the arrays are reused): the second half of build_plan.
    ``fold``: fold the innermost axis into the item when it is contiguous
    on both sides; ``force_shuffles``: gather 1- and 2-byte items by byte
    shuffles wherever they can build the runs."""
    cdef intp n_tiles_a, n_tiles_b, edge, block_rows, block_items
    cdef LaneShape lane_shape
    cdef bint shuffle_lanes
    cdef int i, a_axis, b_axis, j_axis, first_kernel, ragged_axis = -1, k
    cdef bint grouped[MAX_AXES]

    p.width = itemsize
    if fold and p.source_table == NULL and m >= 2 and ds[m - 1] == itemsize and ss[m - 1] == itemsize:
        p.width = itemsize * ext[m - 1]
        m -= 1
    if m == 0:
        ext[0] = 1; ss[0] = 0; ds[0] = 0
        m = 1

    p.kernel = KERNEL_BLOCK
    p.gather_len = 0
    p.lanes.n_lanes = 0
    if p.source_table != NULL:
        # The table axis is read only by gathered runs.
        a_axis = m - 2
        b_axis = m - 1
        first_kernel = plan_gather(p, &m, ext, ss, ds, 0, False, &a_axis, &ragged_axis)
    elif plan_lanes(p, &m, ext, ss, ds):
        # Lane transpose: the pixel axis is the kernel's b axis, in groups
        # of LANE_GROUP pixels; rows step along its outer neighbour.
        b_axis = m - 1
        a_axis = b_axis - 1
        # Split rows read the source rows in turn (the one source stream);
        # interleaved rows write the destination rows in turn.
        if not p.lanes.interleave:
            for i in range(b_axis):
                if iabs(ss[i]) < iabs(ss[a_axis]):
                    a_axis = i
        first_kernel = b_axis
        p.tile_b = imin(ext[b_axis], imax(LANE_GROUP, p.block_bytes // (p.lanes.n_lanes * p.width * LANE_GROUP)
                                          * LANE_GROUP))
        p.tile_a = imax(1, p.block_bytes // (p.tile_b * p.lanes.n_lanes * p.width))
    else:
        # Kernel axes: b is the innermost destination axis; a is the source's
        # contiguous axis when that is another one (a transpose), else b's
        # outer neighbour.
        b_axis = m - 1
        j_axis = -1
        for i in range(m):
            if ss[i] != 0 and (j_axis < 0 or iabs(ss[i]) < iabs(ss[j_axis])):
                j_axis = i
        if j_axis >= 0 and j_axis != b_axis and ss[b_axis] != 0 and iabs(ss[b_axis]) > iabs(ss[j_axis]):
            a_axis = j_axis
            if not plan_transpose(p, m, ext, ss, ds, &a_axis, &b_axis, grouped):
                # A strided or small transpose: tiles that fit in L1, item by item.
                edge = transpose_tile_edge(p.width)
                p.tile_a = imin(ext[a_axis], edge)
                p.tile_b = imin(ext[b_axis], edge)
                if p.tile_a < edge:
                    p.tile_b = imin(ext[b_axis], imax(edge, TRANSPOSE_BYTES // (p.tile_a * p.width)))
                elif p.tile_b < edge:
                    p.tile_a = imin(ext[a_axis], imax(edge, TRANSPOSE_BYTES // (p.tile_b * p.width)))
        else:
            a_axis = b_axis - 1
            p.tile_b = imin(ext[b_axis], imax(1, p.block_bytes // p.width))
            p.tile_a = imax(1, p.block_bytes // (p.tile_b * p.width))

        # Tiny blocks (depth_first with channels last: bs x C items) are run as
        # gathered destination runs instead, unless they are (de-)interleaved
        # lanes long enough for the block kernel's vector loop.
        first_kernel = m if p.kernel == KERNEL_TRANSPOSE else b_axis
        block_rows = imin(p.tile_a, ext[a_axis]) if a_axis >= 0 else 1
        block_items = block_rows * p.tile_b
        lane_shape.n = 0
        lane_shape.lanes = lanes_of(block_rows, p.tile_b, ds[a_axis] if a_axis >= 0 else 0, ds[b_axis],
                               ss[a_axis] if a_axis >= 0 else 0, ss[b_axis], p.width, &lane_shape)
        # Three lanes of bytes do not vectorise in C, nor does a block moved
        # item by item; byte shuffles do them, where they can build the run
        # (depth_to_space of a stepped uint8 view [..., ::2], 64 MiB: 2.9 ->
        # 0.68 x np.copyto).
        shuffle_lanes = shuffles_pay(p.copy_bytes) and p.width <= 2 and (
            force_shuffles or lane_shape.lanes == 3 or (a_axis >= 0 and moves_item_by_item(
                block_rows, p.tile_b, ds[a_axis], ds[b_axis], ss[a_axis], ss[b_axis], p.width)))
        if p.kernel != KERNEL_TRANSPOSE and ((block_items * p.width < tuning.small_block_bytes and lane_shape.n < tuning.lanes_min_run)
                                or shuffle_lanes):
            k = plan_gather(p, &m, ext, ss, ds, 0 if shuffle_lanes else block_items, shuffle_lanes,
                            &a_axis, &ragged_axis)
            if k >= 0:
                first_kernel = k
    if p.kernel == KERNEL_GATHER:
        p.n_b = 1; p.src_b = 0; p.dst_b = 0; p.tile_b = 1
        p.tile_a = imax(1, p.block_bytes // (p.gather_len * p.width))
    else:
        p.n_b = ext[b_axis]; p.src_b = ss[b_axis]; p.dst_b = ds[b_axis]
    if a_axis >= 0:
        p.n_a = ext[a_axis]; p.src_a = ss[a_axis]; p.dst_a = ds[a_axis]
    else:
        p.n_a = 1; p.src_a = 0; p.dst_a = 0
    p.tile_a = imin(p.tile_a, p.n_a)

    p.n_loop = 0
    p.ragged_loop = -1
    # A ragged split along the rows: the row that holds the shorter run is
    # run apart (run_range), so the other rows run several a block (64 MiB
    # uint8 C=3 space_to_depth, one thread: 1.60 -> 1.24 x np.copyto).
    # Runs longer than RAGGED_ROWS_MAX_BYTES keep a block a piece.
    p.ragged_rows = p.kernel == KERNEL_GATHER and ragged_axis >= 0 and a_axis == ragged_axis
    for i in range(first_kernel):
        if i != a_axis and not (p.kernel == KERNEL_TRANSPOSE and grouped[i]):
            if i == ragged_axis:
                p.ragged_loop = p.n_loop
            p.extent[p.n_loop] = ext[i]
            p.src_step[p.n_loop] = ss[i]
            p.dst_step[p.n_loop] = ds[i]
            p.n_loop += 1
    n_tiles_a = (p.n_a + p.tile_a - 1) // p.tile_a
    p.b_shift = line_phase(p, dst) if p.kernel == KERNEL_TRANSPOSE else 0
    n_tiles_b = (p.n_b + p.b_shift + p.tile_b - 1) // p.tile_b
    if n_tiles_a == 1 and n_tiles_b == 1 and p.kernel == KERNEL_BLOCK:
        continue_source_run(p, ext[b_axis], ss[b_axis])
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
