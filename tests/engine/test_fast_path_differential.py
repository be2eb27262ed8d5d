"""The fast path (``_fastpath``) is exactly as strict as the general path.

Seeded random calls of every front door, valid and invalid (argument types
and spellings, dtypes, strides, alignment, ``out=`` shape, dtype, layout and
overlap, thread counts), each run with the fast path off, then on twice (the
first call of a key is prepared and stored, the second runs from the
cache): the same result bytes, shape and dtype, or the same exception type
and message, every time."""
import numpy as np
import pytest

import fastblock as fb
from fastblock._call import fastpath as _fastpath

CASES_PER_OPERATOR = 400

DTYPES = ["u1", "?", "i2", ">i4", "f4", "f8", "c16", "V3", "S5", [("a", "u1"), ("b", "<f4")]]


def _rng_choice(rng, options):
    return options[int(rng.integers(len(options)))]


def _place(rng, shape, dtype):
    """An array of ``shape`` with distinct bytes, laid out at random: C,
    Fortran, reversed, stepped, permuted or at an odd byte offset."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    raw = rng.integers(0, 256, size=max(n, 1) * dtype.itemsize + 64, dtype=np.uint8)
    kind = _rng_choice(rng, ["c", "c", "f", "reversed", "stepped", "permuted", "unaligned"])
    if kind == "unaligned":
        start = int(rng.integers(1, 8))
        return raw[start:start + n * dtype.itemsize].view(dtype).reshape(shape)
    x = raw[:n * dtype.itemsize].view(dtype).reshape(shape)
    if kind == "f":
        return np.asfortranarray(x)
    if kind == "reversed" and x.ndim:
        big = np.ascontiguousarray(x[(slice(None, None, -1),) * x.ndim])
        return big[(slice(None, None, -1),) * x.ndim]
    if kind == "stepped" and x.ndim:
        big = np.zeros(tuple(2 * s for s in shape), dtype)
        view = big[(slice(None, None, 2),) * x.ndim]
        view[...] = x
        return view
    if kind == "permuted" and x.ndim > 1:
        order = rng.permutation(x.ndim)
        return np.transpose(np.ascontiguousarray(np.transpose(x, order)), np.argsort(order))
    return x


def _pick(rng, valid, invalid, p_invalid=0.12):
    """A valid value mostly, an invalid one now and then."""
    return _rng_choice(rng, invalid if rng.random() < p_invalid else valid)


def _input(rng, shape):
    roll = rng.random()
    if roll < 0.03:
        x = np.empty(shape, object)
        x[...] = 7
        return x
    if roll < 0.05:
        return np.zeros(shape, np.float32).tolist()
    if roll < 0.07 and hasattr(np.dtypes, "StringDType"):
        return np.zeros(shape, np.dtypes.StringDType())
    return _place(rng, shape, _rng_choice(rng, DTYPES))


def _shape(rng, rank, multiple=1):
    return tuple(int(_rng_choice(rng, [1, 2, 3, 4, 6])) * (multiple if rng.random() < 0.7 else 1)
                 for _ in range(rank))


FACTORS = [1, 2, 2, 2, 3]
NOT_FACTORS = [np.int64(2), True, 0, -1, 2.0, "2", None]
THREADS = [None, None, None, 1, 2, 3]
NOT_THREADS = [0, -1, 2.0, True, np.int64(2)]


def _block(rng):
    bs = _pick(rng, FACTORS, NOT_FACTORS)
    mode = _pick(rng, ["blocks_first", "DCR", "crd", "depth_first", "CRD"],
                 ["Depth_First", "nope", None])
    fmt = _pick(rng, ["channels_first", "channels_last", "NCHW", "nhwc", "NCW", "NDHWC",
                      "NCHW_VECT_C"], ["Nchw", "bad", 3])
    rank = 5 if fmt == "NCHW_VECT_C" else int(_rng_choice(rng, [2, 3, 4, 4, 5]))
    shape = _shape(rng, rank, 2)
    if fmt == "NCHW_VECT_C" and rng.random() < 0.8:
        shape = shape[:4] + (4,)
    return shape, (bs, mode, fmt), {}


def _transpose(rng):
    rank = int(_rng_choice(rng, [0, 1, 2, 3, 4, 5]))
    order = [int(a) for a in rng.permutation(rank)]
    axes = _pick(rng, ["none", "tuple", "tuple", "list", "negative"],
                 ["short", "repeated", "array", "float"])
    if axes == "none":
        value = None
    elif axes == "tuple":
        value = tuple(order)
    elif axes == "list":
        value = list(order)
    elif axes == "negative":
        value = tuple(a - rank for a in order)
    elif axes == "short":
        value = tuple(order[1:])
    elif axes == "repeated":
        value = tuple([0] * rank)
    elif axes == "array":
        value = np.array(order, dtype=np.int64)
    else:
        value = tuple(float(a) for a in order)
    return _shape(rng, rank), (value,), {}


def _pixel(rng):
    r = _pick(rng, FACTORS, NOT_FACTORS)
    fmt = _pick(rng, ["channels_first", "channels_first", "channels_last", "CHANNELS_LAST"],
                ["nchw", None])
    return _shape(rng, int(_rng_choice(rng, [2, 3, 4, 5])), 2), (r, fmt), {}


def _vector(rng, entries):
    kind = _pick(rng, ["tuple", "list"], ["array", "float"])
    if kind == "tuple":
        return tuple(entries)
    if kind == "list":
        return list(entries)
    if kind == "array":
        return np.array(entries)
    return [float(e) for e in entries]


def _batch(rng):
    rank = int(_rng_choice(rng, [1, 2, 3, 4]))
    block = [1] + [int(_rng_choice(rng, [1, 2, 3])) for _ in range(rank - 1)]
    if rng.random() < 0.1 and rank > 1:
        block[0] = 2
    begin = [0] + [int(_rng_choice(rng, [0, 0, 1, 2])) for _ in range(rank - 1)]
    end = [0] + [int(_rng_choice(rng, [0, 0, 1])) for _ in range(rank - 1)]
    if rng.random() < 0.1:
        end = end[:-1]
    shape = _shape(rng, rank, 2)
    return shape, (_vector(rng, block), _vector(rng, begin), _vector(rng, end)), {}


def _batch_back(rng):
    shape, args, kw = _batch(rng)
    if len(shape) and rng.random() < 0.7:
        blocks = args[0]
        try:
            n = int(np.prod([int(b) for b in blocks]))
            shape = (shape[0] * n,) + shape[1:]
        except (TypeError, ValueError):
            pass
    return shape, args, kw


def _tile(rng):
    rank = int(_rng_choice(rng, [0, 1, 2, 3]))
    count = max(0, rank + int(rng.integers(-1, 2)))
    entries = [int(_rng_choice(rng, [1, 2, 3, 0])) for _ in range(count)]
    kind = _pick(rng, ["tuple", "list", "int"], ["array", "bad"])
    if kind == "int":
        reps = entries[0] if entries else 2
    elif kind == "array":
        reps = np.array(entries, dtype=np.int32)
    elif kind == "bad":
        reps = _rng_choice(rng, [(2, 1.0), (-1,), ((1, 2),), True, "2"])
    else:
        reps = tuple(entries) if kind == "tuple" else list(entries)
    return _shape(rng, rank), (reps,), {}


PATTERNS = {
    "rearrange": [
        ("a b -> b a", 2, {}), ("b c h w -> b h w c", 4, {}),
        ("b c (h h2) (w w2) -> b (h2 w2 c) h w", 4, {"h2": 2, "w2": 2}),
        ("... c -> c ...", 3, {}), ("a b -> (a b)", 2, {}), ("(a b) c -> a b c", 2, {"a": 2}),
        ("a b -> a", 2, {}), ("a b -> b a c", 2, {}), ("a b -> b a", 3, {}),
        ("a b -> b a", 2, {"a": 5}), ("a b -> b a", 2, {"a": 2.0}), (3, 2, {}),
    ],
    "repeat": [
        ("h w -> (r h) w", 2, {"r": 2}), ("h w -> h w 3", 2, {}), ("w -> h w", 1, {"h": 2}),
        ("b c -> b c r", 2, {"r": 0}), ("h w -> h w r", 2, {}), ("h w -> (h w)", 2, {}),
        ("h w -> h w r", 2, {"r": True}),
    ],
}


def _pattern(operation):
    def draw(rng):
        pattern, rank, lengths = _rng_choice(rng, PATTERNS[operation])
        return _shape(rng, rank, 2), (pattern,), dict(lengths)
    return draw


OPERATORS = {
    "space_to_depth": _block, "depth_to_space": _block, "transpose": _transpose,
    "pixel_shuffle": _pixel, "pixel_unshuffle": _pixel, "space_to_batch": _batch,
    "batch_to_space": _batch_back, "tile": _tile, "rearrange": _pattern("rearrange"),
    "repeat": _pattern("repeat"),
}


def _expected_shape(name, x, args, kw):
    """The general path's result shape, or None where it raises."""
    with _fastpath.enabled(False):
        try:
            return getattr(fb, name)(x, *args, **kw).shape
        except Exception:
            return None


