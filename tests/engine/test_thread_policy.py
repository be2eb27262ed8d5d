"""The thread policy (fastblock/_engine/src/team.h, docs/threads.md), checked
without timing: a team whose last helper starts late on purpose (the
``team_helper_delay_ns`` hook) caps the next calls at the threads that came
in time, a prompt probe after the back-off brings the whole team back, and
the result never depends on the team. Then forked, forkserver and spawned
children: which keep their threads, and that none hangs."""
import multiprocessing
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import fastblock as fb
from fastblock import _engine
from fastblock._call import threads as _threads

# Large enough for a team (the engine's parallel threshold), small enough to be quick.
SHAPE = (1, 4, 256, 512)
# Long enough (64 MiB) for every prompt helper of a 3-thread team to get work.
LONG_SHAPE = (1, 4, 2048, 2048)
# The hook's delay, and the wait that counts as late in these tests: far
# apart from each other and from what scheduling on a loaded machine costs.
DELAY_NS = 200_000_000
LATE_NS = 50_000_000
CHILD_TIMEOUT = 120


def _expected(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 3, 5, 1, 2, 4).reshape(
        n, 4 * c, h // 2, w // 2)


@pytest.fixture
def policy():
    """A clean policy, late at LATE_NS, with back-offs long enough that no
    probe falls due by itself during a test; put back afterwards."""
    _engine.forget_team_policy()
    with _engine.tune(team_late_ns=LATE_NS, team_cold_late_ns=LATE_NS, team_late_streak=1,
                      team_backoff_min_ns=3600 * 10**9,
                      team_backoff_max_ns=4 * 3600 * 10**9):
        yield
    _engine.forget_team_policy()


def _call(x, threads):
    assert x.nbytes >= _engine.current_tuning()["parallel_min_bytes"]
    return fb.space_to_depth(x, 2, num_threads=threads)


def _make_late(x, threads):
    with _engine.tune(team_helper_delay_ns=DELAY_NS):
        return _call(x, threads)


def test_a_late_helper_caps_the_team_at_the_threads_that_came(policy):
    x = np.random.default_rng(0).random(LONG_SHAPE, dtype=np.float32)
    expected = _expected(x)
    np.testing.assert_array_equal(_call(x, 3), expected)
    state = _engine.team_policy()
    assert (state["cap"], state["late_runs"], state["last_team"]) == (0, 0, 3)

    # Thread 2 of 3 starts late: the call is right, and the cap is the two that came.
    np.testing.assert_array_equal(_make_late(x, 3), expected)
    state = _engine.team_policy()
    assert (state["cap"], state["late_runs"], state["runs"]) == (2, 1, 2)

    # Capped calls run two threads, whatever they ask for.
    np.testing.assert_array_equal(_call(x, 3), expected)
    state = _engine.team_policy()
    assert (state["last_team"], state["runs"], state["probes"]) == (2, 3, 0)
    # ... and two threads of two are late again: one thread, no team at all.
    np.testing.assert_array_equal(_make_late(x, 3), expected)
    assert _engine.team_policy()["cap"] == 1
    runs = _engine.team_policy()["runs"]
    for threads in (2, 3, 8):
        np.testing.assert_array_equal(_call(x, threads), expected)
    assert _engine.team_policy()["runs"] == runs


def test_a_prompt_probe_brings_the_whole_team_back(policy):
    x = np.random.default_rng(1).random(SHAPE, dtype=np.float32)
    expected = _expected(x)
    with _engine.tune(team_backoff_min_ns=1_000_000):
        _make_late(x, 2)
    state = _engine.team_policy()
    assert state["cap"] == 1 and state["backoff_ns"] == 4_000_000
    time.sleep(max(state["probe_in_ns"], 0) / 1e9 + 0.01)
    np.testing.assert_array_equal(_call(x, 2), expected)      # the probe, prompt
    state = _engine.team_policy()
    assert (state["cap"], state["probes"], state["last_team"]) == (0, 1, 2)
    assert state["backoff_ns"] == 4_000_000                    # on probation
    for _ in range(8):
        _call(x, 2)
    assert _engine.team_policy()["backoff_ns"] == 3600 * 10**9  # halved, at least the minimum


def test_a_late_run_on_probation_cuts_the_team_at_once(policy):
    x = np.ones(SHAPE, np.float32)
    with _engine.tune(team_late_streak=2, team_backoff_min_ns=1_000_000):
        _make_late(x, 2)
        _make_late(x, 2)                                       # two in a row: cut
        assert _engine.team_policy()["cap"] == 1
        time.sleep(max(_engine.team_policy()["probe_in_ns"], 0) / 1e9 + 0.005)
        _call(x, 2)                                            # a prompt probe
        assert _engine.team_policy()["cap"] == 0
        _make_late(x, 2)                                       # one late run on probation
        state = _engine.team_policy()
    assert (state["cap"], state["backoff_ns"]) == (1, 16_000_000)


def test_probes_double_the_team_until_it_is_whole(policy):
    x = np.random.default_rng(4).random(SHAPE, dtype=np.float32)
    with _engine.tune(team_backoff_min_ns=1_000_000):
        _make_late(x, 2)
        teams = []
        for _ in range(3):
            time.sleep(max(_engine.team_policy()["probe_in_ns"], 0) / 1e9 + 0.005)
            np.testing.assert_array_equal(_call(x, 4), _expected(x))
            state = _engine.team_policy()
            teams.append((state["last_team"], state["cap"]))
    assert teams == [(2, 2), (4, 0), (4, 0)]


def test_late_probes_back_off_fourfold_up_to_the_longest(policy):
    x = np.ones(SHAPE, np.float32)
    with _engine.tune(team_backoff_min_ns=1_000_000, team_backoff_max_ns=20_000_000):
        backoffs = []
        for _ in range(4):
            _make_late(x, 2)
            state = _engine.team_policy()
            backoffs.append(state["backoff_ns"])
            time.sleep(max(state["probe_in_ns"], 0) / 1e9 + 0.005)
        assert backoffs == [4_000_000, 16_000_000, 20_000_000, 20_000_000]
        assert _engine.team_policy()["probes"] == 3


def test_a_whole_team_is_capped_after_a_streak_of_late_runs(policy):
    x = np.ones(SHAPE, np.float32)
    with _engine.tune(team_late_streak=3):
        for late in (True, True, False, True, True):    # a prompt run ends a streak
            (_make_late if late else _call)(x, 2)
        assert _engine.team_policy()["cap"] == 0
        _make_late(x, 2)
        state = _engine.team_policy()
    assert (state["cap"], state["late_runs"]) == (1, 5)


def test_helpers_woken_from_sleep_get_longer(policy):
    # A wait of 20 ms: late for helpers that ran a team moments ago (hot,
    # still spinning), not for helpers that had to be woken (cold).
    x = np.ones(SHAPE, np.float32)
    _call(x, 2)
    with _engine.tune(team_helper_delay_ns=20_000_000, team_late_ns=5_000_000,
                      team_cold_late_ns=100_000_000):
        with _engine.tune(team_hot_ns=0):
            _call(x, 2)
        assert _engine.team_policy()["late_runs"] == 0
        with _engine.tune(team_hot_ns=3600 * 10**9):
            _call(x, 2)
        assert _engine.team_policy()["late_runs"] == 1


def test_the_policy_off_runs_every_team_asked_for(policy):
    x = np.ones(SHAPE, np.float32)
    with _engine.tune(adaptive_teams=False):
        _make_late(x, 2)
        _call(x, 2)
        state = _engine.team_policy()
    assert (state["cap"], state["late_runs"], state["runs"], state["last_team"]) == (0, 0, 2, 2)


def test_results_do_not_depend_on_the_team(policy):
    rng = np.random.default_rng(2)
    cases = [
        (lambda x, **k: fb.space_to_depth(x, 2, **k), rng.random(SHAPE, dtype=np.float32)),
        (lambda x, **k: fb.depth_to_space(x, 2, mode="CRD", **k),
         rng.integers(0, 255, (1, 16, 256, 128), dtype=np.uint8)),
        (lambda x, **k: fb.transpose(x, (0, 2, 3, 1), **k), rng.random(SHAPE)),
        (lambda x, **k: fb.tile(x, (1, 2, 1, 3), **k), rng.random((1, 4, 128, 128), np.float32)),
        (lambda x, **k: fb.space_to_depth(x, 3, mode="depth_first", data_format="NCHW_VECT_C",
                                          **k), rng.integers(0, 99, (1, 4, 192, 192, 4), np.int8)),
    ]
    for op, x in cases:
        reference = op(x, num_threads=1)
        out = np.empty_like(reference)
        for threads in (2, 3):
            np.testing.assert_array_equal(op(x, num_threads=threads), reference)
            with _engine.tune(team_helper_delay_ns=5_000_000):
                np.testing.assert_array_equal(op(x, num_threads=threads, out=out), reference)
            np.testing.assert_array_equal(op(x, num_threads=threads), reference)  # capped
            _engine.forget_team_policy()


def test_settings_are_checked_and_put_back():
    before = _engine.current_tuning()
    with _engine.tune(team_backoff_min_ns=0, team_backoff_max_ns=0, adaptive_teams=False):
        now = _engine.current_tuning()
        assert now["team_backoff_min_ns"] == 1 and now["team_backoff_max_ns"] == 1
        assert now["adaptive_teams"] is False
    assert _engine.current_tuning() == before
    assert before["adaptive_teams"] is True and before["team_helper_delay_ns"] == 0


# ---------------------------------------------------------------- children

def _run_python(code):
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                            text=True, timeout=CHILD_TIMEOUT)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


