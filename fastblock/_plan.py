"""Plans on the Python side: layouts, result shapes, and generic copy plans.

The plans of SpaceToDepth, DepthToSpace and Tile are built in C on every call
(``_plans.pxi``). Operators that describe their copy from Python hand the
engine a :class:`CopyPlan`.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from . import _engine

BLOCKS_FIRST = "blocks_first"
DEPTH_FIRST = "depth_first"
CHANNELS_FIRST = _engine.CHANNELS_FIRST
CHANNELS_LAST = _engine.CHANNELS_LAST
NCHW_VECT_C = _engine.NCHW_VECT_C
# NCHW_VECT_C keeps channels in groups of this many, innermost.
VECT_C_GROUP = 4


class CopyPlan(NamedTuple):
    """One strided copy over shared iteration axes: each axis's extent and the
    byte step of each side along it, run once per (source offset, destination
    offset) in ``parts``."""

    extents: tuple[int, ...]
    src_strides: tuple[int, ...]
    dst_strides: tuple[int, ...]
    parts: tuple[tuple[int, int], ...] = ((0, 0),)

    def run(self, src: np.ndarray, dst: np.ndarray, num_threads: int) -> None:
        _engine.copy(src, dst, self.extents, self.src_strides, self.dst_strides,
                     self.parts, num_threads)


def physical_shape(batch: int, channels: int, spatial: Sequence[int], layout: int) -> tuple[int, ...]:
    """The array shape of a logical ``[N, C, D1, ..., DK]`` in ``layout``."""
    if layout == CHANNELS_FIRST:
        return (batch, channels, *spatial)
    if layout == CHANNELS_LAST:
        return (batch, *spatial, channels)
    return (batch, channels // VECT_C_GROUP, *spatial, VECT_C_GROUP)


def logical_shape(shape: Sequence[int], layout: int) -> tuple[int, int, tuple[int, ...]]:
    """``(N, C, (D1, ..., DK))`` of an array shape in ``layout``."""
    if layout == CHANNELS_FIRST:
        return shape[0], shape[1], tuple(shape[2:])
    if layout == CHANNELS_LAST:
        return shape[0], shape[-1], tuple(shape[1:-1])
    return shape[0], shape[1] * VECT_C_GROUP, tuple(shape[2:4])

