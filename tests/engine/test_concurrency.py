"""Concurrency: many Python threads calling every operator at once, with
different thread counts, while another thread keeps changing the default
with ``set_num_threads``; operators inside a ``concurrent.futures`` thread
pool; operators in processes forked after OpenMP was used.

Results must always be right and nothing may deadlock: every wait has a
deadline (``FASTBLOCK_CONCURRENCY_TIMEOUT`` seconds, default 120; a third of
it for a child process), a worker
still running after it fails the test, and a watchdog
(``faulthandler.dump_traceback_later``) prints every thread's stack and ends
the run should the test itself get stuck.
"""
import concurrent.futures
import faulthandler
import multiprocessing
import os
import random
import resource
import subprocess
import sys
import sysconfig
import textwrap
import threading
import time

import numpy as np
import pytest

import fastblock as fb
from reference import depth_to_space_ref, space_to_depth_ref

TIMEOUT = float(os.environ.get("FASTBLOCK_CONCURRENCY_TIMEOUT", "120"))
# A child process runs every case a few times: seconds, even under ASan.
CHILD_TIMEOUT = TIMEOUT / 3
THREAD_COUNTS = [None, 1, 2, 3, 4]
#: threads x calls of the big test (reported in the summary)
WORKERS, CALLS_PER_WORKER = 8, 150


@pytest.fixture(autouse=True)
def watchdog():
    """Should a test hang in spite of its own deadlines, dump every thread's
    stack and end the process instead of blocking CI. The stacks go to the
    process's own stderr: under ``--capture=sys`` (ci/sanitize.sh) pytest's
    sys.stderr has no file descriptor."""
    faulthandler.dump_traceback_later(3 * TIMEOUT + 60, exit=True, file=sys.__stderr__)
    yield
    faulthandler.cancel_dump_traceback_later()


def _strided(a):
    """``a`` as a view with negative steps inside a larger buffer."""
    big = np.empty(tuple(2 * n for n in a.shape), dtype=a.dtype)
    view = big[tuple(slice(None, None, -2) for _ in a.shape)]
    view[...] = a
    return view


def _cases():
    """(name, fn, x, args, expected): large ones (> 256 KiB) run on
    several OpenMP threads, small ones on the caller's."""
    rng = np.random.default_rng(7)
    cases = []

    def add(name, fn, x, args, expected):
        cases.append((name, fn, x, args, np.ascontiguousarray(expected)))

    x = rng.standard_normal((1, 4, 256, 256)).astype(np.float32)            # 1 MiB
    add("s2d f32", fb.space_to_depth, x, (2,), space_to_depth_ref(x, 2))
    x = rng.integers(0, 2**16, (4, 128, 128, 6), dtype=np.uint16)           # 768 KiB
    add("s2d u16 NHWC CRD", fb.space_to_depth, x, (4, "CRD", "NHWC"),
        space_to_depth_ref(x, 4, "depth_first", "channels_last"))
    x = _strided(rng.integers(0, 255, (2, 3, 96, 96), dtype=np.uint8))
    add("s2d u8 strided", fb.space_to_depth, x, (3,), space_to_depth_ref(x, 3))
    x = rng.standard_normal((1, 16, 64, 64))                                # 512 KiB
    add("d2s f64 CRD", fb.depth_to_space, x, (2, "CRD"), depth_to_space_ref(x, 2, "depth_first"))
    x = rng.integers(-128, 127, (2, 16, 64, 64, 4), dtype=np.int8)          # 512 KiB
    add("d2s i8 VECT_C", fb.depth_to_space, x, (2, "blocks_first", "NCHW_VECT_C"),
        depth_to_space_ref(x, 2, "blocks_first", "NCHW_VECT_C"))
    x = rng.integers(0, 2**31, (1, 27, 5, 7, 3), dtype=np.int32).view("V12")[..., 0]
    add("d2s V12 3-D", fb.depth_to_space, x, (3,), depth_to_space_ref(x, 3))
    x = (rng.standard_normal((64, 64)) + 1j).astype(np.complex64)           # 480 KiB result
    add("tile c64", fb.tile, x, ((3, 5),), np.tile(x, (3, 5)))
    x = _strided(rng.integers(0, 9, (5, 7, 3)).astype(">i8"))
    add("tile >i8 strided", fb.tile, x, ((2, 1, 3, 4),), np.tile(x, (2, 1, 3, 4)))
    x = np.array([f"s{i}" * (i % 5) for i in range(4 * 4 * 4)], dtype=object).reshape(1, 4, 4, 4)
    add("s2d object", fb.space_to_depth, x, (2,), space_to_depth_ref(x, 2))
    x = np.array([f"str{i}" * (i % 7) for i in range(24)],
                 dtype=np.dtypes.StringDType()).reshape(2, 3, 4)
    add("tile StringDType", fb.tile, x, ((2, 1, 2),), np.tile(x, (2, 1, 2)))
    return cases


