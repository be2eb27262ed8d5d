#!/usr/bin/env bash
# Compile the engine's C (fastblock/_engine/src) as C, warnings as errors: every .c
# file, and every header alone (a one-line file that includes it, so each
# header includes what it uses), with -Wall -Wextra -Werror, each with and
# without OpenMP and once more with the SIMD variants left out
# (-DFB_X86_SIMD=0: the portable fallbacks). -fsyntax-only: nothing is
# written but the one-line files, in a scratch directory.
#
#   bash ci/c_warnings.sh          # CC picks the compiler (default gcc)
#   CC="clang --target=aarch64-linux-gnu" bash ci/c_warnings.sh   # NEON
#
# Takes a few seconds.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
read -r -a cc <<<"${CC:-gcc}"
src=$root/fastblock/_engine/src
work=$(mktemp -d "${TMPDIR:-/tmp}/fastblock-c-warnings.XXXXXX")
trap 'rm -rf "$work"' EXIT

units=()
for c_file in "$src"/*.c; do
  units+=("$c_file")
done
for header in "$src"/*.h; do
  unit=$work/$(basename "$header" .h)_alone.c
  printf '#include "%s"\n' "$header" >"$unit"
  units+=("$unit")
done

failed=0
checked=0
for flags in "-fopenmp" "" "-fopenmp -DFB_X86_SIMD=0 -DFB_NEON=0"; do
  for unit in "${units[@]}"; do
    # shellcheck disable=SC2086  # $flags is a list of flags
    if ! "${cc[@]}" -fsyntax-only -Wall -Wextra -Werror $flags "$unit"; then
      echo "FAILED: ${cc[*]} -Wall -Wextra -Werror $flags $(basename "$unit")" >&2
      failed=$((failed + 1))
    fi
    checked=$((checked + 1))
  done
done
echo "c_warnings: $checked compilations of ${#units[@]} files (${cc[*]}), $failed failed"
[ "$failed" -eq 0 ]
