"""The helpers behind the machine floors of the speed targets report
(``speed_reports/machine.py``): the plain copies that target 1's two
readings and target 2 are measured against."""
import numpy as np
import pytest

from speed_reports import machine


@pytest.mark.parametrize("nbytes", [1, 2, 4097, 1 << 20])
def test_two_thread_copy_copies_every_byte(nbytes):
    rng = np.random.default_rng(nbytes)
    src = rng.integers(0, 256, nbytes, dtype=np.uint8)
    dst = np.zeros(nbytes + 2, np.uint8)  # a sentinel byte on each side
    machine.two_thread_copy(dst[1:-1], src)
    assert np.array_equal(dst[1:-1], src)
    assert dst[0] == 0 and dst[-1] == 0


def test_machine_floors_are_positive_ratios():
    floors = machine.machine_floors(1 << 16, rounds=1)
    assert set(floors) == {"two_thread_copy", "fastblock_copy", "fresh_copy"}
    assert all(np.isfinite(v) and v > 0 for v in floors.values())


def test_cpu_name_is_the_processor_model():
    name = machine.cpu_name()
    assert isinstance(name, str) and name.strip() == name and name
    try:
        with open("/proc/cpuinfo") as info:
            models = [line.split(":", 1)[1].strip() for line in info
                      if line.startswith("model name")]
    except OSError:
        models = []
    if models:
        assert name.startswith(models[0])


def _smaps(*mappings):
    """/proc/self/smaps text: (start, end, AnonHugePages in KiB) a mapping."""
    lines = []
    for start, end, huge_kib in mappings:
        lines += [f"{start:x}-{end:x} rw-p 00000000 00:00 0 ", f"Size: {(end - start) // 1024} kB",
                  "Rss:                 108 kB", f"AnonHugePages:  {huge_kib} kB", "VmFlags: rd wr mr mw me ac hg"]
    return "\n".join(lines) + "\n"


def test_huge_page_share_counts_the_mappings_that_hold_the_array():
    x = np.zeros(8 << 20, np.uint8)
    low = x.__array_interface__["data"][0]
    page = 1 << 21
    # Mappings before, across the start, inside, across the end, after.
    text = _smaps((low - 3 * page, low - page, 4096), (low - page, low + page, 2048),
                  (low + page, low + 3 * page, 4096), (low + 3 * page, low + 5 * page, 1024),
                  (low + 5 * page, low + 9 * page, 8192))
    assert machine.huge_page_share(x, text) == (2048 + 4096 + 1024) * 1024 / x.nbytes
    assert machine.huge_page_share(x, _smaps((low, low + x.nbytes, 0))) == 0.0
    # Never more than the whole array, even when its mapping holds more.
    assert machine.huge_page_share(x, _smaps((low - page, low + 8 * page, 16384))) == 1.0
    assert machine.huge_page_share(x, "") == 0.0


def test_huge_page_share_of_this_process():
    x = np.ones(8 << 20, np.uint8)
    share = machine.huge_page_share(x)
    try:
        open("/proc/self/smaps").close()
    except OSError:
        assert share is None
    else:
        assert 0.0 <= share <= 1.0
