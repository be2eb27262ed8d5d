"""Shared pieces of the fastblock asv suite: parameter grids, cached inputs,
NumPy's own way, and the timing behind the derived ``track_*`` figures.

Nothing here is a benchmark: asv only collects the classes of the
``bench_*`` modules (the base classes below start with ``_`` so that asv's
discovery passes over them here).

Every figure is about one *case*: an operator, its arguments and an input.

- ``time_*``      seconds per call as a user makes it (a fresh result array).
- ``track_gbps``  result bytes written per second, in GB/s (10**9 bytes),
                  into a preallocated, already-written ``out``.
- ``track_vs_copy``  the call's time over the *copy ceiling*: ``np.copyto``
                  of the result's byte count between two preallocated,
                  already-written arrays, on one thread, timed in the same
                  process and interleaved with the call (medians). 1.00 is a
                  one-thread memory copy; lower is better, and below 1 is
                  possible with several threads (or for Tile, whose input is
                  small and stays in cache).
- ``peakmem_*``   the process's peak resident memory (input included).
- ``track_alloc_*``  bytes the call allocates at its peak (NumPy reports to
                  ``tracemalloc``) over the result's bytes: 1.00 means the
                  call allocates its result and nothing else.

Environment switches (read when asv collects the benchmarks, and in each
benchmark process; asv passes its own environment on to both):

- ``FASTBLOCK_ASV_FULL=1``  the full grid, every operator x mode x layout x
  rank x block size x item size x size x threads (hours); default: a grid
  that covers every axis but not their full product (minutes).
- ``FASTBLOCK_ASV_QUICK=1``  one timed call inside the ``track_*``
  benchmarks instead of medians of 7; for smoke runs (``asv run --quick``,
  as in CI), whose figures only show that every benchmark runs.
"""
from __future__ import annotations

import functools
import math
import os
import sys
import tracemalloc

import numpy as np

import fastblock as fb

# The repository root, which holds the speed reports (``speed_reports``,
# whose cases this suite shares; asv imports the suite as the package
# ``benchmarks`` and puts only asv_bench/ on sys.path). Appended, so that
# the fastblock asv installed still comes before the source tree's.
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.append(_ROOT)

from speed_reports.source import reference, timing  # noqa: E402


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "no", "false", "off")


FULL = _flag("FASTBLOCK_ASV_FULL")
QUICK = _flag("FASTBLOCK_ASV_QUICK")


def grid(default, full):
    """A parameter list: ``full`` under FASTBLOCK_ASV_FULL, else ``default``."""
    return list(full if FULL else default)


# ---------------------------------------------------------------------------
# Parameter values

MODES = ["blocks_first", "depth_first"]
LAYOUTS = ["channels_first", "channels_last", "NCHW_VECT_C"]
# Logical rank: 4 is [N, C, H, W] (NCHW_VECT_C: [N, C/4, H, W, 4]), 5 is
# [N, C, D, H, W]. NCHW_VECT_C has no 5-D form.
RANKS = [4, 5]
BLOCK_SIZES = [2, 4]
# Item sizes 1, 2, 4, 8 bytes; a 20-byte unicode string (an item width that
# is not a power of two); object arrays of Python str (the reference-keeping
# fallback).
DTYPES = ["uint8", "uint16", "float32", "float64", "U5", "object"]
# tiny: per-call overhead ([1, 16, 4, 4], 256 items); 512KiB: input and
# result together stay in a 1 MiB L2 (and above fastblock's 256 KiB
# threshold for threads); 64MiB: far beyond any cache.
SIZES = ["tiny", "512KiB", "64MiB"]
# 1, or every core this process may run on.
THREADS = [1, "all"]
# Tile: which axes are repeated ("outer": the first, "inner": the last,
# "all": every axis), and how many times.
TILE_PATTERNS = ["outer", "inner", "all"]
TILE_FACTORS = [2, 4]

TINY_ITEMS = 256
SIZE_BYTES = {"512KiB": 512 * 1024, "1MiB": 1024 * 1024, "64MiB": 64 * 1024 * 1024}
# Logical channel count of the space-side array (a multiple of 4, so every
# layout, NCHW_VECT_C included, takes the same logical shape).
CHANNELS = 16
VECT_C_LANES = 4


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def thread_count(threads) -> int:
    return usable_cores() if threads == "all" else int(threads)


