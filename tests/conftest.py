"""Shared fixtures for the fastblock test suite.

pytest puts this folder on sys.path (no __init__.py), so every test folder
imports the helpers here (``reference``). The speed reports that tests/bench
tests (the package ``speed_reports``) import from the repository root, which
``python -m pytest`` run there puts on sys.path."""
import os

import numpy as np
import pytest

import fastblock as fb
from draws import DRAWN_TESTS, EVERY_CASE, SEED

_BENCH_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench") + os.sep


def pytest_collection_modifyitems(config, items):
    """tests/bench tests the speed reports, not the library: marked
    speed_reports, which the README's run leaves to the asv job."""
    for item in items:
        if str(item.path).startswith(_BENCH_TESTS):
            item.add_marker(pytest.mark.speed_reports)


# The libraries whose behaviour the tests compare fastblock with: NumPy's
# and ml_dtypes' casts, the peers' operators, the build's Cython.
PEERS = ["numpy", "ml_dtypes", "Cython", "torch", "onnx", "onnxruntime", "openvino", "einops",
         "dask", "distributed", "hypothesis", "opencv-python-headless", "nvidia-dali-cuda120"]


def _run_lines():
    """The seed of this run's draw and the versions it tested against."""
    from importlib import metadata

    def version(name):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    drawn = "every case" if EVERY_CASE else f"a draw, seed {SEED}"
    return [f"fastblock {fb.__version__}; kernel-edge tests (tests/draws.py): {drawn}"
            f" (FASTBLOCK_TEST_SEED={SEED} replays it)",
            "tested against: " + ", ".join(f"{name} {version(name)}" for name in PEERS)]


def pytest_report_header(config):
    return _run_lines()


def pytest_terminal_summary(terminalreporter):
    """The same lines at the end, where a quiet (-q) run prints no header."""
    if terminalreporter.verbosity < 0:
        for line in _run_lines():
            terminalreporter.write_line(line)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failure of a drawn test names the seed that drew its case (the
    test id names the case)."""
    report = (yield).get_result()
    if report.failed and any(item.nodeid.split("[")[0].endswith(name) for name in DRAWN_TESTS):
        report.sections.append(("drawn case", f"drawn with seed {SEED}: replay with "
                                f"FASTBLOCK_TEST_SEED={SEED} pytest '{item.nodeid}'"))


@pytest.fixture(autouse=True)
def _restore_num_threads():
    """Tests may change the default thread count; put it back afterwards
    (to following OpenMP's, where no set_num_threads came before). Each test
    also starts with a thread policy that has seen nothing: a cap left by
    an earlier test would run its teams smaller."""
    from fastblock import _engine
    from fastblock._call import threads as _threads
    before = _threads._num_threads
    _engine.forget_team_policy()
    yield
    if before is None:
        _threads._follow_openmp()
    else:
        fb.set_num_threads(before)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(params=["pixels", "tables", "planes"])
def vect_c_path(request):
    """NCHW_VECT_C depth_first with bs*bs not a multiple of 4 runs bs 3 in
    registers where the CPU has AVX-512 VBMI ("pixels"); otherwise
    depth_to_space reads large results through tables and small ones
    through planes, and space_to_depth goes through planes: run the test
    each way, whatever its size (space_to_depth takes "tables" as planes)."""
    from fastblock import _engine
    if request.param == "pixels" and not _engine.cpu_features()["vect_c_pixels"]:
        pytest.skip("this CPU has no AVX-512 VBMI")
    with _engine.tune(vect_c_pixels=request.param == "pixels",
                      vect_c_rows_min_bytes=0 if request.param == "tables" else 1 << 62):
        yield request.param
