"""Differential stress harness: random calls of every operator, each result
compared byte for byte with NumPy, with every engine path forced on and off.

Each case is drawn from ``numpy.random.default_rng([seed, index])``, so a
case is named by its seed and index alone. Its shapes are drawn to straddle
the sizes at which the planner switches paths (read from
``fastblock._engine.thresholds()``, never copied here): run lengths around
the shuffle pieces, the gather tables, the lane and pair minimums; copy
sizes around the shuffle, thread, unfold, fault-ahead and streaming
thresholds. ``rearrange`` and ``repeat`` get random einops patterns over
such lengths (einops_patterns.py, which holds their NumPy reference).
Each case runs several times: once with the engine's defaults,
then under random settings of its knobs (byte shuffles off / 16-byte /
64-byte / periodic / long runs, forced at any size; streaming forced or
off; fault ahead forced, with the calling thread's hand-over on or off;
threads forced at any size; the NCHW_VECT_C paths; prefetch; the thread
policy off, or every team's last helper made late so that teams shrink and
are probed again; the front doors' fast path off, so the call takes the
general path), with 1 to 3 threads. Where the fast path is on, each run
calls twice: the second call runs from the fast path's cache
(``--fast-path on|off`` forces it for every run). Sources and ``out=``
arrays are views (C, Fortran, permuted,
stepped, reversed, byte-offset so unaligned) placed flush against an
inaccessible page at their first or last byte, so a load or store outside
them faults at once. Checked for every run: the result's bytes, shape and
dtype, every byte of ``out``'s buffer outside the view, and the source's
buffer.

    python tests/stress/stress.py --seconds 1800           # seeds from the commit, then on
    python tests/stress/stress.py --seconds 300 --seed 7 --jobs 2
    python tests/stress/stress.py --seconds 60 --python-threads 4   # calls from 4 threads at once
    python tests/stress/stress.py --replay 7:1234:2        # one run of one case, verbosely

With ``--python-threads N`` each worker calls from N threads at once
while a tuner thread keeps drawing new knobs (process-wide settings),
which free-threaded Python runs truly in parallel.

A failure prints a ``--replay`` line for the run. Cases run in worker
processes: a crash is reported with the run it happened in, and the
harness goes on with the next case. Exit status 1 if anything failed.
"""
from __future__ import annotations

import argparse
import ctypes
import math
import mmap
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Callable

import ml_dtypes
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
# tests/, which holds the reference (this file runs as a script too).
TESTS = os.path.dirname(HERE)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

import fastblock as fb  # noqa: E402
from fastblock import _engine  # noqa: E402
from fastblock._call import fastpath as _fastpath  # noqa: E402
from reference import (  # noqa: E402
    batch_to_space_ref, converted_ref, depth_to_space_ref, space_to_batch_ref, space_to_depth_ref)
from einops_patterns import draw_pattern  # noqa: E402

THRESHOLDS = _engine.thresholds()
PAGE = mmap.PAGESIZE
# The largest result a case asks for: large enough to pass the streaming
# threshold, small enough for many cases a minute on two cores.
MAX_CASE_BYTES = THRESHOLDS["stream_min_bytes"] * 3 // 2
# Copy sizes the planner switches at, in bytes: the cases' sizes are drawn
# around these.
SIZE_THRESHOLDS = [THRESHOLDS[name] for name in (
    "small_block_bytes", "block_bytes", "shuffle_min_bytes", "parallel_min_bytes",
    "unfold_short_min_bytes", "vect_c_block_bytes", "fault_ahead_min_bytes",
    "stream_min_bytes")]

# Item sizes 1 to 16 and wider ones; each dtype's bytes are random.
DTYPES = ["u1", "i1", "i2", "f2", "V3", "S3", "f4", "i4", "V5", "S6", "V6", "f8", "c8", "V9",
          "S12", "V12", "c16", "V16", "U5", "S24", "V33", "U16"]
# Thread counts a run draws from (--threads widens them on larger machines).
THREAD_CHOICES = [1, 2, 3]
# Reference-holding items take the fallback; drawn now and then.
OBJECT_SHARE = 0.03
# Cases that convert (dtype=, scale=, offset=), from and to these dtypes.
CONVERT_SHARE = float(os.environ.get("FASTBLOCK_STRESS_CONVERT_SHARE", "0.2"))
CONVERT_SOURCES = [np.dtype(t) for t in ("?", "u1", "i1", "u2", "i2", "u4", "i4", "u8", "i8",
                                         "f2", "f4", "f8")] + [np.dtype(ml_dtypes.bfloat16)]
CONVERT_RESULTS = [np.dtype(t) for t in ("f2", "f4", "f8", "u1", "i1", "u2", "i2")] + [
    np.dtype(ml_dtypes.bfloat16)]
# Repeat counts users write (2-5, 8, and 16 +- 1: a 16-byte piece of
# one-byte items), drawn beside lengths around the switch points.
REPEAT_COUNTS = [2, 3, 4, 5, 8, 15, 16, 17]