CASES = _cases()


def _same(a, b):
    if a.dtype.kind in "OT":
        return a.shape == b.shape and a.tolist() == b.tolist()
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _run_case(case, num_threads, out=None):
    name, fn, x, args, expected = case
    kwargs = {} if num_threads is None else {"num_threads": num_threads}
    if out is not None:
        # Clear it, so that a call that wrote nothing cannot pass.
        if out.dtype.kind == "O":
            out[...] = None
        elif out.dtype.kind == "T":
            out[...] = ""
        else:
            out.view(np.uint8)[...] = 0  # out is C-contiguous
        kwargs["out"] = out
    result = fn(x, *args, **kwargs)
    if out is not None:
        assert result is out
    assert _same(result, expected), f"{name}: wrong result with num_threads={num_threads}"
    return name


def _join_all(threads, deadline):
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    stuck = [t.name for t in threads if t.is_alive()]
    if stuck:
        faulthandler.dump_traceback(file=sys.__stderr__, all_threads=True)
        pytest.fail(f"threads still running after {TIMEOUT} s (deadlock?): {stuck}")


def _run_beside_changer(n_workers, worker, changer, name, start, stop):
    """``worker(i)`` in ``n_workers`` threads and ``changer()`` in one named
    ``name``, all daemons, released together by this thread at the
    ``start`` barrier; the workers joined by the deadline, then ``stop``
    set and the changer joined."""
    workers = [threading.Thread(target=worker, args=(i,), name=f"worker-{i}", daemon=True)
               for i in range(n_workers)]
    other = threading.Thread(target=changer, name=name, daemon=True)
    for t in workers + [other]:
        t.start()
    deadline = time.monotonic() + TIMEOUT
    start.wait(TIMEOUT)
    try:
        _join_all(workers, deadline)
    finally:
        stop.set()
    _join_all([other], deadline + 5)


def test_many_threads_every_operator_while_set_num_threads_changes():
    errors = []
    calls = [0] * WORKERS
    stop = threading.Event()
    start = threading.Barrier(WORKERS + 2)  # workers, the setter, this thread

    def worker(index):
        rnd = random.Random(index)
        # Each worker owns its outs (an out is not to be shared by two calls).
        outs = {case[0]: np.empty_like(case[4]) for case in CASES}
        try:
            start.wait(TIMEOUT)
            for _ in range(CALLS_PER_WORKER):
                case = rnd.choice(CASES)
                out = outs[case[0]] if rnd.random() < 0.3 else None
                _run_case(case, rnd.choice(THREAD_COUNTS), out)
                calls[index] += 1
        except BaseException as exc:  # noqa: BLE001  (reported below)
            errors.append((index, repr(exc)))

    def setter():
        rnd = random.Random(99)
        start.wait(TIMEOUT)
        while not stop.is_set():
            fb.set_num_threads(rnd.randint(1, 4))
            assert 1 <= fb.get_num_threads() <= 4
            time.sleep(0.0005)

    _run_beside_changer(WORKERS, worker, setter, "set_num_threads", start, stop)
    assert not errors, errors
    assert sum(calls) == WORKERS * CALLS_PER_WORKER


