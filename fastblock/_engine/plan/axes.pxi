# Planner steps 1 and 2 (_engine/plan/planner.pxi): a copy's axes normalised
# (collect_axes, sort_axes, merge_axes) and the innermost run folded into
# the item (fold_item; short_fold_bytes and revisits_source_lines serve
# plan_unfolded, which weighs the fold).

from fastblock._engine.types cimport Axes, GATHER_MAX, MAX_AXES, Plan, intp


cdef int collect_axes(Plan* p, Axes* axes, int ndim, const intp* extents, const intp* src_strides,
                      const intp* dst_strides, intp itemsize, const intp* source_table,
                      char** src, char** dst, intp* total, intp* reach) except -1:
    """The copy's axes of extent > 1 into ``axes``, each negative
    destination step made positive by moving both base pointers to the
    axis's last item; ``total``: the copy's bytes; ``reach``: bytes from
    the first destination item to the last. Returns 0 when there is nothing
    to copy, else 1. A table axis (build_plan) keeps its place, last."""
    cdef intp* ext = axes.extent
    cdef intp* ss = axes.src_step
    cdef intp* ds = axes.dst_step
    cdef int m = 0, i
    if source_table != NULL and (ndim < 1 or dst_strides[ndim - 1] != itemsize
                                 or extents[ndim - 1] > GATHER_MAX):
        raise ValueError(f"fastblock: a table axis must be the destination's innermost "
                         f"and at most {GATHER_MAX} items")
    p.source_table = source_table
    total[0] = itemsize
    reach[0] = 0
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
        ext[m] = extents[i]
        total[0] *= extents[i]
        if p.source_table != NULL and i == ndim - 1:
            # Step 0 here; plan_gather adds the table's offsets.
            ss[m] = 0; ds[m] = itemsize
        else:
            ss[m] = src_strides[i]
            ds[m] = dst_strides[i]
            if ds[m] < 0:
                dst[0] += (ext[m] - 1) * ds[m]
                src[0] += (ext[m] - 1) * ss[m]
                ds[m] = -ds[m]
                ss[m] = -ss[m]
        reach[0] += (ext[m] - 1) * ds[m]
        m += 1
    axes.n = m
    return 1


cdef void sort_axes(Axes* axes) noexcept nogil:
    """Sort by destination step, largest first, then by source step,
    smallest first (insertion sort: there are few axes)."""
    cdef intp* ext = axes.extent
    cdef intp* ss = axes.src_step
    cdef intp* ds = axes.dst_step
    cdef intp te, ts, td
    cdef int i, k
    for i in range(1, axes.n):
        te = ext[i]; ts = ss[i]; td = ds[i]
        k = i - 1
        while k >= 0 and (ds[k] < td or (ds[k] == td and iabs(ss[k]) < iabs(ts))):
            ext[k + 1] = ext[k]; ss[k + 1] = ss[k]; ds[k + 1] = ds[k]
            k -= 1
        ext[k + 1] = te; ss[k + 1] = ts; ds[k + 1] = td


cdef void merge_axes(Axes* axes, bint has_table) noexcept nogil:
    """Merge each axis into its inner neighbour when both sides step over
    them as one longer axis (the table axis, innermost by its step, is
    never merged)."""
    cdef intp* ext = axes.extent
    cdef intp* ss = axes.src_step
    cdef intp* ds = axes.dst_step
    cdef int m = axes.n, i, k = 0
    for i in range(1, m):
        if ds[k] == ds[i] * ext[i] and ss[k] == ss[i] * ext[i] and not (has_table and i == m - 1):
            ext[k] *= ext[i]
            ss[k] = ss[i]
            ds[k] = ds[i]
        else:
            k += 1
            ext[k] = ext[i]; ss[k] = ss[i]; ds[k] = ds[i]
    if m > 0:
        axes.n = k + 1


cdef void fold_item(Plan* p, Axes* axes, intp itemsize, bint fold) noexcept nogil:
    """The item width: the innermost axis folded into the item when
    ``fold`` and it is contiguous on both sides (not a table axis). A copy
    of one item keeps one axis of extent 1."""
    cdef int m = axes.n
    p.width = itemsize
    if fold and p.source_table == NULL and m >= 2 and axes.dst_step[m - 1] == itemsize \
            and axes.src_step[m - 1] == itemsize:
        p.width = itemsize * axes.extent[m - 1]
        m -= 1
    if m == 0:
        axes.extent[0] = 1; axes.src_step[0] = 0; axes.dst_step[0] = 0
        m = 1
    axes.n = m


cdef intp short_fold_bytes(const Plan* p, const Axes* axes, intp itemsize) noexcept nogil:
    """The bytes of the item that fold_item would make of 1- or 2-byte
    items where that is 3 to 15 bytes but not 4 or 8 (plan_unfolded), else 0."""
    cdef int m = axes.n
    cdef intp fold_bytes = itemsize * axes.extent[m - 1] if m >= 1 else 0
    if p.source_table == NULL and m >= 2 and axes.dst_step[m - 1] == itemsize \
            and axes.src_step[m - 1] == itemsize and itemsize <= 2 \
            and fold_bytes < 16 and not is_register_width(fold_bytes):
        return fold_bytes
    return 0


cdef bint folds_into_shuffled_repeats(const Axes* axes, intp fold_bytes) noexcept nogil:
    """Whether the fold of ``fold_bytes`` (short_fold_bytes) would be
    packed items, each repeated 3 or more times side by side, that the
    block kernel writes by 16-byte shuffles (repeats_by_shuffles, where
    not by permutes). Twice, unfolded won where an image row is a block
    (uint8 RGB upsampled (h 2) (w 2), 512 x 512: 0.68 x np.copyto
    unfolded, 0.89 folded)."""
    cdef int m = axes.n
    cdef intp count
    if m < 3 or axes.src_step[m - 2] != 0 or axes.dst_step[m - 2] != fold_bytes:
        return False
    count = axes.extent[m - 2]
    return (count > 2
            and repeats_by_shuffles(fold_bytes, count, axes.src_step[m - 3], axes.dst_step[m - 3])
            and not repeats_by_permutes(fold_bytes, count, axes.src_step[m - 3],
                                        axes.dst_step[m - 3]))


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
