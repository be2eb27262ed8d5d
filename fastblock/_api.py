"""The public operators: check the arguments, build a plan, run it.

Plain-data dtypes are copied as raw items by the engine, in place from the
strided input. Dtypes whose items hold references take ``_fallback``.
SpaceToDepth and DepthToSpace first offer the call to ``_fastpath``, which
runs the common call from the array struct and leaves the rest to this
general path.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence, Union

import numpy as np
from numpy.typing import ArrayLike

from . import _engine
from ._fallback import gather_with_references
from ._fastpath import block_call as _block_fast
from ._interop import arrays_in_out
from ._plan import DEPTH_FIRST, NCHW_VECT_C, VECT_C_GROUP, logical_shape, physical_shape
from ._threads import resolve_num_threads
from ._validate import (
    check_block_size,
    check_data_format,
    check_integer,
    check_mode,
    check_out,
    check_result_size,
)

Repeats = Union[int, Sequence[int], np.ndarray]
# copy(source, destination, num_threads): the operator's copy between two
# checked arrays of the same item size.
Copier = Callable[[np.ndarray, np.ndarray, int], None]


def _execute(x: np.ndarray, result_shape: tuple[int, ...], out: Optional[np.ndarray],
             copy: Copier, num_threads: Optional[int]) -> np.ndarray:
    """Check ``out`` (or the result size), then run ``copy`` from ``x`` into
    ``out`` or into a new C-contiguous array, and return that array."""
    n_threads = resolve_num_threads(num_threads)
    if out is not None:
        check_out(out, result_shape, x.dtype, x)
    else:
        check_result_size(result_shape, x.dtype)
    if 0 in result_shape:
        # Nothing to move; also keeps huge block sizes or repeats of an empty
        # result away from the C-sized engine arguments.
        return np.empty(result_shape, dtype=x.dtype) if out is None else out
    if x.dtype.hasobject:
        result = gather_with_references(x, result_shape, copy, n_threads)
        if out is None:
            return result
        np.copyto(out, result)
        return out
    if out is None:
        out = np.empty(result_shape, dtype=x.dtype)
    if x.dtype.itemsize:
        copy(x, out, n_threads)
    return out


def _block_copier(layout: int, bs: int, depth_first: bool, to_depth: bool) -> Copier:
    """The engine copy of space_to_depth (``to_depth``) or depth_to_space.

    A closure of its own: one in the public function would make Cython build
    its scope on every call, the fast path's included."""
    if to_depth:
        def copy(space: np.ndarray, depth: np.ndarray, n_threads: int) -> None:
            _engine.block_copy(space, depth, layout, bs, depth_first, True, n_threads)
    else:
        def copy(depth: np.ndarray, space: np.ndarray, n_threads: int) -> None:
            _engine.block_copy(space, depth, layout, bs, depth_first, False, n_threads)
    return copy


def _block_arguments(x, block_size, mode, data_format):
    x = np.asarray(x)
    layout = check_data_format(data_format, x.ndim)
    block_size = check_block_size(block_size)
    mode = check_mode(mode)
    if layout == NCHW_VECT_C and x.shape[4] != VECT_C_GROUP:
        raise ValueError(f"an NCHW_VECT_C input has shape [N, C/4, H, W, 4]; "
                         f"got last axis {x.shape[4]}, expected 4")
    return x, block_size, mode, layout


