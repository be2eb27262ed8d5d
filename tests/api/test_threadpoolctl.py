"""The default thread count follows OpenMP's, so threadpoolctl's limits
(joblib's and scikit-learn's way to avoid oversubscription) apply to
fastblock; set_num_threads and num_threads= still take precedence."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fastblock as fb
from fastblock import _engine
from fastblock._call import threads as _threads

threadpoolctl = pytest.importorskip("threadpoolctl")
pytestmark = pytest.mark.skipif(not _engine.HAVE_OPENMP, reason="built without OpenMP")


@pytest.fixture(autouse=True)
def _openmp_default():
    _threads._follow_openmp()


def test_threadpool_limits_set_the_default():
    unlimited = fb.get_num_threads()
    with threadpoolctl.threadpool_limits(1):
        assert fb.get_num_threads() == 1
        assert _threads.resolve_num_threads(None) == 1
    with threadpoolctl.threadpool_limits(3, user_api="openmp"):
        assert fb.get_num_threads() == 3
    assert fb.get_num_threads() == unlimited


def test_set_num_threads_and_num_threads_take_precedence():
    with threadpoolctl.threadpool_limits(1):
        fb.set_num_threads(2)
        assert fb.get_num_threads() == 2
        assert _threads.resolve_num_threads(None) == min(2, _threads._MAX_THREADS)
        assert _threads.resolve_num_threads(3) == min(3, _threads._MAX_THREADS)


def test_threadpool_info_lists_the_engines_openmp():
    infos = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "openmp"]
    assert infos, threadpoolctl.threadpool_info()
    linked = subprocess.run(["ldd", _engine.core.__file__], capture_output=True, text=True).stdout
    assert any(os.path.basename(i["filepath"]).split(".so")[0] in linked for i in infos), (infos, linked)


def _threads_after_a_large_copy(limit_code: str, env=None) -> int:
    """Threads of a fresh process after a copy large enough to share out,
    run under ``limit_code`` (a with-statement header, or '')."""
    body = "y = fb.space_to_depth(x, 2)"
    if limit_code:
        body = f"{limit_code}\n    {body}"
    code = textwrap.dedent("""\
        import os, numpy as np, threadpoolctl, fastblock as fb
        x = np.ones((8, 16, 256, 256), np.float32)
        {body}
        print(len(os.listdir("/proc/self/task")))
        """).format(body=body)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="threads counted in /proc")
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2 if hasattr(os, "sched_getaffinity") else True,
                    reason="one core: one thread either way")
def test_a_limited_copy_starts_no_openmp_threads():
    """Under threadpool_limits(1) the copy runs on the calling thread: no
    OpenMP worker is ever started (the process keeps the threads it had
    without the copy's team); unlimited, the team is started."""
    env = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "2"}
    limited = _threads_after_a_large_copy("with threadpoolctl.threadpool_limits(1):", env)
    unlimited = _threads_after_a_large_copy("", env)
    assert unlimited > limited


def test_omp_num_threads_still_sets_the_default():
    done = subprocess.run([sys.executable, "-c", "import fastblock as fb; print(fb.get_num_threads())"],
                          capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "3"},
                          timeout=120)
    assert done.stdout.split()[-1] == "3", done.stderr


def test_results_do_not_depend_on_the_limit():
    x = np.random.default_rng(0).integers(0, 255, (4, 12, 96, 96), dtype=np.uint8)
    expected = fb.space_to_depth(x, 2, num_threads=1)
    with threadpoolctl.threadpool_limits(1):
        np.testing.assert_array_equal(fb.space_to_depth(x, 2), expected)
