# Inner loops of the copy engine, one template for every item width.
#
# A kernel copies a 2-D block of items: ``n_outer`` rows of ``n_inner`` items,
# each side with its own byte steps. Items are moved with ``memcpy`` of a
# compile-time size, which compiles to single loads and stores and is safe for
# unaligned addresses and for any dtype's bytes (no aliasing or alignment UB).
#
# Widths that are not a power of two (3-byte pixels, 12-byte float32 triples,
# ``U3`` strings...) are moved as two overlapping power-of-two copies: the first
# ``sizeof(item_t)`` bytes and the last ``sizeof(item_t)`` bytes of the item.
# Both copies stay inside the item, so no neighbour is touched.
#
# Which loop a block takes (rows, repeats, a weave of 2 to 4 rows, item by
# item) is the plan's choice (BlockCopy); a block tests only what depends on
# its own size.

from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy

from fastblock._engine.types cimport BLOCK_REPEATS, BLOCK_ROWS, BLOCK_WEAVE, BlockLoop, intp
from fastblock._engine.kernels_c cimport (FB_PACKED_COUNT_MAX, fb_item16, fb_repeat_item_rows,
                                          fb_repeat_period_rows, fb_repeat_packed_items,
                                          fb_repeat_packed_items_wide, fb_repeat_rows,
                                          fb_repeat_short_rows)

ctypedef fused item_t:
    uint8_t
    uint16_t
    uint32_t
    uint64_t
    fb_item16


cdef inline void copy_item_run(item_t* width_tag, char* dst, const char* src, intp n,
                               intp dst_items, intp src_items) noexcept nogil:
    """Copy ``n`` items stepping ``dst_items`` / ``src_items`` items at a time.

    Called with literal steps (1 on one side, 2, 3 or 4 on the other), so the
    C compiler specialises the loop into vector loads and shuffles: this is the
    (de-)interleave at the heart of SpaceToDepth and DepthToSpace."""
    cdef intp j
    for j in range(n):
        memcpy(dst + j * dst_items * <intp>sizeof(item_t),
               src + j * src_items * <intp>sizeof(item_t), sizeof(item_t))


cdef inline void copy_items(item_t* width_tag, char* dst, const char* src,
                            intp n_outer, intp n_inner,
                            intp dst_outer, intp dst_inner,
                            intp src_outer, intp src_inner,
                            intp tail) noexcept nogil:
    """Copy items of ``sizeof(item_t)`` bytes, or of ``tail + sizeof(item_t)``
    bytes when ``tail`` > 0 (the overlapping two-copy form)."""
    cdef intp i, j
    cdef intp size = sizeof(item_t)
    cdef char* d
    cdef const char* s
    for i in range(n_outer):
        d = dst + i * dst_outer
        s = src + i * src_outer
        if tail != 0:
            for j in range(n_inner):
                memcpy(d + j * dst_inner, s + j * src_inner, sizeof(item_t))
                memcpy(d + j * dst_inner + tail, s + j * src_inner + tail, sizeof(item_t))
        elif dst_inner == size and src_inner == 2 * size:
            copy_item_run(width_tag, d, s, n_inner, 1, 2)
        elif dst_inner == size and src_inner == 3 * size:
            copy_item_run(width_tag, d, s, n_inner, 1, 3)
        elif dst_inner == size and src_inner == 4 * size:
            copy_item_run(width_tag, d, s, n_inner, 1, 4)
        elif src_inner == size and dst_inner == 2 * size:
            copy_item_run(width_tag, d, s, n_inner, 2, 1)
        elif src_inner == size and dst_inner == 3 * size:
            copy_item_run(width_tag, d, s, n_inner, 3, 1)
        elif src_inner == size and dst_inner == 4 * size:
            copy_item_run(width_tag, d, s, n_inner, 4, 1)
        else:
            for j in range(n_inner):
                memcpy(d + j * dst_inner, s + j * src_inner, sizeof(item_t))


