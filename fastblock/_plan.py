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


# --- TRANSITIONAL (removed at integration): the Python plan builders ---
import itertools
class LogicalView(NamedTuple):
    """An array seen as ``[N, C, D1, ..., DK]`` whatever its physical layout.

    ``channel_strides`` has one step for a plain channel axis, or two
    (group step, step inside the group) for NCHW_VECT_C, whose channel
    ``c`` lives at group ``c // 4``, position ``c % 4``."""

    batch: int
    batch_stride: int
    channels: int
    channel_strides: tuple[int, ...]
    spatial: tuple[int, ...]
    spatial_strides: tuple[int, ...]


def logical_view(shape: Sequence[int], strides: Sequence[int], layout: str) -> LogicalView:
    if layout == CHANNELS_FIRST:
        return LogicalView(shape[0], strides[0], shape[1], (strides[1],),
                           tuple(shape[2:]), tuple(strides[2:]))
    if layout == CHANNELS_LAST:
        return LogicalView(shape[0], strides[0], shape[-1], (strides[-1],),
                           tuple(shape[1:-1]), tuple(strides[1:-1]))
    # NCHW_VECT_C: [N, C/4, H, W, 4]
    return LogicalView(shape[0], strides[0], shape[1] * VECT_C_GROUP, (strides[1], strides[4]),
                       tuple(shape[2:4]), tuple(strides[2:4]))


def _old_physical_shape(batch: int, channels: int, spatial: Sequence[int], layout: str) -> tuple[int, ...]:
    """The array shape of a logical ``[N, C, D1, ..., DK]`` in ``layout``."""
    if layout == CHANNELS_FIRST:
        return (batch, channels, *spatial)
    if layout == CHANNELS_LAST:
        return (batch, *spatial, channels)
    return (batch, channels // VECT_C_GROUP, *spatial, VECT_C_GROUP)


def block_plan(space: LogicalView, depth: LogicalView, block_size: int, mode: str) -> CopyPlan:
    """Axes shared by the space array and the depth array of a block move.

    Returns a plan whose ``src_strides`` are the space array's steps and
    whose ``dst_strides`` are the depth array's; depth_to_space swaps them.

    Depth channel numbering (B is the block offset ``b1 .. bK`` read as a
    base-``bs`` number, M = bs**K, C the space array's channel count):
    blocks_first ``c_depth = B * C + c``; depth_first ``c_depth = c * M + B``.
    """
    bs = block_size
    n_spatial = len(space.spatial)
    channels = space.channels
    blocks = bs ** n_spatial
    # Weight of block offset b_k in B: the last spatial axis is the lowest digit.
    weights = [bs ** (n_spatial - 1 - k) for k in range(n_spatial)]

    extents = [space.batch]
    space_steps = [space.batch_stride]
    depth_steps = [depth.batch_stride]
    for k in range(n_spatial):
        extents.append(space.spatial[k] // bs)
        space_steps.append(space.spatial_strides[k] * bs)
        depth_steps.append(depth.spatial_strides[k])

    parts = ((0, 0),)
    if len(depth.channel_strides) == 1:
        (depth_c,) = depth.channel_strides
        (space_c,) = space.channel_strides
        per_channel = depth_c if mode == BLOCKS_FIRST else depth_c * blocks
        per_block = depth_c * channels if mode == BLOCKS_FIRST else depth_c
        extents.append(channels)
        space_steps.append(space_c)
        depth_steps.append(per_channel)
        block_depth_steps = [per_block * w for w in weights]
    else:
        # NCHW_VECT_C on both sides; the space channel count is a multiple of 4.
        depth_group, depth_inner = depth.channel_strides
        space_group, space_inner = space.channel_strides
        groups = channels // VECT_C_GROUP
        if mode == BLOCKS_FIRST:
            # c_depth = B*C + 4*g + r, and 4 divides C: group B*C/4 + g, lane r.
            extents += [groups, VECT_C_GROUP]
            space_steps += [space_group, space_inner]
            depth_steps += [depth_group, depth_inner]
            block_depth_steps = [depth_group * groups * w for w in weights]
        else:
            # c_depth = (4*g + r)*M + B = 4*g*M + (r*M + B): the group step is
            # M groups, and each (r, B) pair is its own part at a fixed offset.
            extents.append(groups)
            space_steps.append(space_group)
            depth_steps.append(depth_group * blocks)
            parts = tuple(
                _vect_c_depth_first_part(r, offsets, weights, blocks, space, space_inner,
                                         depth_group, depth_inner)
                for r in range(VECT_C_GROUP)
                for offsets in itertools.product(range(bs), repeat=n_spatial)
            )
            return CopyPlan(tuple(extents), tuple(space_steps), tuple(depth_steps), parts)

    for k in range(n_spatial):
        extents.append(bs)
        space_steps.append(space.spatial_strides[k])
        depth_steps.append(block_depth_steps[k])
    return CopyPlan(tuple(extents), tuple(space_steps), tuple(depth_steps), parts)


def _vect_c_depth_first_part(lane, offsets, weights, blocks, space, space_inner,
                             depth_group, depth_inner):
    block_index = sum(b * w for b, w in zip(offsets, weights))
    within = lane * blocks + block_index
    space_offset = lane * space_inner + sum(b * s for b, s in zip(offsets, space.spatial_strides))
    depth_offset = (within // VECT_C_GROUP) * depth_group + (within % VECT_C_GROUP) * depth_inner
    return space_offset, depth_offset


def swap_sides(plan: CopyPlan) -> CopyPlan:
    """The same plan with source and destination exchanged."""
    return CopyPlan(plan.extents, plan.dst_strides, plan.src_strides,
                    tuple((d, s) for s, d in plan.parts))


def tile_plan(src_shape: Sequence[int], src_strides: Sequence[int], repeats: Sequence[int],
              dst_strides: Sequence[int]) -> CopyPlan:
    """``numpy.tile``: destination axis i is split into (repeat, item) axes;
    the source does not move along the repeat axis (step 0).

    ``src_shape`` and ``src_strides`` are already promoted to ``len(repeats)``
    axes."""
    extents = []
    src_steps = []
    dst_steps = []
    for size, step, count, out_step in zip(src_shape, src_strides, repeats, dst_strides):
        extents += [count, size]
        src_steps += [0, step]
        dst_steps += [out_step * size, out_step]
    return CopyPlan(tuple(extents), tuple(src_steps), tuple(dst_steps))
