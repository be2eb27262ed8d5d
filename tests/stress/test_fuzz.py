"""Fuzzing the public API with hypothesis: every call returns the reference
result or raises the documented exception, never writes where it must not, and
never takes the process down.

What is drawn: ranks 0-7; shapes with zeros and ones, spatial sizes that the
block size does not divide, huge broadcast (stride-0) inputs; every dtype
(bool, all integers, float16-longdouble, complex, datetime/timedelta, bytes,
unicode, void, structured (packed, aligned, sub-array, with an object field),
non-native byte order, ml_dtypes, object, StringDType with and without NA);
inputs and outputs that are views of a larger buffer (axes permuted, steps of
+-1..3, offsets, negative steps), outputs interleaved with or overlapping the
input; valid and wrong ``block_size``, ``repeats``, ``mode``, ``data_format``,
``num_threads`` and ``out`` (wrong types, negative, huge, near 2**31, 2**63,
2**64). Some inputs are large enough (> 256 KiB) to run on several threads,
and half the calls stream their destination (``_engine/kernels/stream.pxi``), which
the engine would otherwise do only for copies of 8 MiB or more.
``tests/stress/fuzz_oracle.py`` says what each call must do.

Budget: ``FASTBLOCK_FUZZ_EXAMPLES`` examples per test (default 100: a few
seconds on 2 cores; Hypothesis draws other examples on every run). The long run, on demand::

    FASTBLOCK_FUZZ_EXAMPLES=20000 python -m pytest tests/stress/test_fuzz.py -p no:cacheprovider

``FASTBLOCK_FUZZ_STATS=path.json`` writes the counts of calls by operator and
outcome, and of the error paths hit.
"""
from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import fastblock as fb
from fastblock import _engine
from fuzz_oracle import COUNTS, ERROR_PATHS, FORMATS, Case, check, fill, is_integer

