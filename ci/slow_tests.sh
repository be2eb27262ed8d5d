#!/usr/bin/env bash
# The tests marked slow (pyproject.toml), which the README's test run leaves
# out to stay within 90 s: Dask on a LocalCluster with worker processes,
# space/batch moves against compiled OpenVINO models, and fastblock.pipelines
# in a local Ray (tests/api/test_ray.py, about 20 s; Ray comes with the test
# extras). Run from the repository root after the package is installed; its
# time is printed by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pytest tests -m slow -q -p no:cacheprovider
