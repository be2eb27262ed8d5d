"""The preprocessing report (``python -m speed_reports --preprocess``,
``speed_reports/preprocess.py``) on tiny versions of its cases: fastblock's
one pass and NumPy's chain give the issue-50 contract's result bit for bit
(its NumPy expression written out here again: a multiply, then an add, in
float32, then one rounding), PyTorch's and OpenCV's chains (which divide by
255 and by std) come within rounding of it, a wrong way is caught, and the
table and the plot have a row per case and a column per way. Only the
structure is checked here, not the speeds."""
import os
import subprocess
import sys

import numpy as np
import pytest

from speed_reports import preprocess as pp

TINY = [pp.shrink(case) for case in pp.CASES]
TINY_BY_NAME = {case.name: case for case in TINY}
# The speed reports run as ``python -m speed_reports`` from a scratch folder,
# with the repository root (which holds the package) on the path.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPORT = [sys.executable, "-m", "speed_reports"]
REPORT_ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(
    filter(None, [os.environ.get("PYTHONPATH"), ROOT])))


def _import(name):
    try:
        return __import__(name)
    except ImportError:
        return None


def _contract(r, dtype, scale=None, offset=None):
    """Issue 50's NumPy expression of converting the moved array ``r``."""
    dtype = np.dtype(dtype)
    is_float = dtype.kind == "f" or dtype.name == "bfloat16"
    if scale is None and offset is None and is_float:
        return r.astype(dtype)
    ct = np.float64 if dtype == np.float64 else np.float32
    v = r.astype(ct)
    if scale is not None:
        v = v * np.asarray(scale).astype(ct)
    if offset is not None:
        v = v + np.asarray(offset).astype(ct)
    if is_float:
        return v.astype(dtype)
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    return np.where(np.isnan(v), 0, np.clip(np.rint(v), lo, hi)).astype(dtype)


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint8)


def _expected(case, x):
    """Each case's result from the issue's own words (not the module's helpers)."""
    if case.name == "imagenet":
        mean = np.array([0.485, 0.456, 0.406]).reshape(3, 1, 1)
        std = np.array([0.229, 0.224, 0.225]).reshape(3, 1, 1)
        return _contract(np.transpose(x, (2, 0, 1)), np.float32, 1 / (255 * std), -mean / std)
    if case.name.startswith("batch"):
        mean = np.array([0.485, 0.456, 0.406]).reshape(3, 1, 1)
        std = np.array([0.229, 0.224, 0.225]).reshape(3, 1, 1)
        dtype = pp.result_dtype(case)
        return np.stack([_contract(np.transpose(img, (2, 0, 1)), dtype, 1 / (255 * std),
                                   -mean / std) for img in x])
    if case.name == "yolo":
        rgb = x[..., ::-1]
        return _contract(np.transpose(rgb, (2, 0, 1))[None], np.float32, 1 / 255)
    if case.name == "video":
        return _contract(np.transpose(x, (0, 3, 1, 2)), np.float16)
    if case.name == "bands":
        mean = np.array(pp.BAND_MEAN).reshape(-1, 1, 1)
        std = np.array(pp.BAND_STD).reshape(-1, 1, 1)
        return _contract(np.transpose(x, (2, 0, 1)), np.float32, 1 / std, -mean / std)
    if case.name == "back":
        return _contract(np.transpose(x[0], (1, 2, 0)), np.uint8, 255)
    raise KeyError(case.name)


def test_the_cases_are_the_issues():
    assert [(c.name, c.shape, c.dtype, pp.result_shape(c), c.result_dtype) for c in pp.CASES] == [
        ("imagenet", (224, 224, 3), "uint8", (3, 224, 224), "float32"),
        ("batch_f32", (224, 224, 3), "uint8", (64, 3, 224, 224), "float32"),
        ("batch_bf16", (224, 224, 3), "uint8", (64, 3, 224, 224), "bfloat16"),
        ("yolo", (640, 640, 3), "uint8", (1, 3, 640, 640), "float32"),
        ("video", (8, 1080, 1920, 3), "uint8", (8, 3, 1080, 1920), "float16"),
        ("bands", (256, 256, 13), "uint16", (13, 256, 256), "float32"),
        ("back", (1, 3, 512, 512), "float32", (512, 512, 3), "uint8")]
    scale, offset = pp.scale_offset(pp.CASE_BY_NAME["imagenet"])
    std = np.array([0.229, 0.224, 0.225]).reshape(3, 1, 1)
    assert scale.shape == offset.shape == (3, 1, 1)
    np.testing.assert_allclose(scale, 1 / (255 * std))
    np.testing.assert_allclose(offset, -np.array([0.485, 0.456, 0.406]).reshape(3, 1, 1) / std)
    assert pp.scale_offset(pp.CASE_BY_NAME["video"]) == (None, None)
    assert pp.scale_offset(pp.CASE_BY_NAME["back"]) == (255.0, None)


