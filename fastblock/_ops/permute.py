"""Permutes on the copy engine: transpose and PixelShuffle.

The engine behind SpaceToDepth, DepthToSpace and Tile is a general strided
permute, so these operators are front doors only: each checks its arguments,
computes the result's shape and describes the copy as strided copies
(``StridedCopy``: shared iteration axes with a byte step for each side), a
``Prepared`` call that the fast path stores for the calls that repeat it. No
operator here has a copy loop of its own, and no input is copied before the
engine reads it: strided inputs are read where they lie.

- ``transpose``: one plan, the destination's axes with the source's steps
  permuted.
- ``pixel_shuffle`` / ``pixel_unshuffle``: PyTorch's operators are
  DepthToSpace / SpaceToDepth ``depth_first`` over the last three axes, run
  by the same axes builder (``_engine.space_depth_copy``) with every leading axis
  as a batch axis of its own: they need not collapse into one axis, which a
  strided input may not allow as a view.
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple, Union

import numpy as np
from numpy.exceptions import AxisError
from numpy.typing import ArrayLike

from .._call.fastpath import operate
from .._call.layouts import CHANNELS_FIRST, CHANNELS_LAST, depth_to_space_shape, space_to_depth_shape
from .._call.operation import Operator
from .._call.strided_copy import Prepared, StridedCopy, copier_of
from .._call.validate import check_integer, check_shape_fits
from .blocks import block_copier, block_copies
from .docs import fill_doc

Axes = Union[None, int, Sequence[int], np.ndarray]


def _check_factor(value, name: str) -> int:
    factor = check_integer(value, name)
    if factor < 1:
        raise ValueError(f"{name} must be >= 1, got {factor}")
    return factor


# --------------------------------------------------------------------------
# transpose
# --------------------------------------------------------------------------

def _normalize_axes(axes: Axes, ndim: int) -> Tuple[int, ...]:
    """NumPy's rules for ``numpy.transpose(x, axes)``, with its messages."""
    if axes is None:
        return tuple(range(ndim - 1, -1, -1))
    if isinstance(axes, np.ndarray):
        if axes.ndim > 1:
            raise ValueError(f"axes must be 1-D, got an array of shape {axes.shape}")
        if axes.dtype.kind not in "iu":
            raise TypeError(f"axes must hold integers, got an array of dtype {axes.dtype}")
        entries = [int(a) for a in axes.reshape(-1)]
    elif isinstance(axes, (int, np.integer)) and not isinstance(axes, (bool, np.bool_)):
        entries = [int(axes)]
    else:
        try:
            items = list(axes)
        except TypeError:
            raise TypeError(f"axes must be None or a sequence of integers, got {axes!r}") from None
        entries = [check_integer(a, "axes entry") for a in items]
    if len(entries) != ndim:
        raise ValueError(f"axes don't match array: axes {tuple(entries)} has {len(entries)} "
                         f"entries, x has {ndim} axes")
    normalized = []
    for axis in entries:
        if not -ndim <= axis < ndim:
            raise AxisError(axis, ndim, "axes")
        normalized.append(axis % ndim)
    if len(set(normalized)) != ndim:
        raise ValueError(f"repeated axis in transpose: axes {tuple(entries)} names an axis twice")
    return tuple(normalized)


@fill_doc
def transpose(x: ArrayLike, axes: Axes = None, *, out: Optional[np.ndarray] = None,
              num_threads: Optional[int] = None, dtype=None, scale=None,
              offset=None) -> np.ndarray:
    """Permute the axes of ``x`` into a new C-contiguous array (or ``out``).

    The values are those of ``numpy.transpose(x, axes)``; the result is what
    ``numpy.ascontiguousarray(numpy.transpose(x, axes))`` gives, of shape
    ``[x.shape[a] for a in axes]``, computed by the multithreaded,
    cache-blocked copy engine.

    Parameters
    ----------
    x : array_like
        Any rank (0-d included), dtype and memory layout (read in place).
    axes : sequence of int, optional
        A permutation of ``range(x.ndim)``; negative entries count from the
        end. Default: the axes reversed, as in NumPy.
    %(convert)s
    %(out_and_result)s

    Raises
    ------
    ValueError
        ``axes`` of the wrong length ("axes don't match array") or naming an
        axis twice ("repeated axis in transpose"); a bad ``out``.
    numpy.exceptions.AxisError
        An entry of ``axes`` out of range.
    TypeError
        An entry of ``axes`` that is not an integer; an ``out`` of another dtype.

    Examples
    --------
    >>> import numpy as np, fastblock as fb
    >>> x = np.arange(6).reshape(2, 3)
    >>> fb.transpose(x)
    array([[0, 3],
           [1, 4],
           [2, 5]])
    >>> fb.transpose(np.zeros((2, 3, 4, 5)), (0, 2, 3, 1)).shape
    (2, 4, 5, 3)
    """
    return operate(TRANSPOSE, x, (axes,), out, num_threads, dtype, scale, offset)


