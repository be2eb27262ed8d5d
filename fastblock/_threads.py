"""How many threads the kernels use.

The default comes from ``OMP_NUM_THREADS`` where it is set, else from the CPU
affinity mask (the cores this process may run on), else from the core count.
Without OpenMP in the build every copy runs on the calling thread.
"""
from __future__ import annotations

import os
import threading

from . import _engine
from ._validate import check_thread_count

_lock = threading.Lock()


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _default_num_threads() -> int:
    setting = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if setting.isdigit() and int(setting) >= 1:
        return int(setting)
    return _usable_cores()


_num_threads = _default_num_threads()

# GNU OpenMP's thread pool does not survive fork(): a parallel region in a
# child forked after the parent used threads can wait forever for workers
# that no longer exist. A forked child therefore copies on its own thread.
_in_forked_child = False


def _after_fork_in_child() -> None:
    global _in_forked_child, _default_call_threads
    _in_forked_child = True
    _default_call_threads = 1


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def get_num_threads() -> int:
    """Return the number of threads a call uses when ``num_threads`` is not given.

    Examples
    --------
    >>> import fastblock as fb
    >>> fb.get_num_threads() >= 1
    True
    """
    return _num_threads


def set_num_threads(n: int) -> None:
    """Set the default number of threads for later calls (``n >= 1``).

    Examples
    --------
    >>> import fastblock as fb
    >>> previous = fb.get_num_threads()
    >>> fb.set_num_threads(1)
    >>> fb.get_num_threads()
    1
    >>> fb.set_num_threads(previous)
    """
    global _num_threads, _default_call_threads
    n = check_thread_count(n, "n")
    with _lock:
        _num_threads = n
        _default_call_threads = _effective(n)


# A copy never runs more than 4 threads per usable core: memory-bound
# work gains nothing from oversubscription, and a huge request must not ask
# OpenMP for millions of threads.
_MAX_THREADS = 4 * _usable_cores()


def _effective(n: int) -> int:
    """The threads a copy asked for ``n`` runs: capped at a few per usable
    core, one in a forked child or without OpenMP."""
    if _in_forked_child or not _engine.HAVE_OPENMP:
        return 1
    return min(n, _MAX_THREADS)


# What a call with ``num_threads=None`` runs, kept up to date by
# set_num_threads and the fork hook: the front doors' fast path reads this one
# global instead of calling resolve_num_threads.
_default_call_threads = _effective(_num_threads)


def resolve_num_threads(num_threads: int | None) -> int:
    """The thread count for one call: its ``num_threads``, else the default,
    capped at a few threads per usable core (one in a forked child)."""
    if num_threads is None:
        return _default_call_threads
    return _effective(check_thread_count(num_threads, "num_threads"))
