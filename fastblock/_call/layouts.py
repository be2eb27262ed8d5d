"""Modes, data formats and result shapes: the one home of these facts.

The operators (``fastblock._ops``) and the Dask wrappers read them from this
module; the layout codes, which the engine's C takes as compile-time
constants, it reads from the engine (``_engine/operators/axes.pxi``).

A layout is where the channel axis lies; every array is seen as the logical
``[N, C, D1, ..., DK]`` (N may be several leading batch axes):

- ``CHANNELS_FIRST``: ``[N, C, D1, ..., DK]``
- ``CHANNELS_LAST``: ``[N, D1, ..., DK, C]``
- ``NCHW_VECT_C``: ``[N, C/4, H, W, 4]``, channel ``c`` at group ``c // 4``,
  lane ``c % 4``.
"""
from __future__ import annotations

from typing import Sequence

from .. import _engine

# Channel order of the depth side: with block offset B (the offsets in a
# block read as a base-bs number, the last spatial axis the lowest digit),
# channel c of C and M = bs**K, the depth channel is
#     blocks_first (ONNX DCR): B * C + c        depth_first (ONNX CRD): c * M + B
BLOCKS_FIRST = "blocks_first"
DEPTH_FIRST = "depth_first"

# Layout codes, as the engine takes them.
CHANNELS_FIRST = _engine.CHANNELS_FIRST
CHANNELS_LAST = _engine.CHANNELS_LAST
NCHW_VECT_C = _engine.NCHW_VECT_C
# NCHW_VECT_C keeps channels in groups of this many, innermost.
VECT_C_GROUP = _engine.NCHW_VECT_C_GROUP

# Each accepted mode in lower case -> its canonical name.
MODES = {
    "blocks_first": BLOCKS_FIRST,
    "dcr": BLOCKS_FIRST,
    "depth_first": DEPTH_FIRST,
    "crd": DEPTH_FIRST,
}

# Each accepted data_format in lower case -> (layout, required rank or None).
DATA_FORMATS = {
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


class LayoutAxes:
    """Where the channel, spatial and lane axes of a layout lie in an array
    of rank ``ndim`` with ``n_batch`` leading batch axes (NCHW_VECT_C: one).
    For NCHW_VECT_C the channel axis counts groups and ``lane`` is the axis
    of the 4 lanes; elsewhere ``lane`` is None."""

    __slots__ = ("channel", "spatial", "lane")

    def __init__(self, layout: int, ndim: int, n_batch: int = 1):
        if layout == CHANNELS_FIRST:
            self.channel, self.spatial, self.lane = n_batch, tuple(range(n_batch + 1, ndim)), None
        elif layout == CHANNELS_LAST:
            self.channel, self.spatial, self.lane = ndim - 1, tuple(range(n_batch, ndim - 1)), None
        else:
            self.channel, self.spatial, self.lane = 1, (2, 3), 4


def logical_shape(shape: Sequence[int], layout: int,
                  n_batch: int = 1) -> tuple[tuple[int, ...], int, tuple[int, ...]]:
    """``((N...), C, (D1, ..., DK))`` of an array shape in ``layout``."""
    axes = LayoutAxes(layout, len(shape), n_batch)
    channels = shape[axes.channel] * (VECT_C_GROUP if layout == NCHW_VECT_C else 1)
    return tuple(shape[:n_batch]), channels, tuple([shape[a] for a in axes.spatial])


def physical_shape(batch: Sequence[int], channels: int, spatial: Sequence[int],
                   layout: int) -> tuple[int, ...]:
    """The array shape of a logical ``[N..., C, D1, ..., DK]`` in ``layout``."""
    if layout == CHANNELS_FIRST:
        return (*batch, channels, *spatial)
    if layout == CHANNELS_LAST:
        return (*batch, *spatial, channels)
    return (*batch, channels // VECT_C_GROUP, *spatial, VECT_C_GROUP)


# The result-shape rules. A size may be NaN (a Dask axis whose length is not
# known yet): ``size % bs > 0`` is False for it, so it passes the checks and
# stays NaN in the result.

def space_to_depth_shape(shape: Sequence[int], block_size: int, layout: int,
                         n_batch: int = 1) -> tuple[int, ...]:
    """``[N, C * bs**K, D1 / bs, ..., DK / bs]`` in ``layout``; ValueError
    when ``block_size`` does not divide a spatial size."""
    batch, channels, spatial = logical_shape(shape, layout, n_batch)
    for axis, size in enumerate(spatial):
        if size % block_size > 0:
            raise ValueError(f"block_size {block_size} must divide every spatial size; "
                             f"spatial axis {axis} has size {size}")
    return physical_shape(batch, channels * block_size ** len(spatial),
                          [size // block_size for size in spatial], layout)


def depth_to_space_shape(shape: Sequence[int], block_size: int, layout: int,
                         n_batch: int = 1) -> tuple[int, ...]:
    """``[N, C / bs**K, D1 * bs, ..., DK * bs]`` in ``layout``; ValueError
    when ``bs**K`` does not divide the channel count, or (NCHW_VECT_C) the
    result's channel count is not a multiple of 4."""
    batch, channels, spatial = logical_shape(shape, layout, n_batch)
    blocks = block_size ** len(spatial)
    if channels % blocks:
        raise ValueError(f"block_size**{len(spatial)} = {blocks} must divide the channel "
                         f"count; x has {channels} channels")
    space_channels = channels // blocks
    if layout == NCHW_VECT_C and space_channels % VECT_C_GROUP:
        raise ValueError(f"NCHW_VECT_C needs a result channel count that is a multiple of 4; "
                         f"{channels} channels / {blocks} gives {space_channels}")
    return physical_shape(batch, space_channels, [size * block_size for size in spatial], layout)


def tile_shapes(shape: Sequence[int], repeats: Sequence[int]
                ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """``(repeats, source shape, result shape)`` of ``numpy.tile``: the
    shorter of ``repeats`` and ``shape`` padded with leading 1s."""
    if len(repeats) < len(shape):
        repeats = (1,) * (len(shape) - len(repeats)) + tuple(repeats)
    source = (1,) * (len(repeats) - len(shape)) + tuple(shape)
    return tuple(repeats), source, tuple([r * size for r, size in zip(repeats, source)])
