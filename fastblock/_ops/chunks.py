"""Chunk plans of the block operators on arrays held in chunks (fastblock.dask):
which input chunks a block needs, and the result's chunks they make. Plain
arithmetic on chunk tuples; a size may be NaN (a Dask axis of unknown
length)."""
from __future__ import annotations

import math
from typing import Sequence

from .._call.layouts import BLOCKS_FIRST, LayoutAxes
from .._call.validate import check_block_size, check_data_format, check_mode


def known(chunks: Sequence[float], what: str) -> None:
    if any(isinstance(c, float) and math.isnan(c) for c in chunks):
        raise ValueError(f"the {what} needs known chunk sizes; call x.compute_chunk_sizes() first")


def aligned(chunks: tuple, multiple: int) -> tuple:
    """``chunks`` if every chunk is a multiple of ``multiple``, else the
    nearest chunking whose boundaries are multiples (each interior boundary
    rounded to the nearest one; chunks that vanish are dropped). The total
    must already be a multiple."""
    if all(c % multiple == 0 for c in chunks):
        return tuple(chunks)
    total = sum(chunks)
    bounds = [0]
    edge = 0
    for c in chunks[:-1]:
        edge += c
        rounded = (edge + multiple // 2) // multiple * multiple
        if bounds[-1] < rounded < total:
            bounds.append(rounded)
    bounds.append(total)
    return tuple(b - a for a, b in zip(bounds, bounds[1:]))


def chunk_arguments(chunks, block_size, mode, data_format):
    """``(chunks, block size, canonical mode, LayoutAxes)`` of a chunk plan."""
    chunks = tuple(tuple(c) for c in chunks)
    layout = check_data_format(data_format, len(chunks))
    bs = check_block_size(block_size)
    return chunks, bs, check_mode(mode), LayoutAxes(layout, len(chunks))


def space_to_depth_plan(chunks, bs, mode, axes):
    blocks = bs ** len(axes.spatial)
    src = list(chunks)
    for axis in axes.spatial:
        known(chunks[axis], "spatial axes")
        src[axis] = aligned(chunks[axis], bs)
    known(chunks[axes.channel], "channel axis")
    if mode == BLOCKS_FIRST and blocks > 1:
        src[axes.channel] = (sum(chunks[axes.channel]),)
    if axes.lane is not None:
        src[axes.lane] = (sum(chunks[axes.lane]),)
    dst = list(src)
    for axis in axes.spatial:
        dst[axis] = tuple(c // bs for c in src[axis])
    dst[axes.channel] = tuple(c * blocks for c in src[axes.channel])
    return tuple(src), tuple(dst)


def depth_to_space_plan(chunks, bs, mode, axes):
    blocks = bs ** len(axes.spatial)
    src = list(chunks)
    known(chunks[axes.channel], "channel axis")
    if mode == BLOCKS_FIRST and blocks > 1:
        src[axes.channel] = (sum(chunks[axes.channel]),)
    else:
        # depth_first: channel (or group) c_depth = c * M + B, so a chunk
        # boundary must fall on a multiple of M to split whole result channels
        # (whole result groups of 4 for NCHW_VECT_C).
        src[axes.channel] = aligned(chunks[axes.channel], blocks)
    if axes.lane is not None:
        src[axes.lane] = (sum(chunks[axes.lane]),)
    dst = list(src)
    for axis in axes.spatial:
        dst[axis] = tuple(c * bs for c in src[axis])
    dst[axes.channel] = tuple(c // blocks for c in src[axes.channel])
    return tuple(src), tuple(dst)


def tile_axis_plan(chunks: tuple, count: int, fold: int):
    """Blocks of one output axis as (input block index, repeats inside it)."""
    if count == 1:
        return [(j, 1) for j in range(len(chunks))]
    if len(chunks) > 1 or fold <= 1:
        # Several input blocks (or a block already large): reference each
        # input block ``count`` times, nothing is copied.
        return [(j, 1) for _ in range(count) for j in range(len(chunks))]
    full, rest = divmod(count, fold)
    return [(0, fold)] * full + ([(0, rest)] if rest else [])
