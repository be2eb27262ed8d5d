"""Lane splits that write a line of each lane at a time (``splits_by_lines``
in ``fastblock/_engine/plan/lanes.pxi``, ``fb_wide_line_split`` in
``fastblock/_engine/src/lanes.c``): channels-last pixels of more than 8 channels of
1-, 2- or 4-byte items split into planes whole 4 KiB apart. Each block of
lanes is transposed into a buffer and every lane's 64 bytes stored in a
row; the run's tail pixels, and the padded last block of a run that ends
there, keep the direct stores. Both orders are forced (``line_splits``
on and off), sources and results lie against inaccessible pages, and every
byte is compared with NumPy's transpose. The cases of exact results are a
seeded draw of the edges (``draws.drawn``): every lane layout and every
width in both orders on every run, the rest sampled.
"""
import sys

import numpy as np
import pytest

import fastblock as fb
from draws import drawn
from fastblock import _engine
from guarded import Guarded

pytestmark = [
    pytest.mark.skipif(not _engine.cpu_features()["simd128"],
                       reason="lane transposes need 16-byte kernels (SSSE3, NEON)"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mprotect through ctypes"),
]

SPLIT = (0, 3, 1, 2)   # [N, H, W, C] -> [N, C, H, W]


def _pixels(shape, dtype) -> np.ndarray:
    raw = np.random.default_rng(sum(shape)).integers(0, 256, (*shape, np.dtype(dtype).itemsize),
                                                     np.uint8)
    return raw.view(dtype).reshape(shape)


def _plan(x: np.ndarray, out: np.ndarray, num_threads: int = 1) -> dict:
    view = x.transpose(SPLIT)
    return _engine.describe(view.shape, view.strides, out.strides, x.itemsize, dst_array=out,
                            num_threads=num_threads)


def _split_into_guarded(values, out_shape, out_width, at_end, line_splits, num_threads):
    """``values`` [N, H, W, C] in guarded memory split into the first
    ``out_width`` (W) columns of a guarded array of ``out_shape`` [N, C, H,
    256] (planes whole ways apart when H x 256 items are), with line_splits
    as given; the result, every byte of the guarded array, and the plan."""
    source = Guarded(values.nbytes, at_end)
    x = source.array(values.shape, values.dtype)
    x[...] = values
    result = Guarded(int(np.prod(out_shape)) * values.itemsize, not at_end)
    whole = result.array(out_shape, values.dtype)
    whole[...] = 0
    out = whole[..., :out_width]
    with _engine.tune(line_splits=line_splits):
        plan = _plan(x, out, num_threads)
        fb.transpose(x, SPLIT, out=out, num_threads=num_threads)
    return out, result.bytes.copy(), plan


# (dtype, channels): 9-16 byte lanes (one block of 16, padded below 16),
# more blocks of bytes, padded and whole, 2-byte lanes (blocks of 8) and
# 4-byte lanes (blocks of 4).
LANES = [(np.uint8, 9), (np.uint8, 12), (np.uint8, 16), (np.uint8, 17), (np.uint8, 64),
         (np.uint8, 75), (np.uint8, 256), (np.uint16, 9), (np.uint16, 16), (np.uint16, 20),
         (np.uint16, 128), (np.float32, 9), (np.float32, 16), (np.float32, 64)]


@drawn(56, {"dtype, channels": LANES}, width=[256, 200, 131], at_end=[True, False],
       line_splits=[True, False], num_threads=[1, 3],
       cover=[("dtype, channels", "line_splits"), ("width", "line_splits"), ("width", "at_end"),
              ("num_threads",)])
def test_line_splits_write_exactly_the_result(dtype, channels, width, at_end, line_splits,
                                              num_threads):
    # Rows of 256 pixels end with whole groups (the padded last block of
    # the last one goes direct), 200 with 8 tail pixels, 131 with a group
    # cut short; the planes are 16 x 256 items apart: whole 4 KiB ways.
    itemsize = np.dtype(dtype).itemsize
    height = 16 // itemsize
    values = _pixels((2, height, width, channels), dtype)
    expected = np.ascontiguousarray(values.transpose(SPLIT))
    out_shape = (2, channels, height, 256)
    out, buffer, plan = _split_into_guarded(values, out_shape, width, at_end, line_splits,
                                            num_threads)
    assert plan["kernel"] == "lanes" and plan["lanes"] == channels, plan
    assert plan["line_splits"] == line_splits, plan
    assert np.array_equal(out.view(np.uint8), expected.view(np.uint8))
    # Outside the result's rows (the padding of each row): untouched.
    padding = buffer.view(dtype).reshape(out_shape)[..., width:]
    assert not padding.view(np.uint8).any()


@pytest.mark.parametrize("shape", [(1, 64, 64, 64), (1, 128, 128, 12), (3, 64, 64, 32)])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
@pytest.mark.parametrize("num_threads", [1, 2, 3])
def test_line_splits_of_whole_images(shape, dtype, num_threads):
    # Power-of-two images split from channels-last: blocks of 512 pixels
    # shared among the threads.
    values = _pixels(shape, dtype)
    expected = np.ascontiguousarray(values.transpose(SPLIT))
    out = np.empty_like(expected)
    assert _plan(values, out, num_threads)["line_splits"]
    fb.transpose(values, SPLIT, out=out, num_threads=num_threads)
    assert np.array_equal(out.view(np.uint8), expected.view(np.uint8))
    with _engine.tune(line_splits=False):
        assert np.array_equal(fb.transpose(values, SPLIT, num_threads=num_threads).view(np.uint8),
                              expected.view(np.uint8))


@pytest.mark.parametrize("shape, axes, dtype, why", [
    ((1, 60, 60, 64), SPLIT, np.uint8, "planes not whole ways apart"),
    ((1, 64, 64, 8), SPLIT, np.uint8, "8 lanes fit a set"),
    ((1, 64, 64, 64), (0, 2, 3, 1), np.uint8, "an interleave"),
    ((1, 512, 512, 64), SPLIT, np.uint8, "past stream_min_bytes"),
])
def test_other_lane_transposes_keep_direct_stores(shape, axes, dtype, why):
    x = np.zeros(shape, dtype)
    view = x.transpose(axes)
    out = np.empty(view.shape, dtype)
    plan = _engine.describe(view.shape, view.strides, out.strides, x.itemsize, dst_array=out)
    assert plan["kernel"] == "lanes", (why, plan)
    assert not plan["line_splits"], why
