"""Each inner path of the copy engine, driven on purpose through
``fastblock.transpose`` and checked against NumPy.

The engine picks its kernel from the axes it is given: row ``memcpy``,
(de-)interleaved lanes, staged transposes, strided items, and gathered
destination runs for copies whose natural blocks are tiny (the
depth_first channels_last plans) or that are three lanes of bytes, built
by byte shuffles where the CPU has them (every test runs with and without). The public-API tests reach these paths
by chance; here every path is reached by construction, for item widths
that are powers of two, odd widths (overlapping copies) and wide items,
with negative source steps, on one thread and on several. The larger
enumerations are seeded draws of their edges (``draws.drawn``): every value
and every byte-shuffle setting on every run, the rest sampled.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import fastblock as fb
from draws import drawn
from fastblock import _engine

BYTE_SHUFFLES = ["64-byte shuffles", "64-byte shuffles by table", "16-byte shuffles",
                 "16-byte shuffles by table", "item loop"]


@pytest.fixture(params=BYTE_SHUFFLES, autouse=True)
def byte_shuffles(request):
    """Run every test with the byte shuffles of 64-byte pieces (AVX-512 VBMI)
    and of 16-byte pieces (SSSE3, NEON), where the CPU has them, each with
    repeating programs by the periodic kernel and with every piece by the
    table loop, and with the portable item-by-item gather."""
    wide = request.param.startswith("64-byte")
    if wide and not _engine.cpu_features()["avx512_vbmi"]:
        pytest.skip("this CPU has no AVX-512 VBMI (the 16-byte shuffles run instead)")
    # Shuffles for copies of any size, so that the small inputs here reach
    # them; the item loop is the portable build's (no SIMD kernels at all).
    simd = request.param != "item loop"
    with _engine.tune(simd=simd, shuffle_min_bytes=0, wide_shuffles=wide,
                      periodic_shuffles=not request.param.endswith("by table")):
        yield simd and _engine.cpu_features()["simd128"]


def _drawn(cases, axes=None, *, cover=None, **more_axes):
    """``drawn`` with the byte-shuffle settings this CPU runs (the fixture
    skips the others) as one more axis, each with every item width where
    the test has a ``width`` axis."""
    shuffles = [name for name in BYTE_SHUFFLES
                if not name.startswith("64-byte") or _engine.cpu_features()["avx512_vbmi"]]
    axes = {**(axes or {}), **more_axes}
    if cover is None:
        cover = [(key,) for key in axes] + ([("width", "byte_shuffles")] if "width" in axes else [])
    return drawn(cases, {**axes, "byte_shuffles": shuffles}, cover=[*cover, ("byte_shuffles",)],
                 indirect=("byte_shuffles",))


def _periodic(request) -> bool:
    """Whether this run of a test runs repeating shuffle programs by the
    periodic kernel."""
    return request.node.callspec.params["byte_shuffles"] in ("64-byte shuffles",
                                                            "16-byte shuffles")


@pytest.fixture
def wide_pieces(request, byte_shuffles):
    """Whether this run of a test builds 64-byte shuffle pieces."""
    return request.node.callspec.params["byte_shuffles"].startswith("64-byte")


# Widths that take each item loop: 1, 2, 4, 8, 16 bytes; 3, 6, 12, 24
# (two overlapping copies); 40 (one memcpy per item).
WIDTHS = [1, 2, 3, 4, 6, 8, 12, 16, 24, 40]


def _values(shape, width: int) -> np.ndarray:
    """Distinct bytes in every item, as a void array of ``width``-byte items."""
    raw = np.random.default_rng(width).integers(0, 256, size=(*shape, width), dtype=np.uint8)
    return raw.view(np.dtype(f"V{width}")).reshape(shape)


def _at_buffer_end(values: np.ndarray, lead: int) -> np.ndarray:
    """A copy of ``values`` that ends its buffer, ``lead`` items in: a read
    past its last byte would leave the buffer (the sanitizer build reports it)."""
    x = np.empty(values.size + lead, values.dtype)[lead:].reshape(values.shape)
    x[...] = values
    return x


def _transposes_like_numpy(x: np.ndarray, axes, thread_counts=(None,)) -> bool:
    """``fb.transpose(x, axes)`` on each thread count (None: the default)
    equals NumPy's transpose, byte for byte."""
    expected = np.ascontiguousarray(np.transpose(x, axes))
    return all(_same(fb.transpose(x, axes, num_threads=n), expected) for n in thread_counts)


