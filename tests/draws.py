"""Seeded draws over a test's edges, in place of a full cross product.

A kernel-edge test lists the values at which the planner switches (item
widths, counts, remainders, kernel settings). Their full cross product is
thousands of cases, most of them alike; ``drawn`` parametrizes a test with
a sample of it instead:

* every value of every axis is in every run (``cover`` names the axes, or
  the tuples of axes whose every combination must be, default each axis);
* every path is in every run: ``path`` maps a case to the name of the
  kernel it must take, and one case of each name the cross product holds
  is drawn first;
* the rest of the cases (up to ``cases``) are drawn from the remainder of
  the cross product.

The draw's seed is ``SEED``: ``FASTBLOCK_TEST_SEED`` if set, else the first
8 hex digits of the checkout's commit, else one from the clock. pytest
prints it in its header and beside every failure of a drawn test
(conftest.py), and the test id names the case, so
``FASTBLOCK_TEST_SEED=N pytest "tests/...::test_x[case]"`` replays it.
So each commit checks other combinations, and over many commits they cover
all of them. ``FASTBLOCK_TEST_DRAWS=all`` runs every test's whole cross
product instead (tens of thousands of cases; minutes).
"""
from __future__ import annotations

import heapq
import itertools
import os
import subprocess
import time
import zlib

import numpy as np
import pytest


def _seed() -> int:
    given = os.environ.get("FASTBLOCK_TEST_SEED")
    if given:
        return int(given)
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        head = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        head = ""
    if len(head) >= 8:
        return int(head[:8], 16)
    return int(time.time()) & 0xFFFFFFFF


SEED = _seed()
EVERY_CASE = os.environ.get("FASTBLOCK_TEST_DRAWS") == "all"
# The drawn tests, by node name prefix ("module.py::test"), for conftest's
# failure reports.
DRAWN_TESTS: set[str] = set()


def _names(axis: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in axis.split(","))


def draw_cases(name: str, axes: dict, cases: int, cover=None, path=None, seed: int = SEED,
               every_case: bool = EVERY_CASE) -> list[tuple]:
    """The rows of ``axes``' cross product (each a tuple of one value per
    axis, in ``axes``' order) that a run of test ``name`` checks: see the
    module's docstring. The draw depends on ``seed`` and ``name`` alone."""
    keys = list(axes)
    values = [list(axes[key]) for key in keys]
    for key, column in zip(keys, values):
        if not column:
            raise ValueError(f"drawn test {name}: axis {key!r} has no values")
    full = list(itertools.product(range(len(values[0])), *(range(len(v)) for v in values[1:])))
    if every_case:
        return [tuple(v[i] for v, i in zip(values, row)) for row in full]
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    order = [full[i] for i in rng.permutation(len(full))]
    # The drawn cases, as places in ``order``, in the order drawn.
    chosen: dict[int, None] = {}
    if path is not None:
        seen = set()
        for i, row in enumerate(order):
            label = path(*(v[k] for v, k in zip(values, row)))
            if label not in seen:
                seen.add(label)
                chosen[i] = None
    groups = [tuple(keys.index(k) for k in group) for group in (cover or [(k,) for k in keys])]
    combinations = [frozenset((g, tuple(row[k] for k in g)) for g in groups) for row in order]
    uncovered = set().union(*combinations)
    for i in chosen:
        uncovered -= combinations[i]
    # Greedy: the case that covers the most combinations not yet drawn (the
    # first in the shuffled order among equals), until all are. Lazily: a
    # case's count only falls, so one popped whose fresh count still leads
    # is the best.
    heap = [(-len(c & uncovered), i) for i, c in enumerate(combinations)]
    heapq.heapify(heap)
    while uncovered:
        _, i = heapq.heappop(heap)
        gain = len(combinations[i] & uncovered)
        if heap and gain < -heap[0][0]:
            heapq.heappush(heap, (-gain, i))
            continue
        chosen[i] = None
        uncovered -= combinations[i]
    for i in range(len(order)):
        if len(chosen) >= cases:
            break
        chosen.setdefault(i, None)
    return [tuple(v[k] for v, k in zip(values, order[i])) for i in chosen]


def _case_id(value):
    """A case's id names its values, shapes and tuples included (pytest
    would number those, and the numbers change with the draw)."""
    if isinstance(value, (tuple, list, dict)):
        return str(value).replace(" ", "")
    if isinstance(value, np.dtype):
        return str(value)
    return None


def drawn(cases: int, axes: dict | None = None, *, cover=None, path=None, indirect=(),
          **more_axes):
    """Parametrize a test with a seeded draw of ``cases`` cases (more where
    covering needs them) from the cross product of its axes.

    ``axes`` (and keyword axes) map a name, or names joined by commas as in
    ``pytest.mark.parametrize``, to its values. ``cover``: tuples of axis
    names whose every combination is drawn (default: each axis alone).
    ``path(*case)``, one argument per axis (a tuple for names joined by
    commas): the name of the path the case takes; every name is drawn.
    ``indirect``: the axes that parametrize fixtures."""
    axes = {**(axes or {}), **more_axes}

    def parametrize(test):
        name = f"{test.__module__}.{test.__name__}"
        rows = draw_cases(name, axes, cases,
                          cover=[tuple(group) if not isinstance(group, str) else (group,)
                                 for group in cover] if cover else None,
                          path=path)
        DRAWN_TESTS.add(f"{test.__module__.rpartition('.')[2]}.py::{test.__name__}")
        names = [n for key in axes for n in _names(key)]
        flat = [tuple(v for key, value in zip(axes, row)
                      for v in (value if len(_names(key)) > 1 else (value,)))
                for row in rows]
        if len(names) == 1:
            flat = [row[0] for row in flat]
        marks = pytest.mark.parametrize(",".join(names), flat, ids=_case_id,
                                        indirect=[n for n in names if n in indirect] or False)
        return marks(test)

    return parametrize
