"""Every front door's repeated call, run from the fast path's cache
(``_fastpath``), gives exactly what the general path gives; every other
call is left to it.

A Python ``int`` block size takes the fast path where it can, a NumPy
integer never does: the same call with both compares the two paths.
tests/engine/test_fast_path_differential.py compares the paths on random
calls of every front door."""
import ml_dtypes
import numpy as np
import pytest

import fastblock as fb
from draws import drawn
from fastblock import _engine
from fastblock._call import fastpath as _fastpath, memory as _memory, threads as _threads
from fastblock._ops import batch, blocks, patterns, permute
from reference import depth_to_space_ref, space_to_depth_ref


def block_call(x, block_size, mode, data_format, out, num_threads, to_depth):
    """The fast path's answer to a space_to_depth (``to_depth``) or
    depth_to_space call: its result, or None (the general path's call)."""
    if to_depth:
        return _fastpath.call(blocks.SPACE_TO_DEPTH, (block_size, mode, data_format), x, out,
                              num_threads)
    return _fastpath.call(blocks.DEPTH_TO_SPACE, (block_size, mode, data_format), x, out,
                          num_threads)

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


@drawn(54, op_name=list(OPS), fmt=list(FORMATS), mode=list(MODES), bs=[1, 2, 3],
       cover=[("op_name", "fmt"), ("op_name", "mode"), ("fmt", "bs"), ("mode", "bs")])
def test_fast_path_matches_reference_and_general_path(op_name, fmt, mode, bs):
    """A seeded draw of the spellings (``draws.drawn``): every format and
    mode with each operator and every block size on every run, the rest
    sampled."""
    op, to_depth = OPS[op_name]
    x, expected = _case(to_depth, fmt, bs, mode)
    fast = block_call(x, bs, mode, fmt, None, None, to_depth)
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
        fast = block_call(x, 2, mode, fmt, None, None, to_depth)
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
        fast = block_call(view, 2, "DCR", "channels_first", None, None, to_depth)
        assert fast is not None, name
        _same(fast, expected)
        _same(op(view, 2, "DCR"), expected)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("op_name", list(OPS))
def test_fast_path_writes_a_clear_out(op_name, order):
    op, to_depth = OPS[op_name]
    x, expected = _case(to_depth, "nchw", 2, "CRD")
    out = np.full(expected.shape, -1, x.dtype, order=order)
    assert block_call(x, 2, "CRD", "NCHW", out, None, to_depth) is out
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
        assert block_call(x, 2, "DCR", "channels_first", out, None, to_depth) is None, name
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
    for mode in ("nope", b"DCR", None):
        yield f"mode {mode!r}", (x, 2, mode) + default[3:]
    for fmt in ("NCHW_VECT_C", "NCW", "NCDHW", b"NCHW", None):
        yield f"data_format {fmt!r}", (x, 2, "DCR", fmt, None, None)
    for n in (0, -1, 2.0, np.int64(2), True):
        yield f"num_threads {n!r}", default[:5] + (n,)


@pytest.mark.parametrize("op_name", list(OPS))
def test_uncommon_calls_take_the_general_path(op_name):
    to_depth = OPS[op_name][1]
    x, _ = _case(to_depth, "channels_first", 2, "DCR")
    assert block_call(x, 2, "blocks_first", "channels_first", None, 2, to_depth) is not None
    for name, args in _declined_calls(x):
        assert block_call(*args, to_depth) is None, name


def test_block_sizes_that_do_not_divide_take_the_general_path():
    x = np.zeros((1, 8, 4, 6), np.float32)
    assert block_call(x, 3, "DCR", "NCHW", None, None, True) is None   # 4 % 3
    assert block_call(x, 2, "DCR", "NCHW", None, None, False) is not None
    assert block_call(x, 4, "DCR", "NCHW", None, None, False) is None  # 8 % 16
    assert block_call(x, 3, "DCR", "NCHW", None, None, False) is None  # 8 % 9
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


# ---------------------------------------------------------------------------
# every front door: the cache

