"""Property tests (hypothesis): random shapes, modes, layouts, block sizes,
dtypes, strides, out= and thread counts, against the reference formulas."""
import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import fastblock as fb  # noqa: E402
from reference import depth_to_space_ref, space_to_depth_ref  # noqa: E402

SETTINGS = settings(max_examples=120, deadline=None, derandomize=True)

DTYPES = ["u1", "i2", "<f4", ">i4", "c16", "?", "S3", "U2", "V5", "O", "f2", "M8[s]",
          np.dtype([("a", "u1"), ("b", "<i4")])]
MODES = ["blocks_first", "depth_first", "DCR", "CRD", "dcr", "crd"]


def _make(shape, dtype):
    dtype = np.dtype(dtype)
    size = int(np.prod(shape))
    base = np.arange(size, dtype=np.int64)
    if dtype.kind == "V":
        raw = (np.arange(size * dtype.itemsize) * 7 % 251).astype(np.uint8)
        return raw.view(dtype).reshape(shape)
    if dtype.kind == "M":
        return base.astype(dtype).reshape(shape)
    if dtype.kind == "b":
        return (base % 3 == 0).reshape(shape)
    if dtype.kind in "iu":
        return (base % (int(np.iinfo(dtype).max) + 1)).astype(dtype).reshape(shape)
    if dtype.kind == "f":
        return (base % 2048).astype(dtype).reshape(shape)
    return base.astype(dtype).reshape(shape)


def _assert_same(got, expected):
    assert got.dtype == expected.dtype
    assert got.dtype.str == expected.dtype.str
    assert got.shape == expected.shape
    if expected.dtype.kind == "O":
        assert got.tolist() == expected.tolist()
    elif expected.dtype.names is not None:
        for name in expected.dtype.names:
            np.testing.assert_array_equal(got[name], expected[name])
    elif expected.dtype.kind == "V":
        assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(expected).tobytes()
    else:
        np.testing.assert_array_equal(got, expected)


@st.composite
def _strided(draw, shape, dtype):
    """An array of ``shape``: contiguous, or a stepped/reversed view of a larger one."""
    kind = draw(st.sampled_from(["c", "view", "fortran"]))
    if kind == "c":
        return _make(shape, dtype)
    if kind == "fortran":
        return np.asfortranarray(_make(shape, dtype))
    steps = [draw(st.sampled_from([1, 2, -1, -2])) for _ in shape]
    offsets = [draw(st.integers(0, 1)) for _ in shape]
    big_shape = [abs(s) * n + o + 1 for s, n, o in zip(steps, shape, offsets)]
    big = _make(big_shape, dtype)
    index = []
    for s, n, o, b in zip(steps, shape, offsets, big_shape):
        if s > 0:
            index.append(slice(o, o + s * n, s))
        else:
            start = b - 1 - o
            index.append(slice(start, start + s * n if start + s * n >= 0 else None, s))
    view = big[tuple(index)]
    assert view.shape == tuple(shape)
    return view


