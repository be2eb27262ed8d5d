"""Permutes on the copy engine: transpose, PixelShuffle, SpaceToBatch.

The engine behind SpaceToDepth, DepthToSpace and Tile is a general strided
permute, so these operators are front doors only: each checks its arguments,
computes the result's shape and describes the copy as strided copies (``StridedCopy``:
shared iteration axes with a byte step for each side), a ``Prepared`` call
that the fast path (``_fastpath``) stores for the calls that repeat it. No
operator here has a copy loop of its own, and no input is copied or padded
before the engine reads it: strided inputs are read where they lie.

- ``transpose``: one plan, the destination's axes with the source's steps
  permuted.
- ``pixel_shuffle`` / ``pixel_unshuffle``: PyTorch's operators are
  DepthToSpace / SpaceToDepth ``depth_first`` over the last three axes, run
  by the same axes builder (``_engine.space_depth_copy``) with every leading axis
  as a batch axis of its own: they need not collapse into one axis, which a
  strided input may not allow as a view.
- ``space_to_batch`` / ``batch_to_space`` (OpenVINO SpaceToBatch-2 /
  BatchToSpace-2): the padded (or uncropped) spatial position ``o * B + b``
  of each axis is split into a grid position ``o`` and a block offset ``b``.
  With padding or crops that are not multiples of the block, the valid
  ``o`` range depends on ``b``, so one axis is at most three (``b`` range,
  ``o`` range) rectangles and the copy is several strided copies of different
  extents. The padding is written by the engine too: strided copies that read a
  single zero item with step 0 (as Tile reads a repeated axis).
"""
from __future__ import annotations

import itertools
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np
from numpy.exceptions import AxisError
from numpy.typing import ArrayLike

from ._api import block_copier, block_copies
from ._strided_copy import StridedCopy, Prepared, copier_of
from ._docs import fill_doc
from ._execute import execute
from ._fastpath import (BATCH_TO_SPACE, PIXEL_SHUFFLE, PIXEL_UNSHUFFLE, SPACE_TO_BATCH,
                        TRANSPOSE)
from ._convert import Convert, converting
from ._fastpath import call as _fast_call
from ._interop import arrays_in_out
from ._layouts import CHANNELS_FIRST, CHANNELS_LAST, depth_to_space_shape, space_to_depth_shape
from ._validate import check_integer, check_shape_fits

Axes = Union[None, int, Sequence[int], np.ndarray]
IntVector = Union[Sequence[int], np.ndarray]


# --------------------------------------------------------------------------
# Shared checks
# --------------------------------------------------------------------------

def _int_vector(value: IntVector, name: str, length: int) -> Tuple[int, ...]:
    """A 1-D sequence or integer array of ``length`` integers, as ints."""
    if isinstance(value, np.ndarray):
        if value.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got an array of shape {value.shape}")
        if value.dtype.kind not in "iu":
            raise TypeError(f"{name} must hold integers, got an array of dtype {value.dtype}")
        entries = [int(v) for v in value]
    else:
        items = None
        if not isinstance(value, (str, bytes)):
            try:
                items = list(value)
            except TypeError:
                pass
        if items is None:
            raise TypeError(f"{name} must be a sequence of {length} integers (one per axis of x), "
                            f"got {value!r}")
        entries = []
        for item in items:
            if isinstance(item, (list, tuple, np.ndarray)):
                raise ValueError(f"{name} must be 1-D, got a nested entry {item!r}")
            entries.append(check_integer(item, f"{name} entry"))
    if len(entries) != length:
        raise ValueError(f"{name} must have one entry per axis of x ({length}), "
                         f"got {len(entries)}: {tuple(entries)}")
    return tuple(entries)


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
    if dtype is None and scale is None and offset is None:
        result = _fast_call(TRANSPOSE, (axes,), x, out, num_threads, _prepare_transpose)
    else:
        result = _fast_call(TRANSPOSE, (axes,), x, out, num_threads, _prepare_transpose,
                            Convert(dtype, scale, offset))
    if result is not None:
        return result
    return _transpose_general(x, axes, out=out, num_threads=num_threads,
                              convert=converting(dtype, scale, offset))


