"""SpaceToBatch and BatchToSpace (OpenVINO's -2 versions) on the copy engine.

Front doors only, as the permutes are (``permute``): each checks its
arguments, computes the result's shape and describes the copy as strided
copies, read from the input where it lies.

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
from numpy.typing import ArrayLike

from .._call.fastpath import operate
from .._call.operation import Operator
from .._call.strided_copy import Prepared, StridedCopy, copier_of
from .._call.validate import check_integer, check_shape_fits
from .docs import fill_doc

IntVector = Union[Sequence[int], np.ndarray]


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
    return operate(SPACE_TO_BATCH, x, (block_shape, pads_begin, pads_end),
                   out, num_threads, dtype, scale, offset)


def prepare_space_to_batch(x: np.ndarray, block_shape, pads_begin, pads_end) -> Prepared:
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
    return operate(BATCH_TO_SPACE, x, (block_shape, crops_begin, crops_end),
                   out, num_threads, dtype, scale, offset)


def prepare_batch_to_space(x: np.ndarray, block_shape, crops_begin, crops_end) -> Prepared:
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


# This file's operators, declared (the table, table.py, lists them).
SPACE_TO_BATCH = Operator(space_to_batch, prepare_space_to_batch)
BATCH_TO_SPACE = Operator(batch_to_space, prepare_batch_to_space)
