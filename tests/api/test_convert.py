"""Issue 50: dtype conversion and a per-channel scale/offset in the pass that
moves the items (``dtype=``, ``scale=``, ``offset=`` on every front door, and
``fastblock.collate``), checked byte for byte against an independent
reference written here from the contract's NumPy expression alone:

    float result, no scale and no offset:  y = cast(r, dtype)
    otherwise (ct = float64 for a float64 result, else float32):
        v = cast(r, ct); v = v * scale.astype(ct); v = v + offset.astype(ct)
        float result:   y = cast(v, dtype)
        integer result: y = where(isnan(v), 0, clip(rint(v), lo, hi)).astype(dtype)

where ``r`` is the operator's result without conversion (NumPy's for
transpose, the same front door's without the new arguments for the others)
and ``cast`` the float rule (``fastblock._reference.cast_float``: one
rounding from the exact value, NaNs quieted with their payload's top),
itself checked against NumPy's and ml_dtypes' casts where they follow it
(test_cast_float_*). Results are compared as bytes (NaN payloads and the
sign of zero count).

Random data comes from ``draws.SEED`` (printed in pytest's header, and
beside a failure of these tests: ``FASTBLOCK_TEST_SEED=N`` replays it).
"""
import zlib

import numpy as np
import pytest

import fastblock as fb
from draws import DRAWN_TESTS, SEED
from fastblock._call import memory as _memory
from fastblock._reference import cast_float
from guarded import Guarded

try:
    import ml_dtypes
except ImportError:  # only the bfloat16 cases need it
    ml_dtypes = None

BF16 = np.dtype(ml_dtypes.bfloat16) if ml_dtypes is not None else None

SOURCES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "bfloat16", "float32", "float64"]
RESULTS = ["float16", "bfloat16", "float32", "float64", "uint8", "int8", "uint16", "int16"]
FLOAT_SOURCES = ["float16", "bfloat16", "float32", "float64"]


def _drawn(test):
    """A test on data drawn from SEED: conftest names the seed beside its failures."""
    DRAWN_TESTS.add(f"{__name__.rpartition('.')[2]}.py::{test.__name__}")
    return test


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng([SEED, zlib.crc32(name.encode())])


def dt(name) -> np.dtype:
    """The dtype of a name (None stays None); bfloat16 skips without ml_dtypes."""
    if name is None:
        return None
    if isinstance(name, str) and name == "bfloat16":
        if BF16 is None:
            pytest.skip("ml_dtypes is not installed")
        return BF16
    return np.dtype(name)


def _is_float(dtype) -> bool:
    dtype = np.dtype(dtype)
    return dtype in (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)) or (
        BF16 is not None and dtype == BF16)


# ---------------------------------------------------------------------------
# the reference: the contract's expression, NumPy and ml_dtypes only

def convert(r, dtype, scale=None, offset=None):
    """``r`` (the operator's unconverted result) converted as the contract's
    NumPy expression writes it."""
    r = np.asarray(r)
    dtype = np.dtype(dtype)
    with np.errstate(all="ignore"):
        if scale is None and offset is None and _is_float(dtype):
            y = cast_float(r, dtype)
        else:
            ct = np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)
            v = cast_float(r, ct)
            if scale is not None:
                s = np.asarray(scale).astype(ct)
                np.broadcast_to(s, r.shape)  # the contract: it broadcasts to the result
                v = v * s
            if offset is not None:
                o = np.asarray(offset).astype(ct)
                np.broadcast_to(o, r.shape)
                v = v + o
            if _is_float(dtype):
                y = cast_float(v, dtype)
            else:
                info = np.iinfo(dtype)
                y = np.where(np.isnan(v), 0, np.clip(np.rint(v), info.min, info.max)).astype(dtype)
    assert y.shape == r.shape and y.dtype == dtype
    return y


def _uint(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}")


def _item_bytes(a: np.ndarray) -> np.ndarray:
    """The bytes of ``a``, one row per item: shape a.shape + (itemsize,)."""
    return np.ascontiguousarray(a).view(np.uint8).reshape(a.shape + (a.dtype.itemsize,))


def _hex(a: np.ndarray, idx) -> str:
    return "0x" + bytes(_item_bytes(a)[idx])[::-1].hex()  # little-endian items


def assert_same_bytes(got, expected, source=None):
    """``got`` is an ndarray of ``expected``'s dtype and shape with the same
    bytes; a failure lists the first items that differ (with the unconverted
    item ``source[idx]`` where given)."""
    assert isinstance(got, np.ndarray), type(got)
    assert got.dtype == expected.dtype, f"dtype {got.dtype}, expected {expected.dtype}"
    assert got.shape == expected.shape, f"shape {got.shape}, expected {expected.shape}"
    g, e = _item_bytes(got), _item_bytes(expected)
    if np.array_equal(g, e):
        return
    bad = np.argwhere((g != e).any(axis=-1))
    lines = []
    for idx in (tuple(int(i) for i in row) for row in bad[:10]):
        line = (f"  at {idx}: got {_hex(got, idx)} ({got[idx]!r}), "
                f"expected {_hex(expected, idx)} ({expected[idx]!r})")
        if source is not None:
            line += f" <- {source.dtype} {_hex(source, idx)} ({source[idx]!r})"
        lines.append(line)
    pytest.fail(f"{len(bad)} of {got.size} items differ (seed {SEED}):\n" + "\n".join(lines))


def _kwargs(dtype=None, scale=None, offset=None):
    """The new keywords, only those given."""
    kw = {}
    if dtype is not None:
        kw["dtype"] = dtype
    if scale is not None:
        kw["scale"] = scale
    if offset is not None:
        kw["offset"] = offset
    return kw


def random_values(dtype, shape, rng) -> np.ndarray:
    """Values of ``dtype`` that exercise rounding and saturation: for integers
    the whole range and values near zero, for floats magnitudes from 1e-8 to
    1e6, exact halves (ties of rint) and normal values."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    if dtype == np.bool_:
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        wide = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        near = rng.integers(max(info.min, -300), min(info.max, 300), n, endpoint=True).astype(dtype)
        return np.where(rng.integers(0, 2, n).astype(bool), wide, near).reshape(shape)
    mag = 10.0 ** rng.uniform(-8, 6, n) * rng.choice([-1.0, 1.0], n)
    halves = rng.integers(-700, 700, n) / 2
    normal = rng.standard_normal(n) * 300
    pick = rng.integers(0, 3, n)
    v = np.where(pick == 0, mag, np.where(pick == 1, halves, normal))
    with np.errstate(over="ignore"):
        return v.astype(dtype).reshape(shape)


def _from_bits(bits, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    return np.array(bits, dtype=f"u{dtype.itemsize}").view(dtype)


def _bits_of(values, dtype) -> list:
    """The bit patterns of decimal values rounded to ``dtype`` (for the lists
    below; the arrays are built from bits)."""
    with np.errstate(all="ignore"):
        a = np.array(values, dtype=np.float64).astype(dtype)
    return [int(b) for b in a.view(f"u{a.dtype.itemsize}")]


# Per-channel scale and offset values (cycled to the channel count); the
# float64 values round when the compute type is float32.
SCALES = np.array([1 / 255, -0.5, 3.0, 0.1, -7.25, 2.0 ** -10, 1.5, 100.0, 1 / 3])
OFFSETS = np.array([-0.5, 127.5, -1000.25, 0.0, -0.0, 2.5, 1e4, -3.75, 1 / 7])


def per_channel(values, channels: int, axis: int, ndim: int) -> np.ndarray:
    """``values`` cycled to ``channels`` items, shaped to broadcast along
    ``axis`` of an ``ndim``-D result: (C,) + (1,) * (ndim - 1 - axis)."""
    return np.resize(np.asarray(values), channels).reshape((channels,) + (1,) * (ndim - 1 - axis))


def _affine_arg(spec, channels, axis, ndim, table):
    if isinstance(spec, str):  # "C": per channel
        return per_channel(table, channels, axis, ndim)
    return spec


# ---------------------------------------------------------------------------
# 1. every (source, result) pair through fb.transpose

# name -> (scale, offset, layout); "C" = per channel, shaped for the layout:
# "chw" results (3, 5, 7) from HWC (axes (2, 0, 1)), scale (3, 1, 1);
# "hwc" results (5, 7, 3) from CHW (axes (1, 2, 0)), scale (3,).
AFFINES = {
    "plain": (None, None, "chw"),
    "scale": (1 / 3, None, "chw"),
    "offset": (None, -0.5, "hwc"),
    "scale_offset": (np.float64(0.1), 3, "hwc"),
    "scale_c_chw": ("C", None, "chw"),
    "offset_c_hwc": (None, "C", "hwc"),
    "both_c_chw": ("C", "C", "chw"),
    "both_c_hwc": ("C", "C", "hwc"),
}
LAYOUTS = {"chw": ((5, 7, 3), (2, 0, 1), 0), "hwc": ((3, 5, 7), (1, 2, 0), 2)}


def _layout_affine(affine):
    scale, offset, layout = AFFINES[affine]
    shape, axes, axis = LAYOUTS[layout]
    scale = _affine_arg(scale, 3, axis, 3, SCALES)
    offset = _affine_arg(offset, 3, axis, 3, OFFSETS)
    return shape, axes, scale, offset


@_drawn
@pytest.mark.parametrize("affine", list(AFFINES))
@pytest.mark.parametrize("result", RESULTS)
@pytest.mark.parametrize("source", SOURCES)
def test_every_pair(source, result, affine):
    shape, axes, scale, offset = _layout_affine(affine)
    x = random_values(dt(source), shape, _rng(f"pair {source} {result} {affine}"))
    keep = x.copy()
    r = np.transpose(keep, axes)
    got = fb.transpose(x, axes, **_kwargs(dt(result), scale, offset))
    assert got.flags.c_contiguous
    assert_same_bytes(got, convert(r, dt(result), scale, offset), r)
    assert_same_bytes(x, keep)  # the input is not written


@_drawn
@pytest.mark.parametrize("affine", ["scale", "offset", "both_c_chw", "both_c_hwc"])
@pytest.mark.parametrize("source", RESULTS)
def test_dtype_none_with_affine_keeps_the_dtype(source, affine):
    """dtype=None with a scale or offset: the result has x's dtype."""
    shape, axes, scale, offset = _layout_affine(affine)
    x = random_values(dt(source), shape, _rng(f"none {source} {affine}"))
    r = np.transpose(x, axes)
    got = fb.transpose(x, axes, dtype=None, **_kwargs(None, scale, offset))
    assert_same_bytes(got, convert(r, dt(source), scale, offset), r)


