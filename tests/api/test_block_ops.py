"""SpaceToDepth / DepthToSpace against the documented formulas (tests/reference.py):
every mode (and its ONNX alias), every layout, ranks 3..6, block sizes 1..4.
The larger enumerations are seeded draws of their cross products
(``draws.drawn``): every value on every run, with the named combinations
(each operator in each mode and layout, each item width at each block
size), the rest sampled."""
import numpy as np
import pytest

import fastblock as fb
from draws import drawn
from fastblock import _engine
from reference import assert_same_array, depth_to_space_ref, space_to_depth_ref

MODES = ["blocks_first", "depth_first", "DCR", "CRD", "dcr", "crd"]
CANONICAL_MODES = ["blocks_first", "depth_first"]
RANKS = [3, 4, 5, 6]
BLOCK_SIZES = [1, 2, 3, 4]
OPS = {
    "space_to_depth": (fb.space_to_depth, space_to_depth_ref),
    "depth_to_space": (fb.depth_to_space, depth_to_space_ref),
}

# The NCHW_VECT_C depth_first paths of conftest's vect_c_path that this CPU
# runs ("pixels" needs AVX-512 VBMI): the draws take no case it would skip.
VECT_C_PATHS = ["pixels", "tables", "planes"][0 if _engine.cpu_features()["vect_c_pixels"] else 1:]

# Spatial multipliers: kept small so that rank 6 with block size 4 stays tiny.
_SPATIAL = [2, 1, 3, 1]


def _space_shape(rank, bs, n=2, c=3):
    k = rank - 2
    return [n, c] + [bs * m for m in _SPATIAL[:k]]


def _depth_shape(rank, bs, n=2, c=2):
    k = rank - 2
    return [n, c * bs ** k] + _SPATIAL[:k]


def _input(op_name, rank, bs, channels_last=False, dtype=np.int64):
    shape = _space_shape(rank, bs) if op_name == "space_to_depth" else _depth_shape(rank, bs)
    x = np.arange(np.prod(shape), dtype=dtype).reshape(shape)
    if channels_last:
        x = np.ascontiguousarray(np.moveaxis(x, 1, -1))
    return x


@drawn(64, op_name=list(OPS), mode=MODES, rank=RANKS, bs=BLOCK_SIZES,
       data_format=["channels_first", "channels_last"],
       cover=[("op_name", "mode", "data_format"), ("rank", "bs")])
def test_matches_formula(op_name, mode, rank, bs, data_format):
    op, ref = OPS[op_name]
    x = _input(op_name, rank, bs, channels_last=data_format == "channels_last")
    assert_same_array(op(x, bs, mode, data_format), ref(x, bs, mode, data_format))


@pytest.mark.parametrize("op_name", list(OPS))
@pytest.mark.parametrize("rank", RANKS)
def test_default_mode_and_format_are_blocks_first_channels_first(op_name, rank):
    op, ref = OPS[op_name]
    x = _input(op_name, rank, 2)
    assert_same_array(op(x, 2), ref(x, 2, "blocks_first", "channels_first"))


@drawn(16, op_name=list(OPS), mode=CANONICAL_MODES, rank=RANKS, bs=[1, 2, 3],
       cover=[("op_name", "mode"), ("rank", "bs")])
def test_channels_last_is_moveaxis_of_channels_first(op_name, mode, rank, bs):
    """op(x, "channels_last") == moveaxis(op(moveaxis(x, -1, 1)), 1, -1)."""
    op, ref = OPS[op_name]
    x = _input(op_name, rank, bs, channels_last=True)
    x_cf = np.moveaxis(x, -1, 1)
    expected = np.moveaxis(ref(x_cf, bs, mode, "channels_first"), 1, -1)
    got = op(x, bs, mode, data_format="channels_last")
    np.testing.assert_array_equal(got, expected)
    # the same identity with fastblock on both sides
    np.testing.assert_array_equal(got, np.moveaxis(op(x_cf, bs, mode), 1, -1))


