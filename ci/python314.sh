#!/usr/bin/env bash
# fastblock on Python 3.14: the build and the core tests (ci/core_tests.sh),
# in a Debian forky chroot (Python 3.14 from Debian, NumPy's cp314 wheel),
# kept for later runs on the machine (ci/chroot.sh). Needs root. Its time
# is printed by .ci/run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=ci/scratch_tree.sh
source "$root/ci/scratch_tree.sh"
# shellcheck source=ci/core_tests.sh
source "$root/ci/core_tests.sh"
# shellcheck source=ci/chroot.sh
source "$root/ci/chroot.sh"
need_root python314.sh
head=$(git -C "$root" rev-parse HEAD 2>/dev/null || true)
if [ -z "${FASTBLOCK_STRESS_SEED:-}" ] && [ -n "$head" ]; then
  export FASTBLOCK_STRESS_SEED=$(( 16#${head:0:8} + 314 ))
fi

build_py314_root() {
  local r=$1
  # This debootstrap may predate forky: sid's script fits it.
  debootstrap_root "$r" forky /usr/share/debootstrap/scripts/sid
  # The forky index counts as expired on a mirror snapshot.
  chroot "$r" apt-get -o Acquire::Check-Valid-Until=false update -q >/dev/null
  chroot "$r" apt-get install -y -q --no-install-recommends python3.14-dev python3.14-venv gcc \
    libc6-dev >/dev/null
  chroot "$r" apt-get clean
  venv_with_wheels "$r" python3.14 3.14 cp314 "numpy>=2.0"
}

start=$(date +%s)
ready_root py314-forky-v1 build_py314_root
build_and_test
echo "=== python314: $(( $(date +%s) - start )) s in all"