cdef inline void weave_items(item_t* width_tag, char* dst, const char* src, intp n,
                             intp n_rows, intp row_step, bint interleave) noexcept nogil:
    """Weave ``n_rows`` rows of ``n`` items (``row_step`` bytes apart) into
    one row, item ``j`` of every row in turn, or unweave one row into
    ``n_rows`` rows (``interleave`` false).

    Called with a literal ``n_rows`` (2, 3, 4), so the row loop unrolls and
    the item loop vectorises into loads, shuffles and stores: DepthToSpace
    weaves, SpaceToDepth unweaves."""
    cdef intp j, row
    cdef intp size = sizeof(item_t)
    if interleave:
        for j in range(n):
            for row in range(n_rows):
                memcpy(dst + (j * n_rows + row) * size, src + row * row_step + j * size, sizeof(item_t))
    else:
        for j in range(n):
            for row in range(n_rows):
                memcpy(dst + row * row_step + j * size, src + (j * n_rows + row) * size, sizeof(item_t))


cdef inline void weave_block(item_t* width_tag, char* dst, const char* src, intp n,
                             intp n_rows, intp row_step, bint interleave) noexcept nogil:
    if n_rows == 2:
        weave_items(width_tag, dst, src, n, 2, row_step, interleave)
    elif n_rows == 3:
        weave_items(width_tag, dst, src, n, 3, row_step, interleave)
    else:
        weave_items(width_tag, dst, src, n, 4, row_step, interleave)


cdef struct Weave:
    # A block that is a weave (weave_items): n_rows rows of n items,
    # row_step bytes apart, woven into one row (interleave) or unwoven.
    intp n_rows, n, row_step
    bint interleave


cdef inline intp find_weave(intp n_outer, intp n_inner, intp dst_outer, intp dst_inner,
                            intp src_outer, intp src_inner, intp width,
                            Weave* weave) noexcept nogil:
    """The row count (2 to 4) if the block is a weave, else 0; ``weave`` (if
    not NULL) gets its form. One axis (the rows) steps one item on one side;
    the other steps ``n_rows`` items on that side and one item on the other."""
    cdef Weave found
    if width > 16 or (width & (width - 1)) != 0:
        return 0
    if 2 <= n_outer <= 4 and dst_outer == width and dst_inner == n_outer * width and src_inner == width:
        found.n_rows = n_outer; found.n = n_inner; found.row_step = src_outer; found.interleave = True
    elif 2 <= n_inner <= 4 and dst_inner == width and dst_outer == n_inner * width and src_outer == width:
        found.n_rows = n_inner; found.n = n_outer; found.row_step = src_inner; found.interleave = True
    elif 2 <= n_outer <= 4 and src_outer == width and src_inner == n_outer * width and dst_inner == width:
        found.n_rows = n_outer; found.n = n_inner; found.row_step = dst_outer; found.interleave = False
    elif 2 <= n_inner <= 4 and src_inner == width and src_outer == n_inner * width and dst_outer == width:
        found.n_rows = n_inner; found.n = n_outer; found.row_step = dst_inner; found.interleave = False
    else:
        return 0
    if weave != NULL:
        weave[0] = found
    return found.n_rows


cdef inline bint copy_weave(char* dst, const char* src, intp n_outer, intp n_inner,
                            intp dst_outer, intp dst_inner, intp src_outer, intp src_inner,
                            intp width) noexcept nogil:
    """Run the block as a weave if it is one (find_weave); return whether it was."""
    cdef Weave w
    if not find_weave(n_outer, n_inner, dst_outer, dst_inner, src_outer, src_inner, width, &w):
        return False
    if width == 1:
        weave_block(<uint8_t*>NULL, dst, src, w.n, w.n_rows, w.row_step, w.interleave)
    elif width == 2:
        weave_block(<uint16_t*>NULL, dst, src, w.n, w.n_rows, w.row_step, w.interleave)
    elif width == 4:
        weave_block(<uint32_t*>NULL, dst, src, w.n, w.n_rows, w.row_step, w.interleave)
    elif width == 8:
        weave_block(<uint64_t*>NULL, dst, src, w.n, w.n_rows, w.row_step, w.interleave)
    else:
        weave_block(<fb_item16*>NULL, dst, src, w.n, w.n_rows, w.row_step, w.interleave)
    return True


cdef inline void copy_wide_items(char* dst, const char* src,
                                 intp n_outer, intp n_inner,
                                 intp dst_outer, intp dst_inner,
                                 intp src_outer, intp src_inner,
                                 intp width) noexcept nogil:
    """Items of 32 bytes or more, each by ``copy_wide_item``."""
    cdef intp i, j
    for i in range(n_outer):
        for j in range(n_inner):
            copy_wide_item(dst + i * dst_outer + j * dst_inner,
                           src + i * src_outer + j * src_inner, width)


