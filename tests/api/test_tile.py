"""fastblock.tile against numpy.tile."""
import numpy as np
import pytest

import fastblock as fb
from reference import assert_same_array


def _check(result, x, repeats):
    assert_same_array(result, np.tile(x, repeats))
    # always a new array
    assert result is not x
    assert not np.shares_memory(result, x)


CASES = [
    # (shape of x, repeats)
    ((3,), 2),
    ((3,), (2,)),
    ((3,), (1,)),
    ((3,), (2, 3)),          # repeats longer: x promoted with a leading axis
    ((3,), (2, 1, 3)),
    ((2, 3), 3),             # repeats shorter: padded with leading ones
    ((2, 3), (2,)),
    ((2, 3), (2, 2)),
    ((2, 3), (1, 4)),
    ((2, 3), (3, 1)),
    ((2, 3, 4), (2, 1, 2)),
    ((2, 3, 4), (3,)),
    ((2, 3, 4), (2, 2, 1, 3)),
    ((1, 1, 1), (4, 3, 2)),
    ((4, 1, 3), (1, 5, 1)),
    ((2, 1, 2, 1, 2), (1, 2, 1, 2, 1, 2)),
    ((5, 7), (7, 5)),
    ((1,), (1000,)),
    ((64, 3), (1, 50)),
]


@pytest.mark.parametrize("shape,repeats", CASES)
def test_matches_numpy_tile(shape, repeats):
    x = np.arange(np.prod(shape), dtype=np.int32).reshape(shape)
    _check(fb.tile(x, repeats), x, repeats)


ZERO_CASES = [
    ((3,), 0),
    ((3,), (0,)),
    ((2, 3), (0, 1)),
    ((2, 3), (1, 0)),
    ((2, 3), (2, 0, 3)),
    ((2, 3), (0, 2, 3)),
    ((0,), 3),
    ((0, 3), (2, 2)),
    ((2, 0, 3), (2, 2, 2)),
    ((2, 0, 3), (1,)),
    ((0,), (0,)),
]


@pytest.mark.parametrize("shape,repeats", ZERO_CASES)
def test_zeros_in_repeats_and_zero_size_x(shape, repeats):
    x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    _check(fb.tile(x, repeats), x, repeats)


def _zero_dim(kind):
    if kind == "StringDType":
        if not hasattr(np.dtypes, "StringDType"):
            pytest.skip("NumPy without StringDType")
        return np.array("seven", dtype=np.dtypes.StringDType())
    if kind == "object":
        return np.array("seven", dtype=object)
    return np.array("seven" if kind == "U" else 7.5, dtype=kind)


@pytest.mark.parametrize("kind", ["f8", "U", "object", "StringDType"])
@pytest.mark.parametrize("repeats", [0, 1, 3, (), (2,), (2, 3), (0, 2), (1, 1, 1)])
def test_zero_dim_x(repeats, kind):
    x = _zero_dim(kind)
    got = fb.tile(x, repeats)
    expected = np.tile(x, repeats)
    assert isinstance(got, np.ndarray)
    assert got.dtype == x.dtype
    assert got.shape == expected.shape
    assert got.tolist() == expected.tolist()
    assert not np.shares_memory(got, x)


def test_python_scalar_and_list_inputs():
    _check(fb.tile(5, 3), 5, 3)
    _check(fb.tile([[1, 2], [3, 4]], (2, 3)), np.array([[1, 2], [3, 4]]), (2, 3))


INT_TYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
             np.uint64, np.intp, np.uintp]


@pytest.mark.parametrize("shape,repeats", [
    ((0,), 2 ** 62),
    ((0, 3), (2 ** 63 - 1, 2)),
    ((0,), 2 ** 70),                                  # entries have no upper bound
    ((0, 3), (2 ** 64, 2)),
    ((0, 3), np.array([2 ** 63, 2], dtype=np.uint64)),
])
def test_huge_repeats_of_zero_size_x(shape, repeats):
    """A zero-size x with a huge repeat gives an empty result, as numpy.tile does
    (no element count overflows: it is 0)."""
    x = np.zeros(shape, dtype=np.float32)
    _check(fb.tile(x, repeats), x, repeats)


@pytest.mark.parametrize("int_type", INT_TYPES)
def test_numpy_integer_scalar_repeats(int_type):
    x = np.arange(6).reshape(2, 3)
    _check(fb.tile(x, int_type(3)), x, 3)


@pytest.mark.parametrize("int_type", INT_TYPES)
def test_sequence_of_numpy_integers(int_type):
    x = np.arange(6).reshape(2, 3)
    reps = [int_type(2), int_type(3)]
    _check(fb.tile(x, reps), x, (2, 3))
    _check(fb.tile(x, tuple(reps)), x, (2, 3))


@pytest.mark.parametrize("int_type", INT_TYPES)
@pytest.mark.parametrize("reps", [(2, 3), (3,), (1, 2, 2), (0, 4), (1, 1)])
def test_integer_array_repeats(int_type, reps):
    x = np.arange(6).reshape(2, 3)
    arr = np.array(reps, dtype=int_type)
    _check(fb.tile(x, arr), x, reps)


@pytest.mark.parametrize("container", [list, tuple])
@pytest.mark.parametrize("reps", [(2, 3), (3,), (1, 2, 2), (4, 0)])
def test_list_and_tuple_repeats(container, reps):
    x = np.arange(6, dtype=np.uint8).reshape(2, 3)
    _check(fb.tile(x, container(reps)), x, reps)


def test_non_contiguous_integer_array_repeats():
    x = np.arange(6).reshape(2, 3)
    arr = np.array([9, 2, 9, 3], dtype=np.int64)[1::2]
    _check(fb.tile(x, arr), x, (2, 3))


@pytest.mark.parametrize("empty", [(), [], np.array([], dtype=np.int64)])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 0)])
def test_empty_repeats(shape, empty):
    x = np.arange(int(np.prod(shape)), dtype=np.int16).reshape(shape)
    _check(fb.tile(x, empty), x, ())


@pytest.mark.parametrize("repeats", [1, (1,), (1, 1), (1, 1, 1), (), np.ones(2, np.int32)])
@pytest.mark.parametrize("shape", [(), (4,), (2, 3), (0, 3), (2, 0)])
def test_all_ones_gives_a_new_array(shape, repeats):
    """Unlike numpy.tile, the result is always a new array."""
    x = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    keep = x.copy()
    y = fb.tile(x, repeats)
    _check(y, x, repeats)
    if y.size:
        y[...] = -1
        np.testing.assert_array_equal(x, keep)


@pytest.mark.parametrize("repeats", [(2, 3), (1, 1), (3, 1, 2)])
def test_strided_and_reversed_x(repeats):
    base = np.arange(60, dtype=np.int64).reshape(6, 10)
    for x in (base[::2, 1::3], base[::-1, ::-2], base.T, np.asfortranarray(base)[1:, 2:]):
        _check(fb.tile(x, repeats), x, repeats)


def test_many_axes():
    x = np.arange(6, dtype=np.int16).reshape((1,) * 38 + (2, 3))
    for repeats in [(1,) * 60 + (2, 1, 2, 2), (2,) + (1,) * 39, 3, (1,) * 64]:
        _check(fb.tile(x, repeats), x, repeats)


def test_broadcast_zero_stride_x():
    x = np.broadcast_to(np.arange(3, dtype=np.int32), (4, 3))
    _check(fb.tile(x, (2, 2)), x, (2, 2))
