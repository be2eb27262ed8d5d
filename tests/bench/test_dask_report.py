"""The Dask report (``python -m speed_reports --dask``,
``speed_reports/dask_cases.py``) on small versions of its cases, in this
process: every way gives Dask's own result bit for bit (each case's result
also written out here from the issue's words), a wrong way is caught, the
shapes and chunks the floor allocates are the results', and the tables have
a row per case. Only the structure is checked here, not the speeds; the
cases on a real LocalCluster are tests/api/test_dask.py's slow
``test_local_cluster_report_cases``."""
import argparse
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("dask.array")

import dask  # noqa: E402

from speed_reports import dask_cases as dc  # noqa: E402

SMALL = {case.name: dc.shrink(case) for case in dc.CASES}
# The speed reports run as ``python -m speed_reports`` from a scratch folder,
# with the repository root (which holds the package) on the path.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPORT = [sys.executable, "-m", "speed_reports"]
REPORT_ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(
    filter(None, [os.environ.get("PYTHONPATH"), ROOT])))


def _sync(values):
    return list(dask.compute(*values, scheduler="sync"))


def _expected(case, a):
    """Each case's result from the issue's words (NumPy, not the module's)."""
    if case.name == "space_to_depth":
        n, c, h, w = a.shape
        return a.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 3, 5, 1, 2, 4).reshape(
            n, c * 4, h // 2, w // 2)
    if case.name == "nhwc":
        return a.transpose(0, 2, 3, 1)
    if case.name == "preprocess":
        mean = np.array([0.485, 0.456, 0.406]).reshape(3, 1, 1)
        std = np.array([0.229, 0.224, 0.225]).reshape(3, 1, 1)
        scale = (1 / (255 * std)).astype(np.float32)
        offset = (-mean / std).astype(np.float32)
        return a.transpose(0, 3, 1, 2).astype(np.float32) * scale + offset
    return np.tile(a, (1, 1, 2, 2))


def test_the_cases_are_the_issues():
    assert [(c.name, c.shape, c.dtype, c.batch) for c in dc.CASES] == [
        ("space_to_depth", (32, 64, 256, 256), "float32", 2),
        ("nhwc", (32, 64, 256, 256), "float32", 2),
        ("preprocess", (256, 224, 224, 3), "uint8", 16),
        ("tile", (256, 3, 112, 112), "float32", 16)]
    assert dc.WAYS == ("dask", "fastblock.dask", "map_blocks", "floor")


@pytest.mark.parametrize("name", list(SMALL))
def test_every_way_gives_dasks_own_result(name):
    case = SMALL[name]
    x = dc.local_input(case, seed=1)
    a = x.compute(scheduler="sync")
    want = _expected(case, a)
    dc.check(case, x, _sync)
    for way in (dc.DASK, dc.FASTBLOCK_DASK, dc.MAP_BLOCKS):
        got = dc.BUILDERS[way](case, x)
        value = got.compute(scheduler="sync")
        assert value.dtype == want.dtype and value.shape == want.shape, way
        assert np.array_equal(value.view(np.uint32), np.ascontiguousarray(want).view(np.uint32))
    floor = dc.BUILDERS[dc.FLOOR](case, x)
    assert floor.chunks == dc.BUILDERS[dc.FASTBLOCK_DASK](case, x).chunks
    assert floor.compute(scheduler="sync").shape == want.shape
    # the call a map_blocks makes, on one block
    block = a[:case.batch]
    assert dc.fastblock_call(case)(block).shape == dc.result_block_shape(case, block.shape)


def test_a_wrong_way_is_caught(monkeypatch):
    case = SMALL["preprocess"]
    x = dc.local_input(case)
    right = dc.BUILDERS[dc.MAP_BLOCKS]
    monkeypatch.setitem(dc.BUILDERS, dc.MAP_BLOCKS, lambda c, v: right(c, v) * 1.0000001)
    with pytest.raises(AssertionError, match="map_blocks differ"):
        dc.check(case, x, _sync)


def test_tables_have_a_row_per_case_and_the_bars():
    results = {
        "preprocess": {dc.DASK: [0.30, 0.31, 0.29], dc.FASTBLOCK_DASK: [0.10, 0.12, 0.11],
                       dc.MAP_BLOCKS: [0.105, 0.10, 0.11], dc.FLOOR: [0.03, 0.03, 0.03]},
        "nhwc": {dc.DASK: [0.6], dc.FASTBLOCK_DASK: [0.3], dc.MAP_BLOCKS: [0.2],
                 dc.FLOOR: [0.03]},
    }
    head, rows = dc.table(results)
    assert head[0] == "case" and head[-1] == "bars" and len(head) == 1 + len(dc.WAYS) + 4
    assert [row[0] for row in rows] == ["preprocess", "nhwc"]
    pre, nhwc = rows
    assert pre[1:5] == ["300", "110", "105", "30.0"]
    # the rounds' ratios: 0.10 / 0.105, 0.12 / 0.10, 0.11 / 0.11; 3.0, 2.58, 2.64
    assert pre[-3:] == ["1.00", "2.64x", "met"] and nhwc[-3:] == ["1.50", "2.00x", "NOT met"]
    assert dc.paired_ratio(results["preprocess"], dc.FASTBLOCK_DASK, dc.MAP_BLOCKS) == 1.0
    assert dc.paired_ratio(results["preprocess"], dc.FASTBLOCK_DASK, "torch") is None
    assert dc.bars_met("preprocess", 1.0, 2.0) is False     # only 2x Dask
    assert dc.bars_met("nhwc", 1.05, None) is True
    assert dc.bars_met("tile", None, 3.0) is None
    lines = dc.rounds_lines(results)
    assert lines[0] == ("  preprocess: dask 300 310 290; fastblock.dask 100 120 110; "
                        "map_blocks 105 100 110; floor 30.0 30.0 30.0")
    details = {name: dc.Breakdown(0.01, 0.04, {"a": 8, "b": 8}, {w: 16 for w in dc.WAYS},
                                  {w: 1400 for w in dc.WAYS}, {w: 1e-3 for w in dc.WAYS},
                                  {w: 0 for w in dc.WAYS}, {w: 0.03 for w in dc.WAYS})
               for name in results}
    head, rows = dc.detail_table(results, details)
    assert len(rows) == 2 and all(len(row) == len(head) for row in rows)
    assert rows[0][:9] == ["preprocess", "8/8", "10.0", "40.0", "30.0", "30.0", "105", "110",
                           "40.0"]


def test_round_orders_follow_every_way_once():
    orders = [dc.round_order(4, r) for r in range(4)]
    assert orders[0] == [0, 1, 3, 2] and all(sorted(o) == [0, 1, 2, 3] for o in orders)
    follows = [(o[i], o[i + 1]) for o in orders for i in range(3)]
    assert sorted(follows) == sorted((a, b) for a in range(4) for b in range(4) if a != b)
    assert dc.round_order(4, 4) == orders[0]
    assert sorted(dc.round_order(3, 1)) == [0, 1, 2]


def test_options():
    parser = argparse.ArgumentParser()
    dc.add_arguments(parser)
    assert dc.selected_cases(parser.parse_args([])) == dc.CASES
    assert dc.selected_cases(parser.parse_args(["--dask-cases", "tile,nhwc"])) == (
        dc.CASE_BY_NAME["tile"], dc.CASE_BY_NAME["nhwc"])
    with pytest.raises(SystemExit, match="unknown case: zarr"):
        dc.selected_cases(parser.parse_args(["--dask-cases", "tile,zarr"]))


def test_report_script_knows_the_dask_report(tmp_path):
    result = subprocess.run([*REPORT, "--help"], capture_output=True, text=True,
                            timeout=60, cwd=tmp_path, env=REPORT_ENV)
    assert result.returncode == 0, result.stderr
    assert "--dask" in result.stdout and "--dask-cases" in result.stdout