cdef inline void copy_wide_item(char* dst, const char* src, intp width) noexcept nogil:
    """One item of 32 bytes or more, by 32-byte copies of a compile-time size
    (register loads and stores, no library call), the last one ending at the
    item's end and overlapping the one before it."""
    cdef intp k = 0
    while k + 32 <= width:
        memcpy(dst + k, src + k, 32)
        k += 32
    if k < width:
        memcpy(dst + width - 32, src + width - 32, 32)


cdef inline int repeat_masks(unsigned char* masks, intp width) noexcept nogil:
    """Fill the shuffles of ``fb_repeat_rows`` for ``width``-byte items (1 to
    15): register r of the period holds bytes 16*r ... of the row, byte j
    being item byte (16*r + j) % width. Returns the register count."""
    cdef intp a = width, b = 16, t, n, k, j = 0
    while b:
        t = a % b; a = b; b = t
    n = width // a              # lcm(width, 16) / 16
    # Counted, not k % width: a division a byte, 240 of them a block,
    # cost as much as the block's stores.
    for k in range(16 * n):
        masks[k] = <unsigned char>j
        j = 0 if j + 1 == width else j + 1
    return <int>n


cdef inline void fill_repeats(char* dst, const char* src, intp width, intp count) noexcept nogil:
    """Write ``count`` adjacent copies of one ``width``-byte item: copy it once,
    then double the written run with each ``memcpy`` (Tile's inner repeats)."""
    cdef intp total = width * count, filled = width, chunk
    memcpy(dst, src, <size_t>width)
    while filled < total:
        chunk = filled if filled < total - filled else total - filled
        memcpy(dst + filled, dst, <size_t>chunk)
        filled += chunk


cdef inline void repeat_items(item_t* width_tag, char* dst, const char* src, intp n_outer,
                              intp n_inner, intp dst_outer, intp src_outer) noexcept nogil:
    """Each of ``n_outer`` items written ``n_inner`` times side by side (a
    short repeat axis: einops' ``(h 2)``). Packed runs of 2 to 4 repeats are
    a weave of rows that all read the same item (weave_block, which
    vectorises); others take one load and ``n_inner`` stores an item, where
    memcpy doubling (fill_repeats) would cost two calls an item."""
    cdef intp i, j, size = sizeof(item_t)
    cdef item_t item
    cdef char* d
    if n_inner <= 4 and src_outer == size and dst_outer == n_inner * size:
        weave_block(width_tag, dst, src, n_outer, n_inner, 0, True)
        return
    for i in range(n_outer):
        memcpy(&item, src + i * src_outer, sizeof(item_t))
        d = dst + i * dst_outer
        for j in range(n_inner):
            memcpy(d + j * size, &item, sizeof(item_t))


cdef inline void repeat_block(char* dst, const char* src, intp n_outer, intp n_inner,
                              intp dst_outer, intp src_outer, intp width) noexcept nogil:
    """``repeat_items`` for ``width``-byte items (a register width)."""
    if width == 1:
        repeat_items(<uint8_t*>NULL, dst, src, n_outer, n_inner, dst_outer, src_outer)
    elif width == 2:
        repeat_items(<uint16_t*>NULL, dst, src, n_outer, n_inner, dst_outer, src_outer)
    elif width == 4:
        repeat_items(<uint32_t*>NULL, dst, src, n_outer, n_inner, dst_outer, src_outer)
    elif width == 8:
        repeat_items(<uint64_t*>NULL, dst, src, n_outer, n_inner, dst_outer, src_outer)
    else:
        repeat_items(<fb_item16*>NULL, dst, src, n_outer, n_inner, dst_outer, src_outer)


cdef inline bint repeats_by_permutes(intp width, intp count, intp src_outer,
                                    intp dst_outer) noexcept nogil:
    """Whether a block of items each written ``count`` times side by side
    (a repeat axis inside) goes by 64-byte permutes
    (fb_repeat_packed_items_wide): packed items, with AVX-512 VBMI.
    At 1 MiB, one thread, 0.7-1.05 x np.copyto for every width up to 64
    and count up to 64, where the other kernels took up to 11 (1-byte
    items 16 times), 6.8 (3-byte items twice) or 3.2 (16-byte items 16
    times). The weave keeps register widths twice, and 1- and 2-byte
    items 3 times (0.9 either way)."""
    return (src_outer == width and dst_outer == count * width and width <= 64
            and 2 <= count <= FB_PACKED_COUNT_MAX and tuning.wide_shuffles and use_vbmi()
            and (count >= 4 or width > 8 or not is_register_width(width)
                 or count == 3 and width >= 4))


