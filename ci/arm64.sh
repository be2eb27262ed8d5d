#!/usr/bin/env bash
# fastblock on arm64 (aarch64), under qemu user mode: the engine
# cross-built on the host, then the core tests (ci/core_tests.sh) and the
# engine's kernel tests run by an arm64 Python, once for each of two CPUs:
#   max,pauth=off  every feature qemu has (SVE, dot product, fp16), pointer
#                  authentication off: Debian's binaries use it and qemu
#                  emulates it about 4x slower;
#   cortex-a72     plain ARMv8.0 NEON (a Raspberry Pi 4).
#
#   bash ci/arm64.sh
#   FASTBLOCK_ARM64_CPUS="cortex-a72" bash ci/arm64.sh
#   FASTBLOCK_ARM64_CPUS=" " FASTBLOCK_ARM64_TREE=fastblock-portable \
#     FASTBLOCK_ARM64_CPPFLAGS=-DFB_NEON=0 bash ci/arm64.sh   # build only:
#     the portable path, for speed_reports/arm64_instructions.py
#
# The root file system (Debian bookworm arm64: Python 3.11, NumPy's
# aarch64 wheel) is built once per machine and kept (ci/chroot.sh). The
# build runs on the host: the host's Python 3.11 runs setup.py with the
# target's sysconfig data (its compiler, aarch64-linux-gnu-gcc, and module
# suffix) and the target's Python and NumPy headers; compiled under
# emulation the engine takes about 8 times as long. Needs root (debootstrap,
# chroot, mount, binfmt_misc). Its time is printed by .ci/run: 299 s in the
# full CI run of 2026-11-28 on the 2-core machine (cross build 87 s, max
# 151 s, cortex-a72 56 s), with the root file system cached; building it
# adds about 45 s.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=ci/scratch_tree.sh
source "$root/ci/scratch_tree.sh"
# shellcheck source=ci/core_tests.sh
source "$root/ci/core_tests.sh"
# shellcheck source=ci/chroot.sh
source "$root/ci/chroot.sh"
need_root arm64.sh
start=$(date +%s)
cpus=${FASTBLOCK_ARM64_CPUS:-max,pauth=off cortex-a72}
head=$(git -C "$root" rev-parse HEAD 2>/dev/null || true)
if [ -z "${FASTBLOCK_STRESS_SEED:-}" ] && [ -n "$head" ]; then
  export FASTBLOCK_STRESS_SEED=$(( 16#${head:0:8} + 64 ))
fi
# With the core tests (every kernel family, each taken by its NEON kernel
# where x86 takes its SIMD one, checked through describe()), the engine's
# kernel tests: each 16-byte kernel forced, at the sizes where the planner
# switches, sources and results against guard pages, every byte compared.
# (tests/engine/test_caller_faults.py reads /proc/self/task, which qemu
# user mode does not have.)
kernel_tests=(tests/engine/test_engine_paths.py tests/engine/test_short_repeats.py
              tests/engine/test_long_shuffle_runs.py tests/engine/test_lane_row_groups.py
              tests/engine/test_few_lanes.py tests/engine/test_lane_permutes.py
              tests/engine/test_line_splits.py tests/engine/test_transpose_kernel.py
              tests/engine/test_convert_stage.py tests/engine/test_settings.py
              tests/engine/test_regressions.py)
# A 20 s stress run under each CPU (the harness draws every knob on and
# off; FASTBLOCK_ARM64_STRESS_SECONDS sets another length).
export FASTBLOCK_STRESS_SECONDS=${FASTBLOCK_ARM64_STRESS_SECONDS:-20}

# The host's part: qemu for arm64 binaries, registered with binfmt_misc,
# and the cross compiler.
for package in qemu-user-static binfmt-support gcc-aarch64-linux-gnu; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ -n "${missing[*]:-}" ]; then
  apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null && apt-get install -y -q "${missing[@]}" >/dev/null; }
fi
if ! mountpoint -q /proc/sys/fs/binfmt_misc; then
  mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc || {
    echo "arm64.sh: binfmt_misc cannot be mounted here, so arm64 binaries cannot run" >&2
    exit 1
  }
fi
update-binfmts --enable qemu-aarch64
export QEMU_CPU=max,pauth=off