@st.composite
def block_case(draw, layouts=("channels_first", "channels_last", "NCHW_VECT_C")):
    op_name = draw(st.sampled_from(["space_to_depth", "depth_to_space"]))
    layout = draw(st.sampled_from(layouts))
    rank = 5 if layout == "NCHW_VECT_C" else draw(st.integers(3, 5))
    k = rank - 2 if layout != "NCHW_VECT_C" else 2
    bs = draw(st.integers(1, 3))
    mode = draw(st.sampled_from(MODES))
    dtype = draw(st.sampled_from(DTYPES))
    n = draw(st.integers(0, 2))
    if op_name == "space_to_depth":
        spatial = [bs * draw(st.integers(0 if i == 0 else 1, 3)) for i in range(k)]
        channels = 4 * draw(st.integers(0, 2)) if layout == "NCHW_VECT_C" else draw(st.integers(0, 3))
    else:
        spatial = [draw(st.integers(0 if i == 0 else 1, 3)) for i in range(k)]
        mult = 4 if layout == "NCHW_VECT_C" else 1
        channels = mult * bs ** k * draw(st.integers(0, 2))
    if layout == "channels_first":
        shape = [n, channels] + spatial
    elif layout == "channels_last":
        shape = [n] + spatial + [channels]
    else:
        shape = [n, channels // 4] + spatial + [4]
    x = draw(_strided(shape, dtype))
    use_out = draw(st.sampled_from([None, "c", "strided"]))
    threads = draw(st.sampled_from([None, 1, 2, 3]))
    return op_name, x, bs, mode, layout, use_out, threads


@SETTINGS
@given(block_case())
def test_block_ops_property(case):
    op_name, x, bs, mode, layout, use_out, threads = case
    ref = space_to_depth_ref if op_name == "space_to_depth" else depth_to_space_ref
    op = getattr(fb, op_name)
    expected = ref(x, bs, mode, layout)
    kwargs = {"num_threads": threads}
    if use_out == "c":
        kwargs["out"] = np.empty(expected.shape, dtype=x.dtype)
    elif use_out == "strided":
        buf = np.empty(tuple(2 * s + 1 for s in expected.shape), dtype=x.dtype)
        kwargs["out"] = buf[tuple(slice(None, 2 * s, 2) for s in expected.shape)][::-1]
    got = op(x, bs, mode, layout, **kwargs)
    if use_out:
        assert got is kwargs["out"]
    else:
        assert got.flags.c_contiguous
    _assert_same(got, expected)


@SETTINGS
@given(block_case())
def test_round_trip_property(case):
    op_name, x, bs, mode, layout, _, threads = case
    if op_name == "space_to_depth":
        y = fb.space_to_depth(x, bs, mode, layout, num_threads=threads)
        back = fb.depth_to_space(y, bs, mode, layout, num_threads=threads)
    else:
        y = fb.depth_to_space(x, bs, mode, layout, num_threads=threads)
        back = fb.space_to_depth(y, bs, mode, layout, num_threads=threads)
    _assert_same(back, np.ascontiguousarray(x))


@SETTINGS
@given(
    shape=st.lists(st.integers(0, 3), min_size=0, max_size=4),
    reps=st.lists(st.integers(0, 3), min_size=0, max_size=5),
    reps_form=st.sampled_from(["tuple", "list", "array_i8", "array_u4", "int"]),
    dtype=st.sampled_from(DTYPES),
    threads=st.sampled_from([None, 1, 2]),
    data=st.data(),
)
def test_tile_property(shape, reps, reps_form, dtype, threads, data):
    x = data.draw(_strided(shape, dtype)) if shape else _make((), dtype)
    if reps_form == "int":
        repeats = reps[0] if reps else 2
        np_reps = repeats
    else:
        np_reps = tuple(reps)
        repeats = {"tuple": tuple(reps), "list": list(reps),
                   "array_i8": np.array(reps, dtype=np.int8),
                   "array_u4": np.array(reps, dtype=np.uint32)}[reps_form]
    expected = np.tile(x, np_reps)
    got = fb.tile(x, repeats, num_threads=threads)
    assert isinstance(got, np.ndarray)
    assert got.flags.c_contiguous
    assert not np.shares_memory(got, x) or got.size == 0
    _assert_same(got, expected)


@SETTINGS
@given(block_case(layouts=("channels_last",)))
def test_channels_last_is_moveaxis_property(case):
    op_name, x, bs, mode, layout, _, _ = case
    ref = space_to_depth_ref if op_name == "space_to_depth" else depth_to_space_ref
    expected = np.moveaxis(ref(np.moveaxis(x, -1, 1), bs, mode, "channels_first"), 1, -1)
    got = getattr(fb, op_name)(x, bs, mode, "channels_last")
    _assert_same(got, np.ascontiguousarray(expected))
