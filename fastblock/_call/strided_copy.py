"""Strided copies, and a front door's checked call.

An operator describes its copy between a checked source and destination as
:class:`StridedCopy` objects (shared iteration axes with a byte step for each
side); the engine runs them. A front door's checks give a :class:`Prepared`
call: the result's shape and the copy, both as the general path runs it
(``copy``) and as strided copies (``copies``), which the fast path's cache
(``fastpath``) stores for later calls of the same geometry.
"""
from __future__ import annotations

from typing import Callable, List, NamedTuple, Optional

import numpy as np

from .. import _engine


class StridedCopy(NamedTuple):
    """One strided copy over shared iteration axes: each axis's extent and the
    byte step of each side along it, run once per (source offset, destination
    offset) in ``parts``. A ``zero_source`` copy reads one zero item of the
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


# copies(src, dst): an operator's copy between two checked arrays as strided
# copies, run in order; None where the engine runs it another way
# (space_depth_copy's NCHW_VECT_C paths).
StridedCopies = Callable[[np.ndarray, np.ndarray], Optional[List[StridedCopy]]]
# copy(src, dst, num_threads): the same copy, run (_execute.Copier).
Copy = Callable[[np.ndarray, np.ndarray, int], None]


class Prepared(NamedTuple):
    """A front door's call after every check of its arguments but ``out``:
    the result's shape and its copy from the input, as ``copy`` and as
    ``copies``. ``writes_zeros``: see ``_execute.execute``."""

    result_shape: tuple[int, ...]
    copy: Copy
    copies: StridedCopies
    writes_zeros: bool = False


def copier_of(copies: StridedCopies) -> Copy:
    """The copy that runs ``copies(src, dst)`` in order."""
    def copy(src: np.ndarray, dst: np.ndarray, n_threads: int) -> None:
        zero = None
        for strided in copies(src, dst):
            if strided.zero_source:
                if zero is None:
                    zero = np.zeros(1, dtype=dst.dtype)
                _engine.copy(zero, dst, strided.extents, strided.src_strides,
                             strided.dst_strides, strided.parts, n_threads)
            else:
                strided.run(src, dst, n_threads)
    return copy
