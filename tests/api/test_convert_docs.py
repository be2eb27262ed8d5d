"""docs/convert.md's NumPy expression is the contract: run as written there,
it gives fastblock's results byte for byte."""
import os
import re
import warnings

import ml_dtypes
import numpy as np
import pytest

import fastblock as fb
from draws import SEED

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "convert.md")


def documented_rule():
    with open(DOC) as f:
        text = f.read()
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, re.S)
                 if "def fastblock_result" in b)
    scope = {}
    exec(block, scope)
    return scope["fastblock_result"]


@pytest.mark.parametrize("source", ["u1", "i2", "f2", "f4", "f8", ml_dtypes.bfloat16], ids=str)
@pytest.mark.parametrize("result", ["f2", "f4", "f8", "u1", "i1", ml_dtypes.bfloat16], ids=str)
def test_the_documented_rule_is_fastblocks(source, result):
    rule = documented_rule()
    rng = np.random.default_rng([SEED, 50])
    source = np.dtype(source)
    x = rng.integers(0, 256, (4, 5, 3 * source.itemsize), np.uint8).view(source)
    scale = np.array([0.5, -3.0, 1e-3], np.float64).reshape(3, 1, 1)
    for s, o in ((None, None), (scale, None), (None, 2.5), (scale, scale * 100)):
        got = fb.transpose(x, (2, 0, 1), dtype=result, scale=s, offset=o)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = rule(np.transpose(x, (2, 0, 1)), result, s, o)
        assert np.array_equal(got.view(np.uint8), np.ascontiguousarray(want).view(np.uint8))
