#!/usr/bin/env bash
# Print the shell commands of the README's first code block, one per line:
# line 1 installs and runs the main job, line 2 installs the test extras and
# runs the tests. CI runs exactly these lines.
set -euo pipefail
awk '/^```bash/{inside=1; next} /^```/{if (inside) exit} inside' README.md | sed 's/[[:space:]]*#.*$//'
