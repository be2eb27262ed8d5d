"""The tests' reference: the formulas of fastblock/_reference.py in plain
NumPy (kept in the package so the self-check, the benchmarks and the tests
use the very same code), OpenVINO's SpaceToBatch and BatchToSpace as their
specification writes them, and the check of a result against it."""
import numpy as np

from fastblock._reference import converted_ref, depth_to_space_ref, space_to_depth_ref

__all__ = ["space_to_depth_ref", "depth_to_space_ref", "space_to_batch_ref", "batch_to_space_ref",
           "assert_same_array", "converted_ref"]


def assert_same_array(result, expected):
    """``result`` is a new C-contiguous ndarray equal to ``expected``: dtype, shape, items."""
    assert isinstance(result, np.ndarray)
    assert result.dtype == expected.dtype
    assert result.shape == expected.shape
    assert result.flags.c_contiguous
    np.testing.assert_array_equal(result, expected)


def space_to_batch_ref(x, block_shape, pads_begin, pads_end):
    """OpenVINO SpaceToBatch-2, as its specification writes it: pad with the
    dtype's zero (``np.zeros`` of the dtype: 0, b"", "", None), split every
    axis into (grid, block), move the blocks in front of the batch."""
    x = np.asarray(x)
    padded = [b + d + e for b, d, e in zip(pads_begin, x.shape, pads_end)]
    xp = np.zeros(padded, x.dtype)
    xp[tuple(slice(b, b + d) for b, d in zip(pads_begin, x.shape))] = x
    k = x.ndim - 1
    grid = [padded[i + 1] // block_shape[i + 1] for i in range(k)]
    split = [padded[0]]
    for i in range(k):
        split += [grid[i], block_shape[i + 1]]
    order = [2 + 2 * i for i in range(k)] + [0] + [1 + 2 * i for i in range(k)]
    y = xp.reshape(split).transpose(order)
    return np.ascontiguousarray(y.reshape([padded[0] * int(np.prod(block_shape))] + grid))


def batch_to_space_ref(x, block_shape, crops_begin, crops_end):
    """OpenVINO BatchToSpace-2, as its specification writes it."""
    x = np.asarray(x)
    k = x.ndim - 1
    batch = x.shape[0] // int(np.prod(block_shape))
    y = x.reshape(list(block_shape[1:]) + [batch] + list(x.shape[1:]))
    order = [k]
    for i in range(k):
        order += [k + 1 + i, i]
    y = y.transpose(order).reshape([batch] + [x.shape[i + 1] * block_shape[i + 1] for i in range(k)])
    crop = tuple([slice(None)] + [slice(crops_begin[i + 1], y.shape[i + 1] - crops_end[i + 1])
                                  for i in range(k)])
    return np.ascontiguousarray(y[crop])