@pytest.mark.parametrize("source", ["int32", "uint64", "complex64", "float32", "S3", "bfloat16"])
def test_no_conversion_is_unchanged(source):
    """dtype, scale and offset None (given or not): the plain transpose, for
    any dtype, supported result or not."""
    x = np.arange(105).reshape(5, 7, 3).astype(dt(source))
    for got in (fb.transpose(x, (2, 0, 1)),
                fb.transpose(x, (2, 0, 1), dtype=None, scale=None, offset=None)):
        assert_same_bytes(got, np.ascontiguousarray(np.transpose(x, (2, 0, 1))))


@pytest.mark.parametrize("spelling", ["type", "str", "dtype", "char"])
@pytest.mark.parametrize("result", ["float32", "float16", "bfloat16", "uint8", "float64"])
def test_dtype_spellings(result, spelling):
    rdt = dt(result)
    given = {"type": rdt.type, "str": result, "dtype": rdt,
             "char": rdt.str if result != "bfloat16" else rdt}[spelling]
    x = np.arange(105, dtype=np.uint8).reshape(5, 7, 3)
    got = fb.transpose(x, (2, 0, 1), dtype=given, scale=0.5)
    assert_same_bytes(got, convert(x.transpose(2, 0, 1), rdt, 0.5))


# scale/offset given in other forms: every one broadcasts against the result
# (3, 5, 7) by NumPy's rules.
ARGUMENT_FORMS = {
    "nested_lists": ([[[0.5]], [[2]], [[1 / 3]]], [[[1]], [[-2]], [[0.25]]]),
    "tuple_c_last_axis": ((0.5, 2.0, -1.0, 3.0, 0.25, 1 / 3, 7.0), None),  # per column (7,)
    "per_row": (np.linspace(-2, 2, 5).reshape(5, 1), np.arange(5.0).reshape(5, 1)),
    "whole_result": (np.linspace(0.01, 3, 105).reshape(3, 5, 7), np.linspace(-9, 9, 105).reshape(3, 5, 7)),
    "ones_shape": (np.full((1, 1, 1), 0.3), np.full((1,), -0.7)),
    "float32_scalar": (np.float32(0.3), np.float32(-0.7)),
    "float16_array": (np.array([0.3, 2, -1], np.float16).reshape(3, 1, 1), None),
    "int_arrays": (np.array([2, 3, -1], np.int16).reshape(3, 1, 1),
                   np.array([1, -2, 100], np.int64)[:, None, None]),
    "uint8_scalar": (np.uint8(3), np.int8(-4)),
    "zero_d_array": (np.array(1 / 255), np.array(-0.5)),
    "python_int": (3, -128),
    "reversed_view": (np.array([0.25, -1.0, 1 / 3, 9.0])[::-1][1:].reshape(3, 1, 1),
                      np.linspace(-5, 5, 14)[::-2].reshape(7)),
    "zero_strides": (np.broadcast_to(np.array([0.1, 0.2, 0.3])[:, None, None], (3, 5, 7)),
                     np.broadcast_to(np.float64(-0.25), (5, 7))),
    "big_endian": (np.array([0.1, 1 / 3, -2.5], ">f8").reshape(3, 1, 1),
                   np.array([7, -8, 9], ">i4")[:, None, None]),
    "float64_rounds": (np.array([0.1, 1 / 3, 1 / 255])[:, None, None],
                       np.array([0.1, 1 / 3, 1 / 7])[:, None, None]),
}


@_drawn
@pytest.mark.parametrize("result", ["float32", "float64", "float16", "bfloat16", "uint8", "int16"])
@pytest.mark.parametrize("form", list(ARGUMENT_FORMS))
def test_scale_offset_forms(form, result):
    scale, offset = ARGUMENT_FORMS[form]
    x = random_values(np.float32, (5, 7, 3), _rng(f"forms {form} {result}"))
    keep_scale = np.array(scale, copy=True)
    r = x.transpose(2, 0, 1)
    got = fb.transpose(x, (2, 0, 1), **_kwargs(dt(result), scale, offset))
    assert_same_bytes(got, convert(r, dt(result), scale, offset), r)
    assert np.array_equal(np.asarray(scale), keep_scale)


# ---------------------------------------------------------------------------
# 2. every front door

# name -> (call(x, **kw), shape of x, the result's channel axis, a larger
# shape of x (results of 30k to 200k items, across the engine's tiles))
DOORS = {
    "space_to_depth": (lambda x, **kw: fb.space_to_depth(x, 2, **kw), (2, 3, 4, 6), 1, (2, 16, 64, 96)),
    "space_to_depth_channels_last": (
        lambda x, **kw: fb.space_to_depth(x, 2, "depth_first", "channels_last", **kw), (2, 4, 6, 3), 3,
        (2, 64, 94, 16)),
    "space_to_depth_vect_c": (
        lambda x, **kw: fb.space_to_depth(x, 2, "depth_first", "NCHW_VECT_C", **kw), (1, 2, 4, 2, 4), 1,
        (2, 4, 32, 30, 4)),
    "depth_to_space": (lambda x, **kw: fb.depth_to_space(x, 2, "CRD", **kw), (2, 12, 3, 5), 1,
                       (2, 64, 31, 48)),
    "depth_to_space_channels_last": (
        lambda x, **kw: fb.depth_to_space(x, 2, "DCR", "channels_last", **kw), (2, 3, 5, 12), 3,
        (2, 32, 47, 64)),
    "depth_to_space_vect_c": (
        lambda x, **kw: fb.depth_to_space(x, 2, "blocks_first", "NCHW_VECT_C", **kw), (1, 4, 2, 3, 4), 4,
        (2, 16, 20, 30, 4)),
    "tile": (lambda x, **kw: fb.tile(x, (2, 1, 3), **kw), (3, 4, 5), 0, (3, 40, 53)),
    "transpose": (lambda x, **kw: fb.transpose(x, (0, 3, 1, 2), **kw), (2, 4, 5, 3), 1, (2, 61, 67, 3)),
    "pixel_shuffle": (lambda x, **kw: fb.pixel_shuffle(x, 2, **kw), (2, 12, 3, 4), 1, (2, 36, 33, 41)),
    "pixel_shuffle_channels_last": (
        lambda x, **kw: fb.pixel_shuffle(x, 2, "channels_last", **kw), (2, 3, 4, 12), 3, (2, 33, 41, 36)),
    "pixel_unshuffle": (lambda x, **kw: fb.pixel_unshuffle(x, 2, **kw), (2, 3, 4, 6), 1, (2, 3, 66, 82)),
    "space_to_batch": (
        lambda x, **kw: fb.space_to_batch(x, [1, 2, 3, 1], [0, 1, 2, 0], [0, 1, 0, 0], **kw),
        (2, 4, 4, 3), 3, (2, 62, 61, 3)),
    "batch_to_space": (
        lambda x, **kw: fb.batch_to_space(x, [1, 1, 2, 2], [0, 0, 1, 0], [0, 0, 1, 2], **kw),
        (4, 3, 4, 6), 1, (8, 3, 33, 41)),
    "rearrange": (lambda x, **kw: fb.rearrange(x, "n (h a) w c -> n (a c) h w", a=2, **kw),
                  (2, 8, 5, 3), 1, (2, 64, 45, 3)),
    "repeat": (lambda x, **kw: fb.repeat(x, "h w c -> c h (w k)", k=2, **kw), (4, 5, 3), 0, (40, 53, 3)),
}

