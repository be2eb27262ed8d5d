"""The fuzzers' oracle: what a fastblock call must do for given arguments, and
the checks that it did exactly that.

Shared by ``tests/stress/test_fuzz.py`` (hypothesis) and ``tests/stress/fuzz_atheris.py``
(coverage-guided); it is not a test module itself. The expectations are the
documented ones, written out independently of the library's own checks:

* every call either returns the reference result (``tests/reference.py`` for
  the block operators, ``numpy.tile`` for Tile) or raises one of the
  exceptions the docs name for the arguments' faults (when several
  arguments are wrong, any of their exceptions will do);
* the input and every buffer around it are never written;
* with ``out``, only ``out``'s own items change, and only on success: after
  an error every byte of ``out`` (and of the buffer it is a view of) is as
  it was;
* without ``out`` the result is a new C-contiguous array of ``x``'s dtype.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

import fastblock as fb
from reference import depth_to_space_ref, space_to_depth_ref

INTP_MAX = int(np.iinfo(np.intp).max)
INT_MAX = 2**31 - 1
# A result of this many bytes or more can never be allocated here (more than
# memory plus swap on any CI machine, and over ASan's 2**40-byte cap): the
# library must refuse it (ValueError) or fail to allocate it (MemoryError).
UNALLOCATABLE_BYTES = 2**44
# The generators never ask for a result between this and UNALLOCATABLE_BYTES.
CHECKABLE_BYTES = 2**26

# data_format (lower case) -> (layout name of tests/reference.py, required rank)
FORMATS = {
    "channels_first": ("channels_first", None),
    "channels_last": ("channels_last", None),
    "ncw": ("channels_first", 3),
    "nchw": ("channels_first", 4),
    "ncdhw": ("channels_first", 5),
    "nwc": ("channels_last", 3),
    "nhwc": ("channels_last", 4),
    "ndhwc": ("channels_last", 5),
    "nchw_vect_c": ("NCHW_VECT_C", 5),
}
MODES = {"blocks_first": "blocks_first", "dcr": "blocks_first",
         "depth_first": "depth_first", "crd": "depth_first"}

#: (operator, outcome) -> number of calls checked; outcome is "ok" or the
#: exception's class name. The fuzz modules report it.
COUNTS: Counter = Counter()
#: (operator, exception class, fault) of every error path that was hit.
ERROR_PATHS: Counter = Counter()


def is_integer(value) -> bool:
    """The documented integer: a Python or NumPy integer, not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


@dataclass
class Expect:
    """What a call may do: succeed (``may_succeed``) and/or raise one of ``errors``."""

    may_succeed: bool = True
    errors: set = field(default_factory=set)
    reasons: list = field(default_factory=list)
    result_shape: Optional[tuple] = None
    reference: Optional[Callable[[], Any]] = None

    def fail(self, reason: str, *types) -> None:
        """An argument is wrong: the call must raise one of ``types``."""
        self.may_succeed = False
        self.errors.update(types)
        self.reasons.append(reason)

    def allow(self, reason: str, *types) -> None:
        """The call may also raise one of ``types`` instead of succeeding."""
        self.errors.update(types)
        self.reasons.append(reason)

    def __str__(self) -> str:
        names = sorted(t.__name__ for t in self.errors)
        return (f"may_succeed={self.may_succeed} errors={names} reasons={self.reasons} "
                f"result_shape={self.result_shape}")


# ---------------------------------------------------------------- expectations

def expect_threads(e: Expect, num_threads) -> None:
    if num_threads is None:
        return
    if not is_integer(num_threads):
        e.fail("num_threads not an integer", TypeError)
    elif int(num_threads) < 1:
        e.fail("num_threads < 1", ValueError)
    elif int(num_threads) > INT_MAX:
        # The contract bounds num_threads only from below; an absurd count may
        # be clamped (success) or refused, but only with a ValueError.
        e.allow("num_threads beyond a C int", ValueError)


def expect_out(e: Expect, out, x: np.ndarray, result_shape) -> None:
    if out is None:
        return
    if not isinstance(out, np.ndarray):
        e.fail("out not an ndarray", TypeError, ValueError)
        return
    if out.dtype != x.dtype:
        e.fail("out of another dtype", TypeError, ValueError)
    if not out.flags.writeable:
        e.fail("out read-only", ValueError)
    if out.size and x.size and np.shares_memory(out, x):
        e.fail("out shares memory with x", ValueError)
    if result_shape is not None and out.shape != tuple(result_shape):
        e.fail("out of another shape", ValueError, TypeError)