def prepare_transpose(x: np.ndarray, axes) -> Prepared:
    order = _normalize_axes(axes, x.ndim)
    result_shape = tuple([x.shape[a] for a in order])

    def copies(src: np.ndarray, dst: np.ndarray):
        return [StridedCopy(result_shape, tuple([src.strides[a] for a in order]), dst.strides)]

    return Prepared(result_shape, copier_of(copies), copies)


# --------------------------------------------------------------------------
# pixel_shuffle / pixel_unshuffle
# --------------------------------------------------------------------------

def _pixel_arguments(x: np.ndarray, factor, factor_name: str, data_format):
    """``(r, layout, (C, H, W), leading shape)`` of a pixel (un)shuffle."""
    r = _check_factor(factor, factor_name)
    key = data_format.lower() if isinstance(data_format, str) else None
    if key not in ("channels_first", "channels_last"):
        raise ValueError(f"data_format must be 'channels_first' ([*, C, H, W]) or "
                         f"'channels_last' ([*, H, W, C]), got {data_format!r}")
    channels_last = key == "channels_last"
    if x.ndim < 3:
        layout_name = "[*, H, W, C]" if channels_last else "[*, C, H, W]"
        raise ValueError(f"x must have rank >= 3 ({layout_name}), got rank {x.ndim}")
    if channels_last:
        height, width, channels = x.shape[-3:]
    else:
        channels, height, width = x.shape[-3:]
    layout = CHANNELS_LAST if channels_last else CHANNELS_FIRST
    return r, layout, (channels, height, width), x.shape[:-3]


@fill_doc
def pixel_shuffle(x: ArrayLike, upscale_factor: int, data_format: str = "channels_first", *,
                  out: Optional[np.ndarray] = None,
                  num_threads: Optional[int] = None, dtype=None, scale=None,
                  offset=None) -> np.ndarray:
    """PyTorch's ``pixel_shuffle``: ``[*, C*r*r, H, W]`` to ``[*, C, H*r, W*r]``.

    ``result[..., c, h*r + i, w*r + j] = x[..., c*r*r + i*r + j, h, w]`` with
    ``r = upscale_factor``: DepthToSpace ``depth_first`` (ONNX ``CRD``) on the
    last three axes, with any number of leading batch axes.

    Parameters
    ----------
    x : array_like
        Rank >= 3, any dtype and memory layout (read in place; the leading
        axes need not be collapsible into one).
    upscale_factor : int
        ``r >= 1``; ``r * r`` must divide the channel count.
    data_format : {"channels_first", "channels_last"}
        ``[*, C, H, W]`` (PyTorch) or ``[*, H, W, C]``, with the same channel
        numbering.
    %(convert)s
    %(out_and_result)s

    Raises
    ------
    ValueError
        Rank < 3, ``upscale_factor`` < 1, a channel count that ``r * r`` does
        not divide, an unknown ``data_format``, a result too large; a bad ``out``.
    TypeError
        An ``upscale_factor`` that is not an integer.

    Notes
    -----
    For an input with no elements the result has the documented shape
    ``[*, C/r**2, H*r, W*r]`` (PyTorch's meta and CUDA kernels agree;
    PyTorch's CPU ``pixel_unshuffle`` returns the input's shape there).

    Examples
    --------
    >>> import numpy as np, fastblock as fb
    >>> fb.pixel_shuffle(np.arange(4).reshape(1, 4, 1, 1), 2)[0, 0]
    array([[0, 1],
           [2, 3]])
    >>> fb.pixel_shuffle(np.zeros((5, 2, 12, 3, 4)), 2).shape
    (5, 2, 3, 6, 8)
    """
    return operate(PIXEL_SHUFFLE, x, (upscale_factor, data_format),
                   out, num_threads, dtype, scale, offset)