# name -> (source, result (None: x's), scale, offset); "C": per channel,
# "F": one per item of the result (random signs: a zero of space_to_batch's
# padding times a scale read from the wrong item shows in its sign)
DOOR_CASES = {
    "u8_f32_scale_full": ("uint8", "float32", "F", None),
    "f32_f16_both_full": ("float32", "float16", "F", "F"),
    "u8_f32_both_c": ("uint8", "float32", "C", "C"),
    "f32_f16_scale": ("float32", "float16", 0.37, None),
    "f32_u8_both_c": ("float32", "uint8", "C", "C"),
    "f64_bf16_offset_c": ("float64", "bfloat16", None, "C"),
    "i16_i8_scale_c": ("int16", "int8", "C", None),
    "bool_f32_offset": ("bool", "float32", None, -1.5),
    "f16_f64_both": ("float16", "float64", -2.0, 0.125),
    "u16_f16_plain": ("uint16", "float16", None, None),
    "bf16_u16_both": ("bfloat16", "uint16", 300.0, -0.5),
    "i64_i16_plain": ("int64", "int16", None, None),
    "f32_none_both_c": ("float32", None, "C", "C"),
    "u8_none_both": ("uint8", None, 2.5, -100.0),
}


def _door_case(door, case, rng, large=False):
    call, shape, axis, large_shape = DOORS[door]
    if large:
        shape = large_shape
    source, result, scale, offset = DOOR_CASES[case]
    x = random_values(dt(source), shape, rng)
    r = call(x)  # the same front door without conversion
    rdt = dt(result) if result is not None else x.dtype
    if scale == "F":
        scale = rng.uniform(0.5, 2, r.shape) * rng.choice([-1.0, 1.0], r.shape)
    if offset == "F":
        offset = rng.standard_normal(r.shape) * 100
    scale = _affine_arg(scale, r.shape[axis], axis, r.ndim, SCALES)
    offset = _affine_arg(offset, r.shape[axis], axis, r.ndim, OFFSETS)
    return call, x, r, dt(result), rdt, scale, offset


@_drawn
@pytest.mark.parametrize("case", list(DOOR_CASES))
@pytest.mark.parametrize("door", list(DOORS))
def test_every_front_door(door, case):
    call, x, r, result, rdt, scale, offset = _door_case(door, case, _rng(f"door {door} {case}"))
    keep = x.copy()
    expected = convert(r, rdt, scale, offset)
    got = call(x, **_kwargs(result, scale, offset))
    assert got.flags.c_contiguous
    assert_same_bytes(got, expected, r)
    assert_same_bytes(x, keep)
    # and into out=, with num_threads= beside the new keywords
    out = np.empty(expected.shape, rdt)
    out.view(np.uint8)[...] = 0xA5
    assert call(x, out=out, num_threads=2, **_kwargs(result, scale, offset)) is out
    assert_same_bytes(out, expected, r)


@_drawn
@pytest.mark.parametrize("case", ["u8_f32_both_c", "f32_u8_both_c", "f64_bf16_offset_c", "f16_f64_both",
                                  "u8_f32_scale_full"])
@pytest.mark.parametrize("door", list(DOORS))
def test_every_front_door_larger(door, case):
    """The same at sizes across the engine's tiles, two threads."""
    call, x, r, result, rdt, scale, offset = _door_case(door, case, _rng(f"large {door} {case}"), True)
    got = call(x, num_threads=2, **_kwargs(result, scale, offset))
    assert_same_bytes(got, convert(r, rdt, scale, offset), r)


@_drawn
@pytest.mark.parametrize("case", ["u8_f32_both_c", "f32_u8_both_c", "f32_f16_scale",
                                  "bool_f32_offset"])
@pytest.mark.parametrize("door", list(DOORS))
def test_every_front_door_broadcast_views(door, case):
    """A scale or offset passed as a broadcast view of the result's shape
    (``np.broadcast_to``, as users and fastblock.dask's blocks pass them)
    gives its compact form's bytes, and is read as that form: its values
    are converted once each, not once an item."""
    call, x, r, result, rdt, scale, offset = _door_case(door, case, _rng(f"views {door} {case}"))
    views = [None if v is None else np.broadcast_to(v, r.shape) for v in (scale, offset)]
    got = call(x, num_threads=2, **_kwargs(result, *views))
    assert_same_bytes(got, convert(r, rdt, scale, offset), r)
    for compact, view in zip((scale, offset), views):
        if view is not None:
            assert _memory.compute_values(view, np.float32).size == np.size(compact)


@pytest.mark.parametrize("result,scale,offset,pad_bits", [
    ("float32", None, 7.5, _bits_of([7.5], np.float32)[0]),
    ("float32", -2.0, None, 0x80000000),          # 0 * -2 = -0.0
    ("float16", 3.0, -0.0, 0x0000),               # 0*3 + -0.0 = +0.0
    ("float64", -1.0, -0.0, 0x8000000000000000),  # -0.0 + -0.0 = -0.0
    ("int8", 5.0, -3, 0xFD),
    ("uint8", None, 300.0, 0xFF),
    ("bfloat16", None, None, 0x0000),
])
def test_space_to_batch_padding_is_converted(result, scale, offset, pad_bits):
    """The padding is op(x)'s zeros, converted: scale times +0.0, plus offset."""
    x = np.arange(1, 1 + 2 * 4 * 4 * 3, dtype=np.uint8).reshape(2, 4, 4, 3)
    args = ([1, 2, 3, 1], [0, 1, 2, 0], [0, 1, 0, 0])
    rdt = dt(result)
    pads = fb.space_to_batch(np.ones(x.shape, bool), *args) == 0
    assert pads.any()
    got = fb.space_to_batch(x, *args, **_kwargs(rdt, scale, offset))
    r = fb.space_to_batch(x, *args)
    assert_same_bytes(got, convert(r, rdt, scale, offset), r)
    assert (_uint(got)[pads] == pad_bits).all()


# ---------------------------------------------------------------------------
# 3. special values, from bit patterns

_F16_LIMITS = [65504.0, -65504.0, 65519.99, 65519.996, 65520.0, -65520.0, 65535.99, 65536.0, 1e5,
               2.0 ** -24, 2.0 ** -25, 2.0 ** -25 * (1 + 2.0 ** -20), 3 * 2.0 ** -25, 2.0 ** -26,
               2.0 ** -14, 2.0 ** -14 - 2.0 ** -24, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 2049.0, 2051.0,
               -(1 + 2.0 ** -11)]
_BF16_TIES = [1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, 1 + 2.0 ** -8 + 2.0 ** -23, 1 + 2.0 ** -8 - 2.0 ** -23,
              -(1 + 2.0 ** -8), 256.5, 257.0, 259.0, 3.3895313892515355e38]
_INT_EDGES = [-0.5, 0.5, 1.5, 2.5, -1.5, -2.5, 0.49999997, -0.49999997, 254.5, 255.5, 255.49, 255.5001,
              256.0, -0.49, -128.5, -127.5, 127.5, 128.5, -129.0, 126.5, 32767.5, 32766.5, -32768.5,
              -32767.5, 32768.0, 65534.5, 65535.5, 65536.0, -65536.0, 2.0 ** 31, -2.0 ** 31, 1e30, -1e30,
              3e38, -3e38, 1e-30, -1e-30, 1e-45]
_F32_BITS = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000,          # +-0, +-inf
             0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00400000,  # subnormals
             0x00800000, 0x80800000, 0x7F7FFFFF, 0xFF7FFFFF,          # min normal, max
             0x7F7F7FFF, 0x7F7F8000, 0x7F7F8001, 0xFF7F8000,          # bfloat16 overflow edge
             0x3F808000, 0x3F818000, 0x3F808001, 0x3F807FFF,          # bfloat16 ties
             0x00008000, 0x00018000, 0x00017FFF, 0x80018000]          # bfloat16 subnormal ties
_F64_BITS = [0x0000000000000000, 0x8000000000000000, 0x7FF0000000000000, 0xFFF0000000000000,
             0x0000000000000001, 0x8000000000000001, 0x000FFFFFFFFFFFFF, 0x0010000000000000,
             0x7FEFFFFFFFFFFFFF, 0xFFEFFFFFFFFFFFFF]
_F64_ONLY = [2.0 ** -149, 2.0 ** -150, 2.0 ** -150 + 2.0 ** -200, 3 * 2.0 ** -150, -(2.0 ** -150),
             2.0 ** -140, 2.0 ** -127 * 1.5,                           # float32 subnormals
             3.4028234663852886e38, 3.4028235677973366e38, 3.4028235e38, 1e39, -1e39, 1e300, -1e300,
             1 + 2.0 ** -11 + 2.0 ** -40,      # float16: up when rounded once, down through float32
             2.0 ** -25 + 2.0 ** -50,           # float16 subnormal, likewise
             65519.99999999,                    # float16: 65504 at once, inf through float32
             1 + 2.0 ** -24, 1 + 2.0 ** -24 + 2.0 ** -60,              # float32 ties
             254.50000000001, 2.5000000001, -0.50000000001, 127.50000000001]  # rint after float32
_F16_BITS = [0x0000, 0x8000, 0x7C00, 0xFC00, 0x0001, 0x8001, 0x03FF, 0x83FF, 0x0200, 0x0400,
             0x7BFF, 0xFBFF, 0x3C00, 0x3C01, 0x5BF8]
