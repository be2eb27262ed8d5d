"""Copies as plans, and a front door's checked call.

An operator describes its copy between a checked source and destination as
:class:`CopyPlan` objects (shared iteration axes with a byte step for each
side); the engine runs them. A front door's checks give a :class:`Prepared`
call: the result's shape and the copy, both as the general path runs it
(``copy``) and as plans (``plans``), which the fast path's cache
(``_fastpath``) stores for later calls of the same geometry.
"""
from __future__ import annotations

from typing import Callable, List, NamedTuple, Optional

import numpy as np

from . import _engine


class CopyPlan(NamedTuple):
    """One strided copy over shared iteration axes: each axis's extent and the
    byte step of each side along it, run once per (source offset, destination
    offset) in ``parts``. A ``zero_source`` plan reads one zero item of the
    destination's dtype (step 0) instead of the source."""

    extents: tuple[int, ...]
    src_strides: tuple[int, ...]
    dst_strides: tuple[int, ...]
    parts: tuple[tuple[int, int], ...] = ((0, 0),)
    zero_source: bool = False

    def run(self, src: np.ndarray, dst: np.ndarray, num_threads: int) -> None:
        if self.zero_source:
            src = np.zeros(1, dtype=dst.dtype)
        _engine.copy(src, dst, self.extents, self.src_strides, self.dst_strides,
                     self.parts, num_threads)


# plans(src, dst): an operator's copy between two checked arrays as plans,
# run in order; None where the engine runs it another way (block_copy's
# NCHW_VECT_C paths).
Plans = Callable[[np.ndarray, np.ndarray], Optional[List[CopyPlan]]]
# copy(src, dst, num_threads): the same copy, run (_execute.Copier).
Copy = Callable[[np.ndarray, np.ndarray, int], None]


class Prepared(NamedTuple):
    """A front door's call after every check of its arguments but ``out``:
    the result's shape and its copy from the input, as ``copy`` and as
    ``plans``. ``writes_zeros``: see ``_execute.execute``."""

    result_shape: tuple[int, ...]
    copy: Copy
    plans: Plans
    writes_zeros: bool = False


def plans_copier(plans: Plans) -> Copy:
    """The copy that runs ``plans(src, dst)`` in order."""
    def copy(src: np.ndarray, dst: np.ndarray, n_threads: int) -> None:
        zero = None
        for plan in plans(src, dst):
            if plan.zero_source:
                if zero is None:
                    zero = np.zeros(1, dtype=dst.dtype)
                _engine.copy(zero, dst, plan.extents, plan.src_strides, plan.dst_strides,
                             plan.parts, n_threads)
            else:
                plan.run(src, dst, n_threads)
    return copy
