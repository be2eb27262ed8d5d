#!/usr/bin/env bash
# The long fuzz run, on demand (CI runs the bounded budget as part of the
# test suite, and again under the sanitizers in ci/sanitize.sh).
#
#   bash ci/fuzz.sh                 # 20000 hypothesis examples per test, 10 min of atheris
#   EXAMPLES=100000 SECONDS_ATHERIS=3600 bash ci/fuzz.sh
#   SANITIZE=1 bash ci/fuzz.sh      # the same against the ASan/UBSan build
#
# Prints the number of calls checked and of distinct error paths hit
# (written to build/fuzz/stats.json), and leaves atheris' corpus and any
# crash inputs in build/fuzz/corpus/ and build/fuzz/crashes/ (build/ is
# ignored by git).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
examples=${EXAMPLES:-20000}
atheris_seconds=${SECONDS_ATHERIS:-600}
mkdir -p build/fuzz/corpus build/fuzz/crashes
stats=$PWD/build/fuzz/stats.json

run() {
  if [ -n "${SANITIZE:-}" ]; then
    # Reuse the sanitizer script's build and environment.
    FASTBLOCK_FUZZ_EXAMPLES=$examples FASTBLOCK_FUZZ_STATS=$stats \
      bash ci/sanitize.sh tests/stress/test_fuzz.py
  else
    FASTBLOCK_FUZZ_EXAMPLES=$examples FASTBLOCK_FUZZ_STATS=$stats \
      "$python" -m pytest tests/stress/test_fuzz.py -q -p no:cacheprovider
  fi
}

echo "== hypothesis: $examples examples per test"
run
"$python" - "$stats" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"checked {d['total_calls']} calls, {d['distinct_error_paths']} distinct error paths")
EOF

if "$python" -c "import atheris" 2>/dev/null; then
  echo "== atheris: $atheris_seconds s"
  "$python" tests/stress/fuzz_atheris.py build/fuzz/corpus -max_total_time="$atheris_seconds" \
    -max_len=512 -artifact_prefix=build/fuzz/crashes/ -print_final_stats=1
else
  echo "== atheris is not installed (pip install atheris): skipped"
fi
