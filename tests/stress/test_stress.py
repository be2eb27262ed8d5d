"""The differential stress harness (tests/stress/stress.py), for a time budget.

``FASTBLOCK_STRESS_SECONDS`` sets the budget (default 2 s, a taste in the
README's test run; CI runs ``ci/stress.sh`` for minutes), ``FASTBLOCK_STRESS_SEED`` the seed (default:
from the commit, so each commit draws new cases). A failure lists the
``--replay`` line of every run that failed.
"""
import ctypes
import os
import subprocess
import sys

import numpy as np
import pytest

import stress

SECONDS = float(os.environ.get("FASTBLOCK_STRESS_SECONDS", "2"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="guard pages through mprotect")
def test_random_cases_match_numpy():
    seed = os.environ.get("FASTBLOCK_STRESS_SEED")
    command = [sys.executable, stress.__file__, "--seconds", str(SECONDS)]
    if "FASTBLOCK_STRESS_SECONDS" not in os.environ:
        # The README run's 2 seconds: results of up to 4 MiB, since a larger
        # case can take seconds past the budget. A run given its seconds
        # (ci/sanitize.sh, ci/coverage.sh) takes every case, as ci/stress.sh does.
        command += ["--max-result-bytes", str(4 << 20)]
    if seed:
        command += ["--seed", seed]
    done = subprocess.run(command, capture_output=True, text=True, timeout=SECONDS + 600)
    print(done.stdout)
    assert done.returncode == 0, done.stdout[-20000:] + done.stderr[-5000:]
    assert " 0 mismatches, 0 crashes" in done.stdout


def _case(seed=3, index=0):
    case, rng = stress.draw_case(seed, index)
    return case, stress.draw_runs(case, rng, small=True)


def test_a_wrong_item_is_reported():
    """The check can fail: a call that changes one item of the right result."""
    case, runs = _case()

    def wrong(x, out, threads):
        result = np.ascontiguousarray(case.reference(x))
        result.reshape(-1).view(np.uint8)[-1] ^= 1
        if out is not None:
            out[...] = result
            return out
        return result
    case.call = wrong
    for run in runs:
        problem = stress.check_run(case, run, np.random.default_rng(0))
        if case.dtype.hasobject:
            assert problem is None
        else:
            assert problem and "items differ" in problem


def test_a_write_outside_out_is_reported():
    """A placed ``out`` is checked over its whole buffer, not only its items:
    here a byte just before its first one (in the buffer: the layout puts
    an item's bytes there first)."""
    seed, index = 3, 0
    while True:
        case, runs = _case(seed, index)
        placed = [r for r in runs if r.out == "placed"]
        if placed and all(case.result_shape) and not case.dtype.hasobject:
            break
        index += 1
    run = placed[0]
    run.out_layout.byte_offset = case.dtype.itemsize

    def spill(x, out, threads):
        out[...] = case.reference(x)
        low = getattr(np.lib, "array_utils", np).byte_bounds(out)[0]
        ctypes.c_ubyte.from_address(low - 1).value ^= 0xFF
        return out
    case.call = spill
    problem = stress.check_run(case, run, np.random.default_rng(0))
    assert problem is not None and "out's buffer differs at 1 bytes" in problem


@pytest.mark.parametrize("operation", ["rearrange", "repeat"])
def test_einops_reference_is_einops(operation):
    """The harness's NumPy reference for rearrange / repeat gives einops'
    own result, on 200 drawn patterns over strided sources."""
    einops = pytest.importorskip("einops")
    for index in range(200):
        rng = np.random.default_rng([29, index])
        dtype = np.dtype(str(rng.choice(stress.DTYPES)))
        pattern = stress.draw_einops(rng, dtype.itemsize, operation)
        shape = pattern.input_shape
        x, _ = stress.place(shape, dtype, stress.draw_layout(rng, len(shape), dtype.itemsize), rng)
        expected = getattr(einops, operation)(x, pattern.text, **pattern.given)
        got = pattern.reference(x)
        assert got.shape == expected.shape, pattern.describe()
        assert np.array_equal(stress.raw_bytes(got), stress.raw_bytes(expected)), pattern.describe()


def test_replay_runs_one_case():
    done = subprocess.run([sys.executable, stress.__file__, "--replay", "5:7"], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith("ok")
