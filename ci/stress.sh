#!/usr/bin/env bash
# The differential stress harness (tests/stress/stress.py) for a time budget, one
# worker per core, against the fastblock installed in the active
# environment. Seeds come from the commit (printed first), so every push
# explores new cases; any mismatch or crash fails the run and prints its
# --replay line.
#
#   bash ci/stress.sh                          # 60 s (CI; the arm64, sanitized,
#                                              # coverage and Python jobs run it too)
#   FASTBLOCK_STRESS_SECONDS=1800 bash ci/stress.sh
#   FASTBLOCK_STRESS_SEED=7 bash ci/stress.sh
#   FASTBLOCK_STRESS_FAST_PATH=off bash ci/stress.sh   # every run through the general path
#
# Each case's first run goes through the front doors' fast path (twice: the
# second call from its cache) and later runs draw it on or off; "on" or "off"
# in FASTBLOCK_STRESS_FAST_PATH forces it for every run.
#
# Under the sanitizers the harness runs inside the test suite
# (tests/stress/test_stress.py, FASTBLOCK_STRESS_SECONDS set by ci/sanitize.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
seconds=${FASTBLOCK_STRESS_SECONDS:-60}
jobs=$("$python" -c "import os; print(max(1, min(4, len(os.sched_getaffinity(0)))))")
args=(--seconds "$seconds" --jobs "$jobs")
if [ -n "${FASTBLOCK_STRESS_SEED:-}" ]; then args+=(--seed "$FASTBLOCK_STRESS_SEED"); fi
if [ -n "${FASTBLOCK_STRESS_FAST_PATH:-}" ]; then args+=(--fast-path "$FASTBLOCK_STRESS_FAST_PATH"); fi
"$python" tests/stress/stress.py "${args[@]}"