def _transpose_into_fenced_out(x: np.ndarray, axes, expected: np.ndarray, thread_counts) -> None:
    """``fb.transpose(x, axes, out=...)`` on each thread count, into an
    ``out`` followed by 64 zero bytes: the result must equal ``expected``
    and the bytes after it stay zero."""
    buffer = np.zeros(expected.nbytes + 64, np.uint8)
    out = buffer[:expected.nbytes].view(expected.dtype).reshape(expected.shape)
    for num_threads in thread_counts:
        out[...] = np.zeros(1, out.dtype)
        fb.transpose(x, axes, out=out, num_threads=num_threads)
        assert _same(out, expected)
    assert not buffer[expected.nbytes:].any()


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Byte-for-byte equality of two void arrays of any strides."""
    return np.array_equal(np.ascontiguousarray(a).view(np.uint8),
                          np.ascontiguousarray(b).view(np.uint8))


# (shape, axes): the source axes read in the order the destination writes.
GATHER_CASES = [
    # Destination pixel of bs*bs*C items gathered from two source rows
    # (space_to_depth depth_first, channels_last): whole run fits the table.
    ((6, 2, 10, 2, 3), (0, 2, 4, 1, 3)),
    # The destination-contiguous run is longer than the table: its outer
    # axis is split by a divisor (100 = 4 * 25).
    ((100, 3, 2, 2), (0, 1, 3, 2)),
    ((2, 100, 2, 3), (0, 1, 3, 2)),
    # A prime factor leaves no divisor near the best run length: the run's
    # outer axis is cut into near-equal pieces, the last one shorter.
    ((2, 97, 2, 3), (0, 1, 3, 2)),
    # depth_to_space depth_first, channels_last: [h, w, c, b1, b2] -> [h, b1, w, b2, c].
    ((4, 12, 3, 2, 2), (0, 3, 1, 4, 2)),
]


@_drawn(50, {"shape, axes": GATHER_CASES}, width=WIDTHS)
def test_small_block_plans_match_numpy(shape, axes, width):
    x = _values(shape, width)
    assert _transposes_like_numpy(x, axes)


@pytest.mark.parametrize("width", [1, 3, 4, 16])
def test_small_block_plans_with_negative_source_steps(width):
    x = _values((4, 12, 3, 2, 2), width)[::-1, :, ::-1, :, ::-1]
    axes = (0, 3, 1, 4, 2)
    assert _transposes_like_numpy(x, axes)


@pytest.mark.parametrize("width", [1, 4, 6])
@pytest.mark.parametrize("num_threads", [1, 2, 3, 8])
def test_small_block_plans_on_several_threads(width, num_threads):
    # About 1 MiB and more: above the single-thread cut-off.
    x = _values((64, 120, 3, 2, 2), width)
    axes = (0, 3, 1, 4, 2)
    assert _transposes_like_numpy(x, axes, (num_threads,))


@pytest.mark.parametrize("width", [1, 4, 12])
def test_small_block_plans_into_a_strided_out(width):
    x = _values((4, 12, 3, 2, 2), width)
    axes = (0, 3, 1, 4, 2)
    expected = np.ascontiguousarray(np.transpose(x, axes))
    buffer = np.zeros((*expected.shape[:-1], 2 * expected.shape[-1]), expected.dtype)
    out = buffer[..., ::2]
    fb.transpose(x, axes, out=out)
    assert _same(out, expected)
    untouched = np.ascontiguousarray(buffer[..., 1::2]).view(np.uint8)
    assert not untouched.any()


@_drawn(60, {"shape, axes": [
    ((64, 48), (1, 0)),                  # staged transpose tiles
    ((45, 37), (1, 0)),                  # ... with edges beside the register tiles
    ((5, 7), (1, 0)),                    # a transpose too small to stage
    ((3, 50, 2), (0, 2, 1)),             # two lanes interleaved
    ((3, 4, 50), (0, 2, 1)),             # four lanes split
    ((9, 30, 5), (2, 0, 1)),             # strided items
]}, width=WIDTHS)
def test_other_block_kernels_match_numpy(shape, axes, width):
    x = _values(shape, width)
    assert _transposes_like_numpy(x, axes)


def _plan(shape, axes, width: int) -> dict:
    """The engine's plan for ``transpose`` of a C-contiguous ``shape``."""
    x = _values(shape, width)
    view = np.transpose(x, axes)
    dst = np.empty(view.shape, view.dtype)
    return _engine.describe(view.shape, view.strides, dst.strides, width)


@pytest.mark.parametrize("width", [1, 40])
@pytest.mark.parametrize("shape, axes", GATHER_CASES)
def test_small_block_cases_run_as_gathered_rows(shape, axes, width):
    plan = _plan(shape, axes, width)
    assert plan["kernel"] == "gather"
    # The rows are longer than the pieces the block kernel would get.
    assert plan["row_items"] * plan["rows"] >= 4 * 6


def test_gathered_runs_split_their_outer_axis_by_a_divisor(request):
    # [100, 3] merge into 300 runs of 2 x 2 items: 1200 items do not fit the
    # 512-item table; 100 runs (the largest divisor of 300 up to 128) do.
    # A program that repeats (the periodic kernel) runs all 1200 instead.
    assert _plan((100, 3, 2, 2), (0, 1, 3, 2), 1)["row_items"] == (1200 if _periodic(request) else 400)


def test_streamed_pairs_of_4_byte_lanes_interleave_in_the_block_kernel(byte_shuffles):
    """Two lanes of 4-byte items into a resident destination large enough to
    stream: a split takes the pair rows, an interleave the block kernel."""
    with _engine.tune(streaming=True, stream_min_bytes=1 << 20):
        for shape, split in (((4, 2, 65536), False), ((4, 65536, 2), True)):
            view = np.transpose(_values(shape, 4), (0, 2, 1))
            out = np.ones(view.shape, view.dtype)
            plan = _engine.describe(view.shape, view.strides, out.strides, 4, out)
            assert plan["streams"] == _engine.cpu_features()["streaming_stores"]
            # (Where the build cannot stream, the interleave is an
            # ordinary lane transpose.)
            assert (plan["kernel"] == "lanes") == (byte_shuffles and (split or not plan["streams"]))
            fb.transpose(np.transpose(view, (0, 2, 1)), (0, 2, 1), out=out)
            assert _same(out, view)


def test_large_blocks_keep_the_block_kernel():
    # (A byte transpose with a side of at most 256 is a lane transpose; a
    # larger one a staged transpose.)
    assert _plan((300, 280), (1, 0), 1)["kernel"] == "transpose"
    # Two lanes of 4-byte items in rows shorter than PAIR_MIN_PIXELS (32).
    assert _plan((3, 31, 2), (0, 2, 1), 4)["kernel"] == "block"


@pytest.mark.parametrize("width", [1, 2])
@pytest.mark.parametrize("shape, axes", [
    ((8, 20, 3, 2, 2), (0, 3, 1, 4, 2)),     # depth_to_space depth_first, channels_last
    ((8, 2, 20, 2, 3), (0, 2, 4, 1, 3)),     # space_to_depth depth_first, channels_last
    ((4, 60, 3), (0, 2, 1)),                 # three lanes split (lane transposes)
    ((4, 3, 60), (0, 2, 1)),                 # three lanes interleaved (the same)
])
def test_byte_runs_are_shuffled_and_stay_inside_the_source(shape, axes, width, byte_shuffles):
    # The source is the tail of a buffer, so a 16-byte load past its last
    # byte would leave the buffer (the sanitizer build reports it).
    values = _values(shape, width)
    x = _at_buffer_end(values, 7)
    expected = np.ascontiguousarray(np.transpose(values, axes))
    assert _same(fb.transpose(x, axes), expected)
    view = np.transpose(x, axes)
    plan = _engine.describe(view.shape, view.strides, np.empty(view.shape, view.dtype).strides, width)
    lanes = len(shape) == 3
    assert plan["kernel"] == ("lanes" if lanes and byte_shuffles else "gather" if byte_shuffles
                              else "block" if lanes else plan["kernel"])
    assert (plan["shuffled_pieces"] > 0) == (byte_shuffles and not lanes)


