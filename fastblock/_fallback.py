"""Dtypes whose items hold references (``object``, ``StringDType``, structured
dtypes with object fields).

Their items cannot be moved as raw bytes: every copy must take a reference.
The same copy is instead run by the engine over an array of source indices,
and NumPy's own gather (which keeps reference counts and strings right) then
fetches the items. No item is touched until every argument has been checked,
and NumPy's gather either completes or raises without side effects.
"""
from __future__ import annotations

from typing import Callable

import numpy as np


def gather_with_references(x: np.ndarray, result_shape: tuple[int, ...],
                           copy: Callable[[np.ndarray, np.ndarray, int], None],
                           num_threads: int) -> np.ndarray:
    """Return a new C-contiguous array of ``result_shape``: ``copy`` applied to ``x``.

    ``copy(source, destination, num_threads)`` is the operator's raw copy;
    here it moves the C-order positions of ``x``'s items."""
    source_index = np.arange(x.size, dtype=np.intp).reshape(x.shape)
    result_index = np.empty(result_shape, dtype=np.intp)
    copy(source_index, result_index, num_threads)
    # Index with a 1-D array: a 0-d index would give a scalar, not an array.
    return x.reshape(-1)[result_index.reshape(-1)].reshape(result_shape)