EXAMPLES = int(os.environ.get("FASTBLOCK_FUZZ_EXAMPLES", "100"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)

# The largest buffer (in items) a view is cut from.
MAX_BUFFER_ITEMS = 1 << 18
# Inputs above this many bytes run on several threads (the engine's
# single-thread cut-off is 256 KiB).
LARGE_BYTES = 300 * 1024


def _all_dtypes():
    names = ["?", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8", "g",
             "c8", "c16", "G", "M8[ns]", "m8[s]", "M8[D]", ">i4", ">f8", ">u2", ">c16",
             "S1", "S3", "S8", "S17", "U1", "U3", "U9", "V1", "V3", "V5", "V7", "V12", "V24",
             "V33"]
    dtypes = [np.dtype(n) for n in names]
    dtypes += [
        np.dtype([("a", "u1"), ("b", "<f8")]),                  # packed, 9 bytes
        np.dtype([("a", "u1"), ("b", "<f8")], align=True),      # padded, 16 bytes
        np.dtype([("p", "u1", (3,)), ("q", ">i2")]),             # sub-array field
        np.dtype([]),                                            # zero-byte items
        np.dtype(object),
        np.dtypes.StringDType(),
        np.dtypes.StringDType(na_object=None),
        np.dtype([("o", "O"), ("i", "<i4")]),                    # object field
    ]
    try:
        import ml_dtypes
        dtypes += [np.dtype(ml_dtypes.bfloat16), np.dtype(ml_dtypes.float8_e4m3fn),
                   np.dtype(ml_dtypes.float8_e5m2), np.dtype(ml_dtypes.int4)]
    except ImportError:
        pass
    return dtypes


DTYPES = _all_dtypes()
PLAIN_DTYPES = [d for d in DTYPES if not d.hasobject and d.itemsize > 0]

VALID_BLOCK_SIZES = [1, 2, 2, 2, 3, 3, 1, 2, np.int8(2), np.int64(3), np.uint16(1), np.uint64(2)]
BAD_BLOCK_SIZES = [0, -1, -3, -2**31, 2**31 - 1, 2**31, 2**32, 2**62, 2**63, 2**64, 2**100,
                   -2**100, np.int64(-2), np.uint64(2**64 - 1),
                   2.0, 1.0, True, False, np.bool_(True), "2", None, np.float64(2.0), 2 + 0j,
                   b"2", [2], (2,)]
VALID_MODES = ["blocks_first", "depth_first", "DCR", "CRD", "dcr", "crd", "Blocks_First",
               "DEPTH_FIRST", "cRd"]
BAD_MODES = ["", "DRC", "blocks-first", "depth", None, 0, b"DCR", "blocks_first ", ["DCR"]]
VALID_FORMATS = ["channels_first", "channels_last", "NCHW", "nchw", "NHWC", "NCW", "NWC",
                 "NCDHW", "NDHWC", "NCHW_VECT_C", "nchw_vect_c", "Channels_Last"]
BAD_FORMATS = ["", "NCHW_VECT", "CHWN", None, 1, b"NCHW", "channels_first\0", "NHCW"]
VALID_THREADS = [None, None, None, None, 1, 2, 3, 4, 8, 1000, np.int32(2), np.uint8(1)]
BAD_THREADS = [0, -1, -2**63, 2.0, True, np.bool_(False), "2", 1.5,
               2**31, 2**32 + 3, 2**63, 2**64 + 3, 10**30]
OUT_MODES = ["none"] * 6 + ["fresh", "view", "view", "shared", "wrong_shape", "wrong_dtype",
                            "readonly", "not_array", "broadcast"]
CLEAN_OUT_MODES = ["none"] * 4 + ["fresh", "view", "view", "shared"]


def _weighted(good, bad, bad_share=0.25):
    """Mostly ``good``, sometimes (about ``bad_share``) ``bad``."""
    copies = max(1, round(len(bad) * (1 - bad_share) / (bad_share * len(good))))
    return st.sampled_from(list(good) * copies + list(bad))


# ---------------------------------------------------------------- array builders

def _layout(draw, shape, allow_broadcast):
    """Random memory layout for an array of ``shape``: axis order in memory,
    a step (negative included) and an offset per axis, stride-0 axes."""
    rank = len(shape)
    perm = tuple(draw(st.permutations(range(rank)))) if rank else ()
    steps = tuple(draw(st.sampled_from([1, 1, 1, 2, -1, -2, 3])) for _ in range(rank))
    offsets = tuple(draw(st.integers(0, 1)) for _ in range(rank))
    bcast = tuple(allow_broadcast and n != 1 and draw(st.integers(0, 9)) == 0 for n in shape)
    return perm, steps, offsets, bcast


def _build(shape, dtype, layout, rng):
    """(view, buffer, view_of): ``view`` has ``shape`` and lies inside
    ``buffer`` as ``layout`` says; ``view_of(buffer_copy)`` repeats it."""
    perm, steps, offsets, bcast = layout
    gaps = math.prod(abs(step) + off for step, off in zip(steps, offsets))
    if math.prod(shape) * gaps > MAX_BUFFER_ITEMS:
        # Steps of 3 on seven axes make a buffer 2187 times the view: keep
        # the directions, drop the gaps.
        steps = tuple(1 if step > 0 else -1 for step in steps)
        offsets = (0,) * len(shape)
    lengths = []
    slices = []
    for n, step, off, b in zip(shape, steps, offsets, bcast):
        a = abs(step)
        if b:
            lengths.append(off + 1)
            slices.append(slice(off, off + 1))
        elif n == 0:
            lengths.append(off)
            slices.append(slice(off, off))
        else:
            lengths.append(off + (n - 1) * a + 1)
            if step > 0:
                slices.append(slice(off, off + (n - 1) * a + 1, a))
            else:
                start = off + (n - 1) * a
                slices.append(slice(start, off - 1 if off > 0 else None, -a))
    memory_shape = [lengths[p] for p in perm]
    buffer = np.empty(memory_shape, dtype=dtype)
    fill(buffer, rng)
    inverse = tuple(np.argsort(perm)) if perm else ()

    def view_of(buf):
        v = buf.transpose(inverse)[tuple(slices)] if shape else buf[...]
        if any(bcast):
            v = np.broadcast_to(v, shape)
        return v

    view = view_of(buffer)
    assert view.shape == tuple(shape), (view.shape, shape)
    return view, buffer, view_of



def _make_x(draw, shape, dtype, rng, case: Case, allow_list=True):
    layout = _layout(draw, shape, allow_broadcast=True)
    x, buffer, _ = _build(shape, dtype, layout, rng)
    case.buffers.append(buffer)
    if allow_list and dtype in (np.dtype("i8"), np.dtype("f8")) and x.size < 50 \
            and draw(st.integers(0, 9)) == 0:
        return x.tolist()  # an array-like, not an array
    return x


def _add_out(draw, case: Case, result_shape, dtype, rng, clean=False):
    """Attach an ``out`` in one of OUT_MODES (``clean``: a valid one, or
    one that may overlap the input) to ``case``."""
    mode = draw(st.sampled_from(CLEAN_OUT_MODES if clean else OUT_MODES))
    note(f"out mode {mode}")
    shape = tuple(result_shape) if result_shape is not None else None
    if mode == "none":
        return
    if shape is None or math.prod(max(s, 1) for s in shape) * max(dtype.itemsize, 1) > 2**24:
        # No result shape to aim at (or an unreasonable one): any small array.
        x = np.asarray(case.x)
        small = math.prod(max(s, 1) for s in x.shape) < 2**16
        shape = x.shape if small else (2,)
    if mode in ("fresh", "wrong_shape", "wrong_dtype", "readonly"):
        out_dtype = dtype
        if mode == "wrong_shape":
            shape = shape + (1,) if draw(st.booleans()) or not shape else \
                shape[:-1] + (shape[-1] + 1,)
        if mode == "wrong_dtype":
            out_dtype = draw(st.sampled_from([d for d in DTYPES if d != dtype]))
        layout = _layout(draw, shape, allow_broadcast=False)
        out, buffer, view_of = _build(shape, out_dtype, layout, rng)
        if mode == "readonly":
            buffer.flags.writeable = False
            out = view_of(buffer)
        case.out, case.out_buffer, case.out_view = out, buffer, view_of
        case.buffers.append(buffer)
    elif mode == "view":
        layout = _layout(draw, shape, allow_broadcast=False)
        out, buffer, view_of = _build(shape, dtype, layout, rng)
        case.out, case.out_buffer, case.out_view = out, buffer, view_of
        case.buffers.append(buffer)
    elif mode == "shared":
        # x and out are views of one flat buffer: overlapping, interleaved
        # (sharing no item) or apart, with either step's sign.
        x = np.asarray(case.x)
        if x.dtype != dtype or not isinstance(case.x, np.ndarray) or x.size > 2**16:
            return
        x_step = draw(st.sampled_from([1, 2, -1, -2, 3]))
        out_step = draw(st.sampled_from([1, 2, -1, -2, 3]))
        nx = x.size
        x_off = draw(st.integers(0, 3))
        # One past x's last item (x_off + 1 for an empty x: never negative).
        out_off = draw(st.sampled_from([0, 1, 2, x_off + 1, x_off + max(nx - 1, 0) * abs(x_step) + 1,
                                        x_off + nx * abs(x_step) // 2]))
        case.share_one_buffer(shape, x_off, x_step, out_off, out_step, rng)
    elif mode == "not_array":
        case.out = draw(st.sampled_from([[0], 0, {}, memoryview(b"abcd"),
                                         "out", np.float64(0)]))
    elif mode == "broadcast":
        buffer = np.empty((), dtype=dtype)
        fill(buffer, rng)
        case.out = np.broadcast_to(buffer, shape)
        case.buffers.append(buffer)


# ---------------------------------------------------------------- block operators

def _block_geometry(draw, op, rank, layout, bs, clean=False):
    """A shape for ``op``: valid for ``bs``, or (unless ``clean``) sometimes one off."""
    k = max(rank - 2, 0)
    small = k >= 4
    n = draw(st.sampled_from([1, 1, 2, 0]))
    off_by_one = not clean and draw(st.integers(0, 9)) == 0
    if layout == "NCHW_VECT_C" and rank == 5:
        if op == "space_to_depth":
            groups = draw(st.integers(0, 2))
            spatial = [bs * draw(st.integers(0, 2)) + off_by_one for _ in range(2)]
        else:
            groups = bs**2 * draw(st.integers(0, 2)) + off_by_one
            spatial = [draw(st.integers(0, 2)) for _ in range(2)]
        lanes = 4 if clean or draw(st.integers(0, 9)) else draw(st.sampled_from([1, 3, 8]))
        return (n, groups, *spatial, lanes)
    if op == "space_to_depth":
        spatial = [bs * draw(st.integers(0, 1 if small else 2)) for _ in range(k)]
        if off_by_one and k:
            spatial[draw(st.integers(0, k - 1))] += 1
        channels = draw(st.integers(0, 3))
    else:
        spatial = [draw(st.integers(0, 1 if small else 2)) for _ in range(k)]
        channels = bs**k * draw(st.integers(0, 2)) + off_by_one
    if layout == "channels_last":
        return (n, *spatial, channels)
    return (n, channels, *spatial)


@FUZZ
@given(st.data())
def test_fuzz_block_operators(data):
    draw = data.draw
    op = draw(st.sampled_from(["space_to_depth", "depth_to_space"]))
    dtype = draw(st.sampled_from(DTYPES))
    # Half the calls have only valid arguments (the copies are where memory
    # errors hide); the other half mix in wrong ones.
    clean = draw(st.booleans())
    data_format = draw(st.sampled_from(VALID_FORMATS) if clean
                       else _weighted(VALID_FORMATS, BAD_FORMATS))
    key = data_format.lower() if isinstance(data_format, str) else None
    layout, named_rank = FORMATS.get(key, ("channels_first", None))
    if named_rank is not None and (clean or draw(st.integers(0, 4))):
        rank = named_rank
    elif clean:
        rank = draw(st.sampled_from([3, 3, 4, 4, 5, 6, 7]))
    else:
        rank = draw(st.sampled_from([0, 1, 2, 3, 3, 3, 4, 4, 4, 5, 5, 6, 7]))
    if clean:
        mode = draw(st.sampled_from(VALID_MODES))
        block_size = draw(st.sampled_from(VALID_BLOCK_SIZES))
        num_threads = draw(st.sampled_from(VALID_THREADS))
    else:
        mode = draw(_weighted(VALID_MODES, BAD_MODES))
        block_size = draw(_weighted(VALID_BLOCK_SIZES, BAD_BLOCK_SIZES, 0.3))
        num_threads = draw(_weighted(VALID_THREADS, BAD_THREADS, 0.2))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)

    bs = int(block_size) if is_integer(block_size) and 1 <= block_size <= 4 else None
    huge_bs = is_integer(block_size) and block_size > 4
    if rank < 3:
        shape = tuple(draw(st.integers(0, 3)) for _ in range(rank))
    elif huge_bs:
        # Only zero extents are divisible by a huge block size.
        shape = tuple(draw(st.sampled_from([0, 0, 1, 2, 4])) for _ in range(rank))
    else:
        shape = _block_geometry(draw, op, rank, layout, bs or draw(st.integers(1, 3)), clean)
    large = (dtype in PLAIN_DTYPES and rank >= 3 and all(shape)
             and draw(st.integers(0, 11)) == 0)
    if large:
        per_sample = math.prod(shape[1:]) * dtype.itemsize
        shape = (max(1, -(-LARGE_BYTES // per_sample)),) + tuple(shape[1:])
        num_threads = draw(st.sampled_from([2, 3, 4, None]))
    note(f"shape {shape} dtype {dtype} large {large}")

    case = Case(op, None, (block_size, mode, data_format), num_threads=num_threads)
    case.x = _make_x(draw, shape, dtype, rng, case, allow_list=not large)
    result_shape = case.expect().result_shape
    _add_out(draw, case, result_shape, dtype, rng, clean)
    note(repr(case))
    _check_maybe_streamed(draw, case)


def _check_maybe_streamed(draw, case: Case) -> None:
    """Check the call, in half the examples with streamed destinations for
    copies of any size (the engine streams only large ones by default)."""
    streamed = draw(st.booleans())
    note(f"streamed destination: {streamed}")
    settings = {"streaming": True, "stream_min_bytes": 0} if streamed else {}
    with _engine.tune(**settings):
        check(case)


# ---------------------------------------------------------------- tile

VALID_REPEAT_ENTRIES = [0, 1, 1, 1, 2, 2, 3, np.int8(2), np.uint8(1), np.int64(0), np.uint64(3)]
BAD_REPEAT_ENTRIES = [-1, -2**63, 2**44, 2**62, 2**63, 2**64 + 1, 10**40, 1.0, 2.5, True,
                      np.bool_(True), np.float32(1), None, "1", [1], (2,)]


@st.composite
def _repeats(draw):
    kind = draw(st.sampled_from(["int", "int", "seq", "seq", "seq", "array", "junk"]))
    if kind == "int":
        return draw(_weighted(VALID_REPEAT_ENTRIES, BAD_REPEAT_ENTRIES, 0.2))
    if kind == "seq":
        entries = draw(st.lists(_weighted(VALID_REPEAT_ENTRIES, BAD_REPEAT_ENTRIES, 0.1),
                                max_size=6))
        return tuple(entries) if draw(st.booleans()) else entries
    if kind == "array":
        dtype = draw(st.sampled_from(["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", ">i8",
                                      "f8", "?", "O"]))
        entries = draw(st.lists(st.integers(0, 3), max_size=5))
        arr = np.array(entries, dtype=dtype)
        shape = draw(st.sampled_from([None, None, None, "0d", "2d"]))
        if shape == "0d" and entries:
            arr = arr[:1].reshape(())
        elif shape == "2d":
            arr = arr.reshape(1, -1)
        if draw(st.integers(0, 4)) == 0 and arr.ndim == 1 and arr.size > 1:
            arr = arr[::-1]  # a strided repeats array
        return arr
    return draw(st.sampled_from([2.0, None, True, "12", "", b"\x02", 1 + 0j, object(),
                                 [[1, 2]], ([1], [2]), np.float64(3.0)]))


@FUZZ
@given(st.data())
def test_fuzz_tile(data):
    draw = data.draw
    dtype = draw(st.sampled_from(DTYPES))
    rank = draw(st.sampled_from([0, 1, 1, 2, 2, 3, 3, 4, 5, 7]))
    shape = tuple(draw(st.sampled_from([0, 1, 1, 2, 2, 3])) for _ in range(rank))
    clean = draw(st.booleans())
    if clean:
        repeats = draw(st.one_of(
            st.sampled_from(VALID_REPEAT_ENTRIES),
            st.lists(st.sampled_from(VALID_REPEAT_ENTRIES), max_size=6)))
        num_threads = draw(st.sampled_from(VALID_THREADS))
    else:
        repeats = draw(_repeats())
        num_threads = draw(_weighted(VALID_THREADS, BAD_THREADS, 0.2))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    big_input = draw(st.integers(0, 19)) == 0
    if big_input:
        # A huge stride-0 input: tiling it is ValueError/MemoryError unless
        # some extent is zero.
        shape = [draw(st.sampled_from([0, 1, 2**46, 2**50])) for _ in range(max(rank, 1))]
        while math.prod(max(s, 1) for s in shape) > 2**55:
            shape[shape.index(max(shape))] = 1
        shape = tuple(shape)
        base = np.empty(1, dtype=dtype)
        fill(base, rng)
        case = Case("tile", np.broadcast_to(base.reshape((1,) * len(shape)), shape),
                    (repeats,), num_threads=num_threads, buffers=[base])
    else:
        case = Case("tile", None, (repeats,), num_threads=num_threads)
        case.x = _make_x(draw, shape, dtype, rng, case)
    result_shape = case.expect().result_shape
    if (not big_input and dtype in PLAIN_DTYPES and result_shape is not None
            and 0 < math.prod(result_shape) * dtype.itemsize < LARGE_BYTES
            and isinstance(repeats, (list, tuple)) and draw(st.integers(0, 9)) == 0):
        # Large enough for several threads: prepend one more repeat axis.
        extra = -(-LARGE_BYTES // (math.prod(result_shape) * dtype.itemsize))
        case.args = ((extra, *repeats),)
        case.num_threads = draw(st.sampled_from([2, 3, 4, None]))
        result_shape = case.expect().result_shape
    _add_out(draw, case, result_shape, dtype, rng, clean)
    note(repr(case))
    _check_maybe_streamed(draw, case)


# ---------------------------------------------------------------- odd inputs, thread settings

JUNK_INPUTS = [None, 3, 2.5, "abc", b"xy", [1, 2], [[1, 2], [3, 4]], [[1], [1, 2]], (),
               [[[1]]], {"a": 1}, object(), np.float32(1.5), np.datetime64("2020-01-01"),
               [np.int8(1), np.int8(2)], range(4), memoryview(b"abcdefgh")]


@FUZZ
@given(st.data())
def test_fuzz_odd_inputs(data):
    """Array-likes and non-arrays as ``x``: whatever NumPy makes of them."""
    draw = data.draw
    x = draw(st.sampled_from(JUNK_INPUTS))
    op = draw(st.sampled_from(["tile", "space_to_depth", "depth_to_space"]))
    if op == "tile":
        case = Case(op, x, (draw(_repeats()),), num_threads=draw(st.sampled_from(VALID_THREADS)))
    else:
        case = Case(op, x, (draw(st.sampled_from(VALID_BLOCK_SIZES)),
                            draw(st.sampled_from(VALID_MODES)),
                            draw(st.sampled_from(VALID_FORMATS))))
    note(repr(case))
    check(case)


@FUZZ
@given(st.sampled_from(VALID_THREADS[4:] + BAD_THREADS + [None, "1", [2], 7, np.int16(3)]))
def test_fuzz_set_num_threads(n):
    """``set_num_threads``: n >= 1 works (and the next call still works),
    anything else is TypeError/ValueError and leaves the setting alone."""
    before = fb.get_num_threads()
    try:
        fb.set_num_threads(n)
    except (TypeError, ValueError) as exc:
        COUNTS[("set_num_threads", type(exc).__name__)] += 1
        assert not (is_integer(n) and n >= 1 and n <= 2**31 - 1), f"{n!r} refused: {exc}"
        assert isinstance(exc, TypeError) == (not is_integer(n)), (n, exc)
        assert fb.get_num_threads() == before
        return
    COUNTS[("set_num_threads", "ok")] += 1
    assert is_integer(n) and n >= 1, f"set_num_threads({n!r}) accepted"
    assert fb.get_num_threads() == n
    # The setting must not break later calls, whatever its size.
    x = np.arange(24).reshape(1, 4, 2, 3)
    try:
        y = fb.space_to_depth(np.tile(x, (1, 1, 2, 2)), 2)
    except ValueError:
        assert n > 2**31 - 1  # an absurd default may be refused at call time
    else:
        assert y.shape == (1, 16, 2, 3)
    fb.set_num_threads(before)


@pytest.fixture(scope="module", autouse=True)
def _report_counts():
    yield
    path = os.environ.get("FASTBLOCK_FUZZ_STATS")
    if path:
        with open(path, "w") as f:
            json.dump({
                "examples_per_test": EXAMPLES,
                "calls": {f"{op} {outcome}": n for (op, outcome), n in sorted(COUNTS.items())},
                "total_calls": sum(COUNTS.values()),
                "error_paths": {f"{op} {exc} {reason}": n
                                for (op, exc, reason), n in sorted(ERROR_PATHS.items())},
                "distinct_error_paths": len(ERROR_PATHS),
            }, f, indent=1)
