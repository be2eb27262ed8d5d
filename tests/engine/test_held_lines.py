"""Streamed spans that hold their partial last line for the span that
continues them (``stream_span`` in ``fastblock/_engine/kernels/stream.pxi``).

A streamed block whose destination span ends mid-line keeps that line's
bytes back until the next block, which continues the span, completes the
line and streams it whole; a held line that no span continues (the end of
a plane, a thread's last block) is written by ordinary stores. Here
streaming is on for copies of any size, the results start 0 to 63 bytes
past a line (NumPy's own results start 16 bytes past one) or end where
readable memory ends, sources sit against inaccessible pages, and every
byte is compared with NumPy's. The cases reach each streamed path that
holds lines: lane splits of up to HELD_SPANS spans and of more (which do
not hold), lane interleaves, gathered runs streamed in chunks, block
kernels from a contiguous source, and spans split among 1 to 3 threads.
The operators' cases are a seeded draw of the edges (``draws.drawn``):
each of BLOCK_CASES, and every thread count at every place, on every run;
the rest sampled.
"""
import sys

import numpy as np
import pytest

import fastblock as fb
from draws import drawn
from fastblock import _engine
from guarded import Guarded
from reference import depth_to_space_ref, space_to_depth_ref

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mprotect through ctypes"),
    pytest.mark.skipif(not _engine.cpu_features()["streaming_stores"],
                       reason="this build has no streaming stores"),
]

SENTINEL = 0xA5
# Where the result starts: bytes past a page (so past a line), or "end":
# its last byte is the last readable one.
PLACES = [0, 16, 40, 63, "end"]


@pytest.fixture(autouse=True)
def stream_everything():
    with _engine.tune(streaming=True, stream_min_bytes=0, shuffle_min_bytes=0):
        yield