_BF16_BITS = [0x0000, 0x8000, 0x7F80, 0xFF80, 0x0001, 0x8001, 0x007F, 0x0080, 0x7F7F, 0xFF7F,
              0x3F80, 0x3F81, 0x477F, 0x4780, 0xC780, 0x0040]

_NANS = {
    "float32": [0x7FC00000, 0xFFC00000, 0x7FC12345, 0xFFD00001, 0x7FFFFFFF, 0xFFFFFFFF,
                0x7F800001, 0xFF800001, 0x7F812345, 0xFFA00000, 0x7FBFFFFF, 0x7F802000, 0x7F801FFF,
                0x7FA0A0A0, 0xFFBFE000],
    "float64": [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF8000012345678, 0x7FFFFFFFFFFFFFFF,
                0x7FF0000000000001, 0xFFF0000000000001, 0x7FF4000000000000, 0x7FF7FFFFFFFFFFFF,
                0xFFF0123456789ABC, 0x7FF0002000000000, 0x7FF0000020000000, 0xFFFC000000000001],
    "float16": [0x7E00, 0xFE00, 0x7E01, 0x7FFF, 0xFFFF, 0x7C01, 0xFC01, 0x7D23, 0xFDFF, 0x7C40],
    "bfloat16": [0x7FC0, 0xFFC0, 0x7FC1, 0x7FFF, 0xFFFF, 0x7F81, 0xFF81, 0x7FA3, 0xFFBF, 0x7F90],
}


def special_values(source: str) -> np.ndarray:
    """The finite and infinite edge values of a float source, as an array
    of that dtype built from bit patterns."""
    sdt = dt(source)
    decimals = _F16_LIMITS + _BF16_TIES + _INT_EDGES
    if source == "float32":
        bits = _F32_BITS + _bits_of(decimals, np.float32)
    elif source == "float64":
        bits = _F64_BITS + _bits_of(decimals + _F64_ONLY, np.float64)
    elif source == "float16":
        bits = _F16_BITS + _bits_of(decimals, np.float16)
    else:
        bits = _BF16_BITS + _bits_of(decimals, sdt)
    values = _from_bits(bits, sdt)
    assert not np.isnan(values.astype(np.float64)).any()
    return values


def _three_channels(values: np.ndarray) -> np.ndarray:
    """x of shape (1, n, 3): every value in every channel (rolled)."""
    return np.stack([np.roll(values, 5 * c) for c in range(3)], axis=-1)[None]


SPECIAL_AFFINES = {
    "plain": (None, None),
    "scale_c": ([1.0, -2.0, 0.5], None),
    "offset_c": (None, [0.0, -0.0, -0.5]),
    "both_c": ([1.0, -1.0, 3.0], [-0.0, 0.0, 0.25]),
}


def _check_special(x, result, affine):
    scale, offset = SPECIAL_AFFINES[affine]
    scale = None if scale is None else np.array(scale).reshape(3, 1, 1)
    offset = None if offset is None else np.array(offset).reshape(3, 1, 1)
    r = x.transpose(2, 0, 1)
    got = fb.transpose(x, (2, 0, 1), **_kwargs(dt(result), scale, offset))
    assert_same_bytes(got, convert(r, dt(result), scale, offset), r)


@pytest.mark.parametrize("affine", list(SPECIAL_AFFINES))
@pytest.mark.parametrize("result", RESULTS)
@pytest.mark.parametrize("source", FLOAT_SOURCES)
def test_special_values(source, result, affine):
    """+-0, +-inf, subnormals, the float16 overflow threshold, float16 and
    bfloat16 rounding ties, float32/float64 double-rounding traps and the
    saturation edges of the integer results."""
    _check_special(_three_channels(special_values(source)), result, affine)


@pytest.mark.parametrize("affine", list(SPECIAL_AFFINES))
@pytest.mark.parametrize("result", RESULTS)
@pytest.mark.parametrize("source", FLOAT_SOURCES)
def test_nans(source, result, affine):
    """Quiet and signalling NaNs with payloads, both signs: the bits are
    what the NumPy expression gives (the NaN rule's casts, IEEE multiply
    and add; 0 for integer results)."""
    _check_special(_three_channels(_from_bits(_NANS[source], dt(source))), result, affine)


@pytest.mark.parametrize("scale,offset", [(None, None), (1.0, None), (None, 0.0), (1.0, 0.0), (1, 0)],
                         ids=["none", "scale_1", "offset_0", "both", "python_ints"])
@pytest.mark.parametrize("source", ["float32", "float16", "float64", "bfloat16"])
def test_scale_one_and_offset_zero_are_still_applied(source, scale, offset):
    """A scale of 1 is a multiply (it quiets a signalling NaN) and an offset
    of 0 is an add (-0.0 + 0.0 = +0.0); none given: neither happens (the
    same dtype without either: the items unchanged)."""
    sdt = dt(source)
    snan = {"float32": 0x7F812345, "float64": 0x7FF0000123456789, "float16": 0x7C23,
            "bfloat16": 0x7F83}[source]
    negzero = 1 << (8 * sdt.itemsize - 1)
    x = _from_bits([snan, negzero, snan | negzero, 0], sdt).reshape(2, 2, 1)
    r = x.transpose(2, 0, 1)
    got = fb.transpose(x, (2, 0, 1), **_kwargs(sdt, scale, offset))
    assert_same_bytes(got, convert(r, sdt, scale, offset), r)
    if offset is None:
        assert _uint(got)[0, 0, 1] == negzero  # no add: -0.0 stays
    else:
        assert _uint(got)[0, 0, 1] == 0        # -0.0 + 0.0 = +0.0
    if scale is None and offset is None:
        assert_same_bytes(got, np.ascontiguousarray(r))


@_drawn
@pytest.mark.parametrize("result", RESULTS)
@pytest.mark.parametrize("source", ["float32", "uint8", "float64"])
def test_nonfinite_scale_and_offset(source, result):
    """inf and NaN in scale and offset (never two NaN operands in one
    operation, whose payload would depend on the operands' order): inf*v,
    NaN*v, inf + -inf (the machine's default NaN), v + NaN."""
    rng = _rng(f"nonfinite {source} {result}")
    signs = rng.choice([-1, 1], (5, 7, 4)) if source != "uint8" else 1
    x = (rng.uniform(1, 2, (5, 7, 4)) * signs * 50).astype(source)
    assert (x != 0).all()
    scale = np.array([np.inf, np.nan, -np.inf, 1.0]).reshape(4, 1, 1)
    offset = np.array([-np.inf, 0.0, np.nan, -np.inf]).reshape(4, 1, 1)
    r = x.transpose(2, 0, 1)
    got = fb.transpose(x, (2, 0, 1), dtype=dt(result), scale=scale, offset=offset)
    assert_same_bytes(got, convert(r, dt(result), scale, offset), r)


_INT_SPECIALS = {
    "int64": [2 ** 60 + 2 ** 36 + 1, -(2 ** 60 + 2 ** 36 + 1), 2 ** 63 - 1, -2 ** 63, 2 ** 53 + 1,
              2 ** 24 + 1, 2 ** 24 + 3, -(2 ** 24 + 1), 2 ** 31 + 2 ** 7 + 1, 2 ** 40 + 2 ** 16 + 1],
    "uint64": [2 ** 64 - 1, 2 ** 63 + 2 ** 39 + 1, 2 ** 60 + 2 ** 36 + 1, 2 ** 63, 2 ** 53 + 1,
               2 ** 24 + 1, 2 ** 24 + 3, 2 ** 32 + 2 ** 8 + 1],
    "int32": [2 ** 31 - 1, -2 ** 31, -2 ** 31 + 1, 2 ** 24 + 1, 2 ** 24 + 3, -(2 ** 24 + 3),
              2 ** 30 + 2 ** 6 + 1, 2 ** 30 + 2 ** 6],
    "uint32": [2 ** 32 - 1, 2 ** 31 + 2 ** 7 + 1, 2 ** 31 + 2 ** 7, 2 ** 24 + 1, 2 ** 24 + 3],
}
_SMALL_INTS = [0, 1, -1, 127, 128, -128, -129, 255, 256, 32767, 32768, -32768, -32769, 65504, 65505,
               65519, 65520, 65535, 65536, 2047, 2049, 2051, 4097, 257, 259]


@pytest.mark.parametrize("affine", ["plain", "scale_c", "both_c"])
@pytest.mark.parametrize("result", RESULTS)
@pytest.mark.parametrize("source", list(_INT_SPECIALS))
def test_wide_integer_sources(source, result, affine):
    """Wide integers that round differently when converted twice (through
    float64, then float32), the ends of the ranges, and the float16 and
    integer-result edges."""
    sdt = np.dtype(source)
    info = np.iinfo(sdt)
    values = [v for v in _INT_SPECIALS[source] + _SMALL_INTS if info.min <= v <= info.max]
    x = _three_channels(np.array(values, dtype=sdt))
    _check_special(x, result, affine)


