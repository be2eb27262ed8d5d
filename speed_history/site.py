"""The dashboard: a static site over the stored asv results.

Plain HTML, one style sheet and one script of this package (static/), and
the data as a script (``data.js``, ``window.SPEED_HISTORY = {...}``) rather
than JSON fetched at run time, so that the pages open from a web server
and straight from disk (a CI artifact) alike, with no network: nothing is
loaded from anywhere but the site's own folder.
"""
from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
from typing import Dict, Optional

from . import judge
from .results import HIGHER_IS_BETTER, History, limit_of

STATIC = pathlib.Path(__file__).resolve().parent / "static"
PAGES = ("index.html", "regressions.html", "app.js", "style.css")


def subjects(repo: pathlib.Path, hashes) -> Dict[str, str]:
    """Each commit's subject line, where git knows the commit."""
    found = {}
    for full in hashes:
        done = subprocess.run(["git", "-C", str(repo), "log", "-1", "--format=%s", full],
                              capture_output=True, text=True)
        if done.returncode == 0:
            found[full] = done.stdout.strip()
    return found


def _round(value: Optional[float]) -> Optional[float]:
    return None if value is None else float(f"{value:.4g}")


def site_data(history: History, titles: Dict[str, str], alarm: Optional[dict]) -> dict:
    """What the pages draw: commits, every benchmark's series, the moves."""
    return {
        "machine": history.machine,
        "commits": [{"hash": c.hash, "date": c.date, "subject": titles.get(c.hash, "")}
                    for c in history.commits],
        "benchmarks": [{
            "name": b.name, "unit": b.unit, "limit": limit_of(b.unit),
            "higher_is_better": b.unit in HIGHER_IS_BETTER,
            "series": [{"label": s.label, "values": [_round(v) for v in s.values]}
                       for s in b.series],
        } for b in history.benchmarks],
        "moves": [m._asdict() for m in judge.moves(history)],
        "window": judge.WINDOW, "threshold": judge.THRESHOLD,
        "alarm": alarm,
    }


def write(history: History, out: pathlib.Path, repo: pathlib.Path,
          alarm: Optional[dict] = None) -> pathlib.Path:
    """Write the site into ``out`` (made if missing); returns index.html."""
    out.mkdir(parents=True, exist_ok=True)
    for name in PAGES:
        shutil.copyfile(STATIC / name, out / name)
    data = site_data(history, subjects(repo, [c.hash for c in history.commits]), alarm)
    (out / "data.js").write_text("window.SPEED_HISTORY = " + json.dumps(data, separators=(",", ":"))
                                 + ";\n")
    return out / "index.html"
