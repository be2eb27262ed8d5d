"""Every documented dtype through the operators: results identical, byte for
byte, to the reference formulas / numpy.tile, with exactly the input's dtype;
object arrays with exact reference counts. The dtype-by-operator products
are seeded draws (``draws.drawn``): every dtype and every operator on every
run, the rest sampled."""
import sys

import numpy as np
import pytest

import fastblock as fb
from draws import drawn
from reference import depth_to_space_ref, space_to_depth_ref

# ---------------------------------------------------------------------------
# dtypes

PACKED = np.dtype([("a", "u1"), ("b", "<f8"), ("c", "S3")])
ALIGNED = np.dtype([("a", "u1"), ("b", "<f8"), ("c", "S3")], align=True)
NESTED = np.dtype([("p", [("x", "<i2"), ("y", ">f4")]), ("q", "u1", (3,)), ("r", "V2")])
NESTED_ALIGNED = np.dtype([("p", [("x", "<i2"), ("y", "<f8")], (2,)), ("q", "?")], align=True)

PLAIN_DTYPES = [
    np.dtype(bool),
    np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32), np.dtype(np.int64),
    np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.uint64),
    np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.longdouble),
    np.dtype(np.complex64), np.dtype(np.complex128), np.dtype(np.clongdouble),
    np.dtype("M8[ns]"), np.dtype("M8[D]"), np.dtype("M8[s]"),
    np.dtype("m8[ns]"), np.dtype("m8[h]"),
    np.dtype("S1"), np.dtype("S3"), np.dtype("S7"), np.dtype("S17"), np.dtype("S40"),
    np.dtype("U1"), np.dtype("U3"), np.dtype("U7"), np.dtype("U17"), np.dtype("U40"),
    np.dtype("V5"), np.dtype("V3"), np.dtype("V24"),
    PACKED, ALIGNED, NESTED, NESTED_ALIGNED,
    np.dtype(">f4"), np.dtype(">i8"), np.dtype(">c16"), np.dtype(">u2"), np.dtype(">U3"),
    np.dtype(">M8[s]"), np.dtype(">f8"),
]

ML_DTYPE_NAMES = ["bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                  "float8_e5m2fnuz", "float8_e4m3b11fnuz", "float8_e3m4", "float8_e4m3",
                  "float8_e8m0fnu", "int4", "uint4"]


def _dtype_id(dt):
    if dt.names is not None:
        return f"struct{dt.itemsize}{'a' if dt.isalignedstruct else ''}" + "-".join(dt.names)
    return dt.str


_ALPHABET = list("abcXYZ019 _é中😀ß\u0394")
_CODEPOINTS = np.array([ord(c) for c in _ALPHABET], dtype=np.uint32)