def _front_door_calls():
    """(name, call of x, x): one common call of each front door."""
    x4 = np.arange(2 * 8 * 4 * 6, dtype=np.float32).reshape(2, 8, 4, 6)
    x3 = np.arange(2 * 4 * 6, dtype=np.int16).reshape(2, 4, 6)
    yield "space_to_depth", lambda x, **kw: fb.space_to_depth(x, 2, **kw), x4
    yield "depth_to_space", lambda x, **kw: fb.depth_to_space(x, 2, "CRD", **kw), x4
    yield "transpose", lambda x, **kw: fb.transpose(x, (0, 2, 3, 1), **kw), x4
    yield "transpose default", lambda x, **kw: fb.transpose(x, **kw), x4
    yield "pixel_shuffle", lambda x, **kw: fb.pixel_shuffle(x, 2, **kw), x4
    yield "pixel_unshuffle", lambda x, **kw: fb.pixel_unshuffle(x, 2, "channels_last", **kw), x4
    yield "space_to_batch", lambda x, **kw: fb.space_to_batch(x, [1, 2, 3], [0, 1, 0],
                                                              [0, 1, 0], **kw), x3
    yield "batch_to_space", lambda x, **kw: fb.batch_to_space(x, (1, 2, 1), (0, 1, 0),
                                                              (0, 2, 0), **kw), x3
    yield "tile", lambda x, **kw: fb.tile(x, [2, 1, 3], **kw), x3
    yield "rearrange", lambda x, **kw: fb.rearrange(
        x, "b c (h h2) (w w2) -> b (h2 w2 c) h w", h2=2, w2=2, **kw), x4
    yield "repeat", lambda x, **kw: fb.repeat(x, "b h w -> b h w r", r=3, **kw), x3


FRONT_DOORS = list(_front_door_calls())


def _general(call, x, **kw):
    with _fastpath.enabled(False):
        return call(x, **kw)


def _hits():
    return _fastpath.stats()["hits"]


@pytest.mark.parametrize("name, call, x", FRONT_DOORS, ids=[c[0] for c in FRONT_DOORS])
def test_repeated_calls_run_from_the_cache(name, call, x):
    expected = _general(call, x)
    _same(call(x), expected)
    before = _hits()
    for _ in range(3):
        _same(call(x), expected)
    assert _hits() == before + 3
    out = np.full(expected.shape, 7, x.dtype)
    assert call(x, out=out, num_threads=2) is out
    assert call(x, out=out, num_threads=2) is out
    assert _hits() == before + 4
    assert np.array_equal(out, expected)


@pytest.mark.parametrize("name, call, x", FRONT_DOORS, ids=[c[0] for c in FRONT_DOORS])
def test_a_stored_call_serves_only_its_own_geometry(name, call, x):
    """Same shape, other strides, alignment or dtype: another key each,
    every result right."""
    _same(call(x), _general(call, x))
    raw = np.zeros(x.nbytes + 8, np.uint8)
    unaligned = raw[3:3 + x.nbytes].view(x.dtype).reshape(x.shape)
    unaligned[...] = x
    twin = np.dtype(x.dtype.str.replace("f", "i").replace("i2", "u2"))
    for variant in (np.asfortranarray(x), x[::-1], unaligned, x.view(twin),
                    np.ascontiguousarray(x[..., ::-1])[..., ::-1]):
        for _ in range(2):
            _same(call(variant), _general(call, variant))


def test_tuning_changes_retire_stored_plans():
    x = np.arange(4 * 8 * 8, dtype=np.uint8).reshape(1, 4, 8, 8)
    expected = _general(lambda v: fb.space_to_depth(v, 2, "CRD", "NHWC"), x)
    _same(fb.space_to_depth(x, 2, "CRD", "NHWC"), expected)
    for settings in ({"simd": False}, {"shuffle_min_bytes": 0}, {"stream_min_bytes": 0}, {}):
        with _engine.tune(**settings):
            for _ in range(2):
                _same(fb.space_to_depth(x, 2, "CRD", "NHWC"), expected)
    assert _engine.stored_plan_count() <= 64


def test_stored_plans_are_bounded_and_go_to_new_calls():
    limit = _engine.STORED_PLANS_LIMIT
    for n in range(1, 3 * limit):
        x = np.zeros((n, 3), np.uint8)
        assert np.array_equal(fb.transpose(x), x.T)
        assert 0 < _engine.stored_plan_count() <= limit
    # The latest calls hold stored plans: older entries made room.
    x = np.zeros((3 * limit, 3), np.uint8)
    fb.transpose(x)
    assert _engine.stored_plan_count() <= limit
    _fastpath.clear()
    assert _fastpath.stats()["entries"] == 0