host_python=$(command -v python3)
# The cross build runs setup.py on the host: Cython and setuptools there.
build_requirements "$host_python"
numpy_version=$("$host_python" -c 'import numpy; print(numpy.__version__)')
python_version=$("$host_python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[ "$python_version" = 3.11 ] || {
  echo "arm64.sh: the cross build needs the host's Python to be the target's, 3.11; it is $python_version" >&2
  exit 1
}
# The root file system without running a package's scripts under
# emulation (debootstrap's second stage and apt there took 6.5 minutes):
# debootstrap's first stage fetches the packages, the host unpacks them
# (30 s in all). Python, its headers for the cross compiler (--sysroot),
# and libgomp1, OpenMP's run time. The wheels (the NumPy the host builds
# with, whose headers are the target's, and the core tests' packages) are
# unpacked into a venv's site-packages: a wheel is a zip of what pip
# would install, and these need none of pip's scripts.
build_arm64_root() {
  local r=$1 deb wheel site=$1/venv/lib/python3.11/site-packages
  debootstrap --foreign --arch=arm64 --variant=minbase --include=python3,libpython3-dev,libgomp1 \
    bookworm "$r" "$debian_mirror" >/dev/null
  for deb in "$r"/var/cache/apt/archives/*.deb; do dpkg-deb -x "$deb" "$r"; done
  rm -rf "$r"/var/cache/apt/archives/*.deb
  mount_root "$r"
  chroot "$r" python3 -m venv --without-pip /venv
  env -u PIP_FIND_LINKS "$host_python" -m pip download -q --only-binary=:all: \
    --platform manylinux_2_28_aarch64 --platform manylinux_2_17_aarch64 --platform manylinux2014_aarch64 \
    --python-version 3.11 --implementation cp --abi cp311 --abi none -d "$r/wheels" \
    "numpy==$numpy_version" "${core_test_requires[@]}"
  for wheel in "$r"/wheels/*.whl; do "$host_python" -m zipfile -e "$wheel" "$site"; done
}
ready_root "arm64-bookworm-v2-numpy$numpy_version" build_arm64_root

# The cross build, in a copy of the tree on the host.
work=$(work_dir arm64 "${FASTBLOCK_ARM64_WORK:-}")
[ -n "${FASTBLOCK_ARM64_WORK:-}" ] || trap 'rm -rf "$work"; umount_all' EXIT
rm -rf "$work/tree" "$work/sysconfig"
copy_tree "$root" "$work/tree"
mkdir -p "$work/sysconfig"
cp "$chroot_root"/usr/lib/python3.11/_sysconfigdata__aarch64-linux-gnu.py "$work/sysconfig/"
t0=$(date +%s)
sysroot="--sysroot=$chroot_root"
numpy_include=$(echo "$chroot_root"/venv/lib/python3.11/site-packages/numpy/_core/include)
(cd "$work/tree" && env _PYTHON_HOST_PLATFORM=linux-aarch64 \
   _PYTHON_SYSCONFIGDATA_NAME=_sysconfigdata__aarch64-linux-gnu PYTHONPATH="$work/sysconfig" \
   CC="aarch64-linux-gnu-gcc $sysroot" LDSHARED="aarch64-linux-gnu-gcc $sysroot -shared" \
   CPPFLAGS="-I$chroot_root/usr/include/python3.11 -I$numpy_include ${FASTBLOCK_ARM64_CPPFLAGS:-}" \
   FASTBLOCK_WERROR=1 \
   "$host_python" setup.py -q build_ext --inplace >"$work/build.log" 2>&1) \
  || { cat "$work/build.log"; echo "arm64.sh: the cross build failed" >&2; exit 1; }
echo "cross-built in $(( $(date +%s) - t0 )) s"
tree=${FASTBLOCK_ARM64_TREE:-fastblock}
rm -rf "${chroot_root:?}/$tree"
cp -a "$work/tree" "$chroot_root/$tree"

# The kernel tests under the first CPU only: the NEON kernels ask the CPU
# nothing at run time, so the second CPU model (plain ARMv8.0) reruns the
# core tests, where a feature the build assumed would show.
first=1
for cpu in $cpus; do
  tests=("${core_tests[@]}")
  [ "$first" -eq 0 ] || tests+=("${kernel_tests[@]}")
  first=0
  t0=$(date +%s)
  echo "== QEMU_CPU=$cpu: stress harness ${FASTBLOCK_STRESS_SECONDS} s, seed $FASTBLOCK_STRESS_SEED"
  QEMU_CPU=$cpu chroot "$chroot_root" env -C "/$tree" PYTHONPATH="/$tree" PYTHONWARNINGS=error::RuntimeWarning \
    /venv/bin/python -c 'import platform, fastblock._engine as e; print(platform.machine(), "OpenMP:", e.HAVE_OPENMP, e.cpu_features())'
  QEMU_CPU=$cpu chroot "$chroot_root" env -C "/$tree" PYTHONPATH="/$tree" PYTHONWARNINGS=error::RuntimeWarning \
    /venv/bin/python -m pytest -q -p no:cacheprovider "${tests[@]}"
  echo "== QEMU_CPU=$cpu: $(( $(date +%s) - t0 )) s"
done
echo "=== arm64: $(( $(date +%s) - start )) s in all"