NAMED = [
    ("NCW", 3, "channels_first"),
    ("NCHW", 4, "channels_first"),
    ("NCDHW", 5, "channels_first"),
    ("NWC", 3, "channels_last"),
    ("NHWC", 4, "channels_last"),
    ("NDHWC", 5, "channels_last"),
]


@drawn(40, {"op_name": list(OPS), "name,rank,generic": NAMED, "mode": MODES, "bs": [1, 2, 3]},
       cover=[("op_name", "name,rank,generic"), ("op_name", "mode"), ("name,rank,generic", "bs")])
def test_named_layouts(op_name, name, rank, generic, mode, bs):
    op, ref = OPS[op_name]
    x = _input(op_name, rank, bs, channels_last=(generic == "channels_last"))
    assert_same_array(op(x, bs, mode, name), ref(x, bs, mode, generic))


def _vect_c_input(op_name, bs, n=2, groups=1, h=1, w=2, dtype=np.int64):
    if op_name == "space_to_depth":
        shape = (n, 2 * groups, bs * h, bs * w, 4)
    else:
        shape = (n, bs * bs * groups, h, w, 4)
    return np.arange(np.prod(shape), dtype=dtype).reshape(shape)


@drawn(24, op_name=list(OPS), mode=MODES, bs=BLOCK_SIZES, groups=[1, 3],
       cover=[("op_name", "mode"), ("op_name", "bs"), ("bs", "groups")])
def test_nchw_vect_c(op_name, mode, bs, groups):
    op, ref = OPS[op_name]
    x = _vect_c_input(op_name, bs, groups=groups)
    expected = ref(x, bs, mode, "NCHW_VECT_C")
    got = op(x, bs, mode, "NCHW_VECT_C")
    assert_same_array(got, expected)
    assert got.shape[-1] == 4