cdef inline bint repeats_by_shuffles(intp width, intp count, intp src_outer,
                                     intp dst_outer) noexcept nogil:
    """Whether a block of items each written ``count`` times side by side
    goes by byte shuffles of 16 source bytes at a time
    (fb_repeat_packed_items) where it does not by permutes: packed items
    of up to 16 bytes, 2 to FB_PACKED_COUNT_MAX copies; without AVX2 (16-
    byte shuffles) in rows of up to 64 bytes. 1 MiB out=, one thread, over
    np.copyto, with AVX2: 0.8-1.0 for most widths and counts, 1.7 at worst
    (9-byte items twice), where the other kernels took up to 7.9 (1-byte
    items 16 times), 4.5 (5-byte items twice) or 2.5 (16-byte items 16
    times). In 16-byte registers, longer rows of register widths lost to
    a row's one register stored again (8-byte items 64 times: 1.0 against
    1.2). Register widths twice stay a weave: level in long blocks, but
    an image row a block (uint8 upsampled (h 2) (w 2)) lost a tenth."""
    return (src_outer == width and dst_outer == count * width and width <= 16
            and 2 <= count <= FB_PACKED_COUNT_MAX and tuning.shuffled_repeats and use_simd128()
            and (use_avx2() or width * count <= 64)
            and not (count == 2 and is_register_width(width)))


cdef inline bint repeats_by_periods(intp width, intp count) noexcept nogil:
    """Whether a block of items of ``width`` bytes, each written ``count``
    times side by side, stores each row as the 32-byte registers of its
    period (fb_repeat_period_rows), where not by permutes: items of 20,
    24, 40 or 48 bytes (periods of 3 or 5 registers) 16 times or more,
    with AVX2. 1 MiB out=, one thread, over np.copyto: 24-byte items 24
    times 2.6 -> 1.2, 40-byte 16 times 2.1 -> 1.2, 48-byte 16 times 1.6 ->
    1.1. Past the caches they are level with memcpy doubling; periods of
    7 to 15 registers (28-, 36-, 44-, 52-, 56-, 60-byte items) lost there
    (16 MiB, 60-byte items 64 times: 0.4 -> 0.6), and fewer copies lost
    to fb_repeat_item_rows at 1 MiB (24-byte items twice: 1.8 -> 3.7)."""
    return ((width == 20 or width == 24 or width == 40 or width == 48) and count >= 16
            and tuning.period_repeats and tuning.simd and cpu_avx2)


cdef inline bint repeats_from_registers(intp width, intp count) noexcept nogil:
    """Whether a block of items of ``width`` bytes, each written ``count``
    times side by side, stores each copy from two registers of the item
    (fb_repeat_item_rows), where not by permutes: 17 to 64 bytes, 2 to 15
    copies or rows under 512 bytes, with 16-byte kernels (and AVX from 32 bytes).
    1 MiB out=, one thread, over np.copyto, against item by item: 40-byte
    items twice 4.1 -> 1.3, 64-byte items 8 times 1.7 -> 0.84; 16 MiB
    33-byte items twice 0.90 -> 0.67. Longer rows keep memcpy doubling:
    from registers they won in cache but lost streamed (16 MiB, one
    thread: 40-byte items 40 times 0.33 -> 0.50), where the stage is read
    right after."""
    return (16 < width <= 64 and (count < 16 or width * count < 512) and tuning.register_repeats
            and use_simd128() and (width < 32 or cpu_avx))


