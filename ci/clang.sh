#!/usr/bin/env bash
# fastblock built by clang (Debian's clang and libomp-dev: the compiler of
# macOS, and of Windows' clang-cl; docs/platforms.md):
#   1. the engine's C compiled as C, warnings as errors (ci/c_warnings.sh),
#      for x86-64, for aarch64 (--target=aarch64-linux-gnu: the NEON
#      kernels; the headers of Debian's libc6-dev-arm64-cross) and for
#      Windows (--target=x86_64-w64-windows-gnu: 32-bit long, the _WIN32
#      paths; MinGW-w64's headers);
#   2. the package built by clang with OpenMP (libomp), the engine's C with
#      -Wall -Wextra -Werror (FASTBLOCK_WERROR), on Python 3.12 in a fresh
#      virtual environment, and the core tests (ci/pythons.sh).
#
#   bash ci/clang.sh
#
# Needs root for the packages where they are missing. Its time is printed
# by .ci/run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
start=$(date +%s)
missing=()
for package in clang libomp-dev libc6-dev-arm64-cross mingw-w64-x86-64-dev; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null && apt-get install -y -q "${missing[@]}" >/dev/null; }
fi
clang --version | head -n 1
CC=clang bash "$root/ci/c_warnings.sh"
CC="clang --target=aarch64-linux-gnu" bash "$root/ci/c_warnings.sh"
CC="clang --target=x86_64-w64-windows-gnu" bash "$root/ci/c_warnings.sh"
CC=clang FASTBLOCK_WERROR=1 FASTBLOCK_EXPECT_OPENMP=1 bash "$root/ci/pythons.sh" 3.12
echo "=== clang: $(( $(date +%s) - start )) s in all"
