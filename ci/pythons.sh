#!/usr/bin/env bash
# Build and test the package on every Python that pyproject.toml claims
# (requires-python >= 3.10) besides 3.11, which the main job covers. CC
# picks the compiler, as for any setuptools build (ci/clang.sh: clang).
#
#   bash ci/pythons.sh                  # 3.10, 3.13 (CI; 3.12 is ci/clang.sh's)
#   bash ci/pythons.sh 3.13             # arguments replace the versions
#
# How, for each version: its interpreter is taken from pyenv
# (/root/.pyenv/versions/X.Y.*, or $PYENV_ROOT); a version without one is
# skipped with a message, and the run fails when none is found. A fresh
# virtual environment in a scratch directory gets the build requirements
# (NumPy, Cython >= 3.1, setuptools >= 77) and the core tests' packages from
# PyPI, then the package itself, built from a clean copy of the tree (no
# generated C or .so of the main build) and installed non-editable. The
# core tests (ci/core_tests.sh: one case of every operator, kernel family
# and item width, and an 8 s stress run) run from the scratch directory,
# so `import fastblock` finds only the installed package; that is checked
# first.
#
# Time on the 2-core machine: see the per-Python lines it prints (the
# build is most of it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=ci/scratch_tree.sh
source "$root/ci/scratch_tree.sh"
# shellcheck source=ci/core_tests.sh
source "$root/ci/core_tests.sh"
unset PYTHONPATH
pyenv_root=${PYENV_ROOT:-/root/.pyenv}
# (3.12: built by clang in ci/clang.sh.)
if [ "$#" -eq 0 ]; then set -- 3.10 3.13; fi

work=$(mktemp -d "${TMPDIR:-/tmp}/fastblock-pythons.XXXXXX")
trap 'rm -rf "$work"' EXIT
copy_tree "$root" "$work/tree"
# The stress harness's seed: from the commit, past those of ci/stress.sh
# and ci/sanitize.sh, a different one for each Python (FASTBLOCK_STRESS_SEED
# sets one for all).
head=$(git -C "$root" rev-parse HEAD 2>/dev/null || true)

start=$(date +%s)
tested=()
summary=()
status=0
for version in "$@"; do
  python=""
  # The newest patch release of that version.
  for candidate in $(printf '%s\n' "$pyenv_root/versions/$version".*/bin/python3 | sort -V); do
    if [ -x "$candidate" ]; then python=$candidate; fi
  done
  if [ -z "$python" ]; then
    echo "=== Python $version: no interpreter under $pyenv_root/versions/, skipped"
    summary+=("$version: skipped (no interpreter)")
    continue
  fi
  t0=$(date +%s)
  echo "=== Python $version: $python ($("$python" -V 2>&1))"
  venv=$work/venv-$version
  py=$venv/bin/python
  if [ -n "$head" ] && [ -z "${FASTBLOCK_STRESS_SEED:-}" ]; then
    seed=$(( 16#${head:0:8} + 200 + ${#tested[@]} ))
  else
    seed=${FASTBLOCK_STRESS_SEED:-}
  fi
  tested+=("$version")
  # Each step runs in a subshell with errexit on; its status is kept (an
  # `||` after the subshell would switch errexit off inside it).
  set +e
  (
    set -e
    "$python" -m venv "$venv"
    "$py" -m pip install -q --upgrade pip
    "$py" -m pip install -q "numpy>=2.0" "Cython>=3.1" "setuptools>=77" "${core_test_requires[@]}"
    # The build requirements are in the environment already: build against them.
    build=$work/build-$version
    cp -a "$work/tree" "$build"
    "$py" -m pip install -q --no-build-isolation "$build" >"$work/build-$version.log" 2>&1 \
      || { cat "$work/build-$version.log"; echo "build failed" >&2; exit 1; }
    rm -rf "$build"
  )
  built=$?
  t1=$(date +%s)
  tests=1
  if [ "$built" -eq 0 ]; then
    echo "built and installed in $(( t1 - t0 )) s; stress harness ${FASTBLOCK_STRESS_SECONDS} s, seed ${seed:-from the clock}"
    (
      set -e
      cd "$work"
      check_imported "$py" "$venv"
      FASTBLOCK_STRESS_SEED=$seed "$py" -m pytest -q -p no:cacheprovider "${core_tests[@]/#/$root/}"
    )
    tests=$?
  fi
  set -e
  if [ "$built" -ne 0 ]; then result="FAILED to build"
  elif [ "$tests" -ne 0 ]; then result=FAILED
  else result=passed; fi
  [ "$result" = passed ] || status=1
  t2=$(date +%s)
  summary+=("$version: $result, $(( t2 - t0 )) s ($(( t1 - t0 )) s to build and install, $(( t2 - t1 )) s of tests)")
  rm -rf "$venv"
done

echo "=== Pythons:"
printf '  %s\n' "${summary[@]}"
echo "=== $(( $(date +%s) - start )) s in all"
if [ "${#tested[@]}" -eq 0 ]; then
  echo "no Python interpreter found for any of: $*" >&2
  exit 1
fi
exit $status