@pytest.mark.parametrize("threads", [1, None])
@pytest.mark.parametrize("name", list(TINY_BY_NAME))
def test_every_exact_way_is_the_contract_bit_for_bit(name, threads):
    case = TINY_BY_NAME[name]
    x = pp.make_input(case, seed=1)
    want = _expected(case, x)
    assert pp.same_bits(pp.expected(case, x), want)
    prepared = pp.prepare(case, threads, ways=pp.EXACT_WAYS, x=x)
    assert prepared.notes == {}, prepared.notes
    assert set(prepared.calls) == set(pp.EXACT_WAYS) | {pp.LIMIT}
    assert prepared.nbytes == want.nbytes
    for way in pp.EXACT_WAYS:
        got = np.asarray(prepared.calls[way]())
        assert got.shape == want.shape and got.dtype == want.dtype, way
        assert got.flags.c_contiguous, way
        assert np.array_equal(_bits(got), _bits(want)), way
    # into out= twice: the same result (nothing left over from the first call)
    first = np.array(prepared.calls[pp.FASTBLOCK](), copy=True)
    assert np.array_equal(_bits(prepared.calls[pp.FASTBLOCK]()), _bits(first))


@pytest.mark.parametrize("name", list(TINY_BY_NAME))
def test_torch_and_opencv_come_within_rounding(name):
    torch, cv2 = _import("torch"), _import("cv2")
    if torch is None and cv2 is None:
        pytest.skip("neither torch nor cv2 is installed")
    case = TINY_BY_NAME[name]
    prepared = pp.prepare(case, 1, torch, cv2, ways=(pp.OPENCV, pp.TORCH))
    if torch is not None:
        assert pp.TORCH in prepared.calls, prepared.notes
    if cv2 is not None:
        expressible = name in ("imagenet", "batch_f32", "yolo")
        assert (pp.OPENCV in prepared.calls) == expressible, prepared.notes


def test_a_wrong_way_is_caught(monkeypatch):
    case = TINY_BY_NAME["imagenet"]
    monkeypatch.setattr(pp, "numpy_call", lambda case, x, out: lambda: np.zeros((3, 8, 8),
                                                                             np.float32))
    with pytest.raises(AssertionError, match="imagenet: numpy: not bit for bit"):
        pp.prepare(case, 1, ways=(pp.NUMPY,))
    # the move alone, not converted: the wrong dtype
    monkeypatch.setattr(pp, "numpy_call", lambda case, x, out: lambda: np.ascontiguousarray(
        x.transpose(2, 0, 1)))
    with pytest.raises(AssertionError, match="not bit for bit"):
        pp.prepare(case, 1, ways=(pp.NUMPY,))
    # astype's default order K: the values, but HWC in memory
    monkeypatch.setattr(pp, "numpy_call", lambda case, x, out: lambda: pp.expected(
        case, x).transpose(1, 2, 0).copy().transpose(2, 0, 1))
    with pytest.raises(AssertionError, match="not C-contiguous"):
        pp.prepare(case, 1, ways=(pp.NUMPY,))


def test_a_way_missing_here_is_a_note():
    prepared = pp.prepare(TINY_BY_NAME["bands"], 1, torch=None, cv2=None,
                          ways=(pp.OPENCV, pp.TORCH, pp.LIMIT_NEW))
    assert set(prepared.calls) == {pp.LIMIT_NEW, pp.LIMIT}
    assert prepared.notes == {pp.OPENCV: "cv2 not importable", pp.TORCH: "torch not importable"}


def test_contract_convert_rounds_saturates_and_keeps_negative_zero():
    v = np.array([-1.0, -0.0, 0.4, 0.5, 1.5, 254.6, 300.0, np.nan], np.float32)
    assert pp.contract_convert(v, np.uint8, 1.0).tolist() == [0, 0, 0, 0, 2, 255, 255, 0]
    assert np.signbit(pp.contract_convert(v, np.float32, 1.0)[1])
    assert np.signbit(pp.contract_convert(v, np.float16)[1])
    assert not np.signbit(pp.contract_convert(v, np.float32, None, 0.0)[1])


def _run_tiny(cases, ways=pp.WAYS):
    return pp.run(cases, (1, None), torch=_import("torch"), cv2=_import("cv2"), rounds=1,
                  min_seconds=0.0, ways=ways)