def prepare_pixel_shuffle(x: np.ndarray, upscale_factor, data_format="channels_first") -> Prepared:
    r, layout, (channels, height, width), lead = _pixel_arguments(
        x, upscale_factor, "upscale_factor", data_format)
    if channels % (r * r):
        raise ValueError(f"upscale_factor**2 = {r * r} must divide the channel count; "
                         f"x has {channels} channels")
    result_shape = depth_to_space_shape(x.shape, r, layout, len(lead))
    check_shape_fits(result_shape, x.dtype)
    # DepthToSpace depth_first; every leading axis is a batch axis of its own.
    return Prepared(result_shape, block_copier(layout, r, True, False, len(lead)),
                    block_copies(layout, r, True, False, len(lead)))


@fill_doc
def pixel_unshuffle(x: ArrayLike, downscale_factor: int, data_format: str = "channels_first", *,
                    out: Optional[np.ndarray] = None,
                    num_threads: Optional[int] = None, dtype=None, scale=None,
                    offset=None) -> np.ndarray:
    """PyTorch's ``pixel_unshuffle``: ``[*, C, H*r, W*r]`` to ``[*, C*r*r, H, W]``.

    ``result[..., c*r*r + i*r + j, h, w] = x[..., c, h*r + i, w*r + j]`` with
    ``r = downscale_factor``: SpaceToDepth ``depth_first`` on the last three
    axes, with any number of leading batch axes; the inverse of
    :func:`pixel_shuffle`.

    Parameters
    ----------
    x : array_like
        Rank >= 3, any dtype and memory layout (read in place).
    downscale_factor : int
        ``r >= 1``, dividing the height and the width.
    data_format : {"channels_first", "channels_last"}
        ``[*, C, H, W]`` (PyTorch) or ``[*, H, W, C]``.
    %(convert)s
    %(out_and_result)s

    Raises
    ------
    ValueError
        Rank < 3, ``downscale_factor`` < 1, a height or width that it does
        not divide, an unknown ``data_format``; a bad ``out``.
    TypeError
        A ``downscale_factor`` that is not an integer.

    Examples
    --------
    >>> import numpy as np, fastblock as fb
    >>> fb.pixel_unshuffle(np.arange(4).reshape(1, 1, 2, 2), 2).ravel()
    array([0, 1, 2, 3])
    >>> fb.pixel_unshuffle(np.zeros((5, 2, 3, 8, 6)), 2).shape
    (5, 2, 12, 4, 3)
    """
    return operate(PIXEL_UNSHUFFLE, x, (downscale_factor, data_format),
                   out, num_threads, dtype, scale, offset)


def prepare_pixel_unshuffle(x: np.ndarray, downscale_factor,
                             data_format="channels_first") -> Prepared:
    r, layout, (channels, height, width), lead = _pixel_arguments(
        x, downscale_factor, "downscale_factor", data_format)
    for name, size in (("height", height), ("width", width)):
        if size % r:
            raise ValueError(f"downscale_factor {r} must divide the height and the width; "
                             f"x has {name} {size}")
    result_shape = space_to_depth_shape(x.shape, r, layout, len(lead))
    check_shape_fits(result_shape, x.dtype)
    # SpaceToDepth depth_first; every leading axis is a batch axis of its own.
    return Prepared(result_shape, block_copier(layout, r, True, True, len(lead)),
                    block_copies(layout, r, True, True, len(lead)))


# This file's operators, declared (the table, table.py, lists them).
TRANSPOSE = Operator(transpose, prepare_transpose)
PIXEL_SHUFFLE = Operator(pixel_shuffle, prepare_pixel_shuffle)
PIXEL_UNSHUFFLE = Operator(pixel_unshuffle, prepare_pixel_unshuffle)
