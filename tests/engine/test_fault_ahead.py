"""Fresh destinations (``fastblock/_engine/kernels/faults.pxi``): before a kernel block
writes into memory that is not yet resident, the engine touches the last
byte of every huge page the block will write, by an atomic OR of zero.

Fresh memory here is an anonymous ``mmap``, none of whose pages is in memory
until written. Faulting ahead is switched on for copies of any size, so that
small copies take it too. Each destination ends at the mapping's last byte
(a touch past the destination's end would fault) and starts past sentinel
bytes, which must stay as they were. Every result is compared with the
documented formulas in NumPy or with ``np.tile``, on one thread and on three.
The block operators' cases are a seeded draw of the edges
(``draws.drawn``): every layout with every operator, mode, block size and
item type on every run, the rest sampled.
"""
from __future__ import annotations

import mmap
import sys

import numpy as np
import pytest

import fastblock as fb
from draws import drawn
from fastblock import _engine
from reference import batch_to_space_ref, depth_to_space_ref, space_to_batch_ref, space_to_depth_ref

pytestmark = pytest.mark.skipif(sys.platform == "win32",
                                reason="page residency is asked with mincore (Linux, macOS)")

OPS = {"space_to_depth": (fb.space_to_depth, space_to_depth_ref),
       "depth_to_space": (fb.depth_to_space, depth_to_space_ref)}
SENTINEL = 0xA5
HEAD = 100          # sentinel bytes before the destination


@pytest.fixture(autouse=True)
def fault_everything():
    with _engine.tune(fault_ahead=True, fault_ahead_min_bytes=0):
        yield


