"""The README's Python examples run, and the shapes its comments state are
the shapes they produce."""
import pathlib
import re

import numpy as np

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def _python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def _stated_shapes(block):
    """(expression, shape) for each top-level line ``expr.shape  # (a, b, ...)``
    (indented lines sit in code that does not run here)."""
    for line in block.splitlines():
        match = re.match(r"^(?P<expr>[^\s#=][^#=]*?)\s*#\s*(?P<shape>\([\d, ]+\))", line)
        if match and ".shape" in match["expr"]:
            yield match["expr"].strip(), eval(match["shape"])


def test_readme_examples_run_and_state_true_shapes():
    # The blocks read as one session: later ones use names from earlier ones.
    # The Dask example's cluster sits under `if __name__ == "__main__"`, so
    # it is not started here (tests/api/test_dask.py runs a LocalCluster).
    namespace = {"__name__": "readme_example"}
    for index, block in enumerate(_python_blocks()):
        exec(compile(block, f"README block {index}", "exec"), namespace)
        for expression, shape in _stated_shapes(block):
            assert eval(expression, namespace) == shape, expression


def test_readme_has_examples_with_shapes():
    assert len(_python_blocks()) >= 2
    assert sum(len(list(_stated_shapes(b))) for b in _python_blocks()) >= 6
    assert np.__version__  # the examples ran against this NumPy
