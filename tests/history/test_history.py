"""The speed history's own code (speed_history/, ci/dashboard_check.py) on
made-up results: asv's JSON read into series, the regressions page's
moves, the regression check's rule and when CI's job skips it, the history's cells and the browser
check's reading of DevTools events. Nothing here times anything."""
import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

from speed_history import asv_runs, check, judge, site
from speed_history.results import load

ROOT = pathlib.Path(__file__).resolve().parents[2]
COLUMNS = ["result", "params", "version", "started_at", "duration"]


def write_results(folder, runs, params=(["'a'", "'b'"], ["1", "2"]), unit="time / copy time"):
    """A results folder of benchmark ``m.C.track_x`` on machine ``box``:
    ``runs`` is [(hash, date, [values in asv's order] or None)]."""
    folder.mkdir(parents=True, exist_ok=True)
    info = {"m.C.track_x": {"name": "m.C.track_x", "param_names": ["p", "q"],
                            "params": [list(p) for p in params], "unit": unit, "type": "track"},
            "version": 2}
    (folder / "benchmarks.json").write_text(json.dumps(info))
    (folder / "box").mkdir(exist_ok=True)
    (folder / "box" / "machine.json").write_text("{}")
    for commit, date, values in runs:
        results = {} if values is None else {"m.C.track_x": [values, [list(p) for p in params], "v", 0, 1.0]}
        (folder / "box" / f"{commit[:8]}-env.json").write_text(json.dumps(
            {"commit_hash": commit, "date": date, "result_columns": COLUMNS, "results": results}))
    return folder


def test_results_become_series_in_commit_order(tmp_path):
    write_results(tmp_path, [("b" * 40, 2000, [1.0, None, 3.0, float("nan")]),
                             ("a" * 40, 1000, [2.0, 2.0, 2.0, 2.0]),
                             ("c" * 40, 3000, None)])
    history = load(tmp_path, "box")
    assert [c.hash[0] for c in history.commits] == ["a", "b", "c"]
    (bench,) = history.benchmarks
    assert [s.label for s in bench.series] == ["p=a, q=1", "p=a, q=2", "p=b, q=1", "p=b, q=2"]
    assert bench.series[0].values == [2.0, 1.0, None]
    assert bench.series[1].values == [2.0, None, None]
    assert bench.series[3].values == [2.0, None, None]   # NaN reads as no value


def test_series_follow_each_run_s_own_parameter_values(tmp_path):
    write_results(tmp_path, [("a" * 40, 1, [1.0, 2.0, 3.0, 4.0])])
    old = tmp_path / "box" / "aaaaaaaa-env.json"
    data = json.loads(old.read_text())
    data["results"]["m.C.track_x"][1] = [["'b'", "'c'"], ["2"]]   # an older grid
    old.write_text(json.dumps(data))
    (bench,) = load(tmp_path, "box").benchmarks
    values = {s.label: s.values for s in bench.series}
    assert values["p=b, q=2"] == [1.0] and values["p=c, q=2"] == [2.0]
    assert values["p=a, q=1"] == [None]


def test_moves_mark_worse_only_outside_the_recent_range(tmp_path):
    earlier = [1.0, 1.3, 0.9, 1.1, 1.0]
    runs = [(f"{i:08x}" + "0" * 32, i, [v, 1.0, 1.0, 1.0]) for i, v in enumerate(earlier)]
    write_results(tmp_path, runs + [("f" * 40, 99, [1.25, 1.5, 1.05, 0.8])])
    moves = {m.label: m for m in judge.moves(load(tmp_path, "box"))}
    assert not moves["p=a, q=1"].worse            # 1.25: 25 % up, but 1.3 was seen before
    assert moves["p=a, q=2"].worse and moves["p=a, q=2"].change == pytest.approx(1.5)
    assert "p=b, q=1" not in moves                # 5 %: under the threshold
    assert not moves["p=b, q=2"].worse            # 20 % down: better


