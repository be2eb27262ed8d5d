# The core tests, sourced by ci/pythons.sh and ci/wheel.sh (not a job).
#
# What a new interpreter or a fresh build can break, not the whole suite
# (the main job runs that): the build and the import (check_imported), one
# case of every operator, every kernel family and every item width
# (tests/api/test_every_family.py), the result arrays the data-pipeline
# front doors write again once no one holds them, by reference counts,
# which each interpreter keeps its own way (tests/api/test_reused.py), and
# a short run of the stress harness (tests/stress/test_stress.py). They
# need NumPy, pytest and the packages below, nothing else, so they run on
# every Python the package claims.
# Paths are relative to the directory that holds tests/.
# shellcheck disable=SC2034  # used by the scripts that source this one
core_tests=(
  tests/api/test_every_family.py
  tests/api/test_reused.py
  tests/stress/test_stress.py
)
# What they import besides fastblock and NumPy (of the test extras of
# pyproject.toml; ml_dtypes adds bfloat16; einops is the oracle of
# rearrange / repeat, pure Python).
core_test_requires=("pytest>=7" "ml_dtypes>=0.3" "einops==0.8.2")
# A short run of the stress harness (tests/stress/test_stress.py).
export FASTBLOCK_STRESS_SECONDS=${FASTBLOCK_STRESS_SECONDS:-8}

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
if os.environ.get("FASTBLOCK_EXPECT_OPENMP"):
    assert engine.HAVE_OPENMP, "built without OpenMP"
EOF
}
