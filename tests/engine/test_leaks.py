"""Reference counts, leaks and allocations.

* ``object`` arrays: after a successful call each item's reference count has
  grown by exactly the number of times it appears in the result, and is back
  where it started once the result is gone; after every error path it has
  not moved, and neither have the counts of ``out``'s items.
* ``StringDType``: the dtype instance, the input and ``out`` have exact
  reference counts after success and after every error path; strings are
  copies, not shared.
* A loop of many calls (successes and errors) shows no growth in
  ``tracemalloc`` or in the resident set size.
* The plain-data path allocates only the output: ``tracemalloc``'s peak is
  the output's bytes plus a little bookkeeping, whatever the input's strides.
* Errors leave no half-work: with every fault, an ``out`` (a view inside a
  larger buffer filled with a sentinel) is left untouched to the last byte,
  for plain, object and StringDType items.
"""
import gc
import os
import sys
import tracemalloc

import numpy as np
import pytest

import fastblock as fb
from reference import space_to_depth_ref

try:
    import psutil
except ImportError:  # RSS checks need psutil
    psutil = None
# Under AddressSanitizer freed memory sits in ASan's quarantine (hundreds of
# MB), so the resident set grows whatever the library does: ci/sanitize.sh
# sets this, and only the tracemalloc half of the growth check runs there.
UNDER_ASAN = bool(os.environ.get("FASTBLOCK_UNDER_ASAN"))

StringDType = np.dtypes.StringDType


@pytest.fixture(autouse=True, scope="module")
def _young_heap_only():
    """gc.collect() in these tests must only look at what this module made:
    freeze everything older, once (a whole suite's objects make each full
    collection slow: 0.8 s a test when frozen for each)."""
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


class Item:
    """A distinct object per array item, so that each count is its own."""

    __slots__ = ("n",)

    def __init__(self, n):
        self.n = n


def object_array(shape):
    flat = np.empty(int(np.prod(shape)), dtype=object)
    for i in range(flat.size):
        flat[i] = Item(i)
    return flat.reshape(shape)


def counts(items):
    return [sys.getrefcount(o) for o in items]


# (name, call(x, out) -> result, input shape, times each item appears)
SUCCESS_CALLS = [
    ("space_to_depth", lambda x, **kw: fb.space_to_depth(x, 2, **kw), (2, 3, 4, 4), 1),
    ("space_to_depth_crd_nhwc",
     lambda x, **kw: fb.space_to_depth(x, 2, "CRD", "NHWC", **kw), (2, 4, 4, 3), 1),
    ("depth_to_space", lambda x, **kw: fb.depth_to_space(x, 2, **kw), (2, 8, 3, 3), 1),
    ("depth_to_space_vect_c",
     lambda x, **kw: fb.depth_to_space(x, 2, "depth_first", "NCHW_VECT_C", **kw),
     (1, 4, 2, 2, 4), 1),
    ("tile", lambda x, **kw: fb.tile(x, (2, 1, 3), **kw), (2, 3, 2), 6),
    ("tile_promoted", lambda x, **kw: fb.tile(x, (2, 2, 1, 1), **kw), (3, 2), 4),
    ("tile_zero", lambda x, **kw: fb.tile(x, (0, 2), **kw), (3, 2), 0),
    ("tile_0d", lambda x, **kw: fb.tile(x, (2, 2), **kw), (), 4),
]


def _views(x):
    """The input as given, and as a strided view with negative steps."""
    yield "contiguous", x
    if x.ndim == 0:
        return
    big = np.empty(tuple(2 * n for n in x.shape), dtype=x.dtype)
    view = big[tuple(slice(None, None, -2) for _ in x.shape)]
    view[...] = x
    yield "strided", view


@pytest.mark.parametrize("name, call, shape, times", SUCCESS_CALLS,
                         ids=[c[0] for c in SUCCESS_CALLS])
