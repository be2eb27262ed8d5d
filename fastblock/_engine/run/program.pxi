# Stored programs: an operator's whole copy between an input and a result
# of fixed shapes, strides and item size, planned once and run many times
# (the front doors' cache, _call/fastpath.pyx): CopyProgram for a move,
# ConvertProgram for a move that converts (the convert stage's plans).
#
# build_plan moves the base pointers where a destination step is negative;
# a stored plan keeps those moves as offsets, so it runs between any arrays
# of the same geometry. Only plans that do not depend on where the
# destination lies are stored: build_plan asks whether the destination's
# pages are resident (to stream, or to fault ahead) from the smaller of
# those thresholds on, and a copy that large is planned again at each run
# (a few microseconds against a copy of 4 MiB or more).

from fastblock._engine.types cimport (CONVERT_SIDES, ConvertPlan, MAX_INPUT_AXES, Plan, SIDE_DST,
                                      SIDE_OFFSET, SIDE_SCALE, SIDE_SRC, intp)

cdef enum:
    # StridedCopies stored by all programs together (a Plan is about 60 KB).
    STORED_PLANS_MAX = 64
    # A stored copy this small runs with the GIL held: releasing and taking
    # it back costs a tenth of a 64-byte call, and the copy itself under
    # 0.2 us (4 KiB at memory speed).
    GIL_HELD_MAX_BYTES = 4096

# Counted by every thread that stores or frees one (shared_state.h).
cdef Py_ssize_t stored_plans = 0


cdef struct StoredCopy:
    int ndim
    bint from_zero              # reads the program's zero item, not the source
    bint empty                  # an extent is 0, or no part: nothing to copy
    intp n_parts
    # extents, source steps, destination steps (ndim each), then the
    # parts' source offsets and destination offsets (n_parts each)
    intp* axes
    Plan* plan                  # NULL: planned at each run
    intp src_shift, dst_shift   # the stored plan's moves of the base pointers


