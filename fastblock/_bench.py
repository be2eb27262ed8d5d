"""Timing helpers shared by ``python -m fastblock`` and the benchmarks.

Every speed figure is a ratio to the copy ceiling: ``np.copyto`` between two
preallocated, already-written arrays of the result's byte size, timed in the
same process and interleaved with the case, so machine noise hits both alike.
"""
from __future__ import annotations

import time
from typing import Callable, Dict

import numpy as np


def interleaved_medians(functions: Dict[str, Callable[[], object]], rounds: int = 7,
                        min_seconds: float = 0.0) -> Dict[str, float]:
    """Median seconds per call of each function, run round-robin ``rounds`` times.

    A call shorter than ``min_seconds`` is repeated in a loop and averaged,
    so microsecond calls are not lost in the timer's resolution."""
    loops = {}
    for name, fn in functions.items():
        fn()  # warm up: first-touch pages, caches, thread team
        count = 1
        if min_seconds:
            start = time.perf_counter()
            fn()
            once = max(time.perf_counter() - start, 1e-9)
            count = max(1, int(min_seconds / once))
        loops[name] = count
    samples = {name: [] for name in functions}
    for _ in range(rounds):
        for name, fn in functions.items():
            count = loops[name]
            start = time.perf_counter()
            for _ in range(count):
                fn()
            samples[name].append((time.perf_counter() - start) / count)
    return {name: float(np.median(times)) for name, times in samples.items()}


def copy_ceiling(nbytes: int) -> Callable[[], None]:
    """A function that copies ``nbytes`` between two touched, preallocated arrays."""
    src = np.ones(nbytes, dtype=np.uint8)
    dst = np.zeros(nbytes, dtype=np.uint8)
    return lambda: np.copyto(dst, src)


def gigabytes_per_second(nbytes: int, seconds: float) -> float:
    """Result bytes written per second, in GB/s (10**9)."""
    return nbytes / seconds / 1e9
