"""Memory layouts of x, the out= argument, and threads.

The larger enumerations are seeded draws of their cross products
(``draws.drawn``): every value on every run, the rest sampled."""
import os
import subprocess
import sys
import threading
import tracemalloc

import numpy as np
import pytest

import fastblock as fb
from draws import drawn
from reference import depth_to_space_ref, space_to_depth_ref

# (fastblock call, reference call, shape of a valid x)
OPS = {
    "s2d_bf": (lambda x, **kw: fb.space_to_depth(x, 2, **kw),
               lambda x: space_to_depth_ref(x, 2), (2, 3, 4, 6)),
    "s2d_df_cl": (lambda x, **kw: fb.space_to_depth(x, 2, "depth_first", "channels_last", **kw),
                  lambda x: space_to_depth_ref(x, 2, "depth_first", "channels_last"),
                  (2, 4, 6, 3)),
    "s2d_bs3_rank5": (lambda x, **kw: fb.space_to_depth(x, 3, "depth_first", **kw),
                      lambda x: space_to_depth_ref(x, 3, "depth_first"), (1, 2, 3, 6, 3)),
    "d2s_bf": (lambda x, **kw: fb.depth_to_space(x, 2, **kw),
               lambda x: depth_to_space_ref(x, 2), (2, 8, 3, 2)),
    "d2s_crd_rank3": (lambda x, **kw: fb.depth_to_space(x, 2, "CRD", **kw),
                      lambda x: depth_to_space_ref(x, 2, "CRD"), (2, 6, 5)),
    "d2s_df_vect_c": (lambda x, **kw: fb.depth_to_space(x, 2, "depth_first", "NCHW_VECT_C", **kw),
                      lambda x: depth_to_space_ref(x, 2, "depth_first", "NCHW_VECT_C"),
                      (2, 4, 2, 3, 4)),
    "s2d_bf_vect_c": (lambda x, **kw: fb.space_to_depth(x, 2, "blocks_first", "NCHW_VECT_C", **kw),
                      lambda x: space_to_depth_ref(x, 2, "blocks_first", "NCHW_VECT_C"),
                      (2, 2, 4, 2, 4)),
    "tile": (lambda x, **kw: fb.tile(x, (2, 1, 3), **kw),
             lambda x: np.tile(x, (2, 1, 3)), (3, 2, 4)),
    "tile_promote": (lambda x, **kw: fb.tile(x, (2, 3, 1, 1, 2), **kw),
                     lambda x: np.tile(x, (2, 3, 1, 1, 2)), (3, 2, 4)),
}
OP_NAMES = list(OPS)


def _values(shape, dtype=np.int64):
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape) * 3 + 1


def _check(result, expected):
    assert result.dtype == expected.dtype
    assert result.shape == expected.shape
    np.testing.assert_array_equal(result, expected)


# ---------------------------------------------------------------------------
# strided inputs

def _views(shape):
    """Differently laid-out arrays, each of shape ``shape`` and distinct items."""
    nd = len(shape)
    big = _values(tuple(3 * s + 2 for s in shape))
    yield "step2", big[tuple(slice(None, 2 * s, 2) for s in shape)]
    yield "offset_step3", big[tuple(slice(1, 1 + 3 * s, 3) for s in shape)]
    yield "offset", big[tuple(slice(2, 2 + s) for s in shape)]
    yield "negative", big[tuple(slice(3 * s - 1, None, -3) for s in shape)][tuple(slice(0, s) for s in shape)]
    yield "fortran", np.asfortranarray(_values(shape))
    perm = tuple(reversed(range(nd)))
    yield "transposed", np.ascontiguousarray(_values(tuple(shape[p] for p in perm))).transpose(perm)
    mixed = _values(tuple(2 * s for s in shape))[tuple(
        slice(None, None, -2) if i % 2 else slice(1, None, 2) for i in range(nd))]
    yield "mixed_signs", mixed
    yield "broadcast", np.broadcast_to(_values((1,) + tuple(shape[1:])), shape)


@drawn(18, op_name=OP_NAMES, view=["step2", "offset_step3", "offset", "negative", "fortran",
                                   "transposed", "mixed_signs", "broadcast"])
