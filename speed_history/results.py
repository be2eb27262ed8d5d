"""asv's results JSON, read into series over commits.

A results folder in asv's layout holds ``benchmarks.json`` (each
benchmark's parameters and unit) and one folder per machine with one file
per commit and environment. Each file's ``results`` maps a benchmark to
columns (``result_columns``); the ``result`` column holds one value per
combination of the benchmark's parameters, in the order of their
cartesian product, ``null`` where the run failed or was skipped.
"""
from __future__ import annotations

import itertools
import json
import math
import pathlib
from typing import Dict, List, NamedTuple, Optional

# Units whose figures improve as they grow (rates, speed-ups); every other
# unit is a time, a byte count or a time ratio, which improve as they fall.
HIGHER_IS_BETTER = {"GB/s", "calls/s", "x NumPy", "x num_threads=1"}
# The limit each ratio is measured against (where a figure means "at the
# limit"): a time over a plain copy's time is at its limit at 1.00; the
# pipeline's speed-ups have issue 34's bars.
LIMITS = {"x NumPy": 1.0, "x num_threads=1": 0.9}


def limit_of(unit: str) -> Optional[float]:
    """The value at which a figure of this unit meets its limit, if any."""
    if unit in LIMITS:
        return LIMITS[unit]
    if unit.startswith("time / ") or unit.startswith("x np.copyto"):
        return 1.0
    return None


class Commit(NamedTuple):
    hash: str
    date: int  # milliseconds since the epoch, the commit's date


class Series(NamedTuple):
    label: str                        # "mode=blocks_first, size=64MiB", or "" without parameters
    values: List[Optional[float]]     # one per commit, None where absent


class Benchmark(NamedTuple):
    name: str
    unit: str
    series: List[Series]


class History(NamedTuple):
    machine: str
    commits: List[Commit]             # oldest first
    benchmarks: List[Benchmark]       # by name


def _labels(names: List[str], params: list) -> List[str]:
    """One label per combination of parameter values, in asv's order."""
    if len(names) != len(params):
        names = [f"p{i}" for i in range(len(params))]
    return [", ".join(f"{n}={v.strip(chr(39))}" for n, v in zip(names, combo))
            for combo in itertools.product(*params)]


def _values(entry: list, columns: List[str], names: List[str]) -> Dict[str, Optional[float]]:
    """A benchmark's values in one run by label, under the parameter values
    that run had (the suite's grid may have changed since); NaN (a figure
    that could not be computed) and failures alike as None."""
    result = entry[columns.index("result")]
    params = entry[columns.index("params")] if "params" in columns else None
    if not isinstance(result, list):
        result = [result]
    labels = _labels(names, params) if params else [""]
    return {label: float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None
            for label, v in zip(labels, result)}


def load(results_dir: pathlib.Path, machine: str) -> History:
    """Every commit's results on ``machine``, oldest commit first; where one
    commit has several files (environments), the last one read wins."""
    results_dir = pathlib.Path(results_dir)
    infos = json.loads((results_dir / "benchmarks.json").read_text())
    infos.pop("version", None)
    runs: Dict[str, dict] = {}
    for path in sorted((results_dir / machine).glob("*.json")):
        if path.name != "machine.json":
            data = json.loads(path.read_text())
            runs[data["commit_hash"]] = data
    ordered = sorted(runs.values(), key=lambda run: (run.get("date") or 0, run["commit_hash"]))
    commits = [Commit(run["commit_hash"], run.get("date") or 0) for run in ordered]
    benchmarks = []
    for name in sorted(infos):
        names = infos[name].get("param_names") or []
        labels = _labels(names, infos[name].get("params") or []) if names else [""]
        by_run = [_values(run["results"][name], run["result_columns"], names)
                  if name in run["results"] else {} for run in ordered]
        # The suite's grid first, then combinations only older runs had.
        labels += [label for values in by_run for label in values if label not in labels]
        labels = list(dict.fromkeys(labels))
        series = [Series(label, [values.get(label) for values in by_run]) for label in labels]
        benchmarks.append(Benchmark(name, infos[name].get("unit", ""), series))
    return History(machine, commits, benchmarks)
