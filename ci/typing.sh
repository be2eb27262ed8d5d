#!/usr/bin/env bash
# mypy as a user runs it on code that calls fastblock: ci/typing_snippet.py
# (every front door) must check clean, and calls of the wrong types must
# not (so the types are read, not ignored as Any). fastblock's own modules
# are read, not reported (--follow-imports=silent), as an installed
# package's would be. A few seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m mypy --version
MYPYPATH=$PWD python3 -m mypy --follow-imports=silent --strict --no-incremental ci/typing_snippet.py
wrong=$(mktemp -d)
trap 'rm -rf "$wrong"' EXIT
cat >"$wrong/wrong_calls.py" <<'PY'
import numpy as np
import fastblock as fb

x = np.zeros((1, 4, 2, 2), np.float32)
fb.space_to_depth(x, block_size="2")
fb.tile(x)
fb.transpose(x, num_threads="all")
n: str = fb.get_num_threads()
PY
if MYPYPATH=$PWD python3 -m mypy --follow-imports=silent --no-incremental "$wrong/wrong_calls.py" \
    >"$wrong/report" 2>&1; then
  echo "mypy passed calls of the wrong types:" >&2
  cat "$wrong/report" >&2
  exit 1
fi
count=$(grep -c ": error:" "$wrong/report" || true)
if [ "$count" -ne 4 ]; then
  echo "mypy found $count errors in the 4 wrong calls:" >&2
  cat "$wrong/report" >&2
  exit 1
fi
echo "typing: the snippet checks clean; the 4 wrong calls are each an error"
