"""The Ray and Hugging Face reports (``python -m speed_reports --ray`` /
``--hf``, ``speed_reports/pipelines.py``) in a tiny configuration: each
way's first batch passes the report's own check against the contract's
expression, and every way gets a rate. Only the structure is checked here,
not the speeds."""

import numpy as np
import pytest

from speed_reports import pipelines

pytest.importorskip("datasets")
pytest.importorskip("torch")


def test_hf_report_tiny():
    figures = pipelines.measure_hf(n=16, side=8, batch=8, rounds=1)
    assert set(figures["pipeline"]) == {"floor", "torch ops", "fastblock"}
    assert set(figures["transform"]) == {"torch ops", "fastblock"}
    assert all(v > 0 for part in figures.values() for v in part.values())


def test_ways_compute_the_rule():
    """NumPy's and torch's ways are the rule within float32 rounding; the
    check itself refuses a wrong result."""
    x = np.random.default_rng(0).integers(0, 256, (3, 4, 5, 3), dtype=np.uint8)
    pipelines._check("numpy", pipelines.ray_numpy_way({"image": x})["image"], x)
    pil = pytest.importorskip("PIL.Image")
    got = pipelines.hf_torch_ops({"image": [pil.fromarray(a) for a in x]})["image"]
    pipelines._check("torch ops", got.numpy(), x)
    with pytest.raises(AssertionError):
        pipelines._check("fastblock", got.numpy() + 1e-3, x)


def test_ray_report_tiny():
    """A local Ray of 2 CPUs, 2 batches of 4 images a way (about 15 s; the
    asv job runs tests/bench, not the README's run)."""
    pytest.importorskip("ray")
    rates = pipelines.measure_ray(n=8, side=8, batch=4, rounds=1)
    assert set(rates) == {"floor", "float32 floor", "numpy", "fastblock"} and all(v > 0 for v in rates.values())


def test_report_options():
    """--ray and --hf name the module's report functions."""
    from speed_reports import __main__ as report
    assert report.MODULES["ray"] == report.MODULES["hf"] == "pipelines"
    for name in ("ray", "hf"):
        assert callable(getattr(pipelines, report.FUNCTIONS[name]))