def test_strided_inputs(op_name, view):
    op, ref, shape = OPS[op_name]
    x = dict(_views(shape))[view]
    assert x.shape == tuple(shape)
    keep = x.copy()
    got = op(x)
    assert got.flags.c_contiguous
    _check(got, ref(keep))
    np.testing.assert_array_equal(x, keep)


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.complex128, "S3", "U5"])
@pytest.mark.parametrize("op_name", ["s2d_df_cl", "d2s_bf", "tile"])
def test_strided_inputs_other_itemsizes(op_name, dtype):
    op, ref, shape = OPS[op_name]
    big = np.arange(int(np.prod([2 * s + 1 for s in shape]))).reshape([2 * s + 1 for s in shape])
    big = big.astype(dtype)
    x = big[tuple(slice(2 * s - 1, None, -2) for s in shape)]
    assert x.shape == tuple(shape)
    _check(op(x), ref(x))


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.int32, np.uint16])
@pytest.mark.parametrize("op_name", ["s2d_bf", "d2s_crd_rank3", "tile", "d2s_df_vect_c"])
def test_unaligned_input_and_out(op_name, dtype):
    """Items at addresses that are not a multiple of their size."""
    op, ref, shape = OPS[op_name]
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    raw = np.zeros(n * dtype.itemsize + 1, dtype=np.uint8)
    x = raw[1:].view(dtype).reshape(shape)
    x[...] = _values(shape).astype(dtype)
    assert not x.flags.aligned
    expected = ref(x.copy())
    got = op(x)
    _check(got, expected)
    raw_out = np.zeros(expected.size * dtype.itemsize + 3, dtype=np.uint8)
    out = raw_out[3:].view(dtype).reshape(expected.shape)
    assert not out.flags.aligned
    assert op(x, out=out) is out
    _check(out, expected)
    assert raw_out[:3].tolist() == [0, 0, 0]


ZERO_SIZE = [
    ("s2d_bf", (0, 3, 4, 6)),       # zero batch
    ("s2d_bf", (2, 0, 4, 6)),       # zero channels
    ("s2d_bf", (2, 3, 0, 6)),       # zero spatial
    ("s2d_df_cl", (2, 0, 6, 3)),
    ("s2d_df_cl", (2, 4, 6, 0)),
    ("d2s_bf", (0, 8, 3, 2)),
    ("d2s_bf", (2, 0, 3, 2)),
    ("d2s_bf", (2, 8, 3, 0)),
    ("d2s_crd_rank3", (2, 6, 0)),
    ("d2s_df_vect_c", (0, 4, 2, 3, 4)),
    ("d2s_df_vect_c", (2, 0, 2, 3, 4)),
    ("s2d_bf_vect_c", (2, 2, 0, 2, 4)),
    ("tile", (0, 2, 4)),
    ("tile", (3, 0, 4)),
    ("tile_promote", (3, 2, 0)),
]


@pytest.mark.parametrize("op_name,shape", ZERO_SIZE)
def test_zero_size_inputs(op_name, shape):
    op, ref, _ = OPS[op_name]
    x = np.zeros(shape, dtype=np.float32)
    expected = ref(x)
    got = op(x)
    _check(got, expected)
    assert got.size == 0
    out = np.empty(expected.shape, dtype=np.float32)
    assert op(x, out=out) is out


# ---------------------------------------------------------------------------
# out=

def _outs(shape, dtype):
    fill = np.array(-7).astype(dtype)
    yield "c_contiguous", np.full(shape, fill, dtype=dtype), None
    buf = np.full(tuple(2 * s + 3 for s in shape), fill, dtype=dtype)
    yield "strided_view", buf[tuple(slice(1, 1 + 2 * s, 2) for s in shape)], buf
    buf2 = np.full(tuple(2 * s for s in shape), fill, dtype=dtype)
    yield "negative_strides", buf2[tuple(slice(None, None, -2) for _ in shape)], buf2
    yield "fortran", np.asfortranarray(np.full(shape, fill, dtype=dtype)), None
    buf3 = np.full(tuple(reversed(shape)), fill, dtype=dtype)
    yield "transposed", buf3.T, buf3


@drawn(36, op_name=OP_NAMES,
       kind=["c_contiguous", "strided_view", "negative_strides", "fortran", "transposed"],
       dtype=[np.int64, np.uint8, "U3"], cover=[("op_name", "dtype"), ("kind", "dtype")])