# The bfloat16 bits of values that round differently once and twice (by
# way of float32, as ml_dtypes did before 0.7 and torch's .to() does).
_BF16_ONCE = {
    "float64": [(254.50000000001, 0x437F), (1 + 2.0 ** -8 + 2.0 ** -30, 0x3F81),
                (1 + 2.0 ** -8 - 2.0 ** -30, 0x3F80), (-(1 + 3 * 2.0 ** -8 - 2.0 ** -40), 0xBF81),
                (2.0 ** -134 + 2.0 ** -170, 0x0001), (2.0 ** 128 - 2.0 ** 119 - 2.0 ** 90, 0x7F7F)],
    "int32": [(2 ** 24 + 2 ** 16 + 1, 0x4B81), (-(2 ** 24 + 2 ** 16 + 1), 0xCB81),
              (2 ** 30 + 2 ** 22 + 1, 0x4E81)],
    "int64": [(2 ** 24 + 2 ** 16 + 1, 0x4B81), (2 ** 60 + 2 ** 52 + 1, 0x5D81),
              (-(2 ** 40 + 2 ** 32 + 1), 0xD381), (-2 ** 63, 0xDF00), (2 ** 63 - 1, 0x5F00)],
    "uint32": [(2 ** 24 + 2 ** 16 + 1, 0x4B81), (2 ** 31 + 2 ** 23 + 1, 0x4F01)],
    "uint64": [(2 ** 63 + 2 ** 55 + 1, 0x5F01), (2 ** 24 + 2 ** 16 + 1, 0x4B81),
               (2 ** 64 - 1, 0x5F80)],
}


@pytest.mark.parametrize("source", list(_BF16_ONCE))
def test_bfloat16_results_round_once(source):
    """Without scale/offset a bfloat16 result is the source's exact value
    rounded once to nearest even: the bits written here, which a rounding
    through float32 first would miss (a tie there)."""
    values, bits = zip(*_BF16_ONCE[source])
    x = np.array(values, dtype=source).reshape(1, -1, 1)
    got = fb.transpose(x, (2, 0, 1), dtype=dt("bfloat16"))
    assert [hex(b) for b in _uint(got).ravel()] == [hex(b) for b in bits]
    assert [hex(b) for b in _uint(cast_float(x, BF16)).ravel()] == [hex(b) for b in bits]


# NaNs by the rule, as bits: (source dtype, source bits, result dtype, result bits).
_NAN_RULE = [
    ("bfloat16", 0x7FED, "float16", 0x7F68), ("bfloat16", 0x7F81, "float16", 0x7E08),
    ("bfloat16", 0xFF81, "float32", 0xFFC10000), ("float16", 0x7C01, "float32", 0x7FC02000),
    ("float16", 0xFD23, "float64", 0xFFFC8C0000000000), ("float16", 0x7C01, "bfloat16", 0x7FC0),
    ("float32", 0x7F812345, "float16", 0x7E09), ("float32", 0xFF800001, "bfloat16", 0xFFC0),
    ("float32", 0x7FA34567, "bfloat16", 0x7FE3), ("float64", 0x7FF0000000000001, "bfloat16", 0x7FC0),
    ("float64", 0xFFF4000000000000, "bfloat16", 0xFFE0), ("float64", 0x7FF0123456789ABC, "float16", 0x7E04),
    ("float64", 0x7FF0123456789ABC, "float32", 0x7FC091A2),
]


@pytest.mark.parametrize("case", _NAN_RULE, ids=lambda c: f"{c[0]}-{c[1]:#x}-{c[2]}")
def test_nan_rule_bits(case):
    """A NaN keeps its sign and the top of its payload, and is quieted: the
    bits written here, on every CPU, by fastblock and by the reference."""
    source, bits, result, want = case
    x = _from_bits([bits] * 3, dt(source)).reshape(1, 3, 1)
    got = fb.transpose(x, (2, 0, 1), dtype=dt(result))
    assert [hex(b) for b in _uint(got).ravel()] == [hex(want)] * 3
    assert hex(int(_uint(cast_float(x, dt(result))).ravel()[0])) == hex(want)


def _finite_values_of(source, rng, n=20000):
    """Random values of a source dtype over its whole range, and its edges."""
    sdt = dt(source)
    if sdt == np.bool_:
        return np.array([False, True])
    if sdt.kind in "iu":
        info = np.iinfo(sdt)
        wide = rng.integers(info.min, info.max, n, dtype=sdt, endpoint=True)
        shifts = rng.integers(0, 8 * sdt.itemsize - 1, n).astype(np.uint64)
        small = (rng.integers(0, 2 ** 20, n, dtype=np.uint64) << shifts).astype(sdt)
        return np.concatenate([wide, small, np.array([info.min, info.max, 0, 1], sdt)])
    if sdt.itemsize == 2:
        bits = np.arange(2 ** 16, dtype=np.uint16)
    else:
        bits = rng.integers(0, 2 ** (8 * sdt.itemsize), n, dtype=f"u{sdt.itemsize}")
    x = bits.view(sdt)
    with np.errstate(invalid="ignore"):
        return x[~np.isnan(x.astype(np.float64))]


@pytest.mark.parametrize("result", ["float16", "float32", "float64", "bfloat16"])
@pytest.mark.parametrize("source", SOURCES)
def test_cast_float_rounds_as_numpy_and_ml_dtypes(source, result):
    """The reference's rounding (no NaNs) equals NumPy's astype, which
    rounds once from the exact value into float16, float32 and float64, and
    ml_dtypes' into bfloat16: every version from sources that float32 holds
    exactly, 0.7 and later also from float64 and 32- and 64-bit integers
    (0.6 and earlier rounded those by way of float32)."""
    rdt = dt(result)
    if rdt == BF16 and source in ("float64", "int32", "int64", "uint32", "uint64"):
        version = tuple(int(p) for p in ml_dtypes.__version__.split(".")[:2])
        if version < (0, 7):
            pytest.skip(f"ml_dtypes {ml_dtypes.__version__} rounds {source} twice")
    x = _finite_values_of(source, _rng(f"cast {source} {result}"))
    with np.errstate(all="ignore"):
        want = x.astype(rdt)
    assert_same_bytes(cast_float(x, rdt), want, x)


def test_cast_float_nans_as_the_cpu_converts():
    """The reference's NaN rule is what the CPU's own float32 <-> float64
    conversions do (x86-64 and aarch64: NumPy's astype runs them)."""
    rng = _rng("nan cpu")
    f32 = (rng.integers(0, 2 ** 23, 2000, dtype=np.uint32) | np.uint32(0x7F800001)
           | (rng.integers(0, 2, 2000).astype(np.uint32) << np.uint32(31))).view(np.float32)
    f64 = (rng.integers(0, 2 ** 52, 2000, dtype=np.uint64) | np.uint64(0x7FF0000000000001)
           | (rng.integers(0, 2, 2000).astype(np.uint64) << np.uint64(63))).view(np.float64)
    with np.errstate(invalid="ignore"):
        assert_same_bytes(cast_float(f32, np.float64), f32.astype(np.float64), f32)
        assert_same_bytes(cast_float(f64, np.float32), f64.astype(np.float32), f64)


@pytest.mark.parametrize("affine", ["plain", "both_c"])
@pytest.mark.parametrize("result", RESULTS)
@pytest.mark.parametrize("source", ["int8", "uint8", "int16", "uint16", "float16", "bfloat16"])
def test_every_value_of_16_bit_sources(source, result, affine):
    """Every value of the 8- and 16-bit sources (the floats' NaNs set to
    zero here: test_nans has them) to every result."""
    sdt = dt(source)
    bits = np.arange(2 ** (8 * sdt.itemsize), dtype=f"u{sdt.itemsize}")
    if sdt.kind not in "iu":
        bits[np.isnan(bits.view(sdt).astype(np.float32))] = 0
    x = bits.view(sdt)
    scale, offset = {"plain": (None, None),
                     "both_c": (np.array([1.0, -0.5, 1 / 255, 300.0]).reshape(4, 1, 1),
                                np.array([0.0, 0.5, -0.5, 1e4]).reshape(4, 1, 1))}[affine]
    x = x.reshape(-1, 16, 4)
    r = x.transpose(2, 0, 1)
    got = fb.transpose(x, (2, 0, 1), **_kwargs(dt(result), scale, offset))
    assert_same_bytes(got, convert(r, dt(result), scale, offset), r)


@_drawn
@pytest.mark.parametrize("affine", ["plain", "both_c"])
@pytest.mark.parametrize("result", RESULTS)
@pytest.mark.parametrize("source", ["float32", "float64"])
def test_random_bit_patterns(source, result, affine):
    """Random finite float32 bits (every exponent) and float64 values
    around the ranges of the results."""
    rng = _rng(f"bits {source} {result} {affine}")
    n = 4096
    if source == "float32":
        x = rng.integers(0, 2 ** 32, n, dtype=np.uint32).view(np.float32)
        x = np.where(np.isfinite(x), x, np.float32(1.0))
    else:
        x = (rng.standard_normal(n) * 2.0 ** rng.integers(-160, 140, n)).astype(np.float64)
    scale, offset = {"plain": (None, None),
                     "both_c": (np.array([1.0, -3.0, 2.0 ** -20, 2.0 ** 20]).reshape(4, 1, 1),
                                np.array([0.0, -0.5, 2.0 ** -130, 1.0]).reshape(4, 1, 1))}[affine]
    x = x.reshape(-1, 16, 4)
    r = x.transpose(2, 0, 1)
    got = fb.transpose(x, (2, 0, 1), **_kwargs(dt(result), scale, offset))
    assert_same_bytes(got, convert(r, dt(result), scale, offset), r)