def test_the_switch():
    x = np.zeros((2, 3), np.float32)
    assert _fastpath.enabled()
    with _fastpath.enabled(False):
        assert not _fastpath.enabled()
        before = _hits()
        fb.transpose(x)
        fb.transpose(x)
        assert _hits() == before
        assert _fastpath.call(permute.TRANSPOSE, (None,), x, None, None) is None
    assert _fastpath.enabled()


def _declined_front_door_calls():
    """(name, arguments of _fastpath.call) that the fast path leaves to
    the general path, each a call the general path also takes or refuses."""
    x = np.zeros((2, 4, 6), np.float32)
    t = permute.TRANSPOSE
    yield "numpy integer axes", (t, ((np.int64(0), 1, 2),), x, None, None)
    yield "bool axis", (t, ((True, 0, 2),), x, None, None)
    yield "float axis", (t, ((1.0, 0, 2),), x, None, None)
    yield "array axes", (t, (np.array([1, 0, 2]),), x, None, None)
    yield "nested list", (t, ([[1, 0, 2]],), x, None, None)
    yield "bad axes", (t, ((0, 0, 2),), x, None, None)
    if hasattr(np.dtypes, "StringDType"):
        yield "StringDType", (t, (None,),
                              np.zeros((2, 3), np.dtypes.StringDType()), None, None)
    yield "object", (t, (None,), np.zeros((2, 3), object), None, None)
    yield "empty", (t, (None,), np.zeros((2, 0)), None, None)
    yield "empty result", (blocks.TILE, ((0,),), x, None, None)
    yield "rank 33", (t, (None,), np.zeros((1,) * 33), None, None)
    yield "float length", (patterns.REPEAT, ("h w c -> h w c r", {"r": 2.0}), x, None, None)
    yield "bool length", (patterns.REPEAT, ("h w c -> h w c r", {"r": True}), x, None, None)
    yield "bad pattern", (patterns.REARRANGE, ("h w -> w h",), x, None, None)
    yield "float block", (batch.SPACE_TO_BATCH, ([1, 2.0, 1], (0, 0, 0), (0, 0, 0)), x, None,
                          None)


@pytest.mark.parametrize("name, arguments", list(_declined_front_door_calls()),
                         ids=[c[0] for c in _declined_front_door_calls()])
def test_declined_front_door_calls(name, arguments):
    assert _fastpath.call(*arguments) is None


def test_lists_and_tuples_share_a_key():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    expected = _general(lambda v: fb.tile(v, (1, 2, 1)), x)
    _same(fb.tile(x, (1, 2, 1)), expected)
    before = _hits()
    _same(fb.tile(x, [1, 2, 1]), expected)
    assert _hits() == before + 1


@pytest.mark.parametrize("call", [
    lambda x: fb.transpose(x, (1, 0, 2, 3)),            # a length-1 axis moved
    lambda x: fb.rearrange(x, "a b c d -> a b c d"),     # identity
    lambda x: fb.space_to_depth(x, 1),
    lambda x: fb.repeat(x, "a b c d -> a b c d"),
])
def test_an_unmoved_order_is_one_contiguous_copy(call):
    x = np.arange(64 * 256, dtype=np.float32).reshape(1, 64, 16, 16)
    result = call(x)
    assert np.array_equal(result.reshape(-1), x.reshape(-1))
    # The copy the engine plans: one axis contiguous on both sides.
    for args, prepare in ((((1, 0, 2, 3),), permute.prepare_transpose),
                          (("a b c d -> a b c d",), patterns.prepare_rearrange)):
        prepared = prepare(x, *args)
        plan, = prepared.copies(x, np.empty(prepared.result_shape, x.dtype))
        shape = _engine.describe(plan.extents, plan.src_strides, plan.dst_strides, 4)
        assert shape["kernel"] == "block" and shape["rows"] == 1, shape
        assert shape["row_items"] * shape["width"] * np.prod(shape["loop"]) == x.nbytes