# Settings the changer below draws from: each switches the planner's choice
# for some of CASES (kernels, streaming, teams, block sizes).
TUNINGS = [{}, {"simd": False}, {"shuffles": False}, {"shuffle_min_bytes": 0},
           {"stream_min_bytes": 0}, {"parallel_min_bytes": 0}, {"block_bytes": 4096},
           {"fault_ahead_min_bytes": 0}, {"adaptive_teams": False}]


def test_settings_and_cache_change_while_threads_copy():
    """tune(), the fast path's clear() and its switch, from one thread,
    while others copy: tune() waits for the copies running and the copies
    started meanwhile wait for it, so every result is exact; nothing hangs."""
    from fastblock import _engine
    from fastblock._call import fastpath as _fastpath
    errors = []
    changes = [0]
    stop = threading.Event()
    start = threading.Barrier(WORKERS // 2 + 2)

    def worker(index):
        rnd = random.Random(1000 + index)
        outs = {case[0]: np.empty_like(case[4]) for case in CASES}
        try:
            start.wait(TIMEOUT)
            for _ in range(CALLS_PER_WORKER // 3):
                case = rnd.choice(CASES)
                _run_case(case, rnd.choice(THREAD_COUNTS), outs[case[0]] if rnd.random() < 0.3 else None)
        except BaseException as exc:  # noqa: BLE001  (reported below)
            errors.append((index, repr(exc)))

    def changer():
        rnd = random.Random(7)
        defaults = _engine.default_tuning()
        start.wait(TIMEOUT)
        try:
            while not stop.is_set():
                _engine.tune(**dict(defaults, **rnd.choice(TUNINGS)))
                if rnd.random() < 0.3:
                    _fastpath.clear()
                _fastpath.enabled(rnd.random() < 0.7)
                changes[0] += 1
                time.sleep(0.0005)
        except BaseException as exc:  # noqa: BLE001
            errors.append(("changer", repr(exc)))
        finally:
            _engine.tune(**defaults)
            _fastpath.enabled(True)

    _run_beside_changer(WORKERS // 2, worker, changer, "tune", start, stop)
    assert not errors, errors
    assert changes[0] > 0
    # The defaults as read back: what this build or CPU cannot run reads as off.
    with _engine.tune(**_engine.default_tuning()):
        defaults_in_force = _engine.current_tuning()
    assert _engine.current_tuning() == defaults_in_force


def _wait_for(condition, what):
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        assert time.monotonic() < deadline, f"waited {TIMEOUT} s for {what}"
        time.sleep(0.001)


@pytest.mark.skipif(not fb._engine.HAVE_OPENMP, reason="the long copy needs a team")
def test_tune_waits_for_the_copy_running_and_the_next_copy_waits_for_tune():
    """The settings guard, step by step: a copy made long (its helper thread
    starts 0.3 s late) is running; tune() waits for it; a copy started
    while tune() waits, waits for tune(). Without the guard each would take
    microseconds; with it, most of the 0.3 s (a tenth is the margin for a
    slow start of the threads). Each result is exact."""
    from fastblock import _engine
    x = np.arange(4 * 256 * 512, dtype=np.float32).reshape(1, 4, 256, 512)
    small = np.arange(4 * 8 * 8, dtype=np.float32).reshape(1, 4, 8, 8)
    took, results = {}, {}

    def timed(name, call):
        start = time.monotonic()
        results[name] = call()
        took[name] = time.monotonic() - start

    with _engine.tune(team_helper_delay_ns=300_000_000, adaptive_teams=False):
        long_copy = threading.Thread(target=timed, daemon=True, args=(
            "long", lambda: fb.space_to_depth(x, 2, num_threads=2)))
        long_copy.start()
        _wait_for(lambda: _engine.settings_guard()["copies_running"] == 1, "the long copy")
        tuning = threading.Thread(target=timed, args=("tune", lambda: _engine.tune(prefetch=False)),
                                  daemon=True)
        tuning.start()
        _wait_for(lambda: _engine.settings_guard()["changing"], "tune() to wait")
        next_copy = threading.Thread(target=timed, daemon=True, args=(
            "next", lambda: fb.space_to_depth(small, 2, num_threads=1)))
        next_copy.start()
        _join_all([long_copy, tuning, next_copy], time.monotonic() + TIMEOUT)
        assert took["long"] >= 0.3
        assert took["tune"] >= 0.1, took
        assert took["next"] >= 0.05, took
        assert not _engine.current_tuning()["prefetch"]
    assert _engine.settings_guard() == {"copies_running": 0, "changing": False}
    assert _same(results["long"], space_to_depth_ref(x, 2))
    assert _same(results["next"], space_to_depth_ref(small, 2))


@pytest.mark.skipif(not sysconfig.get_config_var("Py_GIL_DISABLED"),
                    reason="a build with a GIL has no GIL to keep off")
def test_import_keeps_the_gil_off():
    """Every extension module declares that it runs without the GIL: one
    that did not would turn it back on at import, with a RuntimeWarning
    (an error here)."""
    code = textwrap.dedent("""
        import sys
        import fastblock
        import fastblock._engine.core, fastblock._call.fastpath, fastblock._call.memory
        from fastblock._call import (convert, execute, general, interop, layouts, operation,
                                     strided_copy, threads, validate)
        from fastblock._ops import batch, blocks, collate, patterns, permute, table
        assert not sys._is_gil_enabled(), "the GIL is on"
        print("gil off")
    """)
    done = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", code],
                          capture_output=True, text=True, timeout=CHILD_TIMEOUT)
    assert done.returncode == 0 and "gil off" in done.stdout, done.stderr


def test_same_call_from_many_threads_at_once():
    # All threads released together on the same large copy, each with its
    # own thread count: OpenMP teams started from several threads at once.
    case = CASES[0]
    n = 6
    barrier = threading.Barrier(n)
    errors = []

    def run(num_threads):
        try:
            barrier.wait(TIMEOUT)
            for _ in range(10):
                _run_case(case, num_threads)
        except BaseException as exc:  # noqa: BLE001
            errors.append(repr(exc))

    threads = [threading.Thread(target=run, args=(k,), daemon=True) for k in (1, 2, 3, 4, 2, 8)]
    for t in threads:
        t.start()
    _join_all(threads, time.monotonic() + TIMEOUT)
    assert not errors, errors


def test_thread_pool_executor():
    jobs = [(case, nt) for case in CASES for nt in THREAD_COUNTS]
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(_run_case, case, nt) for case, nt in jobs]
        done, not_done = concurrent.futures.wait(futures, timeout=TIMEOUT)
        assert not not_done, f"{len(not_done)} jobs still running after {TIMEOUT} s"
        for f in done:
            f.result()
    assert len(jobs) == len(CASES) * len(THREAD_COUNTS)


def test_nested_thread_pools():
    # An operator called from a pool worker that was itself started by a
    # pool worker: OpenMP teams from threads OpenMP never saw.
    def outer(k):
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as inner:
            return [f.result(TIMEOUT) for f in
                    [inner.submit(_run_case, CASES[(k + j) % len(CASES)], 2) for j in range(3)]]

    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        results = [f.result(TIMEOUT) for f in [pool.submit(outer, k) for k in range(6)]]
    assert len(results) == 6


def test_kernels_release_the_gil():
    # While one thread runs single-threaded copies, this thread looks at a
    # few items of their result: three sources of 64 MiB, each of one value,
    # are copied in turn into one result, so between copies its items are
    # all one value, and a mix of two is seen only while a copy is half
    # done. Seeing one is proof that Python ran during a copy; a held GIL
    # would never show it, however loaded or quiet the machine (a loaded
    # one only takes more copies to show it).
    sources = [np.full((1, 1, 4096, 16384), v, np.uint8) for v in (1, 2, 3)]
    out = np.zeros((1, 4, 2048, 8192), np.uint8)
    samples = out.reshape(-1)[:: out.size // 64]
    done = threading.Event()

    def copies():
        for k in range(60):
            fb.space_to_depth(sources[k % 3], 2, out=out, num_threads=1)
            if done.is_set():
                return
        done.set()

    thread = threading.Thread(target=copies, daemon=True)
    thread.start()
    seen_mid_copy = False
    try:
        while not done.is_set():
            if len(set(samples.tolist())) > 1:
                seen_mid_copy = True
                break
    finally:
        done.set()
        thread.join(TIMEOUT)
    assert not thread.is_alive()
    assert seen_mid_copy, "Python never ran while a copy was half done: the GIL was held"


# ---------------------------------------------------------------- processes

def _child_check(index):
    """Run every case in a child process; return the names that passed."""
    return [_run_case(case, nt) for case in CASES for nt in (None, 1, 2, 4)]


def _use_openmp_in_this_process():
    x = np.ones((1, 4, 512, 512), np.float32)
    for nt in (2, 3, 4):
        fb.space_to_depth(x, 2, num_threads=nt)


@pytest.mark.skipif(sys.platform == "win32", reason="no fork")
def test_multiprocessing_fork_after_openmp():
    _use_openmp_in_this_process()
    ctx = multiprocessing.get_context("fork")
    pool = ctx.Pool(2)
    try:
        result = pool.map_async(_child_check, range(4))
        names = result.get(timeout=CHILD_TIMEOUT)  # TimeoutError: a child hangs
    finally:
        pool.terminate()
        pool.join()
    assert all(len(n) == len(CASES) * 4 for n in names)


@pytest.mark.skipif(sys.platform == "win32", reason="no fork")
@pytest.mark.parametrize("threads_in_child", [None, 1, 2])
def test_os_fork_after_openmp(threads_in_child):
    _use_openmp_in_this_process()
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        code = 1
        try:
            for case in CASES:
                _run_case(case, threads_in_child)
            code = 0
        finally:
            os._exit(code)
    deadline = time.monotonic() + CHILD_TIMEOUT
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail(f"forked child hung (num_threads={threads_in_child}) after OpenMP "
                        f"ran in the parent")
        time.sleep(0.02)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, \
        f"child ended with status {status:#x}"
    # The parent still works after its child went.
    _run_case(CASES[0], 2)


def test_multiprocessing_spawn():
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        names = pool.map_async(_child_check, range(1)).get(timeout=CHILD_TIMEOUT)
    assert len(names[0]) == len(CASES) * 4


# ---------------------------------------------------------------- absurd thread counts

def test_absurd_thread_count_does_not_crash():
    # num_threads=10**6 on a 64 MiB copy. Starting one OpenMP thread per
    # chunk makes libgomp reserve per-thread data on the caller's stack;
    # with a 256 KiB stack (a small thread stack, or ulimit -s) thousands of
    # threads overflow it and the process dies with SIGSEGV. The call must
    # instead finish (the count clamped to something sane) or raise.
    code = textwrap.dedent("""
        import numpy as np, fastblock as fb
        x = np.zeros((1, 1, 8192, 8192), np.uint8)
        x[0, 0, 1, 0] = 7
        try:
            y = fb.space_to_depth(x, 2, num_threads=10**6)
        except ValueError:
            print("refused")
        else:
            assert y[0, 2, 0, 0] == 7 and y.sum() == 7
            print("ok")
    """)

    def small_stack():
        resource.setrlimit(resource.RLIMIT_STACK, (256 * 1024, resource.RLIM_INFINITY))

    proc = subprocess.run([sys.executable, "-c", code], preexec_fn=small_stack,
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, (f"process died with {proc.returncode} "
                                  f"(-11 is SIGSEGV): {proc.stderr[-2000:]}")
    assert proc.stdout.strip() in ("ok", "refused")