def test_out_layouts(op_name, kind, dtype):
    op, ref, shape = OPS[op_name]
    x = _values(shape).astype(dtype)
    expected = ref(x)
    out, buf = dict((k, (o, b)) for k, o, b in _outs(expected.shape, x.dtype))[kind]
    if buf is not None:
        keep = buf.copy()
    result = op(x, out=out)
    assert result is out
    _check(out, expected)
    if buf is not None:
        # nothing outside the view was written
        mask = np.ones(buf.shape, dtype=bool)
        mask[np.nonzero(np.isin(np.arange(buf.size).reshape(buf.shape),
                                _positions_in(buf, out)))] = False
        np.testing.assert_array_equal(buf[mask], keep[mask])


def _positions_in(buf, view):
    """Flat indices in ``buf`` (C-contiguous) of the items of ``view``."""
    assert buf.flags.c_contiguous
    start = (view.__array_interface__["data"][0] - buf.__array_interface__["data"][0])
    idx = np.full(view.shape, start, dtype=np.int64)
    for axis, (n, step) in enumerate(zip(view.shape, view.strides)):
        shape = [1] * view.ndim
        shape[axis] = n
        idx = idx + (np.arange(n) * step).reshape(shape)
    return (idx // buf.itemsize).ravel()


@pytest.mark.parametrize("op_name", OP_NAMES)
def test_out_wrong_shape(op_name):
    op, ref, shape = OPS[op_name]
    x = _values(shape)
    expected = ref(x)
    for bad in (expected.shape[:-1] + (expected.shape[-1] + 1,), expected.shape + (1,),
                (expected.size,)):
        out = np.zeros(bad, dtype=x.dtype)
        with pytest.raises(ValueError, match="out"):
            op(x, out=out)
        assert not out.any()


@pytest.mark.parametrize("wrong", [np.int32, np.float64, np.uint64, ">i8", object])
@pytest.mark.parametrize("op_name", ["s2d_bf", "d2s_df_vect_c", "tile"])
def test_out_wrong_dtype(op_name, wrong):
    op, ref, shape = OPS[op_name]
    x = _values(shape)  # int64, native byte order
    expected = ref(x)
    out = np.zeros(expected.shape, dtype=wrong)
    with pytest.raises(TypeError, match="out"):
        op(x, out=out)


@pytest.mark.parametrize("op_name", ["s2d_bf", "d2s_bf", "tile"])
def test_out_read_only(op_name):
    op, ref, shape = OPS[op_name]
    x = _values(shape)
    out = np.zeros(ref(x).shape, dtype=x.dtype)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="out"):
        op(x, out=out)
    assert not out.any()


@pytest.mark.parametrize("op_name", ["s2d_bf", "d2s_bf", "tile"])
def test_out_not_an_array(op_name):
    op, ref, shape = OPS[op_name]
    x = _values(shape)
    with pytest.raises((TypeError, ValueError), match="out"):
        op(x, out=ref(x).tolist())


def test_out_overlapping_x():
    buf = _values((2 * 3 * 4 * 6 + 10,))
    x = buf[:2 * 3 * 4 * 6].reshape(2, 3, 4, 6)
    keep = buf.copy()
    # same memory
    with pytest.raises(ValueError, match="out"):
        fb.space_to_depth(x, 1, out=x)
    # shifted by a few items
    out = buf[10:].reshape(2, 12, 2, 3)
    with pytest.raises(ValueError, match="out"):
        fb.space_to_depth(x, 2, out=out)
    np.testing.assert_array_equal(buf, keep)
    # tile into a view that contains x
    big = _values((4, 6))
    with pytest.raises(ValueError, match="out"):
        fb.tile(big[:2, :3], (2, 2), out=big)
    # sharing a single item
    flat = _values((2 * 8 * 3 * 2 * 2 - 1,))
    x2 = flat[:96].reshape(2, 8, 3, 2)
    out2 = flat[95:].reshape(2, 2, 6, 4)
    with pytest.raises(ValueError, match="out"):
        fb.depth_to_space(x2, 2, out=out2)


