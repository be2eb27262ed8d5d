# Planner step 3 (_engine/plan/planner.pxi), byte shuffles of gathered runs
# (_engine/kernels/shuffle.pxi): the program of a run (plan_shuffle): its pieces,
# each piece's windows and masks, and how the program repeats.
#
# With 64-byte pieces, runs of 4-byte items shuffle too where every piece
# takes at most 4 windows (space_to_depth depth_first channels_last C 3
# float32 bs 2, 64 MiB, two threads: 0.80 -> 0.57 x np.copyto); pieces
# needing more windows lost.
#
# A repeating program also runs runs longer than the tables
# (plan_run_program): the periodic kernel repeats the first period as far as
# the run goes, and a table-sized program finishes it. Rows of more than
# GATHER_MAX items then run whole (up to LONG_RUN_REACH bytes) instead of
# in table-sized runs that each load the masks again (64 MiB
# space_to_depth depth_first channels_last C 3 bs 2 uint8, two threads:
# 1.06 -> 0.77 x np.copyto).
#
# Runs of pixels that repeat only after more than SHUFFLE_PERIOD_MAX
# pieces (27-byte pixels: 27 pieces; 9-byte ones: 9) take pieces that
# advance by whole pixels instead (pixel_pieces: 54 or 63 bytes), so that
# every piece has the same masks, a period of one piece (1 MiB
# space_to_depth depth_first channels_last C 3 bs 3 uint8, two threads:
# 1.99 -> 1.36 x np.copyto).

from libc.string cimport memcmp, memcpy, memset

from fastblock._engine.types cimport (GATHER_MAX, SHUFFLE_BYTES, SHUFFLE_PERIOD_SLOTS,
                                      SHUFFLE_PIECES, SHUFFLE_WINDOWS, ShuffleProgram,
                                      WIDE_SHUFFLE_BYTES, WIDE_SHUFFLE_WINDOWS, intp)
from fastblock._engine.kernels_c cimport fb_periodic_has


cdef inline bint shuffles_pay(intp copy_bytes) noexcept nogil:
    """Whether a copy of ``copy_bytes`` bytes should use the byte shuffles."""
    return use_shuffles() and copy_bytes >= tuning.shuffle_min_bytes


cdef enum:
    # Programs whose pieces need at most this many windows, all within one
    # of the most, run every piece with the most (the extra ones empty).
    SHUFFLE_UNIFORM_MAX = 4
    # The same for programs of pieces that advance by whole pixels where
    # pieces of 64 bytes do not repeat within the periodic kernel's slots
    # (plan_shuffle): one piece a period, of up to this many windows.
    PIXEL_UNIFORM_MAX = 8
    # Longest period (in pieces) searched for.
    SHUFFLE_PERIOD_MAX = 4
    # Items of a long run's rest (plan_run_program) at most: the 64-byte
    # pieces' tables hold up to 1088 bytes.
    LONG_RUN_REST_MAX = 2 * GATHER_MAX


cdef intp pieces_per_period(intp pixel_bytes) noexcept nogil:
    """The fewest 64-byte shuffle pieces that hold whole pixels of
    ``pixel_bytes`` bytes: the period of a run of such pixels."""
    cdef intp a = pixel_bytes, b = WIDE_SHUFFLE_BYTES, t
    while b:
        t = a % b
        a = b
        b = t
    return pixel_bytes // a


cdef intp pixel_pieces(intp pixel_bytes) noexcept nogil:
    """How many whole pixels of ``pixel_bytes`` bytes each 64-byte piece of
    a run of them places, when pieces advance by whole pixels rather than
    by 64 bytes; 0 where they advance by 64 bytes.

    A run of pixels repeats every pieces_per_period pieces: 27 for 27-byte
    pixels (space_to_depth channels_last C 3 bs 3 uint8), 9 for 9-byte
    ones (depth_to_space), more than the periodic kernel holds in
    registers, so every piece loaded its masks from the table. Pieces that
    advance by whole pixels (2 of 27 bytes, 7 of 9) all have the same masks:
    a period of one piece. Each stores 64 bytes, the bytes past its pixels
    zeros that the next piece overwrites; the last piece, a whole one, ends
    at the run's end, so no store leaves the run."""
    if not use_wide_shuffles() or pixel_bytes > WIDE_SHUFFLE_BYTES \
            or pieces_per_period(pixel_bytes) <= SHUFFLE_PERIOD_MAX:
        return 0
    return WIDE_SHUFFLE_BYTES // pixel_bytes


