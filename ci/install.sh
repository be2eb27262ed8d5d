#!/usr/bin/env bash
# Install the project the way the README says, into a fresh virtual environment.
# Usage: bash ci/install.sh VENV_DIR
set -euo pipefail
venv=${1:?usage: ci/install.sh VENV_DIR}
python3 -m venv "$venv"
# shellcheck disable=SC1091
source "$venv/bin/activate"
python3 -m pip install -q --upgrade pip
python3 -m pip install -q -e ".[test]"
python3 -c "import fastblock, fastblock._engine as e; print('fastblock', fastblock.__version__, 'OpenMP', e.HAVE_OPENMP)"