# --------------------------------------------------------------------------
# Memory: arrays against an inaccessible page
# --------------------------------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
if _libc is not None:
    _libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def guarded_bytes(nbytes: int, flush_end: bool) -> np.ndarray:
    """``nbytes`` uint8s in a fresh anonymous mapping, between two
    inaccessible pages, touching the one after them (``flush_end``) or the
    one before. The mapping lives as long as the array (and its views)."""
    body = max(1, -(-nbytes // PAGE)) * PAGE
    mapping = mmap.mmap(-1, body + 2 * PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    whole = np.frombuffer(mapping, np.uint8)
    if _libc is not None:
        base = whole.ctypes.data
        for address in (base, base + PAGE + body):
            if _libc.mprotect(address, PAGE, 0) != 0:
                raise OSError(ctypes.get_errno(), "mprotect failed")
    start = PAGE + body - nbytes if flush_end else PAGE
    return whole[start:start + nbytes]


@dataclass
class Layout:
    """How an array of a given shape lies in memory."""

    order: tuple          # axes from the outermost in memory to the innermost
    steps: tuple          # per axis: the view takes every steps[axis]-th item
    reversed_axes: tuple  # per axis: True for a negative step
    byte_offset: int      # extra bytes before the first item (unaligned if not a multiple)
    flush_end: bool       # the buffer touches the page after it (else the one before)

    def describe(self) -> str:
        parts = []
        if self.order != tuple(range(len(self.order))):
            parts.append("order=" + ",".join(map(str, self.order)))
        if any(s != 1 for s in self.steps):
            parts.append("steps=" + ",".join(map(str, self.steps)))
        if any(self.reversed_axes):
            parts.append("reversed=" + ",".join(str(i) for i, r in enumerate(self.reversed_axes) if r))
        if self.byte_offset:
            parts.append(f"offset={self.byte_offset}")
        parts.append("guard=end" if self.flush_end else "guard=start")
        return " ".join(parts) or "C"


def draw_layout(rng, ndim: int, itemsize: int, plain: bool = False) -> Layout:
    if plain or ndim == 0:
        order = tuple(range(ndim))
        steps = (1,) * ndim
        reversed_axes = (False,) * ndim
    else:
        kind = rng.random()
        if kind < 0.5:
            order = tuple(range(ndim))
        elif kind < 0.65:
            order = tuple(range(ndim - 1, -1, -1))
        else:
            order = tuple(int(a) for a in rng.permutation(ndim))
        steps = tuple(int(rng.choice([2, 3])) if rng.random() < 0.15 else 1 for _ in range(ndim))
        reversed_axes = tuple(bool(rng.random() < 0.1) for _ in range(ndim))
    byte_offset = 0
    if not plain and rng.random() < 0.25:
        byte_offset = int(rng.integers(0, 4)) * itemsize
        if itemsize > 1 and rng.random() < 0.5:
            byte_offset += int(rng.integers(1, itemsize))
    return Layout(order, steps, reversed_axes, byte_offset, bool(rng.random() < 0.5))


def place(shape, dtype: np.dtype, layout: Layout, fill_rng) -> tuple[np.ndarray, np.ndarray]:
    """A view of ``shape`` laid out as ``layout`` in a guarded buffer whose
    bytes are random, and that buffer (its first and last bytes are the
    view's extreme ones)."""
    ndim = len(shape)
    itemsize = dtype.itemsize
    # Memory extents: the view's items are steps apart, the extreme ones at
    # the ends.
    mem_shape = [(shape[a] - 1) * layout.steps[a] + 1 if shape[a] else 0 for a in layout.order]
    n_items = math.prod(mem_shape)
    nbytes = layout.byte_offset + n_items * itemsize
    buffer = guarded_bytes(nbytes, layout.flush_end)
    # Random bytes, but a bool's only 0 or 1 (NumPy's bools hold no others).
    buffer[...] = fill_rng.integers(0, 2 if dtype == np.bool_ else 256, nbytes, dtype=np.uint8)
    strides = [0] * ndim
    step = itemsize
    for position in range(ndim - 1, -1, -1):
        strides[position] = step
        step *= max(mem_shape[position], 1)
    base = np.ndarray(mem_shape, dtype, buffer=buffer, offset=layout.byte_offset, strides=strides)
    index = []
    for position, axis in enumerate(layout.order):
        s = layout.steps[axis]
        index.append(slice(None, None, -s) if layout.reversed_axes[axis] else slice(None, None, s))
    if n_items == 0:
        return np.ndarray(shape, dtype, buffer=buffer, offset=layout.byte_offset), buffer
    view = base[tuple(index)] if ndim else base
    # Back to logical axis order: memory position p holds axis order[p].
    view = view.transpose(np.argsort(layout.order)) if ndim else view
    assert view.shape == tuple(shape), (view.shape, shape)
    return view, buffer


def same_geometry(view: np.ndarray, buffer: np.ndarray, other_buffer: np.ndarray) -> np.ndarray:
    """``view`` (a view of ``buffer``) as a view of ``other_buffer``."""
    offset = view.__array_interface__["data"][0] - buffer.__array_interface__["data"][0]
    return np.ndarray(view.shape, view.dtype, buffer=other_buffer, offset=offset, strides=view.strides)


def raw_bytes(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


# --------------------------------------------------------------------------
# Shapes around the planner's switch points
# --------------------------------------------------------------------------

def draw_extent(rng, itemsize: int) -> int:
    """An axis length: small, or next to a count where the planner switches
    (shuffle pieces, gather tables, lane minimums), or longer."""
    kind = rng.random()
    near = int(rng.integers(-1, 2))
    if kind < 0.4:
        return int(rng.integers(1, 13))
    if kind < 0.6:
        piece = int(rng.choice([THRESHOLDS["shuffle_piece_bytes"], THRESHOLDS["wide_shuffle_piece_bytes"]]))
        return max(1, int(rng.integers(1, 5)) * max(1, piece // itemsize) + near)
    if kind < 0.75:
        return max(1, THRESHOLDS["gather_max_items"] // int(rng.integers(1, 9)) + near)
    if kind < 0.85:
        return max(1, int(rng.choice([THRESHOLDS["weave_min_run"], THRESHOLDS["pair_min_pixels"],
                                      THRESHOLDS["lane_group"]])) + near)
    return int(rng.integers(13, 400))


def draw_bytes(rng) -> int:
    """A result size: small, around one of the planner's size thresholds,
    or anywhere up to a few MiB."""
    kind = rng.random()
    if kind < 0.3:
        return int(rng.integers(1, 4096))
    if kind < 0.8:
        threshold = int(rng.choice(SIZE_THRESHOLDS))
        return max(1, int(threshold * math.exp(rng.uniform(-0.4, 0.4))))
    return int(math.exp(rng.uniform(math.log(4096), math.log(4 << 20))))


def shrink(values: list, limit: int) -> list:
    """``values`` with the largest halved until their product is at most
    ``limit``."""
    values = list(values)
    while values and math.prod(values) > max(limit, 1):
        i = int(np.argmax(values))
        if values[i] == 1:
            break
        values[i] = (values[i] + 1) // 2
    return values


def fit_axis(shape: list, axis: int, itemsize: int, target_bytes: int, multiple: int = 1) -> None:
    """Set ``shape[axis]`` (a multiple of ``multiple``) so the array has
    about ``target_bytes`` bytes, within MAX_CASE_BYTES."""
    rest = math.prod(s for i, s in enumerate(shape) if i != axis) * itemsize
    if rest == 0:
        return
    n = max(1, target_bytes // (rest * multiple))
    n = min(n, max(1, MAX_CASE_BYTES // (rest * multiple)))
    shape[axis] = n * multiple


# --------------------------------------------------------------------------
# Operators and their references
# --------------------------------------------------------------------------

@dataclass
class Case:
    name: str
    shape: tuple
    dtype: np.dtype
    call: Callable          # call(x, out, num_threads) -> result
    reference: Callable     # reference(x) -> expected (any layout)
    result_shape: tuple
    text: str = ""
    result_dtype: np.dtype | None = None   # a conversion's (dtype=), else the source's

    @property
    def out_dtype(self) -> np.dtype:
        return self.dtype if self.result_dtype is None else self.result_dtype


def _block_shapes(rng, itemsize, layout_name, bs, rank, target):
    """A space shape for SpaceToDepth (DepthToSpace's result) and the
    matching depth shape."""
    if layout_name == "NCHW_VECT_C":
        n, groups = 1, int(rng.integers(1, 5))
        spatial = shrink([int(max(1, draw_extent(rng, itemsize) // bs)) for _ in range(2)],
                         MAX_CASE_BYTES // (itemsize * bs * bs * 4 * groups))
        space = [n, groups] + [s * bs for s in spatial] + [4]
        fit_axis(space, 0 if rng.random() < 0.6 else 2, itemsize, target, 1 if rng.random() < 0.6 else bs)
        if space[2] % bs:
            space[2] -= space[2] % bs
        depth = [space[0], groups * bs * bs, space[2] // bs, space[3] // bs, 4]
        return space, depth
    k = rank - 2
    channels = int(rng.choice([1, 2, 3, 4, 5, 8, 16])) if rng.random() < 0.7 else draw_extent(rng, itemsize)
    spatial = [max(1, draw_extent(rng, itemsize) // bs) for _ in range(k)]
    if k >= 3:
        spatial = [min(s, 12) for s in spatial]
    channels, *spatial = shrink([channels] + spatial, MAX_CASE_BYTES // (itemsize * bs ** k))
    whole_ways = layout_name == "channels_first" and rng.random() < 0.3
    if whole_ways:
        spatial = _blocks_of_whole_ways(rng, itemsize, k)
        channels = max(1, min(channels, MAX_CASE_BYTES // (itemsize * bs ** k * math.prod(spatial))))
    n = 1
    if layout_name == "channels_first":
        space = [n, channels] + [s * bs for s in spatial]
        depth = [n, channels * bs ** k] + spatial
        axis = 0 if whole_ways or rng.random() < 0.5 else 2
    else:
        space = [n] + [s * bs for s in spatial] + [channels]
        depth = [n] + spatial + [channels * bs ** k]
        axis = 0 if rng.random() < 0.5 else 1
    space_shape = list(space)
    fit_axis(space_shape, axis, itemsize, target, 1 if axis == 0 else bs)
    if axis == 0:
        depth[0] = space_shape[0]
    else:
        depth[axis] = space_shape[axis] // bs
    return space_shape, depth


def _blocks_of_whole_ways(rng, itemsize, k):
    """``k`` block counts (powers of two) whose planes are 4 or 8 KiB: the
    rows of a channels-first lane transpose's groups then share L1 sets
    (rows_across_groups)."""
    items = 4096 // itemsize * int(rng.choice([1, 2]))
    spatial = [1] * k
    for i in range(k - 1, 0, -1):
        spatial[i] = min(items, 1 << int(rng.integers(0, 8)))
        items //= spatial[i]
    spatial[0] = items
    return spatial


def case_block(rng, dtype, to_depth: bool) -> Case:
    layout_name = str(rng.choice(["channels_first", "channels_last", "NCHW_VECT_C"], p=[0.4, 0.4, 0.2]))
    mode = str(rng.choice(["blocks_first", "depth_first"]))
    bs = int(rng.choice([1, 2, 2, 2, 3, 3, 4, 5]))
    rank = 5 if layout_name == "NCHW_VECT_C" else int(rng.choice([3, 4, 4, 4, 5, 6]))
    space, depth = _block_shapes(rng, dtype.itemsize, layout_name, bs, rank, draw_bytes(rng))
    if to_depth:
        def call(x, out, threads, **convert):
            return fb.space_to_depth(x, bs, mode, layout_name, out=out, num_threads=threads, **convert)
        return Case("space_to_depth", tuple(space), dtype, call,
                    lambda x: space_to_depth_ref(x, bs, mode, layout_name), tuple(depth),
                    f"fb.space_to_depth(x, {bs}, {mode!r}, {layout_name!r})")

    def call(x, out, threads, **convert):
        return fb.depth_to_space(x, bs, mode, layout_name, out=out, num_threads=threads, **convert)
    return Case("depth_to_space", tuple(depth), dtype, call,
                lambda x: depth_to_space_ref(x, bs, mode, layout_name), tuple(space),
                f"fb.depth_to_space(x, {bs}, {mode!r}, {layout_name!r})")


def _any_shape(rng, itemsize, rank, target, growth=1):
    """A shape of about ``target`` bytes whose result, ``growth`` times
    larger, stays within MAX_CASE_BYTES."""
    shape = shrink([draw_extent(rng, itemsize) if rng.random() < 0.7 else int(rng.integers(1, 4))
                    for _ in range(rank)], MAX_CASE_BYTES // (itemsize * growth))
    if rank:
        fit_axis(shape, int(rng.integers(0, rank)), itemsize, min(target, MAX_CASE_BYTES // growth))
    return shape


def _planes_of_whole_ways(rng, itemsize):
    """[N, H, W, C] pixels whose channel planes are whole 4 KiB ways (1, 2
    or 4 of them) and more than 8 channels: split into planes, every lane
    of the transpose shares one L1 set (splits_by_lines)."""
    pixels = 4096 // itemsize << int(rng.integers(0, 3))
    width = 1 << int(rng.integers(0, pixels.bit_length()))
    channels = int(rng.choice([9, 12, 16, 17, 32, 64, 75, 128, 256]))
    channels = min(channels, 256 // itemsize)
    n = max(1, min(int(rng.integers(1, 4)), MAX_CASE_BYTES // (pixels * channels * itemsize)))
    return [n, pixels // width, width, channels]


def case_transpose(rng, dtype) -> Case:
    rank = int(rng.choice([0, 1, 2, 2, 3, 3, 4, 4, 5, 6]))
    shape = _any_shape(rng, dtype.itemsize, rank, draw_bytes(rng))
    if rank and rng.random() < 0.05:
        shape[int(rng.integers(0, rank))] = 0
    axes = tuple(int(a) for a in rng.permutation(rank))
    if dtype.itemsize <= 8 and rng.random() < 0.15:
        shape, axes = _planes_of_whole_ways(rng, dtype.itemsize), (0, 3, 1, 2)

    def call(x, out, threads, **convert):
        return fb.transpose(x, axes, out=out, num_threads=threads, **convert)
    return Case("transpose", tuple(shape), dtype, call, lambda x: np.transpose(x, axes),
                tuple(shape[a] for a in axes), f"fb.transpose(x, {axes})")


def case_tile(rng, dtype) -> Case:
    rank = int(rng.choice([0, 1, 2, 3, 3, 4, 5, 6]))
    n_reps = max(0, rank + int(rng.integers(-1, 2)))
    # The repeats alone may make the result large: at most MAX_CASE_BYTES.
    reps = [int(rng.choice([1, 1, 1, 2, 2, 3, 4, 5, 8, 17, 40])) for _ in range(n_reps)]
    reps = tuple(shrink(reps, MAX_CASE_BYTES // dtype.itemsize))
    if reps and rng.random() < 0.05:
        reps = tuple(0 if i == 0 else r for i, r in enumerate(reps))
    target = max(1, draw_bytes(rng) // max(1, math.prod(reps)))
    shape = _any_shape(rng, dtype.itemsize, rank, target, max(1, math.prod(reps)))
    result_shape = _tile_shape(shape, reps)

    def call(x, out, threads, **convert):
        return fb.tile(x, reps, out=out, num_threads=threads, **convert)
    return Case("tile", tuple(shape), dtype, call, lambda x: np.tile(x, reps), result_shape,
                f"fb.tile(x, {reps})")


def _tile_shape(shape, reps):
    n = max(len(shape), len(reps))
    shape = (1,) * (n - len(shape)) + tuple(shape)
    reps = (1,) * (n - len(reps)) + tuple(reps)
    return tuple(s * r for s, r in zip(shape, reps))


def _pixel_ref(x, r, channels_last, to_depth):
    lead = x.shape[:-3]
    n = len(lead)
    lead_axes = list(range(n))
    if not to_depth:                      # pixel_shuffle
        if channels_last:
            h, w, c = x.shape[-3:]
            y = x.reshape(*lead, h, w, c // (r * r), r, r)
            order = lead_axes + [n, n + 3, n + 1, n + 4, n + 2]
            return y.transpose(order).reshape(*lead, h * r, w * r, c // (r * r))
        c, h, w = x.shape[-3:]
        y = x.reshape(*lead, c // (r * r), r, r, h, w)
        order = lead_axes + [n, n + 3, n + 1, n + 4, n + 2]
        return y.transpose(order).reshape(*lead, c // (r * r), h * r, w * r)
    if channels_last:                     # pixel_unshuffle
        h, w, c = x.shape[-3:]
        y = x.reshape(*lead, h // r, r, w // r, r, c)
        order = lead_axes + [n, n + 2, n + 4, n + 1, n + 3]
        return y.transpose(order).reshape(*lead, h // r, w // r, c * r * r)
    c, h, w = x.shape[-3:]
    y = x.reshape(*lead, c, h // r, r, w // r, r)
    order = lead_axes + [n, n + 2, n + 4, n + 1, n + 3]
    return y.transpose(order).reshape(*lead, c * r * r, h // r, w // r)


def case_pixel(rng, dtype, to_depth: bool) -> Case:
    r = int(rng.choice([1, 2, 2, 3, 4]))
    fmt = str(rng.choice(["channels_first", "channels_last"]))
    channels_last = fmt == "channels_last"
    n_lead = int(rng.choice([0, 1, 1, 2, 3]))
    lead = [int(rng.integers(1, 4)) for _ in range(n_lead)]
    c = int(rng.choice([1, 2, 3, 4, 8])) if rng.random() < 0.7 else draw_extent(rng, dtype.itemsize)
    h = max(1, draw_extent(rng, dtype.itemsize) // r)
    w = max(1, draw_extent(rng, dtype.itemsize) // r)
    c, h, w = shrink([c, h, w], MAX_CASE_BYTES // (dtype.itemsize * r * r * math.prod(lead)))
    if to_depth:     # pixel_unshuffle: space in
        core = [h * r, w * r, c] if channels_last else [c, h * r, w * r]
    else:
        core = [h, w, c * r * r] if channels_last else [c * r * r, h, w]
    shape = lead + core
    axis = 0 if lead and rng.random() < 0.5 else len(lead) + (0 if channels_last else 1)
    fit_axis(shape, axis, dtype.itemsize, draw_bytes(rng), 1 if axis < len(lead) else r)
    name = "pixel_unshuffle" if to_depth else "pixel_shuffle"
    function = fb.pixel_unshuffle if to_depth else fb.pixel_shuffle
    result_shape = _pixel_ref(np.empty(shape, np.uint8), r, channels_last, to_depth).shape

    def call(x, out, threads, **convert):
        return function(x, r, fmt, out=out, num_threads=threads, **convert)
    return Case(name, tuple(shape), dtype, call, lambda x: _pixel_ref(x, r, channels_last, to_depth),
                result_shape, f"fb.{name}(x, {r}, {fmt!r})")


def case_batch(rng, dtype, to_batch: bool) -> Case:
    rank = int(rng.choice([2, 3, 4, 4, 5]))
    block = [1] + [int(rng.choice([1, 2, 2, 3, 4])) for _ in range(rank - 1)]
    core = [max(1, draw_extent(rng, dtype.itemsize) // 2) if rng.random() < 0.7 else int(rng.integers(1, 6))
            for _ in range(rank - 1)]
    if rank >= 4:
        core = [min(c, 24) for c in core]
    core = shrink(core, MAX_CASE_BYTES // (dtype.itemsize * 4 * math.prod(block)))
    if to_batch:
        begin = [0] + [int(rng.integers(0, b + 1)) if rng.random() < 0.5 else 0 for b in block[1:]]
        end = [0] * rank
        for i in range(1, rank):
            total = begin[i] + core[i - 1]
            end[i] = (-total) % block[i] + (block[i] if rng.random() < 0.2 else 0)
        shape = [1] + core
        growth = -(-math.prod(b + c + e for b, c, e in zip(begin[1:], core, end[1:])) // math.prod(core))
        fit_axis(shape, 0, dtype.itemsize, min(draw_bytes(rng), MAX_CASE_BYTES) // growth)
        return _batch_case("space_to_batch", space_to_batch_ref, shape, dtype, block, begin, end)
    batch = [1]
    fit_axis(batch + core, 0, dtype.itemsize, draw_bytes(rng))
    shape = [max(1, batch[0]) * math.prod(block)] + core
    fit_axis(shape, 0, dtype.itemsize, draw_bytes(rng), math.prod(block))
    begin, end = [0], [0]
    for i in range(1, rank):
        full = core[i - 1] * block[i]
        b = int(rng.integers(0, min(full, block[i]) + 1)) if rng.random() < 0.5 else 0
        e = int(rng.integers(0, min(full - b, block[i]) + 1)) if rng.random() < 0.5 else 0
        begin.append(b)
        end.append(e)
    return _batch_case("batch_to_space", batch_to_space_ref, shape, dtype, block, begin, end)


def _batch_case(op: str, reference, shape, dtype, block, begin, end) -> Case:
    """The Case of ``fb.<op>(x, block, begin, end)`` (space_to_batch or
    batch_to_space) on an input of ``shape``, checked with ``reference``."""
    def call(x, out, threads, **convert):
        return getattr(fb, op)(x, block, begin, end, out=out, num_threads=threads, **convert)
    result_shape = reference(np.empty(shape, np.uint8), block, begin, end).shape
    return Case(op, tuple(shape), dtype, call, lambda x: reference(x, block, begin, end),
                result_shape, f"fb.{op}(x, {block}, {begin}, {end})")


def draw_einops(rng, itemsize: int, operation: str):
    """A random ``rearrange`` or ``repeat`` pattern (einops_patterns.py),
    its axis lengths drawn as the other operators' shapes are."""
    rank = int(rng.choice([0, 1, 2, 2, 3, 3, 4, 4, 5, 6]))
    new_lengths = []
    if operation == "repeat":
        new_lengths = shrink([int(rng.choice(REPEAT_COUNTS)) if rng.random() < 0.7
                              else draw_extent(rng, itemsize)
                              for _ in range(int(rng.choice([0, 1, 1, 2, 2, 3])))],
                             MAX_CASE_BYTES // itemsize)
    growth = max(1, math.prod(new_lengths))
    lengths = _any_shape(rng, itemsize, rank, max(1, draw_bytes(rng) // growth), growth)
    if rank and rng.random() < 0.05:
        lengths[int(rng.integers(0, rank))] = 0
    return draw_pattern(rng, operation, lengths, new_lengths)


def case_einops(rng, dtype, operation: str) -> Case:
    pattern = draw_einops(rng, dtype.itemsize, operation)
    function = getattr(fb, operation)

    def call(x, out, threads, **convert):
        return function(x, pattern.text, out=out, num_threads=threads, **convert, **pattern.given)
    return Case(operation, pattern.input_shape, dtype, call, pattern.reference, pattern.result_shape,
                pattern.describe())


OPERATORS = [
    (0.22, lambda rng, dt: case_block(rng, dt, True)),
    (0.22, lambda rng, dt: case_block(rng, dt, False)),
    (0.16, case_transpose),
    (0.12, case_tile),
    (0.07, lambda rng, dt: case_pixel(rng, dt, False)),
    (0.07, lambda rng, dt: case_pixel(rng, dt, True)),
    (0.07, lambda rng, dt: case_batch(rng, dt, True)),
    (0.07, lambda rng, dt: case_batch(rng, dt, False)),
    (0.07, lambda rng, dt: case_einops(rng, dt, "rearrange")),
    (0.07, lambda rng, dt: case_einops(rng, dt, "repeat")),
]


def draw_case(seed: int, index: int):
    rng = np.random.default_rng([seed, index])
    converts = rng.random() < CONVERT_SHARE
    if converts:
        dtype = CONVERT_SOURCES[int(rng.integers(len(CONVERT_SOURCES)))]
    else:
        dtype = np.dtype(object) if rng.random() < OBJECT_SHARE else np.dtype(str(rng.choice(DTYPES)))
    weights = np.array([w for w, _ in OPERATORS])
    make = OPERATORS[int(rng.choice(len(OPERATORS), p=weights / weights.sum()))][1]
    case = make(rng, dtype)
    if converts:
        case = with_conversion(case, rng)
    return case, rng


def draw_affine(rng, result_shape: tuple):
    """A scale or offset: None, a scalar, or values along a random subset of
    the result's axes (1 elsewhere, maybe fewer leading axes), drawn with
    signs, zeros, -0.0, subnormals and now and then inf. Never NaN: which
    of two NaNs an operation returns is not part of the contract."""
    kind = rng.random()
    if kind < 0.35:
        return None
    if kind < 0.6 or not result_shape:
        shape = ()
    else:
        shape = tuple(n if rng.random() < 0.4 else 1 for n in result_shape)
        shape = shape[int(rng.integers(0, len(shape) + 1)):]
    values = rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4)
    special = rng.random(shape) < 0.05
    values = np.where(special, rng.choice([0.0, -0.0, np.inf, -np.inf, 1e-42]), values)
    return values.astype(rng.choice([np.float32, np.float64]))


def with_conversion(case: Case, rng) -> Case:
    """``case`` with a drawn ``dtype=`` and maybe ``scale=``/``offset=``."""
    result = CONVERT_RESULTS[int(rng.integers(len(CONVERT_RESULTS)))]
    convert = {"dtype": result, "scale": draw_affine(rng, case.result_shape),
               "offset": draw_affine(rng, case.result_shape)}
    base_call, base_reference = case.call, case.reference

    def call(x, out, threads):
        return base_call(x, out, threads, **convert)

    def reference(x):
        return converted_ref(base_reference(x), result, convert["scale"], convert["offset"])
    text = (f"{case.text} dtype={result}, scale of shape "
            f"{None if convert['scale'] is None else np.shape(convert['scale'])}, offset of shape "
            f"{None if convert['offset'] is None else np.shape(convert['offset'])}")
    return Case(case.name, case.shape, case.dtype, call, reference, case.result_shape, text,
                result_dtype=result)


# --------------------------------------------------------------------------
# Engine settings
# --------------------------------------------------------------------------

# Each knob's choices: name -> (label, engine settings over the defaults,
# as _engine.tune takes them). The first is the default.
KNOBS = {
    "shuffles": [
        ("default", {}),
        ("portable", {"simd": False}),
        ("off", {"shuffles": False}),
        ("16B", {"shuffle_min_bytes": 0, "wide_shuffles": False}),
        ("16Btable", {"shuffle_min_bytes": 0, "wide_shuffles": False, "periodic_shuffles": False,
                      "long_shuffle_runs": False}),
        ("64B", {"shuffle_min_bytes": 0, "periodic_shuffles": False, "long_shuffle_runs": False}),
        ("periodic", {"shuffle_min_bytes": 0, "long_shuffle_runs": False}),
        ("long", {"shuffle_min_bytes": 0}),
    ],
    "streaming": [
        ("default", {}),
        ("off", {"streaming": False}),
        ("all", {"stream_min_bytes": 0}),
        ("all16B", {"stream_min_bytes": 0, "wide_streams": False}),
    ],
    "faults": [
        ("default", {}),
        ("off", {"fault_ahead": False, "caller_faults": False}),
        ("all", {"fault_ahead_min_bytes": 0, "caller_faults": False}),
        ("caller", {"fault_ahead_min_bytes": 0, "fault_unit_bytes": 4096, "fault_lead_bytes": 16384}),
        ("caller0", {"fault_ahead_min_bytes": 0, "fault_unit_bytes": 1, "fault_lead_bytes": 0}),
    ],
    "parallel": [
        ("default", {}),
        ("all", {"parallel_min_bytes": 0}),
    ],
    "vect_c": [
        ("default", {}),
        ("rows", {"vect_c_pixels": False, "vect_c_rows_min_bytes": 0}),
        ("planes", {"vect_c_pixels": False, "vect_c_rows_min_bytes": 1 << 62}),
    ],
    "prefetch": [
        ("default", {}),
        ("off", {"prefetch": False}),
    ],
    "line_splits": [
        ("default", {}),
        ("off", {"line_splits": False}),
    ],
    # Repeated items: packed ones by 32-byte shuffles (AVX2), 16-byte ones,
    # or neither; items of 17 to 64 bytes from registers or the registers
    # of their period (AVX2), or neither.
    "repeats": [
        ("default", {}),
        ("32B", {"wide_shuffles": False}),
        ("16B", {"wide_shuffles": False, "avx2_repeats": False}),
        ("no periods", {"wide_shuffles": False, "period_repeats": False}),
        ("off", {"shuffled_repeats": False, "register_repeats": False,
                 "period_repeats": False}),
    ],
    # The thread policy: off (every team as asked), or every team's last
    # helper late (teams capped and probed again after short back-offs).
    "teams": [
        ("default", {}),
        ("fixed", {"adaptive_teams": False}),
        ("late", {"team_helper_delay_ns": 300_000, "team_late_ns": 100_000,
                  "team_cold_late_ns": 100_000,
                  "team_backoff_min_ns": 50_000, "team_backoff_max_ns": 2_000_000}),
    ],
    # The convert stage: its SIMD variants (AVX2, NEON) or the portable
    # ones, and tiles of a few items (many tiles, cut on every axis).
    "convert": [
        ("default", {}),
        ("portable", {"convert_simd": False}),
        ("no AVX-512", {"convert_avx512": False}),
        ("small tiles", {"convert_tile_bytes": 256, "convert_lanes_run_bytes": 64}),
        ("tiny portable", {"convert_tile_bytes": 48, "convert_lanes_run_bytes": 16,
                           "convert_simd": False}),
    ],
    # The front doors' fast path (fastblock._fastpath), not an engine setting.
    "fastpath": [
        ("default", {}),
        ("off", {}),
    ],
}
# --fast-path: "on" or "off" for every run, else None (the knob as drawn).
FORCED_FAST_PATH = [None]
# --python-threads: Python threads that call at once in each worker (1: the
# runs one after another, each under its own knobs). With more, the knobs
# are process-wide and a tuner thread keeps changing them instead
# (threaded_worker); each run calls under whatever is in force.
PYTHON_THREADS = [1]
# --max-result-bytes: cases whose result is larger are drawn but not run
# (the README run's short test: one 37 MB case took 10 s of its 2),
# counted in SKIPPED_CASES.
MAX_RESULT_BYTES = [0]
SKIPPED_CASES = [0]


def fast_path_on(settings: dict) -> bool:
    if FORCED_FAST_PATH[0] is not None:
        return FORCED_FAST_PATH[0] == "on"
    return settings.get("fastpath", "default") == "default"


def apply(settings: dict) -> None:
    values = _engine.default_tuning()
    for knob, label in settings.items():
        values.update(dict(KNOBS[knob])[label])
    _engine.tune(**values)
    _fastpath.enabled(fast_path_on(settings))


def restore() -> None:
    apply({})


def draw_settings(rng) -> dict:
    """Knob settings for one run: each knob away from its default about
    half the time."""
    settings = {}
    for knob, choices in KNOBS.items():
        if rng.random() < 0.5:
            settings[knob] = choices[int(rng.integers(1, len(choices)))][0]
    return settings


# --------------------------------------------------------------------------
# Running and checking
# --------------------------------------------------------------------------

@dataclass
class Run:
    settings: dict
    threads: int
    source: Layout
    out: str              # "none", "fresh" (np.empty) or "placed" (a laid-out view)
    out_layout: Layout | None

    def describe(self) -> str:
        knobs = ",".join(f"{k}={v}" for k, v in self.settings.items()) or "defaults"
        out = self.out if self.out != "placed" else f"placed[{self.out_layout.describe()}]"
        return f"threads={self.threads} knobs={knobs} x[{self.source.describe()}] out={out}"


def draw_runs(case: Case, rng, small: bool) -> list:
    n_runs = 4 if small else 2
    runs = []
    for r in range(n_runs):
        settings = {} if r == 0 else draw_settings(rng)
        threads = int(rng.choice(THREAD_CHOICES))
        plain = case.dtype.hasobject
        source = draw_layout(rng, len(case.shape), case.dtype.itemsize, plain)
        kind = rng.random()
        out = "none" if kind < 0.4 or plain else "fresh" if kind < 0.55 else "placed"
        out_layout = (draw_layout(rng, len(case.result_shape), case.out_dtype.itemsize)
                      if out == "placed" else None)
        runs.append(Run(settings, threads, source, out, out_layout))
    return runs


def make_source(case: Case, run: Run, fill_rng):
    if case.dtype.hasobject:
        n = math.prod(case.shape)
        x = np.empty(n, object)
        x[:] = [("item", int(v)) for v in fill_rng.integers(0, 1 << 30, n)]
        return x.reshape(case.shape), None
    return place(case.shape, case.dtype, run.source, fill_rng)


def check_run(case: Case, run: Run, fill_rng) -> str | None:
    """Run one call; return what was wrong, or None."""
    x, x_buffer = make_source(case, run, fill_rng)
    x_before = None if x_buffer is None else x_buffer.copy()
    expected = case.reference(x)
    out = out_buffer = out_before = None
    if run.out == "fresh":
        out = np.empty(case.result_shape, case.out_dtype)
    elif run.out == "placed":
        out, out_buffer = place(case.result_shape, case.out_dtype, run.out_layout, fill_rng)
        out_before = out_buffer.copy()
    shared = PYTHON_THREADS[0] > 1
    if not shared:
        apply(run.settings)
    try:
        result = case.call(x, out, run.threads)
        problems = check_result(case, result, expected, out, out_buffer, out_before)
        if not problems and (shared or fast_path_on(run.settings)):
            # The same call again: from the fast path's cache where it took it.
            result = case.call(x, out, run.threads)
            problems = [f"{problem} (on the call repeated)" for problem in
                        check_result(case, result, expected, out, out_buffer, out_before)]
    finally:
        if not shared:
            restore()
    if x_buffer is not None and not np.array_equal(x_buffer, x_before):
        problems.append("the source was written")
    return "; ".join(problems) or None


def check_result(case: Case, result, expected, out, out_buffer, out_before) -> list:
    """What is wrong with one call's result (and ``out``'s buffer)."""
    problems = []
    if out is not None and result is not out:
        problems.append("the result is not out")
    if result.shape != tuple(case.result_shape) or result.dtype != case.out_dtype:
        problems.append(f"shape/dtype {result.shape} {result.dtype}, "
                        f"expected {case.result_shape} {case.out_dtype}")
    elif out is None and not result.flags.c_contiguous:
        problems.append("a new result that is not C-contiguous")
    elif case.dtype.hasobject:
        if not all(a is b for a, b in zip(result.reshape(-1).tolist(), np.asarray(expected).reshape(-1).tolist())):
            problems.append("object items differ")
    else:
        got, want = raw_bytes(result), raw_bytes(expected)
        if not np.array_equal(got, want):
            bad = np.flatnonzero(got != want)
            item = bad[0] // case.out_dtype.itemsize
            n_items = len(np.unique(bad // case.out_dtype.itemsize))
            problems.append(f"{n_items} of {result.size} items differ, the first at flat index {item}")
    if out_buffer is not None:
        want_buffer = out_before.copy()
        same_geometry(out, out_buffer, want_buffer)[...] = expected
        if not np.array_equal(out_buffer, want_buffer):
            outside = np.flatnonzero(out_buffer != want_buffer)
            problems.append(f"out's buffer differs at {len(outside)} bytes (first byte {outside[0]})")
    return problems


def describe_case(case: Case) -> str:
    return f"{case.text} x: {case.dtype.str} {case.shape} -> {case.result_shape} {case.out_dtype.str}"


def replay_line(seed, index, r, case, run) -> str:
    threads = "" if THREAD_CHOICES == [1, 2, 3] else f" --threads {','.join(map(str, THREAD_CHOICES))}"
    if FORCED_FAST_PATH[0] is not None:
        threads += f" --fast-path {FORCED_FAST_PATH[0]}"
    shared = ("" if PYTHON_THREADS[0] == 1 else
              f" (met among {PYTHON_THREADS[0]} Python threads under a tuner's knobs; "
              f"the replay runs it alone, under the knobs it drew)")
    return (f"python tests/stress/stress.py --replay {seed}:{index}:{r}{threads}   "
            f"# {describe_case(case)} {run.describe()}{shared}")


def case_and_runs(seed: int, index: int):
    """Case ``index`` of ``seed`` and its runs (more for small cases)."""
    case, rng = draw_case(seed, index)
    nbytes = math.prod(case.result_shape) * case.out_dtype.itemsize
    return case, draw_runs(case, rng, nbytes < THRESHOLDS["parallel_min_bytes"])


def run_case(seed: int, index: int, status=None, only_run: int | None = None,
             knobs: dict | None = None) -> list:
    """Every run of a case; the replay lines of those that failed."""
    case, runs = case_and_runs(seed, index)
    failures = []
    if MAX_RESULT_BYTES[0] and math.prod(case.result_shape) * case.out_dtype.itemsize \
            > MAX_RESULT_BYTES[0]:
        SKIPPED_CASES[0] += 1
        return failures
    for r, run in enumerate(runs):
        if only_run is not None and r != only_run:
            continue
        if status is not None:
            status.seek(0)
            status.write(f"{seed}:{index}:{r}\n".ljust(40))
            status.flush()
        if knobs is not None:
            run.settings = {**run.settings, **knobs}
        fill_rng = np.random.default_rng([seed, index, r, 1])
        problem = check_run(case, run, fill_rng)
        if problem:
            failures.append(f"MISMATCH {problem}\n  {replay_line(seed, index, r, case, run)}")
    return failures


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------

def commit_seed() -> int:
    """A seed from the checked-out commit, so every commit explores new cases."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=HERE, capture_output=True, text=True,
                              check=True).stdout.strip()
        return int(head[:8], 16)
    except (OSError, subprocess.CalledProcessError, ValueError):
        return int(time.time())


def worker(seed: int, start: int, deadline: float, status_path: str) -> int:
    """Cases from ``start`` on until the deadline; one line per failure, and
    a closing ``DONE next_index`` line."""
    if PYTHON_THREADS[0] > 1:
        return threaded_worker(seed, start, deadline, status_path)
    index = start
    with open(status_path, "w") as status:
        while time.time() < deadline:
            for line in run_case(seed, index, status):
                print(line, flush=True)
            index += 1
    print(f"SKIPPED {SKIPPED_CASES[0]}", flush=True)
    print(f"DONE {index}", flush=True)
    return 0


class StatusSlot:
    """One thread's line of the status file (STATUS_WIDTH bytes at its own
    offset), written as run_case writes its status."""

    def __init__(self, fd: int, slot: int):
        self.fd, self.offset, self.text = fd, slot * STATUS_WIDTH, ""

    def seek(self, _):
        pass

    def write(self, text: str):
        self.text = text

    def flush(self):
        os.pwrite(self.fd, self.text.strip().ljust(STATUS_WIDTH - 1).encode() + b"\n", self.offset)


STATUS_WIDTH = 40


def threaded_worker(seed: int, start: int, deadline: float, status_path: str) -> int:
    """worker with PYTHON_THREADS threads calling at once, thread t taking
    cases start + t, start + t + n, ..., while a tuner thread draws new
    knobs every few milliseconds (the engine's settings and the fast path
    are process-wide: tune() waits for the copies running, and the copies
    started meanwhile wait for it). Every result must still be exact."""
    n = PYTHON_THREADS[0]
    done = [start] * n
    lines = []
    stop = threading.Event()

    def calls(t: int, status: StatusSlot):
        index = start + t
        while time.time() < deadline:
            try:
                lines.extend(run_case(seed, index, status))
            except Exception as error:      # a thread's exception fails the run, not the thread
                lines.append(f"MISMATCH {type(error).__name__}: {error} (raised)\n"
                             f"  python tests/stress/stress.py --replay {seed}:{index}")
            index += n
            done[t] = index

    def tuner():
        rng = np.random.default_rng([seed, start, 2])
        while not stop.wait(float(rng.uniform(0.0005, 0.005))):
            apply(draw_settings(rng))

    fd = os.open(status_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    try:
        threads = [threading.Thread(target=calls, args=(t, StatusSlot(fd, t))) for t in range(n)]
        tuning = threading.Thread(target=tuner)
        for thread in [*threads, tuning]:
            thread.start()
        for thread in threads:
            thread.join()
        stop.set()
        tuning.join()
        restore()
    finally:
        os.close(fd)
    for line in lines:
        print(line, flush=True)
    # Every case below the least a thread reached was run.
    print(f"SKIPPED {SKIPPED_CASES[0]}", flush=True)
    print(f"DONE {min(done)}", flush=True)
    return 0


def supervise(seed: int, seconds: float, jobs: int, threads: str, fast_path: str | None = None) -> int:
    """Workers over seeds seed, seed + 1, ... (one per job) until the time
    is up; restart a worker after a crash, past the case that crashed."""
    deadline = time.time() + seconds
    with tempfile.TemporaryDirectory(prefix="fastblock-stress-") as tmp:
        return _supervise_in(seed, jobs, threads, deadline, tmp, fast_path)


def _supervise_in(seed: int, jobs: int, threads: str, deadline: float, tmp: str,
                  fast_path: str | None = None) -> int:
    """supervise's work, its status files in ``tmp``."""
    started = time.time()
    slots = [{"seed": seed + j, "next": 0, "proc": None, "status": os.path.join(tmp, f"status{j}")}
             for j in range(jobs)]
    failures = crashes = 0
    cases = skipped = 0

    def start(slot):
        slot["proc"] = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", f"{slot['seed']}:{slot['next']}",
             "--deadline", repr(deadline), "--status", slot["status"], "--threads", threads,
             "--python-threads", str(PYTHON_THREADS[0]),
             "--max-result-bytes", str(MAX_RESULT_BYTES[0])]
            + (["--fast-path", fast_path] if fast_path else []),
            stdout=subprocess.PIPE, text=True)

    for slot in slots:
        start(slot)
    while any(slot["proc"] is not None for slot in slots):
        for slot in slots:
            proc = slot["proc"]
            if proc is None:
                continue
            output, _ = proc.communicate()
            for line in output.splitlines():
                if line.startswith("SKIPPED "):
                    skipped += int(line.split()[1])
                elif line.startswith("DONE "):
                    done = int(line.split()[1])
                    cases += done - slot["next"]
                    slot["next"] = done
                elif line.strip():
                    print(line, flush=True)
                    if line.startswith("MISMATCH"):
                        failures += 1
            slot["proc"] = None
            if proc.returncode != 0:
                crashes += 1
                try:
                    with open(slot["status"]) as f:
                        in_flight = f.read().split()
                except OSError:
                    in_flight = []
                # The run of each calling thread (one, but with --python-threads).
                in_flight = in_flight or [f"{slot['seed']}:{slot['next']}:0"]
                reason = (f"signal {signal.Signals(-proc.returncode).name}" if proc.returncode < 0
                          else f"exit status {proc.returncode}")
                print(f"CRASH ({reason}), in one of these runs:", flush=True)
                for where in in_flight:
                    s, i, r = (int(v) for v in where.split(":"))
                    case, runs = case_and_runs(s, i)
                    print(f"  {replay_line(s, i, r, case, runs[r])}", flush=True)
                i = max(int(where.split(":")[1]) for where in in_flight)
                cases += i + 1 - slot["next"]
                slot["next"] = i + 1
                if time.time() < deadline:
                    start(slot)
    seeds = ", ".join(f"{slot['seed']} (cases 0-{slot['next'] - 1})" for slot in slots)
    over = f" ({skipped} over {MAX_RESULT_BYTES[0]} result bytes not run)" if skipped else ""
    print(f"stress: {cases} cases{over} in {time.time() - started:.0f} s, seeds {seeds}: "
          f"{failures} mismatches, {crashes} crashes", flush=True)
    return 1 if failures or crashes else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="time budget (default 60)")
    parser.add_argument("--seed", type=int, default=None, help="first seed (default: from the commit)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes, one seed each (default 1)")
    parser.add_argument("--replay", help="SEED:CASE[:RUN]: run one case (or one run of it) here")
    parser.add_argument("--threads", default="1,2,3",
                        help="thread counts the runs draw from (default 1,2,3; part of a case's draw)")
    parser.add_argument("--knobs", help="with --replay: knob settings to impose, as "
                        "'shuffles=off,streaming=all' (see KNOBS)")
    parser.add_argument("--fast-path", choices=["on", "off"],
                        help="the front doors' fast path on or off for every run (default: the "
                             "fastpath knob as drawn, on in the first run of each case)")
    parser.add_argument("--python-threads", type=int, default=1,
                        help="Python threads calling at once in each worker, under knobs a tuner "
                             "thread keeps changing (default 1: one call at a time, each run "
                             "under its own knobs)")
    parser.add_argument("--max-result-bytes", type=int, default=0,
                        help="run only the cases whose result is at most this many bytes "
                             "(default 0: every case)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--deadline", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--status", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    THREAD_CHOICES[:] = [int(t) for t in args.threads.split(",")]
    FORCED_FAST_PATH[0] = args.fast_path
    if args.python_threads < 1:
        parser.error("--python-threads: at least 1")
    PYTHON_THREADS[0] = args.python_threads
    MAX_RESULT_BYTES[0] = args.max_result_bytes
    if args.worker:
        seed, start = (int(v) for v in args.worker.split(":"))
        return worker(seed, start, args.deadline, args.status)
    if args.replay:
        parts = [int(v) for v in args.replay.split(":")]
        seed, index = parts[:2]
        only = parts[2] if len(parts) > 2 else None
        case, runs = case_and_runs(seed, index)
        print(describe_case(case))
        for r, run in enumerate(runs):
            if only is None or r == only:
                print(f"  run {r}: {run.describe()}")
        knobs = None
        if args.knobs:
            knobs = dict(item.split("=") for item in args.knobs.split(","))
            for knob, label in knobs.items():
                if label not in dict(KNOBS[knob]):
                    parser.error(f"--knobs: {knob} is one of {[c for c, _ in KNOBS[knob]]}")
        failures = run_case(seed, index, only_run=only, knobs=knobs)
        for line in failures:
            print(line)
        print("ok" if not failures else f"{len(failures)} failed")
        return 1 if failures else 0
    seed = commit_seed() if args.seed is None else args.seed
    print(f"stress: seed {seed}, {args.seconds:.0f} s, {args.jobs} job(s), threads {args.threads}, "
          f"fast path {args.fast_path or 'drawn'}, {args.python_threads} Python thread(s) per job",
          flush=True)
    return supervise(seed, args.seconds, args.jobs, args.threads, args.fast_path)


if __name__ == "__main__":
    sys.exit(main())