def _values(shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    raw = np.random.default_rng(sum(shape)).integers(0, 256, (*shape, dtype.itemsize), np.uint8)
    return raw.view(dtype).reshape(shape)


def _fresh_out(shape, dtype):
    """A C-contiguous ``shape`` array that ends at the last byte of a fresh
    anonymous mapping, after ``HEAD`` sentinel bytes; and the mapping."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    mapping = mmap.mmap(-1, HEAD + nbytes)
    whole = np.frombuffer(mapping, np.uint8)
    whole[:HEAD] = SENTINEL
    return whole[HEAD:].view(dtype).reshape(shape), whole


def _check_fresh(run, expected: np.ndarray) -> None:
    out, whole = _fresh_out(expected.shape, expected.dtype)
    flat = out.reshape(-1)
    # The destination's middle page is not in memory yet: the plan faults ahead.
    assert _engine.describe(flat.shape, flat.strides, flat.strides, flat.itemsize,
                            flat)["faults_ahead"]
    assert run(out) is out
    assert np.array_equal(out.view(np.uint8), np.ascontiguousarray(expected).view(np.uint8))
    assert (whole[:HEAD] == SENTINEL).all()


def test_plans_fault_ahead_only_into_fresh_memory_when_enabled():
    out, _ = _fresh_out((1 << 20,), np.uint8)
    args = (out.shape, out.strides, out.strides, 1)
    assert not _engine.describe(*args)["faults_ahead"]       # no destination to ask
    assert _engine.describe(*args, out)["faults_ahead"]
    _engine.tune(fault_ahead=True, fault_ahead_min_bytes=2 << 20)
    assert not _engine.describe(*args, out)["faults_ahead"]  # below the threshold
    _engine.tune(fault_ahead=False)
    assert not _engine.describe(*args, out)["faults_ahead"]
    _engine.tune(fault_ahead=True, fault_ahead_min_bytes=0)
    out[...] = 1
    assert not _engine.describe(*args, out)["faults_ahead"]  # now resident
    assert _engine.current_tuning()["fault_ahead_min_bytes"] == 0


def test_default_threshold_is_numpys_huge_page_threshold():
    _engine.tune(fault_ahead=True, fault_ahead_min_bytes=_engine.default_tuning()["fault_ahead_min_bytes"])
    small, _ = _fresh_out((4 << 20) - 4096, np.uint8)
    large, _ = _fresh_out(4 << 20, np.uint8)
    for out, expected in ((small, False), (large, True)):
        plan = _engine.describe(out.shape, out.strides, out.strides, 1, out)
        assert plan["faults_ahead"] is expected


@drawn(24, {"op_name": list(OPS), "bs": [2, 3], "mode": ["blocks_first", "depth_first"],
            "layout, channels": [("channels_first", 4), ("channels_last", 3),
                                 ("channels_last", 16)],
            "dtype": [np.uint8, np.float32], "num_threads": [1, 2, 3]},
       cover=[("op_name", "layout, channels"), ("mode", "layout, channels"),
              ("bs", "layout, channels"), ("dtype", "layout, channels"), ("num_threads",)])
def test_block_operators_into_fresh_pages(op_name, bs, mode, layout, channels, dtype,
                                          num_threads):
    op, ref = OPS[op_name]
    h, w = 13 * bs, 150 * bs
    space_shape = (2, channels, h, w) if layout == "channels_first" else (2, h, w, channels)
    space = _values(space_shape, dtype)
    x = space if op_name == "space_to_depth" else space_to_depth_ref(space, bs, mode, layout)
    _check_fresh(lambda out: op(x, bs, mode, layout, out=out, num_threads=num_threads),
                 ref(x, bs, mode, layout))


@pytest.mark.parametrize("num_threads", [1, 2, 3])
@pytest.mark.parametrize("bs", [2, 3])
@pytest.mark.parametrize("mode", ["blocks_first", "depth_first"])
@pytest.mark.parametrize("op_name", list(OPS))
def test_nchw_vect_c_into_fresh_pages(op_name, mode, bs, num_threads, vect_c_path):
    """Includes the depth_first paths in blocks of rows (tables, planes),
    whose plans are built over one block of the result."""
    op, ref = OPS[op_name]
    space = _values((2, bs * bs, 9 * bs, 40 * bs, 4), np.uint8)
    x = space if op_name == "space_to_depth" else space_to_depth_ref(space, bs, mode,
                                                                     "NCHW_VECT_C")
    _check_fresh(lambda out: op(x, bs, mode, "NCHW_VECT_C", out=out, num_threads=num_threads),
                 ref(x, bs, mode, "NCHW_VECT_C"))


@pytest.mark.parametrize("num_threads", [1, 2, 3])
def test_pages_of_rows_further_apart_than_a_huge_page(num_threads):
    """Rows 2.2 MB apart (a de-interleave of byte pairs) and a transpose
    whose destination rows cross huge pages."""
    pairs = _values((1_100_000, 2), np.uint8)
    _check_fresh(lambda out: fb.transpose(pairs, (1, 0), out=out, num_threads=num_threads),
                 pairs.T)
    square = _values((700, 900), np.float32)
    _check_fresh(lambda out: fb.transpose(square, (1, 0), out=out, num_threads=num_threads),
                 square.T)


@pytest.mark.parametrize("num_threads", [1, 2, 3])
@pytest.mark.parametrize("reps", [(1, 8), (8, 1), (3, 5)])
@pytest.mark.parametrize("dtype", [np.uint8, np.float64])
def test_tile_into_fresh_pages(reps, dtype, num_threads):
    x = _values((300, 700), dtype)
    _check_fresh(lambda out: fb.tile(x, reps, out=out, num_threads=num_threads),
                 np.tile(x, reps))


def test_fortran_order_source_into_fresh_pages():
    space = np.asfortranarray(_values((2, 8, 96, 320), np.float32))
    _check_fresh(lambda out: fb.space_to_depth(space, 4, out=out, num_threads=2),
                 space_to_depth_ref(space, 4))


@pytest.mark.parametrize("num_threads", [1, 2, 3])
def test_copies_in_parts_into_fresh_pages(num_threads):
    """space_to_batch and batch_to_space run plans whose one part writes at
    a destination offset: the pages past the plan's own span are faulted
    ahead too (the bound moves with the part)."""
    x = _values((2, 60, 100, 3), np.float32)
    block, begin, end = (1, 2, 5, 1), (0, 1, 0, 0), (0, 1, 0, 0)
    _check_fresh(lambda out: fb.space_to_batch(x, block, begin, end, out=out,
                                               num_threads=num_threads),
                 space_to_batch_ref(x, block, begin, end))
    batches = space_to_batch_ref(x, block, begin, end)
    _check_fresh(lambda out: fb.batch_to_space(batches, block, begin, end, out=out,
                                               num_threads=num_threads),
                 batch_to_space_ref(batches, block, begin, end))


@pytest.mark.parametrize("num_threads", [1, 2, 3])
def test_engine_copy_in_several_parts_into_fresh_pages(num_threads):
    """One plan run at two destination offsets (the engine's parts)."""
    src = _values((300, 1000), np.uint8)
    half = src.nbytes

    def run(out):
        _engine.copy(src, out, src.shape, src.strides, (1000, 1), parts=((0, 0), (0, half)),
                     num_threads=num_threads)
        return out

    _check_fresh(run, np.concatenate([src.reshape(-1), src.reshape(-1)]))
