"""Add commits' results to the stored history:
``python -m speed_history.backfill [RANGE]``.

    python -m speed_history.backfill                    # the last 20 commits of main that changed the package
    python -m speed_history.backfill main~40..main --last 0   # every such commit of a range
    python -m speed_history.backfill HEAD^! --again      # one commit, measured again
    python -m speed_history.backfill --missing           # exit 1 if a commit since the history began has none
    python -m speed_history.backfill 7b63213^..main --last 0 --bench '^bench_loader'   # a new benchmark, on the stored commits

Each commit is checked out in one scratch worktree (``--tree``, kept
between runs) and built there in place by setup.py, whose build notes
(build/fastblock-built/) reuse every extension whose sources, flags and
toolchain did not change: a commit that changed no compiled module
compiles nothing. The suite of this tree then quick-runs against that
build (speed_history/asv_runs.py) and its results go into the store
under the commit. Commits already stored are skipped unless --again.
--bench measures only the benchmarks it names, and only on commits
already stored: a benchmark added to the suite gets its history, its
figures merged into each commit's file beside the others.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import re
import subprocess
import sys
import time

from . import asv_runs

# What "changed the package" means: the files a build or an import reads.
PACKAGE_PATHS = ("fastblock", "setup.py", "pyproject.toml")
# The history's first commit: every commit of main that changed the
# package from here on has its results stored (--missing checks it).
HISTORY_START = "6d8e63d2"


def git(*args, cwd=asv_runs.REPO) -> str:
    return subprocess.run(["git", *args], cwd=str(cwd), check=True, capture_output=True,
                          text=True).stdout.strip()


def package_commits(revisions: str, last: int):
    """The commits of ``revisions`` (a range, or a branch: its history) that
    changed the package, oldest first; the newest ``last`` of them (0: all)."""
    commits = git("rev-list", "--first-parent", revisions, "--", *PACKAGE_PATHS).split()
    commits = commits[:last] if last else commits
    return commits[::-1]


def stored(machine: str, store: pathlib.Path):
    return {path.name.split("-", 1)[0] for path in (store / machine).glob("*-*.json")}


def kept_results(machine: str, store: pathlib.Path, commit: str) -> dict:
    """A stored commit's results files, by path, as read now."""
    return {path: json.loads(path.read_text())
            for path in (store / machine).glob(f"{commit[:8]}-*.json")}


def restore_others(kept: dict, machine: str, store: pathlib.Path, commit: str) -> None:
    """Merge a run's figures into the commit's stored file: asv writes a
    commit's file anew with the run's benchmarks alone, under a name from
    the interpreter's path (python or python3), so the stored file takes
    the run's figures, keeps its others, and the run's own file goes."""
    if not kept:
        return
    path, merged = next(iter(kept.items()))
    for new in sorted((store / machine).glob(f"{commit[:8]}-*.json")):
        after = json.loads(new.read_text())
        if after["result_columns"] != merged["result_columns"]:
            raise SystemExit(f"{new}: asv's result columns changed; measure it --again")
        for key in ("results", "durations"):
            merged[key] = {**merged.get(key, {}), **after.get(key, {})}
        if new != path:
            new.unlink()
    path.write_text(json.dumps(merged))


def prepare_tree(tree: pathlib.Path, commit: str) -> None:
    """The scratch worktree at ``commit``: made if missing; its ignored build
    outputs (the modules, build/) stay from the commit built before."""
    if not (tree / ".git").exists():
        git("worktree", "add", "--detach", str(tree), commit)
    git("checkout", "--quiet", "--detach", "--force", commit, cwd=tree)


def build(tree: pathlib.Path) -> list:
    """Build in place; the modules that were compiled (not reused), as
    fastblock/_api (no suffix)."""
    done = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "-j2"],
                          cwd=str(tree), capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"build failed in {tree}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    reused = set(re.findall(r"fastblock: (\S+) is up to date", done.stdout))
    made = set(re.findall(r"copying build/\S+/(fastblock/\S+\.so) ->", done.stdout))
    return sorted(path.split(".")[0] for path in made - reused)


def report_missing(have: set, revisions: str) -> int:
    """0 where every commit from HISTORY_START to ``revisions`` (a branch;
    "main" means HEAD here) that changed the package has results; else 1,
    naming them. A clone without HISTORY_START (a shallow one) cannot say:
    it says so and passes."""
    head = "HEAD" if revisions == "main" else revisions
    try:
        git("rev-parse", "--verify", "-q", HISTORY_START + "^{commit}")
    except subprocess.CalledProcessError:
        print(f"speed history: NOT CHECKED: this clone lacks {HISTORY_START}, where the "
              f"history begins (a shallow clone)")
        return 0
    commits = package_commits(f"{HISTORY_START}^..{head}", 0)
    missing = [c for c in commits if c[:8] not in have]
    if not missing:
        print(f"speed history: all {len(commits)} commits that changed the package since "
              f"{HISTORY_START} have results")
        return 0
    print(f"speed history: {len(missing)} of {len(commits)} commits that changed the package "
          f"have no results; run python -m speed_history.backfill and commit "
          f"speed_history/results:")
    for commit in missing:
        print(f"  {commit[:8]} {git('log', '-1', '--format=%s', commit)[:70]}")
    return 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m speed_history.backfill", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("revisions", nargs="?", default="main",
                        help="a git range or branch (default: main)")
    parser.add_argument("--last", type=int, default=20,
                        help="the newest N commits that changed the package (0: all; default 20)")
    parser.add_argument("--tree", type=pathlib.Path, default=pathlib.Path("/tmp/fastblock-history"),
                        help="the scratch worktree, kept for its builds")
    parser.add_argument("--machine", default=asv_runs.MACHINE)
    parser.add_argument("--store", type=pathlib.Path, default=asv_runs.STORE)
    parser.add_argument("--again", action="store_true", help="measure stored commits again")
    parser.add_argument("--missing", action="store_true",
                        help="measure nothing: list the commits since the history began that "
                             "changed the package and have no results, and exit 1 if any")
    parser.add_argument("--bench", action="append",
                        help="only the benchmarks this asv -b expression matches, and only on "
                             "stored commits (repeatable)")
    args = parser.parse_args(argv)
    have = stored(args.machine, args.store)
    if args.missing:
        return report_missing(have, args.revisions)
    todo = package_commits(args.revisions, args.last)
    if args.bench:
        todo = [c for c in todo if c[:8] in have]
    elif not args.again:
        todo = [c for c in todo if c[:8] not in have]
    print(f"{len(todo)} commits to measure on {args.machine}")
    for number, commit in enumerate(todo, 1):
        start = time.time()
        prepare_tree(args.tree, commit)
        compiled = build(args.tree)
        built = time.time()
        kept = kept_results(args.machine, args.store, commit) if args.bench else {}
        status = asv_runs.run(commit, args.tree, args.store, args.tree / ".asv-work", args.machine,
                              args.bench)
        restore_others(kept, args.machine, args.store, commit)
        print(f"[{number}/{len(todo)}] {commit[:8]} {git('log', '-1', '--format=%s', commit)[:60]}: "
              f"compiled {', '.join(compiled) or 'nothing'} ({built - start:.0f} s), "
              f"asv {time.time() - built:.0f} s, exit {status}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
