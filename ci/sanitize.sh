#!/usr/bin/env bash
# Build the extension with AddressSanitizer + UndefinedBehaviorSanitizer and
# run the test suite under it. Any sanitizer report fails the run.
#
#   bash ci/sanitize.sh                          # the engine tests and the stress harness (CI)
#   bash ci/sanitize.sh tests/stress/test_fuzz.py -x    # arguments replace the pytest arguments
#
# How:
# * The tree (tracked files and untracked ones git does not ignore) is copied
#   to a scratch directory and built there in place with
#   FASTBLOCK_SANITIZE=address,undefined (gcc: -fsanitize=address,undefined,
#   -O1 -g, plus -fno-sanitize-recover=all so that UBSan stops at the first
#   report); the same flags in CFLAGS/LDFLAGS instrument every other compiled
#   module too. The normal build and editable install are left alone.
# * CPython itself is not instrumented, so the ASan runtime must be loaded
#   first: LD_PRELOAD=$(gcc -print-file-name=libasan.so), and libstdc++ with
#   it (see below). libgomp (OpenMP) is not instrumented; its threads are
#   created through ASan's pthread_create interceptor, so copies run by
#   OpenMP worker threads are checked like the caller's.
# * ASAN_OPTIONS: detect_leaks=0 (CPython keeps interned objects and arenas
#   alive at exit, which LeakSanitizer would report), halt_on_error=1,
#   allocator_may_return_null=1 (the overflow tests ask for results larger
#   than any memory: NumPy must see NULL and raise MemoryError, not ASan
#   abort; ASan logs one benign "failed to allocate" line for each).
#   UBSAN_OPTIONS: halt_on_error=1, print_stacktrace=1. Every ASan report is
#   written to a log directory as well; the run fails when any log holds more
#   than those benign lines, so a report from a subprocess (the fork and
#   spawn tests) is not lost either. UBSan running beside ASan ignores
#   log_path and writes to the process's stderr (fd 2), so pytest captures
#   only Python's sys.stderr here (--capture=sys): a report that stops the
#   process would otherwise be swallowed with pytest's captured fd.
# * The tests that reach the engine's C (engine_tests in
#   ci/scratch_tree.sh). The drawn kernel-edge tests (tests/draws.py) draw with the commit's
#   seed + 1, so this run checks other cases than the main job's.
# * Environment knobs: FASTBLOCK_SANITIZE_DIR (scratch directory, kept when
#   given), FASTBLOCK_FUZZ_EXAMPLES (the fuzz budget, default 200 here),
#   PYTHON, CC.
#
# Its time is printed at its end and by .ci/run.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
cc=${CC:-gcc}
start=$(date +%s)

# shellcheck source=ci/scratch_tree.sh
source "$root/ci/scratch_tree.sh"
work=$(work_dir sanitize "${FASTBLOCK_SANITIZE_DIR:-}")
[ -n "${FASTBLOCK_SANITIZE_DIR:-}" ] || trap 'rm -rf "$work"' EXIT
logs=$work/sanitizer-logs
tree=$work/tree
# Start from a clean copy: stale generated C or .so files would be reused.
rm -rf "$logs" "$tree"
mkdir -p "$logs" "$tree"

echo "== copying the tree to $tree"
copy_tree "$root" "$tree"

build_requirements "$python"

echo "== building with -fsanitize=address,undefined"
(
  cd "$tree"
  # FASTBLOCK_SANITIZE instruments the engine; CFLAGS/LDFLAGS instrument
  # every other compiled module (the Cython-compiled front doors) as well.
  CC=$cc FASTBLOCK_SANITIZE=address,undefined \
  CFLAGS="${CFLAGS:-} -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
  LDFLAGS="${LDFLAGS:-} -fsanitize=address,undefined" \
    "$python" setup.py -q build_ext --inplace >"$work/build.log" 2>&1 \
    || { cat "$work/build.log"; exit 1; }
)

asan_lib=$("$cc" -print-file-name=libasan.so)
if [ ! -e "$asan_lib" ]; then
  echo "no ASan runtime for $cc (libasan.so not found)" >&2
  exit 1