@pytest.mark.parametrize("with_out", [False, True])
def test_object_refcounts_after_success(name, call, shape, times, with_out):
    x0 = object_array(shape)
    items = list(x0.reshape(-1))
    for layout, x in _views(x0):
        gc.collect()
        base = counts(items)
        result_shape = call(x).shape  # (result freed at once)
        assert counts(items) == base, f"{layout}: a reference kept after the result died"
        out = None
        if with_out:
            out = np.empty(result_shape, dtype=object)
            sentinels = [Item(-1) for _ in range(out.size)]
            flat = out.reshape(-1)
            for i, sentinel in enumerate(sentinels):
                flat[i] = sentinel
            del flat
            sentinel_base = counts(sentinels)
        result = call(x, out=out) if with_out else call(x)
        assert counts(items) == [c + times for c in base], layout
        if with_out:
            assert result is out
            # Each sentinel lost exactly the one reference out held.
            assert counts(sentinels) == [c - 1 for c in sentinel_base]
        del result, out
        gc.collect()
        assert counts(items) == base, f"{layout}: references leaked"


def _failing_calls(x, out_ok):
    """Every error path of every operator, for an input ``x`` of shape
    (2, 4, 4, 4) and an ``out`` of space_to_depth's result shape."""
    ro = out_ok.copy()
    ro.flags.writeable = False
    wrong_dtype = np.empty(out_ok.shape, dtype=np.float64 if x.dtype.kind != "f" else object)
    return [
        ("rank", lambda: fb.space_to_depth(x[0, 0], 2), ValueError),
        ("block_size 0", lambda: fb.space_to_depth(x, 0), ValueError),
        ("block_size float", lambda: fb.space_to_depth(x, 2.0), TypeError),
        ("block_size bool", lambda: fb.depth_to_space(x, True), TypeError),
        ("not divisible", lambda: fb.space_to_depth(x, 3), ValueError),
        ("channels not divisible", lambda: fb.depth_to_space(x, 4), ValueError),
        ("mode", lambda: fb.space_to_depth(x, 2, mode="bogus"), ValueError),
        ("data_format", lambda: fb.space_to_depth(x, 2, data_format="NCHWC"), ValueError),
        ("layout rank", lambda: fb.space_to_depth(x, 2, data_format="NCDHW"), ValueError),
        ("vect_c lanes", lambda: fb.depth_to_space(x[..., None], 2, data_format="NCHW_VECT_C"),
         ValueError),
        ("num_threads 0", lambda: fb.space_to_depth(x, 2, num_threads=0), ValueError),
        ("num_threads str", lambda: fb.tile(x, 2, num_threads="2"), TypeError),
        ("out shape", lambda: fb.space_to_depth(x, 2, out=out_ok[:1]), (ValueError, TypeError)),
        ("out dtype", lambda: fb.space_to_depth(x, 2, out=wrong_dtype), (TypeError, ValueError)),
        ("out read-only", lambda: fb.space_to_depth(x, 2, out=ro), ValueError),
        ("out not array", lambda: fb.space_to_depth(x, 2, out=[0]), (TypeError, ValueError)),
        ("out is x", lambda: fb.tile(x, 1, out=x), ValueError),
        ("out overlaps x", lambda: fb.depth_to_space(x, 1, out=x), ValueError),
        ("repeats negative", lambda: fb.tile(x, (1, -1)), ValueError),
        ("repeats float", lambda: fb.tile(x, 2.0), TypeError),
        ("repeats 2-D", lambda: fb.tile(x, np.ones((2, 2), int)), ValueError),
        ("repeats bool", lambda: fb.tile(x, [True, 2]), TypeError),
        ("result too large", lambda: fb.tile(x, 2**62), (ValueError, MemoryError)),
        ("result beyond memory", lambda: fb.tile(x, (2**20, 2**20, 2**4)),
         (ValueError, MemoryError)),
    ]


