"""The engine's own checks of what its callers hand it (``_engine.copy`` and
``_engine.describe``): the front doors never pass such arguments, so only
these tests reach them."""
import numpy as np
import pytest

from fastblock import _engine


def test_copy_refuses_more_axes_than_it_can_hold():
    x = np.zeros(4, np.uint8)
    n = 200
    with pytest.raises(ValueError, match="axes in one copy"):
        _engine.copy(x, x.copy(), (1,) * n, (0,) * n, (0,) * n)


def test_copy_refuses_strides_of_another_length():
    x = np.zeros(4, np.uint8)
    with pytest.raises(ValueError, match="differ in length"):
        _engine.copy(x, x.copy(), (4,), (1, 1), (1,))


def test_copy_refuses_item_sizes_that_differ():
    with pytest.raises(ValueError, match="item sizes differ"):
        _engine.copy(np.zeros(4, np.uint8), np.zeros(4, np.uint16), (4,), (1,), (2,))


def test_copy_of_an_empty_extent_writes_nothing():
    dst = np.full(4, 7, np.uint8)
    _engine.copy(np.zeros(4, np.uint8), dst, (4, 0), (1, 1), (1, 1))
    assert (dst == 7).all()


def test_describe_refuses_strides_of_another_length():
    with pytest.raises(ValueError, match="differ in length"):
        _engine.describe((4,), (1, 1), (1,), 1)


def test_describe_of_an_empty_copy_is_none():
    assert _engine.describe((3, 0), (1, 1), (1, 1), 1) is None
