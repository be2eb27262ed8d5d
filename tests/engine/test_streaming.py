"""Streamed destinations (``fastblock/_engine/kernels/stream.pxi``): blocks written into a
per-thread buffer and streamed out with non-temporal stores.

The engine streams only copies of 8 MiB or more into memory that is already
resident; here streaming is switched on for copies of any size, so that the
small inputs below take it, and every result is compared with NumPy. The
destinations are views placed 0 to 63 bytes past a cache line inside a
buffer whose other bytes are sentinels: the masked stores at the rows' ends
must write exactly the row. Every test runs with shuffles (where the CPU
has them) as the planner would choose them. The large enumerations are
seeded draws of their edges (``draws.drawn``): every value and both store
widths on every run, the rest sampled.
"""
from __future__ import annotations

import numpy as np
import pytest

import fastblock as fb
from draws import drawn
from fastblock import _engine
from reference import depth_to_space_ref, space_to_depth_ref

pytestmark = pytest.mark.skipif(not _engine.cpu_features()["streaming_stores"],
                                reason="this build has no streaming stores")

OPS = {"space_to_depth": (fb.space_to_depth, space_to_depth_ref),
       "depth_to_space": (fb.depth_to_space, depth_to_space_ref)}
SENTINEL = 0xA5


STORES = ["32-byte stores", "16-byte stores"]
# The NCHW_VECT_C paths this CPU runs (conftest.py's vect_c_path skips "pixels" without VBMI).
VECT_C_PATHS = ["pixels", "tables", "planes"][0 if _engine.cpu_features()["vect_c_pixels"] else 1:]


@pytest.fixture(autouse=True, params=STORES)
def stream_everything(request):
    """Stream every copy, whole lines by 32-byte stores (where the CPU has
    AVX) and by 16-byte ones."""
    with _engine.tune(streaming=True, stream_min_bytes=0,
                      wide_streams=request.param == "32-byte stores", shuffles=True,
                      shuffle_min_bytes=0):
        yield


