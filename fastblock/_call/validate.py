"""Argument checks shared by the front doors. Every message names the
argument, the value received and what was expected."""
from __future__ import annotations

import math
import operator

import numpy as np

from .layouts import DATA_FORMATS, MODES, NCHW_VECT_C, VECT_C_GROUP
from .memory import byte_ranges_meet, out_is_clear

INTP_MAX = np.iinfo(np.intp).max


def check_integer(value, name: str) -> int:
    """A Python or NumPy integer (not bool) as an ``int``; else TypeError."""
    if type(value) is int:
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r} of type {type(value).__name__}")
    return operator.index(value)


def check_thread_count(value, name: str) -> int:
    n = check_integer(value, name)
    if n < 1:
        raise ValueError(f"{name} must be >= 1, got {n}")
    return n


def check_repeats(repeats) -> tuple[int, ...]:
    """Tile's ``repeats`` (an integer, a 1-D sequence or integer array, each
    entry >= 0) as a tuple of ints."""
    if isinstance(repeats, np.ndarray):
        if repeats.ndim > 1:
            raise ValueError(f"repeats must be an integer or a 1-D sequence, got an array of "
                             f"shape {repeats.shape}")
        if repeats.dtype.kind not in "iu":
            raise TypeError(f"repeats must hold integers, got an array of dtype {repeats.dtype}")
        entries = [int(r) for r in repeats.reshape(-1)]
    elif isinstance(repeats, (int, np.integer)) and not isinstance(repeats, (bool, np.bool_)):
        entries = [int(repeats)]
    else:
        try:
            items = list(repeats)
        except TypeError:
            raise TypeError(f"repeats must be an integer or a sequence of integers, "
                            f"got {repeats!r}") from None
        entries = []
        for item in items:
            if isinstance(item, np.ndarray) or isinstance(item, (list, tuple)):
                raise ValueError(f"repeats must be 1-D, got a nested entry {item!r}")
            entries.append(check_integer(item, "repeats entry"))
    for r in entries:
        if r < 0:
            raise ValueError(f"repeats entries must be >= 0, got {r}")
    return tuple(entries)


def check_block_size(value) -> int:
    bs = check_integer(value, "block_size")
    if bs < 1:
        raise ValueError(f"block_size must be >= 1, got {bs}")
    return bs


def check_mode(mode) -> str:
    """The canonical mode name: BLOCKS_FIRST (also 'DCR') or DEPTH_FIRST (also 'CRD')."""
    # The spelling as given first: lower() builds a new string every call.
    canonical = (MODES.get(mode) or MODES.get(mode.lower())) if isinstance(mode, str) else None
    if canonical is None:
        raise ValueError(
            f"mode must be 'blocks_first' (or 'DCR') or 'depth_first' (or 'CRD'), got {mode!r}")
    return canonical


def check_data_format(data_format, ndim: int) -> int:
    entry = (DATA_FORMATS.get(data_format) or DATA_FORMATS.get(data_format.lower())
             if isinstance(data_format, str) else None)
    if entry is None:
        raise ValueError(
            "data_format must be 'channels_first', 'channels_last', 'NCW', 'NCHW', 'NCDHW', "
            f"'NWC', 'NHWC', 'NDHWC' or 'NCHW_VECT_C', got {data_format!r}")
    layout, rank = entry
    if ndim < 3:
        raise ValueError(f"x must have rank >= 3 ([N, C, spatial...]), got rank {ndim}")
    if rank is not None and ndim != rank:
        raise ValueError(f"data_format {data_format!r} needs an input of rank {rank}, got rank {ndim}")
    return layout


def check_block_arguments(shape, block_size, mode, data_format) -> tuple[int, str, int]:
    """``(block_size, canonical mode, layout)`` of a SpaceToDepth or
    DepthToSpace call on an input of ``shape``, checked in this order."""
    layout = check_data_format(data_format, len(shape))
    block_size = check_block_size(block_size)
    mode = check_mode(mode)
    if layout == NCHW_VECT_C and shape[4] != VECT_C_GROUP:
        raise ValueError(f"an NCHW_VECT_C input has shape [N, C/4, H, W, 4]; "
                         f"got last axis {shape[4]}, expected 4")
    return block_size, mode, layout


def check_result_size(shape, dtype: np.dtype) -> None:
    """ValueError when the result's item or byte count does not fit an intp."""
    count = math.prod(shape)
    if count > INTP_MAX or count * max(dtype.itemsize, 1) > INTP_MAX:
        raise ValueError(
            f"the result of shape {tuple(int(e) for e in shape)} and dtype {dtype} is too large: "
            f"{count} items do not fit in memory addresses")


def check_shape_fits(shape, dtype: np.dtype) -> None:
    """ValueError when an array of ``shape`` could not be allocated even empty.

    ``check_result_size`` counts items, which is 0 for an empty result; NumPy
    also refuses a shape whose non-zero extents multiply past an intp."""
    count = max(dtype.itemsize, 1)
    for extent in shape:
        count *= max(int(extent), 1)
    if count > INTP_MAX:
        raise ValueError(f"the result of shape {tuple(int(e) for e in shape)} and dtype {dtype} "
                         f"is too large: its extents do not fit in memory addresses")


def check_out(out, shape, dtype: np.dtype, x: np.ndarray) -> np.ndarray:
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy.ndarray, got {type(out).__name__}")
    if out.shape != tuple(shape):
        raise ValueError(f"out must have shape {tuple(shape)}, got {out.shape}")
    if out.dtype != dtype:
        raise TypeError(f"out must have dtype {dtype!r}, got {out.dtype!r}")
    if out_is_clear(out, x):
        # Writable, contiguous and apart from x: the checks below all pass.
        return out
    if not out.flags.writeable:
        raise ValueError("out must be writable, got a read-only array")
    if out.size > 1 and not _items_distinct(out):
        raise ValueError("out has overlapping items (a broadcast or self-overlapping view); "
                         "it must hold each result item in its own memory")
    # Disjoint byte ranges share nothing; np.shares_memory settles the rest.
    if byte_ranges_meet(out, x) and np.shares_memory(out, x):
        raise ValueError("out shares memory with x; pass an out that does not overlap the input")
    return out


def _items_distinct(arr: np.ndarray) -> bool:
    """True when no two items of ``arr`` share a byte.

    The quick test sorts the axes by step: each step must clear everything the
    inner axes span. Layouts that fail it (interleaved axes) are settled
    exactly by sorting the items' byte offsets."""
    axes = sorted((abs(s), n) for n, s in zip(arr.shape, arr.strides) if n > 1)
    span = arr.itemsize
    for step, n in axes:
        if step < span:
            break
        span = step * (n - 1) + span
    else:
        return True
    offsets = np.zeros((), dtype=np.int64)
    for step, n in axes:
        offsets = np.add.outer(offsets, np.arange(n, dtype=np.int64) * step)
    offsets = np.sort(offsets, axis=None)
    return bool(np.all(np.diff(offsets) >= arr.itemsize))
