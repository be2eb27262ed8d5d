# Planner step 3 (_engine/plan/planner.pxi), gathered runs (KERNEL_GATHER): whether
# a copy's destination runs pay gathered (plan_gather), how they are cut
# from the axes, their source offsets, and their shuffle programs
# (_engine/plan/shuffle.pxi), long runs included.

from fastblock._engine.types cimport (Axes, GATHER_MAX, KERNEL_GATHER, KernelAxes, MAX_AXES, Plan,
                                      ShuffleProgram, WIDE_SHUFFLE_BYTES, intp)


cdef enum:
    # Runs of a ragged split up to this long are the kernel's rows, several
    # a block (build_loop); longer ones run a block each.
    RAGGED_ROWS_MAX_BYTES = 1024
    # A repeating shuffle program's run (plan_run_program) reads at most this
    # many bytes of the source lines (lengthen_split_parts): a block's rows read
    # the same source lines, which longer runs push out of L1 (8 KiB spans
    # lost against 4 KiB: 0.68 against 0.61 x np.copyto).
    LONG_RUN_REACH = 4 * 1024


cdef bint plan_gather(Plan* p, Axes* axes, intp block_items, bint need_shuffle,
                      KernelAxes* k) noexcept nogil:
    """Set up gather mode if it gives longer kernel rows than ``block_items``.

    The gathered run (gathered_run) may split an axis, raggedly where it
    has no divisor near the best size (``k.ragged``: the outer part's axis);
    where the run's shuffle program repeats, the pieces of that axis may
    be longer than GATHER_MAX items (lengthen_split_parts). The offsets of the
    run's items in the source (up to GATHER_MAX) go into ``p.gather``. The
    kernel's rows step along ``k.a`` (gather_row_axis); ``k.first`` is the
    run's first axis. False (``k`` as it was) when gather mode does not
    pay: the block kernel is as good for a single strided axis, and for
    blocks not much smaller, and ``need_shuffle`` asks for a run that byte
    shuffles can build."""
    cdef const intp* ext = &axes.extent[0]
    cdef int m = axes.n, split_axis, row
    cdef intp run, part, tail, head_pixels, shuffle_pixel_items, rows = 1
    split_axis = gathered_run(p, axes, &run, &part, &tail)
    # One strided axis is what the block kernel does already (but for a
    # table axis, which only a gathered run reads).
    if m - 1 - split_axis < 2 and part == 1 and p.source_table == NULL:
        return False
    head_pixels = imin(ext[split_axis], GATHER_MAX // run) if part > 1 else 1
    gather_offsets(p, axes, split_axis, part, head_pixels)
    # The run's pixels, whose shuffle pieces may advance by whole pixels
    # (pixel_pieces): the items of the axes inside its outermost (the split
    # axis, else the one after it). Not those of fewer axes: space_to_depth
    # depth_first channels_last C 3 bs 3 float32 has 108-byte pixels, and
    # pieces of one 36-byte bs x bs block each repeat only as far as the
    # pixel (every 3 pieces), 1 MiB one thread 2.38 -> 3.08 x np.copyto.
    shuffle_pixel_items = run if part > 1 else run // ext[split_axis + 1]
    plan_shuffle(&p.shuffle, p.gather, run * part, p.width, p.copy_bytes,
                 shuffle_pixel_items)
    if need_shuffle and p.shuffle.n_pieces == 0:
        return False
    if not lengthen_split_parts(p, axes, split_axis, run, head_pixels, shuffle_pixel_items,
                                &part, &tail):
        # The last part's run is the table's prefix (its outer digit is the split axis's).
        plan_shuffle(&p.tail_shuffle, p.gather, run * tail, p.width, p.copy_bytes,
                     shuffle_pixel_items)
    p.gather_tail_len = run * tail
    row = gather_row_axis(axes, split_axis, run * part * p.width, part, tail)
    if row >= 0:
        rows = imin((ext[row] + part - 1) // part if row == split_axis else ext[row],
                    imax(1, p.block_bytes // (run * part * p.width)))
    # The gathered block (rows of the run) must be much larger than the block.
    if rows * run * part < 4 * block_items:
        return False
    k.ragged = split_axis if tail else -1
    if part > 1:
        split_in_two(axes, split_axis, part)
    p.gather_len = run * part
    p.kernel = KERNEL_GATHER
    k.a = row
    k.first = split_axis + 1
    return True


cdef int gathered_run(const Plan* p, const Axes* axes, intp* run, intp* part,
                      intp* tail) noexcept nogil:
    """The gathered run: the innermost destination axes over which the
    destination is contiguous, as many whole axes as fit in GATHER_MAX
    items (``run`` items), then ``part`` items of the next contiguous axis,
    which is returned (the axis before the run where ``part`` is 1). That
    axis is split by its largest divisor that fits; where that is far from
    the best size (1182 = 6 * 197, say), into near-equal parts and a
    shorter last one, ``tail`` items (0: none)."""
    cdef const intp* ext = &axes.extent[0]
    cdef const intp* ds = &axes.dst_step[0]
    cdef int k = axes.n - 1
    cdef intp ideal, n_pieces
    run[0] = 1
    part[0] = 1
    tail[0] = 0
    while k >= 0 and ds[k] == p.width * run[0] and run[0] * ext[k] <= GATHER_MAX:
        run[0] *= ext[k]
        k -= 1
    if k >= 0 and ds[k] == p.width * run[0]:
        ideal = GATHER_MAX // run[0]
        part[0] = ideal
        while ext[k] % part[0] != 0:
            part[0] -= 1
        if 2 * part[0] < ideal and ext[k] > ideal:
            n_pieces = (ext[k] + ideal - 1) // ideal
            part[0] = (ext[k] + n_pieces - 1) // n_pieces
            tail[0] = ext[k] - (n_pieces - 1) * part[0]
    return k


cdef void gather_offsets(Plan* p, const Axes* axes, int split_axis, intp part,
                         intp head_pixels) noexcept nogil:
    """The run's source offsets into ``p.gather``, counted through the
    run's axes (the split part of ``split_axis``, then the whole axes after
    it) like an odometer; for a split axis, as many of its pixels as the
    table holds (``head_pixels``: the head of a long run, and the prefix
    that a shorter last part runs). A table axis (step 0) is the last digit."""
    cdef intp digit[MAX_AXES]
    cdef intp digit_extent[MAX_AXES]
    cdef intp digit_step[MAX_AXES]
    cdef int n_digits = 0, i
    cdef intp j, offset = 0, n_items = head_pixels
    if part > 1:
        digit_extent[0] = head_pixels; digit_step[0] = axes.src_step[split_axis]; n_digits = 1
    for i in range(split_axis + 1, axes.n):
        digit_extent[n_digits] = axes.extent[i]; digit_step[n_digits] = axes.src_step[i]
        digit[n_digits] = 0
        n_digits += 1
        n_items *= axes.extent[i]
    digit[0] = 0
    for j in range(n_items):
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


cdef bint lengthen_split_parts(Plan* p, const Axes* axes, int split_axis, intp run,
                               intp head_pixels, intp shuffle_pixel_items, intp* part,
                               intp* tail) noexcept nogil:
    """Longer parts of the split axis where the part's shuffle program
    repeats (plan_run_program): fewer, longer runs, each reading at most
    LONG_RUN_REACH bytes of source lines and writing at most a block. A
    pixel reads its items' bytes (fewer where they repeat), or the source
    step to the next pixel where further. The period shows in the part's
    program, or else in the whole table's (tail_shuffle serves to hold it).
    True (``part`` and ``tail`` lengthened, both programs built) where they
    are; else the part's program stands and the tail's is still to build."""
    cdef intp ext_k, src_k, pixel_reach, n_pieces, long_part, long_tail, reach
    cdef const ShuffleProgram* pattern = &p.shuffle
    if part[0] <= 1:
        return False        # (and split_axis may be -1: no axis is split)
    ext_k = axes.extent[split_axis]
    src_k = axes.src_step[split_axis]
    # Runs of repeated items (Tile of 3-byte pixels 8 times along the last
    # axis: a 24-byte pixel reads 3) run longer: per run, the kernel loads
    # its masks and finishes its last pieces by the table (1.5 MiB result,
    # one thread: 3 KiB runs 35 us, 24 KiB ones 24 us, a memset 17).
    pixel_reach = imax(imin(run * p.width, pixel_span(p.gather, run, p.width)), iabs(src_k))
    if not (tuning.long_shuffle_runs and part[0] < ext_k and p.shuffle.n_pieces
            and part[0] * pixel_reach < LONG_RUN_REACH
            and (pieces_per_period(run * p.width) <= SHUFFLE_PERIOD_MAX
                 or pixel_pieces(run * p.width))):
        return False
    if not p.shuffle.period and head_pixels > part[0]:
        plan_shuffle(&p.tail_shuffle, p.gather, run * head_pixels, p.width, p.copy_bytes,
                     shuffle_pixel_items)
        pattern = &p.tail_shuffle
    n_pieces = imax((ext_k * pixel_reach + LONG_RUN_REACH - 1) // LONG_RUN_REACH,
                    (ext_k * run * p.width + p.block_bytes - 1) // p.block_bytes)
    long_part = whole_part((ext_k + n_pieces - 1) // n_pieces, ext_k)
    # Parts of long_part pixels may need fewer than n_pieces parts
    # (2658 pixels in 63 parts of 43: 62 parts, the last of 35).
    n_pieces = (ext_k + long_part - 1) // long_part
    long_tail = ext_k - (n_pieces - 1) * long_part
    if long_tail == long_part:
        long_tail = 0
    if long_part > head_pixels and use_wide_shuffles() \
            and pattern.piece_bytes != WIDE_SHUFFLE_BYTES:
        # A head whose source is shorter than a 64-byte window (Tile of
        # 3-byte items 8 times along the last axis: 21 pixels, 63 bytes)
        # got 16-byte pieces; the long runs it starts read on past it.
        # 16-byte stores write a 1.5 MiB result in 1.6 x a memset's time,
        # 64-byte ones in 1.0 x.
        reach = (long_part - head_pixels) * iabs(src_k)
        plan_shuffle(&p.tail_shuffle, p.gather, run * head_pixels, p.width, p.copy_bytes,
                     shuffle_pixel_items, reach if src_k < 0 else 0, reach if src_k > 0 else 0)
        if p.tail_shuffle.period and p.tail_shuffle.piece_bytes == WIDE_SHUFFLE_BYTES:
            pattern = &p.tail_shuffle
    if not pattern.period or long_part <= part[0]:
        return False
    if plan_run_program(&p.shuffle, pattern, p.gather, head_pixels, long_part, run, src_k,
                        p.width, p.copy_bytes) and p.shuffle.n_pieces \
            and plan_run_program(&p.tail_shuffle, &p.shuffle, p.gather, head_pixels, long_tail,
                                 run, src_k, p.width, p.copy_bytes):
        part[0] = long_part
        tail[0] = long_tail
        return True
    plan_shuffle(&p.shuffle, p.gather, run * part[0], p.width, p.copy_bytes, shuffle_pixel_items)
    return False


cdef intp pixel_span(const intp* offsets, intp n_items, intp width) noexcept nogil:
    """The source bytes from the lowest to the last of ``n_items`` items
    of ``width`` bytes at ``offsets``."""
    cdef intp lowest = offsets[0], highest = offsets[0], i
    for i in range(n_items):
        lowest = imin(lowest, offsets[i])
        highest = imax(highest, offsets[i])
    return highest - lowest + width


cdef intp whole_part(intp longest, intp extent) noexcept nogil:
    """The longest part of at least half ``longest`` pixels that divides
    ``extent``, else ``longest``. Without a ragged tail a block takes several
    parts as its rows (gather_row_axis), where ragged parts over
    RAGGED_ROWS_MAX_BYTES take a block each (Tile uint8 [256, 256, 3] by
    (1, 1, 8), 1.5 MiB: 384 blocks of one 4 KiB run against 52 of ten 3 KiB
    ones, 45 -> 37 us)."""
    cdef intp part
    for part in range(longest, longest // 2, -1):
        if extent % part == 0:
            return part
    return longest


cdef int gather_row_axis(const Axes* axes, int split_axis, intp run_bytes, intp part,
                         intp tail) noexcept nogil:
    """The axis the gathered rows step along (-1: none): the remaining axis
    with the smallest source step, so rows that read the same source lines
    run back to back; for a ragged split of short runs, the split axis
    itself (its last row is the shorter run)."""
    cdef const intp* ext = &axes.extent[0]
    cdef const intp* ss = &axes.src_step[0]
    cdef int i, row = -1
    cdef intp step, best_step = 0
    for i in range(split_axis + 1):
        # The ragged axis stays a loop axis, and the pieces along it come
        # one after another: rows may only step less in the source (rows
        # that step further would walk the source in strips one piece wide).
        if tail and (iabs(ss[i]) > iabs(ss[split_axis] * part) if i != split_axis
                     else run_bytes > RAGGED_ROWS_MAX_BYTES):
            continue
        # A split into one part leaves no rows along it.
        if i == split_axis and part == ext[split_axis]:
            continue
        step = iabs(ss[i] * part) if i == split_axis else iabs(ss[i])
        if row < 0 or step < best_step:
            row = i
            best_step = step
    return row


cdef void split_in_two(Axes* axes, int k, intp part) noexcept nogil:
    """Split axis ``k`` into an outer axis of its parts and an inner one of
    ``part`` items (the last part may run over its end: ragged)."""
    cdef intp* ext = axes.extent
    cdef intp* ss = axes.src_step
    cdef intp* ds = axes.dst_step
    cdef int i
    for i in range(axes.n, k + 1, -1):
        ext[i] = ext[i - 1]; ss[i] = ss[i - 1]; ds[i] = ds[i - 1]
    ext[k + 1] = part; ss[k + 1] = ss[k]; ds[k + 1] = ds[k]
    ext[k] = (ext[k] + part - 1) // part; ss[k] = ss[k] * part; ds[k] = ds[k] * part
    axes.n += 1