def test_too_little_history_marks_nothing_worse(tmp_path):
    runs = [(f"{i:08x}" + "0" * 32, i, [1.0, 1.0, 1.0, 1.0]) for i in range(2)]
    write_results(tmp_path, runs + [("f" * 40, 9, [3.0, 1.0, 1.0, 1.0])])
    (move,) = judge.moves(load(tmp_path, "box"))
    assert move.change == pytest.approx(3.0) and not move.worse


def test_rates_are_worse_when_they_fall(tmp_path):
    runs = [(f"{i:08x}" + "0" * 32, i, [10.0, 10.0, 10.0, 10.0]) for i in range(3)]
    write_results(tmp_path, runs + [("f" * 40, 9, [5.0, 20.0, 10.0, 10.0])], unit="GB/s")
    moves = {m.label: m for m in judge.moves(load(tmp_path, "box"))}
    assert moves["p=a, q=1"].worse and not moves["p=a, q=2"].worse


def test_site_data_has_limits_and_every_point(tmp_path):
    write_results(tmp_path / "r", [("a" * 40, 1, [1.0, 2.0, 3.0, 4.0])])
    index = site.write(load(tmp_path / "r", "box"), tmp_path / "out", ROOT)
    text = (tmp_path / "out" / "data.js").read_text()
    data = json.loads(text[text.index("{"):text.rindex(";")])
    (bench,) = data["benchmarks"]
    assert bench["limit"] == 1.0 and not bench["higher_is_better"]
    assert [s["values"] for s in bench["series"]] == [[1.0], [2.0], [3.0], [4.0]]
    page = index.read_text()
    assert not re.search(r"(src|href)=\"(https?:)?//", page)   # nothing from elsewhere
    assert sorted(p.name for p in index.parent.iterdir()) == sorted(site.PAGES + ("data.js",))


def test_time_rule_needs_a_clear_and_confirmed_move():
    parent = [1.0, 1.02, 0.98, 1.01, 0.99]
    slower = [1.2, 1.25, 1.18, 1.22, 0.97]            # one stray round
    assert check.time_verdict(parent, slower) == "suspect"
    assert check.time_verdict(parent, [1.05, 1.3, 0.9, 1.25, 1.0]) == "same"   # overlaps
    assert check.time_verdict(parent, [1.08] * 5) == "same"                    # under 10 %
    assert check.time_verdict(parent, [0.8] * 5) == "faster"
    first = {"base": {"f": parent}, "head": {"f": slower}}
    assert check.judge_times(first, first)[0].verdict == "regression"
    calm = {"base": {"f": parent}, "head": {"f": parent}}
    assert check.judge_times(first, calm)[0].verdict == "not confirmed"


