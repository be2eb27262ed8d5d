"""Which stored figures moved: the regressions page's list.

The stored history comes from single quick runs (one call a figure), so a
figure is listed only when its newest value is worse than the median of
the commits before it by ``threshold`` or more *and* worse than every one
of them (at least MIN_EARLIER of them): outside the range those commits
spanned, not inside their noise.
"""
from __future__ import annotations

import statistics
from typing import List, NamedTuple, Optional

from .results import HIGHER_IS_BETTER, History

# How many earlier commits the newest value is compared with, and how many
# it needs at least before a move can be marked worse.
WINDOW = 5
MIN_EARLIER = 3
THRESHOLD = 0.10


class Move(NamedTuple):
    benchmark: str
    label: str
    unit: str
    before: float        # median of the window
    now: float
    change: float        # now / before
    worse: bool


def _worse(unit: str, now: float, reference: float) -> bool:
    return now < reference if unit in HIGHER_IS_BETTER else now > reference


def moves(history: History, window: int = WINDOW, threshold: float = THRESHOLD) -> List[Move]:
    """Every series whose newest value moved by ``threshold`` or more from
    the median of the ``window`` values before it; ``worse`` where it got
    worse past every value of the window."""
    found = []
    for bench in history.benchmarks:
        for series in bench.series:
            move = _move(bench.name, bench.unit, series.label, series.values, window, threshold)
            if move:
                found.append(move)
    return sorted(found, key=lambda m: (not m.worse, -abs(m.change - 1)))


def _move(name, unit, label, values, window, threshold) -> Optional[Move]:
    present = [v for v in values if v is not None and v > 0]
    if not values or values[-1] is None or len(present) < 2:
        return None
    now = values[-1]
    earlier = [v for v in values[:-1] if v is not None and v > 0][-window:]
    before = statistics.median(earlier)
    change = now / before
    if abs(change - 1) < threshold:
        return None
    worse = (len(earlier) >= MIN_EARLIER and _worse(unit, now, before)
             and all(_worse(unit, now, v) for v in earlier))
    return Move(name, label, unit, before, now, change, worse)
