#!/usr/bin/env bash
# Smoke-run the asv benchmark suite (asv_bench/) against the fastblock that
# is installed in the active environment: the tests of the speed reports'
# own code (speed_reports/; tests/bench, marked speed_reports: the README's
# test run leaves them here), `asv check`, then every benchmark once (`asv run
# --python=same --quick`). Fails if a test fails or a benchmark errors.
# Run from the repository root after the package is installed; its time is
# printed by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! python -c "import asv" 2>/dev/null; then
  python -m pip install -q "asv>=0.6.6"
fi
# The DataLoader report's JPEG source and DALI way (pyproject's bench extra).
python -m pip install -q "pillow>=9"
if [ "$(uname -sm)" = "Linux x86_64" ]; then
  python -m pip install -q "nvidia-dali-cuda120>=1.30"
fi

python -m pytest tests/bench -m speed_reports -q -p no:cacheprovider

cd asv_bench
python -m asv --version
# Record this machine's description (~/.asv-machine.json) without questions,
# under the name of the stored history's machine (speed_history/).
machine=$(cd .. && python -c "from speed_history.asv_runs import MACHINE; print(MACHINE)")
python -m asv machine --machine "$machine" --yes >/dev/null
python -m asv check --python=same

log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$(date +%s)
set +e
# FASTBLOCK_ASV_QUICK: one timed call inside the track_* benchmarks as well.
# The point is that every benchmark runs; the results are saved under this
# commit (results/, ignored by git), where ci/dashboard.sh takes them.
FASTBLOCK_ASV_QUICK=1 python -m asv run --python=same --quick --show-stderr --durations 10 \
  --machine "$machine" --set-commit-hash "$(git rev-parse HEAD)" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
echo "asv quick run: $(( $(date +%s) - start )) s, exit status $status"

# asv 0.6.6 exits non-zero when a benchmark fails; read the log as well, so a
# failure is caught whatever asv's exit status (asv 0.5 and older exit 0).
failure_pattern='(^|[^[:alnum:]_./-])failed([^[:alnum:]_]|$)|asv: benchmark (failed|timed out)|Importing benchmark suite failed'
if grep -E -q "$failure_pattern" "$log"; then
  echo "asv: some benchmarks failed:" >&2
  grep -E "$failure_pattern" "$log" | head -20 >&2
  exit 1
fi
if [ "$status" -ne 0 ]; then
  echo "asv run exited with status $status" >&2
  exit "$status"
fi
echo "asv quick run: every benchmark ran"
