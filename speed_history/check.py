"""The regression check: this build against its parent's, on figures that
machine noise moves little. ``python -m speed_history.check --base TREE``.

Figures (speed_history/measure.py):
- time ratios measured inside one process, both sides interleaved: each
  case over a one-thread copy of its result's bytes; with them 1 over the
  team a default SpaceToDepth asks for (the same in every round, so judged
  alike). Each build runs in ``--rounds`` fresh
  processes, the two builds' processes taking turns (ABBA);
- instructions per call under callgrind (one thread, 1 MiB): the same on
  every run, whatever the machine is doing.

Rule. Every figure that moved by 10 % or more, either way, is printed. An
instruction count 10 % or more above the parent's is a regression. A time
ratio is suspect when its median over the rounds is 10 % or more above
the parent's and this build's round is the higher in at least 80 % of the
(this build, parent) pairs of rounds (one stray round does not hide a
move); a suspect is measured again in twice as many fresh processes and
is a regression only if the second measurement says the same. Exit
status 1 on a regression, 0 otherwise.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
from typing import Dict, List, NamedTuple

HERE = pathlib.Path(__file__).resolve().parent
MEASURE = HERE / "measure.py"
THRESHOLD = 0.10
# A time ratio is suspect when this share of its (this build, parent) round
# pairs has this build higher: 20 of 25 with 5 rounds, which builds of equal
# speed reach by chance 7.5 % of the time (and need a 10 % median move too).
SEPARATION = 0.8
COUNT_CASES = ("s2d 1 thread", "pixels 1 thread")
COUNT_CALLS = 20


class Figure(NamedTuple):
    name: str
    parent: float
    head: float
    change: float      # head / parent; above 1 is worse for every figure here
    verdict: str       # "regression", "not confirmed", "faster", "same"


def child_env(build: pathlib.Path, **extra) -> dict:
    return dict(os.environ, PYTHONPATH=str(build), OPENBLAS_NUM_THREADS="1", **extra)


def time_rounds(base: pathlib.Path, head: pathlib.Path, rounds: int) -> Dict[str, Dict[str, list]]:
    """{"base"|"head": {figure: [one value per process]}}, processes in ABBA order."""
    samples = {"base": {}, "head": {}}
    for number in range(rounds):
        order = [("base", base), ("head", head)]
        for side, build in order if number % 2 == 0 else order[::-1]:
            done = subprocess.run([sys.executable, str(MEASURE), "times"], env=child_env(build),
                                  capture_output=True, text=True, check=True)
            for name, value in json.loads(done.stdout).items():
                samples[side].setdefault(name, []).append(value)
    return samples


def instructions(build: pathlib.Path, case: str, repeat: int) -> int:
    """Instructions callgrind counts in one run of measure.py count."""
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                           sys.executable, str(MEASURE), "count", case, str(repeat)],
                          env=child_env(build, PYTHONHASHSEED="0", OMP_NUM_THREADS="1"),
                          capture_output=True, text=True, check=True)
    return int(re.search(r"refs:\s+([\d,]+)", done.stderr).group(1).replace(",", ""))


def counts(base: pathlib.Path, head: pathlib.Path) -> Dict[str, Dict[str, float]]:
    """{"base"|"head": {figure: instructions per call}}, two valgrinds at a time."""
    jobs = {(side, case): (build, case, COUNT_CALLS if case != "none" else 0)
            for side, build in (("base", base), ("head", head))
            for case in ("none",) + COUNT_CASES}
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        totals = dict(zip(jobs, pool.map(lambda job: instructions(*job), jobs.values())))
    return {side: {f"{case} instructions/call": (totals[side, case] - totals[side, "none"]) / COUNT_CALLS
                   for case in COUNT_CASES} for side in ("base", "head")}


def above_share(head: List[float], parent: List[float]) -> float:
    """The share of (this build's round, parent's round) pairs in which this
    build's value is the higher (Mann-Whitney's U over its maximum)."""
    return sum(h > p for h in head for p in parent) / (len(head) * len(parent))


def time_verdict(parent: List[float], head: List[float]) -> str:
    change = statistics.median(head) / statistics.median(parent)
    if change >= 1 + THRESHOLD and above_share(head, parent) >= SEPARATION:
        return "suspect"
    return "faster" if change <= 1 - THRESHOLD else "same"


def count_verdict(change: float) -> str:
    if change >= 1 + THRESHOLD:
        return "regression"
    return "faster" if change <= 1 - THRESHOLD else "same"


def judge_times(first, again=None) -> List[Figure]:
    """The time figures' verdicts; ``again``: the suspects' second measurement."""
    figures = []
    for name, parent in first["base"].items():
        head = first["head"][name]
        verdict = time_verdict(parent, head)
        if verdict == "suspect" and again is not None:
            confirmed = time_verdict(again["base"][name], again["head"][name]) == "suspect"
            verdict = "regression" if confirmed else "not confirmed"
        figures.append(Figure(name, statistics.median(parent), statistics.median(head),
                              statistics.median(head) / statistics.median(parent), verdict))
    return figures


def report(figures: List[Figure], rounds: int) -> dict:
    moved = [f for f in figures if abs(f.change - 1) >= THRESHOLD]
    regressions = [f for f in figures if f.verdict == "regression"]
    print(f"{'figure':34} {'parent':>10} {'this':>10} {'change':>8}  verdict")
    for f in figures:
        mark = "  <-- moved 10 % or more" if f in moved else ""
        print(f"{f.name:34} {f.parent:10.4g} {f.head:10.4g} {(f.change - 1) * 100:+7.1f}%  "
              f"{f.verdict}{mark}")
    summary = (f"{len(regressions)} confirmed regression(s), {len(moved)} figure(s) moved by 10 % "
               f"or more; time ratios: medians of {rounds} processes a build")
    print(summary)
    return {"summary": summary, "figures": [f._asdict() for f in figures]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m speed_history.check", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=pathlib.Path, required=True,
                        help="the parent's tree, built in place")
    parser.add_argument("--head", type=pathlib.Path, default=HERE.parent,
                        help="this build's tree (default: this repository, built in place)")
    parser.add_argument("--rounds", type=int, default=5, help="processes per build (default 5)")
    parser.add_argument("--no-counts", action="store_true", help="skip callgrind's counts")
    parser.add_argument("--json", type=pathlib.Path, help="write the figures here too")
    args = parser.parse_args(argv)
    first = time_rounds(args.base, args.head, args.rounds)
    suspects = any(time_verdict(p, first["head"][n]) == "suspect" for n, p in first["base"].items())
    # The second measurement has twice the processes: a stray stretch of
    # load that separated 5 rounds rarely separates 10 as well.
    again = time_rounds(args.base, args.head, 2 * args.rounds) if suspects else None
    figures = judge_times(first, again)
    if not args.no_counts:
        measured = counts(args.base, args.head)
        for name, parent in measured["base"].items():
            change = measured["head"][name] / parent
            figures.append(Figure(name, parent, measured["head"][name], change, count_verdict(change)))
    result = report(figures, args.rounds)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 1 if any(f.verdict == "regression" for f in figures) else 0


if __name__ == "__main__":
    sys.exit(main())
