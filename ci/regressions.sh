#!/usr/bin/env bash
# The regression check (speed_history/check.py): this commit's build
# against its parent's on the stable figures (time ratios measured inside
# one process, instruction counts under callgrind); prints every figure
# that moved by 10 % or more and fails on a confirmed regression (the rule
# is in speed_history/README.md).
#
#   bash ci/regressions.sh                 # HEAD against HEAD^
#   FASTBLOCK_BASE=main~3 bash ci/regressions.sh
#
# The parent is built in place in a tree kept in $FASTBLOCK_CI_CACHE
# (default /var/cache/fastblock-ci/regressions-base): its files are
# replaced by the parent's (git archive), and setup.py's build notes reuse
# every extension whose inputs did not change, so only what the parent
# changed is compiled; a new tree starts from this commit's build. This
# commit is the build installed in place (ci/install.sh). A commit that
# changed nothing the build is made of is not measured (said, exit 0).
# Needs valgrind (apt-get). Its time is printed by .ci/run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
start=$(date +%s)
base_rev=${FASTBLOCK_BASE:-HEAD^}
if ! base=$(git rev-parse --verify -q "$base_rev^{commit}"); then
  # A shallow clone holds no parent to build: said loudly, not failed
  # (the clone's depth is the CI host's choice). Anywhere else, a failure.
  if [ "$(git rev-parse --is-shallow-repository)" = true ]; then
    echo "regressions: NOT RUN: a shallow clone has no $base_rev to compare with" >&2
    exit 0
  fi
  echo "regressions: no $base_rev: nothing to compare with" >&2
  exit 1
fi
# What is built: the package's paths, as the history's backfill names them.
# A commit that left them as the parent had them cannot have moved a
# figure; measuring two identical builds only gives noise a chance to fail.
mapfile -t package < <(python -c 'from speed_history.backfill import PACKAGE_PATHS
print(*PACKAGE_PATHS, sep="\n")')
[ "${#package[@]}" -gt 0 ] || { echo "regressions: speed_history.backfill names no package paths" >&2; exit 1; }
if git diff --quiet "$base" -- "${package[@]}"; then
  summary="not measured: the package (${package[*]}) is the same as in $(git rev-parse --short "$base")"
  echo "regressions: $summary"
  printf '{"summary": "%s", "figures": []}\n' "$summary" > "${FASTBLOCK_CHECK_JSON:-/tmp/fastblock-check.json}"
  exit 0
fi
if ! command -v valgrind >/dev/null; then
  apt-get install -y -q valgrind >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null && apt-get install -y -q valgrind >/dev/null; }
fi
tree=${FASTBLOCK_CI_CACHE:-/var/cache/fastblock-ci}/regressions-base
mkdir -p "$tree"
# A tree with no build yet starts from this commit's (its modules and build
# notes): then only the modules the parent changed compile, not all of
# them (a parent that differs in notes alone: none).
if [ ! -d "$tree/build/fastblock-built" ] && [ -d build/fastblock-built ]; then
  find fastblock -name '*.so' -print0 | tar -c --null -T - build/fastblock-built | tar -x -C "$tree"
fi
# Fresh modification times (-m): cythonize regenerates the C of every
# .pyx (a few seconds), so no C generated from an older source is reused.
git archive "$base" | tar -x -m -C "$tree"
echo "== base $(git log -1 --format='%h %s' "$base" | cut -c1-72)"
(cd "$tree" && python setup.py build_ext --inplace -j2 >build.log 2>&1) \
  || { tail -30 "$tree/build.log"; exit 1; }
echo "compiled: $(grep -c "^building '" "$tree/build.log" || true) extension(s); $(( $(date +%s) - start )) s"
python -m speed_history.check --base "$tree" --json "${FASTBLOCK_CHECK_JSON:-/tmp/fastblock-check.json}"
echo "=== regressions: $(( $(date +%s) - start )) s in all"