# ---------------------------------------------------------------------------
# 4. strided, reversed, unaligned inputs; out= slices and strided outs

# name -> (source, result, scale, offset); "C": per channel of a CHW result
PAIRS = {
    "u8_f32_both_c": ("uint8", "float32", "C", "C"),
    "f32_f16_scale": ("float32", "float16", 0.37, None),
    "f64_bf16_offset_c": ("float64", "bfloat16", None, "C"),
    "f32_u8_both_c": ("float32", "uint8", "C", "C"),
    "i16_i8_scale": ("int16", "int8", 0.3, None),
    "f16_f32_plain": ("float16", "float32", None, None),
    "bf16_f32_plain": ("bfloat16", "float32", None, None),
    "f32_f32_both_c": ("float32", "float32", "C", "C"),
    "u16_none_both": ("uint16", None, 0.75, 1.5),
}


def _pair(name, channels=3, axis=0, ndim=3):
    source, result, scale, offset = PAIRS[name]
    return (dt(source), dt(result), _affine_arg(scale, channels, axis, ndim, SCALES),
            _affine_arg(offset, channels, axis, ndim, OFFSETS))


def _input_view(kind, sdt, rng):
    """An x of shape (5, 7, 3) laid out as ``kind`` says."""
    shape = (5, 7, 3)
    if kind == "strided":
        return random_values(sdt, (10, 14, 6), rng)[::2, ::2, 1::2]
    if kind == "reversed_last":
        return random_values(sdt, shape, rng)[..., ::-1]
    if kind == "reversed_all":
        return random_values(sdt, (10, 7, 6), rng)[::-2, ::-1, ::-2]
    if kind in ("unaligned", "unaligned_reversed"):
        raw = np.zeros(105 * sdt.itemsize + 1, np.uint8)
        x = raw[1:].view(sdt).reshape(shape)
        x[...] = random_values(sdt, shape, rng)
        if sdt.itemsize > 1:
            assert not x.flags.aligned
        return x if kind == "unaligned" else x[::-1, :, ::-1]
    if kind == "fortran":
        return np.asfortranarray(random_values(sdt, shape, rng))
    if kind == "transposed":
        return random_values(sdt, (7, 5, 3), rng).transpose(1, 0, 2)
    if kind == "broadcast":
        return np.broadcast_to(random_values(sdt, (1, 7, 3), rng), shape)
    raise AssertionError(kind)


INPUT_VIEWS = ["strided", "reversed_last", "reversed_all", "unaligned", "unaligned_reversed",
               "fortran", "transposed", "broadcast"]


@_drawn
@pytest.mark.parametrize("pair", list(PAIRS))
@pytest.mark.parametrize("view", INPUT_VIEWS)
def test_input_layouts(view, pair):
    sdt, rdt, scale, offset = _pair(pair)
    x = _input_view(view, sdt, _rng(f"view {view} {pair}"))
    assert x.shape == (5, 7, 3)
    keep = x.copy()
    r = np.transpose(keep, (2, 0, 1))
    got = fb.transpose(x, (2, 0, 1), **_kwargs(rdt, scale, offset))
    assert got.flags.c_contiguous
    assert_same_bytes(got, convert(r, rdt if rdt is not None else sdt, scale, offset), r)
    assert_same_bytes(x, keep)


def _out_view(kind, raw, rdt):
    """An out of shape (3, 5, 7) and dtype ``rdt`` in the bytes ``raw``."""
    item = rdt.itemsize
    if kind == "batch_slot":
        return raw[:4 * 105 * item].view(rdt).reshape(4, 3, 5, 7)[2]
    if kind == "strided":
        return raw[:3 * 10 * 15 * item].view(rdt).reshape(3, 10, 15)[:, ::2, 1::2]
    if kind == "reversed":
        return raw[:3 * 5 * 14 * item].view(rdt).reshape(3, 5, 14)[::-1, :, ::-2]
    if kind == "fortran":
        return raw[:105 * item].view(rdt).reshape(7, 5, 3).T
    if kind == "unaligned":
        return raw[1:1 + 105 * item].view(rdt).reshape(3, 5, 7)
    raise AssertionError(kind)


@_drawn
@pytest.mark.parametrize("pair", list(PAIRS))
@pytest.mark.parametrize("kind", ["batch_slot", "strided", "reversed", "fortran", "unaligned"])
def test_out_layouts(kind, pair):
    """out= a slot of a preallocated batch, strided, reversed, Fortran-ordered
    or unaligned: its items hold the result, every other byte is untouched."""
    sdt, rdt, scale, offset = _pair(pair)
    res = rdt if rdt is not None else sdt
    x = random_values(sdt, (5, 7, 3), _rng(f"out {kind} {pair}"))
    r = x.transpose(2, 0, 1)
    expected = convert(r, res, scale, offset)
    size = 4 * 3 * 10 * 15 * 8 + 16
    raw = np.full(size, 0xA5, np.uint8)
    out = _out_view(kind, raw, res)
    assert out.shape == (3, 5, 7)
    got = fb.transpose(x, (2, 0, 1), out=out, **_kwargs(rdt, scale, offset))
    assert got is out
    want = np.full(size, 0xA5, np.uint8)
    _out_view(kind, want, res)[...] = expected
    if not np.array_equal(raw, want):
        assert_same_bytes(out, expected, r)
        pytest.fail("bytes outside out= were written")


def test_out_batch_slots_filled_one_by_one():
    """The usual loop: out=batch[i] for each sample; each slot is its sample's."""
    rng = _rng("batch loop")
    images = [random_values(np.uint8, (6, 9, 3), rng) for _ in range(4)]
    scale = per_channel([1 / 58.395, 1 / 57.12, 1 / 57.375], 3, 0, 3)
    offset = per_channel([-123.675 / 58.395, -116.28 / 57.12, -103.53 / 57.375], 3, 0, 3)
    batch = np.full((4, 3, 6, 9), np.nan, np.float32)
    for i, img in enumerate(images):
        assert fb.transpose(img, (2, 0, 1), dtype=np.float32, scale=scale, offset=offset,
                            out=batch[i]) is not None
        for j in range(i + 1, 4):
            assert np.isnan(batch[j]).all()
    for i, img in enumerate(images):
        assert_same_bytes(batch[i], convert(img.transpose(2, 0, 1), np.float32, scale, offset))


# ---------------------------------------------------------------------------
# 5. sizes across tile boundaries

SIZES = [(1, 1, 1), (1, 1, 3), (7, 13, 3), (224, 224, 3), (1, 1000, 3), (1, 1009, 3), (1009, 7, 3),
         (17, 1009, 1), (0, 5, 3)]


@_drawn
@pytest.mark.parametrize("pair", ["u8_f32_both_c", "f32_f16_scale", "f64_bf16_offset_c", "f32_u8_both_c",
                                  "bf16_f32_plain"])
@pytest.mark.parametrize("shape", SIZES, ids=lambda s: "x".join(map(str, s)))
def test_sizes(shape, pair):
    sdt, rdt, scale, offset = _pair(pair, channels=shape[2])
    x = random_values(sdt, shape, _rng(f"size {shape} {pair}"))
    r = x.transpose(2, 0, 1)
    got = fb.transpose(x, (2, 0, 1), **_kwargs(rdt, scale, offset))
    assert_same_bytes(got, convert(r, rdt, scale, offset), r)


@_drawn
@pytest.mark.parametrize("affine", ["plain", "scale_rows", "offset_columns", "both"])
def test_large_2d_transpose_float32_to_float16(affine):
    rng = _rng(f"300x700 {affine}")
    x = (rng.standard_normal((300, 700)) * 10.0 ** rng.uniform(-6, 5, (300, 700))).astype(np.float32)
    scale = {"scale_rows": rng.uniform(-2, 2, (700, 1)), "both": 1 / 3}.get(affine)
    offset = {"offset_columns": rng.uniform(-100, 100, 300), "both": -2.5}.get(affine)
    got = fb.transpose(x, **_kwargs(np.float16, scale, offset))
    assert_same_bytes(got, convert(x.T, np.float16, scale, offset), x.T)


@pytest.mark.parametrize("at_end", [True, False], ids=["at_end", "at_start"])
@pytest.mark.parametrize("pair", ["u8_f32_both_c", "f32_f16_scale", "f64_bf16_offset_c", "f32_u8_both_c",
                                  "i16_i8_scale", "f16_f32_plain"])
