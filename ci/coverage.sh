#!/usr/bin/env bash
# Build the extensions with gcov instrumentation, run the test suite, and
# report the line and branch coverage of the compiled engine (core.c: the
# C that Cython generates from _engine/core.pyx and its .pxi files; and the
# engine's C in fastblock/_engine/src).
#
#   bash ci/coverage.sh                                # the engine tests and the stress harness
#   bash ci/coverage.sh tests/engine/test_engine_paths.py -x  # arguments replace the pytest arguments
#
# How:
# * The tree (tracked files and untracked ones git does not ignore) is copied
#   to a scratch directory and built there in place with FASTBLOCK_COVERAGE=1
#   (setup.py: the engine at -O0 --coverage instead of -O3, so that line
#   counts follow the source); --coverage in CFLAGS/LDFLAGS instruments the
#   other compiled modules too. CFLAGS also has -fkeep-inline-functions (an
#   inline function that nothing calls is compiled, and counts as unreached,
#   instead of leaving no code) and -Dalways_inline=noinline (the SIMD
#   helpers are otherwise inlined even at -O0, once per call site with
#   constant arguments, and each copy's branches would count separately).
#   The inline functions kept in CPython's headers call internals libpython
#   does not export: -ffunction-sections with -Wl,--gc-sections drops the
#   uncalled ones at link time (their lines stay in the .gcno, at count 0).
#   The normal build and editable install are left alone. Counters are
#   updated without atomics: with OpenMP threads a count may come out low,
#   but a line run at least once never reads 0.
# * Coverage of processes that end with os._exit (forked test children) is
#   not recorded; spawned children that exit normally add theirs.
# * ci/coverage_report.py reads `gcov --json-format` for core.c and maps
#   every generated C line back to its source by Cython's
#   `/* "fastblock/_engine/X.pxi":N` comments, and reports the _engine/src files as
#   themselves (each .c file's counters, and its headers' lines wherever
#   they were compiled, counted once). The "engine" figures leave out
#   Cython boilerplate: utility code and module
#   init/type imports (any C outside a function of fastblock's own), the
#   argument-unpacking wrappers of def functions (__pyx_pw_*), View.MemoryView
#   and numpy .pxd code, function entry/exit code, refnanny lines, the error
#   paths (__pyx_L*_error: to the exit label), and the branches of the error
#   checks (`if (unlikely(...)) __PYX_ERR(...)`, `goto __pyx_L*_error`).
# * The report goes to stdout and to build/coverage/report.txt in the
#   repository (build/ is ignored by git), the gcov JSON next to it.
# * Environment knobs: FASTBLOCK_COVERAGE_DIR (scratch directory, kept when
#   given), FASTBLOCK_FUZZ_EXAMPLES (the fuzz budget, default 200 here),
#   PYTHON, CC, GCOV (must match the compiler: gcov for gcc).
#
# * The tests: those that reach the engine's C (engine_tests in
#   ci/scratch_tree.sh), the drawn ones with the commit's seed + 2, and the
#   stress harness for 30 s.
#
# Its time is printed at its end and by .ci/run.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
cc=${CC:-gcc}
gcov=${GCOV:-gcov}
start=$(date +%s)

# shellcheck source=ci/scratch_tree.sh
source "$root/ci/scratch_tree.sh"
work=$(work_dir coverage "${FASTBLOCK_COVERAGE_DIR:-}")
[ -n "${FASTBLOCK_COVERAGE_DIR:-}" ] || trap 'rm -rf "$work"' EXIT
tree=$work/tree
out=$root/build/coverage
# Start from a clean copy: stale generated C, .so or .gcda files would be reused.
rm -rf "$tree"
mkdir -p "$tree" "$out"

echo "== copying the tree to $tree"
copy_tree "$root" "$tree"

build_requirements "$python"
if ! command -v "$gcov" >/dev/null; then
  echo "no $gcov on PATH (set GCOV to the gcov that matches $cc)" >&2
  exit 1
fi

echo "== building with --coverage (engine at -O0)"
build_start=$(date +%s)
(
  cd "$tree"
  CC=$cc FASTBLOCK_COVERAGE=1 \
  CFLAGS="${CFLAGS:-} --coverage -fkeep-inline-functions -ffunction-sections -Dalways_inline=noinline" \
  LDFLAGS="${LDFLAGS:-} --coverage -Wl,--gc-sections" \
    "$python" setup.py -q build_ext --inplace >"$work/build.log" 2>&1 \
    || { cat "$work/build.log"; exit 1; }
)
build_s=$(( $(date +%s) - build_start ))

gcno=$(find "$tree/build" -path '*/_engine/core.gcno' | head -n 1)
if [ -z "$gcno" ]; then
  echo "no core.gcno under $tree/build: the coverage flags did not apply" >&2
  exit 1
fi

export PYTHONPATH=$tree${PYTHONPATH:+:$PYTHONPATH}
export FASTBLOCK_FUZZ_EXAMPLES=${FASTBLOCK_FUZZ_EXAMPLES:-200}
export FASTBLOCK_STRESS_SECONDS=${FASTBLOCK_STRESS_SECONDS:-30}
if [ -z "${FASTBLOCK_TEST_SEED:-}" ] && head=$(git -C "$root" rev-parse HEAD 2>/dev/null); then
  export FASTBLOCK_TEST_SEED=$(( 16#${head:0:8} + 2 ))
fi
# The instrumented build in the scratch copy, not the editable install, must
# be the one imported.
(cd "$tree" && "$python" - <<'EOF'
import os
import fastblock._engine.core as engine
here = os.path.realpath(os.getcwd())
assert os.path.realpath(engine.__file__).startswith(here), engine.__file__
print("instrumented engine:", engine.__file__, "OpenMP:", engine.HAVE_OPENMP)
EOF
)
# That import wrote counters of its own (module init): start from zero.
find "$tree" -name '*.gcda' -delete

echo "== running the tests"
if [ "$#" -eq 0 ]; then set -- "${engine_tests[@]}" -q -p no:cacheprovider; fi
test_start=$(date +%s)
status=0
(cd "$tree" && "$python" -m pytest "$@") || status=$?
test_s=$(( $(date +%s) - test_start ))

echo "== coverage of the engine"
report=0
(cd "$tree" && "$python" "$root/ci/coverage_report.py" \
    --tree "$tree" --gcno "$gcno" --gcov "$gcov" --out "$out") || report=$?
echo "== coverage run: pytest exit $status, report exit $report; build ${build_s} s," \
     "tests ${test_s} s, $(( $(date +%s) - start )) s in all; report in $out/report.txt"
# A failing test fails the run (its coverage is still reported).
if [ "$status" -eq 0 ]; then status=$report; fi
exit $status
