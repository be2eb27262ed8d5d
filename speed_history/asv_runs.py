"""One asv run of the suite in asv_bench/ against one build, its results
saved under a given commit in a results folder (the stored history, or a
scratch copy of it).

``asv run --python=same`` measures the fastblock that ``import fastblock``
finds; ``ASV_PYTHONPATH`` (which asv passes on as ``PYTHONPATH``) points it
at the build (a source tree built in place), and ``--set-commit-hash`` files the results under that build's
commit, which is how asv saves results of an existing environment. The
suite, its config and the reference code are always this tree's.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import pathlib
import re
import subprocess
import sys
from typing import List, Optional, Sequence

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent
SUITE = REPO / "asv_bench"
STORE = HERE / "results"
MACHINE = "ci-2core"

# Parameter values left out of the history's cells: the slowest items to
# make and move (a 64 MiB object array takes seconds).
SLOW_VALUES = ("'object'", "'U5'")


def history_cells(results: pathlib.Path) -> Optional[List[str]]:
    """The cells measured for every commit of the history, as asv -b
    expressions ("^name(params)$"): each benchmark's first combination of
    parameters without a slow dtype, so every benchmark has a history. The
    whole suite takes about 5 minutes a commit on the shared 2-core
    machine, these cells about one. None (the whole suite) where the
    results folder has no benchmarks.json yet."""
    path = results / "benchmarks.json"
    if not path.is_file():
        return None
    cells = []
    for name, info in sorted(json.loads(path.read_text()).items()):
        if name == "version":
            continue
        combos = [c for c in itertools.product(*info.get("params") or [])
                  if not any(v in SLOW_VALUES for v in c)]
        cell = f"{name}({', '.join(combos[0])})" if info.get("params") and combos else name
        cells.append("^" + re.escape(cell) + "$")
    return cells


def config(results: pathlib.Path, work: pathlib.Path) -> pathlib.Path:
    """asv_bench/asv.conf.json with absolute paths and ``results`` as its
    results folder (asv has no option for it), written into ``work``."""
    import asv.util  # here: the dashboard and the tests need no asv

    conf = asv.util.load_json(str(SUITE / "asv.conf.json"), js_comments=True)
    conf.update(repo=str(REPO), benchmark_dir=str(SUITE / "benchmarks"),
                results_dir=str(results), env_dir=str(work / "env"), html_dir=str(work / "html"))
    path = work / "asv.conf.json"
    path.write_text(json.dumps(conf, indent=1))
    return path


def run(commit: str, build: pathlib.Path, results: pathlib.Path, work: pathlib.Path,
        machine: str = MACHINE, cells: Optional[Sequence[str]] = None) -> int:
    """Quick-run the suite (``cells``: asv -b expressions, default
    history_cells(results)) against the fastblock built in place in ``build``, and
    save its results in ``results`` under ``commit``; asv's exit status."""
    work.mkdir(parents=True, exist_ok=True)
    conf = config(results, work)
    # asv drops PYTHONPATH from its benchmark processes and hands them
    # ASV_PYTHONPATH instead: without it they would import whichever
    # fastblock is installed, not the build.
    env = dict(os.environ, PYTHONPATH=str(build), ASV_PYTHONPATH=str(build), FASTBLOCK_ASV_QUICK="1")
    asv = [sys.executable, "-m", "asv"]
    subprocess.run(asv + ["machine", "--config", str(conf), "--machine", machine, "--yes"],
                   env=env, check=True, stdout=subprocess.DEVNULL)
    command = asv + ["run", "--config", str(conf), "--python=same", "--quick",
                     "--machine", machine, "--set-commit-hash", commit, "--show-stderr"]
    for cell in cells if cells is not None else (history_cells(results) or ()):
        command += ["--bench", cell]
    return subprocess.run(command, env=env, cwd=str(work)).returncode


def publish(results: pathlib.Path, work: pathlib.Path) -> pathlib.Path:
    """asv's own site (``asv publish``) of ``results``, into work/html."""
    work.mkdir(parents=True, exist_ok=True)
    conf = config(results, work)
    subprocess.run([sys.executable, "-m", "asv", "publish", "--config", str(conf)],
                   check=True, cwd=str(work))
    return work / "html"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m speed_history.asv_runs",
        description="run: quick-run the history's cells against a build into a results "
                    "folder; publish: asv's own site of a results folder (work/html)")
    parser.add_argument("action", choices=("run", "publish"))
    parser.add_argument("--results", type=pathlib.Path, default=STORE)
    parser.add_argument("--work", type=pathlib.Path, required=True, help="asv's scratch folder")
    parser.add_argument("--build", type=pathlib.Path, default=REPO,
                        help="a tree built in place (default: this one)")
    parser.add_argument("--commit", default="HEAD", help="the build's commit (default: HEAD)")
    parser.add_argument("--machine", default=MACHINE)
    args = parser.parse_args(argv)
    if args.action == "publish":
        print(publish(args.results.resolve(), args.work.resolve()))
        return 0
    commit = subprocess.run(["git", "-C", str(args.build), "rev-parse", args.commit], check=True,
                            capture_output=True, text=True).stdout.strip()
    return run(commit, args.build.resolve(), args.results.resolve(), args.work.resolve(), args.machine)


if __name__ == "__main__":
    sys.exit(main())