def space_to_depth(x: ArrayLike, block_size: int, mode: str = "blocks_first",
                   data_format: str = "channels_first", *,
                   out: Optional[np.ndarray] = None,
                   num_threads: Optional[int] = None) -> np.ndarray:
    """Move each ``block_size**K`` spatial block into the channel axis.

    For ``x`` of logical shape ``[N, C, D1, ..., DK]`` the result has shape
    ``[N, C * block_size**K, D1 / block_size, ..., DK / block_size]``.

    Parameters
    ----------
    x : array_like
        Rank >= 3, any dtype and memory layout (read in place).
    block_size : int
        Block edge, >= 1, dividing every spatial size.
    mode : {"blocks_first", "depth_first", "DCR", "CRD"}
        Channel order of the result: blocks_first (ONNX SpaceToDepth,
        TensorFlow) puts the block offset before the input channel;
        depth_first (PyTorch ``pixel_unshuffle``) puts it after.
    data_format : str
        ``"channels_first"`` (``NCHW``-like), ``"channels_last"``
        (``NHWC``-like), a named layout (``"NCW"``, ``"NCHW"``, ``"NCDHW"``,
        ``"NWC"``, ``"NHWC"``, ``"NDHWC"``; checked against the rank) or
        ``"NCHW_VECT_C"`` (``[N, C/4, H, W, 4]``).
    out : numpy.ndarray, optional
        Destination of the result's shape and dtype, writable, any strides,
        not overlapping ``x``. Nothing is written to it unless every argument
        is valid.
    num_threads : int, optional
        Threads for this call (default: :func:`fastblock.get_num_threads`).

    Returns
    -------
    numpy.ndarray
        ``out``, or a new C-contiguous array of ``x``'s dtype.

    Raises
    ------
    ValueError
        Bad rank, block size, mode or data format, or a spatial size that
        ``block_size`` does not divide; a bad ``out``.
    TypeError
        A ``block_size`` that is not an integer; an ``out`` of another dtype.
    MemoryError
        A new result that cannot be allocated (raised before anything is written).

    Examples
    --------
    >>> import numpy as np, fastblock as fb
    >>> x = np.arange(16).reshape(1, 1, 4, 4)
    >>> fb.space_to_depth(x, 2)[0, :, 0, 0]
    array([0, 1, 4, 5])
    """
    result = _block_fast(x, block_size, mode, data_format, out, num_threads, True)
    if result is not None:
        return result
    return _space_to_depth(x, block_size, mode, data_format, out=out, num_threads=num_threads)