def _prepare_transpose(x: np.ndarray, axes) -> Prepared:
    order = _normalize_axes(axes, x.ndim)
    result_shape = tuple([x.shape[a] for a in order])

    def copies(src: np.ndarray, dst: np.ndarray):
        return [StridedCopy(result_shape, tuple([src.strides[a] for a in order]), dst.strides)]

    return Prepared(result_shape, copier_of(copies), copies)


@arrays_in_out
def _transpose_general(x, axes, *, out=None, num_threads=None, convert=None):
    """The general path of :func:`transpose` (other libraries' arrays too)."""
    x = np.asarray(x)
    call = _prepare_transpose(x, axes)
    return execute(x, call.result_shape, out, call.copy, num_threads, convert=convert,
                   copies=call.copies)


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
    if dtype is None and scale is None and offset is None:
        result = _fast_call(PIXEL_SHUFFLE, (upscale_factor, data_format), x, out, num_threads,
                            _prepare_pixel_shuffle)
    else:
        result = _fast_call(PIXEL_SHUFFLE, (upscale_factor, data_format), x, out, num_threads,
                            _prepare_pixel_shuffle, Convert(dtype, scale, offset))
    if result is not None:
        return result
    return _pixel_general(x, upscale_factor, data_format, False, out=out, num_threads=num_threads,
                          convert=converting(dtype, scale, offset))


def _prepare_pixel_shuffle(x: np.ndarray, upscale_factor, data_format="channels_first") -> Prepared:
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


@arrays_in_out
def _pixel_general(x, factor, data_format, to_depth, *, out=None, num_threads=None,
                   convert=None):
    """The general path of :func:`pixel_unshuffle` (``to_depth``) and
    :func:`pixel_shuffle` (other libraries' arrays too)."""
    x = np.asarray(x)
    prepare = _prepare_pixel_unshuffle if to_depth else _prepare_pixel_shuffle
    call = prepare(x, factor, data_format)
    return execute(x, call.result_shape, out, call.copy, num_threads, convert=convert,
                   copies=call.copies)


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
    if dtype is None and scale is None and offset is None:
        result = _fast_call(PIXEL_UNSHUFFLE, (downscale_factor, data_format), x, out, num_threads,
                            _prepare_pixel_unshuffle)
    else:
        result = _fast_call(PIXEL_UNSHUFFLE, (downscale_factor, data_format), x, out,
                            num_threads, _prepare_pixel_unshuffle, Convert(dtype, scale, offset))
    if result is not None:
        return result
    return _pixel_general(x, downscale_factor, data_format, True, out=out, num_threads=num_threads,
                          convert=converting(dtype, scale, offset))