cdef void plan_shuffle(ShuffleProgram* prog, const intp* offsets, intp n_items,
                       intp width, intp copy_bytes, intp pixel_items,
                       intp read_below=0, intp read_above=0) noexcept nogil:
    """Build the shuffle program of a gathered run of ``n_items`` items of
    ``width`` bytes (1, 2 or 4) at source ``offsets``, for a copy of
    ``copy_bytes`` bytes: 64-byte pieces where the CPU has them and they
    apply, else 16-byte ones (not for 4-byte items). ``prog.n_pieces`` stays
    0 if shuffles are off, do not pay for so small a copy, or do not apply
    (a readable source span or a run under a piece). A run of pixels of
    ``pixel_items`` items (1: none known) takes pieces that advance by
    whole pixels (``pixel_pieces``) where every piece then takes the same
    few windows. The windows may read ``read_below`` bytes below the
    lowest offset and ``read_above`` bytes above the last byte read: the
    rest of a longer run these items are part of (plan_run_program)."""
    cdef intp advance_pixels = pixel_pieces(pixel_items * width)
    prog.n_pieces = 0
    prog.uniform = 0
    prog.lead_rounds = 0
    if not shuffles_pay(copy_bytes) or (width != 1 and width != 2 and width != 4):
        return
    if advance_pixels and plan_pieces(prog, offsets, n_items, width, WIDE_SHUFFLE_BYTES,
                                      SHUFFLE_UNIFORM_MAX, advance_pixels * pixel_items,
                                      SHUFFLE_UNIFORM_MAX, read_below, read_above) \
            and prog.uniform:
        return
    # 4-byte items gain only where every piece takes a few windows (and
    # so their longer runs fit in the tables).
    if use_wide_shuffles() and plan_pieces(prog, offsets, n_items, width, WIDE_SHUFFLE_BYTES,
                                            SHUFFLE_UNIFORM_MAX if width == 4 else WIDE_SHUFFLE_WINDOWS,
                                            WIDE_SHUFFLE_BYTES // width, SHUFFLE_UNIFORM_MAX,
                                            read_below, read_above):
        if width == 4 and prog.uniform == 0:
            prog.n_pieces = 0
        elif prog.period == 0 and width <= 2 and 1 < pixel_items * width <= WIDE_SHUFFLE_BYTES and (
                prog.uniform == 0
                or pieces_per_period(pixel_items * width) * prog.uniform > SHUFFLE_PERIOD_SLOTS):
            # Pieces of whole pixels all take the same windows: a period of
            # one piece, run from registers even with more windows than the
            # 64-byte pieces' period could hold (depth_to_space depth_first
            # NCHW_VECT_C bs 3 uint8 through tables: 12-byte pixels from 6
            # depth planes, 64-byte pieces repeat every 3 pieces of 6
            # windows). Pieces of 5 pixels, two threads: 64 MiB 0.99 -> 0.80 x
            # np.copyto. Only there: programs of fewer windows lost.
            if not (plan_pieces(prog, offsets, n_items, width, WIDE_SHUFFLE_BYTES, PIXEL_UNIFORM_MAX,
                                WIDE_SHUFFLE_BYTES // (pixel_items * width) * pixel_items,
                                PIXEL_UNIFORM_MAX, read_below, read_above) and prog.period):
                plan_pieces(prog, offsets, n_items, width, WIDE_SHUFFLE_BYTES, WIDE_SHUFFLE_WINDOWS,
                            WIDE_SHUFFLE_BYTES // width, SHUFFLE_UNIFORM_MAX, read_below, read_above)
        return
    if width <= 2:
        plan_pieces(prog, offsets, n_items, width, SHUFFLE_BYTES, SHUFFLE_WINDOWS,
                    SHUFFLE_BYTES // width, SHUFFLE_UNIFORM_MAX, read_below, read_above)


cdef bint plan_pieces(ShuffleProgram* prog, const intp* offsets, intp n_items, intp width,
                      intp piece_bytes, int max_windows, intp advance_items,
                      int uniform_max=SHUFFLE_UNIFORM_MAX, intp read_below=0,
                      intp read_above=0) noexcept nogil:
    """``plan_shuffle`` with pieces and windows of ``piece_bytes`` bytes, at
    most ``max_windows`` windows a piece, and pieces ``advance_items`` items
    apart (at most a piece; each places those items, the last piece the
    last ``piece_bytes`` bytes); False (and no pieces) if the run or its
    readable source span is shorter than a piece, the run is longer than
    the tables hold, or a piece needs more windows."""
    cdef intp per_piece = piece_bytes // width, lowest, highest, first, i, q, n_pieces, placed
    cdef int w
    prog.n_pieces = 0
    prog.uniform = 0
    if n_items < per_piece:
        return False
    lowest = offsets[0]
    highest = offsets[0]
    for i in range(n_items):
        lowest = imin(lowest, offsets[i])
        highest = imax(highest, offsets[i])
    highest += width - 1        # the last source byte read
    if highest + read_above - (lowest - read_below) + 1 < piece_bytes:
        return False
    # Pieces at advance_items * q while a whole piece fits before the last
    # one, which ends at the run's end (overlapping the one before).
    n_pieces = (n_items - per_piece + advance_items - 1) // advance_items + 1
    # The tables hold runs of up to GATHER_MAX 2-byte items at up to
    # max_windows windows a piece.
    if n_pieces > imin(SHUFFLE_PIECES, SHUFFLE_PIECES * SHUFFLE_WINDOWS * SHUFFLE_BYTES
                       // (max_windows * piece_bytes)):
        return False
    for q in range(n_pieces):
        if q == n_pieces - 1:
            first = n_items - per_piece
            placed = per_piece
        else:
            first = q * advance_items
            placed = advance_items
        w = place_windows(prog, &offsets[first], placed, q * max_windows, max_windows, width,
                          piece_bytes, highest + read_above)
        if w < 0:
            return False
        prog.n_windows[q] = <unsigned char>w
    prog.n_pieces = n_pieces
    prog.piece_bytes = piece_bytes
    prog.piece_advance = advance_items * width
    prog.max_windows = max_windows
    prog.last_start = (n_items - per_piece) * width
    pad_to_uniform(prog, uniform_max)
    find_period(prog)
    return True


cdef int place_windows(ShuffleProgram* prog, const intp* offsets, intp placed, intp first_slot,
                       int max_windows, intp width, intp piece_bytes, intp highest) noexcept nogil:
    """The windows of one piece, which places the ``placed`` items at
    ``offsets``, into the program's slots from ``first_slot``; returns
    their count, -1 where more than ``max_windows`` would be needed. Each
    window takes at least the lowest pending item, so a piece needs at most
    one window per item; none reaches past ``highest``, the last source
    byte the run may read."""
    cdef bint pending[WIDE_SHUFFLE_BYTES]
    cdef intp start, slot, i, j
    cdef int w = 0, pending_count = <int>placed
    for i in range(placed):
        pending[i] = True
    while pending_count > 0:
        if w == max_windows:
            return -1
        # The window starts at the lowest pending item, moved back if
        # it would end past the last source byte.
        start = highest
        for i in range(placed):
            if pending[i]:
                start = imin(start, offsets[i])
        start = imin(start, highest - piece_bytes + 1)
        slot = first_slot + w
        prog.window_offset[slot] = start
        memset(&prog.window_mask[slot * piece_bytes], 0x80, piece_bytes)
        for i in range(placed):
            if pending[i] and offsets[i] + width <= start + piece_bytes:
                for j in range(width):
                    prog.window_mask[slot * piece_bytes + i * width + j] = \
                        <unsigned char>(offsets[i] - start + j)
                pending[i] = False
                pending_count -= 1
        w += 1
    return w


cdef void pad_to_uniform(ShuffleProgram* prog, int uniform_max) noexcept nogil:
    """Give every piece the most windows any piece has, if that is at most
    ``uniform_max`` and no piece has two fewer: an added window loads
    the piece's first window again and places nothing (a mask of 0x80s).
    The kernel then needs no dispatch per piece."""
    cdef intp q, slot
    cdef int most = 0, least = SHUFFLE_WINDOWS, w
    prog.uniform = 0
    for q in range(prog.n_pieces):
        most = max(most, <int>prog.n_windows[q])
        least = min(least, <int>prog.n_windows[q])
    if prog.n_pieces == 0 or most > uniform_max or most - least > 1:
        return
    for q in range(prog.n_pieces):
        for w in range(prog.n_windows[q], most):
            slot = q * prog.max_windows + w
            prog.window_offset[slot] = prog.window_offset[q * prog.max_windows]
            memset(&prog.window_mask[slot * prog.piece_bytes], 0x80, prog.piece_bytes)
        prog.n_windows[q] = <unsigned char>most
    prog.uniform = most


cdef inline void run_source_span(const intp* head, intp pixel_items, intp pixels, intp pixel_step,
                                 intp width, intp* lowest, intp* highest) noexcept nogil:
    """The first and last source byte of a run of ``pixels`` pixels whose
    first pixel's items start at ``head``, each pixel ``pixel_step`` bytes
    past the one before."""
    cdef intp i
    lowest[0] = head[0]
    highest[0] = head[0]
    for i in range(pixel_items):
        lowest[0] = imin(lowest[0], head[i])
        highest[0] = imax(highest[0], head[i])
    highest[0] += width - 1 + imax(0, (pixels - 1) * pixel_step)
    lowest[0] += imin(0, (pixels - 1) * pixel_step)


cdef bint plan_run_program(ShuffleProgram* prog, const ShuffleProgram* pattern,
                           const intp* head, intp head_pixels, intp pixels, intp pixel_items,
                           intp pixel_step, intp width, intp copy_bytes) noexcept nogil:
    """Build the program of a run of ``pixels`` pixels of ``pixel_items``
    items each, every pixel ``pixel_step`` source bytes past the one before,
    where ``head`` holds the offsets of the first ``head_pixels`` and
    ``pattern`` (which may be ``prog``) is a periodic program of the first
    pixels (its pieces may advance by whole pixels, ``plan_shuffle``);
    False where it cannot be built.

    A run that fits the table (``pixels <= head_pixels``) is an ordinary
    program, maybe none (the item loop). A longer one repeats: its first
    ``lead_rounds`` periods run by the periodic kernel from the pattern's
    first period (``lead_offset``, ``lead_mask``), then a program built for
    the rest (at most LONG_RUN_REST_MAX items, the head's first pixel moved
    along by ``pixel_step`` a pixel). The periodic kernel then loads its
    masks once a run instead of once a table-sized piece of it. Every
    window stays inside the run's source span: the lead's, checked here,
    and the rest's, which may reach back into the lead's."""
    cdef intp period_pixels, lead, rest_pixels, i, j, lowest = 0, highest = 0, room
    # (pattern may be prog, which plan_shuffle below overwrites.)
    cdef intp period_step = pattern.period_step, advance = pattern.piece_advance
    cdef intp piece_bytes = pattern.piece_bytes
    cdef int period = pattern.period, windows = pattern.uniform
    cdef intp lead_offset[SHUFFLE_PERIOD_SLOTS]
    cdef unsigned char lead_mask[SHUFFLE_PERIOD_SLOTS * WIDE_SHUFFLE_BYTES]
    cdef intp rest[LONG_RUN_REST_MAX]
    if pixels <= head_pixels:
        plan_shuffle(prog, head, pixels * pixel_items, width, copy_bytes, pixel_items)
        return True
    if period == 0 or (period * advance) % (width * pixel_items) != 0:
        return False
    period_pixels = period * advance // (width * pixel_items)
    if period_step != period_pixels * pixel_step:
        return False
    run_source_span(head, pixel_items, pixels, pixel_step, width, &lowest, &highest)
    # As many periods as leave at most a table of pixels, and no more than
    # keep every window of the last one inside the span.
    lead = (pixels - head_pixels + period_pixels - 1) // period_pixels
    copy_first_period(pattern, lead_offset, lead_mask)
    for j in range(period * windows):
        if lead_offset[j] < lowest or lead_offset[j] + piece_bytes - 1 > highest:
            return False
        if period_step > 0:
            room = highest - (lead_offset[j] + piece_bytes - 1)
        else:
            room = lead_offset[j] - lowest
        if period_step != 0:
            lead = imin(lead, room // iabs(period_step) + 1)
    rest_pixels = pixels - lead * period_pixels
    if lead <= 0 or rest_pixels * pixel_items > LONG_RUN_REST_MAX:
        return False
    # The rest's offsets: the head's first pixel, pixel_step on a pixel.
    for j in range(rest_pixels):
        for i in range(pixel_items):
            rest[j * pixel_items + i] = head[i] + j * pixel_step
    # The rest's windows may read back into the lead's source.
    plan_shuffle(prog, rest, rest_pixels * pixel_items, width, copy_bytes,
                 pixel_items, imax(0, lead * period_step), imax(0, -lead * period_step))
    # The rest takes the lead's kernel for its own periods, if any.
    if prog.n_pieces == 0 or prog.uniform != windows or prog.piece_bytes != piece_bytes \
            or prog.piece_advance != advance or (
            prog.period != 0 and (prog.period != period or prog.period_step != period_step)):
        prog.n_pieces = 0
        return False
    if prog.period == 0:
        prog.period = period
        prog.period_step = period_step
        prog.segment_pieces = 0
        prog.last_segment_pieces = 0
        prog.n_segments = 1
        prog.segment_step = 0
    memcpy(prog.lead_offset, lead_offset, period * windows * sizeof(intp))
    memcpy(prog.lead_mask, lead_mask, period * windows * piece_bytes)
    prog.lead_rounds = lead
    return True


cdef void copy_first_period(const ShuffleProgram* prog, intp* offsets, unsigned char* masks) noexcept nogil:
    """The window offsets and masks of a periodic program's first period
    (``prog.piece_bytes`` bytes a mask): its lead's, if it has one."""
    cdef int p, w, slot = 0
    cdef intp size = prog.piece_bytes
    if prog.lead_rounds:
        memcpy(offsets, prog.lead_offset, prog.period * prog.uniform * sizeof(intp))
        memcpy(masks, prog.lead_mask, prog.period * prog.uniform * size)
        return
    for p in range(prog.period):
        for w in range(prog.uniform):
            offsets[slot] = prog.window_offset[p * prog.max_windows + w]
            memcpy(&masks[slot * size], &prog.window_mask[(p * prog.max_windows + w) * size], size)
            slot += 1


cdef bint piece_repeats(const ShuffleProgram* prog, intp q, intp back, intp step) noexcept nogil:
    """Whether piece ``q`` has the windows of piece ``q - back``: the same
    masks, each source offset ``step`` bytes further on."""
    cdef intp slot, earlier
    cdef int w
    for w in range(prog.uniform):
        slot = q * prog.max_windows + w
        earlier = slot - back * prog.max_windows
        if prog.window_offset[slot] - prog.window_offset[earlier] != step:
            return False
        if memcmp(&prog.window_mask[slot * prog.piece_bytes], &prog.window_mask[earlier * prog.piece_bytes],
                  prog.piece_bytes) != 0:
            return False
    return True


cdef void find_period(ShuffleProgram* prog) noexcept nogil:
    """Find how a uniform program repeats, for the periodic kernel of its
    pieces (16 or 64 bytes): its first ``segment_pieces`` pieces repeat every
    ``period`` pieces (at least twice), the windows ``period_step`` source
    bytes further on each time, and that segment repeats ``n_segments``
    times, ``segment_step`` bytes further on each time (a run over two
    source rows: the second row's pieces are the first's, a row further
    on), the last time for its first ``last_segment_pieces`` pieces (whole
    periods). Of the periods tried, the one that covers the most pieces;
    ``period`` stays 0 where the first pieces do not repeat."""
    cdef intp n_regular, covered, best = 0
    cdef int period, best_period = 0
    prog.period = 0
    if not tuning.periodic_shuffles or prog.uniform == 0:
        return
    # Pieces at piece_advance * q: all but an overlapping last one.
    n_regular = prog.n_pieces
    if prog.last_start != (prog.n_pieces - 1) * prog.piece_advance:
        n_regular -= 1
    for period in range(1, SHUFFLE_PERIOD_MAX + 1):
        if 2 * period > n_regular or period * prog.uniform > SHUFFLE_PERIOD_SLOTS:
            break
        if not fb_periodic_has(<int>prog.piece_bytes, period, prog.uniform):
            continue
        covered = try_period(prog, period, n_regular)
        if covered > best:
            best = covered
            best_period = period
    prog.period = 0
    if best_period:
        try_period(prog, best_period, n_regular)


cdef intp try_period(ShuffleProgram* prog, int period, intp n_regular) noexcept nogil:
    """Set the program's period fields (``find_period``) for ``period``
    pieces; return how many pieces they cover (0: none)."""
    cdef intp step, n, segment, k, q
    step = prog.window_offset[period * prog.max_windows] - prog.window_offset[0]
    n = period
    while n < n_regular and piece_repeats(prog, n, period, step):
        n += 1
    if n < 2 * period:
        return 0
    segment = n - n % period
    prog.period = period
    prog.period_step = step
    prog.segment_pieces = segment
    prog.last_segment_pieces = segment
    prog.n_segments = 1
    prog.segment_step = 0
    if 2 * segment > n_regular:
        return segment
    prog.segment_step = prog.window_offset[segment * prog.max_windows] - prog.window_offset[0]
    for k in range(1, n_regular // segment + 1):
        q = k * segment
        while q < imin((k + 1) * segment, n_regular) and piece_repeats(prog, q, segment,
                                                                    prog.segment_step):
            q += 1
        # Whole periods of this segment repeat the first one's.
        q -= (q - k * segment) % period
        if q == k * segment:
            break
        prog.n_segments = k + 1
        prog.last_segment_pieces = q - k * segment
        if q < (k + 1) * segment:
            break
    return segment * (prog.n_segments - 1) + prog.last_segment_pieces
