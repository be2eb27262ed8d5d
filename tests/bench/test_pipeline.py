"""The pipeline report (``python -m speed_reports --pipeline``,
``speed_reports/pipeline.py``): every way of calling a case gives the same
result as an independent reference, the worker machinery returns a rate for
every case and worker in a tiny configuration of each start method, the
ratios and flags are right on made-up figures, and the plot is a PNG. Only
the structure is checked here, not the speeds."""
import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest

from reference import batch_to_space_ref, space_to_batch_ref
from speed_reports import pipeline as pl

TINY = pl.Config(operators=("space_to_depth", "transpose"), sizes=("224",), workers=2,
                 seconds=0.05, warmup=0.02, rounds=1)

# einops patterns (and lengths) that say what each case computes, by layout.
EINOPS = {
    False: {
        "space_to_depth": ("rearrange", "b c (h i) (w j) -> b (i j c) h w"),
        "depth_to_space": ("rearrange", "b (i j c) h w -> b c (h i) (w j)"),
        "pixel_unshuffle": ("rearrange", "b c (h i) (w j) -> b (c i j) h w"),
        "pixel_shuffle": ("rearrange", "b (c i j) h w -> b c (h i) (w j)"),
        "transpose": ("rearrange", "b c h w -> b h w c"),
        "rearrange": ("rearrange", "b c (h p1) (w p2) -> b (h w) (p1 p2 c)"),
        "repeat": ("repeat", "b c h w -> b c (h i) (w j)"),
        "tile": ("repeat", "b c h w -> b c (i h) (j w)"),
    },
    True: {
        "space_to_depth": ("rearrange", "b (h i) (w j) c -> b h w (i j c)"),
        "depth_to_space": ("rearrange", "b h w (i j c) -> b (h i) (w j) c"),
        "pixel_unshuffle": ("rearrange", "b (h i) (w j) c -> b h w (c i j)"),
        "pixel_shuffle": ("rearrange", "b h w (c i j) -> b (h i) (w j) c"),
        "transpose": ("rearrange", "b h w c -> b c h w"),
        "rearrange": ("rearrange", "b (h p1) (w p2) c -> b (h w) (p1 p2 c)"),
        "repeat": ("repeat", "b h w c -> b (h i) (w j) c"),
        "tile": ("repeat", "b h w c -> b (i h) (j w) c"),
    },
}


def expected_result(operator, size, x):
    if operator in ("space_to_batch", "batch_to_space"):
        blocks = (1, 2, 2, 1) if size.channels_last else (1, 1, 2, 2)
        reference = space_to_batch_ref if operator == "space_to_batch" else batch_to_space_ref
        return reference(x, blocks, (0,) * 4, (0,) * 4)
    einops = pytest.importorskip("einops")
    function, pattern = EINOPS[size.channels_last][operator]
    names = set(re.findall(r"\w+", pattern))
    lengths = {name: value for name, value in {"i": 2, "j": 2, "p1": 16, "p2": 16}.items()
               if name in names}
    return getattr(einops, function)(x, pattern, **lengths)


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


@pytest.mark.parametrize("size_name", ["224", "nhwc"])
@pytest.mark.parametrize("operator", pl.OPERATORS)
def test_every_way_gives_the_reference_result(operator, size_name):
    size = pl.SIZE_BY_NAME[size_name]
    x = pl.make_input(operator, size)
    expected = expected_result(operator, size, x)
    torch = _torch()
    calls = pl.case_calls(operator, size, pl.VARIANTS, torch)
    assert set(calls) == set(pl.VARIANTS) - (set() if torch else {pl.TORCH})
    for variant, call in calls.items():
        got = call()
        got = got.numpy() if variant == pl.TORCH else got
        assert got.shape == expected.shape, variant
        np.testing.assert_array_equal(got, expected, err_msg=variant)


def test_a_wrong_way_is_caught(monkeypatch):
    monkeypatch.setattr(pl, "numpy_call", lambda operator, size, x: lambda: np.zeros(3))
    with pytest.raises(AssertionError, match="numpy differs"):
        pl.case_calls("transpose", pl.SIZE_BY_NAME["224"], (pl.NUMPY,))


def test_the_inputs_are_the_sizes_of_the_issue():
    assert [(s.shape, s.dtype) for s in pl.SIZES] == [
        ((1, 3, 224, 224), "float32"), ((1, 3, 512, 512), "float32"),
        ((1, 3, 1024, 1024), "float32"), ((1, 224, 224, 3), "uint8")]
    assert pl.make_input("depth_to_space", pl.SIZE_BY_NAME["224"]).shape == (1, 12, 112, 112)
    assert pl.make_input("batch_to_space", pl.SIZE_BY_NAME["nhwc"]).shape == (4, 112, 112, 3)


