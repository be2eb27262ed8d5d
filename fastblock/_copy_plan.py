"""Generic copy plans built on the Python side.

The plans of SpaceToDepth, DepthToSpace and Tile are built in C on every call
(``_operator_plans.pxi``). Operators that describe their copy from Python hand the
engine a :class:`CopyPlan`.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _engine


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