def _regressions_run(repo, tmp_path):
    """ci/regressions.sh run in ``repo`` (its HEAD against HEAD^), with a
    stand-in valgrind, this Python as ``python``, this repository's
    speed_history importable and the base tree under ``tmp_path``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "valgrind").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "valgrind").chmod(0o755)
    if not (bin_dir / "python").exists():
        (bin_dir / "python").symlink_to(sys.executable)     # the script calls python
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", PYTHONPATH=str(ROOT),
               FASTBLOCK_CI_CACHE=str(tmp_path / "cache"),
               FASTBLOCK_CHECK_JSON=str(tmp_path / "check.json"))
    return subprocess.run(["bash", "ci/regressions.sh"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=120)


def test_regressions_skip_only_a_commit_that_left_the_package_alone(tmp_path):
    """ci/regressions.sh measures nothing where the package is the parent's
    (two identical builds differ by noise alone), and says so in the report
    the dashboard shows; a change under fastblock/ goes on to build the
    parent (here it has no setup.py, so the build fails: exit 1)."""
    repo = tmp_path / "repo"
    (repo / "ci").mkdir(parents=True)
    (repo / "fastblock").mkdir()
    (repo / "ci" / "regressions.sh").write_text((ROOT / "ci" / "regressions.sh").read_text())
    (repo / "fastblock" / "ops.py").write_text("a = 1\n")
    (repo / "notes.md").write_text("one\n")

    def commit(message):
        for command in (["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t",
                                       "commit", "-q", "-m", message]):
            subprocess.run(["git", *command], cwd=repo, check=True, capture_output=True)

    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    commit("first")
    (repo / "notes.md").write_text("two\n")
    commit("notes only")
    done = _regressions_run(repo, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "not measured: the package" in done.stdout
    report = json.loads((tmp_path / "check.json").read_text())
    assert report["figures"] == [] and report["summary"].startswith("not measured")

    (tmp_path / "check.json").unlink()
    (repo / "fastblock" / "ops.py").write_text("a = 2\n")
    commit("a package change")
    done = _regressions_run(repo, tmp_path)
    assert done.returncode == 1 and "not measured" not in done.stdout
    assert "== base" in done.stdout
    assert not (tmp_path / "check.json").exists()


def test_count_rule():
    assert check.count_verdict(1.10) == "regression"
    assert check.count_verdict(1.05) == "same"
    assert check.count_verdict(0.5) == "faster"


def test_history_cells_name_one_cell_each_without_slow_dtypes(tmp_path):
    write_results(tmp_path, [], params=(["'object'", "'float32'"], ["'64MiB'"]))
    (cell,) = asv_runs.history_cells(tmp_path)
    assert re.search(cell, "m.C.track_x('float32', '64MiB')")
    assert not re.search(cell, "m.C.track_x('object', '64MiB')")
    assert asv_runs.history_cells(tmp_path / "none") is None


def test_browser_check_reads_failures_from_devtools_events():
    spec = importlib.util.spec_from_file_location("dashboard_check", ROOT / "ci" / "dashboard_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    events = [
        {"method": "Network.requestWillBeSent",
         "params": {"requestId": "1", "request": {"url": "https://cdn.example/jquery.js"}}},
        {"method": "Network.loadingFailed",
         "params": {"requestId": "1", "errorText": "net::ERR_NAME_NOT_RESOLVED"}},
        {"method": "Network.responseReceived", "params": {"response": {"status": 404, "url": "u"}}},
        {"method": "Network.responseReceived", "params": {"response": {"status": 200, "url": "v"}}},
        {"method": "Runtime.exceptionThrown", "params": {"exceptionDetails": {"text": "Uncaught"}}},
        {"method": "Runtime.consoleAPICalled", "params": {"type": "log", "args": [{"value": "fine"}]}},
        {"method": "Log.entryAdded", "params": {"entry": {"level": "warning", "text": "meh"}}},
    ]
    found = module.problems_in(events)
    assert len(found) == 3
    assert "cdn.example/jquery.js" in found[0] and "404" in found[1] and "Uncaught" in found[2]


def test_a_new_benchmarks_figures_join_the_stored_file(tmp_path):
    """backfill --bench: asv writes the run's own file (here under another
    interpreter name) with the new benchmark alone; restore_others merges
    it into the stored file, whose other figures stay, and removes it."""
    from speed_history import backfill

    machine = tmp_path / "box"
    machine.mkdir()
    commit = "0123456789abcdef"

    def results_file(name, results):
        path = machine / f"{commit[:8]}-existing-{name}.json"
        path.write_text(json.dumps({"commit_hash": commit, "result_columns": COLUMNS,
                                    "results": results, "durations": {}}))
        return path

    stored = results_file("python3", {"m.Old.track": [1.5, None, "v", 0, 1.0]})
    kept = backfill.kept_results("box", tmp_path, commit)
    ran = results_file("python", {"m.New.track": [0.9, None, "v", 0, 1.0]})
    backfill.restore_others(kept, "box", tmp_path, commit)
    assert not ran.exists()
    merged = json.loads(stored.read_text())["results"]
    assert merged == {"m.Old.track": [1.5, None, "v", 0, 1.0], "m.New.track": [0.9, None, "v", 0, 1.0]}