def make_array(dtype, shape, rng):
    """An array of ``dtype`` with (almost always) distinct items."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape))
    module = getattr(dtype.type, "__module__", "")
    if module.startswith("ml_dtypes") or dtype.kind == "V":
        raw = rng.integers(0, 256, size * dtype.itemsize, dtype=np.uint8)
        return raw.view(dtype).reshape(shape).copy()
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        native = dtype.newbyteorder("=")
        return rng.integers(info.min, info.max, shape, dtype=native, endpoint=True).astype(dtype)
    if dtype.kind == "f":
        return (rng.standard_normal(shape) * 1000).astype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) * 1000 + 1j * rng.standard_normal(shape)).astype(dtype)
    if dtype.kind in "Mm":
        vals = rng.integers(-10 ** 9, 10 ** 9, size, dtype=np.int64)
        arr = vals.astype(dtype.newbyteorder("=")).astype(dtype)
        arr[::7] = np.array("NaT", dtype=dtype)
        return arr.reshape(shape)
    if dtype.kind in "SU":
        width = dtype.itemsize // (4 if dtype.kind == "U" else 1)
        if dtype.kind == "S":
            codes = rng.integers(33, 127, (size, width)).astype(np.uint8)
        else:
            codes = rng.choice(_CODEPOINTS, (size, width))
            codes = codes.astype(">u4" if dtype.byteorder == ">" else "<u4")
        lengths = rng.integers(1, width + 1, size)
        codes[np.arange(width)[None, :] >= lengths[:, None]] = 0  # shorter strings too
        return np.ascontiguousarray(codes).view(dtype).reshape(shape)
    raise AssertionError(f"no generator for {dtype}")


# Every dtype by its test id: the plain ones, and ml_dtypes' by name.
ALL_DTYPES = {**{_dtype_id(dt): dt for dt in PLAIN_DTYPES},
              **{f"ml_dtypes.{name}": name for name in ML_DTYPE_NAMES}}


def _resolve(dt_id):
    dt = ALL_DTYPES[dt_id]
    if isinstance(dt, str) and dt in ML_DTYPE_NAMES:
        ml_dtypes = pytest.importorskip("ml_dtypes")
        if not hasattr(ml_dtypes, dt):
            pytest.skip(f"ml_dtypes has no {dt}")
        return np.dtype(getattr(ml_dtypes, dt))
    return np.dtype(dt)


# ---------------------------------------------------------------------------
# operators: (fastblock call, reference call, input shape)

OPS = {
    "s2d_bf_cf": (lambda x, **kw: fb.space_to_depth(x, 2, **kw),
                  lambda x: space_to_depth_ref(x, 2), (2, 3, 4, 6)),
    "s2d_df_cl": (lambda x, **kw: fb.space_to_depth(x, 2, "depth_first", "channels_last", **kw),
                  lambda x: space_to_depth_ref(x, 2, "depth_first", "channels_last"), (2, 4, 6, 3)),
    "s2d_df_rank3_bs3": (lambda x, **kw: fb.space_to_depth(x, 3, "CRD", **kw),
                         lambda x: space_to_depth_ref(x, 3, "CRD"), (2, 3, 9)),
    "d2s_bf_cf": (lambda x, **kw: fb.depth_to_space(x, 2, **kw),
                  lambda x: depth_to_space_ref(x, 2), (2, 8, 2, 3)),
    "d2s_df_rank5": (lambda x, **kw: fb.depth_to_space(x, 2, "depth_first", **kw),
                     lambda x: depth_to_space_ref(x, 2, "depth_first"), (1, 16, 2, 1, 3)),
    "d2s_dcr_cl": (lambda x, **kw: fb.depth_to_space(x, 2, "DCR", "channels_last", **kw),
                   lambda x: depth_to_space_ref(x, 2, "DCR", "channels_last"), (2, 3, 2, 8)),
    "s2d_vect_c_df": (lambda x, **kw: fb.space_to_depth(x, 2, "depth_first", "NCHW_VECT_C", **kw),
                      lambda x: space_to_depth_ref(x, 2, "depth_first", "NCHW_VECT_C"),
                      (1, 2, 4, 2, 4)),
    "d2s_vect_c_bf": (lambda x, **kw: fb.depth_to_space(x, 2, "blocks_first", "NCHW_VECT_C", **kw),
                      lambda x: depth_to_space_ref(x, 2, "blocks_first", "NCHW_VECT_C"),
                      (1, 4, 2, 3, 4)),
    "tile": (lambda x, **kw: fb.tile(x, (2, 1, 3), **kw),
             lambda x: np.tile(x, (2, 1, 3)), (2, 3)),
    "tile_longer": (lambda x, **kw: fb.tile(x, (3, 2, 1, 2), **kw),
                    lambda x: np.tile(x, (3, 2, 1, 2)), (2, 3)),
}


def _item_bytes(arr):
    """The bytes of every item, field by field for structured dtypes (the
    padding bytes between fields hold no data, and NumPy does not copy them)."""
    if arr.dtype.names is None:
        return [np.ascontiguousarray(arr).tobytes()]
    parts = []
    for name in arr.dtype.names:
        parts += _item_bytes(arr[name])
    return parts


def _assert_identical(result, expected, x):
    assert isinstance(result, np.ndarray)
    assert result.dtype == x.dtype
    assert type(result.dtype) is type(x.dtype)
    assert result.dtype.str == x.dtype.str
    assert result.dtype.descr == x.dtype.descr
    assert result.dtype.isalignedstruct == x.dtype.isalignedstruct
    assert result.shape == expected.shape
    assert _item_bytes(result) == _item_bytes(expected)
    if x.dtype.kind in "SU":
        assert result.tolist() == expected.tolist()


@drawn(96, dt=list(ALL_DTYPES), op_name=list(OPS))
def test_plain_dtypes(dt, op_name, rng):
    dtype = _resolve(dt)
    op, ref, shape = OPS[op_name]
    x = make_array(dtype, shape, rng)
    keep = x.copy()
    result = op(x)
    assert result.flags.c_contiguous
    _assert_identical(result, ref(keep), x)
    assert _item_bytes(x) == _item_bytes(keep)


@drawn(len(ALL_DTYPES), dt=list(ALL_DTYPES), op_name=["s2d_df_cl", "d2s_bf_cf", "tile"])
def test_plain_dtypes_strided_input_and_strided_out(dt, op_name, rng):
    dtype = _resolve(dt)
    op, ref, shape = OPS[op_name]
    # a reversed, stepped view of a larger array
    big = make_array(dtype, tuple(2 * s for s in shape), rng)
    x = big[tuple(slice(None, None, -2) for _ in shape)]
    assert x.shape == tuple(shape)
    expected = ref(x)
    buf = make_array(dtype, tuple(s * 2 + 1 for s in expected.shape), rng)
    out = buf[tuple(slice(1, None, 2) for _ in expected.shape)]
    assert out.shape == expected.shape
    got = op(x, out=out)
    assert got is out
    _assert_identical(got, expected, x)


# ---------------------------------------------------------------------------
# object arrays and reference counts

class _Thing:
    def __init__(self, n):
        self.n = n

    def __repr__(self):
        return f"_Thing({self.n})"


def _unique_objects(kind, n):
    if kind == "str":
        return ["".join(["s", str(i), "-" * (i % 5), "é"]) for i in range(n)]
    if kind == "int":
        return [10 ** 30 + i for i in range(n)]
    if kind == "mixed":
        out = []
        for i in range(n):
            out.append(["".join(["m", str(i)]), 10 ** 25 + i, float(i) + 0.5, (i, "t"),
                        _Thing(i), None][i % 6])
        return out
    raise AssertionError(kind)


def _object_array(objs, shape):
    x = np.empty(len(objs), dtype=object)
    for i, o in enumerate(objs):
        x[i] = o
    return x.reshape(shape)


def _counted(objs):
    """Objects whose reference counts are exact (None is shared with everything)."""
    return [(i, o) for i, o in enumerate(objs) if o is not None]


def _refcounts(objs):
    return [sys.getrefcount(o) for _, o in _counted(objs)]


def _object_case(op_name, kind):
    """(call, objects, object array of them, index, occurrences): ``index``
    says where each source item lands (the reference on an index array),
    ``occurrences`` how often each lands in the result."""
    op, ref, shape = OPS[op_name]
    n = int(np.prod(shape))
    objs = _unique_objects(kind, n)
    index = ref(np.arange(n).reshape(shape))
    return op, objs, _object_array(objs, shape), index, np.bincount(index.ravel(), minlength=n)


@pytest.mark.parametrize("kind", ["str", "int", "mixed"])
@pytest.mark.parametrize("op_name", list(OPS))
def test_object_arrays_refcounts(op_name, kind):
    op, objs, x, index, occurrences = _object_case(op_name, kind)
    before = _refcounts(objs)

    result = op(x)
    assert result.dtype == np.dtype(object)
    assert result.shape == index.shape
    assert result.flags.c_contiguous
    assert all(r is objs[i] for r, i in zip(result.ravel().tolist(), index.ravel().tolist()))
    after = _refcounts(objs)
    expected = [b + int(occurrences[i]) for b, (i, _) in zip(before, _counted(objs))]
    assert after == expected

    del result
    assert _refcounts(objs) == before

    # a failing call leaves every count as it was
    with pytest.raises((ValueError, TypeError)):
        op(x, num_threads=0)
    wrong_out = np.empty(index.shape, dtype=np.float64)
    with pytest.raises(TypeError):
        op(x, out=wrong_out)
    assert _refcounts(objs) == before


@pytest.mark.parametrize("kind", ["str", "mixed"])
@pytest.mark.parametrize("op_name", ["s2d_bf_cf", "d2s_df_rank5", "tile"])
def test_object_arrays_out_refcounts(op_name, kind):
    op, objs, x, index, occurrences = _object_case(op_name, kind)
    sentinel = _Thing(-1)
    buf = np.empty((index.size * 2,), dtype=object)
    buf[:] = [sentinel] * buf.size
    out = buf[::2].reshape(index.shape)  # strided out, sentinels between items
    before = _refcounts(objs)
    sentinel_before = sys.getrefcount(sentinel)

    got = op(x, out=out)
    assert got is out
    assert all(r is objs[i] for r, i in zip(out.ravel().tolist(), index.ravel().tolist()))
    assert all(s is sentinel for s in buf[1::2])
    assert sys.getrefcount(sentinel) == sentinel_before - index.size
    expected = [b + int(occurrences[i]) for b, (i, _) in zip(before, _counted(objs))]
    assert _refcounts(objs) == expected

    # an error with a valid out: nothing changes (no count, no item of out)
    with pytest.raises(ValueError):
        op(x, out=out, num_threads=-1)
    assert _refcounts(objs) == expected
    del got, out, buf
    assert _refcounts(objs) == before


@pytest.mark.parametrize("op_name", ["s2d_bf_cf", "d2s_bf_cf"])
def test_object_array_error_before_work(op_name):
    """A spatial/channel size the block size does not divide: refcounts unchanged."""
    objs = _unique_objects("str", 2 * 9 * 3 * 3)
    x = _object_array(objs, (2, 9, 3, 3))
    before = _refcounts(objs)
    op = fb.space_to_depth if op_name.startswith("s2d") else fb.depth_to_space
    with pytest.raises(ValueError):
        op(x, 2)
    assert _refcounts(objs) == before


def test_object_array_strided_input():
    objs = _unique_objects("str", 4 * 6 * 8 * 8)
    base = _object_array(objs, (4, 6, 8, 8))
    x = base[::-2, 1::2, :, ::-1]
    expected = space_to_depth_ref(x, 2, "depth_first")
    got = fb.space_to_depth(x, 2, "depth_first")
    assert got.shape == expected.shape
    assert all(a is b for a, b in zip(got.ravel().tolist(), expected.ravel().tolist()))


def test_object_array_of_none():
    x = np.full((1, 4, 2, 2), None, dtype=object)
    x[0, 1, 1, 0] = "marker"
    got = fb.depth_to_space(x, 2)
    expected = depth_to_space_ref(x, 2)
    assert got.dtype == object
    assert got.ravel().tolist() == expected.ravel().tolist()


# structured dtype with an object field: goes through the reference-keeping path

STRUCT_OBJ = np.dtype([("o", "O"), ("i", "<i4"), ("s", "S2")])


@pytest.mark.parametrize("op_name", ["s2d_bf_cf", "d2s_dcr_cl", "tile"])
def test_structured_with_object_field(op_name):
    op, ref, shape = OPS[op_name]
    n = int(np.prod(shape))
    objs = _unique_objects("str", n)
    x = np.empty(n, dtype=STRUCT_OBJ)
    for k in range(n):
        x[k] = (objs[k], k, str(k % 100).encode())
    x = x.reshape(shape)
    index = ref(np.arange(n).reshape(shape))
    occurrences = np.bincount(index.ravel(), minlength=n)
    before = _refcounts(objs)
    got = op(x)
    assert got.dtype == STRUCT_OBJ
    assert got.shape == index.shape
    assert all(r is objs[i] for r, i in zip(got["o"].ravel().tolist(), index.ravel().tolist()))
    np.testing.assert_array_equal(got["i"], index)
    np.testing.assert_array_equal(got["s"], x["s"].ravel()[index])
    assert _refcounts(objs) == [b + int(occurrences[i]) for b, (i, _) in zip(before, _counted(objs))]
    del got
    assert _refcounts(objs) == before


# ---------------------------------------------------------------------------
# NumPy's variable-width StringDType

def _string_dtypes():
    S = getattr(np.dtypes, "StringDType", None)
    if S is None:
        return []
    return [pytest.param(S(), id="StringDType"),
            pytest.param(S(na_object=None), id="StringDType-na-None"),
            pytest.param(S(na_object=np.nan), id="StringDType-na-nan")]


def _strings(n, rng, na=False):
    items = []
    for i in range(n):
        length = [0, 3, 15, 16, 40, 200][i % 6]  # short (inline) and long (heap) strings
        s = "".join(rng.choice(_ALPHABET, length)) + str(i)
        items.append(s)
    if na:
        items[1::5] = [None] * len(items[1::5])
    return items


@pytest.mark.parametrize("op_name", list(OPS))
@pytest.mark.parametrize("dtype", _string_dtypes())
def test_string_dtype(dtype, op_name, rng):
    op, ref, shape = OPS[op_name]
    n = int(np.prod(shape))
    has_na = hasattr(dtype, "na_object")
    values = _strings(n, rng, na=has_na)
    if has_na and dtype.na_object is not None:
        values = [dtype.na_object if v is None else v for v in values]
    x = np.array(values, dtype=dtype).reshape(shape)
    index = ref(np.arange(n).reshape(shape))
    got = op(x)
    assert got.dtype == x.dtype
    assert type(got.dtype) is type(x.dtype)
    assert repr(got.dtype) == repr(x.dtype)
    assert got.shape == index.shape
    expected = [values[i] for i in index.ravel().tolist()]
    got_list = got.ravel().tolist()
    assert len(got_list) == len(expected)
    for g, e in zip(got_list, expected):
        if isinstance(e, float) and e != e:
            assert isinstance(g, float) and g != g
        else:
            assert g == e
    # the result owns its strings: changing it leaves x alone
    if got.size:
        got.ravel()[0] = "changed"
        assert x.ravel().tolist() == values


@pytest.mark.parametrize("dtype", _string_dtypes())
def test_string_dtype_out_and_strided(dtype, rng):
    x_full = np.array(_strings(2 * 4 * 4 * 6, rng), dtype=dtype).reshape(2, 4, 4, 6)
    x = x_full[:, ::2, :, ::-1]
    expected = space_to_depth_ref(x, 2)
    out = np.empty(expected.shape, dtype=dtype)
    got = fb.space_to_depth(x, 2, out=out)
    assert got is out
    assert got.ravel().tolist() == expected.ravel().tolist()