def test_threads_share_the_cache_while_it_is_cleared():
    """Calls from several threads hit, miss and store while another thread
    empties the cache: every result stays right (an entry lives as long as
    a call runs it)."""
    import threading
    inputs = [np.arange(n * 24, dtype=np.float32).reshape(n, 4, 6) for n in (1, 2, 3, 40)]
    expected = [np.ascontiguousarray(x.transpose(2, 0, 1)) for x in inputs]
    failures = []
    stop = threading.Event()

    def worker(seed):
        rng = np.random.default_rng(seed)
        for _ in range(2000):
            i = int(rng.integers(len(inputs)))
            if not np.array_equal(fb.transpose(inputs[i], (2, 0, 1)), expected[i]):
                failures.append(i)

    def clearer():
        while not stop.is_set():
            _fastpath.clear()

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(3)]
    wiper = threading.Thread(target=clearer)
    wiper.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    wiper.join()
    assert not failures


# --------------------------------------------------------------------------
# Converting calls (dtype=, scale=, offset=): the same cache, keyed also by
# the result dtype and the scale's and offset's shapes
# --------------------------------------------------------------------------

CONVERSIONS = [
    {"dtype": np.float32},
    {"dtype": "float16", "scale": 0.5},
    {"dtype": np.dtype(np.float64), "scale": np.float64(3.0), "offset": -1},
    {"dtype": np.uint8, "scale": np.array([255.0], np.float32), "offset": np.float32(0.5)},
]


@pytest.mark.parametrize("name, call, x", FRONT_DOORS, ids=[c[0] for c in FRONT_DOORS])
@pytest.mark.parametrize("convert", CONVERSIONS, ids=lambda c: str(c["dtype"]))
def test_converting_calls_run_from_the_cache(name, call, x, convert):
    """Every front door's converting call: the second and later calls of a
    key are hits, into a new result and into ``out=``, each the general
    path's bytes."""
    expected = _general(call, x, **convert)
    _same(call(x, **convert), expected)
    before = _hits()
    for _ in range(2):
        _same(call(x, **convert), expected)
    assert _hits() == before + 2
    out = np.full(expected.shape, 7, expected.dtype)
    assert call(x, out=out, num_threads=2, **convert) is out
    assert call(x, out=out, num_threads=2, **convert) is out
    assert _hits() == before + 3
    assert out.tobytes() == expected.tobytes()


def test_converting_calls_key_by_result_and_values():
    """Same input, other result dtype, scale or offset shape, or values:
    another key (or the same one, reading the new values), every result
    the general path's."""
    x = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    call = lambda v, **kw: fb.transpose(v, (2, 0, 1), **kw)  # noqa: E731
    ways = [{"dtype": np.float32, "scale": 2.0}, {"dtype": np.float64, "scale": 2.0},
            {"dtype": np.float32, "scale": np.arange(4, dtype=np.float32).reshape(4, 1, 1)},
            {"dtype": np.float32, "scale": np.arange(3, dtype=np.float64).reshape(1, 1, 3)},
            {"dtype": np.float32, "scale": np.float32(-0.5)},
            {"dtype": np.float32, "offset": np.arange(2, dtype=np.int16).reshape(2, 1)},
            {"dtype": np.float32, "scale": 2.0, "offset": np.full((4, 1, 1), np.nan)},
            {"dtype": np.int16, "scale": 1e9}, {"dtype": np.float32}, {"scale": 0.25}]
    expected = [_general(call, x, **convert) for convert in ways]
    for convert, want in zip(ways, expected):
        _same(call(x, **convert), want)
        before = _hits()
        _same(call(x, **convert), want)
        assert _hits() == before + 1, convert
    for convert, want in zip(ways, expected):      # keys met again, in another order
        _same(call(x, **convert), want)