# Lane transposes: pixels of up to 256 bytes, L lanes of 1-, 2-, 4- (L >=
# 3, or 2 in rows of 32 pixels or more) or 8-byte items (a split: up to 8
# lanes)
# built from L source rows (interleave) or split into L destination rows, a
# 16-byte register of each lane at a time. (shape, axes) with the lanes'
# extents; pixel counts around the group (16, 8, 4 or 2 pixels) reach the
# last-group stores and loads and the item-by-item tail. Lane counts that a
# width does not take go to the other kernels.
LANE_CASES = [
    ((5, L, n), (0, 2, 1)) for L in (2, 3, 4, 5, 8, 9, 12, 16, 27, 64, 100) for n in (8, 16, 17, 33, 64)
] + [
    ((5, n, L), (0, 2, 1)) for L in (2, 3, 4, 7, 9, 16, 20, 32, 75) for n in (16, 31, 37, 48)
] + [
    # 5-D space_to_depth depth_first, channels_last, bs 3, C 16: 27 lanes
    # (b1, b2, b3) from nine source rows, pixels along the channels.
    ((2, 3, 2, 3, 2, 3, 16), (0, 2, 4, 6, 1, 3, 5)),
    # space_to_depth depth_first, channels_last, bs 3, C 16: lanes (b1, b2)
    # from three source rows, pixels along the channels.
    ((4, 3, 5, 3, 16), (0, 2, 4, 1, 3)),
    # depth_to_space depth_first, channels_last: the split of the same.
    ((4, 5, 16, 3, 3), (0, 3, 1, 4, 2)),
    # space_to_depth channels_first, bs 2: lanes b2 split into planes.
    ((3, 8, 2, 40, 2), (2, 4, 0, 1, 3)),
]


@_drawn(130, {"shape, axes": LANE_CASES}, width=[1, 2, 4, 8])
def test_lanes_are_transposed_in_registers(shape, axes, width, byte_shuffles):
    values = _values(shape, width)
    # The source ends its buffer and the result starts one: a load or a
    # store past either end would show (and the sanitizer build reports it).
    source = _at_buffer_end(values, 5)
    expected = np.ascontiguousarray(np.transpose(values, axes))
    result_buffer = np.zeros(expected.nbytes + 32, np.uint8)
    out = result_buffer[:expected.nbytes].view(expected.dtype).reshape(expected.shape)
    fb.transpose(source, axes, out=out)
    assert _same(out, expected)
    assert not result_buffer[expected.nbytes:].any()
    if not byte_shuffles:
        assert _plan(shape, axes, width)["kernel"] != "lanes"


@_drawn(48, {"shape, axes": [
    ((64, 3, 3, 40, 16), (0, 1, 3, 2, 4)),   # interleave: runs end at every block edge
    ((64, 40, 16, 3, 3), (0, 3, 1, 4, 2)),   # split
    ((16, 3, 1000), (0, 2, 1)),              # long pixel rows cut into blocks
    ((16, 12, 1000), (0, 2, 1)),             # 12 lanes (4- and 8-byte items too)
    ((16, 1000, 4), (0, 2, 1)),
    ((16, 7, 1000), (0, 2, 1)),              # padded blocks of lanes
    ((16, 1000, 11), (0, 2, 1)),
    ((16, 2, 1001), (0, 2, 1)),              # two lanes (4-byte items: fb_pair_rows)
    ((16, 1001, 2), (0, 2, 1)),
]}, num_threads=[1, 2, 3, 8], width=[1, 2, 4, 8],
    cover=[("shape, axes", "width"), ("num_threads",)])
def test_lanes_on_several_threads_and_into_a_strided_out(shape, axes, num_threads, width):
    x = _values(shape, width)
    expected = np.ascontiguousarray(np.transpose(x, axes))
    assert _same(fb.transpose(x, axes, num_threads=num_threads), expected)
    buffer = np.zeros((2, *expected.shape), expected.dtype)
    fb.transpose(x, axes, out=buffer[0], num_threads=num_threads)
    assert _same(buffer[0], expected)
    assert not np.ascontiguousarray(buffer[1]).view(np.uint8).any()


@pytest.mark.parametrize("width", [1, 2, 4, 8])
def test_lanes_with_reversed_source_lanes(width):
    x = _values((5, 8, 40), width)[:, ::-1]
    expected = np.ascontiguousarray(np.transpose(x, (0, 2, 1)))
    assert _same(fb.transpose(x, (0, 2, 1)), expected)


@pytest.mark.parametrize("shape, axes, width, lanes", [
    ((5, 9, 40), (0, 2, 1), 1, 9),       # interleave
    ((5, 40, 9), (0, 2, 1), 1, 9),       # split
    ((5, 5, 40), (0, 2, 1), 2, 5),
    ((5, 40, 8), (0, 2, 1), 2, 8),
    ((5, 16, 8), (0, 2, 1), 1, 8),       # 8 pixels of 16 lanes: split 16 pixels of 8 lanes
    ((4, 3, 5, 3, 16), (0, 2, 4, 1, 3), 1, 9),
    ((3, 8, 2, 40, 2), (2, 4, 0, 1, 3), 2, 2),
    ((5, 12, 40), (0, 2, 1), 4, 12),     # float32: quads of lanes
    ((5, 40, 4), (0, 2, 1), 4, 4),
    ((5, 16, 40), (0, 2, 1), 4, 16),
    ((5, 2, 32), (0, 2, 1), 4, 2),       # float32: two lanes (fb_pair_rows) from 32 pixels
    ((5, 37, 2), (0, 2, 1), 4, 2),
    ((5, 6, 40), (0, 2, 1), 8, 6),       # float64: pairs of lanes
    ((5, 40, 2), (0, 2, 1), 8, 2),
    ((5, 40, 3), (0, 2, 1), 8, 3),       # ... the last pair padded
    ((5, 6, 40), (0, 2, 1), 4, 6),       # the last quad padded
    ((5, 40, 9), (0, 2, 1), 2, 9),       # more than 8 lanes of 2 bytes: blocks of 8
    ((5, 16, 40), (0, 2, 1), 2, 16),
    ((5, 27, 40), (0, 2, 1), 1, 27),     # more than 16 lanes of bytes: blocks of 16
    ((5, 100, 64), (0, 2, 1), 1, 64),
    ((5, 32, 40), (0, 2, 1), 2, 32),
    # NCHW_VECT_C planes -> space of bs 3 (the staged path's shape): lanes
    # (b2, r) of 4 planes apart, 12 lanes of float32.
    ((4, 3, 3, 5, 40), (3, 1, 4, 2, 0), 4, 12),
])
def test_lane_transposes_are_planned(shape, axes, width, lanes, byte_shuffles):
    plan = _plan(shape, axes, width)
    assert (plan["kernel"], plan["lanes"]) == (("lanes", lanes) if byte_shuffles else (plan["kernel"], 0))
    assert plan["kernel"] != "lanes" or byte_shuffles


