"""The DataLoader report (``python -m speed_reports --loader``,
``speed_reports/loader.py``) on small images, in this process: every way
of both sources runs, and its first batch passes the report's own check
against the contract's expression (bit for bit for fastblock's ways and
the bare work); a wrong batch is caught. Only the structure is checked
here, not the speeds."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from speed_reports import loader  # noqa: E402


@pytest.mark.parametrize("source", loader.SOURCES)
@pytest.mark.parametrize("workers", [0, 2])
def test_every_way_runs_and_is_checked(source, workers):
    rates = loader.measure(source, n=64, side=32, batch=16, workers=workers, rounds=1)
    want = set(loader.WAYS) - ({"bare"} if workers else set())
    assert set(rates) == want
    assert all(rate > 0 for rate in rates.values())


def test_a_wrong_batch_is_caught():
    pictures = loader._pictures(16, 8)
    wrong = loader._Bare(loader._Images(pictures, None, "bare"), 16)
    batch = next(iter(wrong))
    wrong.out[0, 0, 0, 0] = np.nextafter(wrong.out[0, 0, 0, 0], np.float32(9))
    with pytest.raises(AssertionError, match="bare"):
        loader._check("bare", [batch], pictures, False)