@pytest.mark.parametrize("dtype", [np.int8, np.float64, np.complex128])
@pytest.mark.parametrize("op_name", OP_NAMES)
def test_out_interleaved_with_x_sharing_no_item(op_name, dtype):
    """x = buf[::2], out = buf[1::2]: interleaved, no shared item: accepted."""
    op, ref, shape = OPS[op_name]
    n_x = int(np.prod(shape))
    expected_shape = ref(np.zeros(shape)).shape
    n_out = int(np.prod(expected_shape))
    n = max(n_x, n_out)
    buf = np.zeros(2 * n, dtype=dtype)
    buf[::2][:n_x] = (np.arange(n_x) + 1).astype(dtype)
    x = buf[::2][:n_x].reshape(shape)
    out = buf[1::2][:n_out].reshape(expected_shape)
    expected = ref(x.copy())
    assert not np.shares_memory(x, out)
    assert op(x, out=out) is out
    _check(out, expected)
    np.testing.assert_array_equal(x, (np.arange(n_x) + 1).astype(dtype).reshape(shape))


def test_out_interleaved_2d_tile_into_alternate_rows():
    buf = np.zeros((8, 6), dtype=np.int32)
    x = buf[0::2, :3]
    x[...] = np.arange(12).reshape(4, 3) + 1
    out = buf[1::2, :]
    assert fb.tile(x, (1, 2), out=out) is out
    np.testing.assert_array_equal(out, np.tile(np.arange(12).reshape(4, 3) + 1, (1, 2)))


def test_out_with_distinct_interleaved_items():
    """An out whose axes interleave but whose items are all distinct: the contract
    allows any strides for out."""
    store = np.full(8, -1, dtype=np.int64)
    # items at indices [[0, 3], [2, 5], [4, 7]]: distinct, but the axes interleave
    out = np.lib.stride_tricks.as_strided(store, shape=(3, 2), strides=(16, 24))
    x = np.array([10, 20], dtype=np.int64)
    assert fb.tile(x, (3, 1), out=out) is out
    np.testing.assert_array_equal(out, np.tile(x, (3, 1)))
    np.testing.assert_array_equal(store[[1, 6]], [-1, -1])


def test_nothing_written_to_out_on_error():
    x = _values((2, 3, 4, 6))
    out = np.full((2, 12, 2, 3), -5, dtype=x.dtype)
    for kwargs in ({"mode": "nope"}, {"data_format": "NCW"}, {"num_threads": 0}):
        with pytest.raises(ValueError):
            fb.space_to_depth(x, 2, out=out, **kwargs)
        assert (out == -5).all()
    with pytest.raises(TypeError):
        fb.space_to_depth(x, 2.0, out=out)
    assert (out == -5).all()


# ---------------------------------------------------------------------------
# no hidden copy of a strided x

@pytest.mark.parametrize("op_name", ["s2d", "d2s", "tile"])
def test_strided_input_is_read_in_place(op_name):
    base = np.zeros((2, 8, 512, 256), dtype=np.float32)  # 8 MiB
    x = base[:, ::2, :, ::-1]                             # 4 MiB, not contiguous
    if op_name == "s2d":
        call = lambda out: fb.space_to_depth(x, 2, "depth_first", out=out)  # noqa: E731
        shape = (2, 16, 256, 128)
    elif op_name == "d2s":
        call = lambda out: fb.depth_to_space(x, 2, out=out)  # noqa: E731
        shape = (2, 1, 1024, 512)
    else:
        call = lambda out: fb.tile(x, (1, 1, 1, 2), out=out)  # noqa: E731
        shape = (2, 4, 512, 512)
    out = np.empty(shape, dtype=np.float32)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        call(out)
        _, peak_with_out = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        result = call(None)
        _, peak_without_out = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak_with_out < x.nbytes // 8
    assert peak_without_out < result.nbytes + x.nbytes // 8


# ---------------------------------------------------------------------------
# threads

