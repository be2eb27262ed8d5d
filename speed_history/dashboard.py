"""Write the dashboard: ``python -m speed_history.dashboard``.

    python -m speed_history.dashboard                  # the stored history -> html/
    python -m speed_history.dashboard --out /tmp/site --results RESULTS_DIR \\
        --machine NAME --alarm check.json              # other results, with a check's report

Then open html/index.html (from disk, or ``python -m http.server -d html``).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys

from . import site
from .results import load

HERE = pathlib.Path(__file__).resolve().parent
STORE = HERE / "results"
REPO = HERE.parent


def only_machine(results: pathlib.Path) -> str:
    machines = sorted(p.name for p in results.iterdir() if (p / "machine.json").is_file())
    if len(machines) != 1:
        raise SystemExit(f"{results} holds machines {machines}: name one with --machine")
    return machines[0]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m speed_history.dashboard",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=pathlib.Path, default=STORE,
                        help="an asv results folder (default: the stored history)")
    parser.add_argument("--machine", help="the machine whose results to draw (default: the only one)")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("html"),
                        help="the site's folder (default: html)")
    parser.add_argument("--alarm", type=pathlib.Path,
                        help="a report of python -m speed_history.check --json, for the regressions page")
    args = parser.parse_args(argv)
    history = load(args.results, args.machine or only_machine(args.results))
    alarm = json.loads(args.alarm.read_text()) if args.alarm else None
    index = site.write(history, args.out, REPO, alarm)
    print(f"{index}: {len(history.commits)} commits, {len(history.benchmarks)} benchmarks "
          f"on {history.machine}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