cdef class CopyProgram:
    """Copies between a source and a destination of fixed geometry, in
    order: each an iteration over shared axes with a byte step per side
    (and per-part offsets, as :func:`copy` takes them), reading the source
    or, for ``zero_source`` copies, one zero item of the destination's item
    size (space_to_batch's padding). Built from a sequence of
    ``(extents, src_strides, dst_strides, parts, zero_source)`` (StridedCopy)
    and a source and destination of the geometry it will run between,
    whose data it does not touch. The caller guarantees what :func:`copy`
    asks of every later run."""

    def __cinit__(self, plans, cnp.ndarray src not None, cnp.ndarray dst not None):
        cdef StoredCopy* copies
        cdef StoredCopy* c
        cdef int i, k
        cdef intp total
        cdef char* base
        cdef char* src_start
        cdef char* dst_start
        cdef char* dst_data = <char*>cnp.PyArray_DATA(dst)
        self.itemsize = cnp.PyArray_ITEMSIZE(dst)
        if cnp.PyArray_ITEMSIZE(src) != self.itemsize:
            raise ValueError("fastblock: source and destination item sizes differ")
        plans = list(plans)
        copies = <StoredCopy*>calloc(max(len(plans), 1), sizeof(StoredCopy))
        if copies == NULL:
            raise MemoryError()
        self.copies = copies
        self.n_copies = len(plans)
        enter_copy()
        try:
            self.generation = FB_SHARED_LOAD(&tuning_generation)
            for i, plan in enumerate(plans):
                extents, src_strides, dst_strides, parts, zero_source = plan
                c = &copies[i]
                c.ndim = len(extents)
                c.n_parts = len(parts)
                if (c.ndim > MAX_INPUT_AXES or len(src_strides) != c.ndim
                        or len(dst_strides) != c.ndim):
                    raise ValueError(f"fastblock: {c.ndim} axes in one copy, at most "
                                     f"{MAX_INPUT_AXES}, with a step each side")
                c.axes = <intp*>malloc((3 * c.ndim + 2 * c.n_parts + 1) * sizeof(intp))
                if c.axes == NULL:
                    raise MemoryError()
                total = self.itemsize
                c.empty = c.n_parts == 0
                for k in range(c.ndim):
                    c.axes[k] = extents[k]
                    c.axes[c.ndim + k] = src_strides[k]
                    c.axes[2 * c.ndim + k] = dst_strides[k]
                    c.empty = c.empty or extents[k] == 0
                    if not c.empty:
                        total *= c.axes[k]
                for k, (src_offset, dst_offset) in enumerate(parts):
                    c.axes[3 * c.ndim + k] = src_offset
                    c.axes[3 * c.ndim + c.n_parts + k] = dst_offset
                c.from_zero = bool(zero_source)
                if c.from_zero and self.zero == NULL:
                    self.zero = <char*>calloc(self.itemsize, 1)
                    if self.zero == NULL:
                        raise MemoryError()
                base = self.zero if c.from_zero else <char*>cnp.PyArray_DATA(src)
                if c.empty or total >= imin(tuning.stream_min_bytes, tuning.fault_ahead_min_bytes):
                    continue
                if FB_SHARED_ADD(&stored_plans, 1) >= STORED_PLANS_MAX:
                    FB_SHARED_ADD(&stored_plans, -1)
                    continue
                c.plan = <Plan*>malloc(sizeof(Plan))
                if c.plan == NULL:
                    FB_SHARED_ADD(&stored_plans, -1)
                    raise MemoryError()
                src_start = base
                dst_start = dst_data
                # Not empty, so there is a plan; below both thresholds, it
                # neither streams nor faults ahead (build_plan asks for no
                # residency), which would depend on the destination's pages.
                build_plan(c.plan, c.ndim, c.axes, c.axes + c.ndim, c.axes + 2 * c.ndim,
                           self.itemsize, c.n_parts, &src_start, &dst_start)
                c.plan.src_offsets = c.axes + 3 * c.ndim
                c.plan.dst_offsets = c.axes + 3 * c.ndim + c.n_parts
                c.plan.dst_end = NULL       # read only to stream or fault ahead
                c.src_shift = src_start - base
                c.dst_shift = dst_start - dst_data
        finally:
            leave_copy()

    def __dealloc__(self):
        cdef StoredCopy* copies = <StoredCopy*>self.copies
        cdef int i
        if copies != NULL:
            for i in range(self.n_copies):
                if copies[i].plan != NULL:
                    free(copies[i].plan)
                    FB_SHARED_ADD(&stored_plans, -1)
                free(copies[i].axes)
            free(copies)
        free(self.zero)

    cdef bint is_current(self) noexcept:
        """Whether the stored plans were chosen with the settings now in force."""
        return self.generation == FB_SHARED_LOAD(&tuning_generation)

    cdef int run(self, char* src, char* dst, int num_threads) except -1:
        enter_copy()
        try:
            self.run_copies(src, dst, num_threads)
        finally:
            leave_copy()
        return 0

    cdef int run_copies(self, char* src, char* dst, int num_threads) except -1:
        cdef StoredCopy* c
        cdef char* base
        cdef bint current = self.generation == FB_SHARED_LOAD(&tuning_generation)
        cdef int i
        for i in range(self.n_copies):
            c = &(<StoredCopy*>self.copies)[i]
            if c.empty:
                continue
            base = self.zero if c.from_zero else src
            if c.plan != NULL and current:
                if c.plan.total_bytes * c.plan.n_parts < GIL_HELD_MAX_BYTES:
                    run_plan(c.plan, dst + c.dst_shift, base + c.src_shift, num_threads)
                else:
                    with nogil:
                        run_plan(c.plan, dst + c.dst_shift, base + c.src_shift, num_threads)
            else:
                copy_parts(base, dst, c.ndim, c.axes, c.axes + c.ndim, c.axes + 2 * c.ndim,
                           self.itemsize, c.n_parts, c.axes + 3 * c.ndim,
                           c.axes + 3 * c.ndim + c.n_parts, num_threads)
        return 0


def stored_plan_count():
    """StridedCopies stored by all live programs together (at most STORED_PLANS_LIMIT)."""
    return FB_SHARED_LOAD(&stored_plans)


#: The most plans all programs together store; later programs plan each run.
STORED_PLANS_LIMIT = STORED_PLANS_MAX


cdef struct StoredConvert:
    ConvertPlan plan            # its shapes on the heap
    bint empty                  # moves nothing: plan_convert's 0, or no part
    bint from_zero              # reads the program's zero item, not the source
    intp n_parts
    intp* offsets               # CONVERT_SIDES byte offsets a part
    intp shift[CONVERT_SIDES]   # plan_convert's moves of each side's base