def test_object_refcounts_after_every_error_path():
    x = object_array((2, 4, 4, 4))
    out = object_array((2, 16, 2, 2))
    items, out_items = list(x.reshape(-1)), list(out.reshape(-1))
    out_before = out.copy()
    calls = _failing_calls(x, out)
    gc.collect()
    base, out_base = counts(items), counts(out_items)
    x_count, out_count = sys.getrefcount(x), sys.getrefcount(out)
    for name, call, errors in calls:
        with pytest.raises(errors):
            call()
        gc.collect()
        assert counts(items) == base, name
        assert counts(out_items) == out_base, name
        assert sys.getrefcount(x) == x_count, name
        assert sys.getrefcount(out) == out_count, name
        assert all(a is b for a, b in zip(out.reshape(-1), out_before.reshape(-1))), name
    assert len(calls) >= 20


def _strings(n):
    # Short (inline) and long (arena-allocated) strings, and non-ASCII.
    return [("s%d" % i) * (1 + i % 9) + ("é" if i % 3 else "") for i in range(n)]


@pytest.mark.parametrize("na", [False, True])
def test_stringdtype_refcounts_after_success_and_errors(na):
    dtype = StringDType(na_object=None) if na else StringDType()
    values = _strings(128)
    if na:
        values[::7] = [None] * len(values[::7])
    x = np.array(values, dtype=dtype).reshape(2, 4, 4, 4)
    out = np.empty((2, 16, 2, 2), dtype=dtype)
    out[...] = "sentinel-string-longer-than-fifteen-bytes"
    calls = _failing_calls(x, out)  # (its closures hold x and out)
    gc.collect()
    dtype_count = sys.getrefcount(dtype)
    x_count, out_count = sys.getrefcount(x), sys.getrefcount(out)
    x_before = x.tolist()
    for name, call, errors in calls:
        with pytest.raises(errors):
            call()
        gc.collect()
        assert sys.getrefcount(dtype) == dtype_count, name
        assert sys.getrefcount(x) == x_count, name
        assert sys.getrefcount(out) == out_count, name
        assert set(out.reshape(-1).tolist()) == {"sentinel-string-longer-than-fifteen-bytes"}, name
    for name, call, shape, times in SUCCESS_CALLS:
        src = np.array((_strings(int(np.prod(shape)))), dtype=dtype).reshape(shape)
        result = call(src)
        assert result.dtype == dtype
        del result
        result = call(src, out=np.empty(call(src).shape, dtype=dtype))
        del result
        gc.collect()
        assert sys.getrefcount(dtype) == dtype_count, name
    # Results are copies: changing one leaves the input alone.
    y = fb.space_to_depth(x, 2)
    y[...] = "changed"
    assert x.tolist() == x_before
    del y
    gc.collect()
    assert sys.getrefcount(dtype) == dtype_count


def _workload(dtype):
    """A mix of successes and failures over every operator."""
    if dtype == "object":
        x = object_array((2, 4, 4, 4))
    elif dtype == "string":
        x = np.array(_strings(128), dtype=StringDType()).reshape(2, 4, 4, 4)
    else:
        x = np.arange(128, dtype=dtype).reshape(2, 4, 4, 4)
    out = np.empty((2, 16, 2, 2), dtype=x.dtype)
    strided = np.empty((4, 8, 8, 8), dtype=x.dtype)[::-2, ::2, 1::2, ::-2]
    strided[...] = x
    failing = _failing_calls(x, out)

    def run():
        fb.space_to_depth(x, 2)
        fb.space_to_depth(strided, 2, "CRD", num_threads=2)
        fb.depth_to_space(x, 2, out=np.empty((2, 1, 8, 8), dtype=x.dtype))
        fb.space_to_depth(x, 2, out=out)
        fb.tile(strided, (2, 1, 1, 2))
        fb.tile(x[0, 0, 0, 0], 3)
        for _, call, errors in failing:
            try:
                call()
            except errors:
                pass
    return run


