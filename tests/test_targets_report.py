"""The helpers behind the machine floors of ``python -m fastblock --full``
(``fastblock._targets``): the plain copies that target 1's two readings and
target 2 are measured against."""
import numpy as np
import pytest

from fastblock import _targets


@pytest.mark.parametrize("nbytes", [1, 2, 4097, 1 << 20])
def test_two_thread_copy_copies_every_byte(nbytes):
    rng = np.random.default_rng(nbytes)
    src = rng.integers(0, 256, nbytes, dtype=np.uint8)
    dst = np.zeros(nbytes + 2, np.uint8)  # a sentinel byte on each side
    _targets.two_thread_copy(dst[1:-1], src)
    assert np.array_equal(dst[1:-1], src)
    assert dst[0] == 0 and dst[-1] == 0


def test_machine_floors_are_positive_ratios():
    floors = _targets.machine_floors(1 << 16, rounds=1)
    assert set(floors) == {"two_thread_copy", "fastblock_copy", "fresh_copy"}
    assert all(np.isfinite(v) and v > 0 for v in floors.values())


def test_cpu_name_is_the_processor_model():
    name = _targets.cpu_name()
    assert isinstance(name, str) and name.strip() == name and name
    try:
        with open("/proc/cpuinfo") as info:
            models = [line.split(":", 1)[1].strip() for line in info
                      if line.startswith("model name")]
    except OSError:
        models = []
    if models:
        assert name.startswith(models[0])