def expect_result_size(e: Expect, shape, dtype: np.dtype, out) -> bool:
    """Is a result of ``shape`` small enough to be made and checked?"""
    if out is not None:
        return True  # it exists: it was allocated
    itemsize = dtype.itemsize
    nonzero = 1
    for extent in shape:
        nonzero *= max(int(extent), 1)
    count = math.prod(int(extent) for extent in shape)
    if any(int(extent) > INTP_MAX for extent in shape) or nonzero * max(itemsize, 1) > INTP_MAX:
        # NumPy cannot even describe such an array (zero-size ones included).
        e.fail("result not addressable", ValueError, MemoryError)
        return False
    if count * itemsize >= UNALLOCATABLE_BYTES:
        e.fail("result larger than any memory", ValueError, MemoryError)
        return False
    if itemsize == 0 and count > 2**40:
        e.allow("zero-byte items beyond 2**40", ValueError, MemoryError)
    assert count * itemsize <= CHECKABLE_BYTES, \
        f"the generator asked for a {count * itemsize}-byte result"
    return True


def _logical(shape, layout):
    if layout == "channels_first":
        return shape[0], shape[1], list(shape[2:])
    if layout == "channels_last":
        return shape[0], shape[-1], list(shape[1:-1])
    return shape[0], shape[1] * 4, list(shape[2:4])


