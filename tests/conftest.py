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
