"""Staged transposes (``fastblock/_engine/kernels/transpose.pxi``): kernel blocks whose
source is contiguous along some axes and whose destination along others,
rows and items each possibly made of several axes (a Fortran-order input's
N and C). Each case first checks that the planner hands it to the transpose
kernel, so that the kernel is what is tested; every result is compared byte
for byte with NumPy.
"""
from __future__ import annotations

import numpy as np
import pytest

import fastblock as fb
from fastblock import _engine
from reference import depth_to_space_ref, space_to_depth_ref

# Register-tile widths (16 x 16 bytes, 8 x 8 two-byte items, 4 x 4, 2 x 2)
# and 16-byte items, which move whole.
TILE_WIDTHS = [1, 2, 4, 8, 16]


def _values(shape, width: int) -> np.ndarray:
    """Distinct bytes in every item, as a void array of ``width``-byte items."""
    raw = np.random.default_rng(width + sum(shape)).integers(0, 256, (*shape, width), np.uint8)
    return raw.view(np.dtype(f"V{width}")).reshape(shape)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return np.array_equal(np.ascontiguousarray(a).view(np.uint8),
                          np.ascontiguousarray(b).view(np.uint8))


def _plan(view: np.ndarray) -> dict:
    """The engine's plan for copying ``view`` into a new C-contiguous array."""
    dst = np.empty(view.shape, view.dtype)
    return _engine.describe(view.shape, view.strides, dst.strides, view.itemsize)


SENTINEL = 0xA5


def _out_between_sentinels(shape, dtype, shift: int):
    """A result array ``shift`` bytes past a cache line inside a buffer of
    sentinel bytes: ``(buffer, start, out)``."""
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    buffer = np.full(nbytes + 256, SENTINEL, np.uint8)
    start = (-buffer.ctypes.data) % 64 + shift
    return buffer, start, buffer[start:start + nbytes].view(dtype).reshape(shape)


def _sentinels_intact(buffer: np.ndarray, start: int, nbytes: int) -> bool:
    return bool((buffer[:start] == SENTINEL).all() and (buffer[start + nbytes:] == SENTINEL).all())


@pytest.fixture
def streaming_everything():
    """Streaming stores for copies of every size."""
    with _engine.tune(streaming=True, stream_min_bytes=0):
        yield


@pytest.mark.parametrize("width", TILE_WIDTHS)
@pytest.mark.parametrize("shape", [(8, 6, 40, 36), (5, 7, 37, 45), (8, 3, 129, 40)])
@pytest.mark.parametrize("num_threads", [1, 3])
def test_fortran_order_to_c_order(shape, width, num_threads):
    # Rows over N and C (the source's run), items along W; ragged tiles and
    # edges beside the register tiles in the odd shapes.
    x = np.asfortranarray(_values(shape, width))
    plan = _plan(x)
    assert plan["kernel"] == "transpose" and plan["staged"]
    assert _same(fb.transpose(x, (0, 1, 2, 3), num_threads=num_threads), x)


@pytest.mark.parametrize("width", [1, 4, 16])
@pytest.mark.parametrize("shape", [(300, 500), (700, 300), (1000, 600)])
@pytest.mark.parametrize("num_threads", [1, 3])
def test_two_d_transposes_follow_the_source(shape, width, num_threads):
    # The loop runs in source order (the tile loop that continues the
    # blocks' source runs innermost), with ragged tiles on both sides.
    x = _values(shape, width)
    plan = _plan(x.T)
    assert plan["kernel"] == "transpose"
    steps = [abs(step) for step, extent in zip(plan["loop_source_steps"], plan["loop"]) if extent > 1]
    assert steps == sorted(steps, reverse=True)
    assert _same(fb.transpose(x, (1, 0), num_threads=num_threads), x.T)