cdef class ConvertProgram:
    """A converting copy between a source and a result of fixed geometry,
    planned once (the convert stage's ConvertPlans) and run many times: the
    converting calls' entries in the front doors' cache, and the general
    path's one run. Built from _convert.converting_copies' program (per
    copy: zero_source, extents, four sides' steps, parts' four offsets),
    the two arrays' item sizes, the type codes and whether a scale and an
    offset are read; the caller guarantees what the copies ask of every
    later run (addresses inside their arrays, a scale and an offset laid
    out as the program was built for). Its plans are counted among the
    stored plans; they are the settings' of when it was built."""

    def __cinit__(self, program, intp src_item, intp dst_item, int src_type, int dst_type,
                  bint scale, bint offset):
        cdef StoredConvert* c
        cdef int i, k, s
        program = list(program)
        self.copies = calloc(max(len(program), 1), sizeof(StoredConvert))
        if self.copies == NULL:
            raise MemoryError()
        self.n_copies = len(program)
        self.has_scale = scale
        self.has_offset = offset
        enter_copy()
        try:
            self.generation = FB_SHARED_LOAD(&tuning_generation)
            for i, (zero_source, extents, steps, parts) in enumerate(program):
                c = &(<StoredConvert*>self.copies)[i]
                c.n_parts = len(parts)
                c.offsets = <intp*>malloc(max(c.n_parts, 1) * CONVERT_SIDES * sizeof(intp))
                if c.offsets == NULL:
                    raise MemoryError()
                for k, part in enumerate(parts):
                    for s in range(CONVERT_SIDES):
                        c.offsets[k * CONVERT_SIDES + s] = part[s]
                c.from_zero = bool(zero_source)
                if c.from_zero and self.zero == NULL:
                    self.zero = <char*>calloc(src_item, 1)
                    if self.zero == NULL:
                        raise MemoryError()
                c.empty = c.n_parts < 1 or not fill_convert_plan(
                    &c.plan, src_item, dst_item, src_type, dst_type, extents, steps, scale,
                    offset, c.shift)
                self.n_plans += stage_plans(&c.plan)
            FB_SHARED_ADD(&stored_plans, self.n_plans)
        finally:
            leave_copy()

    def __dealloc__(self):
        cdef StoredConvert* copies = <StoredConvert*>self.copies
        cdef int i
        if copies != NULL:
            for i in range(self.n_copies):
                free_convert_plan(&copies[i].plan)
                free(copies[i].offsets)
            free(copies)
        FB_SHARED_ADD(&stored_plans, -self.n_plans)
        free(self.zero)

    cdef bint is_current(self) noexcept:
        """Whether the plans were chosen with the settings now in force."""
        return self.generation == FB_SHARED_LOAD(&tuning_generation)

    cdef int run(self, const char* src, char* dst, const char* scale, const char* offset,
                 int num_threads) except -1:
        """Every copy from ``src`` into ``dst``; ``scale``, ``offset``: the
        values' first items (NULL where the program reads none)."""
        cdef StoredConvert* c
        cdef const char* base[CONVERT_SIDES]
        cdef int i, s
        enter_copy()
        try:
            for i in range(self.n_copies):
                c = &(<StoredConvert*>self.copies)[i]
                if c.empty:
                    continue
                base[SIDE_SRC] = self.zero if c.from_zero else src
                base[SIDE_DST] = dst
                base[SIDE_SCALE] = scale
                base[SIDE_OFFSET] = offset
                for s in range(CONVERT_SIDES):
                    if base[s] != NULL:
                        base[s] += c.shift[s]
                run_convert(&c.plan, base, c.n_parts, c.offsets, num_threads)
        finally:
            leave_copy()
        return 0

    def __call__(self, cnp.ndarray src not None, cnp.ndarray dst not None, scale, offset,
                 int num_threads):
        """Run from ``src`` into ``dst``, reading ``scale`` and ``offset``
        (arrays of the compute type, or None, as the program was built)."""
        if (scale is not None) != self.has_scale or (offset is not None) != self.has_offset:
            raise ValueError("fastblock: a scale and an offset as the program was built for")
        self.run(<const char*>cnp.PyArray_DATA(src), <char*>cnp.PyArray_DATA(dst),
                 NULL if scale is None else <const char*>cnp.PyArray_DATA(<cnp.ndarray?>scale),
                 NULL if offset is None else <const char*>cnp.PyArray_DATA(<cnp.ndarray?>offset),
                 num_threads)


cdef int stage_plans(const ConvertPlan* c) noexcept nogil:
    """The Plans a ConvertPlan holds (about 60 KB each)."""
    cdef int i, n = 0
    if c.shapes != NULL:
        for i in range(c.n_shapes):
            n += (c.shapes[i].move != NULL) + (c.shapes[i].scale_line != NULL) \
                + (c.shapes[i].offset_line != NULL)
    return n
