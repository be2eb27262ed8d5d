"""The message for an import of a fastblock source tree whose compiled
extensions are not built."""
from __future__ import annotations

import importlib.machinery
import os


def raise_if_unbuilt(package_dir: str) -> None:
    """ImportError saying how to build the engine, where ``package_dir``
    holds none; nothing where one is built (its import failed for another
    reason, which the caller's own error then tells)."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    if any(name.startswith("_engine.") and name.endswith(suffixes)
           for name in os.listdir(package_dir)):
        return
    raise ImportError(
        f"fastblock's compiled engine (fastblock._engine) is missing from {package_dir}. "
        f"This looks like fastblock's source tree shadowing the installed package: Python "
        f"imports the 'fastblock' folder of the current directory (or of the first entries "
        f"of sys.path) before the installed one. Build the extensions in place with "
        f"'python -m pip install -e .' or 'python setup.py build_ext --inplace', "
        f"or run from another directory.")