def _outs(rng, x, shape):
    """A factory of ``out`` for each run (the same start each time), drawn
    among good and bad ones; None for no ``out``."""
    kind = _pick(rng, ["none", "none", "fresh", "fortran"],
                 ["strided", "wrong_shape", "wrong_dtype", "read_only", "overlap", "list"], 0.3)
    if kind == "none" or shape is None or not isinstance(x, np.ndarray):
        return None
    dtype = x.dtype

    def make():
        if kind == "fresh":
            return np.full(shape, 0, dtype) if dtype.kind != "V" else np.zeros(shape, dtype)
        if kind == "fortran":
            return np.zeros(shape, dtype, order="F")
        if kind == "strided":
            return np.zeros(tuple(2 * s for s in shape), dtype)[(slice(None, None, 2),) * len(shape)]
        if kind == "wrong_shape":
            return np.zeros(tuple(shape) + (1,), dtype)
        if kind == "wrong_dtype":
            return np.zeros(shape, "f8" if dtype != np.float64 else "f4")
        if kind == "read_only":
            out = np.zeros(shape, dtype)
            out.flags.writeable = False
            return out
        if kind == "overlap":
            # A view of x's own buffer, where x's buffer is as large.
            base = x if x.base is None else x.base
            n = int(np.prod(shape))
            if (isinstance(base, np.ndarray) and not dtype.hasobject and base.flags.c_contiguous
                    and base.nbytes >= n * dtype.itemsize):
                return base.reshape(-1).view(np.uint8)[:n * dtype.itemsize].view(dtype).reshape(shape)
            return np.zeros(shape, dtype)
        return np.zeros(shape, dtype).tolist()
    return make


