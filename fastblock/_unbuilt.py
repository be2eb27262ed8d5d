"""The message for an import of a fastblock source tree whose compiled
extensions are not built."""
from __future__ import annotations

import importlib.machinery
import os

# The extensions that exist only compiled (no .py beside them), by path
# under the package.
COMPILED_ONLY = ("_engine/core", "_call/memory", "_call/fastpath")


def _is_built(package_dir: str, name: str) -> bool:
    """Whether the compiled module ``name`` (a path under the package) is there."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    folder, module = os.path.split(os.path.join(package_dir, *name.split("/")))
    return os.path.isdir(folder) and any(
        entry.partition(".")[0] == module and entry.endswith(suffixes) for entry in os.listdir(folder))


def raise_if_unbuilt(package_dir: str) -> None:
    """ImportError saying how to build the extensions, where ``package_dir``
    lacks one; nothing where all are built (their import failed for another
    reason, which the caller's own error then tells)."""
    missing = [f"fastblock.{name.replace('/', '.')}" for name in COMPILED_ONLY
               if not _is_built(package_dir, name)]
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
