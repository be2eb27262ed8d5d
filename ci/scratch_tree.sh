# Sourced by the CI jobs that build in a scratch copy of the tree
# (ci/sanitize.sh, ci/coverage.sh, ci/pythons.sh, ci/wheel.sh); not a job.
# It defines work_dir, copy_tree, build_requirements and engine_tests.

# The tests that reach the engine's C, for the sanitized and the coverage
# builds: the engine tests, the stress harness, the fuzz and the
# properties, one case of every operator, kernel family and item width,
# and the operators' own tests (their fast-path programs, NCHW_VECT_C
# copies and out= views), less the comparisons with OpenVINO and PyTorch
# (their runtimes are not instrumented; OpenVINO's exits under ASan).
# shellcheck disable=SC2034  # used by the scripts that source this one
engine_tests=(
  tests/engine tests/stress tests/api/test_every_family.py tests/api/test_block_ops.py
  tests/api/test_tile.py tests/api/test_dtypes.py tests/api/test_layouts_out_threads.py
  -k "not openvino and not torch"
)

# work_dir NAME KEEP: prints the job's work directory: KEEP if set (made if
# missing, kept afterwards), else a new temporary one, which the caller
# removes (trap 'rm -rf "$work"' EXIT, in the job's own shell).
work_dir() {
  if [ -n "$2" ]; then
    mkdir -p "$2"
    printf '%s\n' "$2"
  else
    mktemp -d "${TMPDIR:-/tmp}/fastblock-$1.XXXXXX"
  fi
}

# copy_tree ROOT DEST: the tracked files and the untracked ones git does not
# ignore (no build outputs: no generated C, no .so, no build/).
copy_tree() {
  mkdir -p "$2"
  if git -C "$1" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$1" && git ls-files -z --cached --others --exclude-standard) \
      | (cd "$1" && while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done) \
      | tar -C "$1" --null -T - -cf - | tar -C "$2" -xf -
  else
    # (No wildcard crosses a '/': fastblock/_engine/src/*.c is hand-written C.)
    tar -C "$1" --no-wildcards-match-slash --exclude='*.so' --exclude='build' --exclude='dist' --exclude='.venv*' \
        --exclude='*.egg-info' --exclude='__pycache__' --exclude='fastblock/_ops/*.c' --exclude='fastblock/_call/*.c' \
        --exclude='fastblock/_engine/*.c' \
        -cf - . | tar -C "$2" -xf -
  fi
}

# build_requirements PYTHON: install pyproject.toml's build requirements
# into PYTHON's environment where they are missing (the SPDX license string
# needs setuptools >= 77), for a build in place with setup.py.
build_requirements() {
  if ! "$1" -c "import Cython, numpy, setuptools, sys; v = int(setuptools.__version__.split('.')[0]); sys.exit(v < 77)" 2>/dev/null; then
    echo "== installing the build requirements (Cython, setuptools)"
    "$1" -m pip install -q "Cython>=3.1" "setuptools>=77"
  fi
}
