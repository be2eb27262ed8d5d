#!/usr/bin/env bash
# Run the README's two commands, exactly as written, in the active environment.
set -euo pipefail
mapfile -t commands < <(bash ci/readme_commands.sh)
if [ "${#commands[@]}" -ne 2 ]; then
  echo "README must start with exactly two commands, found ${#commands[@]}" >&2
  exit 1
fi
echo "+ ${commands[0]}"
bash -c "set -euo pipefail; ${commands[0]}"
echo "+ ${commands[1]}"
bash -c "set -euo pipefail; ${commands[1]}"
