"""The common SpaceToDepth / DepthToSpace call, decided in C (``_fastpath``),
gives exactly what the general path gives; every other call is left to it.

A Python ``int`` block size takes the fast path where it can, a NumPy
integer never does: the same call with both compares the two paths."""
import numpy as np
import pytest

import fastblock as fb
from fastblock import _fastpath, _memory, _threads
from reference import depth_to_space_ref, space_to_depth_ref

# data_format spelling -> (the reference's name, rank or None)
FORMATS = {
    "channels_first": ("channels_first", None), "CHANNELS_LAST": ("channels_last", None),
    "channels_last": ("channels_last", None), "NCW": ("channels_first", 3),
    "nchw": ("channels_first", 4), "NCDHW": ("channels_first", 5), "NWC": ("channels_last", 3),
    "NHWC": ("channels_last", 4), "ndhwc": ("channels_last", 5),
}
# mode spelling -> the reference's name
MODES = {"blocks_first": "blocks_first", "depth_first": "depth_first", "DCR": "DCR",
         "CRD": "CRD", "crd": "depth_first", "BLOCKS_FIRST": "blocks_first"}


def _space(fmt, bs, rank=4, dtype=np.int32, channels=3):
    """A space-side array for ``fmt`` (logical [2, channels, 2*bs, 3*bs, ...]), distinct items."""
    ref_fmt, fixed_rank = FORMATS[fmt]
    rank = fixed_rank or rank
    spatial = [bs * (2 + k) for k in range(rank - 2)]
    shape = (2, channels, *spatial) if ref_fmt == "channels_first" else (2, *spatial, channels)
    raw = np.arange(int(np.prod(shape)) * np.dtype(dtype).itemsize, dtype=np.uint8)
    return (raw * 37 % 251).astype(np.uint8).view(dtype).reshape(shape)


def _case(to_depth, fmt, bs, mode, **kwargs):
    """(x, expected result) of one call; the depth side is made by the reference."""
    ref_fmt, ref_mode = FORMATS[fmt][0], MODES[mode]
    space = _space(fmt, bs, **kwargs)
    depth = space_to_depth_ref(space, bs, ref_mode, ref_fmt)
    return (space, depth) if to_depth else (depth, depth_to_space_ref(depth, bs, ref_mode, ref_fmt))


def _same(result, expected):
    assert result.dtype == expected.dtype and result.shape == expected.shape
    assert result.flags.c_contiguous
    assert result.tobytes() == np.ascontiguousarray(expected).tobytes()


OPS = {"s2d": (fb.space_to_depth, True), "d2s": (fb.depth_to_space, False)}


@pytest.mark.parametrize("bs", [1, 2, 3])
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("op_name", list(OPS))
def test_fast_path_matches_reference_and_general_path(op_name, fmt, mode, bs):
    op, to_depth = OPS[op_name]
    x, expected = _case(to_depth, fmt, bs, mode)
    fast = _fastpath.block_call(x, bs, mode, fmt, None, None, to_depth)
    assert fast is not None
    _same(fast, expected)
    _same(op(x, bs, mode, fmt), expected)
    _same(op(x, np.int64(bs), mode, fmt), expected)     # the general path


def _plain_dtypes():
    yield from (np.bool_, np.int8, np.uint16, np.float16, np.float32, ">i4", np.int64,
                np.complex128, np.longdouble, "S3", "U2", "M8[s]", "m8[ms]", "V3",
                [("a", "i1"), ("b", "<f8")])
    try:
        import ml_dtypes
    except ImportError:
        return
    yield ml_dtypes.bfloat16
    yield ml_dtypes.float8_e4m3fn


@pytest.mark.parametrize("dtype", list(_plain_dtypes()), ids=str)
@pytest.mark.parametrize("op_name", list(OPS))
def test_fast_path_every_plain_dtype(op_name, dtype):
    op, to_depth = OPS[op_name]
    for fmt, mode in (("channels_first", "blocks_first"), ("NHWC", "depth_first")):
        x, expected = _case(to_depth, fmt, 2, mode, dtype=dtype)
        fast = _fastpath.block_call(x, 2, mode, fmt, None, None, to_depth)
        assert fast is not None and fast.dtype == np.dtype(dtype)
        _same(fast, expected)
        _same(op(x, np.int64(2), mode, fmt), expected)