def _physical(n, c, spatial, layout):
    if layout == "channels_first":
        return (n, c, *spatial)
    if layout == "channels_last":
        return (n, *spatial, c)
    return (n, c // 4, *spatial, 4)


def expect_block(op: str, x, block_size, mode, data_format, out, num_threads) -> Expect:
    e = Expect()
    try:
        xa = np.asarray(x)
    except Exception as exc:  # a ragged list: NumPy's own error
        e.fail("np.asarray(x) fails", type(exc))
        return e
    expect_threads(e, num_threads)
    key = data_format.lower() if isinstance(data_format, str) else None
    layout = None
    if key not in FORMATS:
        e.fail("unknown data_format", ValueError)
    else:
        layout, rank = FORMATS[key]
        if xa.ndim < 3:
            e.fail("rank < 3", ValueError)
            layout = None
        elif rank is not None and xa.ndim != rank:
            e.fail("layout name and rank differ", ValueError)
            layout = None
    mode_key = mode.lower() if isinstance(mode, str) else None
    if mode_key not in MODES:
        e.fail("unknown mode", ValueError)
    bs = None
    if not is_integer(block_size):
        e.fail("block_size not an integer", TypeError)
    elif int(block_size) < 1:
        e.fail("block_size < 1", ValueError)
    else:
        bs = int(block_size)
    result_shape = None
    if layout is not None and bs is not None:
        if layout == "NCHW_VECT_C" and xa.shape[4] != 4:
            e.fail("NCHW_VECT_C last axis not 4", ValueError)
        else:
            n, c, spatial = _logical(xa.shape, layout)
            k = len(spatial)
            if op == "space_to_depth":
                if any(s % bs for s in spatial):
                    e.fail("spatial size not divisible", ValueError)
                else:
                    result_shape = _physical(n, c * bs**k, [s // bs for s in spatial], layout)
            else:
                if c % bs**k:
                    e.fail("channels not divisible by bs**K", ValueError)
                elif layout == "NCHW_VECT_C" and (c // bs**k) % 4:
                    e.fail("NCHW_VECT_C result channels not a multiple of 4", ValueError)
                else:
                    result_shape = _physical(n, c // bs**k, [s * bs for s in spatial], layout)
    e.result_shape = result_shape
    expect_out(e, out, xa, result_shape)
    if result_shape is not None and expect_result_size(e, result_shape, xa.dtype, out):
        if e.may_succeed:
            ref = space_to_depth_ref if op == "space_to_depth" else depth_to_space_ref
            canonical = MODES[mode_key]
            if xa.dtype.itemsize == 0 or math.prod(result_shape) == 0:
                # (the reference's reshapes may not exist for huge block sizes)
                e.reference = lambda: np.empty(result_shape, xa.dtype)
            else:
                e.reference = lambda: ref(xa, bs, canonical, layout)
    return e


def expect_repeats(e: Expect, repeats):
    """The entries of ``repeats`` as ints, or None when they are wrong."""
    if isinstance(repeats, np.ndarray):
        entries = [int(r) for r in repeats.reshape(-1)] if repeats.dtype.kind in "iu" else None
        if repeats.ndim > 1:
            e.fail("repeats array of rank > 1", ValueError)
            entries = None
        if repeats.dtype.kind not in "iu":
            e.fail("repeats array not of integers", TypeError)
    elif is_integer(repeats):
        entries = [int(repeats)]
    elif _iterable(repeats):
        # Any iterable is taken as a sequence, as numpy.tile does (a bytes
        # object is a sequence of small ints, an empty string no repeats).
        entries = []
        for item in list(repeats):
            if isinstance(item, (list, tuple, np.ndarray)):
                e.fail("nested repeats", ValueError, TypeError)
                entries = None
            elif not is_integer(item):
                e.fail("repeats entry not an integer", TypeError)
                entries = None
            elif entries is not None:
                entries.append(int(item))
        if entries is None:
            # Negative entries among the others may be reported first.
            if any(is_integer(i) and int(i) < 0 for i in list(repeats)):
                e.fail("negative repeats entry", ValueError)
    else:
        e.fail("repeats not an integer or a sequence", TypeError)
        entries = None
    if entries is not None and any(r < 0 for r in entries):
        e.fail("negative repeats entry", ValueError)
        entries = None
    return entries


def _iterable(value) -> bool:
    try:
        iter(value)
    except TypeError:
        return False
    return True


def expect_tile(x, repeats, out, num_threads) -> Expect:
    e = Expect()
    try:
        xa = np.asarray(x)
    except Exception as exc:
        e.fail("np.asarray(x) fails", type(exc))
        return e
    expect_threads(e, num_threads)
    entries = expect_repeats(e, repeats)
    result_shape = None
    if entries is not None:
        reps = tuple(entries)
        if len(reps) < xa.ndim:
            reps = (1,) * (xa.ndim - len(reps)) + reps
        src_shape = (1,) * (len(reps) - xa.ndim) + xa.shape
        result_shape = tuple(r * s for r, s in zip(reps, src_shape))
    e.result_shape = result_shape
    expect_out(e, out, xa, result_shape)
    if result_shape is not None and expect_result_size(e, result_shape, xa.dtype, out):
        if e.may_succeed:
            if xa.dtype.itemsize == 0 or math.prod(result_shape) == 0:
                # numpy.tile would first repeat the (maybe huge) input
                e.reference = lambda: np.empty(result_shape, xa.dtype)
            else:
                e.reference = lambda: np.tile(xa, reps)
    return e


# ---------------------------------------------------------------- buffers

def snapshot(arr: np.ndarray):
    """Everything a buffer holds, in a form that compares by value and
    identity (object items compare by identity: their pointers)."""
    if arr.size == 0:
        return ("empty", arr.shape, arr.dtype)  # (tolist of shape (2**46, 0) is huge)
    if arr.dtype.kind == "T":
        return ("T", arr.shape, arr.tolist())
    if arr.dtype.names is not None:
        return ("fields", arr.shape, tuple(snapshot(arr[name]) for name in arr.dtype.names))
    return (arr.dtype.str, arr.shape, np.ascontiguousarray(arr).tobytes())


def same_items(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and snapshot(a) == snapshot(b)


def fill(arr: np.ndarray, rng: np.random.Generator) -> None:
    """Random contents for every dtype (unique objects for object items)."""
    if arr.size == 0 or arr.dtype.itemsize == 0:
        return
    dtype = arr.dtype
    if dtype.names is not None:
        for name in dtype.names:
            fill(arr[name], rng)
        return
    if dtype.kind == "T":
        alphabet = ["a", "b", "Z", "é", "😀", "\0", " "]
        strings = []
        for _ in range(arr.size):
            if getattr(dtype, "na_object", "no") is None and rng.random() < 0.2:
                strings.append(None)
            else:
                n = int(rng.choice([0, 1, 3, 15, 16, 40]))
                strings.append("".join(rng.choice(alphabet, size=n)))
        arr[...] = np.array(strings, dtype=dtype).reshape(arr.shape)
        return
    if dtype.kind == "O":
        flat = np.empty(arr.size, dtype=object)
        for i in range(arr.size):
            kind = i % 4
            flat[i] = (f"obj{i}-{rng.integers(1 << 30)}" if kind == 0 else
                       10**20 + int(rng.integers(1 << 30)) if kind == 1 else
                       None if kind == 2 else (i, "t"))
        arr[...] = flat.reshape(arr.shape)
        return
    if dtype.subdtype is not None:
        fill(arr.view(dtype.subdtype[0]).reshape(arr.shape + dtype.subdtype[1]), rng)
        return
    raw = rng.integers(0, 256, size=arr.size * dtype.itemsize, dtype=np.uint8)
    if dtype.kind == "b":
        raw &= 1
    arr[...] = np.frombuffer(raw.tobytes(), dtype=dtype).reshape(arr.shape)


# ---------------------------------------------------------------- the check

def _flat_view(flat, offset, step, shape):
    """``shape`` items of the 1-D ``flat`` from ``offset``, every ``step`` (may be < 0)."""
    n = math.prod(shape)
    a = abs(step)
    v = flat[offset:offset + (n - 1) * a + 1:a] if n else flat[offset:offset]
    if step < 0:
        v = v[::-1]
    return v.reshape(shape)


@dataclass
class Case:
    """One call: ``fn(x, *args, out=..., num_threads=...)`` and the buffers
    whose bytes must only change where ``out`` lies (on success)."""

    op: str
    x: Any
    args: tuple
    out: Any = None
    num_threads: Any = None
    buffers: list = field(default_factory=list)
    # out_view(buffer) -> the same view as ``out`` on a copy of out's buffer
    out_buffer: Optional[np.ndarray] = None
    out_view: Optional[Callable[[np.ndarray], np.ndarray]] = None

    def expect(self) -> Expect:
        if self.op == "tile":
            return expect_tile(self.x, self.args[0], self.out, self.num_threads)
        return expect_block(self.op, self.x, *self.args, self.out, self.num_threads)

    def call(self):
        fn = getattr(fb, self.op)
        kwargs = {}
        if self.out is not None:
            kwargs["out"] = self.out
        if self.num_threads is not None:
            kwargs["num_threads"] = self.num_threads
        return fn(self.x, *self.args, **kwargs)

    def share_one_buffer(self, result_shape, x_off: int, x_step: int, out_off: int,
                         out_step: int, rng: np.random.Generator) -> None:
        """Make ``x`` (same values) and ``out`` views of one flat buffer:
        ``x`` from item ``x_off`` every ``x_step`` items, ``out`` from
        ``out_off`` every ``out_step`` (overlapping, interleaved or apart)."""
        x = np.asarray(self.x)
        length = max(x_off + max(x.size - 1, 0) * abs(x_step) + 1,
                     out_off + max(math.prod(result_shape) - 1, 0) * abs(out_step) + 1)
        flat = np.empty(length, dtype=x.dtype)
        fill(flat, rng)
        self.x = _flat_view(flat, x_off, x_step, x.shape)
        self.x[...] = x
        self.buffers[:] = [flat]
        self.out = _flat_view(flat, out_off, out_step, result_shape)
        self.out_buffer = flat
        self.out_view = lambda buf: _flat_view(buf, out_off, out_step, result_shape)

    def __repr__(self) -> str:
        def describe(a):
            if isinstance(a, np.ndarray):
                return f"ndarray(shape={a.shape}, dtype={a.dtype}, strides={a.strides})"
            return repr(a)
        return (f"fb.{self.op}({describe(self.x)}, {', '.join(map(repr, self.args))}, "
                f"out={describe(self.out)}, num_threads={self.num_threads!r})")


def check(case: Case) -> str:
    """Run ``case`` and assert the documented behaviour; return the outcome name."""
    e = case.expect()
    expected = e.reference() if e.reference is not None else None
    before = [(np.copy(b), snapshot(b)) for b in case.buffers]
    try:
        result = case.call()
    except Exception as exc:
        outcome = type(exc).__name__
        COUNTS[(case.op, outcome)] += 1
        if not any(isinstance(exc, t) for t in e.errors):
            raise AssertionError(f"{case!r} raised {outcome}: {exc}; expected {e}") from exc
        # An error path is one fault and the exception it raised; calls
        # with several faults are counted apart.
        reason = e.reasons[0] if len(e.reasons) == 1 else "several faults"
        ERROR_PATHS[(case.op, outcome, reason)] += 1
        for buffer, (_, snap) in zip(case.buffers, before):
            assert snapshot(buffer) == snap, f"{case!r} raised {outcome} but wrote to a buffer"
        return outcome
    COUNTS[(case.op, "ok")] += 1
    assert e.may_succeed, f"{case!r} returned a result; expected {e}"
    assert isinstance(result, np.ndarray), type(result)
    xa = case.x if isinstance(case.x, np.ndarray) else np.asarray(case.x)
    assert result.dtype == xa.dtype, (result.dtype, xa.dtype)
    assert result.shape == expected.shape, (result.shape, expected.shape, case)
    assert same_items(result, expected), f"{case!r}: wrong items"
    if case.out is not None:
        assert result is case.out, "out given but another array returned"
    else:
        assert result.flags.c_contiguous and result.flags.writeable
        if result.size and xa.size:
            assert not np.shares_memory(result, xa), "result shares memory with x"
    for buffer, (copy, snap) in zip(case.buffers, before):
        if case.out is not None and buffer is case.out_buffer:
            # Only out's items may change, and only to the result.
            image = np.copy(copy)
            case.out_view(image)[...] = expected
            assert snapshot(buffer) == snapshot(image), f"{case!r} wrote outside out"
        else:
            assert snapshot(buffer) == snap, f"{case!r} wrote to a buffer it must only read"
    return "ok"
