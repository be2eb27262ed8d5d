"""Lane transposes' rows in groups (``group_lane_rows`` in
``fastblock/_engine/plan/kernel.pxi``): SpaceToDepth channels-first splits each
space row's pixels into bs lanes, DepthToSpace interleaves bs lanes into
them, and the bs rows of a row of blocks are one group, taken whole in
each row of the kernel's a axis (the space row of blocks), so that a
block is many groups. A split reads its source in order and each lane's
destination rows follow each other; streamed, each lane's rows of a
block go out as one run (``stream_lane_split``). An interleave's group is
one destination span. Where a group's rows and lanes would crowd the same
L1 sets, a block takes the first row of every group, then the second...
(``rows_across_groups``). Interleaves of many lanes (channels-first to
channels-last) from memory ask for each lane's run two blocks ahead.
Sources and results end where readable memory ends, results start at
every phase of a cache line, and every byte is compared with the
reference formulas. The two large enumerations are seeded draws of their
edges (``draws.drawn``): every value on every run, the rest sampled.
"""
import sys

import numpy as np
import pytest

import fastblock as fb
from draws import drawn
from fastblock import _engine
from reference import depth_to_space_ref, space_to_depth_ref
from test_vect_c_pixels import _guarded

pytestmark = pytest.mark.skipif(not _engine.cpu_features()["simd128"],
                                reason="lane transposes need 16-byte kernels (SSSE3, NEON)")

# Item widths of the lane kernels: fb_lanes_row (1, 2), fb_pair_rows and
# the register transposes (4), pairs of 8-byte lanes (8).
DTYPES = [np.uint8, np.float16, np.float32, np.float64]


def _space(shape, dtype) -> np.ndarray:
    raw = np.random.default_rng(sum(shape)).integers(0, 256, (*shape, np.dtype(dtype).itemsize),
                                                     np.uint8)
    return raw.view(dtype).reshape(shape)


def _plan(x: np.ndarray, bs: int, mode: str, out: np.ndarray, to_depth: bool = True) -> dict:
    space, depth = (x, out) if to_depth else (out, x)
    return _engine.describe(*_engine.space_depth_axes(space, depth, 0, bs, mode == "depth_first",
                                                      to_depth), x.itemsize, dst_array=out)


def _case(op: str, dtype, bs: int, mode: str, height: int, width: int, placed: bool, lead: int):
    """(source, expected result, out) of ``op`` on 2 x 3 channels of
    ``height`` x ``width`` blocks: placed at the end of readable memory
    (``placed``; ``out`` ``lead`` bytes further on), else ordinary arrays."""
    space_shape = (2, 3, height * bs, width * bs)
    space = _space(space_shape, dtype)
    x = space if op == "space_to_depth" else space_to_depth_ref(space, bs, mode)
    expected = space_to_depth_ref(x, bs, mode) if op == "space_to_depth" \
        else depth_to_space_ref(x, bs, mode)
    maps = []
    if placed:
        placed_x, source_map = _placed_at_end(x.shape, dtype)
        placed_x[...] = x
        x = placed_x
        out, out_map = _placed_at_end(expected.shape, dtype, lead)
        maps = [source_map, out_map]
    else:
        out = np.empty(expected.shape, dtype)
    out[...] = 0
    return x, expected, out, maps