def _views(x):
    yield "fortran", np.asfortranarray(x)
    yield "reversed", np.ascontiguousarray(x[::-1, ::-1])[::-1, ::-1]
    big = np.zeros(tuple(2 * n + 1 for n in x.shape), x.dtype)
    view = big[tuple(slice(1, 1 + 2 * n, 2) for n in x.shape)]
    view[...] = x
    yield "stepped", view
    swapped = np.ascontiguousarray(np.swapaxes(x, 1, -1))
    yield "transposed", np.swapaxes(swapped, 1, -1)


@pytest.mark.parametrize("op_name", list(OPS))
def test_fast_path_reads_strided_inputs(op_name):
    op, to_depth = OPS[op_name]
    x, expected = _case(to_depth, "channels_first", 2, "DCR")
    for name, view in _views(x):
        assert np.array_equal(view, x), name
        fast = _fastpath.block_call(view, 2, "DCR", "channels_first", None, None, to_depth)
        assert fast is not None, name
        _same(fast, expected)
        _same(op(view, 2, "DCR"), expected)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("op_name", list(OPS))
def test_fast_path_writes_a_clear_out(op_name, order):
    op, to_depth = OPS[op_name]
    x, expected = _case(to_depth, "nchw", 2, "CRD")
    out = np.full(expected.shape, -1, x.dtype, order=order)
    assert _fastpath.block_call(x, 2, "CRD", "NCHW", out, None, to_depth) is out
    assert np.array_equal(out, expected)
    out[...] = -1
    assert op(x, 2, "CRD", "NCHW", out=out) is out
    assert np.array_equal(out, expected)


def _outs_left_to_the_general_path(x, expected):
    """(name, out, error the general path raises or None)"""
    big = np.full(tuple(2 * n for n in expected.shape), -1, x.dtype)
    yield "strided", big[tuple(slice(None, None, 2) for _ in expected.shape)], None
    twin = np.dtype([("a", "i2"), ("b", "i2")])      # equal to x's dtype, another object
    yield "equal dtype, other object", np.full(expected.shape, -1, x.dtype).view(twin), None
    yield "subclass", np.full(expected.shape, -1, x.dtype).view(type("Sub", (np.ndarray,), {})), None
    read_only = np.full(expected.shape, -1, x.dtype)
    read_only.flags.writeable = False
    yield "read-only", read_only, "writable"
    yield "x itself", x.reshape(expected.shape), "shares memory"
    yield "wrong shape", np.full(expected.shape[:-1] + (expected.shape[-1] + 1,), -1, x.dtype), "shape"
    yield "list", expected.tolist(), "out"


@pytest.mark.parametrize("op_name", list(OPS))
def test_other_outs_take_the_general_path(op_name):
    op, to_depth = OPS[op_name]
    x, expected = _case(to_depth, "channels_first", 2, "DCR",
                        dtype=np.dtype([("a", "i2"), ("b", "i2")]))
    for name, out, error in _outs_left_to_the_general_path(x, expected):
        assert _fastpath.block_call(x, 2, "DCR", "channels_first", out, None, to_depth) is None, name
        if error is None:
            assert op(x, 2, out=out) is out, name
            assert out.tobytes() == expected.tobytes(), name
        else:
            with pytest.raises((ValueError, TypeError), match=error):
                op(x, 2, out=out)


class _Sub(np.ndarray):
    pass


