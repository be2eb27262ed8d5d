#!/usr/bin/env bash
# fastblock on free-threaded CPython 3.13t (no GIL): the build, the core
# tests with RuntimeWarnings as errors (importing a module that does not
# declare itself safe without the GIL turns the GIL back on, with one), the
# thread tests of tests/engine/test_concurrency.py, and the stress harness
# with several Python threads calling at once while a tuner thread changes
# the engine's settings (--python-threads).
#
#   bash ci/freethreaded.sh
#   FASTBLOCK_THREAD_STRESS_SECONDS=600 bash ci/freethreaded.sh
#
# No Debian release ships a free-threaded Python: the job builds one from
# Debian trixie's own python3.13 source in a trixie chroot, with NumPy's
# cp313t wheel (2.4.x: later NumPys have none), and keeps that root file
# system for later runs on the machine (ci/chroot.sh). Needs root. Its time
# is printed by .ci/run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=ci/scratch_tree.sh
source "$root/ci/scratch_tree.sh"
# shellcheck source=ci/core_tests.sh
source "$root/ci/core_tests.sh"
# shellcheck source=ci/chroot.sh
source "$root/ci/chroot.sh"
need_root freethreaded.sh
thread_seconds=${FASTBLOCK_THREAD_STRESS_SECONDS:-60}
head=$(git -C "$root" rev-parse HEAD 2>/dev/null || true)
if [ -z "${FASTBLOCK_STRESS_SEED:-}" ] && [ -n "$head" ]; then
  export FASTBLOCK_STRESS_SEED=$(( 16#${head:0:8} + 300 ))
fi

build_py313t_root() {
  local r=$1
  debootstrap_root "$r" trixie
  chroot "$r" apt-get update -q >/dev/null
  # What the tests use of the standard library: zlib (wheels), ctypes
  # (libffi: the stress harness's guard pages) and ssl (pip).
  chroot "$r" apt-get install -y -q --no-install-recommends build-essential pkg-config \
    ca-certificates xz-utils dpkg-dev libssl-dev zlib1g-dev libffi-dev >/dev/null
  chroot "$r" sh -c 'mkdir -p /src && cd /src && apt-get source -q --download-only python3.13 \
    >/dev/null && tar xf python3.13_*.orig.tar.xz'
  # No debug information (-g costs about a third of the build) and no test
  # modules: an interpreter to test fastblock with, not to debug CPython.
  chroot "$r" sh -c 'cd /src/Python-3.13.* && OPT="-DNDEBUG -fwrapv -O2" ./configure -q \
    --disable-gil --disable-test-modules --prefix=/opt/py313t >/dev/null \
    && make -s -j"$(nproc)" >/dev/null 2>&1 && make -s install >/dev/null 2>&1'
  chroot "$r" /opt/py313t/bin/python3.13t -c 'import sys; assert not sys._is_gil_enabled()'
  rm -rf "$r/src"
  chroot "$r" apt-get clean
  venv_with_wheels "$r" /opt/py313t/bin/python3.13t 3.13 cp313t "numpy>=2.0,<2.5"
}

start=$(date +%s)
ready_root py313t-trixie-v2 build_py313t_root
build_and_test
echo "== thread tests (tests/engine/test_concurrency.py)"
chroot_python -m pytest -q -p no:cacheprovider /fastblock/tests/engine/test_concurrency.py
echo "== stress harness, 4 Python threads, ${thread_seconds} s"
chroot_python /fastblock/tests/stress/stress.py --seconds "$thread_seconds" --python-threads 4 \
  ${FASTBLOCK_STRESS_SEED:+--seed "$FASTBLOCK_STRESS_SEED"}
echo "=== freethreaded: $(( $(date +%s) - start )) s in all"
