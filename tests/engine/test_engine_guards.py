"""The engine's own checks of what its callers hand it (``_engine.copy`` and
``_engine.describe``): the front doors never pass such arguments, so only
these tests reach them."""
import numpy as np
import pytest

from fastblock import _engine
from fastblock._call import fastpath as _fastpath


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


def test_copy_program_refuses_item_sizes_that_differ():
    with pytest.raises(ValueError, match="item sizes differ"):
        _engine.CopyProgram([((4,), (1,), (2,), ((0, 0),), False)], np.zeros(4, np.uint8),
                            np.zeros(4, np.uint16))


@pytest.mark.parametrize("extents, src_strides, dst_strides", [
    ((1,) * 200, (0,) * 200, (0,) * 200),       # more axes than a copy holds
    ((4,), (1, 1), (1,)),                       # strides of another length
])
def test_copy_program_refuses_axes_it_cannot_hold(extents, src_strides, dst_strides):
    x = np.zeros(4, np.uint8)
    stored = _engine.stored_plan_count()
    with pytest.raises(ValueError, match="axes in one copy"):
        _engine.CopyProgram([((4,), (1,), (1,), ((0, 0),), False),
                             (extents, src_strides, dst_strides, ((0, 0),), False)], x, x.copy())
    assert _engine.stored_plan_count() == stored       # the first copy's plan is freed again


def test_copy_program_stores_no_plan_for_empty_copies():
    # A copy with an empty extent or no parts; the third stores its plan
    # (the fast path's cache, cleared, holds none of the plans' limit).
    _fastpath.clear()
    x = np.arange(4, dtype=np.uint8)
    stored = _engine.stored_plan_count()
    program = _engine.CopyProgram([((4, 0), (1, 1), (1, 1), ((0, 0),), False),
                                   ((4,), (1,), (1,), (), False),
                                   ((4,), (1,), (1,), ((0, 0),), False)], x, x.copy())
    assert _engine.stored_plan_count() == stored + 1
    del program
    assert _engine.stored_plan_count() == stored


def test_copy_in_no_parts_writes_nothing():
    dst = np.full(4, 7, np.uint8)
    _engine.copy(np.zeros(4, np.uint8), dst, (4,), (1,), (1,), parts=())
    assert (dst == 7).all()


def test_space_depth_copy_refuses_arrays_that_do_not_match_n_batch():
    space = np.zeros((1, 4, 4, 4), np.uint8)
    with pytest.raises(ValueError, match="do not match n_batch"):
        _engine.space_depth_copy(space, np.zeros((1, 16, 2), np.uint8), 0, 2, False, True)


def test_space_depth_copy_of_an_empty_space_returns_at_once():
    depth = np.zeros((0, 16, 2, 2), np.uint8)
    assert _engine.space_depth_copy(np.zeros((0, 4, 4, 4), np.uint8), depth, 0, 2, False,
                                    True) is None


def test_tile_refuses_more_axes_than_a_copy_holds():
    x = np.zeros(2, np.uint8)
    with pytest.raises(ValueError, match="tile over 70 axes"):
        _engine.tile_copy(x, x.copy(), (1,) * 70)