@pytest.fixture(params=["ordinary stores", "streamed"])
def streaming(request):
    """Every copy streamed (where the build can), or none."""
    streamed = request.param == "streamed" and _engine.cpu_features()["streaming_stores"]
    with _engine.tune(streaming=streamed, stream_min_bytes=0):
        yield streamed


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32, np.float64, np.complex128])
@pytest.mark.parametrize("mode", ["blocks_first", "depth_first"])
@pytest.mark.parametrize("bs", [2, 3])
def test_block_ops_of_fortran_order_inputs(dtype, mode, bs, streaming):
    space = np.asfortranarray(np.arange(8 * 5 * 6 * bs * 40 * bs).astype(dtype).reshape(8, 5, 6 * bs, 40 * bs))
    depth = np.asfortranarray(space_to_depth_ref(np.ascontiguousarray(space), bs, mode))
    for num_threads in (1, 3):
        # Results 16 bytes past a line, like NumPy's large arrays.
        for source, op, ref in ((space, fb.space_to_depth, space_to_depth_ref),
                                (depth, fb.depth_to_space, depth_to_space_ref)):
            expected = ref(source, bs, mode)
            _, _, out = _out_between_sentinels(expected.shape, dtype, 16)
            op(source, bs, mode, out=out, num_threads=num_threads)
            assert np.array_equal(out, expected)


@pytest.mark.parametrize("width", TILE_WIDTHS)
def test_channels_last_view_read_as_channels_first(width):
    # An NHWC array transposed to NCHW (lane, block or transpose kernels,
    # by item size).
    nhwc = _values((2, 12, 40, 24), width)
    x = nhwc.transpose(0, 3, 1, 2)
    s = x.strides
    view = np.lib.stride_tricks.as_strided(x, (2, 24, 6, 2, 20, 2), (s[0], s[1], 2 * s[2], s[2], 2 * s[3], s[3]))
    view = view.transpose(0, 3, 5, 1, 2, 4)
    expected = np.ascontiguousarray(view).reshape(2, 96, 6, 20)
    assert _same(fb.space_to_depth(x, 2), expected)


@pytest.mark.parametrize("shape, width", [((2, 3, 8, 3, 30, 16), 1), ((2, 3, 8, 3, 30, 16), 3),
                                          ((2, 4, 6, 4, 20, 4), 16)])
def test_items_along_several_destination_axes(shape, width):
    # 5-D space_to_depth blocks_first, channels_last: items are the (bd, bh)
    # block offsets, whose (bw, c) runs are folded into wide items.
    x = _values(shape, width)
    axes = (0, 2, 4, 1, 3, 5)
    view = np.transpose(x, axes)
    plan = _plan(view)
    assert plan["kernel"] == "transpose" and plan["row_items"] == shape[1] * shape[3]
    for num_threads in (1, 3):
        assert _same(fb.transpose(x, axes, num_threads=num_threads), view)


def test_runs_side_by_side_are_read_in_place():
    # depth_to_space depth_first, channels_last, bs 3, float64: the rows are
    # the 9 block offsets (a run of 9 items), the items the 16 channels, and
    # each channel's run follows the last in the source: no buffer.
    depth = np.arange(2 * 10 * 12 * 16 * 9, dtype=np.float64).reshape(2, 10, 12, 144)
    v = depth.reshape(2, 10, 12, 16, 3, 3).transpose(0, 1, 4, 2, 5, 3)
    plan = _plan(v)
    assert plan["kernel"] == "transpose" and not plan["staged"]
    for num_threads in (1, 3):
        result = fb.depth_to_space(depth, 3, "depth_first", "channels_last", num_threads=num_threads)
        assert np.array_equal(result, depth_to_space_ref(depth, 3, "depth_first", "channels_last"))


@pytest.mark.skipif(not _engine.cpu_features()["streaming_stores"], reason="this build has no streaming stores")
@pytest.mark.parametrize("shift", [0, 16, 48])
@pytest.mark.parametrize("shape, width", [((8, 8, 32, 64), 1), ((8, 8, 32, 64), 4),
                                          ((8, 8, 16, 256), 4), ((4, 4, 8, 200), 8)])