def _values(shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    raw = np.random.default_rng(sum(shape)).integers(0, 256, (*shape, dtype.itemsize), np.uint8)
    return raw.view(dtype).reshape(shape)


def _guarded_copy(x: np.ndarray):
    """``x`` in memory that ends at an inaccessible page, and its holder."""
    holder = Guarded(x.nbytes, True)
    stored = holder.array(x.shape, x.dtype)
    stored[...] = x
    return stored, holder


def _guarded_out(shape, dtype, place):
    """A sentinel-filled (so resident) result placed as ``place`` says, the
    bytes before it in its page, and their holder."""
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    lead = 0 if place == "end" else place
    holder = Guarded(nbytes + lead, place == "end")
    holder.bytes[...] = SENTINEL
    return holder.bytes[lead:].view(dtype).reshape(shape), holder.bytes[:lead], holder


def _check(run, expected: np.ndarray, place) -> None:
    out, before, holder = _guarded_out(expected.shape, expected.dtype, place)
    assert run(out) is out
    assert np.array_equal(out.view(np.uint8), expected.view(np.uint8))
    assert (before == SENTINEL).all()


def _space_depth_plan(space, depth, bs, to_depth, layout=0) -> dict:
    out = depth if to_depth else space
    return _engine.describe(*_engine.space_depth_axes(space, depth, layout, bs, False, to_depth),
                            space.itemsize, dst_array=out)


# (op, space shape, dtype, bs, layout, the kernel its plan takes, lanes).
# SpaceToDepth channels-first splits bs x bs planes: 16 spans held at bs 4
# (rows of 96 or 48 bytes, blocks ending mid-line), 64 at bs 8 (more than
# are held). DepthToSpace channels-first at bs 4 interleaves lanes into
# rows of one span; channels-last uint8 gathers runs in chunks.
BLOCK_CASES = [
    ("space_to_depth", (2, 8, 128, 96), np.float32, 4, "channels_first", "lanes", 4),
    ("space_to_depth", (2, 8, 128, 192), np.uint8, 4, "channels_first", "lanes", 4),
    ("space_to_depth", (2, 8, 128, 96), np.float64, 4, "channels_first", "lanes", 4),
    ("space_to_depth", (2, 2, 128, 256), np.float32, 8, "channels_first", "lanes", 8),
    ("space_to_depth", (2, 8, 64, 200), np.float16, 2, "channels_first", "lanes", 2),
    ("depth_to_space", (2, 8, 64, 192), np.uint8, 4, "channels_first", "lanes", 4),
    ("depth_to_space", (2, 8, 64, 200), np.float32, 2, "channels_first", "block", 0),
    ("space_to_depth", (2, 64, 200, 3), np.uint8, 2, "channels_last", "gather", 0),
    ("depth_to_space", (2, 64, 200, 3), np.uint8, 2, "channels_last", "gather", 0),
]
BLOCK_AXES = "op_name, shape, dtype, bs, layout, kernel, lanes"   # BLOCK_CASES' columns


@drawn(24, {BLOCK_AXES: BLOCK_CASES}, num_threads=[1, 2, 3], place=PLACES,
       cover=[(BLOCK_AXES,), ("num_threads", "place")])
def test_block_operators_hold_lines(op_name, shape, dtype, bs, layout, kernel, lanes,
                                    num_threads, place):
    space = _values(shape, dtype)
    depth = space_to_depth_ref(space, bs, "blocks_first", layout)
    to_depth = op_name == "space_to_depth"
    x, source = _guarded_copy(space if to_depth else depth)
    expected = depth if to_depth else space
    out, _, holder = _guarded_out(expected.shape, dtype, place)
    plan = _space_depth_plan(x if to_depth else out, out if to_depth else x, bs, to_depth,
                             0 if layout == "channels_first" else 1)
    assert plan["streams"] and plan["kernel"] == kernel and plan["lanes"] == lanes, plan
    op = getattr(fb, op_name)
    _check(lambda out: op(x, bs, "blocks_first", layout, out=out, num_threads=num_threads),
           expected, place)
    if not to_depth:
        assert np.array_equal(expected.view(np.uint8),
                              depth_to_space_ref(depth, bs, "blocks_first", layout).view(np.uint8))


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("num_threads", [1, 3])
@pytest.mark.parametrize("shape, axes, dtype, kernel", [
    ((50, 3, 700), (1, 0, 2), np.float32, "block"),      # rows contiguous on both sides
    ((40, 2, 90, 2, 3), (0, 2, 4, 1, 3), np.uint8, "gather"),
    ((300, 200), (1, 0), np.float32, "transpose"),
])
def test_engine_kernels_hold_lines(shape, axes, dtype, kernel, num_threads, place):
    x, source = _guarded_copy(_values(shape, dtype))
    view = x.transpose(axes)
    expected = np.ascontiguousarray(view)
    out, _, holder = _guarded_out(expected.shape, dtype, place)
    plan = _engine.describe(view.shape, view.strides, out.strides, x.itemsize, dst_array=out)
    assert plan["streams"] and plan["kernel"] == kernel, plan
    _check(lambda out: fb.transpose(x, axes, out=out, num_threads=num_threads), expected, place)


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("shape, reps, dtype", [((300, 3), (2, 64), np.uint8),
                                                ((40, 500), (3, 2), np.float32),
                                                ((7, 1000), (4, 1), np.float32)])
def test_tile_holds_lines(shape, reps, dtype, place):
    x, source = _guarded_copy(_values(shape, dtype))
    _check(lambda out: fb.tile(x, reps, out=out, num_threads=2), np.tile(x, reps), place)


def test_a_span_continued_by_the_next_call_is_written_whole():
    """Two calls into halves of one buffer: the first call's last held line
    is written when it ends, not left for a span of the second."""
    x = _values((1, 8, 128, 96), np.uint32)
    expected = space_to_depth_ref(x, 4)
    out, before, holder = _guarded_out((2, *expected.shape[1:]), np.uint32, 16)
    fb.space_to_depth(x, 4, out=out[:1], num_threads=2)
    np.testing.assert_array_equal(out[0], expected[0])
    assert (out[1].view(np.uint8) == SENTINEL).all()
    fb.space_to_depth(x, 4, out=out[1:], num_threads=2)
    np.testing.assert_array_equal(out, np.concatenate([expected, expected]))
