"""Every documented error case (docs/errors.md): exception type, and a message naming the argument."""
import time

import numpy as np
import pytest

import fastblock as fb

BLOCK_OPS = [fb.space_to_depth, fb.depth_to_space]
BLOCK_IDS = ["space_to_depth", "depth_to_space"]


@pytest.mark.parametrize("op", BLOCK_OPS, ids=BLOCK_IDS)
@pytest.mark.parametrize("shape", [(), (4,), (2, 4), (1, 4)])
def test_rank_below_three(op, shape):
    x = np.zeros(shape)
    with pytest.raises(ValueError, match="rank"):
        op(x, 1)
    with pytest.raises(ValueError, match="rank"):
        op(x, 2, data_format="channels_last")


@pytest.mark.parametrize("op", BLOCK_OPS, ids=BLOCK_IDS)
@pytest.mark.parametrize("bs", [0, -1, -4, np.int64(0), np.int8(-2)])
def test_block_size_below_one(op, bs):
    x = np.zeros((1, 4, 2, 2))
    with pytest.raises(ValueError, match="block_size"):
        op(x, bs)


@pytest.mark.parametrize("op", BLOCK_OPS, ids=BLOCK_IDS)
@pytest.mark.parametrize("bs", [2.0, 1.0, 1.5, "2", True, False, np.True_, np.float64(2),
                                None, [2], np.array([2])])
def test_block_size_not_an_integer(op, bs):
    x = np.zeros((1, 4, 2, 2))
    with pytest.raises(TypeError, match="block_size"):
        op(x, bs)


@pytest.mark.parametrize("shape,bs,fmt", [
    ((1, 1, 5, 4), 2, "channels_first"),
    ((1, 1, 4, 5), 2, "channels_first"),
    ((1, 1, 6), 4, "channels_first"),
    ((1, 1, 6, 6, 7), 3, "channels_first"),
    ((1, 5, 4, 1), 2, "channels_last"),
    ((1, 4, 4, 3), 3, "NHWC"),
    ((1, 1, 3, 4, 4), 2, "NCHW_VECT_C"),
])
def test_space_to_depth_spatial_not_divisible(shape, bs, fmt):
    x = np.zeros(shape)
    with pytest.raises(ValueError, match="block_size"):
        fb.space_to_depth(x, bs, data_format=fmt)


@pytest.mark.parametrize("shape,bs,fmt", [
    ((1, 6, 2, 2), 2, "channels_first"),    # 6 % 4
    ((1, 3, 2), 2, "channels_first"),       # 3 % 2
    ((1, 4, 2, 2, 2), 2, "channels_first"),  # 4 % 8
    ((1, 2, 2, 10), 3, "channels_last"),    # 10 % 9
    ((1, 2, 2, 8), 3, "NHWC"),              # 8 % 9
    ((1, 1, 2, 2, 4), 3, "NCHW_VECT_C"),    # 4 % 9
])
def test_depth_to_space_channels_not_divisible(shape, bs, fmt):
    x = np.zeros(shape)
    with pytest.raises(ValueError, match="channel"):
        fb.depth_to_space(x, bs, data_format=fmt)


@pytest.mark.parametrize("op", BLOCK_OPS, ids=BLOCK_IDS)
@pytest.mark.parametrize("mode", ["", "blocks", "DCRX", "depth-first", "BLOCKS_FIRST ", "rcd",
                                  None, 0, b"DCR"])
def test_unknown_mode(op, mode):
    x = np.zeros((1, 4, 2, 2))
    with pytest.raises(ValueError, match="mode"):
        op(x, 1, mode)


@pytest.mark.parametrize("op", BLOCK_OPS, ids=BLOCK_IDS)
@pytest.mark.parametrize("fmt", ["", "NCHWC", "channels", "NHCW", "CHW", "NCHW_VECT", None, 1,
                                 b"NCHW"])
def test_unknown_data_format(op, fmt):
    x = np.zeros((1, 4, 2, 2))
    with pytest.raises(ValueError, match="data_format"):
        op(x, 1, data_format=fmt)


@pytest.mark.parametrize("op", BLOCK_OPS, ids=BLOCK_IDS)
@pytest.mark.parametrize("fmt,rank", [
    ("NCW", 4), ("NCW", 5), ("NCHW", 3), ("NCHW", 5), ("NCDHW", 4), ("NCDHW", 6),
    ("NWC", 4), ("NHWC", 3), ("NHWC", 5), ("NDHWC", 4), ("NDHWC", 6),
    ("NCHW_VECT_C", 4), ("NCHW_VECT_C", 6),
])
def test_layout_name_with_wrong_rank(op, fmt, rank):
    x = np.zeros((1, 4) + (4,) * (rank - 2))
    with pytest.raises(ValueError, match="data_format|rank"):
        op(x, 1, data_format=fmt)
    try:
        op(x, 1, data_format=fmt)
    except ValueError as exc:
        assert fmt in str(exc) or "rank" in str(exc)


