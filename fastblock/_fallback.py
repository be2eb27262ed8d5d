"""Dtypes whose items hold references (``object``, ``StringDType``, structured
dtypes with object fields).

Their items cannot be moved as raw bytes: every copy must take a reference.
The same plan is instead run by the engine over an array of source indices,
and NumPy's own gather (which keeps reference counts and strings right) then
fetches the items. No item is touched until every argument has been checked,
and NumPy's gather either completes or raises without side effects.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from . import _engine
from ._plan import CopyPlan


def gather_with_references(x: np.ndarray, result_shape: tuple[int, ...],
                           build_plan: Callable[[np.ndarray, np.ndarray], CopyPlan],
                           num_threads: int) -> np.ndarray:
    """Return a new C-contiguous array of ``result_shape``: the plan applied to ``x``."""
    source_index = np.arange(x.size, dtype=np.intp).reshape(x.shape)
    result_index = np.empty(result_shape, dtype=np.intp)
    plan = build_plan(source_index, result_index)
    for src_offset, dst_offset in plan.parts:
        _engine.copy(source_index, result_index, plan.extents, plan.src_strides,
                     plan.dst_strides, src_offset, dst_offset, num_threads)
    return x.reshape(-1)[result_index]