def _declined_calls(x):
    """(name, args of block_call) the fast path leaves to the general path."""
    default = (x, 2, "blocks_first", "channels_first", None, None)
    yield "list", (x.tolist(),) + default[1:]
    yield "subclass", (x.view(_Sub),) + default[1:]
    yield "object dtype", (x.astype(object),) + default[1:]
    yield "zero size", (x[:0],) + default[1:]
    yield "rank 2", (x[0, 0],) + default[1:]
    for bs in (np.int64(2), True, 0, -1, 2 ** 70, 2.0, "2"):
        yield f"block_size {bs!r}", (x, bs) + default[2:]
    for mode in ("Blocks_First", "nope", b"DCR", None):
        yield f"mode {mode!r}", (x, 2, mode) + default[3:]
    for fmt in ("NCHW_VECT_C", "Nchw", "NCW", "NCDHW", b"NCHW", None):
        yield f"data_format {fmt!r}", (x, 2, "DCR", fmt, None, None)
    for n in (0, -1, 2.0, np.int64(2), True):
        yield f"num_threads {n!r}", default[:5] + (n,)


@pytest.mark.parametrize("op_name", list(OPS))
def test_uncommon_calls_take_the_general_path(op_name):
    to_depth = OPS[op_name][1]
    x, _ = _case(to_depth, "channels_first", 2, "DCR")
    assert _fastpath.block_call(x, 2, "blocks_first", "channels_first", None, 2, to_depth) is not None
    for name, args in _declined_calls(x):
        assert _fastpath.block_call(*args, to_depth) is None, name


def test_block_sizes_that_do_not_divide_take_the_general_path():
    x = np.zeros((1, 8, 4, 6), np.float32)
    assert _fastpath.block_call(x, 3, "DCR", "NCHW", None, None, True) is None   # 4 % 3
    assert _fastpath.block_call(x, 2, "DCR", "NCHW", None, None, False) is not None
    assert _fastpath.block_call(x, 4, "DCR", "NCHW", None, None, False) is None  # 8 % 16
    assert _fastpath.block_call(x, 3, "DCR", "NCHW", None, None, False) is None  # 8 % 9
    with pytest.raises(ValueError, match="block_size"):
        fb.space_to_depth(x, 3)
    with pytest.raises(ValueError, match="block_size"):
        fb.depth_to_space(x, 4)


def test_default_threads_follow_set_num_threads():
    for n in (1, 2, 3):
        fb.set_num_threads(n)
        assert _threads._default_call_threads == _threads.resolve_num_threads(None)
        assert _threads.resolve_num_threads(None) == _threads.resolve_num_threads(n)


# ---------------------------------------------------------------------------
# memory facts behind the out= checks

def _buffer_views(rng, count):
    buf = np.zeros(64, np.int16)
    for _ in range(count):
        start = int(rng.integers(0, 64))
        length = int(rng.integers(0, 64 - start + 1))
        step = int(rng.choice([1, 2, 3, -1, -2]))
        flat = buf[start:start + length][::step]
        if flat.size % 2 == 0 and flat.size and rng.random() < 0.5:
            flat = flat.reshape(2, -1)[:, ::-1]
        yield flat
    yield buf[5:5]
    yield buf[7:8].reshape(())


def test_byte_ranges_meet_wherever_memory_is_shared(rng):
    views = list(_buffer_views(rng, 60))
    other = np.zeros(8, np.int16)
    for a in views:
        assert not _memory.byte_ranges_meet(a, other)
        for b in views:
            meet = _memory.byte_ranges_meet(a, b)
            assert meet == _memory.byte_ranges_meet(b, a)
            if np.shares_memory(a, b):
                assert meet
            if a.size == 0 or b.size == 0:
                assert not meet


def test_out_is_clear():
    x = np.zeros((4, 6), np.float32)
    assert _memory.out_is_clear(np.zeros((3, 8), np.float32), x)
    assert _memory.out_is_clear(np.zeros((3, 8), np.float32, order="F"), x)
    assert not _memory.out_is_clear(x, x)
    assert not _memory.out_is_clear(np.zeros((3, 16), np.float32)[:, ::2], x)
    read_only = np.zeros((3, 8), np.float32)
    read_only.flags.writeable = False
    assert not _memory.out_is_clear(read_only, x)
    assert not _memory.out_is_clear(np.broadcast_to(np.zeros(8, np.float32), (3, 8)), x)