def _placed_at_end(shape, dtype, lead: int = 0):
    """A C-contiguous array of ``shape`` whose last byte is the last readable
    one, starting ``lead`` bytes further on than that alone would place it
    (the bytes before it belong to the mapping too), and its mapping."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    raw, mapping, _ = _guarded(nbytes + lead)
    return raw[lead:].view(dtype).reshape(shape), mapping


@pytest.mark.parametrize("op", ["space_to_depth", "depth_to_space"])
@pytest.mark.parametrize("mode", ["blocks_first", "depth_first"])
@pytest.mark.parametrize("bs", [2, 3, 4])
@pytest.mark.parametrize("dtype", DTYPES)
def test_channels_first_block_rows_are_groups(dtype, bs, mode, op):
    x, _, out, _ = _case(op, dtype, bs, mode, 8, 64, False, 0)
    plan = _plan(x, bs, mode, out, op == "space_to_depth")
    assert plan["kernel"] == "lanes" and plan["lanes"] == bs, plan
    assert plan["row_group"] == bs, plan
    # The groups of a block are whole rows of blocks: the loop steps over
    # tiles of them and no longer over the rows of a block.
    assert plan["rows"] % bs == 0 and plan["rows"] > bs, plan
    assert len(plan["loop"]) == 3, plan


def test_rows_that_do_not_fit_a_block_are_not_grouped():
    # 4096 float32 pixels of 2 lanes a row: a group of 2 rows is 64 KiB.
    x = _space((1, 2, 4, 8192), np.float32)
    out = np.empty((1, 8, 2, 4096), np.float32)
    plan = _plan(x, 2, "blocks_first", out)
    assert plan["kernel"] == "lanes" and plan["row_group"] == 1, plan


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mprotect through ctypes")
# Pixels a lane row (``width``): short, lines, and (bs 2) rows tiled, ungrouped.
@drawn(96, {"op": ["space_to_depth", "depth_to_space"], "dtype": DTYPES,
            "bs, width": [(2, 17), (2, 40), (2, 64), (2, 1100), (3, 17), (3, 64), (4, 17), (4, 64)],
            "mode": ["blocks_first", "depth_first"], "lead": [0, 16, 37], "streamed": [False, True],
            "num_threads": [1, 3], "permutes": [True, False]},
       cover=[("op", "bs, width"), ("op", "dtype", "streamed"), ("dtype", "mode"),
              ("dtype", "permutes"), ("lead",), ("num_threads",)])
def test_grouped_rows_write_exactly_the_result(op, dtype, bs, width, mode, lead, streamed,
                                               num_threads, permutes):
    # ``permutes``: the rows of 2 to 4 lanes of 1- and 2-byte items (3 or 4
    # of 4-byte items) by 64-byte permutes (with AVX-512 VBMI), or all by
    # the 16-byte kernel.
    x, expected, out, maps = _case(op, dtype, bs, mode, 5, width, True, lead)
    with _engine.tune(streaming=streamed, stream_min_bytes=0, wide_shuffles=permutes):
        got = getattr(fb, op)(x, bs, mode, out=out, num_threads=num_threads)
        plan = _plan(x, bs, mode, out, op == "space_to_depth")
    assert got is out
    assert out.tobytes() == expected.tobytes()
    assert plan["streams"] == (streamed and _engine.cpu_features()["streaming_stores"])
    if plan["kernel"] == "lanes":
        # Rows of a step or more; two lanes of 1- and 2-byte items only
        # where not streamed; 3 or 4 lanes of 4-byte items where not
        # streamed, 3 interleaved where streamed.
        lanes, interleave = plan["lanes"], op == "depth_to_space"
        assert plan["lane_permutes"] == (
            permutes and _engine.cpu_features()["avx512_vbmi"]
            and lanes <= 4 and plan["row_items"] * x.itemsize >= 64
            and (x.itemsize <= 2 and (lanes > 2 or not streamed)
                 or x.itemsize == 4 and lanes > 2
                 and (not streamed or interleave and lanes == 3))), plan
    del maps


# Blocks a side whose planes are 4 KiB: (height, width) by item size.
PLANE_4K = {1: (64, 64), 2: (32, 64), 4: (32, 32), 8: (32, 16)}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mprotect through ctypes")
@drawn(60, op=["space_to_depth", "depth_to_space"], dtype=DTYPES, bs=[2, 3, 4],
       mode=["blocks_first", "depth_first"], whole_ways=[True, False], lead=[0, 16, 37],
       num_threads=[1, 3], permutes=[True, False],
       cover=[("op", "bs", "whole_ways"), ("dtype", "mode"), ("dtype", "permutes"), ("lead",),
              ("num_threads",)])
def test_rows_across_groups_write_exactly_the_result(op, dtype, bs, mode, whole_ways, lead,
                                                     num_threads, permutes):
    # A split (interleave) whose planes are whole 4 KiB apart
    # (``whole_ways``) writes (reads) the first row of every group of a
    # block, then the second...: its groups' bs rows and bs lanes would
    # share the same L1 sets, more than a set holds from 3 rows and lanes
    # on. Planes of other sizes and bs 2 keep the group order.
    height, width = PLANE_4K[np.dtype(dtype).itemsize]
    if not whole_ways:
        height -= 3
    x, expected, out, maps = _case(op, dtype, bs, mode, height, width, True, lead)
    with _engine.tune(wide_shuffles=permutes):
        got = getattr(fb, op)(x, bs, mode, out=out, num_threads=num_threads)
        plan = _plan(x, bs, mode, out, op == "space_to_depth")
    assert got is out
    assert out.tobytes() == expected.tobytes()
    assert plan["kernel"] == "lanes" and plan["row_group"] == bs and not plan["streams"], plan
    assert plan["rows_across_groups"] == (whole_ways and bs >= 3), plan
    del maps


@pytest.mark.skipif(not _engine.cpu_features()["streaming_stores"],
                    reason="streaming stores are x86's (SSE2 / AVX)")
@pytest.mark.parametrize("op", ["space_to_depth", "depth_to_space"])
def test_streamed_lane_transposes_keep_the_group_order(op):
    # A split's kernel then writes the stage, not the planes.
    x, expected, out, _ = _case(op, np.float32, 4, "blocks_first", 32, 32, False, 0)
    with _engine.tune(streaming=True, stream_min_bytes=0):
        plan = _plan(x, 4, "blocks_first", out, op == "space_to_depth")
        getattr(fb, op)(x, 4, out=out)
    assert plan["streams"] and not plan["rows_across_groups"], plan
    assert out.tobytes() == expected.tobytes()


@pytest.mark.parametrize("lead", [0, 16])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_split_rows_apart_stream_only_as_whole_lines(dtype, lead):
    """Destination rows that do not follow each other (an ``out`` whose
    rows are 64 bytes longer than the result's) stream row by row when
    they are whole lines, and are written in place when not: both exact,
    and the bytes between the rows untouched."""
    bs = 2
    x = _space((2, 3, 6 * bs, 64 * bs), dtype)
    expected = space_to_depth_ref(x, bs)
    row_bytes = 64 * x.itemsize
    buffer = np.full(expected.shape[:-1] + (row_bytes + 64 + 64,), 0xA5, np.uint8)
    start = (-buffer.ctypes.data) % 64 + lead
    out = buffer[..., start:start + row_bytes].view(dtype)
    with _engine.tune(streaming=True, stream_min_bytes=0):
        got = fb.space_to_depth(x, bs, out=out, num_threads=2)
    assert got is out
    assert np.array_equal(out.view(np.uint8), expected.view(np.uint8))
    assert (buffer[..., :start] == 0xA5).all() and (buffer[..., start + row_bytes:] == 0xA5).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lanes", [2, 4])
@pytest.mark.parametrize("split", [True, False])
def test_lane_transposes_of_a_single_row_have_no_group(split, lanes, dtype):
    """A pixel axis and its lanes, no row axis (one row of 64 pixels): no
    group to take. (group_lane_rows once read the missing row axis's
    extent: index -1, found by UBSan.)"""
    shape = (64, lanes) if split else (lanes, 64)
    x = _space(shape, dtype)
    expected = np.ascontiguousarray(x.T)
    out = np.empty_like(expected)
    plan = _engine.describe(x.T.shape, x.T.strides, out.strides, x.itemsize, dst_array=out)
    assert plan["kernel"] == "lanes" and plan["row_group"] == 1 and plan["rows"] == 1, plan
    assert fb.transpose(x, (1, 0), out=out) is out
    assert out.tobytes() == expected.tobytes()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mprotect through ctypes")
@pytest.mark.parametrize("prefetch", [True, False])
@pytest.mark.parametrize("channels, side", [(16, 40), (64, 16), (64, 33)])
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32])
def test_many_lane_interleaves_read_ahead_within_their_source(dtype, channels, side, prefetch):
    """Channels-first to channels-last with more than 8 lanes: a copy large
    enough to stream (here every copy: stream_min_bytes 0) asks for each
    lane's run two blocks on (run_lanes) before the kernel reads it. The
    source's last lane ends where readable memory ends, so the requests
    run past it; they must not fault, and the result must not change."""
    values = _space((1, channels, side, side), dtype)
    src, src_map, _ = _guarded(values.nbytes)
    x = src.view(dtype).reshape(values.shape)
    x[...] = values
    view = x.transpose(0, 2, 3, 1)
    out = np.zeros(view.shape, dtype)
    with _engine.tune(stream_min_bytes=0, prefetch=prefetch):
        plan = _engine.describe(view.shape, view.strides, out.strides, x.itemsize, dst_array=out)
        assert fb.transpose(x, (0, 2, 3, 1), out=out, num_threads=2) is out
    assert plan["kernel"] == "lanes" and plan["lanes"] == channels, plan
    assert out.tobytes() == np.ascontiguousarray(values.transpose(0, 2, 3, 1)).tobytes()
    del src_map