@pytest.mark.parametrize("width", [1, 5, 8, 9, 16, 17, 31, 33, 65])
def test_guard_pages(width, pair, at_end):
    """Neither x nor out= is read or written past its ends."""
    shape = (2, width, 3)
    sdt, rdt, scale, offset = _pair(pair)
    values = random_values(sdt, shape, _rng(f"guard {width} {pair}"))
    x = Guarded(values.nbytes, at_end).array(shape, sdt)
    x[...] = values
    r = values.transpose(2, 0, 1)
    expected = convert(r, rdt, scale, offset)
    got = fb.transpose(x, (2, 0, 1), **_kwargs(rdt, scale, offset))
    assert_same_bytes(got, expected, r)
    out = Guarded(expected.nbytes, at_end).array(expected.shape, rdt)
    assert fb.transpose(x, (2, 0, 1), out=out, **_kwargs(rdt, scale, offset)) is out
    assert_same_bytes(out, expected, r)


# ---------------------------------------------------------------------------
# 6. errors: nothing written

SENTINEL = 0x5A


def _sentinel_out(shape, dtype):
    out = np.empty(shape, dtype)
    out.view(np.uint8)[...] = SENTINEL
    return out


def _names(dtype):
    """The ways a message may name ``dtype``."""
    dtype = np.dtype(dtype)
    names = {dtype.name, str(dtype)}
    if dtype.kind in "SUV":
        names.add(dtype.str[1:])
    if dtype == np.longdouble:
        names.add("longdouble")
    return names


# name -> (x dtype, keywords, the result dtype out= gets, error, words one of
# each set must be in the message)
ERRORS = {
    "complex64_source": ("complex64", dict(dtype=np.float32), "float32", TypeError,
                         [_names("complex64"), _names("float32")]),
    "longdouble_source": ("longdouble", dict(dtype=np.float32), "float32", TypeError,
                          [_names("longdouble"), _names("float32")]),
    "bytes_source": ("S3", dict(dtype=np.float32), "float32", TypeError, [_names("S3"), _names("float32")]),
    "int32_result": ("uint8", dict(dtype=np.int32), "int32", TypeError, [_names("uint8"), _names("int32")]),
    "int64_result": ("float32", dict(dtype=np.int64), "int64", TypeError,
                     [_names("float32"), _names("int64")]),
    "uint32_result": ("float32", dict(dtype=np.uint32), "uint32", TypeError,
                      [_names("float32"), _names("uint32")]),
    "complex_result": ("float32", dict(dtype=np.complex64), "complex64", TypeError,
                       [_names("float32"), _names("complex64")]),
    "bool_result": ("float32", dict(dtype=bool), "bool", TypeError, [_names("float32"), _names("bool")]),
    "int32_source_scale_no_dtype": ("int32", dict(scale=2.0), "int32", TypeError, [_names("int32")]),
    "bool_source_offset_no_dtype": ("bool", dict(offset=1.0), "bool", TypeError, [_names("bool")]),
    "scale_4_on_chw": ("uint8", dict(dtype=np.float32, scale=np.ones(4)), "float32", ValueError, [{"scale"}]),
    "scale_2_channels": ("uint8", dict(dtype=np.float32, scale=np.ones((2, 1, 1))), "float32", ValueError,
                         [{"scale"}]),
    "scale_extra_leading_one": ("uint8", dict(dtype=np.float32, scale=np.ones((1, 3, 1, 1))), "float32",
                                ValueError, [{"scale"}]),
    "scale_broadcasts_larger": ("uint8", dict(dtype=np.float32, scale=np.ones((2, 3, 1, 1))), "float32",
                                ValueError, [{"scale"}]),
    "offset_hwc_shape_on_chw": ("uint8", dict(dtype=np.float32, offset=np.zeros(3)), "float32", ValueError,
                                [{"offset"}]),
    "offset_5": ("float32", dict(offset=np.zeros((5,))), "float32", ValueError, [{"offset"}]),
    "scale_complex": ("uint8", dict(dtype=np.float32, scale=1j), "float32", TypeError, [{"scale"}]),
    "scale_complex_array": ("uint8", dict(dtype=np.float32, scale=np.ones((3, 1, 1), np.complex64)),
                            "float32", TypeError, [{"scale"}]),
    "scale_str": ("uint8", dict(dtype=np.float32, scale="2"), "float32", TypeError, [{"scale"}]),
    "offset_str": ("uint8", dict(dtype=np.float32, offset="a"), "float32", TypeError, [{"offset"}]),
    "offset_object": ("uint8", dict(dtype=np.float32,
                                    offset=np.array([1.0, None, 2.0], object)[:, None, None]),
                      "float32", TypeError, [{"offset"}]),
    "scale_object_floats": ("uint8", dict(dtype=np.float32,
                                          scale=np.array([1.0, 2.0, 3.0], object)[:, None, None]),
                            "float32", TypeError, [{"scale"}]),
    "offset_complex": ("float32", dict(offset=np.complex128(1 + 2j)), "float32", TypeError, [{"offset"}]),
}


@pytest.mark.parametrize("with_out", [False, True], ids=["no_out", "out"])
@pytest.mark.parametrize("case", list(ERRORS))
def test_errors(case, with_out):
    source, kwargs, out_dtype, error, words = ERRORS[case]
    x = np.arange(105).reshape(5, 7, 3).astype(source)
    keep = x.copy()
    out = _sentinel_out((3, 5, 7), out_dtype) if with_out else None
    with pytest.raises(error) as caught:
        fb.transpose(x, (2, 0, 1), out=out, **kwargs)
    message = str(caught.value)
    for options in words:
        assert any(w in message for w in options), f"{sorted(options)} not in {message!r}"
    if with_out:
        assert (out.view(np.uint8) == SENTINEL).all(), "out= was written before the error"
    assert np.array_equal(x, keep)


@pytest.mark.parametrize("case", [
    ("uint8", dict(dtype=np.float32), "float64"),
    ("uint8", dict(dtype=np.float32), "float16"),
    ("float32", dict(dtype=BF16 if BF16 is not None else np.float32), "float16"),
    ("float32", dict(dtype=np.float16), "uint16"),   # same item size
    ("uint8", dict(scale=2.0), "float32"),           # the result is uint8
    ("float32", dict(dtype=np.uint8, offset=1.0), "int8"),
    ("float64", dict(dtype=np.float32, scale=0.5), "float64"),  # x's dtype, not the result's
    ("uint8", dict(dtype=np.float32), ">f4"),        # float32 of the other byte order
    ("float32", dict(dtype=np.float32), "float64"),  # x's own dtype asked for: still checked
], ids=lambda c: f"{c[0]}-{'-'.join(f'{k}' for k in c[1])}-out_{c[2]}")
def test_out_of_another_dtype(case):
    source, kwargs, out_dtype = case
    x = np.arange(105).reshape(5, 7, 3).astype(source)
    out = _sentinel_out((3, 5, 7), out_dtype)
    with pytest.raises(TypeError):
        fb.transpose(x, (2, 0, 1), out=out, **kwargs)
    assert (out.view(np.uint8) == SENTINEL).all(), "out= was written before the error"


@pytest.mark.parametrize("door", list(DOORS))
def test_errors_every_front_door(door):
    """Each front door checks the new arguments before it writes out=."""
    call, shape, axis, _ = DOORS[door]
    x = np.arange(int(np.prod(shape))).reshape(shape).astype(np.uint8)
    r = call(x)
    bad_channels = r.shape[axis] + 1
    cases = [
        (dict(dtype=np.int32), "int32", TypeError, ["uint8", "int32"]),
        (dict(dtype=np.float32, scale=np.ones((bad_channels,) + (1,) * (r.ndim - 1 - axis))),
         "float32", ValueError, ["scale"]),
        (dict(dtype=np.float32, offset=np.ones((bad_channels,) + (1,) * (r.ndim - 1 - axis))),
         "float32", ValueError, ["offset"]),
        (dict(dtype=np.float32, scale=1j), "float32", TypeError, ["scale"]),
        (dict(dtype=np.float32), "float64", TypeError, []),
    ]
    for kwargs, out_dtype, error, words in cases:
        out = _sentinel_out(r.shape, out_dtype)
        with pytest.raises(error) as caught:
            call(x, out=out, **kwargs)
        for w in words:
            assert w in str(caught.value), (kwargs, str(caught.value))
        assert (out.view(np.uint8) == SENTINEL).all(), f"out= written before the error: {kwargs}"


def test_out_overlapping_x_is_refused_as_without_conversion():
    raw = np.zeros(64 * 4, np.uint8)
    x = raw[:48].reshape(4, 4, 3)
    x[...] = np.arange(48).reshape(4, 4, 3)
    keep = raw.copy()
    out = raw.view(np.float32)[:48].reshape(3, 4, 4)
    with pytest.raises(ValueError):
        fb.transpose(x, (2, 0, 1), out=out, dtype=np.float32, scale=2.0)
    assert np.array_equal(raw, keep)


@pytest.mark.parametrize("result", ["float16", "uint8", "float32"])
def test_array_likes(result):
    """x as nested lists (int64) and as a NumPy scalar-free tuple."""
    x = [[[1, -2, 3], [250, 256, -129]], [[65504, 65520, 7], [0, 1, 2]]]
    r = np.transpose(np.asarray(x), (2, 0, 1))
    got = fb.transpose(x, (2, 0, 1), dtype=dt(result), scale=per_channel(SCALES, 3, 0, 3), offset=0.5)
    assert_same_bytes(got, convert(r, dt(result), per_channel(SCALES, 3, 0, 3), 0.5), r)


