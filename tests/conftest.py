"""Shared fixtures for the fastblock test suite."""
import numpy as np
import pytest

import fastblock as fb


@pytest.fixture(autouse=True)
def _restore_num_threads():
    """Tests may change the default thread count; put it back afterwards."""
    before = fb.get_num_threads()
    yield
    fb.set_num_threads(before)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(params=["tables", "planes"])
def vect_c_path(request):
    """NCHW_VECT_C depth_first depth_to_space with bs*bs not a multiple of 4
    reads large results through tables and small ones through planes: run
    the test both ways, whatever its size."""
    from fastblock import _engine
    before = _engine.set_vect_c_rows_min_bytes(0 if request.param == "tables" else 1 << 62)
    yield request.param
    _engine.set_vect_c_rows_min_bytes(before)