cdef inline void copy_block(BlockLoop loop, char* dst, const char* src,
                            intp n_outer, intp n_inner,
                            intp dst_outer, intp dst_inner,
                            intp src_outer, intp src_inner,
                            intp width) noexcept nogil:
    """Copy a 2-D block of ``width``-byte items by ``loop``, which the plan
    chose from the steps (choose_block_copy). Only what depends on the
    block's size (its last tiles are shorter) is tested here: rows of one
    item, and blocks whose row count makes no weave, go item by item."""
    cdef intp i
    cdef unsigned char masks[16 * 16]
    cdef int n_masks
    if loop == BLOCK_ROWS:
        for i in range(n_outer):
            memcpy(dst + i * dst_outer, src + i * src_outer, <size_t>(n_inner * width))
    elif loop == BLOCK_REPEATS and n_inner > 1:
        # (Here, not in a function of its own: gcc then made the loop of
        # float32 rows of 8 repeats a quarter slower.)
        if repeats_by_permutes(width, n_inner, src_outer, dst_outer):
            fb_repeat_packed_items_wide(dst, src, n_outer, width, n_inner)
        elif repeats_by_shuffles(width, n_inner, src_outer, dst_outer):
            fb_repeat_packed_items(dst, src, n_outer, width, n_inner, use_avx2())
        elif repeats_by_periods(width, n_inner):
            fb_repeat_period_rows(dst, src, n_outer, dst_outer, src_outer, width, n_inner)
        elif repeats_from_registers(width, n_inner):
            fb_repeat_item_rows(dst, src, n_outer, dst_outer, src_outer, width, n_inner)
        elif use_simd128() and width < 16 and n_inner >= 16:
            # Rows of at least one period (16 items): whole registers of the pattern.
            n_masks = repeat_masks(masks, width)
            fb_repeat_rows(dst, src, n_outer, dst_outer, src_outer, width, n_inner, masks, n_masks)
        elif n_inner < 16 and is_register_width(width):
            # Register widths twice (a weave), rows apart, and the rows the
            # shuffles leave: one load and n_inner stores an item.
            repeat_block(dst, src, n_outer, n_inner, dst_outer, src_outer, width)
        elif use_simd128() and width < 16 and n_inner > 2:
            # Shorter rows of other widths, 3 to 15 copies: the registers of
            # the period's start (1 MiB results of 3- to 15-byte items 8
            # times: 1.1 to 3.5 x np.copyto, item by item 1.9 to 7.3;
            # register widths keep one store an item, 2.7 against 4.5 for
            # 4-byte items 5 times).
            n_masks = repeat_masks(masks, width)
            fb_repeat_short_rows(dst, src, n_outer, dst_outer, src_outer, width, n_inner, masks,
                                 n_masks)
        elif n_inner < 16:
            # Two copies, wider items, or no 16-byte kernels: item by item (two copies
            # of a compile-time size each). By memcpy doubling, three or
            # four library calls a row, 1 MiB results took 4 to 30 x
            # np.copyto (float32 pixels of 5 twice: 8.2, now 1.6).
            copy_strided_block(dst, src, n_outer, n_inner, dst_outer, dst_inner, src_outer,
                               src_inner, width)
        else:
            for i in range(n_outer):
                fill_repeats(dst + i * dst_outer, src + i * src_outer, width, n_inner)
    elif loop != BLOCK_WEAVE or not copy_weave(dst, src, n_outer, n_inner, dst_outer, dst_inner,
                                               src_outer, src_inner, width):
        copy_strided_block(dst, src, n_outer, n_inner, dst_outer, dst_inner, src_outer, src_inner,
                           width)