def test_streamed_rows_write_exactly_the_destination(shape, width, shift, streaming_everything):
    # The result is a view `shift` bytes past a line in a buffer of
    # sentinels, which must survive. The rows (N and C) are far apart, so
    # their whole lines stream; where a row takes several tiles, the first
    # is short so that the others start on a line.
    x = np.asfortranarray(_values(shape, width))
    buffer, start, out = _out_between_sentinels(x.shape, x.dtype, shift)
    plan = _engine.describe(x.shape, x.strides, out.strides, width, out)
    assert plan["kernel"] == "transpose" and plan["streams"]
    short = plan["first_tile_short_by"]
    if plan["row_items"] < shape[-1]:
        first_tile = plan["row_items"] - short
        assert (out.ctypes.data + first_tile * width) % 64 == 0
    else:
        assert short == 0
    for num_threads in (1, 3):
        out[...] = np.zeros((), x.dtype)
        fb.transpose(x, (0, 1, 2, 3), out=out, num_threads=num_threads)
        assert _same(out, x)
    assert _sentinels_intact(buffer, start, x.nbytes)


@pytest.mark.skipif(not _engine.cpu_features()["streaming_stores"], reason="this build has no streaming stores")
@pytest.mark.parametrize("shift", [0, 16, 48, 8])
@pytest.mark.parametrize("shape, width", [((320, 500), 4), ((300, 500), 4), ((320, 520), 1),
                                          ((128, 300), 8), ((256, 256), 2), ((130, 70), 16)])
def test_streamed_two_d_transposes_write_exactly_the_destination(shape, width, shift,
                                                                streaming_everything):
    # Rows side by side in the destination: the register tiles stream the
    # lines they fill whole, the rest go by ordinary stores. Where the rows
    # are whole lines and 16-byte aligned, the first tile of each row is
    # short so that the next starts on a line; rows of 1200 bytes each
    # start elsewhere in a line, and a shift of 8 bytes aligns none (the
    # tiles that cannot stream store as usual). Sentinels around the result
    # must survive.
    x = _values(shape, width)
    buffer, start, out = _out_between_sentinels(shape[::-1], x.dtype, shift)
    plan = _engine.describe(out.shape, x.T.strides, out.strides, width, out)
    assert plan["kernel"] == "transpose" and plan["streams"]
    short = plan["first_tile_short_by"]
    if width < 16 and shift % 16 == 0 and shape[0] * width % 64 == 0:
        assert (out.ctypes.data + (plan["row_items"] - short) * width) % 64 == 0
    for num_threads in (1, 3):
        out[...] = np.zeros((), x.dtype)
        fb.transpose(x, (1, 0), out=out, num_threads=num_threads)
        assert _same(out, x.T)
    assert _sentinels_intact(buffer, start, x.nbytes)


def _d2s_source_view(depth: np.ndarray, bs: int) -> np.ndarray:
    """depth_to_space blocks_first NCHW's source, in the result's axis order
    [n, c, h, bh, w, bw]."""
    n, cd, h, w = depth.shape
    c = cd // (bs * bs)
    s = depth.strides
    v = np.lib.stride_tricks.as_strided(depth, (n, bs, bs, c, h, w),
                                        (s[0], bs * c * s[1], c * s[1], s[1], s[2], s[3]))
    return v.transpose(0, 3, 4, 1, 5, 2)


@pytest.mark.parametrize("layout_of_input, dtype", [("channels_last_view", np.uint8),
                                                    ("fortran", np.uint8), ("fortran", np.float32)])
def test_depth_to_space_of_reordered_inputs(layout_of_input, dtype):
    # The rows are the 16 channels; the items (w, bw) span two destination
    # axes. Bytes always take the transpose; 4-byte items in so few rows
    # only where their source runs crowd into a few cache sets (a
    # Fortran-order input with N = 1: runs 64 KiB apart).
    space = np.arange(16 * 64 * 128).astype(dtype).reshape(1, 16, 64, 128)
    depth = space_to_depth_ref(space, 2)
    if layout_of_input == "fortran":
        depth = np.asfortranarray(depth)
    else:
        depth = np.moveaxis(np.ascontiguousarray(np.moveaxis(depth, 1, -1)), -1, 1)
    assert _plan(_d2s_source_view(depth, 2))["kernel"] == "transpose"
    for num_threads in (1, 3):
        assert np.array_equal(fb.depth_to_space(depth, 2, num_threads=num_threads), space)
