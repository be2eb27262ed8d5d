"""Result arrays that the data-pipeline front doors (``fastblock.torch``,
``fastblock.pipelines``) write again once nothing outside holds them.

A batch's result is tens of MB (64 images of 224x224x3 as float32: 38 MB),
and a new array of that size is fresh pages, which the conversion faults
in: on one thread, a new result costs about twice the conversion itself
(62 against 33 us an image). So the front doors keep a few results and
write one again once its reference count is back to the pool's own: every
view, tensor (``torch.from_numpy``) and buffer export (Arrow's, Python's
buffer protocol) of an array holds a reference to it, so such an array is
in no one's hands."""
from __future__ import annotations

import sys
import threading
from typing import Optional

import numpy as np


class ReusedResults:
    """Up to ``kept`` result arrays, each handed out again once free. A new
    array past ``kept`` pushes out a free one, else the oldest (whoever
    holds it keeps it). Threads may share a pool: taking is under a lock,
    and the array taken is the caller's (so held) before the lock opens."""

    def __init__(self, kept: int):
        self._kept = kept
        self._arrays = []
        self._free_count = {}
        self._lock = threading.Lock()

    def take(self, shape: tuple, dtype) -> np.ndarray:
        """A free array of ``shape`` and ``dtype``, or a new one."""
        dtype = np.dtype(dtype)
        with self._lock:
            return self._take(tuple(shape), dtype)

    def _take(self, shape: tuple, dtype: np.dtype) -> np.ndarray:
        array = self._free_one(shape, dtype)
        if array is not None:
            return array
        if len(self._arrays) >= self._kept:
            self._forget(self._one_to_forget())
        array = np.empty(shape, dtype)
        self._arrays.append(array)
        # The count of a free array, taken as the loops below take theirs:
        # the list's reference and one local variable's.
        self._free_count[id(array)] = sys.getrefcount(array)
        return array

    def _free_one(self, shape: tuple, dtype: np.dtype) -> Optional[np.ndarray]:
        """A free array of ``shape`` and ``dtype``, or None. (Its own frame:
        the loop's variable, which holds the last array it saw, is gone
        when it returns.)"""
        for array in self._arrays:
            if array.shape == shape and array.dtype == dtype \
                    and sys.getrefcount(array) <= self._free_count[id(array)]:
                return array
        return None

    def _one_to_forget(self) -> int:
        """The index of the first free array, else 0 (the oldest)."""
        for index in range(len(self._arrays)):
            array = self._arrays[index]
            if sys.getrefcount(array) <= self._free_count[id(array)]:
                return index
        return 0

    def _forget(self, index: int) -> None:
        del self._free_count[id(self._arrays[index])]
        del self._arrays[index]