@pytest.mark.parametrize("dtype", ["float32", "object", "string"])
def test_no_growth_over_many_calls(dtype):
    run = _workload(dtype)
    for _ in range(50):  # warm up caches (NumPy's, the interpreter's)
        run()
    gc.collect()
    tracemalloc.start()
    try:
        run()
        gc.collect()
        start, _ = tracemalloc.get_traced_memory()
        check_rss = psutil is not None and not UNDER_ASAN
        rss_start = psutil.Process().memory_info().rss if check_rss else 0
        for _ in range(400):
            run()
        gc.collect()
        end, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # 400 rounds of ~30 calls: a leak of even one small object per call
    # would be ~0.5 MB.
    assert end - start < 64 * 1024, f"traced memory grew by {end - start} bytes"
    if check_rss:
        growth = psutil.Process().memory_info().rss - rss_start
        assert growth < 4 * 2**20, f"RSS grew by {growth} bytes"


# ---------------------------------------------------------------- allocations

def _peak(call):
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        start, _ = tracemalloc.get_traced_memory()
        result = call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak - start


# Bookkeeping a call may allocate besides the output (plans, tuples, messages).
OVERHEAD = 64 * 1024


def _inputs():
    base = np.arange(2 * 8 * 128 * 128 * 2, dtype=np.float32).reshape(2, 8, 128, 128, 2)
    yield "C order", np.ascontiguousarray(base[..., 0])
    yield "Fortran order", np.asfortranarray(base[..., 0])
    yield "strided", base[..., 1]
    yield "negative steps", base[::-1, :, ::-1, :, 0]
    yield "transposed", base[..., 0].transpose(0, 1, 3, 2)


ALLOCATION_OPS = [
    ("s2d", fb.space_to_depth, (2,)),
    ("s2d_crd_nhwc", fb.space_to_depth, (4, "CRD", "NHWC")),
    ("d2s", fb.depth_to_space, (2,)),
    ("d2s_crd", fb.depth_to_space, (2, "depth_first")),
    ("tile", fb.tile, ((1, 2, 1, 2),)),
    ("tile_int", fb.tile, (3,)),
]


@pytest.mark.parametrize("name, fn, args", ALLOCATION_OPS, ids=[o[0] for o in ALLOCATION_OPS])
@pytest.mark.parametrize("num_threads", [1, 2])
def test_plain_data_path_allocates_only_the_output(name, fn, args, num_threads):
    for layout, x in _inputs():
        result, peak = _peak(lambda: fn(x, *args, num_threads=num_threads))
        assert peak <= result.nbytes + OVERHEAD, \
            f"{layout}: peak {peak} bytes for a {result.nbytes}-byte result"
        out = np.empty_like(result)
        same, peak = _peak(lambda: fn(x, *args, out=out, num_threads=num_threads))
        assert same is out
        assert peak <= OVERHEAD, f"{layout}: {peak} bytes allocated with out given"
        assert np.array_equal(out, result)


# ---------------------------------------------------------------- no half-work

