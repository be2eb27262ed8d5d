"""Each inner path of the copy engine, driven on purpose through
``fastblock.transpose`` and checked against NumPy.

The engine picks its kernel from the axes it is given: row ``memcpy``,
(de-)interleaved lanes, staged transposes, strided items, and gathered
destination runs for copies whose natural blocks are tiny (the
depth_first channels_last plans) or that are three lanes of bytes, built
by byte shuffles where the CPU has them (every test runs with and without). The public-API tests reach these paths
by chance; here every path is reached by construction, for item widths
that are powers of two, odd widths (overlapping copies) and wide items,
with negative source steps, on one thread and on several.
"""
from __future__ import annotations

import numpy as np
import pytest

import fastblock as fb
from fastblock import _engine

@pytest.fixture(params=["shuffles", "item loop"], autouse=True)
def byte_shuffles(request):
    """Run every test with the byte shuffles (where the CPU has them) and
    with the portable item-by-item gather."""
    # Shuffles for copies of any size, so that the small inputs here reach them.
    before = _engine.set_shuffles(request.param == "shuffles", 0)
    yield request.param == "shuffles" and _engine.shuffles_available()
    _engine.set_shuffles(*before)


# Widths that take each item loop: 1, 2, 4, 8, 16 bytes; 3, 6, 12, 24
# (two overlapping copies); 40 (one memcpy per item).
WIDTHS = [1, 2, 3, 4, 6, 8, 12, 16, 24, 40]


def _values(shape, width: int) -> np.ndarray:
    """Distinct bytes in every item, as a void array of ``width``-byte items."""
    raw = np.random.default_rng(width).integers(0, 256, size=(*shape, width), dtype=np.uint8)
    return raw.view(np.dtype(f"V{width}")).reshape(shape)


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
    # A prime extent has no divisor to split by: rows of the inner run.
    ((2, 97, 2, 3), (0, 1, 3, 2)),
    # depth_to_space depth_first, channels_last: [h, w, c, b1, b2] -> [h, b1, w, b2, c].
    ((4, 12, 3, 2, 2), (0, 3, 1, 4, 2)),
]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("shape, axes", GATHER_CASES)
def test_small_block_plans_match_numpy(shape, axes, width):
    x = _values(shape, width)
    expected = np.ascontiguousarray(np.transpose(x, axes))
    assert _same(fb.transpose(x, axes), expected)


@pytest.mark.parametrize("width", [1, 3, 4, 16])
def test_small_block_plans_with_negative_source_steps(width):
    x = _values((4, 12, 3, 2, 2), width)[::-1, :, ::-1, :, ::-1]
    axes = (0, 3, 1, 4, 2)
    expected = np.ascontiguousarray(np.transpose(x, axes))
    assert _same(fb.transpose(x, axes), expected)


@pytest.mark.parametrize("width", [1, 4, 6])
@pytest.mark.parametrize("num_threads", [1, 2, 3, 8])
def test_small_block_plans_on_several_threads(width, num_threads):
    # About 1 MiB and more: above the single-thread cut-off.
    x = _values((64, 120, 3, 2, 2), width)
    axes = (0, 3, 1, 4, 2)
    expected = np.ascontiguousarray(np.transpose(x, axes))
    result = fb.transpose(x, axes, num_threads=num_threads)
    assert _same(result, expected)


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


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("shape, axes", [
    ((64, 48), (1, 0)),                  # staged transpose tiles
    ((45, 37), (1, 0)),                  # ... with edges beside the register tiles
    ((5, 7), (1, 0)),                    # a transpose too small to stage
    ((3, 50, 2), (0, 2, 1)),             # two lanes interleaved
    ((3, 4, 50), (0, 2, 1)),             # four lanes split
    ((9, 30, 5), (2, 0, 1)),             # strided items
])
def test_other_block_kernels_match_numpy(shape, axes, width):
    x = _values(shape, width)
    expected = np.ascontiguousarray(np.transpose(x, axes))
    assert _same(fb.transpose(x, axes), expected)


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


def test_gathered_runs_split_their_outer_axis_by_a_divisor():
    # [100, 3] merge into 300 runs of 2 x 2 items: 1200 items do not fit the
    # 512-item table; 100 runs (the largest divisor of 300 up to 128) do.
    assert _plan((100, 3, 2, 2), (0, 1, 3, 2), 1)["row_items"] == 400


def test_large_blocks_keep_the_block_kernel():
    assert _plan((64, 48), (1, 0), 1)["kernel"] == "block"
    assert _plan((3, 50, 2), (0, 2, 1), 4)["kernel"] == "block"


@pytest.mark.parametrize("width", [1, 2])
@pytest.mark.parametrize("shape, axes", [
    ((8, 20, 3, 2, 2), (0, 3, 1, 4, 2)),     # depth_to_space depth_first, channels_last
    ((8, 2, 20, 2, 3), (0, 2, 4, 1, 3)),     # space_to_depth depth_first, channels_last
    ((4, 60, 3), (0, 2, 1)),                 # three lanes split
    ((4, 3, 60), (0, 2, 1)),                 # three lanes interleaved
])
def test_byte_runs_are_shuffled_and_stay_inside_the_source(shape, axes, width, byte_shuffles):
    # The source is the tail of a buffer, so a 16-byte load past its last
    # byte would leave the buffer (the sanitizer build reports it).
    values = _values(shape, width)
    buffer = np.empty(values.size + 7, values.dtype)
    x = buffer[7:].reshape(shape)
    x[...] = values
    expected = np.ascontiguousarray(np.transpose(values, axes))
    assert _same(fb.transpose(x, axes), expected)
    view = np.transpose(x, axes)
    plan = _engine.describe(view.shape, view.strides, np.empty(view.shape, view.dtype).strides, width)
    assert (plan["shuffled_pieces"] > 0) == byte_shuffles