def test_lane_transposes_are_only_for_small_items_and_long_pixel_rows():
    assert _plan((5, 129, 140), (0, 2, 1), 2)["kernel"] != "lanes"   # more than 256 bytes a pixel
    assert _plan((5, 2, 31), (0, 2, 1), 4)["kernel"] != "lanes"      # 2 lanes of 4 bytes, 31 pixels
    assert _plan((5, 31, 2), (0, 2, 1), 4)["kernel"] != "lanes"
    assert _plan((5, 65, 70), (0, 2, 1), 4)["kernel"] != "lanes"     # more than 64 lanes of 4 bytes
    assert _plan((5, 40, 9), (0, 2, 1), 8)["kernel"] != "lanes"      # a split of more than 8 lanes of 8 bytes
    assert _plan((5, 33, 40), (0, 2, 1), 8)["kernel"] != "lanes"     # more than 32 lanes of 8 bytes
    assert _plan((5, 4, 40), (0, 2, 1), 16)["kernel"] != "lanes"     # 16-byte items
    assert _plan((5, 9, 15), (0, 2, 1), 1)["kernel"] != "lanes"      # fewer than 16 pixels
    assert _plan((5, 257, 280), (0, 2, 1), 1)["kernel"] != "lanes"   # more than 256 lanes either way


@_drawn(30, width=[1, 2, 4], num_threads=[1, 3], axes={"shape, axes": [
    # depth_to_space depth_first, channels_last, W/bs = 394 = 2 * 197: no
    # divisor near the best run length, so the run's outer axis is cut into
    # equal pieces and a shorter last one.
    ((64, 394, 3, 2, 2), (0, 3, 1, 4, 2)),
    # space_to_depth depth_first, channels_last, the same width.
    ((64, 2, 394, 2, 3), (0, 2, 4, 1, 3)),
    # The same with 2364 = 4 * 3 * 197 pixels (57 pieces) and 3 rows of
    # them (65 pieces): runs of up to 1 KiB (1- and 2-byte items) are the
    # kernel's rows, in blocks of 16 or 32; the block holding the last,
    # shorter piece may hold only it.
    ((3, 2, 2364, 2, 3), (0, 2, 4, 1, 3)),
    ((3, 2, 2364, 3, 3), (0, 2, 4, 1, 3)),
]})
def test_ragged_gathered_runs(shape, axes, width, num_threads, request):
    values = _values(shape, width)
    # The source ends its buffer: a shuffle window of the shorter last run
    # must not read past it. The destination is followed by zeros: the
    # shorter piece must not be written as a whole one.
    _transpose_into_fenced_out(_at_buffer_end(values, 3), axes,
                               np.ascontiguousarray(np.transpose(values, axes)), (num_threads,))
    plan = _plan(shape, axes, width)
    assert plan["kernel"] == "gather"
    if plan["last_row_items"] is None:
        # A program that repeats (bs 2: every 16 pixels) may run whole rows
        # longer than the table (up to 4 KiB) instead.
        assert _periodic(request)
        assert plan["shuffle_period"] and plan["row_items"] > 512
    else:
        assert 0 < plan["last_row_items"] < plan["row_items"]


def test_blocks_that_end_a_source_row_are_followed_by_the_next_row():
    # space_to_depth, 5-D, bs 2: each block (one source row, bw interleaved)
    # is a whole kernel; the bh axis, whose source step is one row, runs
    # innermost so that the source is read row after row. (16-byte items:
    # narrower ones split bw's two lanes in the lane kernel.)
    x = _values((8, 6, 2, 6, 2, 64, 2), 16)
    axes = (2, 4, 6, 0, 1, 3, 5)
    plan = _plan(x.shape, axes, 16)
    assert plan["kernel"] == "block" and plan["loop"][-3:] == (2, 1, 1)
    assert _transposes_like_numpy(x, axes, (1, 3))


def test_short_destination_rows_keep_the_axis_that_fills_their_gaps_inside():
    # space_to_depth blocks_first, 5-D channels_last, bs 2, C 3, float32:
    # [d, bd, h, bh, w, (bw c)] -> [d, h, w, bd, bh, (bw c)]. A block is the
    # 2 bh items (48 bytes) of each of the w pixels, 96 bytes apart; the bd
    # axis writes the rest of those pixels, so it stays inside the h loop
    # instead of h moving innermost to follow the source. (With C 12 bytes,
    # the same shape, the runs are gathered by byte shuffles instead.)
    x = _values((2, 2, 8, 2, 30, 6), 4)
    axes = (0, 2, 4, 1, 3, 5)
    plan = _plan(x.shape, axes, 4)
    assert plan["kernel"] == "block" and plan["loop"][-3:] == (2, 1, 1)
    assert _transposes_like_numpy(x, axes, (1, 3))


def test_fortran_order_rows_take_every_axis_of_the_source_run():
    # space_to_depth of a Fortran-order [8, 6, 16, 128] float32 input: the
    # source is contiguous over N (8 items, 32 bytes) and then C, so a
    # staged transpose's rows run over both: 48 rows of 4-byte items.
    x = np.asfortranarray(_values((8, 6, 16, 128), 4))
    n, c, h, w = x.strides
    six = np.lib.stride_tricks.as_strided(x, (8, 6, 8, 2, 64, 2), (n, c, 2 * h, h, 2 * w, w))
    axes = (0, 3, 5, 1, 2, 4)
    view = np.transpose(six, axes)
    plan = _engine.describe(view.shape, view.strides, np.empty(view.shape, view.dtype).strides, 4)
    assert plan["kernel"] == "transpose" and plan["rows"] == 48
    expected = np.ascontiguousarray(view)
    for num_threads in (1, 3):
        assert _same(fb.space_to_depth(x, 2, num_threads=num_threads).reshape(expected.shape), expected)


def test_pieces_with_like_window_counts_run_without_dispatch(byte_shuffles):
    # space_to_depth depth_first, channels_last, C 3, bs 2: each 16-byte
    # piece of a pixel row takes its bytes from one or two windows (the two
    # source rows); every piece is given two, and the result is the same.
    shape, axes = (40, 2, 48, 2, 3), (0, 2, 4, 1, 3)
    plan = _plan(shape, axes, 1)
    assert plan["uniform_windows"] == (2 if byte_shuffles else 0)
    x = _values(shape, 1)
    assert _transposes_like_numpy(x, axes)


