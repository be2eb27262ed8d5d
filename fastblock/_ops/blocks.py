"""SpaceToDepth, DepthToSpace and Tile: their front doors and checked calls.

Each front door hands its call to ``fastpath.operate`` with its
``Operator``: the fast path runs a call it has seen before (same arguments
and geometry) from its cache, and the general path every other. Both run
the operator's ``prepare``: the checks give the result's shape
(``layouts``) and the copy (a ``Prepared`` call).
"""
from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np
from numpy.typing import ArrayLike

from .. import _engine
from .._call.execute import Copier
from .._call.fastpath import operate
from .._call.layouts import DEPTH_FIRST, depth_to_space_shape, space_to_depth_shape, tile_shapes
from .._call.operation import Operator
from .._call.strided_copy import Prepared, StridedCopies, StridedCopy
from .._call.validate import check_block_arguments, check_repeats
from .docs import fill_doc

Repeats = Union[int, Sequence[int], np.ndarray]


def block_copier(layout: int, bs: int, depth_first: bool, to_depth: bool,
                 n_batch: int = 1) -> Copier:
    """The engine copy of space_to_depth (``to_depth``) or depth_to_space,
    with ``n_batch`` leading batch axes (pixel (un)shuffle: any number).

    A closure of its own: one in the public function would make Cython build
    its scope on every call, the fast path's included."""
    if to_depth:
        def copy(space: np.ndarray, depth: np.ndarray, n_threads: int) -> None:
            _engine.space_depth_copy(space, depth, layout, bs, depth_first, True, n_threads, n_batch)
    else:
        def copy(depth: np.ndarray, space: np.ndarray, n_threads: int) -> None:
            _engine.space_depth_copy(space, depth, layout, bs, depth_first, False, n_threads, n_batch)
    return copy


def block_copies(layout: int, bs: int, depth_first: bool, to_depth: bool,
                n_batch: int = 1) -> StridedCopies:
    """:func:`block_copier`'s copy as strided copies (None for the NCHW_VECT_C
    copies that the engine runs its own way)."""
    def copies(src: np.ndarray, dst: np.ndarray):
        space, depth = (src, dst) if to_depth else (dst, src)
        axes = _engine.space_depth_axes(space, depth, layout, bs, depth_first, to_depth, n_batch)
        return None if axes is None else [StridedCopy(*axes)]
    return copies


def prepare_block(x: np.ndarray, block_size, mode, data_format, to_depth: bool) -> Prepared:
    bs, mode, layout = check_block_arguments(x.shape, block_size, mode, data_format)
    shape_rule = space_to_depth_shape if to_depth else depth_to_space_shape
    depth_first = mode == DEPTH_FIRST
    return Prepared(shape_rule(x.shape, bs, layout), block_copier(layout, bs, depth_first, to_depth),
                    block_copies(layout, bs, depth_first, to_depth))


def prepare_space_to_depth(x: np.ndarray, block_size, mode, data_format) -> Prepared:
    return prepare_block(x, block_size, mode, data_format, True)


def prepare_depth_to_space(x: np.ndarray, block_size, mode, data_format) -> Prepared:
    return prepare_block(x, block_size, mode, data_format, False)


@fill_doc
def space_to_depth(x: ArrayLike, block_size: int, mode: str = "blocks_first",
                   data_format: str = "channels_first", *,
                   out: Optional[np.ndarray] = None,
                   num_threads: Optional[int] = None, dtype=None, scale=None,
                   offset=None) -> np.ndarray:
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
    %(convert)s
    %(out_and_result)s

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
    return operate(SPACE_TO_DEPTH, x, (block_size, mode, data_format), out, num_threads, dtype,
                   scale, offset)


@fill_doc
def depth_to_space(x: ArrayLike, block_size: int, mode: str = "blocks_first",
                   data_format: str = "channels_first", *,
                   out: Optional[np.ndarray] = None,
                   num_threads: Optional[int] = None, dtype=None, scale=None,
                   offset=None) -> np.ndarray:
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
    %(convert)s
    %(out_and_result)s

    Raises
    ------
    TypeError
        A ``block_size`` that is not an integer; an ``out`` of another dtype.
    MemoryError
        A new result that cannot be allocated (raised before anything is written).
    ValueError
        Bad rank, block size, mode or data format, or a channel count that
        ``block_size**K`` does not divide; a bad ``out``.

    Examples
    --------
    >>> import numpy as np, fastblock as fb
    >>> x = np.arange(4).reshape(1, 4, 1, 1)
    >>> fb.depth_to_space(x, 2)[0, 0]
    array([[0, 1],
           [2, 3]])
    """
    return operate(DEPTH_TO_SPACE, x, (block_size, mode, data_format), out, num_threads, dtype,
                   scale, offset)


@fill_doc
def tile(x: ArrayLike, repeats: Repeats, *, out: Optional[np.ndarray] = None,
         num_threads: Optional[int] = None, dtype=None, scale=None, offset=None) -> np.ndarray:
    """Repeat ``x`` along each axis, as ``numpy.tile`` does.

    The result is always a new array (or ``out``), unlike ``numpy.tile`` on
    an all-ones ``repeats``.

    Parameters
    ----------
    x : array_like
        Any rank (0-d included), dtype and memory layout (read in place).
    repeats : int, sequence of int, or 1-D integer array
        Repetitions per axis, each >= 0. A shorter ``repeats`` is padded with
        leading 1s; a longer one gives ``x`` leading axes of size 1.
    %(convert)s
    %(out_and_result)s

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
    return operate(TILE, x, (repeats,), out, num_threads, dtype, scale, offset)


def prepare_tile(x: np.ndarray, repeats) -> Prepared:
    reps, _, result_shape = tile_shapes(x.shape, check_repeats(repeats))

    def copy(src: np.ndarray, dst: np.ndarray, n_threads: int) -> None:
        _engine.tile_copy(src, dst, reps, n_threads)

    def copies(src: np.ndarray, dst: np.ndarray):
        return [StridedCopy(*_engine.tile_copy_axes(src, dst, reps))]

    return Prepared(result_shape, copy, copies)


# This file's operators, declared (the table, table.py, lists them).
SPACE_TO_DEPTH = Operator(space_to_depth, prepare_space_to_depth)
DEPTH_TO_SPACE = Operator(depth_to_space, prepare_depth_to_space)
TILE = Operator(tile, prepare_tile)
