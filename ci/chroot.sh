# Debian root file systems for the jobs that test another Python
# (ci/freethreaded.sh, ci/python314.sh); sourced by them, not a job.
#
# A root file system is built once per machine and kept in
# $FASTBLOCK_CI_CACHE (default /var/cache/fastblock-ci), under a name that
# carries its recipe's version: a job finds it there, or builds it into
# NAME.partial and renames it when whole (an interrupted build is never
# taken for a cached one). Python packages are downloaded on the host
# (pip download, for the chroot's Python) and installed offline inside.
# The jobs need root (debootstrap, chroot, mount) and Debian's mirror.

ci_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ci_cache=${FASTBLOCK_CI_CACHE:-/var/cache/fastblock-ci}
debian_mirror=${FASTBLOCK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
mounted_roots=()

# need_root JOB: say why and fail where this is not root.
need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "$1: needs root (debootstrap, chroot, mount); not run as root" >&2
    exit 1
  fi
  if ! command -v debootstrap >/dev/null; then
    # A machine whose package lists are empty or stale gets them first.
    apt-get install -y -q debootstrap >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null && apt-get install -y -q debootstrap >/dev/null; }
  fi
}

# cached_root NAME BUILDER: prints the path of root file system NAME,
# building it first with BUILDER ROOT (a shell function) where the cache
# has none.
cached_root() {
  local name=$1 builder=$2 root=$ci_cache/$1 status
  if [ -x "$root/bin/sh" ] && [ -f "$root/.fastblock-ready" ]; then
    echo "cached root file system: $root" >&2
  else
    mkdir -p "$ci_cache"
    umount_root "$root.partial"
    rm -rf "$root.partial" "$root"
    echo "building root file system $name" >&2
    # The builder in a subshell of its own with errexit on, its status
    # checked: cached_root runs in a command substitution, where bash
    # turns errexit off, and a step that failed (a download cut off) once
    # left a root without its packages marked ready.
    ( set -e; "$builder" "$root.partial" ) >&2
    status=$?
    umount_root "$root.partial"
    if [ "$status" -ne 0 ]; then
      echo "building root file system $name failed ($status)" >&2
      return 1
    fi
    touch "$root.partial/.fastblock-ready"
    mv "$root.partial" "$root"
  fi
  echo "$root"
}

# debootstrap_root ROOT SUITE [SCRIPT]: a minimal Debian SUITE in ROOT,
# /proc and /dev mounted, the host's resolver copied, and a deb-src line.
debootstrap_root() {
  local root=$1 suite=$2 script=${3:-}
  debootstrap --variant=minbase "$suite" "$root" "$debian_mirror" $script >/dev/null
  mount_root "$root"
  echo "deb-src $debian_mirror $suite main" >>"$root/etc/apt/sources.list"
}

# mount_root ROOT / umount_root ROOT: /proc and /dev inside ROOT; every
# root mounted here is unmounted on exit (before any rm -rf of it).
mount_root() {
  local root=$1
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
  mountpoint -q "$root/dev" || mount --bind /dev "$root/dev"
  mounted_roots+=("$root")
  trap umount_all EXIT
}
umount_root() {
  local root=$1
  if [ -d "$root" ]; then
    ! mountpoint -q "$root/dev" || umount "$root/dev"
    ! mountpoint -q "$root/proc" || umount "$root/proc"
  fi
}
umount_all() {
  local root
  for root in "${mounted_roots[@]}"; do umount_root "$root"; done
  [ -z "${scratch:-}" ] || rm -rf "$scratch"
}

# venv_with_wheels ROOT PYTHON VERSION ABI NUMPY: /venv in ROOT from its
# PYTHON (CPython VERSION, ABI tag ABI), with NUMPY (a requirement), the
# build requirements and the core tests' packages: their x86-64 manylinux
# wheels downloaded on the host into ROOT/wheels, installed offline.
venv_with_wheels() {
  local root=$1 python=$2 version=$3 abi=$4
  local packages=("$5" "Cython>=3.1" "setuptools>=77" "${core_test_requires[@]}")
  chroot "$root" "$python" -m venv /venv
  python3 -m pip download -q --only-binary=:all: --platform manylinux_2_28_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --python-version "$version" --implementation cp --abi "$abi" --abi none \
    -d "$root/wheels" "${packages[@]}"
  chroot "$root" /venv/bin/python -m pip install -q --no-index --find-links /wheels "${packages[@]}"
}

# ready_root NAME BUILDER: root file system NAME (cached_root; BUILDER
# ends with venv_with_wheels), mounted, its path in $chroot_root.
ready_root() {
  local t0
  t0=$(date +%s)
  chroot_root=$(cached_root "$1" "$2")
  mount_root "$chroot_root"
  echo "root file system ready in $(( $(date +%s) - t0 )) s: $(chroot_python -VV)"
}

# build_and_test: the tree copied into $chroot_root/fastblock, built and
# installed into its /venv (against the build requirements in it: no
# isolation, nothing from the network), then the core tests
# (ci/core_tests.sh) through chroot_python.
build_and_test() {
  local t0
  rm -rf "$chroot_root/fastblock"
  copy_tree "$ci_root" "$chroot_root/fastblock"
  t0=$(date +%s)
  chroot "$chroot_root" sh -c "cd /fastblock && /venv/bin/python -m pip install -q \
    --no-index --find-links /wheels --no-build-isolation ." >"$chroot_root/build.log" 2>&1 \
    || { cat "$chroot_root/build.log"; echo "build failed" >&2; return 1; }
  echo "built and installed in $(( $(date +%s) - t0 )) s;" \
       "stress harness ${FASTBLOCK_STRESS_SECONDS} s, seed ${FASTBLOCK_STRESS_SEED:-from the clock}"
  check_imported chroot_python /venv
  chroot_python -m pytest -q -p no:cacheprovider "${core_tests[@]/#//fastblock/}"
}

# chroot_python ARGS...: the chroot's /venv Python, run from /tmp, so that
# `import fastblock` finds only the installed package, with RuntimeWarnings
# as errors in it and every process it starts (a module that turned a
# free-threaded Python's GIL back on would raise one). chroot passes the
# rest of the environment (FASTBLOCK_STRESS_SECONDS, ..._SEED) through.
chroot_python() {
  chroot "$chroot_root" env -C /tmp PYTHONWARNINGS=error::RuntimeWarning /venv/bin/python "$@"
}