@_drawn(45, width=[1, 2, 4], pixels=[6, 11, 16, 32, 43, 85], channels=[3, 5],
        cover=[("width", "byte_shuffles"), ("pixels", "channels")])
def test_gathered_runs_of_any_length_by_whole_pieces(width, pixels, channels, byte_shuffles,
                                                     wide_pieces):
    # space_to_depth depth_first, channels_last, bs 2: pixel rows of
    # 2 * pixels * 2 * channels items gathered from two source rows. Runs
    # that are not whole pieces end with a piece overlapping the one before
    # it; runs or source spans shorter than a piece gather item by item.
    # 4-byte items shuffle only in 64-byte pieces of at most 4 windows each.
    # 64-byte pieces of pixels that repeat only after more than 4 pieces (5
    # channels: 20 bytes a pixel, 5 pieces; 40 bytes, 5 pieces) may advance
    # by whole pixels (60 bytes, or 40), the last one ending at the run's end.
    shape, axes = (6, 2, pixels, 2, channels), (0, 2, 4, 1, 3)
    plan = _plan(shape, axes, width)
    run_bytes = plan["row_items"] * width
    if not byte_shuffles:
        piece = 0
    elif wide_pieces and run_bytes >= 64:
        piece = 64
    else:
        piece = 16 if run_bytes >= 16 and width <= 2 else 0
    if width == 4 and piece and not plan["uniform_windows"]:
        piece = 0
    if plan["kernel"] == "gather":
        assert plan["shuffle_piece_bytes"] == piece
        advance = plan["shuffle_piece_advance"]
        assert advance == piece or (piece == 64 and channels == 5 and advance in (40, 60))
        assert plan["shuffled_pieces"] == (-(-(run_bytes - piece) // advance) + 1 if piece else 0)
        if width == 4 and piece:
            assert 1 <= plan["uniform_windows"] <= 4
    else:
        # Five channels of 4-byte items: a lane transpose.
        assert width == 4 and plan["kernel"] == "lanes"
    x = _values(shape, width)
    expected = np.ascontiguousarray(np.transpose(x, axes))
    # The rows end a buffer, so a write past a run's end would show.
    _transpose_into_fenced_out(x, axes, expected, (1, 2))


@pytest.mark.parametrize("width", [1, 2, 4])
@pytest.mark.parametrize("shape, axes, periods, periods16", [
    # space_to_depth depth_first NCHW_VECT_C bs 2 ([N, G, H/2, 2, W/2, 2, 4]
    # -> [N, G, 4, H/2, W/2, 2, 2]). 2- and 4-byte items: each piece of a
    # pixel row repeats the one before it, 8 or 4 pixels on; a run of
    # several rows repeats the first row's pieces, a source row pair on.
    # Bytes: 96-byte rows, so every third piece repeats (two rows on).
    # 16-byte pieces (no 4-byte items) repeat every piece.
    ((1, 2, 5, 2, 24, 2, 4), (0, 1, 6, 2, 4, 3, 5), {1: 3, 2: 1, 4: 1}, {1: 1, 2: 1}),
    ((2, 1, 4, 2, 64, 2, 4), (0, 1, 6, 2, 4, 3, 5), {1: 1, 2: 1, 4: 1}, {1: 1, 2: 1}),
    # space_to_depth depth_first channels_last C 3 bs 2: every third piece
    # repeats (64-byte pieces: 16 pixels on; 16-byte ones: 4 pixels of
    # bytes, 2 of 2-byte items). A row of 43 pixels of bytes (516 items) is longer than the
    # table: one run, its first period repeated by the periodic kernel, then
    # the table's 42 pixels (too short to repeat).
    ((6, 2, 200, 2, 3), (0, 2, 4, 1, 3), {1: 3, 2: 3, 4: 3}, {1: 3, 2: 3}),
    ((6, 2, 43, 2, 3), (0, 2, 4, 1, 3), {1: 3, 2: 3, 4: 3}, {1: 3, 2: 3}),
])
def test_repeating_pieces_run_from_registers(shape, axes, periods, periods16, width, byte_shuffles,
                                             request):
    # Programs that repeat run by the periodic kernel of their pieces
    # (masks kept in registers); the table loop finishes the pieces past the
    # period (the last, overlapping one at least), and must give the same bytes.
    plan = _plan(shape, axes, width)
    period = (periods if plan["shuffle_piece_bytes"] == 64 else periods16).get(width, 0)
    if _periodic(request) and plan["shuffled_pieces"]:
        assert plan["shuffle_period"] == period
        assert (0 < plan["periodic_pieces"] < plan["shuffled_pieces"]) == (period > 0)
    else:
        assert plan["shuffle_period"] == plan["periodic_pieces"] == 0
    values = _values(shape, width)
    # The source ends its buffer and the destination is followed by zeros.
    _transpose_into_fenced_out(_at_buffer_end(values, 5), axes,
                               np.ascontiguousarray(np.transpose(values, axes)), (1, 2))


@pytest.mark.parametrize("width", [1, 2, 4])
@pytest.mark.parametrize("pixels", [43, 60, 130, 292, 700, 1000, 2000])
def test_repeating_runs_longer_than_the_table(width, pixels, request):
    # space_to_depth depth_first, channels_last, C 3, bs 2: destination
    # rows of `pixels` pixels of 12 items gathered from two source rows
    # ([H/2, 2, W/2, 2, 3] -> [H/2, W/2, 3, 2, 2], the destination rows
    # apart, so a row is the longest run). Rows past the 512-item table run
    # whole when their program repeats (up to 4 KiB: longer ones in
    # near-equal parts and a shorter last one): the periodic kernel for
    # the first periods, then the table for the rest. Without the periodic
    # kernel they are split at the table's size.
    shape, axes = (3, 2, pixels, 2, 3), (0, 2, 4, 1, 3)
    row_items = pixels * 12
    values = _values(shape, width)
    x = _at_buffer_end(values, 3)
    view = np.transpose(x, axes)
    buffer = np.zeros((3, row_items + 16), values.dtype)
    out = buffer[:, :row_items].reshape(view.shape)
    plan = _engine.describe(view.shape, view.strides, out.strides, width)
    assert plan["kernel"] == "gather"
    if _periodic(request) and plan["row_items"] > 512:
        # Each pixel reaches 12 items further in the destination, 6 in the
        # source: runs of up to 4 KiB of destination, in the fewest such
        # parts, or in parts of down to half as many pixels that divide the
        # row (whole_part).
        parts = -(-row_items * width // 4096)
        longest = -(-pixels // parts)
        part = next((n for n in range(longest, longest // 2, -1) if pixels % n == 0), longest)
        assert plan["row_items"] == part * 12
        assert plan["shuffle_period"] == 3
        piece = plan["shuffle_piece_bytes"]
        assert plan["shuffled_pieces"] == -(-plan["row_items"] * width // piece)
        # The lead runs all but the last table-sized run.
        assert 0 < plan["shuffled_pieces"] - plan["periodic_pieces"] <= 512 * width // piece + 1
    else:
        assert plan["row_items"] <= 512
    expected = np.ascontiguousarray(np.transpose(values, axes))
    for num_threads in (1, 2):
        buffer[...] = np.zeros(1, buffer.dtype)
        fb.transpose(x, axes, out=out, num_threads=num_threads)
        assert _same(out, expected)
        assert not buffer[:, row_items:].view(np.uint8).any()


@_drawn(45, width=[1, 2, 4], pixels=[3, 7, 20, 43, 150, 500], axes={"shape, axes, pixel_items": [
    # space_to_depth depth_first channels_last C 3 bs 3: destination pixels
    # of 27 items, 9 from each of three source rows.
    ((2, 3, None, 3, 3), (0, 2, 4, 1, 3), 27),
    # depth_to_space depth_first channels_last C 3 bs 3: destination pixels
    # of 9 items, each from its own 27-item source pixel.
    ((2, None, 3, 3, 3), (0, 3, 1, 4, 2), 9),
]}, cover=[("width", "byte_shuffles"), ("pixels", "shape, axes, pixel_items")])
def test_pieces_advancing_by_whole_pixels(shape, axes, pixel_items, pixels, width, request):
    # Pixels of 9 or 27 bytes repeat every 9 or 27 64-byte pieces, too many
    # for the periodic kernel; pieces that advance by whole pixels (63 or
    # 54 bytes) all take the same windows. (Pixels of over 64 bytes keep
    # 64-byte pieces.) Each stores 64 bytes, zeros past
    # its pixels that the next piece overwrites; the last piece ends at the
    # run's end. The rows here end the destination, and the source its
    # buffer.
    shape = tuple(pixels if e is None else e for e in shape)
    values = _values(shape, width)
    plan = _plan(shape, axes, width)
    pixel_bytes = pixel_items * width
    mode = request.node.callspec.params["byte_shuffles"]
    # Shorter rows are runs of several rows, whose pixels are whole rows.
    if mode.startswith("64-byte") and pixel_bytes <= 64 and pixels >= 20:
        assert plan["kernel"] == "gather"
        assert plan["shuffle_piece_advance"] == 64 // pixel_bytes * pixel_bytes
        assert plan["shuffle_period"] == (1 if mode == "64-byte shuffles" else 0)
        assert plan["shuffled_pieces"] == -(-(plan["row_items"] * width - 64)
                                            // plan["shuffle_piece_advance"]) + 1
    elif plan["kernel"] == "gather":
        assert plan["shuffle_piece_advance"] == plan["shuffle_piece_bytes"]
    _transpose_into_fenced_out(_at_buffer_end(values, 5), axes,
                               np.ascontiguousarray(np.transpose(values, axes)), (1, 2))


@_drawn(80, width=[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 24],
        count=[2, 15, 16, 17, 21, 33, 48, 100],
        cover=[("width", "byte_shuffles"), ("count", "byte_shuffles")])
def test_short_items_repeated_along_a_row(width, count, byte_shuffles):
    # Tile with the repeat innermost: rows of one item repeated, written as
    # whole registers of the row's period (lcm(width, 16) bytes) where the
    # CPU has byte shuffles and the row holds a period, else by doubling
    # copies. Rows end a buffer, so a write past a row's end would show.
    x = _values((7, 1), width)
    expected = np.tile(x, (1, count))
    buffer = np.zeros(expected.nbytes + 16, np.uint8)
    out = buffer[:expected.nbytes].view(expected.dtype).reshape(expected.shape)
    fb.tile(x, (1, count), out=out)
    assert _same(out, expected)
    assert not buffer[expected.nbytes:].any()
    strided = _values((7, 2), width)[:, :1]
    assert _same(fb.tile(strided, (3, count)), np.tile(strided, (3, count)))


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_blocks_moved_item_by_item_are_shuffled_instead(dtype, byte_shuffles):
    # depth_to_space of a view stepping 2 items along W: the block (rows of
    # W items 2 apart on both sides, and the 2 bw items) has no vector loop;
    # with byte shuffles the destination runs are gathered by shuffles.
    wide = np.arange(1 * 16 * 24 * 80).astype(dtype).reshape(1, 16, 24, 80)
    depth = wide[..., ::2]
    n, cd, h, w = depth.shape
    s = depth.strides
    view = np.lib.stride_tricks.as_strided(depth, (n, 2, 2, 4, h, w),
                                           (s[0], 8 * s[1], 4 * s[1], s[1], s[2], s[3]))
    view = view.transpose(0, 3, 4, 1, 5, 2)
    plan = _engine.describe(view.shape, view.strides, np.empty(view.shape, dtype).strides, view.itemsize)
    if byte_shuffles:
        assert plan["kernel"] == "gather" and plan["shuffled_pieces"] > 0
    expected = np.ascontiguousarray(view).reshape(1, 4, 48, 80)
    for num_threads in (1, 3):
        assert np.array_equal(fb.depth_to_space(depth, 2, num_threads=num_threads), expected)


@pytest.mark.parametrize("dtype, bs", [(np.uint8, 2), (np.uint8, 3), (np.float16, 2)])
def test_odd_folded_items_are_shuffled_unfolded(dtype, bs, byte_shuffles, wide_pieces):
    # space_to_depth blocks_first channels_last C=3: (bw, c) is contiguous on
    # both sides, 3*bs items that would fold into one odd-sized item moved
    # item by item. Unfolded, the destination runs of a large copy are
    # gathered by byte shuffles, where the CPU has them.
    # Large copies only (8 MiB or more): 1680 x 1680 x 3 bytes, 1200 x 1200 x 3 float16.
    edge = 1680 if dtype == np.uint8 else 1200
    space = (np.arange(edge * edge * 3) % 251).astype(dtype).reshape(1, edge, edge, 3)
    n, h, w, c = space.shape
    s = space.strides
    view = np.lib.stride_tricks.as_strided(space, (n, h // bs, w // bs, bs, bs, c),
                                           (s[0], bs * s[1], bs * s[2], s[1], s[2], s[3]))
    plan = _engine.describe(view.shape, view.strides, np.empty(view.shape, dtype).strides, view.itemsize)
    if byte_shuffles:
        assert plan["kernel"] == "gather" and plan["width"] == space.itemsize and plan["shuffled_pieces"] > 0
    else:
        assert plan["width"] == 3 * bs * space.itemsize
    expected = np.ascontiguousarray(view).reshape(n, h // bs, w // bs, bs * bs * c)
    # depth_to_space back: its runs are made to shuffle for folds of up to 6
    # bytes, or 12 with 64-byte pieces.
    depth_view = expected.reshape(n, h // bs, w // bs, bs, bs, c).transpose(0, 1, 3, 2, 4, 5)
    plan = _engine.describe(depth_view.shape, depth_view.strides,
                            np.empty(depth_view.shape, dtype).strides, depth_view.itemsize)
    most = 12 if wide_pieces else 6
    if byte_shuffles and 3 * bs * space.itemsize <= most:
        assert plan["kernel"] == "gather" and plan["width"] == space.itemsize and plan["shuffled_pieces"] > 0
    else:
        assert plan["width"] == 3 * bs * space.itemsize
    for num_threads in (1, 3):
        result = fb.space_to_depth(space, bs, "blocks_first", "channels_last", num_threads=num_threads)
        assert np.array_equal(result, expected)
        assert np.array_equal(fb.depth_to_space(result, bs, "blocks_first", "channels_last",
                                                num_threads=num_threads), space)


def test_unfolded_runs_that_would_read_source_lines_twice_stay_folded(byte_shuffles):
    # 5-D depth_to_space blocks_first channels_last C=3 bs=2 uint8 (12 MB):
    # its unfolded, shuffled runs would loop over bd (12 bytes apart in the
    # source) outside h, reading each source line once per bd a plane
    # apart; the folded 6-byte items are kept.
    space = (np.arange(1 * 160 * 160 * 160 * 3) % 251).astype(np.uint8).reshape(1, 160, 160, 160, 3)
    depth = fb.space_to_depth(space, 2, "blocks_first", "channels_last")
    view = depth.reshape(1, 80, 80, 80, 2, 2, 2, 3).transpose(0, 1, 4, 2, 5, 3, 6, 7)
    plan = _engine.describe(view.shape, view.strides, np.empty(view.shape, np.uint8).strides, 1)
    assert plan["width"] == 6
    for num_threads in (1, 3):
        assert np.array_equal(fb.depth_to_space(depth, 2, "blocks_first", "channels_last",
                                                num_threads=num_threads), space)


@pytest.mark.parametrize("channels, bs", [(1, 3), (3, 2), (3, 3)])
def test_short_folds_of_copies_in_cache_are_shuffled_unfolded(channels, bs, byte_shuffles,
                                                               wide_pieces):
    # space_to_depth channels_last uint8 of about 1 MiB (below the 8 MiB of
    # test_odd_folded_items_are_shuffled_unfolded): (bw, c) folds into
    # channels * bs bytes. 3-byte items, the costliest per byte, are
    # unfolded into shuffled gathers at this size, and 6-byte ones where the
    # shuffles have 64-byte pieces; 9-byte ones stay folded.
    edge = 600 // channels // bs * bs
    space = (np.arange(edge * edge * 3 * channels) % 251).astype(np.uint8).reshape(1, 3 * edge, edge, channels)
    n, h, w, c = space.shape
    s = space.strides
    view = np.lib.stride_tricks.as_strided(space, (n, h // bs, w // bs, bs, bs, c),
                                           (s[0], bs * s[1], bs * s[2], s[1], s[2], s[3]))
    plan = _engine.describe(view.shape, view.strides, np.empty(view.shape, np.uint8).strides, 1)
    if byte_shuffles and (c * bs == 3 or (wide_pieces and c * bs <= 6)):
        assert plan["kernel"] == "gather" and plan["width"] == 1 and plan["shuffled_pieces"] > 0
    else:
        assert plan["width"] == c * bs
    expected = np.ascontiguousarray(view).reshape(n, h // bs, w // bs, bs * bs * c)
    for num_threads in (1, 3):
        result = fb.space_to_depth(space, bs, "blocks_first", "channels_last", num_threads=num_threads)
        assert np.array_equal(result, expected)
        assert np.array_equal(fb.depth_to_space(result, bs, "blocks_first", "channels_last",
                                                num_threads=num_threads), space)


@_drawn(40, short_by=[0, 3, None], axes={"interleave, width, lanes": [
    (False, 1, 17), (False, 1, 64), (False, 2, 9), (False, 2, 12), (False, 2, 40),
    (False, 4, 9), (False, 4, 12), (False, 4, 64),
    (True, 1, 17), (True, 1, 64), (True, 2, 12), (True, 4, 9), (True, 4, 64),
    (True, 8, 9), (True, 8, 32),
]}, cover=[("interleave, width, lanes",), ("short_by", "byte_shuffles")])
def test_lanes_a_power_of_two_apart_move_a_line_at_a_time(interleave, width, lanes, short_by,
                                                            byte_shuffles):
    # More than 8 lanes 8 KiB apart (their lines share cache sets) take the
    # line-at-a-time order: split (pixels -> lanes; the lanes are rows of
    # an out= view) or interleave (of a source view), padded (lanes not a
    # multiple of a register's items) or not, runs of whole register groups
    # or ending in a partial one (short_by; None: 37 pixels).
    row = 8192 // width
    pixels = 37 if short_by is None else row - short_by
    lanes_buffer = _values((2, lanes, row), width)
    if interleave:
        x = lanes_buffer[:, :, :pixels]
        out = np.zeros((2, pixels, lanes), x.dtype)
    else:
        x = np.ascontiguousarray(_values((2, pixels, lanes), width))
        out = lanes_buffer[:, :, :pixels]
    view = x.transpose(0, 2, 1)
    expected = np.ascontiguousarray(view)
    plan = _engine.describe(view.shape, view.strides, out.strides, width)
    if byte_shuffles:
        assert plan["kernel"] == "lanes" and plan["lanes"] == lanes
    for num_threads in (1, 2):
        out[...] = np.zeros(1, out.dtype)
        fb.transpose(x, (0, 2, 1), out=out, num_threads=num_threads)
        assert _same(out, expected)


def _table_copy_expected(buffer: np.ndarray, base: int, extents, steps, table, width: int):
    """The items a copy with a table axis reads, by NumPy: item
    ``(r, x, k)`` is the ``width`` bytes at ``base + r*steps[0] + x*steps[1] + table[k]``."""
    rows, pixels, _ = extents
    starts = (base + np.arange(rows)[:, None, None] * steps[0]
              + np.arange(pixels)[None, :, None] * steps[1] + np.asarray(table)[None, None, :])
    picked = buffer[starts[..., None] + np.arange(width)]
    return picked.reshape(-1).view(np.dtype(f"V{width}")).reshape(extents)


@_drawn(50, width=WIDTHS, pixels=[1, 7, 40, 300], num_threads=[1, 3],
        cover=[("width", "byte_shuffles"), ("pixels", "num_threads")])
def test_table_axes_match_numpy(width, pixels, num_threads):
    """A table axis (the NCHW_VECT_C depth_first rows): the innermost
    destination axis reads its items at offsets no step describes, here
    12 items of 4-item pixels from 3 rows, like depth_to_space bs 3, and
    the rows step backwards."""
    rows, lanes = 5, 12
    pixel_step, row_step = 4 * width, 3 * 4 * pixels * width
    rng = np.random.default_rng(width + pixels)
    # Lane l reads item l % 4 of the pixel, in one of 3 rows.
    table = [(l % 4) * width + rng.integers(0, 3) * row_step for l in rng.permutation(lanes)]
    buffer = rng.integers(0, 256, (rows + 3) * 3 * row_step, dtype=np.uint8)
    base = (rows + 2) * 3 * row_step
    src = buffer.view(np.dtype(f"V{width}"))
    dst = np.zeros((rows, pixels, lanes), np.dtype(f"V{width}"))
    expected = _table_copy_expected(buffer, base, (rows, pixels, lanes),
                                    (-3 * row_step, pixel_step), table, width)
    # The copy reads from base: the engine's source pointer is the array's
    # data, so the base goes into the one part's source offset.
    _engine.copy(src, dst, (rows, pixels, lanes), (-3 * row_step, pixel_step, 0),
                 dst.strides, parts=((base, 0),), num_threads=num_threads, source_table=table)
    assert _same(dst, expected)


def test_table_axes_of_one_item_move_the_source():
    x = np.arange(60, dtype=np.uint8)
    dst = np.zeros((3, 4, 1), np.uint8)
    _engine.copy(x, dst, (3, 4, 1), (20, 2, 0), dst.strides, source_table=[5])
    np.testing.assert_array_equal(dst[..., 0], x[5::20][:3, None] + np.arange(0, 8, 2))


def test_table_axes_must_be_the_destinations_innermost():
    x = np.zeros(64, np.uint8)
    dst = np.zeros((4, 4), np.uint8)
    with pytest.raises(ValueError, match="table axis"):
        _engine.copy(x, dst, (4, 4), (0, 1), (1, 4), source_table=[0, 1, 2, 3])
    with pytest.raises(ValueError, match="one offset per index"):
        _engine.copy(x, dst, (4, 4), (4, 0), (4, 1), source_table=[0, 1])


def test_table_runs_are_shuffled(byte_shuffles, request):
    """depth_to_space depth_first NCHW_VECT_C bs 3 bytes: a space row's
    12-byte pixels read 4-byte depth pixels of 6 planes through a table;
    the runs are built by byte shuffles where the CPU has them. 64-byte
    pieces repeat only every 3 pieces of 6 windows, more than the periodic
    kernel holds: pieces of 5 whole pixels (60 bytes) repeat every piece."""
    plane, bs, blocks = 4 * 300 * 40, 3, 9
    table = []
    for i in range(4 * bs):
        t = i % 4 * blocks + i // 4     # row kind b1 = 0
        table.append(t // 4 * plane + t % 4)
    plan = _engine.describe((40, 300, 4 * bs), (1200, 4, 0), (3 * 3600, 12, 1), 1,
                            source_table=table)
    assert plan["kernel"] == "gather"
    assert (plan["shuffled_pieces"] > 0) == byte_shuffles
    if request.node.callspec.params["byte_shuffles"] == "64-byte shuffles":
        assert plan["shuffle_piece_advance"] == 60 and plan["shuffle_period"] == 1
        assert plan["uniform_windows"] == 6 and plan["periodic_pieces"] > 0


@pytest.mark.parametrize("pixels", [64, 171, 1000, 65536])
@pytest.mark.parametrize("dtype, channels, repeats", [
    (np.uint8, 3, 8), (np.uint8, 3, 5), (np.uint8, 1, 16), (np.uint16, 3, 4), (np.uint8, 5, 3)])
def test_tile_of_short_pixels_along_the_last_axis(dtype, channels, repeats, pixels, request):
    """Tile's last-axis repeats of short pixels ([H, W, C] by (1, 1, r)):
    gathered runs of whole pixels, by byte shuffles where they apply. Their
    programs repeat, so the runs are long (up to 4 KiB, in parts that
    divide the pixels where a near-equal part does) and run by the
    periodic kernel of their pieces. The source ends its buffer, the result
    is followed by zeros."""
    values = np.random.default_rng(pixels).integers(0, 1 << 16, (2, pixels, channels)).astype(dtype)
    x = _at_buffer_end(values, 3)
    expected = np.tile(values, (1, 1, repeats))
    buffer = np.zeros(expected.nbytes + 64, np.uint8)
    out = buffer[:expected.nbytes].view(dtype).reshape(expected.shape)
    plan = _engine.describe(*_engine.tile_copy_axes(x, out, (1, 1, repeats)), x.itemsize)
    pixel_bytes = channels * repeats * x.itemsize
    # 16-byte pieces repeat within the periodic kernel's 4 pieces where
    # lcm(pixel, 16) does; 64-byte ones always here (by whole pixels).
    repeats_within_4 = plan["shuffle_piece_bytes"] == 64 or math.lcm(pixel_bytes, 16) <= 64
    if plan["shuffled_pieces"] and _periodic(request) and repeats_within_4 \
            and pixels * pixel_bytes > 4096:
        assert plan["shuffle_period"] > 0 and plan["periodic_pieces"] > 0, plan
        assert plan["row_items"] > 512, plan
    for num_threads in (1, 2):
        out[...] = 0
        assert fb.tile(x, (1, 1, repeats), out=out, num_threads=num_threads) is out
        assert out.tobytes() == expected.tobytes()
    assert not buffer[expected.nbytes:].any()
