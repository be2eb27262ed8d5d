"""The message for an import of a fastblock source tree whose compiled
extensions are not built."""
from __future__ import annotations

import importlib.machinery
import os

# The extensions that exist only compiled (no .py beside them).
COMPILED_ONLY = ("_engine", "_memory", "_fastpath")


def raise_if_unbuilt(package_dir: str) -> None:
    """ImportError saying how to build the extensions, where ``package_dir``
    lacks one; nothing where all are built (their import failed for another
    reason, which the caller's own error then tells)."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    built = {name.partition(".")[0] for name in os.listdir(package_dir) if name.endswith(suffixes)}
    missing = [f"fastblock.{name}" for name in COMPILED_ONLY if name not in built]
    if not missing:
        return
    raise ImportError(
        f"fastblock's compiled engine is missing from {package_dir} "
        f"(not built: {', '.join(missing)}). "
        f"This looks like fastblock's source tree shadowing the installed package: Python "
        f"imports the 'fastblock' folder of the current directory (or of the first entries "
        f"of sys.path) before the installed one. Build the extensions in place with "
        f"'python -m pip install -e .' or 'python setup.py build_ext --inplace', "
        f"or run from another directory.")