def _outcome(name, x, args, kw, make_out, threads):
    out = None if make_out is None else make_out()
    try:
        result = getattr(fb, name)(x, *args, out=out, num_threads=threads, **kw)
    except Exception as error:
        return ("raised", type(error), str(error))
    if make_out is not None and isinstance(out, np.ndarray):
        assert result is out
    return ("result", result.shape, result.dtype, result.tobytes())


@pytest.mark.parametrize("name", list(OPERATORS))
def test_fast_and_general_paths_agree(name):
    rng = np.random.default_rng([35, list(OPERATORS).index(name)])
    hits_before = _fastpath.stats()["hits"]
    for case in range(CASES_PER_OPERATOR):
        shape, args, kw = OPERATORS[name](rng)
        x = _input(rng, shape)
        threads = _pick(rng, THREADS, NOT_THREADS)
        make_out = _outs(rng, x, _expected_shape(name, x, args, kw))
        with _fastpath.enabled(False):
            general = _outcome(name, x, args, kw, make_out, threads)
        for attempt in ("first", "cached"):
            fast = _outcome(name, x, args, kw, make_out, threads)
            assert fast == general, (case, attempt, shape, args, kw, threads)
    # The draws must reach the cache, not only decline it.
    assert _fastpath.stats()["hits"] - hits_before >= CASES_PER_OPERATOR // 20