cdef inline void copy_strided_block(char* dst, const char* src,
                                    intp n_outer, intp n_inner,
                                    intp dst_outer, intp dst_inner,
                                    intp src_outer, intp src_inner,
                                    intp width) noexcept nogil:
    """Any 2-D block, item by item, with the longer axis inside (items of 16
    bytes or more: the axis the destination is contiguous along)."""
    cdef intp t
    cdef bint swap
    # The longer axis goes inside: fewer loop restarts. Items of 16 bytes
    # or more are few per block, and there the order matters more than the
    # restarts: writing the destination in order reads the block's source
    # rows side by side (blocks_first channels_last, two threads, with
    # copy_wide_item: median 0.93 -> 0.80 x np.copyto).
    if width >= 16 and (dst_inner == width or dst_outer == width):
        swap = dst_outer == width       # the destination-contiguous axis inside
    else:
        swap = n_outer > n_inner
    if swap:
        t = n_outer; n_outer = n_inner; n_inner = t
        t = dst_outer; dst_outer = dst_inner; dst_inner = t
        t = src_outer; src_outer = src_inner; src_inner = t
    if width == 1:
        copy_items(<uint8_t*>NULL, dst, src, n_outer, n_inner, dst_outer, dst_inner, src_outer, src_inner, 0)
    elif width == 2:
        copy_items(<uint16_t*>NULL, dst, src, n_outer, n_inner, dst_outer, dst_inner, src_outer, src_inner, 0)
    elif width < 4:
        copy_items(<uint16_t*>NULL, dst, src, n_outer, n_inner, dst_outer, dst_inner, src_outer, src_inner, width - 2)
    elif width == 4:
        copy_items(<uint32_t*>NULL, dst, src, n_outer, n_inner, dst_outer, dst_inner, src_outer, src_inner, 0)
    elif width < 8:
        copy_items(<uint32_t*>NULL, dst, src, n_outer, n_inner, dst_outer, dst_inner, src_outer, src_inner, width - 4)
    elif width == 8:
        copy_items(<uint64_t*>NULL, dst, src, n_outer, n_inner, dst_outer, dst_inner, src_outer, src_inner, 0)
    elif width < 16:
        copy_items(<uint64_t*>NULL, dst, src, n_outer, n_inner, dst_outer, dst_inner, src_outer, src_inner, width - 8)
    elif width == 16:
        copy_items(<fb_item16*>NULL, dst, src, n_outer, n_inner, dst_outer, dst_inner, src_outer, src_inner, 0)
    elif width < 32:
        copy_items(<fb_item16*>NULL, dst, src, n_outer, n_inner, dst_outer, dst_inner, src_outer, src_inner, width - 16)
    else:
        copy_wide_items(dst, src, n_outer, n_inner, dst_outer, dst_inner, src_outer, src_inner, width)


cdef inline void gather_items(item_t* width_tag, char* dst, const char* src, intp n_rows,
                              intp dst_row, intp src_row, const intp* offsets, intp n,
                              intp tail) noexcept nogil:
    """Fill ``n_rows`` destination rows of ``n`` contiguous items, item ``j``
    of a row read ``offsets[j]`` bytes past the row's source position; items
    of ``sizeof(item_t)`` bytes, or ``tail`` more (two overlapping copies)."""
    cdef intp i, j
    cdef intp width = sizeof(item_t) + tail
    cdef char* d
    cdef const char* s
    for i in range(n_rows):
        d = dst + i * dst_row
        s = src + i * src_row
        if tail != 0:
            for j in range(n):
                memcpy(d + j * width, s + offsets[j], sizeof(item_t))
                memcpy(d + j * width + tail, s + offsets[j] + tail, sizeof(item_t))
        else:
            for j in range(n):
                memcpy(d + j * width, s + offsets[j], sizeof(item_t))


cdef inline void gather_rows(char* dst, const char* src, intp n_rows, intp dst_row,
                             intp src_row, const intp* offsets, intp n, intp width) noexcept nogil:
    """Rows of ``n`` contiguous destination items gathered through ``offsets``
    (the plan's gather mode), with the item loop chosen by ``width``."""
    cdef intp i, j
    if width == 1:
        gather_items(<uint8_t*>NULL, dst, src, n_rows, dst_row, src_row, offsets, n, 0)
    elif width == 2:
        gather_items(<uint16_t*>NULL, dst, src, n_rows, dst_row, src_row, offsets, n, 0)
    elif width < 4:
        gather_items(<uint16_t*>NULL, dst, src, n_rows, dst_row, src_row, offsets, n, width - 2)
    elif width == 4:
        gather_items(<uint32_t*>NULL, dst, src, n_rows, dst_row, src_row, offsets, n, 0)
    elif width < 8:
        gather_items(<uint32_t*>NULL, dst, src, n_rows, dst_row, src_row, offsets, n, width - 4)
    elif width == 8:
        gather_items(<uint64_t*>NULL, dst, src, n_rows, dst_row, src_row, offsets, n, 0)
    elif width < 16:
        gather_items(<uint64_t*>NULL, dst, src, n_rows, dst_row, src_row, offsets, n, width - 8)
    elif width == 16:
        gather_items(<fb_item16*>NULL, dst, src, n_rows, dst_row, src_row, offsets, n, 0)
    elif width < 32:
        gather_items(<fb_item16*>NULL, dst, src, n_rows, dst_row, src_row, offsets, n, width - 16)
    else:
        for i in range(n_rows):
            for j in range(n):
                copy_wide_item(dst + i * dst_row + j * width, src + i * src_row + offsets[j], width)
