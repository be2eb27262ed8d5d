"""fastblock's NumPy reference (``fastblock/_reference.py``) and timing
helpers (``fastblock/_timing.py``), loaded from this source tree's files
rather than imported from the fastblock on ``sys.path``.

They import only NumPy, so the reports and the asv suite share the package's
one copy of each and still measure any build: an older one placed first on
``sys.path``, or a commit that asv installed from before these modules.
"""
import importlib.util
import pathlib
import sys

PACKAGE_SOURCE = pathlib.Path(__file__).resolve().parents[1] / "fastblock"


def _load(name: str):
    module_name = f"fastblock_source_{name.lstrip('_')}"
    if module_name not in sys.modules:
        spec = importlib.util.spec_from_file_location(module_name, PACKAGE_SOURCE / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    return sys.modules[module_name]


reference = _load("_reference")
timing = _load("_timing")
