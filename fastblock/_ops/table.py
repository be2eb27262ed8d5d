"""The operators' table: every front door's ``Operator`` (its door and its
``prepare``, declared once in its own file), by name. ``collate`` finds an
operator by its door here, and ``fastblock.dask`` its doors by name.

Adding an operator: its own file (its ``prepare``, its front door, a
docstring and one line, and its ``Operator``), a row here, and its public
name in ``fastblock/__init__.py``.
"""
from __future__ import annotations

from typing import Callable, Dict

from .._call.operation import Operator
from . import batch, blocks, patterns, permute

OPERATORS: Dict[str, Operator] = {op.name: op for op in (
    blocks.SPACE_TO_DEPTH,
    blocks.DEPTH_TO_SPACE,
    blocks.TILE,
    permute.TRANSPOSE,
    permute.PIXEL_SHUFFLE,
    permute.PIXEL_UNSHUFFLE,
    batch.SPACE_TO_BATCH,
    batch.BATCH_TO_SPACE,
    patterns.REARRANGE,
    patterns.REPEAT,
)}


def by_door(door: Callable) -> Operator:
    """The operator whose front door is ``door``; KeyError for anything else."""
    for op in OPERATORS.values():
        if op.door is door:
            return op
    raise KeyError(door)