def test_plan_has_every_case_once_and_a_copy_per_size():
    config = TINY._replace(sizes=("224", "nhwc"))
    plan = pl.make_plan(config, with_torch=True)
    assert len(plan) == len(set(plan)) == 2 * (1 + 2 * len(pl.VARIANTS))
    assert plan[0] == (pl.COPY, "224", pl.COPY)
    assert all(variant != pl.TORCH for _, _, variant in pl.make_plan(config, with_torch=False))


@pytest.mark.parametrize("method", pl.start_methods())
def test_pipeline_gives_a_rate_per_case_and_worker(method):
    # From a fresh parent, as the report runs it: this process has made
    # threaded calls (fastblock's and torch's), after which a forked child
    # may not use an OpenMP team. Torch (seconds to import in each worker)
    # in the first start method only.
    config = TINY if method == pl.start_methods()[0] else TINY._replace(
        variants=(pl.FASTBLOCK, pl.ONE_THREAD, pl.NUMPY))
    start = time.monotonic()
    rates = pl.in_fresh_process(pl.run_pipeline, (method, config), timeout=120)
    assert list(rates) == pl.make_plan(config, with_torch=pl.torch_installed())
    for key, rate in rates.items():
        assert not rate.error, (key, rate.error)
        assert len(rate.per_worker) == 2
        assert all(np.isfinite(r) and r > 0 for r in rate.per_worker), key
        assert rate.lowest <= rate.total / 2 <= rate.highest
    assert time.monotonic() - start < 60


def test_a_broken_case_is_reported_and_the_others_run(monkeypatch):
    # fork: the workers inherit the patched function; they run no threaded call
    if "fork" not in pl.start_methods():
        pytest.skip("needs the fork start method")

    def broken(operator, size, variants, torch=None):
        raise ValueError("no such case")

    monkeypatch.setattr(pl, "case_calls", broken)
    rates = pl.run_pipeline("fork", TINY._replace(operators=("transpose",),
                                                 variants=(pl.FASTBLOCK,)))
    assert rates[(pl.COPY, "224", pl.COPY)].total > 0
    assert rates[("transpose", "224", pl.FASTBLOCK)] == pl.Rate((), "ValueError: no such case")


def test_fresh_process_returns_the_result_or_the_error():
    rates = pl.in_fresh_process(pl.run_pipeline, (pl.start_methods()[0], TINY._replace(
        operators=("rearrange",), variants=(pl.FASTBLOCK, pl.ONE_THREAD))), timeout=120)
    assert set(rates) == {(pl.COPY, "224", pl.COPY), ("rearrange", "224", pl.FASTBLOCK),
                          ("rearrange", "224", pl.ONE_THREAD)}
    assert all(rate.total > 0 for rate in rates.values())
    with pytest.raises(RuntimeError, match="ValueError"):
        pl.in_fresh_process(pl.run_pipeline, ("no such method", TINY), timeout=120)


def test_fresh_process_that_hangs_is_stopped():
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="sleep: no result within 1 s"):
        pl.in_fresh_process(time.sleep, (60,), timeout=1)
    assert time.monotonic() - start < 20


def test_ratios_and_flags():
    totals = {pl.FASTBLOCK: 900.0, pl.ONE_THREAD: 1000.0, pl.NUMPY: 450.0, pl.TORCH: 10.0}
    r = pl.ratios(totals)
    assert r == pytest.approx({"vs 1 thread": 0.9, "vs numpy": 2.0})
    assert pl.flags(r) == []
    r = pl.ratios({pl.FASTBLOCK: 171.0, pl.ONE_THREAD: 26041.0, pl.NUMPY: 23709.0})
    assert r == pytest.approx({"vs 1 thread": 171 / 26041, "vs numpy": 171 / 23709})
    assert pl.flags(r) == ["< 0.9x 1 thread", "< numpy"]
    assert pl.flags(pl.ratios({pl.FASTBLOCK: 5.0, pl.NUMPY: 6.0})) == ["< numpy"]
    assert pl.ratios({pl.ONE_THREAD: 5.0}) == {}


def test_totals_leave_out_failed_cases():
    rates = {("tile", "224", pl.FASTBLOCK): pl.Rate((3.0, 4.0)),
             ("tile", "224", pl.NUMPY): pl.Rate((), "ValueError: x")}
    assert pl.totals_by_case(rates) == {("tile", "224"): {pl.FASTBLOCK: 7.0}}


def test_busy_core_times_both_ways_and_stops_the_spinner(monkeypatch):
    spinners = []
    start_spinner = pl.start_spinner
    monkeypatch.setattr(pl, "start_spinner", lambda *a, **k: spinners.append(
        start_spinner(*a, **k)) or spinners[-1])
    config = pl.Config(operators=("transpose", "repeat"), sizes=("nhwc",), seconds=0.02,
                       warmup=0.01)
    results = pl.busy_core(config)
    assert list(results) == [("transpose", "nhwc"), ("repeat", "nhwc")]
    for times in results.values():
        assert set(times) == {pl.FASTBLOCK, pl.ONE_THREAD}
        assert all(0 < t < 1 for t in times.values())
    assert len(spinners) == 1 and spinners[0].poll() is not None


