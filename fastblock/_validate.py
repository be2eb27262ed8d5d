"""Argument checks shared by the front doors. Every message names the
argument, the value received and what was expected."""
from __future__ import annotations

import math
import operator

import numpy as np

from ._memory import byte_ranges_meet, out_is_clear
from ._plan import BLOCKS_FIRST, CHANNELS_FIRST, CHANNELS_LAST, DEPTH_FIRST, NCHW_VECT_C

INTP_MAX = np.iinfo(np.intp).max

_MODES = {
    "blocks_first": BLOCKS_FIRST,
    "dcr": BLOCKS_FIRST,
    "depth_first": DEPTH_FIRST,
    "crd": DEPTH_FIRST,
}

# name -> (layout, required rank or None)
_DATA_FORMATS = {
    "channels_first": (CHANNELS_FIRST, None),
    "channels_last": (CHANNELS_LAST, None),
    "ncw": (CHANNELS_FIRST, 3),
    "nchw": (CHANNELS_FIRST, 4),
    "ncdhw": (CHANNELS_FIRST, 5),
    "nwc": (CHANNELS_LAST, 3),
    "nhwc": (CHANNELS_LAST, 4),
    "ndhwc": (CHANNELS_LAST, 5),
    "nchw_vect_c": (NCHW_VECT_C, 5),
}


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


def check_block_size(value) -> int:
    bs = check_integer(value, "block_size")
    if bs < 1:
        raise ValueError(f"block_size must be >= 1, got {bs}")
    return bs


def check_mode(mode) -> str:
    """The canonical mode name: BLOCKS_FIRST (also 'DCR') or DEPTH_FIRST (also 'CRD')."""
    # The spelling as given first: lower() builds a new string every call.
    canonical = (_MODES.get(mode) or _MODES.get(mode.lower())) if isinstance(mode, str) else None
    if canonical is None:
        raise ValueError(
            f"mode must be 'blocks_first' (or 'DCR') or 'depth_first' (or 'CRD'), got {mode!r}")
    return canonical


def check_data_format(data_format, ndim: int) -> int:
    entry = (_DATA_FORMATS.get(data_format) or _DATA_FORMATS.get(data_format.lower())
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


def check_result_size(shape, dtype: np.dtype) -> None:
    """ValueError when the result's item or byte count does not fit an intp."""
    count = math.prod(shape)
    if count > INTP_MAX or count * max(dtype.itemsize, 1) > INTP_MAX:
        raise ValueError(
            f"the result of shape {tuple(int(e) for e in shape)} and dtype {dtype} is too large: "
            f"{count} items do not fit in memory addresses")


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