def test_table_has_a_row_per_case_and_a_column_per_way(capsys):
    cases = [TINY_BY_NAME["imagenet"], TINY_BY_NAME["back"]]
    results, notes = _run_tiny(cases)
    assert set(results) == {(c.name, t) for c in cases for t in (1, None)}
    for seconds in results.values():
        assert {pp.NUMPY, pp.FB_NUMPY, pp.FASTBLOCK, pp.FASTBLOCK_NEW, pp.LIMIT_NEW,
                pp.LIMIT} <= set(seconds)
        assert all(np.isfinite(t) and t > 0 for t in seconds.values())
    blocks = pp.table(results, default=4)
    assert [title for title, _, _ in blocks] == ["threads: 1 thread",
                                                 "threads: default (4 threads)"]
    for _, head, rows in blocks:
        assert head == ["case", *pp.WAYS, "limit ms", "np/fb"]
        assert [row[0] for row in rows] == ["imagenet", "back"]
        assert all(len(row) == len(head) for row in rows)
        for row in rows:
            cells = dict(zip(head, row))
            for way in (pp.NUMPY, pp.FB_NUMPY, pp.FASTBLOCK, pp.FASTBLOCK_NEW, pp.LIMIT_NEW):
                assert float(cells[way]) > 0
            assert cells["np/fb"].endswith("x")
        back = dict(zip(head, rows[1]))
        assert back[pp.OPENCV] == "-"        # no blob goes back to HWC uint8
    pp.print_table(results, notes, default=4)
    out = capsys.readouterr().out
    assert "imagenet" in out and "back" in out and "np/fb" in out
    if _import("cv2") is not None:
        assert "back opencv: n/a (no blob" in out
    else:
        assert "imagenet opencv: n/a (cv2 not importable)" in out


def test_ratios_are_over_the_limit():
    assert pp.ratios({pp.LIMIT: 2.0, pp.NUMPY: 6.0, pp.FASTBLOCK: 1.0}) == {
        pp.NUMPY: 3.0, pp.FASTBLOCK: 0.5}


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib", reason="the plot needs matplotlib")
    results = {(name, threads): {pp.LIMIT: 1e-3, pp.NUMPY: 5e-3, pp.FASTBLOCK: 2e-3,
                                 pp.LIMIT_NEW: 1.2e-3}
               for name in ("imagenet", "back") for threads in (1, None)}
    path = str(tmp_path / "preprocess.png")
    assert pp.plot(results, path, default=2) == path
    with open(path, "rb") as png:
        assert png.read(8) == b"\x89PNG\r\n\x1a\n"


def test_options_and_plot_path():
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--plot", default="pipeline.png")
    parser.add_argument("--pipeline", action="store_true")
    pp.add_arguments(parser)
    assert pp.plot_path(parser.parse_args([])) == "preprocess.png"
    assert pp.plot_path(parser.parse_args(["--plot", "/tmp/p.png"])) == "/tmp/p.png"
    assert pp.plot_path(parser.parse_args(["--plot", "p.png", "--pipeline"])) == \
        "p-preprocess.png"
    assert pp.plot_path(parser.parse_args(["--plot", ""])) == ""
    assert pp.selected_cases(parser.parse_args(["--cases", "yolo,back"])) == (
        pp.CASE_BY_NAME["yolo"], pp.CASE_BY_NAME["back"])
    with pytest.raises(SystemExit, match="unknown case: jpeg"):
        pp.selected_cases(parser.parse_args(["--cases", "back,jpeg"]))


def test_report_script_runs_the_preprocess_report(tmp_path):
    # the real imagenet case (224x224), one round, no plot
    result = subprocess.run([*REPORT, "--preprocess", "--cases", "imagenet",
                             "--rounds", "1", "--plot", ""], capture_output=True, text=True,
                            timeout=300, cwd=tmp_path, env=REPORT_ENV)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Preprocessing in one pass" in out
    assert out.count("\n  imagenet ") >= 2            # a row per thread setting
    assert "threads: 1 thread" in out and "threads: default" in out
    assert not any(tmp_path.iterdir())                 # --plot '': no file


def test_pipeline_imagenet_case_is_the_contract():
    # speed/pipeline.py's IMAGENET case (bench_pipeline.py's "imagenet"): every
    # way gives the contract's result on the 1x224x224x3 uint8 sample
    from speed_reports import pipeline as pl
    size = pl.SIZE_BY_NAME["nhwc"]
    x = pl.make_input(pl.IMAGENET, size)
    mean = np.array([0.485, 0.456, 0.406]).reshape(3, 1, 1)
    std = np.array([0.229, 0.224, 0.225]).reshape(3, 1, 1)
    want = _contract(np.transpose(x, (0, 3, 1, 2)), np.float32, 1 / (255 * std), -mean / std)
    torch = _import("torch")
    calls = pl.case_calls(pl.IMAGENET, size, pl.VARIANTS, torch)
    assert set(calls) == set(pl.VARIANTS) - (set() if torch else {pl.TORCH})
    for variant, call in calls.items():
        got = call()
        got = got.numpy() if variant == pl.TORCH else got
        assert got.shape == (1, 3, 224, 224), variant
        assert np.array_equal(_bits(got), _bits(want)), variant
    assert pl.IMAGENET not in pl.OPERATORS        # not in the default report
