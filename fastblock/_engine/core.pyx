# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The strided copy engine behind every fastblock operator: its one module.

Every operator is a copy of a strided N-D source into a strided N-D
destination over shared iteration axes with a byte step per side. This file
includes the engine's layers (``operators/``, ``plan/``, ``run/``,
``kernels/``; docs/engine.md says what each holds and traces a call through
them) and holds what joins them: the small helpers every layer uses,
``LIMITS`` (the sizes fixed by the build, for ``thresholds``), the entry
points :func:`copy` (through ``copy_parts``) and :func:`describe`, and the
thread policy's Python face. The GIL is released for the whole copy.
"""

cimport numpy as cnp
import numpy as np
from cython.parallel cimport parallel, prange, threadid
from libc.stdlib cimport calloc, free, malloc

from fastblock._engine.types cimport (CONVERT_SIDES, ConvertPlan, SIDE_DST, SIDE_OFFSET,
                                      SIDE_SCALE, SIDE_SRC, TileShape)
from fastblock._engine.kernels_c cimport (FB_AFFINE_LINE, FB_AFFINE_NONE, FB_AFFINE_VALUE, FB_NUM_F64,
                                          FB_NUM_TYPES, fb_convert_compute, fb_convert_init)
from fastblock._engine.types cimport (BLOCK_REPEATS, GATHER_MAX, KERNEL_BLOCK, KERNEL_GATHER,
                                      KERNEL_LANES, KERNEL_TRANSPOSE, LANES_MAX, LANE_GROUP,
                                      MAX_INPUT_AXES, Plan, SHUFFLE_BYTES, ShuffleProgram,
                                      TRANSPOSE_MAX, WIDE_SHUFFLE_BYTES, intp)
from fastblock._engine.array_bytes cimport byte_range

cnp.import_array()

from fastblock._engine.kernels_c cimport (FB_HAVE_OPENMP, FbTeamState, fb_openmp_max_threads,
                                          fb_team_reset, fb_team_started_here, fb_team_state)

#: True when the extension was compiled with OpenMP.
HAVE_OPENMP = bool(FB_HAVE_OPENMP)


def openmp_max_threads():
    """OpenMP's thread count for the calling thread's next parallel region
    (``omp_get_max_threads``): ``OMP_NUM_THREADS``, or the usable cores, or
    what ``omp_set_num_threads`` set since (threadpoolctl's limits); 1
    without OpenMP."""
    return fb_openmp_max_threads()


def team_policy():
    """What the thread policy (``_engine/src/team.h``) holds now: ``cap`` (the
    threads a call may run while helpers have lately come late; 0: no cap),
    ``backoff_ns`` (the next back-off), ``probe_in_ns`` (time until a capped
    call tries the whole team again), the counts of team ``runs``,
    ``late_runs`` and ``probes``, and of the last team run ``last_team``
    (the threads it asked OpenMP for), ``last_wait_ns`` (how long its
    caller waited for helpers) and ``last_work_ns`` (how long the caller
    worked). For tests and reports."""
    cdef FbTeamState state
    fb_team_state(&state)
    return {"cap": state.cap, "backoff_ns": state.backoff_ns, "probe_in_ns": state.probe_in_ns,
            "runs": state.runs, "late_runs": state.late_runs, "probes": state.probes,
            "last_team": state.last_team, "last_wait_ns": state.last_wait_ns,
            "last_work_ns": state.last_work_ns}


def forget_team_policy():
    """Clear what the thread policy has seen (a forked child's helper
    threads are new; tests start from a clean state)."""
    fb_team_reset()


def started_team_on_this_thread():
    """Whether the calling thread has run a copy on a team of two or more
    threads: GNU OpenMP then keeps a pool of threads for it that a child
    forked from this thread would wait for forever."""
    return bool(fb_team_started_here())

cdef enum:
    # Bytes of a cache line (the unit the source is read in).
    CACHE_LINE = 64
    # Bytes of one way of the L1 data cache (64 sets of lines on x86-64 and
    # ARM64 cores alike): lines this many bytes apart share a set.
    L1_WAY_BYTES = 4096
    # Ways of the smallest L1 data cache the engine meets (8 on AMD Zen, 12
    # on Intel since Ice Lake): the lines one set holds.
    L1_WAYS = 8


cdef inline intp iabs(intp v) noexcept nogil:
    return -v if v < 0 else v


cdef inline intp imin(intp a, intp b) noexcept nogil:
    return a if a < b else b


cdef inline intp imax(intp a, intp b) noexcept nogil:
    return a if a > b else b


cdef inline bint is_register_width(intp width) noexcept nogil:
    """Whether items of ``width`` bytes move as one load and store."""
    return width == 1 or width == 2 or width == 4 or width == 8 or width == 16


include "tuning.pxi"
include "kernels/block.pxi"
include "kernels/shuffle.pxi"
include "kernels/transpose.pxi"
include "kernels/stream.pxi"
include "kernels/faults.pxi"
include "kernels/vect_c_pixels.pxi"

include "plan/planner.pxi"
include "plan/axes.pxi"
include "plan/kernel.pxi"
include "plan/lanes.pxi"
include "plan/transpose.pxi"
include "plan/gather.pxi"
include "plan/shuffle.pxi"
include "plan/blocks.pxi"
include "plan/convert.pxi"
include "run/blocks.pxi"
include "run/schedule.pxi"
include "run/convert.pxi"


cdef int copy_parts(char* src, char* dst, int ndim, const intp* extents,
                    const intp* src_strides, const intp* dst_strides, intp itemsize,
                    intp n_parts, const intp* src_offsets, const intp* dst_offsets,
                    int num_threads, const intp* source_table=NULL) except -1:
    """Run one copy (or several, shifted by per-part byte offsets) over the axes.

    The plan is built once: normalising moves both base pointers by fixed
    amounts, which apply to every part alike. The parts are run block by
    block (every part of a block before the next block), so parts that write
    neighbouring bytes (the lanes of NCHW_VECT_C) fill each cache line while
    it is held, and the blocks shrink to keep all parts' lines in cache.
    ``source_table``: the last axis is a table axis (build_plan)."""
    cdef Plan plan
    cdef char* src_start = src
    cdef char* dst_start = dst
    cdef intp part, last_part = 0
    if n_parts < 1:
        return 0
    if not build_plan(&plan, ndim, extents, src_strides, dst_strides, itemsize, n_parts,
                      &src_start, &dst_start, 0, source_table):
        return 0
    plan.src_offsets = src_offsets
    plan.dst_offsets = dst_offsets
    for part in range(n_parts):
        last_part = imax(last_part, dst_offsets[part])
    plan.dst_end += last_part
    with nogil:
        run_plan(&plan, dst_start, src_start, num_threads)
    return 0


def copy(cnp.ndarray src not None, cnp.ndarray dst not None, extents, src_strides,
         dst_strides, parts=((0, 0),), int num_threads=1, source_table=None):
    """Copy ``src`` into ``dst`` over the iteration ``extents``.

    Item ``(i0, i1, ...)`` is read at ``src.data + src_offset + sum(i * src_strides)``
    and written at ``dst.data + dst_offset + sum(i * dst_strides)`` (byte
    steps), once for each ``(src_offset, dst_offset)`` in ``parts``. With a
    ``source_table`` (one byte offset per index of the last axis), the last
    axis's source offsets are the table's instead of multiples of its
    stride; its destination stride must be the item size.
    The caller guarantees that every address is inside its array, that the
    destination items are distinct and that ``src`` and ``dst`` do not overlap;
    both arrays must have the same item size and hold no references.
    """
    cdef intp ext[MAX_INPUT_AXES]
    cdef intp ss[MAX_INPUT_AXES]
    cdef intp ds[MAX_INPUT_AXES]
    cdef int ndim = read_axes(extents, src_strides, dst_strides, ext, ss, ds), i
    cdef intp n_parts = len(parts)
    if src.itemsize != dst.itemsize:
        raise ValueError("fastblock: source and destination item sizes differ")
    cdef intp zero = 0
    cdef const intp* src_at = &zero
    cdef const intp* dst_at = &zero
    cdef const intp* table_at = NULL
    cdef intp[::1] src_offsets
    cdef intp[::1] dst_offsets
    cdef intp[::1] table
    # The common call (one part, no table) builds no offset arrays.
    if not (source_table is None and n_parts == 1 and tuple(parts[0]) == (0, 0)):
        src_offsets = cvarray_intp(n_parts)
        dst_offsets = cvarray_intp(n_parts)
        for i, (src_offset, dst_offset) in enumerate(parts):
            src_offsets[i] = src_offset
            dst_offsets[i] = dst_offset
        src_at, dst_at = &src_offsets[0], &dst_offsets[0]
        table = table_offsets(source_table, extents)
        if table is not None and table.shape[0] > 0:
            table_at = &table[0]
    enter_copy()
    try:
        copy_parts(<char*>cnp.PyArray_DATA(src), <char*>cnp.PyArray_DATA(dst), ndim, ext, ss, ds,
                   dst.itemsize, n_parts, src_at, dst_at, num_threads, table_at)
    finally:
        leave_copy()


cdef int fill_convert_plan(ConvertPlan* plan, intp src_item, intp dst_item, int src_type,
                           int dst_type, extents, steps, bint scale, bint offset,
                           intp* shift) except -1:
    """A converting copy's plan (ConvertProgram's, ``plan.shapes`` freed by
    the caller): ``extents`` and four sides' ``steps`` (source, result,
    scale, offset); 0 when the copy moves nothing. The settings guard must
    be held."""
    cdef intp ext[MAX_INPUT_AXES]
    cdef intp side_steps[CONVERT_SIDES][MAX_INPUT_AXES]
    cdef const intp* step_rows[CONVERT_SIDES]
    cdef int ndim = len(extents), k, s
    if ndim > MAX_INPUT_AXES:
        raise ValueError(f"fastblock: {ndim} axes in one copy, at most {MAX_INPUT_AXES}")
    if not (0 <= src_type < FB_NUM_TYPES and 0 <= dst_type < FB_NUM_TYPES):
        raise ValueError("fastblock: unknown numeric type code")
    if len(steps) != CONVERT_SIDES or any(len(side) != ndim for side in steps):
        raise ValueError("fastblock: four sides of steps, each as long as extents")
    for k in range(ndim):
        ext[k] = extents[k]
        for s in range(CONVERT_SIDES):
            side_steps[s][k] = steps[s][k]
    for s in range(CONVERT_SIDES):
        step_rows[s] = &side_steps[s][0]
    plan.cv.src = src_type
    plan.cv.dst = dst_type
    plan.cv.compute = fb_convert_compute(src_type, dst_type, scale or offset)
    plan.cv.scale = FB_AFFINE_VALUE if scale else FB_AFFINE_NONE
    plan.cv.offset = FB_AFFINE_VALUE if offset else FB_AFFINE_NONE
    plan.cv.simd = tuning.convert_simd and cpu_convert_simd
    plan.cv.vbmi = plan.cv.simd and tuning.convert_avx512 and cpu_vbmi
    plan.cv.bf16 = plan.cv.simd and tuning.convert_avx512 and cpu_avx512_bf16
    plan.item[SIDE_SRC] = src_item
    plan.item[SIDE_DST] = dst_item
    plan.item[SIDE_SCALE] = plan.item[SIDE_OFFSET] = 8 if plan.cv.compute == FB_NUM_F64 else 4
    plan.tile_items = imax(1, tuning.convert_tile_bytes
                              // imax(imax(src_item, dst_item), plan.item[SIDE_SCALE]))
    return plan_convert(&plan[0], ndim, ext, step_rows, shift)


def describe_convert(extents, steps, intp src_item, intp dst_item, int src_type, int dst_type,
                     bint scale=False, bint offset=False):
    """The plan a ConvertProgram would run for one copy, as a dict: ``box`` (the
    tile's extent along each normalised axis, result order), ``extents``
    (those axes'), ``cuts`` (axes whose last tile is shorter), ``tiles``,
    ``tile_items``, ``scale`` and ``offset`` ("none", "value": one a row,
    "line": gathered a tile), ``simd`` (the SIMD variants run), ``vbmi``
    (the way back to pixels in 64-byte registers), ``bf16`` (bfloat16
    planes by the CPU's conversion where no result can be subnormal), and per
    tile shape (``shapes``) its ``extent``, ``run`` (items a row), ``rows``
    (row loop axes), ``lanes_direct`` (the lanes of the one-pass pixels
    kernel, or 0), ``lanes_interleave`` (that kernel's way: planes into
    pixels), ``lanes_reversed`` (the pixels hold their lanes backwards)
    and the ``move`` kernel (describe()'s account of its Plan;
    None where the tile is not moved: one-pass lanes, or rows converted
    where they lie). For tests."""
    cdef ConvertPlan plan
    cdef intp shift[CONVERT_SIDES]
    cdef int k, i
    cdef TileShape* t
    plan.shapes = NULL
    plan.n_shapes = 0
    enter_copy()
    try:
        if not fill_convert_plan(&plan, src_item, dst_item, src_type, dst_type, extents, steps,
                                 scale, offset, shift):
            return None
        modes = {FB_AFFINE_NONE: "none", FB_AFFINE_VALUE: "value", FB_AFFINE_LINE: "line"}
        shapes = []
        for i in range(1 << plan.n_cuts):
            t = &plan.shapes[i]
            shapes.append({"extent": tuple([t.extent[k] for k in range(plan.n)]), "run": t.run,
                           "rows": t.n_rows, "lanes_direct": t.lanes,
                           "lanes_interleave": bool(t.lanes_interleave),
                           "lanes_reversed": bool(t.lanes_reversed),
                           "move": None if t.move == NULL else kernel_summary(t.move)})
        return {"extents": tuple([plan.extent[k] for k in range(plan.n)]),
                "box": tuple([plan.box[k] for k in range(plan.n)]),
                "cuts": tuple([plan.cut[k] for k in range(plan.n_cuts)]),
                "tiles": plan.n_tiles, "tile_items": plan.tile_items,
                "scale": modes[plan.cv.scale], "offset": modes[plan.cv.offset],
                "simd": bool(plan.cv.simd), "vbmi": bool(plan.cv.vbmi),
                "bf16": bool(plan.cv.bf16), "shapes": shapes}
    finally:
        free_convert_plan(&plan)
        leave_copy()


def compute_type(int src_type, int dst_type, bint affine):
    """The type code (FB_NUM_F32 or FB_NUM_F64) a conversion computes in:
    float64 for a float64 result (and for a float64 source converted to a
    float result without scale or offset), else float32."""
    return fb_convert_compute(src_type, dst_type, affine)


cdef int read_axes(extents, src_strides, dst_strides, intp* ext, intp* ss,
                   intp* ds) except -1:
    """A copy's axes as given to :func:`copy` into ``ext``, ``ss`` and
    ``ds`` (MAX_INPUT_AXES each); returns their count."""
    cdef int ndim = len(extents), i
    if ndim > MAX_INPUT_AXES:
        raise ValueError(f"fastblock: {ndim} axes in one copy, at most {MAX_INPUT_AXES}")
    if len(src_strides) != ndim or len(dst_strides) != ndim:
        raise ValueError("fastblock: extents and strides differ in length")
    for i in range(ndim):
        ext[i] = extents[i]
        ss[i] = src_strides[i]
        ds[i] = dst_strides[i]
    return ndim


cdef table_offsets(source_table, extents):
    """``source_table`` (None: no table axis) as intp offsets, one per index
    of the last of ``extents``."""
    if source_table is None:
        return None
    if len(extents) < 1 or len(source_table) != extents[len(extents) - 1]:
        raise ValueError("fastblock: source_table needs one offset per index of the last axis")
    return np.ascontiguousarray(source_table, dtype=np.intp)


def describe(extents, src_strides, dst_strides, intp itemsize, cnp.ndarray dst_array=None,
             source_table=None, int num_threads=1):
    """The plan the engine would run for a copy (see :func:`copy`), as a dict:
    ``kernel`` ("lanes", "gather", "transpose" or "block"), ``lanes`` (lane
    transposes: lanes per pixel), ``lane_permutes`` (a lane transpose whose
    whole blocks go by 64-byte permutes), ``rows_across_groups`` (a lane
    transpose that moves the first row of each group, then the second...),
    ``line_splits`` (a lane split that writes a line of each lane at a
    time), ``repeats`` (blocks of items each repeated side by side:
    "permutes", "shuffles", "periods" or "registers", the kernel that
    writes them, else None), ``width`` (bytes per folded item), the
    kernel block's ``rows`` and ``row_items`` (gathered run, or b-axis tile;
    a transpose's destination rows and their items), ``row_group`` (the
    rows a lane transpose takes whole in each row of its a axis; 1: none),
    ``last_row_items``
    (the shorter run of a ragged split, else None), ``uniform_windows``
    (windows in every shuffled piece, 0 when they differ),
    ``shuffled_pieces`` (pieces of the run built by byte shuffles, each of
    ``shuffle_piece_bytes`` bytes: 16, or 64 with AVX-512 VBMI, and
    ``shuffle_piece_advance`` bytes apart: the piece size, or whole pixels
    of fewer bytes), ``shuffle_period`` (pieces after which the program
    repeats, run by the periodic kernel of its piece size; 0: none) and
    ``periodic_pieces`` (the pieces that kernel runs),
    ``loop`` (the outer loop's extents, outermost first, and
    ``loop_source_steps`` their source steps in bytes), ``streams`` (whether the
    destination is streamed: only for a ``dst_array`` whose data the copy
    would write) and ``stream_store_bytes`` (the bytes of each streamed
    store: 32 with AVX, else 16), ``faults_ahead`` (whether the huge pages of such a
    ``dst_array`` not yet in memory are first touched at their ends),
    ``staged`` (a transpose through a buffer),
    ``first_tile_short_by`` (items a transpose's first tile of each row
    lacks, so that the others start on a line) and ``source_ahead`` (bytes
    past its own source at which a transpose block asks for the source of
    the block two on; 0: none). ``source_table``: as for :func:`copy`.
    How a call of ``num_threads`` threads would share it out, the thread
    policy's cap aside: ``threads`` (1: the calling thread alone),
    ``units`` (the chunks of the loop the team takes), ``caller_faults``
    (whether the calling thread faults ahead for the others) and
    ``lead_units`` (how many units past its own).
    For tests and tuning."""
    cdef Plan plan
    cdef intp ext[MAX_INPUT_AXES]
    cdef intp ss[MAX_INPUT_AXES]
    cdef intp ds[MAX_INPUT_AXES]
    cdef char* src = NULL
    cdef char* dst = NULL if dst_array is None else <char*>cnp.PyArray_DATA(dst_array)
    cdef int ndim = read_axes(extents, src_strides, dst_strides, ext, ss, ds)
    cdef intp[::1] table = table_offsets(source_table, extents)
    enter_copy()
    try:
        if not build_plan(&plan, ndim, ext, ss, ds, itemsize, 1, &src, &dst, 0,
                          NULL if table is None or table.shape[0] == 0 else &table[0]):
            return None
        return dict(kernel_summary(&plan), **schedule_summary(&plan, num_threads))
    finally:
        leave_copy()


cdef dict kernel_summary(const Plan* plan):
    """describe()'s account of a plan's kernel, blocks, loop and memory paths."""
    cdef bint gathers = plan.kernel == KERNEL_GATHER
    cdef bint shuffles = gathers and plan.shuffle.n_pieces > 0
    cdef bint transposes = plan.kernel == KERNEL_TRANSPOSE
    cdef const ShuffleProgram* program = &plan.shuffle
    cdef int i
    return {
        "kernel": KERNEL_NAMES[plan.kernel],
        # The instructions of the 16-byte kernels (lane transposes, byte
        # shuffles, Tile's repeats), or None: their portable paths. (The
        # register tiles of transposes run SSE2 or NEON wherever built.)
        "simd128": ("neon" if cpu_neon else "ssse3") if use_simd128() else None,
        "lanes": plan.lanes.n_lanes,
        "lane_permutes": plan.kernel == KERNEL_LANES and lanes_by_permutes(plan, plan.tile_b),
        "rows_across_groups": plan.kernel == KERNEL_LANES and rows_across_groups(
            plan, plan.dst_a, plan.lanes.dst_in, plan.lanes.offset),
        "line_splits": plan.kernel == KERNEL_LANES and splits_by_lines(plan, plan.lanes.offset),
        "repeats": repeats_kernel(plan),
        "width": plan.width,
        "rows": (plan.tile_a * plan.a_in if transposes
                 else plan.tile_a * plan.lanes.rows_in if plan.kernel == KERNEL_LANES else plan.tile_a),
        "row_group": plan.lanes.rows_in if plan.kernel == KERNEL_LANES else 1,
        "row_items": (plan.gather_len if gathers
                      else plan.tile_b * plan.b_in if transposes else plan.tile_b),
        "last_row_items": (plan.gather_tail_len if plan.ragged_loop >= 0 or plan.ragged_rows
                           else None),
        "shuffled_pieces": program.n_pieces + program.lead_rounds * program.period if gathers else 0,
        "uniform_windows": program.uniform if shuffles else 0,
        "shuffle_piece_bytes": program.piece_bytes if shuffles else 0,
        "shuffle_piece_advance": program.piece_advance if shuffles else 0,
        "shuffle_period": program.period if shuffles else 0,
        "periodic_pieces": (program.segment_pieces * (program.n_segments - 1)
                            + program.last_segment_pieces + program.lead_rounds * program.period
                            if shuffles and program.period else 0),
        "loop": tuple([plan.extent[i] for i in range(plan.n_loop)]),
        "loop_source_steps": tuple([plan.src_step[i] for i in range(plan.n_loop)]),
        "streams": bool(plan.stream),
        "stream_store_bytes": (32 if fb_stream_avx else 16) if plan.stream else 0,
        "faults_ahead": bool(plan.fault_ahead),
        "staged": bool(transposes and plan.transpose_staged),
        "first_tile_short_by": plan.b_shift * plan.b_in if transposes else 0,
        "source_ahead": plan.source_ahead if transposes else 0,
    }


cdef str repeats_kernel(const Plan* plan):
    """How a plan's blocks of items each repeated side by side go (the
    first choices of copy_block): "permutes" (64-byte), "shuffles" (16- or
    32-byte), "periods" (each row from the registers of its period),
    "registers" (each copy from registers of its item), or None
    (another loop, or no such blocks)."""
    if plan.kernel != KERNEL_BLOCK or plan.block_copy.loop != BLOCK_REPEATS \
            or plan.block_copy.a_inside or plan.tile_b < 2:
        return None
    if repeats_by_permutes(plan.width, plan.tile_b, plan.src_a, plan.dst_a):
        return "permutes"
    if repeats_by_shuffles(plan.width, plan.tile_b, plan.src_a, plan.dst_a):
        return "shuffles"
    if repeats_by_periods(plan.width, plan.tile_b):
        return "periods"
    if repeats_from_registers(plan.width, plan.tile_b):
        return "registers"
    return None


cdef dict schedule_summary(const Plan* plan, int num_threads):
    """describe()'s account of how a call of ``num_threads`` shares a plan
    out, by the scheduler's own rules (the thread policy's cap aside)."""
    cdef int team = 1 if runs_alone(plan.total_bytes * plan.n_parts, plan.n_iter,
                                    num_threads) else <int>imin(num_threads, plan.n_iter)
    cdef intp n_units = plan_chunks(plan, team) if team > 1 else 1
    cdef bint caller_faults = team > 1 and caller_takes_faults(team, plan.fault_ahead)
    return {
        "threads": team,
        "units": n_units,
        "caller_faults": caller_faults,
        "lead_units": (fault_lead_units(team, plan.total_bytes * plan.n_parts // n_units)
                       if caller_faults else 0),
    }


# describe()'s names of the Kernel values.
KERNEL_NAMES = {KERNEL_BLOCK: "block", KERNEL_GATHER: "gather", KERNEL_LANES: "lanes",
                KERNEL_TRANSPOSE: "transpose"}


cdef cvarray_intp(intp n):
    return np.empty(max(n, 1), dtype=np.intp)


include "operators/axes.pxi"
include "operators/vect_c.pxi"
include "run/program.pxi"


#: The sizes at which the planner switches paths that are fixed when the
#: engine is built (its settings' sizes: SETTINGS), by name: byte counts
#: (``*_bytes``) and item or pixel counts.
LIMITS = {
    "gather_max_items": GATHER_MAX,
    "lanes_max_bytes": LANES_MAX,
    "lane_group": LANE_GROUP,
    "pair_min_pixels": PAIR_MIN_PIXELS,
    "ragged_rows_max_bytes": RAGGED_ROWS_MAX_BYTES,
    "long_run_reach_bytes": LONG_RUN_REACH,
    "transpose_bytes": TRANSPOSE_BYTES,
    "transpose_max_items": TRANSPOSE_MAX,
    "shuffle_piece_bytes": SHUFFLE_BYTES,
    "wide_shuffle_piece_bytes": WIDE_SHUFFLE_BYTES,
    "stream_block_bytes": STREAM_BLOCK_BYTES,
    "stream_min_row_bytes": STREAM_MIN_ROW,
    "huge_page_bytes": HUGE_PAGE_BYTES,
    "vect_c_block_bytes": VECT_C_BLOCK_BYTES,
}


tune(**default_tuning())
fb_convert_init()