fi
for ext in "$tree"/fastblock/_ops/*.so "$tree"/fastblock/_call/*.so "$tree"/fastblock/_engine/*.so; do
  # ldd's output is read whole first: `ldd | grep -q` under pipefail fails
  # at random when grep exits before ldd has written everything (SIGPIPE).
  libs=$(ldd "$ext")
  if ! grep -q libasan <<<"$libs"; then
    echo "$ext is not linked against libasan: the sanitizer flags did not apply" >&2
    exit 1
  fi
done

# libstdc++ is preloaded too: ASan intercepts C++ exceptions (__cxa_throw)
# only if libstdc++ is there when it starts, and the peer libraries the
# tests import (onnxruntime) throw them.
cxx_lib=$("$cc" -print-file-name=libstdc++.so)
export LD_PRELOAD=$asan_lib${cxx_lib:+:$cxx_lib}${LD_PRELOAD:+:$LD_PRELOAD}
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=0:exitcode=86:allocator_may_return_null=1:detect_odr_violation=0:fast_unwind_on_fatal=0:log_path=$logs/asan"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=87:log_path=$logs/ubsan"
export PYTHONPATH=$tree${PYTHONPATH:+:$PYTHONPATH}
export PYTHONFAULTHANDLER=1
export FASTBLOCK_UNDER_ASAN=1  # tests/engine/test_leaks.py: no RSS checks (ASan's quarantine)
export FASTBLOCK_FUZZ_EXAMPLES=${FASTBLOCK_FUZZ_EXAMPLES:-200}
# The stress harness's budget here (tests/stress/test_stress.py; ci/stress.sh runs
# it longer against the normal build).
export FASTBLOCK_STRESS_SECONDS=${FASTBLOCK_STRESS_SECONDS:-60}
# Its seed: from the commit (past the seeds of ci/stress.sh's workers), as the copy has no .git.
if [ -z "${FASTBLOCK_STRESS_SEED:-}" ] && head=$(git -C "$root" rev-parse HEAD 2>/dev/null); then
  export FASTBLOCK_STRESS_SEED=$(( 16#${head:0:8} + 100 ))
fi
if [ -z "${FASTBLOCK_TEST_SEED:-}" ] && head=$(git -C "$root" rev-parse HEAD 2>/dev/null); then
  export FASTBLOCK_TEST_SEED=$(( 16#${head:0:8} + 1 ))
fi
echo "stress harness: ${FASTBLOCK_STRESS_SECONDS} s, seed ${FASTBLOCK_STRESS_SEED:-from the clock}"
# The sanitized build in the scratch copy, not the editable install, must be
# the one imported.
(cd "$tree" && "$python" - <<'EOF'
import os, sys
import fastblock._engine.core as engine
here = os.path.realpath(os.getcwd())
assert os.path.realpath(engine.__file__).startswith(here), engine.__file__
print("sanitized engine:", engine.__file__, "OpenMP:", engine.HAVE_OPENMP)
EOF
)

echo "== running the tests under ASan + UBSan"
status=0
# (engine_tests leaves out OpenVINO, whose uninstrumented runtime exits the
# process under a preloaded ASan runtime, and PyTorch.)
if [ "$#" -eq 0 ]; then set -- "${engine_tests[@]}"; fi
(cd "$tree" && "$python" -m pytest -q -p no:cacheprovider --capture=sys "$@") || status=$?

# With allocator_may_return_null=1 ASan still logs one line per refused
# allocation ("WARNING: AddressSanitizer failed to allocate 0x... bytes"):
# those are the overflow tests' expected MemoryErrors, not reports.
benign='^==[0-9]+==WARNING: AddressSanitizer failed to allocate 0x[0-9a-f]+ bytes$'
found=0
for f in $(find "$logs" -type f | sort); do
  if grep -Eqv "$benign" "$f"; then
    if [ "$found" -eq 0 ]; then echo "== sanitizer reports:" >&2; fi
    found=1
    echo "--- $f" >&2
    grep -Ev "$benign" "$f" >&2
  fi
done
if [ "$found" -ne 0 ]; then status=1; fi
case $status in
  86) echo "== a halting ASan report (exit 86): see the output above" >&2 ;;
  87) echo "== a halting UBSan report (exit 87): 'runtime error' in the output above" >&2 ;;
esac
echo "== sanitized run: exit $status, $(( $(date +%s) - start )) s in all"
exit $status