@pytest.mark.parametrize("bs", [1, 2, 3])
@pytest.mark.parametrize("mode", CANONICAL_MODES)
@pytest.mark.parametrize("op_name", list(OPS))
def test_nchw_vect_c_equals_nchw_split(op_name, mode, bs):
    """The VECT_C result is the NCHW result with c = c_outer * 4 + c_inner."""
    op, _ = OPS[op_name]
    x = _vect_c_input(op_name, bs, groups=2, h=2, w=1)
    n, g, h, w, _ = x.shape
    nchw = np.moveaxis(x, 4, 2).reshape(n, g * 4, h, w)
    _, ref = OPS[op_name]
    y = ref(nchw, bs, mode, "channels_first")
    n2, c2, h2, w2 = y.shape
    expected = np.moveaxis(y.reshape(n2, c2 // 4, 4, h2, w2), 2, 4)
    np.testing.assert_array_equal(op(x, bs, mode, "NCHW_VECT_C"), expected)


@drawn(16, op_name=list(OPS), bs=[3, 5, 6], dtype=[np.uint8, np.float32, "V3"],
       num_threads=[1, 3], vect_c_path=VECT_C_PATHS,
       cover=[("op_name", "vect_c_path"), ("bs", "vect_c_path"), ("dtype", "vect_c_path"),
              ("num_threads",)], indirect=("vect_c_path",))
def test_nchw_vect_c_depth_first_in_blocks_of_rows(op_name, bs, dtype, num_threads,
                                                   vect_c_path):
    """depth_first with bs*bs not a multiple of 4 runs in blocks of rows
    (depth_to_space through tables or per-thread planes, space_to_depth
    through planes): enough rows here for several blocks and a shorter last
    one, two batch items, several groups, a strided input."""
    op, ref = OPS[op_name]
    itemsize = np.dtype(dtype).itemsize
    # Rows of about 12 per block: blocks of 12, 12 and 5 rows.
    groups, h = 2, 29
    w = _engine.thresholds()["vect_c_block_bytes"] // (4 * bs * bs * itemsize * 12)
    if op_name == "space_to_depth":
        shape = (2, groups, bs * h, bs * w, 4)
    else:
        shape = (2, groups * bs * bs, h, w, 4)
    raw = np.random.default_rng(bs).integers(0, 256, (*shape, itemsize), np.uint8)
    x = raw.view(np.dtype(dtype)).reshape(shape)
    expected = ref(x, bs, "depth_first", "NCHW_VECT_C")
    assert_same_array(op(x, bs, "depth_first", "NCHW_VECT_C", num_threads=num_threads), expected)
    stepped = np.repeat(x, 2, axis=3)[:, :, :, ::2]
    assert_same_array(op(stepped, bs, "depth_first", "NCHW_VECT_C", num_threads=num_threads), expected)


@pytest.mark.parametrize("reversed_axes", ["rows and lanes", "rows"])
@pytest.mark.parametrize("bs", [1, 3])
@pytest.mark.parametrize("op_name", list(OPS))
def test_nchw_vect_c_depth_first_into_a_reversed_out(op_name, bs, reversed_axes, vect_c_path):
    """An out= with reversed axes moves the block plans' base pointers; the
    result must still land in place. depth_to_space can read through tables
    into reversed rows, but goes through planes when the lanes are reversed
    too (a table's items must be contiguous)."""
    op, ref = OPS[op_name]
    if op_name == "space_to_depth":
        shape = (2, 2, bs * 9, bs * 7, 4)
    else:
        shape = (2, 2 * bs * bs, 9, 7, 4)
    x = np.random.default_rng(bs).integers(0, 256, shape).astype(np.uint8)
    expected = ref(x, bs, "depth_first", "NCHW_VECT_C")
    buffer = np.zeros(expected.shape, expected.dtype)
    out = buffer[:, :, ::-1, :, ::-1] if reversed_axes == "rows and lanes" else buffer[:, :, ::-1]
    op(x, bs, "depth_first", "NCHW_VECT_C", out=out)
    np.testing.assert_array_equal(out, expected)


ROUND_TRIP_LAYOUTS = ["channels_first", "channels_last"]


@drawn(40, mode=MODES, layout=ROUND_TRIP_LAYOUTS, rank=RANKS, bs=[1, 2, 3, 4],
       cover=[("mode", "layout"), ("rank", "bs")])
def test_round_trip(mode, layout, rank, bs):
    last = layout == "channels_last"
    x = _input("space_to_depth", rank, bs, channels_last=last)
    y = fb.space_to_depth(x, bs, mode, layout)
    np.testing.assert_array_equal(fb.depth_to_space(y, bs, mode, layout), x)
    d = _input("depth_to_space", rank, bs, channels_last=last)
    e = fb.depth_to_space(d, bs, mode, layout)
    np.testing.assert_array_equal(fb.space_to_depth(e, bs, mode, layout), d)


@pytest.mark.parametrize("bs", [1, 2, 3])
@pytest.mark.parametrize("mode", MODES)
def test_round_trip_nchw_vect_c(mode, bs):
    x = _vect_c_input("space_to_depth", bs, groups=2)
    y = fb.space_to_depth(x, bs, mode, "NCHW_VECT_C")
    np.testing.assert_array_equal(fb.depth_to_space(y, bs, mode, "NCHW_VECT_C"), x)
    d = _vect_c_input("depth_to_space", bs, groups=2)
    e = fb.depth_to_space(d, bs, mode, "NCHW_VECT_C")
    np.testing.assert_array_equal(fb.space_to_depth(e, bs, mode, "NCHW_VECT_C"), d)


ITEM_DTYPES = [np.uint8, np.uint16, np.float32, np.int64, np.complex128, "V3", "V12", "S5",
               np.clongdouble]


def _item_values(shape, dtype):
    dtype = np.dtype(dtype)
    size = int(np.prod(shape))
    raw = np.arange(size * dtype.itemsize, dtype=np.int64)
    raw = ((raw * 2654435761) >> 7) % 251  # a byte pattern without short periods
    return raw.astype(np.uint8).view(dtype).reshape(shape)


@drawn(48, op_name=list(OPS), mode=CANONICAL_MODES, layout=["channels_first", "channels_last"],
       bs=[2, 3, 4], dtype=ITEM_DTYPES,
       cover=[("dtype", "bs"), ("op_name", "mode", "layout"), ("op_name", "bs")])
def test_item_sizes_and_block_sizes(op_name, mode, layout, bs, dtype):
    """Long rows of every item width: the (de-)interleave kernels for steps 2, 3, 4."""
    op, ref = OPS[op_name]
    if op_name == "space_to_depth":
        shape = [2, 3, bs * 5, bs * 37]
    else:
        shape = [2, 3 * bs * bs, 5, 37]
    if layout == "channels_last":
        shape = [shape[0]] + shape[2:] + [shape[1]]
    x = _item_values(shape, dtype)
    got = op(x, bs, mode, layout)
    expected = ref(x, bs, mode, layout)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert got.tobytes() == expected.tobytes()


# ---------------------------------------------------------------------------
# Hand-written values from the operator definitions' documentation.

def test_docstring_examples():
    x = np.arange(16).reshape(1, 1, 4, 4)
    np.testing.assert_array_equal(fb.space_to_depth(x, 2)[0, :, 0, 0], [0, 1, 4, 5])
    y = np.arange(4).reshape(1, 4, 1, 1)
    np.testing.assert_array_equal(fb.depth_to_space(y, 2)[0, 0], [[0, 1], [2, 3]])


TF_CASES = [
    # tf.nn.space_to_depth documentation (NHWC, block_size 2)
    (np.array([[[[1], [2]], [[3], [4]]]]), np.array([[[[1, 2, 3, 4]]]])),
    (np.array([[[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [10, 11, 12]]]]),
     np.array([[[[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]]]])),
    (np.array([[[[1], [2], [5], [6]], [[3], [4], [7], [8]],
                [[9], [10], [13], [14]], [[11], [12], [15], [16]]]]),
     np.array([[[[1, 2, 3, 4], [5, 6, 7, 8]], [[9, 10, 11, 12], [13, 14, 15, 16]]]])),
]


@pytest.mark.parametrize("fmt", ["NHWC", "channels_last"])
@pytest.mark.parametrize("case", range(len(TF_CASES)))
def test_tensorflow_documented_examples(case, fmt):
    space, depth = TF_CASES[case]
    np.testing.assert_array_equal(fb.space_to_depth(space, 2, data_format=fmt), depth)
    np.testing.assert_array_equal(fb.depth_to_space(depth, 2, data_format=fmt), space)


def test_depth_to_space_modes_by_hand():
    x = np.arange(8).reshape(1, 8, 1, 1)
    # blocks_first (DCR): out[c, i, j] = x[(i*2 + j) * C_out + c]
    bf = fb.depth_to_space(x, 2, "blocks_first")
    np.testing.assert_array_equal(bf[0, 0], [[0, 2], [4, 6]])
    np.testing.assert_array_equal(bf[0, 1], [[1, 3], [5, 7]])
    # depth_first (CRD, pixel_shuffle): out[c, i, j] = x[c * 4 + i*2 + j]
    df = fb.depth_to_space(x, 2, "depth_first")
    np.testing.assert_array_equal(df[0, 0], [[0, 1], [2, 3]])
    np.testing.assert_array_equal(df[0, 1], [[4, 5], [6, 7]])


def test_rank3_by_hand():
    x = np.array([[[0, 1, 2, 3]], [[4, 5, 6, 7]]])  # (N=2, C=1, W=4)
    y = fb.space_to_depth(x, 2, data_format="NCW")
    np.testing.assert_array_equal(y, [[[0, 2], [1, 3]], [[4, 6], [5, 7]]])
    x2 = np.array([[[0, 1], [10, 11]]])  # (N=1, C=2, W=2) -> blocks_first, bs 2
    np.testing.assert_array_equal(fb.space_to_depth(x2, 2, "blocks_first"),
                                  [[[0], [10], [1], [11]]])
    np.testing.assert_array_equal(fb.space_to_depth(x2, 2, "depth_first"),
                                  [[[0], [1], [10], [11]]])


# ---------------------------------------------------------------------------
# Argument forms and result properties.

@pytest.mark.parametrize("bs", [2, np.int8(2), np.int64(2), np.uint16(2), np.intp(2)])
@pytest.mark.parametrize("op_name", list(OPS))
def test_numpy_integer_block_size(op_name, bs):
    op, ref = OPS[op_name]
    x = _input(op_name, 4, 2)
    assert_same_array(op(x, bs), ref(x, 2))


@pytest.mark.parametrize("rank", [10, 33])
@pytest.mark.parametrize("mode", CANONICAL_MODES)
@pytest.mark.parametrize("op_name", list(OPS))
def test_high_rank(op_name, mode, rank):
    op, ref = OPS[op_name]
    k = rank - 2
    bs = 2 if rank <= 10 else 1
    if op_name == "space_to_depth":
        shape = [1, 2] + [bs] * k
    else:
        shape = [1, 2 * bs ** k] + [1] * (k - 1) + [2]
    x = np.arange(np.prod(shape), dtype=np.int32).reshape(shape)
    assert_same_array(op(x, bs, mode), ref(x, bs, mode))


@pytest.mark.parametrize("rank", [40, 64])
@pytest.mark.parametrize("op_name", list(OPS))
def test_rank_up_to_numpy_limit_block_size_one(op_name, rank):
    """block_size 1 is an identity copy, at any rank."""
    op, _ = OPS[op_name]
    shape = [2, 3] + [1] * (rank - 4) + [2, 2]
    x = np.arange(np.prod(shape), dtype=np.int64).reshape(shape)
    y = op(x, 1, "depth_first")
    assert y.shape == x.shape
    np.testing.assert_array_equal(y, x)
    assert not np.shares_memory(x, y)


@pytest.mark.parametrize("bs", [2 ** 31, 2 ** 62, 2 ** 70])
def test_huge_block_size_on_zero_size_input(bs):
    """Every spatial size 0 is divisible by any block_size: an empty result."""
    x = np.zeros((1, 0, 0, 0), dtype=np.float32)
    got = fb.space_to_depth(x, bs)
    assert got.shape == (1, 0, 0, 0) and got.dtype == x.dtype
    if 3 * bs <= 2 ** 40:  # result shapes NumPy can hold
        y = fb.depth_to_space(np.zeros((1, 0, 1, 0), dtype=np.int8), bs)
        assert y.shape == (1, 0, bs, 0) and y.dtype == np.int8
        x3 = np.zeros((2, 3, 0), dtype=np.float32)
        got3 = fb.space_to_depth(x3, bs)
        assert got3.shape == (2, 3 * bs, 0) and got3.dtype == x3.dtype


@pytest.mark.parametrize("op_name", list(OPS))
def test_array_like_input(op_name):
    op, ref = OPS[op_name]
    x = _input(op_name, 4, 2)
    assert_same_array(op(x.tolist(), 2, "depth_first"), ref(x, 2, "depth_first"))


@pytest.mark.parametrize("layout", ["channels_first", "channels_last"])
@pytest.mark.parametrize("op_name", list(OPS))
def test_block_size_one_is_a_copy(op_name, layout):
    op, _ = OPS[op_name]
    x = _input(op_name, 4, 1, channels_last=(layout == "channels_last"))
    keep = x.copy()
    y = op(x, 1, data_format=layout)
    assert y is not x
    assert not np.shares_memory(y, x)
    np.testing.assert_array_equal(y, keep)
    y[...] = -1
    np.testing.assert_array_equal(x, keep)


@pytest.mark.parametrize("op_name", list(OPS))
def test_input_not_modified_and_result_is_new(op_name):
    op, ref = OPS[op_name]
    x = _input(op_name, 5, 2)
    keep = x.copy()
    y = op(x, 2, "depth_first")
    np.testing.assert_array_equal(x, keep)
    assert not np.shares_memory(x, y)
    assert y.flags.owndata or y.base is not x
    assert_same_array(y, ref(keep, 2, "depth_first"))