def test_spinner_ends_by_itself():
    spinner = pl.start_spinner(0.3)
    try:
        assert spinner.wait(30) == 0
    finally:
        pl.stop(spinner)


def test_median_call_seconds_alternates_and_takes_the_median():
    order = []
    calls = {"a": lambda: order.append("a"), "b": lambda: order.append("b")}
    times = pl.median_call_seconds(calls, seconds=0.01, warmup=0.0, rounds=3)
    assert set(times) == {"a", "b"} and all(t >= 0 for t in times.values())
    changes = sum(1 for x, y in zip(order, order[1:]) if x != y)
    assert changes >= 2 * 3 - 1   # a, b, a, b, a, b at least


def _rates(per_worker):
    return {(pl.COPY, "224", pl.COPY): pl.Rate(per_worker),
            **{(op, "224", v): pl.Rate(per_worker) for op in ("tile", "repeat")
               for v in pl.VARIANTS},
            ("tile", "nhwc", pl.FASTBLOCK): pl.Rate(per_worker),
            ("tile", "nhwc", pl.NUMPY): pl.Rate((), "ValueError: x")}


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib", reason="the plot needs matplotlib")
    path = str(tmp_path / "pipeline.png")
    results = {"fork": _rates((1000.0, 2000.0)), "forkserver": _rates((10.0, 20.0))}
    assert pl.plot(results, path) == path
    with open(path, "rb") as png:
        assert png.read(8) == b"\x89PNG\r\n\x1a\n"


def test_tables_print_every_case(capsys):
    pl.print_pipeline("fork", 2, _rates((1000.0, 2000.0)))
    pl.print_busy({("tile", "224"): {pl.FASTBLOCK: 2e-4, pl.ONE_THREAD: 1e-4}})
    out = capsys.readouterr().out
    assert "fork: 2 worker processes" in out and "copy (np.copyto)" in out
    assert "1x224x224x3 uint8 NHWC" in out and "tile nhwc numpy: ValueError: x" in out
    assert "  << > 1.5x 1 thread" in out


def test_report_runs_a_tiny_configuration(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    pl.add_arguments(parser)
    path = tmp_path / "p.png"
    args = parser.parse_args(["--ops", "transpose", "--samples", "nhwc", "--seconds", "0.03",
                              "--variants", "fastblock,numpy",
                              "--warmup", "0.01", "--workers", "2", "--plot", str(path),
                              "--methods", pl.start_methods()[0]])
    result = pl.report(args)
    out = capsys.readouterr().out
    assert set(result["pipeline"]) == {pl.start_methods()[0]}
    assert {variant for _, _, variant in result["pipeline"][pl.start_methods()[0]]} == {
        pl.COPY, pl.FASTBLOCK, pl.NUMPY}
    assert list(result["busy"]) == [("transpose", "nhwc")]
    assert "transpose" in out and "One process calling" in out
    assert os.path.exists(path) or "matplotlib is not installed" in out


def test_options():
    parser = argparse.ArgumentParser()
    pl.add_arguments(parser)
    quick = pl.config_from(parser.parse_args(["--quick"]))
    assert quick.sizes == ("224", "nhwc") and quick.rounds == 1 < pl.Config().rounds
    assert pl.config_from(parser.parse_args(["--variants", "numpy"])).variants == (pl.NUMPY,)
    assert pl.config_from(parser.parse_args([])) == pl.Config()
    with pytest.raises(SystemExit, match="unknown operator: spin"):
        pl.config_from(parser.parse_args(["--ops", "tile,spin"]))


def test_report_script_lists_every_report_when_none_is_named():
    # python -m speed_reports, run from the repository root, which holds it
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    result = subprocess.run([sys.executable, "-m", "speed_reports"], capture_output=True,
                            text=True, timeout=60, cwd=root)
    assert result.returncode == 2
    assert "--pipeline" in result.stderr and "--sizes" in result.stderr


def test_rounds_take_turns_and_report_the_median_round():
    config = pl.Config(operators=("tile",), sizes=("224",), variants=(pl.FASTBLOCK, pl.NUMPY),
                       rounds=2)
    assert pl.make_plan(config, with_torch=False) == [
        (pl.COPY, "224", pl.COPY), (pl.COPY, "224", pl.COPY),
        ("tile", "224", pl.FASTBLOCK), ("tile", "224", pl.NUMPY),
        ("tile", "224", pl.FASTBLOCK), ("tile", "224", pl.NUMPY)]
    rounds = [pl.Rate((5.0, 5.0)), pl.Rate((1.0, 2.0)), pl.Rate((3.0, 4.0))]
    assert pl.median_round(rounds) == rounds[2]
    assert pl.median_round(rounds[:2]) == rounds[1]
    failed = pl.Rate((), "broken")
    assert pl.median_round(rounds + [failed]) == failed