def _faulty_calls_with_out(x, out_s2d, out_tile):
    """Every fault, each with an ``out`` that would be right for the call
    without the fault: the error must come before any write."""
    return [
        ("block_size 0", lambda: fb.space_to_depth(x, 0, out=out_s2d)),
        ("block_size float", lambda: fb.space_to_depth(x, 2.0, out=out_s2d)),
        ("block_size bool", lambda: fb.space_to_depth(x, True, out=out_s2d)),
        ("block_size huge", lambda: fb.space_to_depth(x, 2**64, out=out_s2d)),
        ("mode", lambda: fb.space_to_depth(x, 2, "DRC", out=out_s2d)),
        ("data_format", lambda: fb.space_to_depth(x, 2, data_format="NHCW", out=out_s2d)),
        ("layout rank", lambda: fb.space_to_depth(x, 2, data_format="NCW", out=out_s2d)),
        ("num_threads 0", lambda: fb.space_to_depth(x, 2, out=out_s2d, num_threads=0)),
        ("num_threads -1", lambda: fb.space_to_depth(x, 2, out=out_s2d, num_threads=-1)),
        ("num_threads float", lambda: fb.space_to_depth(x, 2, out=out_s2d, num_threads=2.0)),
        ("not divisible", lambda: fb.space_to_depth(x[:, :, :3], 2, out=out_s2d)),
        ("out shape", lambda: fb.space_to_depth(x[:1], 2, out=out_s2d)),
        ("d2s not divisible", lambda: fb.depth_to_space(x, 4, out=out_s2d)),
        ("d2s out shape", lambda: fb.depth_to_space(x, 2, out=out_s2d)),
        ("repeats negative", lambda: fb.tile(x, (1, 1, 2, -1), out=out_tile)),
        ("repeats float", lambda: fb.tile(x, (1, 1, 2, 1.0), out=out_tile)),
        ("repeats bool", lambda: fb.tile(x, (1, 1, 2, True), out=out_tile)),
        ("repeats 2-D", lambda: fb.tile(x, np.array([[1, 1, 2, 1]]), out=out_tile)),
        ("tile num_threads", lambda: fb.tile(x, (1, 1, 2, 1), out=out_tile, num_threads=0)),
        ("tile out shape", lambda: fb.tile(x, (1, 1, 1, 2), out=out_tile)),
    ]


def _sentinel_buffer(shape, dtype):
    """A buffer twice as large as ``shape`` and the view ``out`` inside it,
    every item set to a sentinel."""
    buffer = np.empty((2,) + tuple(shape), dtype=dtype)
    if buffer.dtype.kind == "O":
        buffer[...] = Item(-1)
    elif buffer.dtype.kind == "T":
        buffer[...] = "sentinel-string-longer-than-fifteen-bytes"
    else:
        buffer.view(np.uint8)[...] = 0xA5
    return buffer, buffer[1, ..., ::-1]


@pytest.mark.parametrize("dtype", ["float32", "V3", ">i8", "object", "string"])
def test_errors_leave_out_untouched(dtype):
    shape = (2, 4, 4, 4)
    if dtype == "object":
        x = object_array(shape)
    elif dtype == "string":
        x = np.array(_strings(128), dtype=StringDType()).reshape(shape)
    else:
        x = np.arange(128 * np.dtype(dtype).itemsize, dtype=np.uint8).view(dtype).reshape(shape)
    s2d_buffer, out_s2d = _sentinel_buffer((2, 16, 2, 2), x.dtype)
    tile_buffer, out_tile = _sentinel_buffer((2, 4, 8, 4), x.dtype)
    snapshots = [(b, b.copy()) for b in (s2d_buffer, tile_buffer)]
    x_before = x.copy()
    calls = _faulty_calls_with_out(x, out_s2d, out_tile)
    for name, call in calls:
        try:
            call()
        except (ValueError, TypeError):
            pass
        else:
            pytest.fail(f"{name}: no error")
        for buffer, before in snapshots:
            if buffer.dtype.kind in "OT":
                assert buffer.tolist() == before.tolist(), f"{name}: out partly written"
            else:
                assert buffer.tobytes() == before.tobytes(), f"{name}: out partly written"
        assert x.tolist() == x_before.tolist() if x.dtype.kind in "OT" else \
            x.tobytes() == x_before.tobytes()
    # ... and the same outs take the right results afterwards.
    assert fb.space_to_depth(x, 2, out=out_s2d) is out_s2d
    assert fb.tile(x, (1, 1, 2, 1), out=out_tile) is out_tile
    expected = np.tile(x, (1, 1, 2, 1))
    if x.dtype.kind in "OT":
        assert out_tile.tolist() == expected.tolist()
        assert out_s2d.tolist() == space_to_depth_ref(x, 2).tolist()
    else:
        assert out_tile.tobytes() == expected.tobytes()
        assert out_s2d.tobytes() == space_to_depth_ref(x, 2).tobytes()
