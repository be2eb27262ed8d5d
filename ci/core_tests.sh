# The core tests, sourced by ci/pythons.sh and ci/wheel.sh (not a job).
#
# The correctness tests of every operator and of the engine's paths: they
# need NumPy, pytest and the packages below, nothing else, so they run on
# every Python the package claims. Left out: the peer comparisons (ONNX,
# ONNX Runtime, OpenVINO, Dask: tests/api/test_peers.py, test_dask.py,
# tests/bench/test_bench_peers.py; those may have no wheel for a new Python), the
# README check (it reads the source tree), the Hypothesis fuzz and property
# tests, and the tests of machine behaviour rather than results (fault
# counts, leaks, concurrency, speed targets): the main job runs those.
# Paths are relative to the directory that holds tests/.
# shellcheck disable=SC2034  # used by the scripts that source this one
core_tests=(
  tests/api/test_block_ops.py
  tests/api/test_tile.py
  tests/api/test_permute_ops.py
  tests/api/test_layouts_out_threads.py
  tests/api/test_dtypes.py
  tests/api/test_errors.py
  tests/engine/test_overflow.py
  tests/engine/test_engine_paths.py
  tests/engine/test_short_repeats.py
  tests/engine/test_engine_guards.py
  tests/engine/test_fast_path.py
  tests/engine/test_fast_path_differential.py
  tests/engine/test_streaming.py
  tests/engine/test_transpose_kernel.py
  tests/engine/test_vect_c_pixels.py
  tests/engine/test_fault_ahead.py
  tests/engine/test_regressions.py
  tests/stress/test_stress.py
  tests/api/test_interop.py
  tests/api/test_threadpoolctl.py
  tests/api/test_rearrange.py
)
# What they import besides fastblock and NumPy (of the test extras of
# pyproject.toml; ml_dtypes adds the bfloat16 and float8 cases; einops is the
# oracle of rearrange / repeat, pure Python).
core_test_requires=("pytest>=7" "ml_dtypes>=0.3" "threadpoolctl>=3.1" "einops==0.8.2")
# A short run of the stress harness (tests/stress/test_stress.py).
export FASTBLOCK_STRESS_SECONDS=${FASTBLOCK_STRESS_SECONDS:-20}

# check_imported PYTHON DIR: fastblock and its engine must come from DIR (the
# fresh virtual environment), not from a source tree.
check_imported() {
  "$1" - "$2" <<'EOF'
import os, sys
import fastblock, fastblock._engine as engine
where = os.path.realpath(sys.argv[1]) + os.sep
for module in (fastblock, engine):
    path = os.path.realpath(module.__file__)
    assert path.startswith(where), f"{module.__name__} imported from {path}, not from {where}"
print("fastblock", fastblock.__version__, "from", os.path.dirname(fastblock.__file__),
      "OpenMP:", engine.HAVE_OPENMP)
EOF
}
