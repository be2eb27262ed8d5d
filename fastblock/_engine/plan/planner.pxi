# The planner: a copy's axes into a Plan (build_plan), in named steps, each
# in the file named here. Nothing in the planner touches the data.
#
# 1. Normalise (_engine/plan/axes.pxi): the axes of extent > 1, destination steps
#    made positive, sorted by destination step, neighbours merged; the
#    block bytes, and whether the destination streams or faults ahead
#    (plan_memory, _engine/plan/blocks.pxi).
# 2. Fold (_engine/plan/axes.pxi): the innermost run contiguous on both sides
#    becomes one wider item, unless the copy gathers better unfolded
#    (plan_unfolded, below).
# 3. Choose the kernel and its two axes (_engine/plan/kernel.pxi): lane
#    transposes (_engine/plan/lanes.pxi), staged transposes (_engine/plan/transpose.pxi),
#    gathered runs (_engine/plan/gather.pxi) and their byte shuffles
#    (_engine/plan/shuffle.pxi), or the block kernel and its loop.
# 4. Size the blocks and tiles, and build the loop over the other axes
#    (_engine/plan/blocks.pxi).

from fastblock._engine.types cimport Axes, KERNEL_GATHER, KernelAxes, Plan, intp


cdef int build_plan(Plan* p, int ndim, const intp* extents, const intp* src_strides,
                    const intp* dst_strides, intp itemsize, intp n_parts,
                    char** src, char** dst, intp whole_bytes=0,
                    const intp* source_table=NULL, bint staged=False) except -1:
    """Fill ``p`` for the copy; return 0 when there is nothing to copy, else 1.

    ``src`` and ``dst`` are moved to the first item when a destination step
    is negative. ``whole_bytes``: the bytes written by the whole copy when
    this plan runs only a piece of it (the NCHW_VECT_C blocks); with
    the plan's own bytes, it decides whether the destination is streamed.
    ``source_table``: the last axis is a table axis (see Plan), its
    destination step ``itemsize`` and its source stride unused; the table
    must outlive the plan. ``staged``: the destination is a thread's stage
    (the convert stage's; ``dst`` a stand-in address), resident and in
    cache: its pages are not asked about, and it neither streams nor
    faults ahead."""
    cdef Axes axes
    cdef intp total, reach
    if not collect_axes(p, &axes, ndim, extents, src_strides, dst_strides, itemsize, source_table,
                        src, dst, &total, &reach):
        return 0
    plan_memory(p, total, reach, itemsize, n_parts, whole_bytes, dst[0], staged)
    sort_axes(&axes)
    merge_axes(&axes, p.source_table != NULL)
    if plan_unfolded(p, &axes, itemsize, dst[0]):
        return 1
    plan_kernels(p, &axes, itemsize, True, False, dst[0])
    return 1


cdef bint plan_unfolded(Plan* p, const Axes* axes, intp itemsize, const char* dst) noexcept nogil:
    """Steps 2 to 4 with the innermost run left unfolded, where a fold would
    be short (short_fold_bytes); True where that plan is kept.

    A fold of 1- or 2-byte items into 3 to 15 bytes (not 4 or 8) leaves the
    block kernel to move them one at a time (two overlapping copies each);
    unfolded, the same runs may be gathered by byte shuffles instead (uint8
    C=1 bs=3 space_to_depth channels_last, 64 MiB: 1.17 -> 0.64 x
    np.copyto). Which kernel the unfolded copy gets is known only once it
    is chosen, so the unfolded plan is built first, and kept only if it
    shuffles and reads each source line in one sweep: for copies that
    stream, and for 3-byte folds (5- and 6-byte ones with 64-byte pieces)
    from tuning.unfold_short_min_bytes. Folds up to 6 bytes shuffle with 16-byte
    pieces, up to 12 with 64-byte ones; wider folds lost. Folds that the
    block kernel repeats by 16-byte shuffles stay folded (uint8 pixels of
    3 tiled 3 to 17 times, 1 MiB: 2.1-2.6 x np.copyto unfolded, 0.9-1.1
    folded)."""
    cdef Axes unfolded
    cdef intp fold_bytes = short_fold_bytes(p, axes, itemsize), total = p.total_bytes
    if not fold_bytes or not (total >= tuning.stream_min_bytes or (total >= tuning.unfold_short_min_bytes and (
            fold_bytes == 3 or (fold_bytes <= 6 and use_wide_shuffles())))) \
            or folds_into_shuffled_repeats(axes, fold_bytes):
        return False
    unfolded = axes[0]
    plan_kernels(p, &unfolded, itemsize, False, fold_bytes <= (12 if use_wide_shuffles() else 6), dst)
    return p.kernel == KERNEL_GATHER and p.shuffle.n_pieces and not revisits_source_lines(p)


cdef void plan_kernels(Plan* p, Axes* axes, intp itemsize, bint fold, bint force_shuffles,
                       const char* dst) noexcept nogil:
    """Steps 2 to 4 over the sorted and merged ``axes`` (rewritten).
    ``fold``: fold the innermost axis into the item when it is contiguous
    on both sides; ``force_shuffles``: gather 1- and 2-byte items by byte
    shuffles wherever they can build the runs."""
    cdef KernelAxes kernel_axes
    fold_item(p, axes, itemsize, fold)
    choose_kernel(p, axes, &kernel_axes, force_shuffles)
    set_kernel_axes(p, axes, &kernel_axes)
    build_loop(p, axes, &kernel_axes, dst)
