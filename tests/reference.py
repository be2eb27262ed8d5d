"""The tests' reference: the formulas of fastblock/_reference.py in plain
NumPy (kept in the package so the self-check, the benchmarks and the tests
use the very same code), and the check of a result against it."""
import numpy as np

from fastblock._reference import depth_to_space_ref, space_to_depth_ref

__all__ = ["space_to_depth_ref", "depth_to_space_ref", "assert_same_array"]


def assert_same_array(result, expected):
    """``result`` is a new C-contiguous ndarray equal to ``expected``: dtype, shape, items."""
    assert isinstance(result, np.ndarray)
    assert result.dtype == expected.dtype
    assert result.shape == expected.shape
    assert result.flags.c_contiguous
    np.testing.assert_array_equal(result, expected)
