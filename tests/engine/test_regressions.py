"""One test per engine bug the stress harness (tests/stress/stress.py) found, named
after what was wrong; each fails on the engine before its fix."""
import numpy as np
import pytest

import fastblock as fb
from fastblock import _engine
from reference import depth_to_space_ref, space_to_depth_ref


def _same_bytes(got, expected):
    got = np.ascontiguousarray(got)
    expected = np.ascontiguousarray(expected)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    bad = np.flatnonzero(got.reshape(-1).view(np.uint8) != expected.reshape(-1).view(np.uint8))
    assert bad.size == 0, f"{bad.size} bytes differ, the first at byte {bad[0]} of {got.nbytes}"


# plan_gather split a long repeating run (plan_run_program) into n parts of
# ceil(pixels / n) pixels and took the last part as what was left after
# n - 1 of them: 2658 pixels in 63 parts of 43 left -8, so the rows ran 62
# parts and the last, a "part" of -8 pixels, copied nothing (the last 35
# pixels of every row were never written). Found by a random sweep (the
# first three) and by the stress harness.
LONG_RUN_CASES = {
    "s2d float32 (32768, 3, 2, 2)": (
        lambda: np.random.default_rng(0).standard_normal((32768, 3, 2, 2)).astype(np.float32),
        lambda x: fb.space_to_depth(x, 2), lambda x: space_to_depth_ref(x, 2)),
    "d2s depth_first float32 (1460, 12, 3, 2)": (
        lambda: np.random.default_rng(0).standard_normal((1460, 12, 3, 2)).astype(np.float32),
        lambda x: fb.depth_to_space(x, 2, "depth_first"),
        lambda x: depth_to_space_ref(x, 2, "depth_first")),
    "transpose int16 (4, 2658, 3, 1, 4)": (
        lambda: np.arange(4 * 2658 * 3 * 4, dtype=np.int16).reshape(4, 2658, 3, 1, 4),
        lambda x: fb.transpose(x, (1, 4, 2, 0, 3)), lambda x: np.transpose(x, (1, 4, 2, 0, 3))),
    "pixel_unshuffle int8 channels_last": (
        lambda: np.random.default_rng(1).integers(-128, 128, (3, 2, 9596, 4, 3), dtype=np.int8),
        lambda x: fb.pixel_unshuffle(x, 4, "channels_last"),
        lambda x: x.reshape(3, 2, 2399, 4, 1, 4, 3).transpose(0, 1, 2, 4, 6, 3, 5).reshape(3, 2, 2399, 1, 48)),
    "s2d uint8 bs 1 of a stepped view": (
        lambda: np.random.default_rng(2).integers(0, 256, (3, 8, 40, 12, 10, 15), dtype=np.uint8)[::3, ..., ::3],
        lambda x: fb.space_to_depth(x, 1, "depth_first"), lambda x: space_to_depth_ref(x, 1, "depth_first")),
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", sorted(LONG_RUN_CASES))
def test_long_run_whose_last_part_came_out_negative(name, threads):
    make, call, reference = LONG_RUN_CASES[name]
    x = make()
    fb.set_num_threads(threads)
    _same_bytes(call(x), reference(x))


def test_long_run_parts_cover_the_row():
    """The plan of the transpose above: rows of 2658 pixels in parts of 43,
    the last of 35 (48 items a pixel) where the 64-byte shuffles run long
    rows."""
    if not _engine.cpu_features()["avx512_vbmi"]:
        pytest.skip("this CPU has no AVX-512 VBMI: no long runs")
    plan = _engine.describe((2658, 4, 3, 4, 1), (24, 2, 8, 63792, 8), (96, 24, 8, 2, 2), 2)
    assert plan["kernel"] == "gather"
    assert plan["row_items"] == 43 * 48
    assert plan["last_row_items"] == 35 * 48


def test_long_run_with_a_negative_last_part_streamed_past_the_result():
    """The same split, streamed (8 MiB or more into resident pages): the
    negative last part became a negative byte count that the streaming
    stage passed to memcpy as a huge size, and the process crashed."""
    n = 174763
    x = np.random.default_rng(3).standard_normal((n, 3, 2, 2)).astype(np.float32)
    out = np.ones((n, 12, 1, 1), np.float32)
    fb.space_to_depth(x, 2, out=out, num_threads=1)
    _same_bytes(out, space_to_depth_ref(x, 2))
