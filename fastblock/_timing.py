"""Timing helpers of ``python -m fastblock``'s speed report, also used by the
speed reports and the asv suite under ``asv_bench/`` (which read this file
from the source tree, so that they time any build the same way).

Every speed figure is a ratio to the copy ceiling: ``np.copyto`` between two
preallocated, already-written arrays of the result's byte size, timed in the
same process and interleaved with the case, so machine noise hits both alike.
Only NumPy is imported here.
"""
from __future__ import annotations

import time
from typing import Callable, Dict

import numpy as np

# At most this many calls per sample: a sub-microsecond call would
# otherwise loop for minutes on a coarse clock.
MAX_LOOPS = 100_000


def interleaved_medians(functions: Dict[str, Callable[[], object]], rounds: int = 7,
                        min_seconds: float = 0.0) -> Dict[str, float]:
    """Median seconds per call of each function, run round-robin ``rounds`` times.

    Each function is called once first (pages touched, caches and the thread
    team warm); a call shorter than ``min_seconds`` is repeated in a loop and
    averaged, so microsecond calls are not lost in the timer's resolution.
    Each sample is taken after half as many untimed calls of the same
    function, so that it times the function at its own pace, whatever ran
    before it."""
    loops = {}
    for name, fn in functions.items():
        fn()  # warm up: first-touch pages, caches, thread team
        count = 1
        if min_seconds:
            count = max(1, min(MAX_LOOPS, int(min_seconds / seconds_once(fn))))
        loops[name] = count
    samples = {name: [] for name in functions}
    for _ in range(rounds):
        for name, fn in functions.items():
            count = loops[name]
            # Untimed calls first: after another function's loop, a call can
            # take several calls to come back to its own pace (on a Zen 3, a
            # 4 MiB copy's first four calls after another 4 MiB copy's loop
            # took 4.7, 3.5, 3.0 and 1.9 x), and the function timed right
            # after the same other one each round would pay for it.
            for _ in range(max(1, count // 2)):
                fn()
            start = time.perf_counter()
            for _ in range(count):
                fn()
            samples[name].append((time.perf_counter() - start) / count)
    return {name: float(np.median(times)) for name, times in samples.items()}


def seconds_once(fn: Callable[[], object]) -> float:
    """Seconds of one call of ``fn``, as it comes (no warm-up)."""
    start = time.perf_counter()
    fn()
    return max(time.perf_counter() - start, 1e-9)


def copy_ceiling(nbytes: int) -> Callable[[], None]:
    """A function that copies ``nbytes`` between two touched, preallocated arrays."""
    src = np.ones(nbytes, dtype=np.uint8)
    dst = np.ones(nbytes, dtype=np.uint8)  # np.zeros would leave its pages unmapped
    return lambda: np.copyto(dst, src)


def gigabytes_per_second(nbytes: int, seconds: float) -> float:
    """Result bytes written per second, in GB/s (10**9)."""
    return nbytes / seconds / 1e9