def _values(shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    raw = np.random.default_rng(sum(shape)).integers(0, 256, (*shape, dtype.itemsize), np.uint8)
    return raw.view(dtype).reshape(shape)


def _out_at(shape, dtype, offset: int):
    """A C-contiguous ``shape`` view ``offset`` bytes past a 64-byte boundary
    of a sentinel-filled (so resident) buffer, and that buffer."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    buffer = np.full(nbytes + 256, SENTINEL, np.uint8)
    start = (-buffer.ctypes.data) % 64 + 64 + offset
    out = buffer[start:start + nbytes].view(dtype).reshape(shape)
    return out, buffer, start


def _check_into(run, expected: np.ndarray, offset: int) -> None:
    out, buffer, start = _out_at(expected.shape, expected.dtype, offset)
    result = run(out)
    assert result is out
    assert np.array_equal(out.view(np.uint8), np.ascontiguousarray(expected).view(np.uint8))
    assert (buffer[:start] == SENTINEL).all()
    assert (buffer[start + expected.nbytes:] == SENTINEL).all()


def test_plans_stream_only_resident_destinations_when_enabled():
    x = np.ones((64, 64), np.float32)
    view = x.T
    touched = np.zeros((64, 64), np.float32)
    plan = _engine.describe(view.shape, view.strides, touched.strides, 4, touched)
    assert plan["streams"]
    # A fresh 64 MiB array is mapped but no page of it is in memory yet: the
    # kernel would zero each page into cache on its first write.
    fresh = np.empty((4096, 4096), np.float32)
    plan = _engine.describe(fresh.shape, fresh.strides[::-1], fresh.strides, 4, fresh)
    assert not plan["streams"]
    fresh[...] = 0
    assert _engine.describe(fresh.shape, fresh.strides[::-1], fresh.strides, 4, fresh)["streams"]
    _engine.tune(streaming=False)
    assert not _engine.describe(view.shape, view.strides, touched.strides, 4, touched)["streams"]
    # Without a destination nothing can be checked: no streaming.
    _engine.tune(streaming=True, stream_min_bytes=0)
    assert not _engine.describe(view.shape, view.strides, touched.strides, 4)["streams"]


def test_default_threshold_keeps_small_copies_in_cache():
    _engine.tune(streaming=True, stream_min_bytes=_engine.default_tuning()["stream_min_bytes"])
    x = np.ones((256, 256), np.float32)
    out = np.zeros((256, 256), np.float32)
    assert not _engine.describe(x.shape, x.T.strides, out.strides, 4, out)["streams"]
    big = np.ones((2048, 2048), np.float32)     # np.zeros would map fresh pages
    assert _engine.describe(big.shape, big.T.strides, big.strides, 4, big)["streams"]


@drawn(80, {"op_name": list(OPS), "bs": [2, 3], "mode": ["blocks_first", "depth_first"],
            "layout, channels": [("channels_first", 4), ("channels_last", 3), ("channels_last", 16)],
            "dtype": [np.uint8, np.float16, np.float32, np.float64, "V3", "V16"],
            "num_threads": [1, 3], "offset": [0, 1, 8, 16, 63], "stream_everything": STORES},
       cover=[("op_name", "mode", "layout, channels"), ("dtype", "stream_everything"),
              ("bs", "op_name"), ("offset",), ("num_threads",)], indirect=("stream_everything",))
def test_block_operators_streamed(op_name, bs, mode, layout, channels, dtype, num_threads, offset):
    op, ref = OPS[op_name]
    h, w = 11 * bs, 70 * bs           # rows of several lines and partial ones
    space_shape = (2, channels, h, w) if layout == "channels_first" else (2, h, w, channels)
    space = _values(space_shape, dtype)
    x = space if op_name == "space_to_depth" else space_to_depth_ref(space, bs, mode, layout)
    expected = ref(x, bs, mode, layout)
    _check_into(lambda out: op(x, bs, mode, layout, out=out, num_threads=num_threads),
                expected, offset)


@drawn(30, op_name=list(OPS), mode=["blocks_first", "depth_first"], bs=[2, 3],
       dtype=[np.uint8, np.float32], offset=[0, 16, 37], vect_c_path=VECT_C_PATHS,
       stream_everything=STORES,
       cover=[("op_name", "mode", "bs"), ("vect_c_path", "stream_everything"), ("dtype",),
              ("offset",)], indirect=("vect_c_path", "stream_everything"))
def test_nchw_vect_c_streamed(op_name, mode, bs, dtype, offset, vect_c_path):
    """Includes the depth_first paths in blocks of rows: the tables' plans and the
    planes' second plan stream."""
    op, ref = OPS[op_name]
    space = _values((2, 3 * bs * bs, 7 * bs, 41 * bs, 4), dtype)
    x = space if op_name == "space_to_depth" else space_to_depth_ref(space, bs, mode, "NCHW_VECT_C")
    expected = ref(x, bs, mode, "NCHW_VECT_C")
    _check_into(lambda out: op(x, bs, mode, "NCHW_VECT_C", out=out, num_threads=2),
                expected, offset)


@drawn(60, {"shape, axes": [
    ((300, 200), (1, 0)),                 # staged transpose tiles
    ((20, 3, 30, 3, 16), (0, 2, 4, 1, 3)),  # transpose rows side by side (16 bytes and up)
    ((6, 500, 2), (0, 2, 1)),             # two lanes interleaved
    ((6, 4, 500), (0, 2, 1)),             # four lanes split
    ((40, 2, 90, 2, 3), (0, 2, 4, 1, 3)),  # gathered runs
    ((2, 97, 2, 3), (0, 1, 3, 2)),        # ragged gathered runs
    ((9, 30, 50), (2, 0, 1)),             # strided items
    ((50, 3, 700), (1, 0, 2)),            # rows contiguous on both sides
]}, width=[1, 2, 3, 4, 6, 8, 12, 16, 24, 40, 96, 300], offset=[0, 5, 48], stream_everything=STORES,
    cover=[("shape, axes", "stream_everything"), ("width", "stream_everything"), ("offset",)],
    indirect=("stream_everything",))
def test_engine_kernels_streamed(shape, axes, width, offset):
    x = _values(shape, f"V{width}")
    expected = np.ascontiguousarray(np.transpose(x, axes))
    _check_into(lambda out: fb.transpose(x, axes, out=out, num_threads=2), expected, offset)


@pytest.mark.parametrize("offset", [0, 9])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32, "V3"])
@pytest.mark.parametrize("shape, reps", [((300, 3), (2, 64)), ((40, 500), (3, 2)), ((7, 1000), (4, 1))])
def test_tile_streamed(shape, reps, dtype, offset):
    x = _values(shape, dtype)
    expected = np.tile(x, reps)
    _check_into(lambda out: fb.tile(x, reps, out=out, num_threads=2), expected, offset)


def test_streamed_into_a_reversed_and_strided_out():
    x = _values((2, 16, 64, 640), np.float32)
    expected = space_to_depth_ref(x, 2)
    buffer = np.full((*expected.shape[:-1], 2 * expected.shape[-1]), -1, np.float32)
    out = buffer[:, ::-1, :, ::2]
    fb.space_to_depth(x, 2, out=out, num_threads=2)
    np.testing.assert_array_equal(out, expected)
    assert (buffer[..., 1::2] == -1).all()


def test_new_results_are_right_whether_or_not_they_stream():
    x = _values((1, 8, 512, 512), np.float32)
    np.testing.assert_array_equal(fb.space_to_depth(x, 2), space_to_depth_ref(x, 2))
    np.testing.assert_array_equal(fb.depth_to_space(x, 2, "depth_first"),
                                  depth_to_space_ref(x, 2, "depth_first"))



@pytest.mark.parametrize("width", [8, 12, 16, 24, 40])
def test_streamed_transposes_of_a_few_items(width):
    """Streamed transposes whose last blocks are a row or two of a few
    items: a block's whole result may lie before the destination's next
    line boundary, or leave no whole line between its partial ends
    (fastblock/_engine/src/stream.h, fb_stream_lines). Every offset in a
    line that matters to an item of ``width`` bytes, every block remainder."""
    for shape in [(9, 2), (2, 9), (17, 3), (3, 17), (33, 1), (1, 33), (9, 9), (17, 17),
                  (10, 3), (3, 10)]:
        x = _values(shape, f"V{width}")
        for offset in [0, 8, 40, 56]:
            _check_into(lambda out: fb.transpose(x, (1, 0), out=out, num_threads=1),
                        np.ascontiguousarray(x.T), offset)