# A forked child reports: its cap on threads, whether its team was lost in
# the fork, and the team its 2-thread call ran (0: none), its result checked.
FORK_CHILD = """
    import os, sys, threading, numpy as np, fastblock as fb
    from fastblock import _engine
    from fastblock._call import threads as _threads

    def run_team():
        x = np.arange(4 * 256 * 512, dtype=np.float32).reshape(1, 4, 256, 512)
        y = fb.space_to_depth(x, 2, num_threads=2)
        assert np.array_equal(y, x.reshape(1, 4, 128, 2, 256, 2).transpose(0, 3, 5, 1, 2, 4)
                              .reshape(1, 16, 128, 256))

    {parent}
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            before = _engine.team_policy()["runs"]
            run_team()
            ran = _engine.team_policy()["last_team"] if _engine.team_policy()["runs"] > before else 0
            print(_threads.resolve_num_threads(2), _threads._team_lost_in_fork, ran)
            sys.stdout.flush()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    sys.exit(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.skipif(not hasattr(os, "fork") or not _engine.HAVE_OPENMP,
                    reason="needs fork and OpenMP")
@pytest.mark.parametrize("parent, expected", [
    ("", "2 False 2"),                                  # the parent never ran a team
    ("run_team()", "1 True 0"),                         # it did, on the forking thread
    ("t = threading.Thread(target=run_team); t.start(); t.join()", "2 False 2"),  # on another
])
def test_forked_child_keeps_its_threads_unless_its_team_was_lost(parent, expected):
    assert _run_python(FORK_CHILD.format(parent=parent)).split() == expected.split()


def _worker_report(_):
    before = _engine.team_policy()["runs"]
    x = np.random.default_rng(3).random(SHAPE, dtype=np.float32)
    np.testing.assert_array_equal(fb.space_to_depth(x, 2, num_threads=2), _expected(x))
    ran = _engine.team_policy()["last_team"] if _engine.team_policy()["runs"] > before else 0
    return _threads.resolve_num_threads(2), ran


@pytest.mark.skipif(not _engine.HAVE_OPENMP, reason="needs OpenMP")
@pytest.mark.parametrize("method", ["forkserver", "spawn"])
def test_forkserver_and_spawn_workers_run_teams(method):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method} here")
    # This process has run teams: workers that start afresh keep their threads.
    _call(np.ones(SHAPE, np.float32), 2)
    with multiprocessing.get_context(method).Pool(2) as pool:
        reports = pool.map_async(_worker_report, range(4)).get(timeout=CHILD_TIMEOUT)
    assert reports == [(2, 2)] * 4


@pytest.mark.skipif(not _engine.HAVE_OPENMP, reason="no OpenMP: no teams")
def test_a_thread_knows_whether_it_started_a_team():
    """What the fork hook asks (fastblock/_threads.py): a thread that ran a
    copy on a team of two or more threads, and only such a thread, says so."""
    answers = {}

    def ask(name, threads):
        if threads:
            x = np.ones(SHAPE, np.float32)
            with _engine.tune(adaptive_teams=False):
                fb.space_to_depth(x, 2, num_threads=threads)
        answers[name] = _engine.started_team_on_this_thread()

    for name, threads in [("none", 0), ("one", 1), ("two", 2)]:
        thread = threading.Thread(target=ask, args=(name, threads))
        thread.start()
        thread.join(CHILD_TIMEOUT)
    assert answers == {"none": False, "one": False, "two": True}