# ---------------------------------------------------------------------------
# 7. fastblock.collate

def _samples(n, shape, dtype, rng):
    return [random_values(dtype, shape, rng) for _ in range(n)]


NORMALIZE = (per_channel([1 / (255 * 0.229), 1 / (255 * 0.224), 1 / (255 * 0.225)], 3, 0, 3),
             per_channel([-0.485 / 0.229, -0.456 / 0.224, -0.406 / 0.225], 3, 0, 3))


@_drawn
@pytest.mark.parametrize("num_threads", [None, 1, 2])
def test_collate_hwc_uint8_to_chw_float32(num_threads):
    samples = _samples(5, (6, 9, 3), np.uint8, _rng("collate"))
    scale, offset = NORMALIZE
    out = _sentinel_out((5, 3, 6, 9), np.float32)
    got = fb.collate(samples, fb.transpose, (2, 0, 1), out=out, num_threads=num_threads,
                     dtype=np.float32, scale=scale, offset=offset)
    assert got is out
    for i, img in enumerate(samples):
        one = fb.transpose(img, (2, 0, 1), dtype=np.float32, scale=scale, offset=offset)
        assert_same_bytes(out[i], one)
        assert_same_bytes(out[i], convert(img.transpose(2, 0, 1), np.float32, scale, offset))
    new = fb.collate(samples, fb.transpose, (2, 0, 1), num_threads=num_threads,
                     dtype=np.float32, scale=scale, offset=offset)
    assert new.shape == (5, 3, 6, 9) and new.dtype == np.float32
    assert_same_bytes(new, out)


@_drawn
def test_collate_other_ops_and_views():
    rng = _rng("collate ops")
    # depth_to_space to float16; the samples strided and reversed views; a tuple
    base = _samples(3, (2, 16, 7, 10), np.float32, rng)
    samples = tuple(b[:, :, ::-1, ::2] for b in base)
    got = fb.collate(samples, fb.depth_to_space, 2, "CRD", dtype=np.float16, scale=0.5)
    assert got.shape == (3, 2, 4, 14, 10)
    for i, s in enumerate(samples):
        assert_same_bytes(got[i], convert(fb.depth_to_space(s, 2, "CRD"), np.float16, 0.5))
    # space_to_batch (padding becomes offset) into out= a slice of a larger batch
    samples = _samples(4, (1, 4, 4, 3), np.uint8, rng)
    args = ([1, 2, 3, 1], [0, 1, 2, 0], [0, 1, 0, 0])
    r0 = fb.space_to_batch(samples[0], *args)
    big = _sentinel_out((6,) + r0.shape, np.float32)
    got = fb.collate(samples, fb.space_to_batch, *args, out=big[1:5], dtype=np.float32,
                     scale=per_channel(SCALES, 3, 3, 4), offset=2.0)
    assert np.shares_memory(got, big)
    for i, s in enumerate(samples):
        assert_same_bytes(big[1 + i], convert(fb.space_to_batch(s, *args), np.float32,
                                              per_channel(SCALES, 3, 3, 4), 2.0))
    assert (big[0].view(np.uint8) == SENTINEL).all() and (big[5].view(np.uint8) == SENTINEL).all()
    # rearrange, dtype None with an offset: uint8 saturates
    samples = _samples(3, (4, 6, 3), np.uint8, rng)
    got = fb.collate(samples, fb.rearrange, "h w c -> c h w", offset=100)
    assert got.dtype == np.uint8
    for i, s in enumerate(samples):
        assert_same_bytes(got[i], convert(s.transpose(2, 0, 1), np.uint8, None, 100))


def test_collate_mismatched_shapes():
    samples = [np.zeros((6, 9, 3), np.uint8)] * 4 + [np.zeros((6, 8, 3), np.uint8)]
    out = _sentinel_out((5, 3, 6, 9), np.float32)
    with pytest.raises(ValueError):
        fb.collate(samples, fb.transpose, (2, 0, 1), out=out, dtype=np.float32, scale=1 / 255)
    assert (out.view(np.uint8) == SENTINEL).all()
    with pytest.raises(ValueError):
        fb.collate(samples, fb.transpose, (2, 0, 1), dtype=np.float32)


def test_collate_errors_write_nothing():
    samples = [np.zeros((6, 9, 3), np.uint8) for _ in range(5)]
    for kwargs, error in [(dict(dtype=np.int32), TypeError),
                          (dict(dtype=np.float32, scale=np.ones(3)), ValueError),  # (3,) on CHW
                          (dict(dtype=np.float32, offset="x"), TypeError),
                          (dict(dtype=np.float16), TypeError)]:                   # out is float32
        out = _sentinel_out((5, 3, 6, 9), np.float32)
        with pytest.raises(error):
            fb.collate(samples, fb.transpose, (2, 0, 1), out=out, **kwargs)
        assert (out.view(np.uint8) == SENTINEL).all(), kwargs


# ---------------------------------------------------------------------------
# 8. threads

@_drawn
@pytest.mark.parametrize("case", [
    ("transpose_u8_f32_both_c", (224, 224, 3)),
    ("transpose_f32_bf16_plain", (224, 224, 3)),
    ("transpose_f32_u8_both", (224, 224, 3)),
    ("transpose_f64_f16_scale", (300, 200, 3)),
    ("transpose_u8_f32_both_c_big", (640, 600, 3)),
    ("depth_to_space_f32_f16_both_c", (2, 48, 40, 30)),
    ("space_to_batch_u8_f32_offset", (4, 60, 60, 3)),
], ids=lambda c: c[0])
def test_threads_give_the_same_bytes(case):
    name, shape = case
    rng = _rng(f"threads {name}")
    if name.startswith("transpose"):
        source, result = {"transpose_u8_f32_both_c": ("uint8", "float32"),
                          "transpose_u8_f32_both_c_big": ("uint8", "float32"),
                          "transpose_f32_bf16_plain": ("float32", "bfloat16"),
                          "transpose_f32_u8_both": ("float32", "uint8"),
                          "transpose_f64_f16_scale": ("float64", "float16")}[name]
        x = random_values(dt(source), shape, rng)
        scale, offset = {"transpose_u8_f32_both_c": NORMALIZE, "transpose_u8_f32_both_c_big": NORMALIZE,
                         "transpose_f32_bf16_plain": (None, None),
                         "transpose_f32_u8_both": (0.5, 128.0),
                         "transpose_f64_f16_scale": (1 / 3, None)}[name]

        def call(x, **kw):
            return fb.transpose(x, (2, 0, 1), **kw)
    elif name.startswith("depth_to_space"):
        result = "float16"
        x = random_values(np.float32, shape, rng)
        scale, offset = per_channel(SCALES, 12, 1, 4), per_channel(OFFSETS, 12, 1, 4)

        def call(x, **kw):
            return fb.depth_to_space(x, 2, **kw)
    else:
        result = "float32"
        x = random_values(np.uint8, shape, rng)
        scale, offset = None, -1.25

        def call(x, **kw):
            return fb.space_to_batch(x, [1, 2, 3, 1], [0, 1, 2, 0], [0, 1, 1, 0], **kw)
    r = call(x)
    expected = convert(r, dt(result), scale, offset)
    results = [call(x, num_threads=n, **_kwargs(dt(result), scale, offset)) for n in (1, 2, None)]
    for got in results:
        assert_same_bytes(got, expected, r)


# ---------------------------------------------------------------------------
# fastblock.dask's wrappers take the same keywords

@pytest.mark.parametrize("wrapper", ["space_to_depth", "depth_to_space", "tile", "rearrange", "repeat"])
def test_dask_wrappers(wrapper):
    da = pytest.importorskip("dask.array")
    fbd = pytest.importorskip("fastblock.dask")
    rng = _rng(f"dask {wrapper}")
    x = random_values(np.uint8, (2, 8, 6, 4), rng)
    dx = da.from_array(x, chunks=(1, 3, 6, 2))
    calls = {
        "space_to_depth": (lambda m, a, **kw: m.space_to_depth(a, 2, **kw), 1),
        "depth_to_space": (lambda m, a, **kw: m.depth_to_space(a, 2, **kw), 1),
        "tile": (lambda m, a, **kw: m.tile(a, (1, 2, 1, 1), **kw), 1),
        "rearrange": (lambda m, a, **kw: m.rearrange(a, "n c h w -> n h w c", **kw), 3),
        "repeat": (lambda m, a, **kw: m.repeat(a, "n c h w -> n (c k) h w", k=2, **kw), 1),
    }
    call, axis = calls[wrapper]
    r = call(fb, x)
    scale = per_channel(SCALES, r.shape[axis], axis, r.ndim)
    offset = per_channel(OFFSETS, r.shape[axis], axis, r.ndim)
    for result in (np.float32, np.float16, np.uint8):
        got = call(fbd, dx, dtype=result, scale=scale, offset=offset).compute(scheduler="synchronous")
        assert_same_bytes(np.asarray(got), convert(r, result, scale, offset), r)