def _prepare_pixel_unshuffle(x: np.ndarray, downscale_factor,
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


# --------------------------------------------------------------------------
# space_to_batch / batch_to_space
# --------------------------------------------------------------------------

def _axis_segments(block: int, begin: int, size: int) -> List[Tuple[int, int, int, int]]:
    """Split one axis' block offsets ``b`` into ranges with the same valid ``o``.

    The spatial array (unpadded input of space_to_batch, cropped output of
    batch_to_space) holds positions ``begin <= o * block + b < begin + size``
    of the padded/uncropped axis. For a given ``b`` the valid ``o`` are
    ``ceil((begin - b) / block) <= o < ceil((begin + size - b) / block)``;
    both bounds step down by one where ``b`` passes ``begin % block`` and
    ``(begin + size) % block``, so there are at most three ranges of ``b``.
    Returns ``(b0, n_b, o_lo, o_end)`` for each; ``o_end - o_lo`` may be 0.
    """
    cuts = sorted({0, begin % block, (begin + size) % block, block})
    segments = []
    for b0, b1 in zip(cuts, cuts[1:]):
        o_lo = -((b0 - begin) // block)
        o_end = -((b0 - begin - size) // block)
        segments.append((b0, b1 - b0, o_lo, o_end))
    return segments


class _BatchGeometry:
    """Shapes of a SpaceToBatch-2 problem: the spatial array
    ``[batch, S_1, ..., S_k]`` and the batch array
    ``[P * batch, O_1, ..., O_k]``, ``P = prod(block[1:])``,
    ``O_i = (begin_i + S_i + end_i) / block_i``, whose batch index is
    ``((b_1 * block_2 + b_2) * ... + b_k) * batch + n``."""

    def __init__(self, batch: int, space: Sequence[int], grid: Sequence[int],
                 blocks: Sequence[int], begins: Sequence[int]):
        self.batch = batch
        self.space = tuple(space)
        self.grid = tuple(grid)
        self.blocks = tuple(blocks)
        self.begins = tuple(begins)
        self.segments = [_axis_segments(b, p, s) for b, p, s in zip(blocks, begins, space)]

    def block_steps(self, batch_step: int) -> List[int]:
        """Byte step of each block offset ``b_i`` along the batch array's axis 0."""
        steps = []
        step = batch_step * self.batch
        for block in reversed(self.blocks):
            steps.append(step)
            step *= block
        return steps[::-1]

    def data_copies(self, space_strides: Sequence[int],
                    batch_strides: Sequence[int]) -> List[StridedCopy]:
        """The strided copies from the spatial array (src) into the batch array (dst)."""
        if self.batch == 0:
            return []
        block_steps = self.block_steps(batch_strides[0])
        copies = []
        for chosen in itertools.product(*self.segments):
            extents = [self.batch]
            src_steps = [space_strides[0]]
            dst_steps = [batch_strides[0]]
            src_offset = dst_offset = 0
            for i, (b0, n_b, o_lo, o_end) in enumerate(chosen):
                n_o = o_end - o_lo
                block, s_step = self.blocks[i], space_strides[i + 1]
                # First spatial index of the rectangle: o_lo * block + b0 - begin.
                src_offset += (o_lo * block + b0 - self.begins[i]) * s_step
                dst_offset += b0 * block_steps[i] + o_lo * batch_strides[i + 1]
                extents += [n_b, n_o]
                # A step along an axis of extent 1 is never taken; 0 keeps an
                # unused huge product (block * stride) out of the engine.
                src_steps += [s_step if n_b > 1 else 0, block * s_step if n_o > 1 else 0]
                dst_steps += [block_steps[i] if n_b > 1 else 0,
                              batch_strides[i + 1] if n_o > 1 else 0]
            if 0 in extents:
                continue
            copies.append(StridedCopy(tuple(extents), tuple(src_steps), tuple(dst_steps),
                                  ((src_offset, dst_offset),)))
        return copies

    def padding_copies(self, batch_strides: Sequence[int]) -> List[StridedCopy]:
        """The strided copies writing one zero item (source step 0) over every padded
        position of the batch array: for each axis, the ``o`` outside the
        valid range of each of its ``b`` ranges, all other axes whole.
        Corners padded on two axes are written twice (with zeros)."""
        if self.batch == 0:
            return []
        block_steps = self.block_steps(batch_strides[0])
        k = len(self.blocks)
        copies = []
        for i in range(k):
            for b0, n_b, o_lo, o_end in self.segments[i]:
                for lo, hi in ((0, o_lo), (o_end, self.grid[i])):
                    if hi <= lo:
                        continue
                    extents = [self.batch]
                    dst_steps = [batch_strides[0]]
                    for j in range(k):
                        if j == i:
                            extents += [n_b, hi - lo]
                        else:
                            extents += [self.blocks[j], self.grid[j]]
                        dst_steps += [block_steps[j], batch_strides[j + 1]]
                    if 0 in extents:
                        continue
                    dst_steps = [s if e > 1 else 0 for e, s in zip(extents, dst_steps)]
                    offset = b0 * block_steps[i] + lo * batch_strides[i + 1]
                    copies.append(StridedCopy(tuple(extents), (0,) * len(extents), tuple(dst_steps),
                                          ((0, offset),)))
        return copies


def _space_to_batch_copies(geometry: _BatchGeometry):
    """The copies of space_to_batch: data copies from the source, then the
    padding from one zero item of the destination's dtype (source step 0)."""

    def copies(src: np.ndarray, dst: np.ndarray):
        return geometry.data_copies(src.strides, dst.strides) + [
            strided._replace(zero_source=True) for strided in geometry.padding_copies(dst.strides)]

    return copies


def _batch_to_space_copies(geometry: _BatchGeometry):
    """The copies of batch_to_space: space_to_batch's data copies read
    backwards (no padding: every result item comes from ``x``)."""

    def copies(src: np.ndarray, dst: np.ndarray):
        return [StridedCopy(strided.extents, strided.dst_strides, strided.src_strides,
                            tuple((d, s) for s, d in strided.parts))
                for strided in geometry.data_copies(dst.strides, src.strides)]

    return copies


def _block_shape(block_shape: IntVector, ndim: int) -> Tuple[int, ...]:
    blocks = _int_vector(block_shape, "block_shape", ndim)
    for axis, block in enumerate(blocks):
        if block < 1:
            raise ValueError(f"block_shape entries must be >= 1, got {block} for axis {axis}")
    if blocks[0] != 1:
        raise ValueError(f"block_shape[0] (the batch axis) must be 1, got {blocks[0]}")
    return blocks


def _margins(value: IntVector, name: str, ndim: int) -> Tuple[int, ...]:
    margins = _int_vector(value, name, ndim)
    for axis, m in enumerate(margins):
        if m < 0:
            raise ValueError(f"{name} entries must be >= 0, got {m} for axis {axis}")
    if margins[0] != 0:
        raise ValueError(f"{name}[0] (the batch axis) must be 0, got {margins[0]}")
    return margins


def _check_batch_rank(x: np.ndarray) -> None:
    if x.ndim < 2:
        raise ValueError(f"x must have rank >= 2 ([batch, D1, ...]), got rank {x.ndim}")


@fill_doc
def space_to_batch(x: ArrayLike, block_shape: IntVector, pads_begin: IntVector,
                   pads_end: IntVector, *, out: Optional[np.ndarray] = None,
                   num_threads: Optional[int] = None, dtype=None, scale=None,
                   offset=None) -> np.ndarray:
    """OpenVINO SpaceToBatch-2: zero-pad, cut into blocks, move blocks to the batch.

    For ``x`` of shape ``[batch, D_1, ..., D_k]`` and ``B_i = block_shape[i]``,
    ``P_i = pads_begin[i] + D_i + pads_end[i]``::

        xp = zero-pad(x, pads_begin, pads_end)
        x' = reshape(xp, [batch, P_1/B_1, B_1, ..., P_k/B_k, B_k])
        x'' = transpose(x', [2, 4, ..., 2k, 0, 1, 3, ..., 2k-1])
        y = reshape(x'', [batch * B_1 * ... * B_k, P_1/B_1, ..., P_k/B_k])

    This is TensorFlow's ``space_to_batch_nd`` when ``x`` is ``[N, H, W, C]``
    and the channel entries are 1 (block 1, no padding). The padding is
    written straight into the result (no padded copy of ``x`` is made);
    zero is the dtype's zero (all-zero bytes; ``0`` for ``object``, ``""``
    for ``StringDType``).

    Parameters
    ----------
    x : array_like
        Rank >= 2, any dtype and memory layout (read in place).
    block_shape : sequence of int or 1-D integer array
        One entry >= 1 per axis of ``x``; ``block_shape[0]`` must be 1.
    pads_begin, pads_end : sequence of int or 1-D integer array
        One entry >= 0 per axis; entry 0 (batch) must be 0, and
        ``block_shape[i]`` must divide every padded size ``P_i``.
    %(convert)s
    %(out_and_result)s

    Raises
    ------
    ValueError
        Rank < 2; an argument of the wrong length, a bad entry, a padded size
        that the block does not divide; a result too large; a bad ``out``.
    TypeError
        A non-integer entry; an ``out`` of another dtype.

    Examples
    --------
    >>> import numpy as np, fastblock as fb
    >>> x = np.arange(1, 5).reshape(1, 2, 2)
    >>> fb.space_to_batch(x, [1, 2, 2], [0, 0, 0], [0, 0, 0]).ravel()
    array([1, 2, 3, 4])
    >>> fb.space_to_batch(np.arange(1, 4).reshape(1, 3), [1, 2], [0, 1], [0, 0])
    array([[0, 2],
           [1, 3]])
    """
    if dtype is None and scale is None and offset is None:
        result = _fast_call(SPACE_TO_BATCH, (block_shape, pads_begin, pads_end), x, out,
                            num_threads, _prepare_space_to_batch)
    else:
        result = _fast_call(SPACE_TO_BATCH, (block_shape, pads_begin, pads_end), x, out,
                            num_threads, _prepare_space_to_batch, Convert(dtype, scale, offset))
    if result is not None:
        return result
    return _batch_general(x, block_shape, pads_begin, pads_end, True, out=out,
                          num_threads=num_threads, convert=converting(dtype, scale, offset))


@arrays_in_out
def _batch_general(x, block_shape, begin, end, to_batch, *, out=None, num_threads=None,
                   convert=None):
    """The general path of :func:`space_to_batch` (``to_batch``) and
    :func:`batch_to_space` (other libraries' arrays too)."""
    x = np.asarray(x)
    prepare = _prepare_space_to_batch if to_batch else _prepare_batch_to_space
    call = prepare(x, block_shape, begin, end)
    return execute(x, call.result_shape, out, call.copy, num_threads,
                   writes_zeros=call.writes_zeros, convert=convert, copies=call.copies)


def _prepare_space_to_batch(x: np.ndarray, block_shape, pads_begin, pads_end) -> Prepared:
    _check_batch_rank(x)
    blocks = _block_shape(block_shape, x.ndim)
    begins = _margins(pads_begin, "pads_begin", x.ndim)
    ends = _margins(pads_end, "pads_end", x.ndim)
    grid = []
    for axis in range(1, x.ndim):
        padded = begins[axis] + x.shape[axis] + ends[axis]
        if padded % blocks[axis]:
            raise ValueError(
                f"block_shape[{axis}] = {blocks[axis]} must divide the padded size of axis {axis}: "
                f"pads_begin {begins[axis]} + {x.shape[axis]} + pads_end {ends[axis]} = {padded}")
        grid.append(padded // blocks[axis])
    batch = x.shape[0]
    result_shape = (batch * int(np.prod(blocks, dtype=object)), *grid)
    check_shape_fits(result_shape, x.dtype)
    geometry = _BatchGeometry(batch, x.shape[1:], grid, blocks[1:], begins[1:])
    copies = _space_to_batch_copies(geometry)
    return Prepared(result_shape, copier_of(copies), copies, writes_zeros=True)


@fill_doc
def batch_to_space(x: ArrayLike, block_shape: IntVector, crops_begin: IntVector,
                   crops_end: IntVector, *, out: Optional[np.ndarray] = None,
                   num_threads: Optional[int] = None, dtype=None, scale=None,
                   offset=None) -> np.ndarray:
    """OpenVINO BatchToSpace-2: move batch blocks back into space, then crop.

    For ``x`` of shape ``[batch, D_1, ..., D_k]`` and ``B_i = block_shape[i]``,
    ``P = B_1 * ... * B_k`` dividing ``batch``::

        x' = reshape(x, [B_1, ..., B_k, batch / P, D_1, ..., D_k])
        x'' = transpose(x', [k, k+1, 0, k+2, 1, ..., 2k, k-1])
        y = reshape(x'', [batch / P, D_1 * B_1, ..., D_k * B_k])
        y = y[:, crops_begin[1] : D_1*B_1 - crops_end[1], ...]

    The inverse of :func:`space_to_batch` with crops equal to the pads; it is
    TensorFlow's ``batch_to_space_nd`` when the channel entries are 1. The
    crop is never materialised: only the kept items are copied.

    Parameters
    ----------
    x : array_like
        Rank >= 2, any dtype and memory layout (read in place).
    block_shape : sequence of int or 1-D integer array
        One entry >= 1 per axis of ``x``; ``block_shape[0]`` must be 1 and
        the product must divide ``x.shape[0]``.
    crops_begin, crops_end : sequence of int or 1-D integer array
        One entry >= 0 per axis; entry 0 must be 0, and
        ``crops_begin[i] + crops_end[i] <= D_i * B_i``.
    %(convert)s
    %(out_and_result)s

    Raises
    ------
    ValueError
        Rank < 2; an argument of the wrong length, a bad entry, a batch the
        block product does not divide, crops larger than the axis; a result
        too large; a bad ``out``.
    TypeError
        A non-integer entry; an ``out`` of another dtype.

    Examples
    --------
    >>> import numpy as np, fastblock as fb
    >>> x = np.arange(1, 5).reshape(4, 1, 1)
    >>> fb.batch_to_space(x, [1, 2, 2], [0, 0, 0], [0, 0, 0])
    array([[[1, 2],
            [3, 4]]])
    >>> fb.batch_to_space(np.array([[0, 2], [1, 3]]), [1, 2], [0, 1], [0, 0])
    array([[1, 2, 3]])
    """
    if dtype is None and scale is None and offset is None:
        result = _fast_call(BATCH_TO_SPACE, (block_shape, crops_begin, crops_end), x, out,
                            num_threads, _prepare_batch_to_space)
    else:
        result = _fast_call(BATCH_TO_SPACE, (block_shape, crops_begin, crops_end), x, out,
                            num_threads, _prepare_batch_to_space, Convert(dtype, scale, offset))
    if result is not None:
        return result
    return _batch_general(x, block_shape, crops_begin, crops_end, False, out=out,
                          num_threads=num_threads, convert=converting(dtype, scale, offset))


def _prepare_batch_to_space(x: np.ndarray, block_shape, crops_begin, crops_end) -> Prepared:
    _check_batch_rank(x)
    blocks = _block_shape(block_shape, x.ndim)
    begins = _margins(crops_begin, "crops_begin", x.ndim)
    ends = _margins(crops_end, "crops_end", x.ndim)
    n_blocks = int(np.prod(blocks, dtype=object))
    if x.shape[0] % n_blocks:
        raise ValueError(f"the product of block_shape ({n_blocks}) must divide the batch size; "
                         f"x has batch {x.shape[0]}")
    space = []
    for axis in range(1, x.ndim):
        full = x.shape[axis] * blocks[axis]
        if begins[axis] + ends[axis] > full:
            raise ValueError(
                f"crops of axis {axis} remove more than its {full} positions "
                f"({x.shape[axis]} * block_shape {blocks[axis]}): crops_begin {begins[axis]} + "
                f"crops_end {ends[axis]} = {begins[axis] + ends[axis]}")
        space.append(full - begins[axis] - ends[axis])
    batch = x.shape[0] // n_blocks
    result_shape = (batch, *space)
    check_shape_fits(result_shape, x.dtype)
    geometry = _BatchGeometry(batch, space, x.shape[1:], blocks[1:], begins[1:])
    copies = _batch_to_space_copies(geometry)
    return Prepared(result_shape, copier_of(copies), copies)
