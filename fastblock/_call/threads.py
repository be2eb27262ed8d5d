"""How many threads the kernels use.

Until :func:`set_num_threads` is called, the default is OpenMP's own, read
at each call (``omp_get_max_threads``): ``OMP_NUM_THREADS`` where it is set,
else the cores this process may run on, and whatever limit was set at run
time through ``omp_set_num_threads``, which is how threadpoolctl (and so
joblib and scikit-learn) limit OpenMP libraries. :func:`set_num_threads`
sets a default of fastblock's own, which takes precedence. Without OpenMP in
the build every copy runs on the calling thread.
"""
from __future__ import annotations

import os
import threading

from .. import _engine
from .validate import check_thread_count

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


# The default set by set_num_threads; None: OpenMP's (read at each call).
_num_threads: int | None = None

# GNU OpenMP's thread pool does not survive fork(): a thread that has run
# a team keeps a pool of helper threads, and a child forked from that
# thread, which has none of them, would wait for them forever in its first
# parallel region. Such a child copies on its own thread. Any other child
# keeps its threads (OpenMP makes it a pool of its own on first use), and
# every child starts the thread policy afresh: its helpers are new.
_team_lost_in_fork = False


def _after_fork_in_child() -> None:
    global _team_lost_in_fork, _default_call_threads
    _engine.forget_team_policy()
    if _engine.started_team_on_this_thread():
        _team_lost_in_fork = True
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
    if _num_threads is not None:
        return _num_threads
    return _engine.openmp_max_threads() if _engine.HAVE_OPENMP else _default_num_threads()


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
    """The threads a copy asked for ``n`` may run: capped at a few per
    usable core; one without OpenMP or in a child forked from a thread that
    ran a team. The thread policy (docs/threads.md) may run fewer."""
    if _team_lost_in_fork or not _engine.HAVE_OPENMP:
        return 1
    return min(n, _MAX_THREADS)


# What a call with ``num_threads=None`` runs, kept up to date by
# set_num_threads and the fork hook; 0: OpenMP's default, asked at each
# call. The front doors' fast path reads this one global and calls
# resolve_num_threads only for 0.
_default_call_threads = 0 if _engine.HAVE_OPENMP else 1


def _follow_openmp() -> None:
    """Back to OpenMP's default, as before any set_num_threads (for tests)."""
    global _num_threads, _default_call_threads
    with _lock:
        _num_threads = None
        _default_call_threads = 1 if _team_lost_in_fork or not _engine.HAVE_OPENMP else 0


def resolve_num_threads(num_threads: int | None) -> int:
    """The most threads one call may run: its ``num_threads``, else the
    default, capped at a few threads per usable core (one in a child forked
    from a thread that ran a team)."""
    if num_threads is None:
        n = _default_call_threads
        return n if n else _effective(_engine.openmp_max_threads())
    return _effective(check_thread_count(num_threads, "num_threads"))
