"""A fresh result copied on two threads: the calling thread takes the page
faults for both, ahead of the other (``run_units`` in
``fastblock/_engine/run/schedule.pxi``).

Results are compared with the documented formulas in NumPy and with ``np.tile``
under settings that reach every branch of the hand-over: units far smaller
than the copy with the whole copy promised up front (the other thread
always waits for the calling thread's faults), with no lead (the other
thread runs past the promise and faults for itself), and switched off. On
Linux with transparent huge pages, the threads' own fault counts
(``/proc/self/task/*/stat``) show who faulted.
"""
from __future__ import annotations

import mmap
import os
import sys
import threading

import numpy as np
import pytest

import fastblock as fb
from fastblock import _engine
from reference import depth_to_space_ref, space_to_depth_ref
from speed_reports.machine import huge_page_share
from test_fault_ahead import _check_fresh, _values

pytestmark = pytest.mark.skipif(sys.platform == "win32",
                                reason="page residency is asked with mincore (Linux, macOS)")

HUGE_PAGE = 2 << 20

# (enabled, unit bytes, lead bytes)
SETTINGS = {"all promised": (True, 4096, 1 << 40),
            "no lead": (True, 4096, 0),
            "defaults": (True, 512 * 1024, 4 << 20),
            "off": (False, 512 * 1024, 4 << 20)}


@pytest.fixture(params=list(SETTINGS))
def caller_faults(request):
    enabled, unit_bytes, lead_bytes = SETTINGS[request.param]
    with _engine.tune(fault_ahead=True, fault_ahead_min_bytes=0, caller_faults=enabled,
                      fault_unit_bytes=unit_bytes, fault_lead_bytes=lead_bytes):
        yield request.param


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
@pytest.mark.parametrize("layout, channels", [("channels_first", 4), ("channels_last", 3)])
@pytest.mark.parametrize("op_name", ["space_to_depth", "depth_to_space"])
def test_block_operators(op_name, layout, channels, dtype, caller_faults):
    bs = 2
    space_shape = (2, channels, 40, 600) if layout == "channels_first" else (2, 40, 600, channels)
    space = _values(space_shape, dtype)
    if op_name == "space_to_depth":
        x, op, ref = space, fb.space_to_depth, space_to_depth_ref
    else:
        x = space_to_depth_ref(space, bs, "depth_first", layout)
        op, ref = fb.depth_to_space, depth_to_space_ref
    for _ in range(3):      # the hand-over races differently each time
        _check_fresh(lambda out: op(x, bs, "depth_first", layout, out=out, num_threads=2),
                     ref(x, bs, "depth_first", layout))


@pytest.mark.parametrize("op_name", ["space_to_depth", "depth_to_space"])
def test_nchw_vect_c_blocks_of_rows(op_name, caller_faults, vect_c_path):
    """The depth_first bs 3 paths whose units are blocks of rows (tables,
    planes)."""
    bs = 3
    space = _values((2, bs * bs, 12 * bs, 40 * bs, 4), np.uint8)
    if op_name == "space_to_depth":
        x, op, ref = space, fb.space_to_depth, space_to_depth_ref
    else:
        x = space_to_depth_ref(space, bs, "depth_first", "NCHW_VECT_C")
        op, ref = fb.depth_to_space, depth_to_space_ref
    for _ in range(3):
        _check_fresh(lambda out: op(x, bs, "depth_first", "NCHW_VECT_C", out=out, num_threads=2),
                     ref(x, bs, "depth_first", "NCHW_VECT_C"))


@pytest.mark.parametrize("reps", [(1, 8), (8, 1)])
def test_tile(reps, caller_faults):
    x = _values((300, 700), np.uint8)
    _check_fresh(lambda out: fb.tile(x, reps, out=out, num_threads=2), np.tile(x, reps))


def test_setting_round_trips():
    def settings():
        now = _engine.current_tuning()
        return now["caller_faults"], now["fault_unit_bytes"], now["fault_lead_bytes"]
    defaults = settings()
    with _engine.tune(caller_faults=False, fault_unit_bytes=1234, fault_lead_bytes=5678):
        with _engine.tune(caller_faults=True, fault_unit_bytes=0, fault_lead_bytes=0) as change:
            assert (change.before["caller_faults"], change.before["fault_unit_bytes"],
                    change.before["fault_lead_bytes"]) == (False, 1234, 5678)
            assert settings() == (True, 1, 0)   # units of at least a byte
        assert settings() == (False, 1234, 5678)
    assert settings() == defaults


def _minor_faults() -> dict:
    """Minor page faults so far of each thread of this process."""
    counts = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue            # a thread that ended meanwhile
        counts[int(tid)] = int(fields[7])     # minflt, the stat file's tenth field
    return counts


def _huge_page_destination(nbytes: int):
    """A fresh, huge-page aligned ``nbytes`` destination that asks for
    transparent huge pages; and its mapping (keep it alive)."""
    # Private: a shared anonymous mapping gets no huge pages under "madvise".
    mapping = mmap.mmap(-1, nbytes + HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    whole = np.frombuffer(mapping, np.uint8)
    start = -whole.ctypes.data % HUGE_PAGE
    mapping.madvise(mmap.MADV_HUGEPAGE, start, nbytes)
    return whole[start:start + nbytes], mapping


@pytest.mark.skipif(not sys.platform.startswith("linux") or not hasattr(mmap, "MADV_HUGEPAGE"),
                    reason="per-thread fault counts and huge pages as Linux gives them")
@pytest.mark.skipif(bool(os.environ.get("FASTBLOCK_UNDER_ASAN")),
                    reason="under ASan every writing thread faults its shadow memory's pages")
@pytest.mark.parametrize("enabled", [True, False])
def test_calling_thread_takes_the_faults(enabled):
    pages = 8
    space = _values((1, 16, 1024, pages * HUGE_PAGE // 16 // 1024), np.uint8)
    change = _engine.tune(fault_ahead=True,
                          fault_ahead_min_bytes=_engine.default_tuning()["fault_ahead_min_bytes"],
                          caller_faults=enabled, fault_unit_bytes=512 * 1024,
                          fault_lead_bytes=1 << 40, adaptive_teams=False)
    with change:
        # Warm up: the threads' stacks and the thread team.
        warm = np.empty(space.nbytes, np.uint8).reshape(1, 64, 512, -1)
        fb.space_to_depth(space, 2, out=warm, num_threads=2)
        # Three tries: on a loaded machine the helper may come after the
        # caller has taken every unit (and so faulted every page) itself.
        for _ in range(3):
            dst, mapping = _huge_page_destination(space.nbytes)
            out = dst.reshape(warm.shape)
            start = _minor_faults()
            fb.space_to_depth(space, 2, out=out, num_threads=2)
            end = _minor_faults()
            share = huge_page_share(dst)
            if share is None or share < 1:
                pytest.skip(f"the kernel gave {share} of the destination in huge pages")
            assert np.array_equal(out, space_to_depth_ref(space, 2))
            caller = threading.get_native_id()
            mine = end[caller] - start[caller]
            others = sum(end[t] - start.get(t, 0) for t in end if t != caller)
            if enabled:
                assert mine >= pages and others == 0, (mine, others)
                return
            if others > 0:
                return
        pytest.fail(f"the helper faulted no page in three tries ({mine}, {others})")