@arrays_in_out
def _space_to_depth(x, block_size, mode, data_format, *, out=None, num_threads=None):
    """The general path of :func:`space_to_depth` (other libraries' arrays too)."""
    x, bs, mode, layout = _block_arguments(x, block_size, mode, data_format)
    batch, channels, spatial = logical_shape(x.shape, layout)
    for axis, size in enumerate(spatial):
        if size % bs:
            raise ValueError(f"block_size {bs} must divide every spatial size; "
                             f"spatial axis {axis} has size {size}")
    result_shape = physical_shape(batch, channels * bs ** len(spatial),
                                  [size // bs for size in spatial], layout)
    copy = _block_copier(layout, bs, mode == DEPTH_FIRST, True)
    return _execute(x, result_shape, out, copy, num_threads)


def depth_to_space(x: ArrayLike, block_size: int, mode: str = "blocks_first",
                   data_format: str = "channels_first", *,
                   out: Optional[np.ndarray] = None,
                   num_threads: Optional[int] = None) -> np.ndarray:
    """Move channel groups of ``block_size**K`` into spatial blocks.

    For ``x`` of logical shape ``[N, C, D1, ..., DK]`` the result has shape
    ``[N, C / block_size**K, D1 * block_size, ..., DK * block_size]``; it is
    the inverse of :func:`space_to_depth` with the same arguments.

    Parameters
    ----------
    x : array_like
        Rank >= 3, any dtype and memory layout (read in place).
    block_size : int
        Block edge, >= 1; ``block_size**K`` must divide the channel count.
    mode : {"blocks_first", "depth_first", "DCR", "CRD"}
        blocks_first = ONNX DCR (default, TensorFlow); depth_first = ONNX CRD
        (PyTorch ``pixel_shuffle``).
    data_format : str
        As for :func:`space_to_depth`. With ``"NCHW_VECT_C"`` the result's
        channel count must be a multiple of 4.
    out : numpy.ndarray, optional
        Destination of the result's shape and dtype, writable, any strides,
        not overlapping ``x``. Nothing is written to it unless every argument
        is valid.
    num_threads : int, optional
        Threads for this call (default: :func:`fastblock.get_num_threads`).

    Returns
    -------
    numpy.ndarray
        ``out``, or a new C-contiguous array of ``x``'s dtype.

    Raises
    ------
    ValueError
        Bad rank, block size, mode or data format, or a channel count that
        ``block_size**K`` does not divide; a bad ``out``.
    TypeError
        A ``block_size`` that is not an integer; an ``out`` of another dtype.
    MemoryError
        A new result that cannot be allocated (raised before anything is written).

    Examples
    --------
    >>> import numpy as np, fastblock as fb
    >>> x = np.arange(4).reshape(1, 4, 1, 1)
    >>> fb.depth_to_space(x, 2)[0, 0]
    array([[0, 1],
           [2, 3]])
    """
    result = _block_fast(x, block_size, mode, data_format, out, num_threads, False)
    if result is not None:
        return result
    return _depth_to_space(x, block_size, mode, data_format, out=out, num_threads=num_threads)


@arrays_in_out
def _depth_to_space(x, block_size, mode, data_format, *, out=None, num_threads=None):
    """The general path of :func:`depth_to_space` (other libraries' arrays too)."""
    x, bs, mode, layout = _block_arguments(x, block_size, mode, data_format)
    batch, channels, spatial = logical_shape(x.shape, layout)
    blocks = bs ** len(spatial)
    if channels % blocks:
        raise ValueError(f"block_size**{len(spatial)} = {blocks} must divide the channel "
                         f"count; x has {channels} channels")
    space_channels = channels // blocks
    if layout == NCHW_VECT_C and space_channels % VECT_C_GROUP:
        raise ValueError(f"NCHW_VECT_C needs a result channel count that is a multiple of 4; "
                         f"{channels} channels / {blocks} gives {space_channels}")
    result_shape = physical_shape(batch, space_channels, [size * bs for size in spatial], layout)
    copy = _block_copier(layout, bs, mode == DEPTH_FIRST, False)
    return _execute(x, result_shape, out, copy, num_threads)


def _check_repeats(repeats: Repeats) -> tuple[int, ...]:
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


@arrays_in_out
def tile(x: ArrayLike, repeats: Repeats, *, out: Optional[np.ndarray] = None,
         num_threads: Optional[int] = None) -> np.ndarray:
    """Repeat ``x`` along each axis, as ``numpy.tile`` does.

    Parameters
    ----------
    x : array_like
        Any rank (0-d included), dtype and memory layout (read in place).
    repeats : int, sequence of int, or 1-D integer array
        Repetitions per axis, each >= 0. A shorter ``repeats`` is padded with
        leading 1s; a longer one gives ``x`` leading axes of size 1.
    out : numpy.ndarray, optional
        Destination of the result's shape and dtype, writable, any strides,
        not overlapping ``x``. Nothing is written to it unless every argument
        is valid.
    num_threads : int, optional
        Threads for this call (default: :func:`fastblock.get_num_threads`).

    Returns
    -------
    numpy.ndarray
        ``out``, or a new C-contiguous array (always new, unlike
        ``numpy.tile`` on an all-ones ``repeats``).

    Raises
    ------
    TypeError
        A ``repeats`` entry that is not an integer (floats and bools included).
    ValueError
        A negative entry, a ``repeats`` of rank > 1, a result too large to
        address, or a bad ``out``.
    MemoryError
        A new result that cannot be allocated (raised before anything is written).

    Examples
    --------
    >>> import numpy as np, fastblock as fb
    >>> fb.tile(np.array([[1, 2], [3, 4]]), (2, 2))
    array([[1, 2, 1, 2],
           [3, 4, 3, 4],
           [1, 2, 1, 2],
           [3, 4, 3, 4]])
    """
    x = np.asarray(x)
    reps = _check_repeats(repeats)
    if len(reps) < x.ndim:
        reps = (1,) * (x.ndim - len(reps)) + reps
    src_shape = (1,) * (len(reps) - x.ndim) + x.shape
    result_shape = tuple(r * size for r, size in zip(reps, src_shape))

    def copy(src: np.ndarray, dst: np.ndarray, n_threads: int) -> None:
        _engine.tile_copy(src, dst, reps, n_threads)

    return _execute(x, result_shape, out, copy, num_threads)
