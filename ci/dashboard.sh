#!/usr/bin/env bash
# The dashboard, built and looked at in a real browser with the network
# cut off:
#   0. every commit of main since the history began that changed the
#      package has its results stored (python -m speed_history.backfill
#      --missing): the history grows with main;
#   1. the stored history (speed_history/results) plus this commit's quick
#      results: ci/asv_quick.sh's of this run where it left them, else the
#      history's cells run here (python -m speed_history.asv_runs);
#   2. the site (python -m speed_history.dashboard), with the regression
#      check's report when ci/regressions.sh left one;
#   3. in a network namespace of its own (unshare -n, loopback only), a
#      local web server and headless Chromium: ci/dashboard_check.py checks
#      that each page loads with no failed request and no console error,
#      that the plot of $FASTBLOCK_DASHBOARD_BENCHMARK has a point for every
#      stored commit, and saves a screenshot of each page.
#
#   bash ci/dashboard.sh                             # the site and its screenshots in ci-artifacts/dashboard
#   FASTBLOCK_DASHBOARD_SITE=asv bash ci/dashboard.sh   # the same check on asv publish's page (fails:
#                                                    # its scripts come from CDNs)
#
# Needs root (apt-get install chromium where missing; unshare). Its time is
# printed by .ci/run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
start=$(date +%s)
python -m speed_history.backfill --missing
if ! command -v chromium >/dev/null; then
  apt-get install -y -q chromium >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; }
fi
if ! python -c "import asv" 2>/dev/null; then
  python -m pip install -q "asv>=0.6.6"
fi
benchmark=${FASTBLOCK_DASHBOARD_BENCHMARK:-bench_space_to_depth.SpaceToDepth.track_vs_copy}
out=${FASTBLOCK_CI_ARTIFACTS:-$root/ci-artifacts}/dashboard
work=$(mktemp -d "${TMPDIR:-/tmp}/fastblock-dashboard.XXXXXX")
trap 'rm -rf "$work"' EXIT
rm -rf "$out" && mkdir -p "$out"

cp -r speed_history/results "$work/results"
machine=$(python -c "from speed_history.asv_runs import MACHINE; print(MACHINE)")
head8=$(git rev-parse HEAD | cut -c1-8)
# This commit's quick results: those ci/asv_quick.sh saved in this run (the
# whole suite), else a run of the history's cells here.
if ls asv_bench/results/"$machine"/"$head8"-*.json >/dev/null 2>&1; then
  echo "== this commit's quick results ($head8), from ci/asv_quick.sh"
  cp asv_bench/results/"$machine"/"$head8"-*.json "$work/results/$machine/"
else
  echo "== this commit's quick results ($head8), the history's cells"
  python -m speed_history.asv_runs run --results "$work/results" --work "$work/asv" >"$work/asv.log" 2>&1 \
    || { tail -40 "$work/asv.log"; exit 1; }
fi
# This commit's results, to add to speed_history/results once it is on main.
mkdir -p "$out/results" && cp "$work/results/$machine/$head8"-*.json "$out/results/"
echo "asv: this commit's results in $out/results; $(( $(date +%s) - start )) s"
if [ "${FASTBLOCK_DASHBOARD_SITE:-ours}" = asv ]; then
  site=$(python -m speed_history.asv_runs publish --results "$work/results" --work "$work/asv" | tail -n 1)
else
  alarm=()
  [ -f "${FASTBLOCK_CHECK_JSON:-/tmp/fastblock-check.json}" ] && alarm=(--alarm "${FASTBLOCK_CHECK_JSON:-/tmp/fastblock-check.json}")
  python -m speed_history.dashboard --results "$work/results" --out "$out/site" "${alarm[@]}"
  site=$out/site
fi
python -c "import sys, pathlib; from speed_history.results import load; from speed_history.dashboard import only_machine
results = pathlib.Path(sys.argv[1]); print('\n'.join(c.hash for c in load(results, only_machine(results)).commits))" \
  "$work/results" >"$work/commits.txt"
echo "== $site in headless Chromium, network cut off ($(wc -l <"$work/commits.txt") commits)"
status=0
unshare -n bash -c '
  ip link set lo up
  python -m http.server --bind 127.0.0.1 8765 --directory "$1" >"$2/http.log" 2>&1 &
  server=$!
  for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/8765) 2>/dev/null && break; sleep 0.1; done
  python ci/dashboard_check.py http://127.0.0.1:8765/ --benchmark "$3" --commits "$2/commits.txt" --shots "$4"
  status=$?
  kill "$server"
  exit "$status"' _ "$site" "$work" "$benchmark" "$out" || status=$?
echo "=== dashboard: $(( $(date +%s) - start )) s in all; screenshots in $out"
exit "$status"