@pytest.mark.parametrize("op", BLOCK_OPS, ids=BLOCK_IDS)
@pytest.mark.parametrize("last", [1, 2, 3, 5, 8])
def test_nchw_vect_c_last_axis_not_four(op, last):
    x = np.zeros((1, 4, 2, 2, last))
    with pytest.raises(ValueError, match="NCHW_VECT_C|4"):
        op(x, 1, data_format="NCHW_VECT_C")


@pytest.mark.parametrize("groups,bs", [(1, 2), (2, 2), (3, 2), (6, 2), (4, 4), (8, 4)])
def test_nchw_vect_c_result_channels_not_multiple_of_four(groups, bs):
    """[N, C/4, H, W, 4] with C / bs**2 not a multiple of 4."""
    x = np.zeros((1, groups, 2, 2, 4))
    c = 4 * groups
    assert c % (bs * bs) == 0 and (c // (bs * bs)) % 4
    with pytest.raises(ValueError, match="NCHW_VECT_C|multiple of 4"):
        fb.depth_to_space(x, bs, data_format="NCHW_VECT_C")


def test_nchw_vect_c_valid_neighbour_of_error_case():
    # 16 channels / 4 = 4: a multiple of 4, accepted
    assert fb.depth_to_space(np.zeros((1, 4, 2, 2, 4)), 2, data_format="NCHW_VECT_C").shape \
        == (1, 1, 4, 4, 4)


# ---------------------------------------------------------------------------
# tile

@pytest.mark.parametrize("repeats", [-1, (-1,), (2, -1), [1, -3], np.array([2, -1]),
                                     np.int64(-2), (np.int8(-1), 2)])
def test_tile_negative_repeats(repeats):
    with pytest.raises(ValueError, match="repeats"):
        fb.tile(np.zeros((2, 2)), repeats)


@pytest.mark.parametrize("repeats", [1.0, 2.0, 1.5, (1.0,), (2, 1.0), [1.0, 1.0], True, False,
                                     (True,), (1, False), np.float64(1.0), np.True_,
                                     np.array([1.0, 2.0]), np.array([True, True]),
                                     np.array([1, 2], dtype=np.float32), "2", ("2",), None,
                                     (None,), 1 + 0j])
def test_tile_non_integer_repeats(repeats):
    with pytest.raises(TypeError, match="repeats"):
        fb.tile(np.zeros((2, 2)), repeats)


@pytest.mark.parametrize("repeats", [np.ones((2, 2), dtype=np.int64), np.ones((1, 2), dtype=int),
                                     np.ones((2, 1, 1), dtype=np.int32), [[1, 2]], ((2,), (2,))])
def test_tile_repeats_of_rank_above_one(repeats):
    with pytest.raises(ValueError, match="repeats"):
        fb.tile(np.zeros((2, 2)), repeats)


def _too_large_cases():
    x40 = np.broadcast_to(np.zeros(1, np.uint8), (2 ** 40,))
    yield "count_overflow", x40, 2 ** 30                       # 2**70 items
    yield "count_overflow_nd", np.zeros((4, 4), np.uint8), (2 ** 40, 2 ** 40)
    yield "bytes_overflow", np.broadcast_to(np.zeros(1, np.float64), (2 ** 40,)), 2 ** 22  # 2**65 bytes
    yield "huge_single_repeat", np.zeros(3, np.uint8), 2 ** 63 - 1
    yield "beyond_int64", np.zeros(3, np.uint8), 2 ** 70
    yield "uint64_array", np.zeros((2, 2), np.int16), np.array([2 ** 63, 2 ** 62], dtype=np.uint64)


@pytest.mark.parametrize("case", ["count_overflow", "count_overflow_nd", "bytes_overflow",
                                  "huge_single_repeat", "beyond_int64", "uint64_array"])
def test_tile_result_too_large(case):
    _, x, repeats = next(c for c in _too_large_cases() if c[0] == case)
    start = time.perf_counter()
    with pytest.raises((ValueError, MemoryError)):
        fb.tile(x, repeats)
    assert time.perf_counter() - start < 2.0


def test_tile_result_too_large_spec_example():
    x = np.broadcast_to(np.zeros(1, np.uint8), (2 ** 40,))
    start = time.perf_counter()
    with pytest.raises((ValueError, MemoryError)):
        fb.tile(x, 2 ** 30)
    assert time.perf_counter() - start < 2.0


def test_errors_leave_out_untouched():
    x = np.arange(16.0).reshape(1, 4, 2, 2)
    out = np.full((1, 4, 2, 2), -1.0)
    for call in (lambda: fb.depth_to_space(x, 0, out=out),
                 lambda: fb.depth_to_space(x, 3, out=out),
                 lambda: fb.depth_to_space(x, 1, "xx", out=out),
                 lambda: fb.tile(x, (1, 1, 1, -1), out=out)):
        with pytest.raises(ValueError):
            call()
        assert (out == -1.0).all()