def _big(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    values = rng.standard_normal(shape)
    if dtype.kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    return values.astype(dtype)


BIG_CASES = {
    # about 4 MiB each
    "s2d_bf_u8": (lambda x, **kw: fb.space_to_depth(x, 2, **kw),
                  lambda x: space_to_depth_ref(x, 2), (4, 4, 512, 512), np.uint8),
    "s2d_df_cl_f32": (lambda x, **kw: fb.space_to_depth(x, 4, "depth_first", "NHWC", **kw),
                      lambda x: space_to_depth_ref(x, 4, "depth_first", "channels_last"),
                      (2, 128, 256, 16), np.float32),
    "d2s_crd_c128": (lambda x, **kw: fb.depth_to_space(x, 2, "CRD", **kw),
                     lambda x: depth_to_space_ref(x, 2, "CRD"), (2, 16, 64, 64), np.complex128),
    "d2s_dcr_rank5_i16": (lambda x, **kw: fb.depth_to_space(x, 2, "DCR", **kw),
                          lambda x: depth_to_space_ref(x, 2, "DCR"), (2, 64, 16, 16, 32), np.int16),
    "s2d_vect_c_i8": (lambda x, **kw: fb.space_to_depth(x, 2, "depth_first", "NCHW_VECT_C", **kw),
                      lambda x: space_to_depth_ref(x, 2, "depth_first", "NCHW_VECT_C"),
                      (2, 4, 256, 256, 4), np.int8),
    "d2s_bs3_u32": (lambda x, **kw: fb.depth_to_space(x, 3, **kw),
                    lambda x: depth_to_space_ref(x, 3), (2, 36, 96, 96), np.uint32),
    "s2d_bs4_df_u16": (lambda x, **kw: fb.space_to_depth(x, 4, "depth_first", **kw),
                       lambda x: space_to_depth_ref(x, 4, "depth_first"), (2, 4, 512, 256), np.uint16),
    "s2d_bs3_cl_u64": (lambda x, **kw: fb.space_to_depth(x, 3, "blocks_first", "NHWC", **kw),
                       lambda x: space_to_depth_ref(x, 3, "blocks_first", "channels_last"),
                       (2, 192, 192, 4), np.uint64),
    "tile_f64": (lambda x, **kw: fb.tile(x, (3, 1, 2), **kw),
                 lambda x: np.tile(x, (3, 1, 2)), (2, 256, 256), np.float64),
    "tile_u8_rows": (lambda x, **kw: fb.tile(x, (64, 1), **kw),
                     lambda x: np.tile(x, (64, 1)), (4, 16384), np.uint8),
    "s2d_strided_u16": (lambda x, **kw: fb.space_to_depth(x[:, :, ::-1, 1::2], 2, **kw),
                        lambda x: space_to_depth_ref(x[:, :, ::-1, 1::2], 2),
                        (2, 8, 256, 512), np.uint16),
}


@pytest.fixture(scope="module")
def big_inputs():
    return {name: _big(case[2], case[3], seed=i) for i, (name, case) in enumerate(BIG_CASES.items())}


@pytest.fixture(scope="module")
def big_expected(big_inputs):
    return {name: BIG_CASES[name][1](big_inputs[name]) for name in BIG_CASES}


@drawn(12, name=list(BIG_CASES), num_threads=[1, 2, 3, 8])
def test_large_arrays_any_thread_count(name, num_threads, big_inputs, big_expected):
    op = BIG_CASES[name][0]
    x = big_inputs[name]
    # well above the engine's 256 KiB single-thread limit
    assert big_expected[name].nbytes >= 2 ** 21
    _check(op(x, num_threads=num_threads), big_expected[name])


@pytest.mark.parametrize("num_threads", [2, 3])
@pytest.mark.parametrize("name", ["s2d_bf_u8", "d2s_crd_c128", "tile_f64"])
def test_large_arrays_default_threads_and_strided_out(name, num_threads, big_inputs, big_expected):
    op = BIG_CASES[name][0]
    x = big_inputs[name]
    fb.set_num_threads(num_threads)
    assert fb.get_num_threads() == num_threads
    _check(op(x), big_expected[name])
    expected = big_expected[name]
    out = np.zeros(expected.shape[::-1], dtype=expected.dtype).T
    assert op(x, out=out) is out
    _check(out, expected)


def test_concurrent_python_threads(big_inputs, big_expected):
    names = ["s2d_bf_u8", "d2s_crd_c128", "tile_f64", "s2d_df_cl_f32"]
    small = _values((2, 3, 4, 6))
    small_expected = space_to_depth_ref(small, 2, "depth_first")
    errors = []
    barrier = threading.Barrier(len(names) + 1)

    def worker(k, name):
        try:
            op = BIG_CASES[name][0]
            barrier.wait()
            for i in range(3):
                got = op(big_inputs[name], num_threads=1 + (i + k) % 3)
                if not np.array_equal(got, big_expected[name]):
                    errors.append(f"{name}: wrong result on iteration {i}")
                if not np.array_equal(fb.space_to_depth(small, 2, "depth_first"), small_expected):
                    errors.append(f"{name}: wrong small result on iteration {i}")
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(f"{name}: {exc!r}")

    threads = [threading.Thread(target=worker, args=(k, n)) for k, n in enumerate(names)]
    for t in threads:
        t.start()
    barrier.wait()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []


def test_concurrent_threads_with_object_and_string_dtypes():
    objs = np.array([f"o{i}" for i in range(2 * 4 * 8 * 8)], dtype=object).reshape(2, 4, 8, 8)
    strs = objs.astype(np.dtypes.StringDType()) if hasattr(np.dtypes, "StringDType") else objs
    exp_o = space_to_depth_ref(objs, 2).tolist()
    exp_s = space_to_depth_ref(strs, 2).tolist()
    errors = []

    def worker():
        for _ in range(20):
            if fb.space_to_depth(objs, 2).tolist() != exp_o:
                errors.append("object")
            if fb.space_to_depth(strs, 2).tolist() != exp_s:
                errors.append("string")

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []


# get/set_num_threads

def test_set_and_get_num_threads():
    for n in (1, 3, 7, 1):
        fb.set_num_threads(n)
        assert fb.get_num_threads() == n
        assert isinstance(fb.get_num_threads(), int)


@pytest.mark.parametrize("bad", [0, -1])
def test_set_num_threads_rejects_below_one(bad):
    fb.set_num_threads(2)
    with pytest.raises(ValueError, match=">= 1"):
        fb.set_num_threads(bad)
    assert fb.get_num_threads() == 2


@pytest.mark.parametrize("bad", [1.5, True, 2.0, "2", None])
def test_set_num_threads_rejects_non_integers(bad):
    fb.set_num_threads(2)
    with pytest.raises((TypeError, ValueError)):
        fb.set_num_threads(bad)
    assert fb.get_num_threads() == 2


@pytest.mark.parametrize("bad", [0, -1, -100])
def test_num_threads_argument_below_one(bad):
    x = _values((1, 1, 2, 2))
    with pytest.raises(ValueError, match="num_threads"):
        fb.space_to_depth(x, 2, num_threads=bad)
    with pytest.raises(ValueError, match="num_threads"):
        fb.depth_to_space(x, 1, num_threads=bad)
    with pytest.raises(ValueError, match="num_threads"):
        fb.tile(x, 2, num_threads=bad)


@pytest.mark.parametrize("bad", [1.5, True, 2.0])
def test_num_threads_argument_non_integer(bad):
    x = _values((1, 1, 2, 2))
    with pytest.raises((TypeError, ValueError), match="num_threads"):
        fb.space_to_depth(x, 2, num_threads=bad)
    with pytest.raises((TypeError, ValueError), match="num_threads"):
        fb.tile(x, 2, num_threads=bad)


def test_num_threads_argument_does_not_change_default():
    fb.set_num_threads(3)
    x = _values((1, 1, 2, 2))
    np.testing.assert_array_equal(fb.space_to_depth(x, 2, num_threads=1), space_to_depth_ref(x, 2))
    assert fb.get_num_threads() == 3


def _child_num_threads(env_update, affinity=None):
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    env.update(env_update)
    code = "import fastblock, os; print(fastblock.get_num_threads())"
    if affinity is not None:
        code = f"import os; os.sched_setaffinity(0, {set(affinity)!r}); " + code
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return int(proc.stdout.strip())


def test_default_from_omp_num_threads():
    assert _child_num_threads({"OMP_NUM_THREADS": "3"}) == 3
    assert _child_num_threads({"OMP_NUM_THREADS": "1"}) == 1


def test_default_from_usable_cores():
    if hasattr(os, "sched_getaffinity"):
        expected = len(os.sched_getaffinity(0))
    else:
        expected = os.cpu_count()
    assert _child_num_threads({}) == expected


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this OS")
def test_default_follows_affinity_mask():
    cpu = min(os.sched_getaffinity(0))
    assert _child_num_threads({}, affinity={cpu}) == 1