# ---------------------------------------------------------------------------
# Shapes and cached inputs

def item_size(dtype: str) -> int:
    return np.dtype(dtype).itemsize


def _sides(n_items: int, n_sides: int, multiple: int) -> list[int]:
    """``n_sides`` extents, each a multiple of ``multiple`` (at least one such),
    about equal, whose product is close to ``n_items`` (never above it by
    more than the rounding of one side)."""
    side = max(multiple, round(n_items ** (1.0 / n_sides) / multiple) * multiple)
    sides = [side] * (n_sides - 1)
    last = n_items // max(1, side ** (n_sides - 1))
    sides.append(max(multiple, last // multiple * multiple))
    return sides


def space_logical_shape(rank: int, dtype: str, size: str) -> tuple[int, ...]:
    """[N, C, D1, ..., DK] of the space-side array: N = 1, C = 16, spatial
    extents multiples of 4 (so block sizes 2 and 4 divide them)."""
    n_spatial = rank - 2
    if size == "tiny":
        return (1, CHANNELS) + (4,) * n_spatial
    n_items = SIZE_BYTES[size] // item_size(dtype)
    return (1, CHANNELS) + tuple(_sides(n_items // CHANNELS, n_spatial, 4))


def physical_shape(logical: tuple[int, ...], layout: str) -> tuple[int, ...]:
    n, c, *spatial = logical
    if layout == "channels_first":
        return (n, c, *spatial)
    if layout == "channels_last":
        return (n, *spatial, c)
    return (n, c // VECT_C_LANES, *spatial, VECT_C_LANES)


def depth_logical_shape(space: tuple[int, ...], block_size: int) -> tuple[int, ...]:
    n, c, *spatial = space
    return (n, c * block_size ** len(spatial)) + tuple(s // block_size for s in spatial)


def tile_repeats(rank: int, pattern: str, factor: int) -> tuple[int, ...]:
    if pattern == "outer":
        return (factor,) + (1,) * (rank - 1)
    if pattern == "inner":
        return (1,) * (rank - 1) + (factor,)
    return (factor,) * rank


def tile_input_shape(rank: int, repeats: tuple[int, ...], dtype: str, size: str) -> tuple[int, ...]:
    """[1, C, ...] whose tiled result has about the size's bytes (tiny: 256 items)."""
    if size == "tiny":
        out_items = TINY_ITEMS
    else:
        out_items = SIZE_BYTES[size] // item_size(dtype)
    n_items = max(1, out_items // math.prod(repeats))
    channels = max(1, min(CHANNELS, n_items))
    return (1, channels) + tuple(_sides(n_items // channels, rank - 2, 1))


# 251 distinct values (a prime period, so a misplaced block shows).
_PERIOD = 251


@functools.lru_cache(maxsize=None)
def _pool(dtype: str) -> np.ndarray:
    if dtype == "object":
        return np.array([f"s{i:04d}" for i in range(_PERIOD)], dtype=object)
    if np.dtype(dtype).kind == "U":
        return np.array([f"s{i:04d}" for i in range(_PERIOD)], dtype=dtype)
    return np.arange(_PERIOD).astype(dtype)


def fill_periodic(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """A new C-contiguous array of ``shape`` holding 251 distinct values in
    turn, filled by doubling copies (fast for every dtype, object included)."""
    flat = np.empty(math.prod(shape), dtype=dtype)
    pool = _pool(dtype)
    head = min(flat.size, pool.size)
    flat[:head] = pool[:head]
    filled = head
    while filled < flat.size:
        step = min(filled, flat.size - filled)
        flat[filled:filled + step] = flat[:step]
        filled += step
    return flat.reshape(shape)


@functools.lru_cache(maxsize=4)
def cached_input(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """The input of a case, made once per process (asv re-runs ``setup``
    before every timed sample) and read-only, so no benchmark can change it."""
    x = fill_periodic(shape, dtype)
    x.flags.writeable = False
    return x


# ---------------------------------------------------------------------------
# NumPy's own way, as a NumPy user writes it at its best: split the axes with
# reshape (views), transpose (a view), and copy once. The reference formulas go
# through channels_first and copy a second time for channels_last and
# NCHW_VECT_C; timing them would flatter fastblock by a whole extra copy.

def _channels_to_front(layout: str, ndim: int) -> tuple[int, ...]:
    """Axis order that brings the channel axis (axes) right after N."""
    if layout == "channels_last":
        return (0, ndim - 1) + tuple(range(1, ndim - 1))
    if layout == "NCHW_VECT_C":
        return (0, 1, 4, 2, 3)  # [N, C/4, H, W, 4] -> [N, C/4, 4, H, W]
    return tuple(range(ndim))


class BlockRecipe:
    """NumPy's way for one SpaceToDepth/DepthToSpace case, worked out once
    from the shapes, so that a call is only reshape/transpose/copy.

    Both arrays are seen as views over the same named axes: the space array
    as ``[n, c.., d1, b1, ..., dK, bK]`` (NCHW_VECT_C's channel is two axes,
    group and lane), the depth array as ``[n, <channel axes>, d1, ..., dK]``
    whose channel axes are the block offsets and the space channel axes in
    the order ``mode`` gives them. ``order`` turns the first into the second.
    """

    def __init__(self, space_shape, depth_shape, layout: str, bs: int, mode: str):
        self.space_front = _channels_to_front(layout, len(space_shape))
        self.depth_front = _channels_to_front(layout, len(depth_shape))
        space = [space_shape[a] for a in self.space_front]
        depth = [depth_shape[a] for a in self.depth_front]
        n_channel_axes = 2 if layout == "NCHW_VECT_C" else 1
        lead = 1 + n_channel_axes
        channels = list(zip(["c", "lane"], space[1:lead]))
        self.space_split = list(space[:lead])
        space_names = ["n"] + [name for name, _ in channels]
        for k, extent in enumerate(space[lead:]):
            self.space_split += [extent // bs, bs]
            space_names += [f"d{k}", f"b{k}"]
        spatial = depth[lead:]
        blocks = [(f"b{k}", bs) for k in range(len(spatial))]
        parts = blocks + channels if mode == "blocks_first" else channels + blocks
        self.depth_split = [depth[0]] + [extent for _, extent in parts] + list(spatial)
        depth_names = ["n"] + [name for name, _ in parts] + [f"d{k}" for k in range(len(spatial))]
        self.order = [space_names.index(name) for name in depth_names]

    def space_view(self, a):
        return a.transpose(self.space_front).reshape(self.space_split).transpose(self.order)

    def depth_view(self, a):
        return a.transpose(self.depth_front).reshape(self.depth_split)

    def check_views(self, space: np.ndarray, depth: np.ndarray) -> None:
        """The reshapes must be views (a copy would write nowhere)."""
        for view, base in ((self.space_view(space), space), (self.depth_view(depth), depth)):
            if view.size and not np.may_share_memory(view, base):
                raise AssertionError(f"reshape of {base.shape} copied")

    def space_to_depth(self, x, out):
        """x: the space array; one strided copy (``np.copyto``) into ``out``."""
        np.copyto(self.depth_view(out), self.space_view(x))
        return out

    def depth_to_space(self, x, out):
        np.copyto(self.space_view(out), self.depth_view(x))
        return out


# ---------------------------------------------------------------------------
# Cases

class Case:
    """One benchmarked call: ``fastblock(out=None)`` and ``numpy(out=None)``
    return the result (into ``out`` when given); ``result_shape`` and
    ``dtype`` describe it."""

    def __init__(self, x, result_shape, fastblock_call, numpy_call, reference, numpy_has_out=True):
        self.x = x
        self.result_shape = tuple(result_shape)
        self.dtype = x.dtype
        self.result_nbytes = math.prod(self.result_shape) * x.dtype.itemsize
        self._fastblock = fastblock_call
        self._numpy = numpy_call
        self._reference = reference
        self.numpy_has_out = numpy_has_out

    def new_result(self):
        return np.empty(self.result_shape, dtype=self.dtype)

    def fastblock(self, out=None):
        return self._fastblock(self.x, out)

    def numpy(self, out=None):
        if not self.numpy_has_out:  # np.tile: always a new array
            return self._numpy(self.x, None)
        return self._numpy(self.x, self.new_result() if out is None else out)

    def check(self):
        """Raise when fastblock's or NumPy's-way result differs from the reference."""
        expected = self._reference(self.x)
        for name, got in (("fastblock", self.fastblock()), ("numpy", self.numpy())):
            if got.shape != expected.shape or got.dtype != expected.dtype \
                    or not np.array_equal(got, expected):
                raise AssertionError(f"{name} result differs from the reference")


_checked = set()


def checked(key, case: Case) -> Case:
    """Check small cases against the reference once per process (64 MiB ones
    would double the run time of the suite; the tests cover them)."""
    if key not in _checked and case.result_nbytes <= 4 * SIZE_BYTES["512KiB"]:
        case.check()
        _checked.add(key)
    return case


def block_case(op: str, mode: str, layout: str, rank: int, block_size: int, dtype: str,
               size: str, threads) -> Case:
    """A SpaceToDepth / DepthToSpace case; NotImplementedError for the
    combinations that do not exist (asv then shows them as skipped)."""
    if layout == "NCHW_VECT_C" and rank != 4:
        raise NotImplementedError("NCHW_VECT_C is 4-D only ([N, C/4, H, W, 4])")
    space = space_logical_shape(rank, dtype, size)
    depth = depth_logical_shape(space, block_size)
    space_shape = physical_shape(space, layout)
    depth_shape = physical_shape(depth, layout)
    n_threads = thread_count(threads)
    recipe = BlockRecipe(space_shape, depth_shape, layout, block_size, mode)
    if op == "space_to_depth":
        x = cached_input(space_shape, dtype)
        recipe.check_views(x, np.empty(depth_shape, dtype))

        def call(x, out):
            return fb.space_to_depth(x, block_size, mode, layout, out=out, num_threads=n_threads)

        case = Case(x, depth_shape, call, recipe.space_to_depth,
                    lambda x: reference.space_to_depth_ref(x, block_size, mode, layout))
    else:
        x = cached_input(depth_shape, dtype)
        recipe.check_views(np.empty(space_shape, dtype), x)

        def call(x, out):
            return fb.depth_to_space(x, block_size, mode, layout, out=out, num_threads=n_threads)

        case = Case(x, space_shape, call, recipe.depth_to_space,
                    lambda x: reference.depth_to_space_ref(x, block_size, mode, layout))
    return checked((op, mode, layout, rank, block_size, dtype, size, threads), case)


def speed_params(first):
    """Parameters of the speed benchmarks that vary one thing (``first``)
    beside item size, size and threads: float32 and uint8, 64 MiB, every
    core by default; every value under FASTBLOCK_ASV_FULL."""
    return [
        list(first),
        grid(["float32", "uint8"], ["uint8", "uint16", "float32", "float64"]),
        grid(["64MiB"], SIZES),
        grid(["all"], THREADS),
    ]


# Strided inputs: the same values, read from another memory order.
# contiguous: the reference; fortran: np.asfortranarray; channels_last_view:
# an NHWC array transposed to NCHW; stepped_inner: every other item of a
# twice-as-wide last axis (each source line read for half its bytes);
# stepped_channels: every other channel.
INPUT_ORDERS = ["contiguous", "fortran", "channels_last_view", "stepped_inner", "stepped_channels"]


def strided_copy(x: np.ndarray, order: str) -> np.ndarray:
    """``x``'s values laid out as ``order`` says, seen with ``x``'s shape."""
    if order == "contiguous":
        return x
    if order == "fortran":
        return np.asfortranarray(x)
    if order == "channels_last_view":
        return np.moveaxis(np.ascontiguousarray(np.moveaxis(x, 1, -1)), -1, 1)
    if order == "stepped_inner":
        wide = np.empty(x.shape[:-1] + (2 * x.shape[-1],), x.dtype)
        wide[..., ::2] = x
        return wide[..., ::2]
    if order == "stepped_channels":
        wide = np.empty((x.shape[0], 2 * x.shape[1]) + x.shape[2:], x.dtype)
        wide[:, ::2] = x
        return wide[:, ::2]
    raise ValueError(f"unknown input order {order!r}")


@functools.lru_cache(maxsize=2)
def _strided_input(shape: tuple[int, ...], dtype: str, order: str) -> np.ndarray:
    x = strided_copy(cached_input(shape, dtype), order)
    x.flags.writeable = False
    return x


def strided_block_case(op: str, order: str, dtype: str, size: str, threads) -> Case:
    """ONNX's default SpaceToDepth / DepthToSpace (blocks_first, NCHW, bs 2)
    of an input in memory order ``order``."""
    case = block_case(op, "blocks_first", "channels_first", 4, 2, dtype, size, threads)
    case.x = _strided_input(case.x.shape, dtype, order)
    return checked((op, "strided", order, dtype, size, threads), case)


# Transposes (fb.transpose): a square 2-D matrix, NCHW <-> NHWC (16
# channels), RGB pixels to planes and back (HWC <-> CHW, 3 channels), and a
# Fortran-order NCHW array into C order (the identity axes).
TRANSPOSE_PATTERNS = ["2-D", "NCHW->NHWC", "NHWC->NCHW", "HWC->CHW", "CHW->HWC", "fortran->C"]


def transpose_case(pattern: str, dtype: str, size: str, threads) -> Case:
    items = TINY_ITEMS if size == "tiny" else SIZE_BYTES[size] // np.dtype(dtype).itemsize
    if pattern == "2-D":
        side = max(1, math.isqrt(items))
        shape, axes = (side, side), (1, 0)
    elif pattern in ("HWC->CHW", "CHW->HWC"):
        side = max(1, math.isqrt(items // 3))
        shape, axes = ((side, side, 3), (2, 0, 1)) if pattern == "HWC->CHW" else ((3, side, side), (1, 2, 0))
    else:
        side = max(1, math.isqrt(items // 64))
        shape, axes = (4, 16, side, side), (0, 2, 3, 1)
        if pattern == "NHWC->NCHW":
            shape, axes = (4, side, side, 16), (0, 3, 1, 2)
        elif pattern == "fortran->C":
            axes = (0, 1, 2, 3)
    x = cached_input(shape, dtype)
    if pattern == "fortran->C":
        x = np.asfortranarray(x)
        x.flags.writeable = False
    return checked(("transpose", pattern, dtype, size, threads), _axes_case(x, axes, threads))


def planes_case(side: int, channels: int, dtype: str, threads) -> Case:
    """Channels-last pixels [1, side, side, channels] split into planes
    (NHWC -> NCHW) in cache: at a power-of-two side every plane starts in
    the same L1 set (the lane kernel's line splits)."""
    x = cached_input((1, side, side, channels), dtype)
    return checked(("planes", side, channels, dtype, threads), _axes_case(x, (0, 3, 1, 2), threads))


def _axes_case(x: np.ndarray, axes, threads) -> Case:
    """fb.transpose of ``x`` by ``axes`` on ``threads``, and NumPy's way."""
    n_threads = thread_count(threads)

    def call(x, out):
        return fb.transpose(x, axes, out=out, num_threads=n_threads)

    def numpy_way(x, out):
        np.copyto(out, np.transpose(x, axes))
        return out

    return Case(x, tuple(x.shape[a] for a in axes), call, numpy_way,
                lambda x: np.ascontiguousarray(np.transpose(x, axes)))


def tile_case(rank: int, pattern: str, factor: int, dtype: str, size: str, threads) -> Case:
    repeats = tile_repeats(rank, pattern, factor)
    shape = tile_input_shape(rank, repeats, dtype, size)
    x = cached_input(shape, dtype)
    n_threads = thread_count(threads)
    result_shape = tuple(s * r for s, r in zip(shape, repeats))

    def call(x, out):
        return fb.tile(x, repeats, out=out, num_threads=n_threads)

    case = Case(x, result_shape, call, lambda x, out: np.tile(x, repeats),
                lambda x: np.tile(x, repeats), numpy_has_out=False)
    return checked(("tile", rank, pattern, factor, dtype, size, threads), case)


def pixel_tile_case(pixel: str, repeats: int, size: str, threads) -> Case:
    """Tile of channels-last pixels along the last axis: [H, W, C] by (1, 1,
    ``repeats``), ``pixel`` "dtype x C" (items of C * itemsize bytes, most
    of them no register's width), the result about the size's bytes."""
    dtype, channels = pixel.split("x")
    channels = int(channels)
    pixels = max(1, SIZE_BYTES[size] // (channels * repeats * item_size(dtype)))
    height, width = _sides(pixels, 2, 1)
    shape = (height, width, channels)
    reps = (1, 1, repeats)
    x = cached_input(shape, dtype)
    n_threads = thread_count(threads)

    def call(x, out):
        return fb.tile(x, reps, out=out, num_threads=n_threads)

    case = Case(x, (height, width, channels * repeats), call, lambda x, out: np.tile(x, reps),
                lambda x: np.tile(x, reps), numpy_has_out=False)
    return checked(("pixel tile", pixel, repeats, size, threads), case)


# ---------------------------------------------------------------------------
# Timing for the derived figures

def interleaved_medians(functions, rounds=7, min_seconds=2e-3):
    """Median seconds per call of each function, run round-robin (see
    ``fastblock/_timing.py``). Under FASTBLOCK_ASV_QUICK each function is
    called and timed once, with no warm-up: a smoke run only checks that the
    figure can be computed."""
    if QUICK:
        return {name: timing.seconds_once(fn) for name, fn in functions.items()}
    return timing.interleaved_medians(functions, rounds, min_seconds)


def call_and_copy_seconds(call, nbytes: int):
    """(seconds per ``call()``, seconds per copy of ``nbytes``), interleaved."""
    times = interleaved_medians({"call": call, "copy": timing.copy_ceiling(nbytes)})
    return times["call"], times["copy"]


def allocated_over_result(call, result_nbytes: int) -> float:
    """Peak bytes allocated during ``call()`` over ``result_nbytes``."""
    tracemalloc.start()
    try:
        result = call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del result
    return peak / max(1, result_nbytes)


# ---------------------------------------------------------------------------
# Base classes: a benchmark class sets ``params``/``param_names`` and
# ``make_case(*params)``. Names start with ``_`` so asv does not collect them
# from this module; it collects their methods in the subclasses.

class _CaseBench:
    """A benchmark of the Case that ``make_case`` builds from the parameters."""

    timeout = 300.0

    def make_case(self, *params) -> Case:
        raise NotImplementedError

    def setup(self, *params):
        self.case = self.make_case(*params)


class _FastblockBench(_CaseBench):
    """fastblock's call: time, GB/s and time over the copy ceiling."""

    def setup(self, *params):
        super().setup(*params)
        self.out = None

    def time_call(self, *params):
        """A call as users make it: a fresh result array each time."""
        self.case.fastblock()

    def _into_out(self):
        if self.out is None:
            self.out = self.case.new_result()
        out = self.out
        return lambda: self.case.fastblock(out)

    def track_gbps(self, *params):
        seconds, _ = call_and_copy_seconds(self._into_out(), self.case.result_nbytes)
        return self.case.result_nbytes / seconds / 1e9

    track_gbps.unit = "GB/s"

    def track_vs_copy(self, *params):
        seconds, copy_seconds = call_and_copy_seconds(self._into_out(), self.case.result_nbytes)
        return seconds / copy_seconds

    track_vs_copy.unit = "time / copy time"


class _NumpyBench(_FastblockBench):
    """NumPy's own way for the same cases (one thread: no ``threads`` param)."""

    def time_call(self, *params):
        self.case.numpy()

    def _into_out(self):
        if self.out is None and self.case.numpy_has_out:
            self.out = self.case.new_result()
        out = self.out
        return lambda: self.case.numpy(out)


class _MemoryBench(_CaseBench):
    """Peak memory and allocations of one call, fastblock and NumPy's way."""

    def peakmem_fastblock(self, *params):
        self.case.fastblock()

    def peakmem_numpy(self, *params):
        self.case.numpy()

    def track_alloc_fastblock(self, *params):
        return allocated_over_result(self.case.fastblock, self.case.result_nbytes)

    track_alloc_fastblock.unit = "allocated / result bytes"

    def track_alloc_numpy(self, *params):
        return allocated_over_result(self.case.numpy, self.case.result_nbytes)

    track_alloc_numpy.unit = "allocated / result bytes"


# ---------------------------------------------------------------------------
# The SpaceToDepth and DepthToSpace suites: the same grids for both
# operators. ``bench_space_to_depth`` and ``bench_depth_to_space`` subclass
# these, setting ``op``.

BLOCK_GRID_NAMES = ["mode", "layout", "rank", "block_size", "dtype", "size", "threads"]
BLOCK_GRID = [
    MODES,
    LAYOUTS,
    RANKS,
    BLOCK_SIZES,
    grid(["float32"], DTYPES),
    grid(["64MiB"], SIZES),
    THREADS,
]
# The dtype sweeps (block operators and Tile): every item size at every size.
DTYPE_NAMES = ["dtype", "size", "threads"]
DTYPE_GRID = [DTYPES, SIZES, THREADS]
# The fixed arguments of the block operators' dtype sweep: ONNX's default
# layout and mode.
BLOCK_DTYPE_FIXED = dict(mode="blocks_first", layout="channels_first", rank=4, block_size=2)


class _BlockGrid(_FastblockBench):
    """The grid: mode x layout x rank x block size x dtype x size x threads."""

    op = ""
    param_names = BLOCK_GRID_NAMES
    params = BLOCK_GRID

    def make_case(self, mode, layout, rank, block_size, dtype, size, threads):
        return block_case(self.op, mode, layout, rank, block_size, dtype, size, threads)


class _BlockGridNumPy(_NumpyBench):
    op = ""
    param_names = BLOCK_GRID_NAMES[:-1]
    params = BLOCK_GRID[:-1]

    def make_case(self, mode, layout, rank, block_size, dtype, size):
        return block_case(self.op, mode, layout, rank, block_size, dtype, size, 1)


# In-cache block operators of square power-of-two images (1 MiB: [1, 16,
# 128, 128] float32, [1, 16, 256, 256] uint8), whose planes lie whole L1
# ways apart at bs 4 (rows_across_groups in fastblock/_engine/plan/lanes.pxi).
BLOCK_IN_CACHE_NAMES = ["mode", "block_size", "dtype", "threads"]
BLOCK_IN_CACHE = [MODES, BLOCK_SIZES, ["uint8", "float32"], THREADS]


class _BlockInCache(_FastblockBench):
    op = ""
    param_names = BLOCK_IN_CACHE_NAMES
    params = BLOCK_IN_CACHE

    def make_case(self, mode, block_size, dtype, threads):
        return block_case(self.op, mode, "channels_first", 4, block_size, dtype, "1MiB", threads)


class _BlockDtypes(_FastblockBench):
    op = ""
    param_names = DTYPE_NAMES
    params = DTYPE_GRID

    def make_case(self, dtype, size, threads):
        return block_case(self.op, dtype=dtype, size=size, threads=threads, **BLOCK_DTYPE_FIXED)


class _BlockDtypesNumPy(_NumpyBench):
    op = ""
    param_names = DTYPE_NAMES[:-1]
    params = DTYPE_GRID[:-1]

    def make_case(self, dtype, size):
        return block_case(self.op, dtype=dtype, size=size, threads=1, **BLOCK_DTYPE_FIXED)


class _BlockMemory(_MemoryBench):
    op = ""
    param_names = ["mode", "layout", "rank", "block_size", "dtype"]
    params = [
        grid(["blocks_first"], MODES),
        LAYOUTS,
        grid([4], RANKS),
        grid([2], BLOCK_SIZES),
        grid(["uint8", "float32", "U5", "object"], DTYPES),
    ]

    def make_case(self, mode, layout, rank, block_size, dtype):
        return block_case(self.op, mode, layout, rank, block_size, dtype, "64MiB", 1)