def test_converting_calls_key_by_compact_values():
    """A scale's or offset's key is its compact shape (axes of step 0 cut
    to one value, leading axes of one dropped): broadcast views run the
    compact form's stored program; a view that shares that key but does
    not broadcast to the result still raises, writing nothing to out=."""
    x = np.arange(2 * 5 * 4 * 3, dtype=np.uint8).reshape(2, 5, 4, 3)
    call = lambda v, **kw: fb.transpose(v, (0, 3, 1, 2), dtype=np.float32, **kw)  # noqa: E731
    scale = np.array([0.5, 2.0, -1.0], np.float32).reshape(3, 1, 1)
    shape = (2, 3, 5, 4)
    expected = _general(call, x, scale=scale, offset=-scale)
    out = np.empty(shape, np.float32)
    for _ in range(2):
        _same(call(x, scale=scale, offset=-scale), expected)
        assert call(x, scale=scale, offset=-scale, out=out) is out
    before = _fastpath.stats()
    views = [lambda v: np.broadcast_to(v, shape), lambda v: np.broadcast_to(v, (4, 3, 5, 4))[1:3],
             lambda v: v[None], lambda v: np.broadcast_to(v, shape)[:, :, :1]]
    for view in views:
        _same(call(x, scale=view(scale), offset=np.broadcast_to(-scale, shape)), expected)
        assert call(x, scale=view(scale), offset=view(-scale), out=out) is out
        assert out.tobytes() == expected.tobytes()
    after = _fastpath.stats()
    assert after["stored"] == before["stored"]
    assert after["hits"] == before["hits"] + 2 * len(views)
    wrong = [np.broadcast_to(scale, (3, 3, 5, 4)), np.broadcast_to(scale, (2, 3, 6, 4)),
             np.broadcast_to(scale, (1,) + shape), scale[None, None, None]]
    for view in wrong:
        with pytest.raises(ValueError, match="scale"):
            call(x, scale=view, offset=-scale)
        out[...] = 7
        with pytest.raises(ValueError, match="offset"):
            call(x, scale=scale, offset=view, out=out)
        assert (out == 7).all()


def test_converting_calls_that_take_the_general_path():
    """Values the cache does not key (lists, bfloat16 or complex arrays,
    booleans) and wrong ``out=`` dtypes go to the general path, which
    converts them or words the error, even after a stored call of the same
    geometry."""
    x = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    call = lambda v, **kw: fb.transpose(v, (2, 0, 1), **kw)  # noqa: E731
    scale = np.arange(4, dtype=np.float32).reshape(4, 1, 1)
    for _ in range(2):
        _same(call(x, dtype=np.float32, scale=scale), _general(call, x, dtype=np.float32,
                                                               scale=scale))
    before = _hits()
    _same(call(x, dtype=np.float32, scale=[[[1.0]], [[2.0]], [[3.0]], [[4.0]]]),
          _general(call, x, dtype=np.float32, scale=scale + 1))
    _same(call(x, dtype=np.float32, scale=True), _general(call, x, dtype=np.float32, scale=1.0))
    bf16 = scale.astype(ml_dtypes.bfloat16)
    _same(call(x, dtype=np.float32, scale=bf16), _general(call, x, dtype=np.float32, scale=scale))
    with pytest.raises(TypeError, match="scale"):
        call(x, dtype=np.float32, scale=scale.astype(np.complex64))
    with pytest.raises(TypeError):
        call(x, dtype=np.float32, scale=scale, out=np.empty((4, 2, 3), np.float64))
    with pytest.raises(TypeError):
        call(x, dtype="not a dtype")
    assert _hits() == before


def test_converting_programs_release_their_plans():
    """A stored converting call's plans are counted while it is stored and
    given back with it."""
    _fastpath.clear()
    base = _engine.stored_plan_count()
    x = np.arange(40 * 50 * 13, dtype=np.uint8).reshape(40, 50, 13)      # by the stage
    fb.transpose(x, (2, 0, 1), dtype=np.float32, scale=np.ones((13, 1, 1), np.float32))
    assert _engine.stored_plan_count() > base
    _fastpath.clear()
    import gc
    gc.collect()
    assert _engine.stored_plan_count() == base


def test_tuning_changes_retire_converting_programs():
    x = np.arange(8 * 8 * 3, dtype=np.uint8).reshape(8, 8, 3)
    call = lambda: fb.transpose(x, (2, 0, 1), dtype=np.float32, scale=0.5)  # noqa: E731
    expected = _general(lambda v: fb.transpose(v, (2, 0, 1), dtype=np.float32, scale=0.5), x)
    _same(call(), expected)
    _same(call(), expected)
    before = _fastpath.stats()["stored"]
    with _engine.tune(convert_simd=False):
        _same(call(), expected)             # planned again, under the new settings
        assert _fastpath.stats()["stored"] == before + 1
    _same(call(), expected)
    assert _fastpath.stats()["stored"] == before + 2
