"""fastblock.dask against the in-memory functions and the documented formulas.

Every case is computed on Dask's threaded scheduler; a subset again on a
``dask.distributed.LocalCluster`` with two worker processes, started and
closed by this module (marked slow: ci/slow_tests.sh runs them).
"""
import inspect
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

import dask  # noqa: E402

import fastblock as fb  # noqa: E402
import fastblock.dask as fbd  # noqa: E402
from reference import depth_to_space_ref, space_to_depth_ref  # noqa: E402
from draws import drawn  # noqa: E402

MODES = ["blocks_first", "depth_first"]
# (data_format, rank)
LAYOUTS = [
    ("channels_first", 3), ("channels_first", 4), ("channels_first", 5),
    ("channels_last", 3), ("channels_last", 4), ("channels_last", 5),
    ("NCHW_VECT_C", 5),
]
CHUNKINGS = ["aligned", "misaligned", "single", "small"]

DTYPES = [
    np.bool_, np.int8, np.uint16, np.int32, np.int64, np.float16, np.float32,
    np.float64, np.complex64, np.complex128, np.longdouble, ">i4", "M8[s]", "m8[ms]",
    "S3", "U2", "V3", [("a", "<i2"), ("b", "<f8")], object,
    [("name", object), ("n", "<i4")],
]


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------

def make_values(size, dtype):
    dtype = np.dtype(dtype)
    i = np.arange(size)
    if dtype == object:
        return np.array([f"s{k}" for k in i], dtype=object)
    if dtype.names:
        out = np.zeros(size, dtype=dtype)
        for name in dtype.names:
            field = dtype.fields[name][0]
            out[name] = [f"f{k}" for k in i] if field == object else i % 1000
        return out
    if dtype.kind == "b":
        return (i % 3 == 0)
    if dtype.kind in "SUV":
        return np.array([str(k % 997).encode() if dtype.kind != "U" else str(k % 97)
                         for k in i]).astype(dtype)
    if dtype.kind in "Mm":
        return i.astype(dtype)
    if dtype.kind == "c":
        return (i + 1j * (i % 7)).astype(dtype)
    if dtype.kind == "f":
        return (i % 1000).astype(dtype)
    return (i % np.iinfo(dtype).max).astype(dtype)


def axes_of(data_format, rank):
    """(channel axis, spatial axes, lane axis or None) of a physical shape."""
    if data_format == "channels_first":
        return 1, tuple(range(2, rank)), None
    if data_format == "channels_last":
        return rank - 1, tuple(range(1, rank - 1)), None
    return 1, (2, 3), 4


def physical(batch, channel_axis_len, spatial, data_format):
    if data_format == "channels_first":
        return (batch, channel_axis_len, *spatial)
    if data_format == "channels_last":
        return (batch, *spatial, channel_axis_len)
    return (batch, channel_axis_len, *spatial, 4)


def make_input(op, data_format, rank, bs, dtype):
    """A small valid input; the channel axis counts groups for NCHW_VECT_C."""
    k = 2 if data_format == "NCHW_VECT_C" else rank - 2
    m = bs ** k
    base = [3, 2, 2][:k]
    if op == "space_to_depth":
        spatial = [bs * s for s in base]
        channels = 2 if data_format == "NCHW_VECT_C" else 3  # groups or channels
    else:
        spatial = base
        channels = 2 * m if data_format == "NCHW_VECT_C" else 3 * m
    shape = physical(2, channels, spatial, data_format)
    return make_values(int(np.prod(shape)), dtype).reshape(shape)


def chunks_for(kind, op, mode, data_format, shape, bs):
    """Chunk sizes per axis for one of CHUNKINGS."""
    rank = len(shape)
    channel, spatial, lane = axes_of(data_format, rank)
    m = bs ** len(spatial)
    if kind == "single":
        return tuple(-1 for _ in shape)
    if kind == "small":
        return tuple(1 for _ in shape)
    if kind.startswith("coarse"):  # few blocks: split the batch and the first spatial axis
        chunks = [-1] * rank
        first = spatial[0]
        if kind == "coarse-aligned":
            chunks[0] = 1
            chunks[first] = bs if op == "space_to_depth" else 2
            if mode == "depth_first" and m > 1:
                chunks[channel] = 1 if op == "space_to_depth" else m
        else:
            chunks[first] = bs + 1 if op == "space_to_depth" else 2
            chunks[channel] = 2 if op == "space_to_depth" else (m - 1 if m > 2 else 3)
            if lane is not None:
                chunks[lane] = 3
        return tuple(chunks)
    chunks = [1] * rank
    if kind == "aligned":
        for a in spatial:
            chunks[a] = bs if op == "space_to_depth" else 2
        if mode == "blocks_first":
            chunks[channel] = -1
        else:
            chunks[channel] = 1 if op == "space_to_depth" else m
        if lane is not None:
            chunks[lane] = -1
    else:  # misaligned: spatial chunks off the block grid, lanes split
        for a in spatial:
            chunks[a] = bs + 1 if op == "space_to_depth" else 3
        chunks[channel] = 2 if op == "space_to_depth" else max(1, m - 1) if m > 2 else 3
        if lane is not None:
            chunks[lane] = 3
    return tuple(chunks)


def same(a, b):
    assert a.shape == b.shape
    assert a.dtype == b.dtype
    if a.dtype.hasobject:
        assert a.tolist() == b.tolist()
    else:
        assert a.tobytes() == b.tobytes()


def _check_block(block, block_info=None):
    expected = tuple(block_info[None]["chunk-shape"])
    assert block.shape == expected, (block.shape, expected)
    return block


def checked(y):
    """``y`` with every computed block checked against the declared chunks."""
    return y.map_blocks(_check_block, dtype=y.dtype, meta=y._meta)


def has_rechunk(y):
    return any(name.startswith("rechunk") for name in y.dask.layers)


OPS = {
    "space_to_depth": (fbd.space_to_depth, fb.space_to_depth, space_to_depth_ref),
    "depth_to_space": (fbd.depth_to_space, fb.depth_to_space, depth_to_space_ref),
}


def expected_out_chunks(op, mode, data_format, in_chunks, bs):
    """The docstring's rules, from the (already aligned) input chunks."""
    channel, spatial, lane = axes_of(data_format, len(in_chunks))
    m = bs ** len(spatial)
    out = list(in_chunks)
    for a in spatial:
        out[a] = tuple(c // bs if op == "space_to_depth" else c * bs for c in in_chunks[a])
    total = sum(in_chunks[channel])
    if mode == "blocks_first" and m > 1:
        out[channel] = (total * m if op == "space_to_depth" else total // m,)
    else:
        out[channel] = tuple(c * m if op == "space_to_depth" else c // m
                             for c in in_chunks[channel])
    if lane is not None:
        out[lane] = (4,)
    return tuple(out)


def run_case(op, mode, data_format, rank, bs, chunking, dtype, compute):
    lazy, eager, ref = OPS[op]
    a = make_input(op, data_format, rank, bs, dtype)
    x = da.from_array(a, chunks=chunks_for(chunking, op, mode, data_format, a.shape, bs))
    y = lazy(x, bs, mode, data_format)
    assert y.dtype == a.dtype and y.shape == eager(a, bs, mode, data_format).shape
    result = compute(checked(y))
    same(result, eager(a, bs, mode, data_format))
    if not a.dtype.hasobject:
        same(result, ref(a, bs, mode, data_format))
    return x, y


# --------------------------------------------------------------------------
# threaded scheduler: every mode, layout, rank and chunking
# --------------------------------------------------------------------------

def threaded(y):
    return y.compute(scheduler="threads")


# A seeded draw (tests/draws.py): every operator in every mode, layout and
# chunking, and both dtypes, on every run; the rest of the product sampled.
@drawn(40, {"op": list(OPS), "mode": MODES, "data_format,rank": LAYOUTS, "chunking": CHUNKINGS,
            "dtype": [np.int16, object]},
       cover=[("op", "mode"), ("op", "data_format,rank"), ("op", "chunking"), ("dtype", "chunking")])
def test_matches_in_memory(op, mode, data_format, rank, chunking, dtype):
    x, y = run_case(op, mode, data_format, rank, 2, chunking, dtype, threaded)
    if chunking in ("aligned", "single"):
        assert not has_rechunk(y), list(y.dask.layers)
        assert y.chunks == expected_out_chunks(op, mode, data_format, x.chunks, 2)
    if chunking == "misaligned":
        assert has_rechunk(y)


@drawn(12, {"op": list(OPS), "mode": ["DCR", "crd"],
            "data_format,rank": [("channels_first", 3), ("channels_last", 4), ("NCHW_VECT_C", 5)],
            "chunking": ["aligned", "misaligned"], "bs": [1, 3]},
       cover=[("op", "mode"), ("op", "data_format,rank"), ("data_format,rank", "bs"),
              ("chunking", "bs")])
def test_other_block_sizes(op, mode, data_format, rank, chunking, bs):
    x, y = run_case(op, mode, data_format, rank, bs, chunking, np.float32, threaded)
    if bs == 1 and data_format != "NCHW_VECT_C":  # identity: every chunking is kept
        assert not has_rechunk(y) and y.chunks == x.chunks
    if bs == 1 and data_format == "NCHW_VECT_C":  # only the lane axis is made whole
        assert y.chunks == x.chunks[:4] + ((4,),)


# Every dtype on every run, through an operator drawn.
@drawn(20, op=list(OPS), dtype=DTYPES)
def test_dtypes(op, dtype):
    run_case(op, "blocks_first", "channels_first", 4, 2, "misaligned", dtype, threaded)
    run_case(op, "depth_first", "NCHW_VECT_C", 5, 2, "aligned", dtype, threaded)


def test_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    for dtype in (ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn):
        a = np.arange(2 * 3 * 4 * 6, dtype=np.float32).reshape(2, 3, 4, 6).astype(dtype)
        y = fbd.space_to_depth(da.from_array(a, chunks=(1, 2, 2, 3)), 2, "depth_first")
        same(threaded(y), fb.space_to_depth(a, 2, "depth_first"))


def test_round_trip_and_layout_names():
    a = make_values(2 * 12 * 6 * 4, np.int32).reshape(2, 6, 4, 12)
    x = da.from_array(a, chunks=(1, 3, 2, 5))
    for mode in ("blocks_first", "depth_first", "DCR", "CRD"):
        y = fbd.depth_to_space(fbd.space_to_depth(x, 2, mode, "NHWC"), 2, mode, "NHWC")
        same(threaded(y), a)


def test_strided_and_fortran_blocks():
    a = np.asfortranarray(make_values(2 * 3 * 8 * 8, np.float64).reshape(2, 3, 8, 8))
    x = da.from_array(a[:, ::-1, :, ::-1], chunks=(1, 1, 4, 4))
    y = fbd.space_to_depth(x, 2)
    same(threaded(y), fb.space_to_depth(a[:, ::-1, :, ::-1], 2))


# --------------------------------------------------------------------------
# chunk plans and graphs
# --------------------------------------------------------------------------

def test_aligned_chunks_exact():
    x = da.zeros((2, 5, 8, 12), dtype=np.uint8, chunks=((1, 1), (2, 3), (4, 4), (6, 2, 4)))
    y = fbd.space_to_depth(x, 2, "depth_first")
    assert not has_rechunk(y)
    assert y.chunks == ((1, 1), (8, 12), (2, 2), (3, 1, 2))
    assert [n.split("-")[0] for n in y.dask.layers] == ["zeros_like", "space_to_depth"]

    y = fbd.space_to_depth(x.rechunk({1: -1}), 2, "blocks_first")
    assert y.chunks == ((1, 1), (20,), (2, 2), (3, 1, 2))

    # depth_to_space: depth_first keeps channel chunks that are multiples of M.
    x = da.zeros((2, 16, 3, 5), dtype=np.uint8, chunks=((2,), (4, 8, 4), (1, 2), (5,)))
    y = fbd.depth_to_space(x, 2, "CRD")
    assert not has_rechunk(y)
    assert y.chunks == ((2,), (1, 2, 1), (2, 4), (10,))
    y = fbd.depth_to_space(x, 2, "DCR")
    assert has_rechunk(y) and y.chunks == ((2,), (4,), (2, 4), (10,))

    # channels_last, rank 3; NCHW_VECT_C groups.
    x = da.zeros((3, 9, 7), chunks=((3,), (3, 6), (2, 5)))
    y = fbd.space_to_depth(x, 3, "depth_first", "NWC")
    assert not has_rechunk(y) and y.chunks == ((3,), (1, 2), (6, 15))
    x = da.zeros((1, 8, 2, 3, 4), chunks=((1,), (4, 4), (1, 1), (3,), (4,)))
    y = fbd.depth_to_space(x, 2, "depth_first", "NCHW_VECT_C")
    assert not has_rechunk(y) and y.chunks == ((1,), (1, 1), (2, 2), (6,), (4,))
    y = fbd.space_to_depth(fbd.depth_to_space(x, 2, "CRD", "NCHW_VECT_C"), 2, "CRD",
                           "NCHW_VECT_C")
    assert not has_rechunk(y) and y.chunks == x.chunks
    same(threaded(y), np.zeros(x.shape))


def test_misaligned_chunks_are_rounded_to_nearest():
    x = da.zeros((2, 4, 12, 12), chunks=((2,), (4,), (3, 5, 4), (1,) * 12))
    src, dst = fbd.space_to_depth_chunks(x.chunks, 2, "depth_first")
    assert src[2] == (4, 4, 4) and src[3] == (2,) * 6
    y = fbd.space_to_depth(x, 2, "depth_first")
    assert y.chunks == dst == ((2,), (16,), (2, 2, 2), (1,) * 6)
    # Only the axes that need it are rechunked.
    x = da.zeros((2, 4, 12, 12), chunks=((1, 1), (4,), (3, 5, 4), (6, 6)))
    src, _ = fbd.space_to_depth_chunks(x.chunks, 2, "depth_first")
    assert src == ((1, 1), (4,), (4, 4, 4), (6, 6))
    # depth_to_space depth_first channel boundaries go to multiples of M.
    src, dst = fbd.depth_to_space_chunks(((1,), (3, 3, 5, 5), (2,), (2,)), 2, "depth_first")
    assert src[1] == (4, 4, 4, 4) and dst[1] == (1, 1, 1, 1)
    src, dst = fbd.depth_to_space_chunks(((1,), (2, 9, 5), (2,), (2,)), 2, "depth_first")
    assert src[1] == (4, 8, 4) and dst[1] == (1, 2, 1)
    assert fbd.depth_to_space_chunks(((1,), (16,), (2,), (2,)), 2, "DCR")[0][1] == (16,)
    # The lane axis of NCHW_VECT_C is made whole.
    src, dst = fbd.space_to_depth_chunks(((1,), (1, 1), (2,), (2,), (1, 3)), 2, "CRD",
                                         "NCHW_VECT_C")
    assert src[4] == (4,) and dst == ((1,), (4, 4), (1,), (1,), (4,))


def test_zero_size_and_unknown_batch():
    a = np.zeros((0, 3, 4, 4))
    y = fbd.space_to_depth(da.from_array(a), 2)
    same(threaded(y), fb.space_to_depth(a, 2))
    a = make_values(4 * 3 * 4 * 4, np.int64).reshape(4, 3, 4, 4)
    x = da.from_array(a, chunks=(2, 3, 4, 4))
    x = x[x[:, 0, 0, 0] % 2 == 0]  # unknown batch chunks
    assert np.isnan(x.shape[0])
    y = fbd.space_to_depth(x, 2, "depth_first")
    same(threaded(y), fb.space_to_depth(a[a[:, 0, 0, 0] % 2 == 0], 2, "depth_first"))
    x = da.from_array(a, chunks=2)
    x = da.moveaxis(x[x[:, 0, 0, 0] >= 0], 0, 3)  # a spatial axis of unknown length
    with pytest.raises(ValueError, match="known chunk"):
        fbd.space_to_depth(x, 2)


# --------------------------------------------------------------------------
# errors and signatures
# --------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ((2, 3, 5, 4), 2, "blocks_first", "channels_first"),   # spatial not divisible
    ((2, 3, 4), 0, "blocks_first", "channels_first"),      # block_size < 1
    ((2, 3, 4, 4), True, "blocks_first", "channels_first"),  # bool block_size
    ((2, 3, 4, 4), 2.0, "blocks_first", "channels_first"),   # float block_size
    ((2, 3, 4, 4), 2, "sideways", "channels_first"),       # mode
    ((2, 3, 4, 4), 2, "blocks_first", "NCDHW"),            # rank mismatch
    ((2, 3), 2, "blocks_first", "channels_first"),         # rank < 3
    ((2, 3, 4, 4, 3), 2, "blocks_first", "NCHW_VECT_C"),   # lanes != 4
    ((2, 6, 4, 4), 2, "blocks_first", "channels_first"),   # d2s: 4 does not divide 6
    ((1, 1, 2, 2, 4), 2, "depth_first", "NCHW_VECT_C"),    # d2s: result channels 1
])
def test_errors_match_in_memory(args):
    shape, bs, mode, fmt = args
    a = np.zeros(shape)
    for lazy, eager, _ in OPS.values():
        try:
            eager(a, bs, mode, fmt)
        except (ValueError, TypeError) as e:
            with pytest.raises(type(e)):
                lazy(da.from_array(a), bs, mode, fmt)
        else:
            lazy(da.from_array(a), bs, mode, fmt)


def test_tile_errors_and_out():
    x = da.zeros((2, 3), chunks=1)
    for reps, error in [((-1,), ValueError), ((1.0,), TypeError), ((True,), TypeError),
                        (np.ones((1, 2), int), ValueError), (np.array([1.0]), TypeError)]:
        with pytest.raises(error):
            fbd.tile(x, reps)
    with pytest.raises(TypeError):
        fbd.tile(x, 2, out=np.zeros((2, 6)))
    with pytest.raises(TypeError):
        fbd.space_to_depth(da.zeros((1, 1, 2, 2)), 2, out=np.zeros((1, 4, 1, 1)))
    with pytest.raises(ValueError):
        fbd.tile(x, 2, num_threads=0)
    with pytest.raises((ValueError, MemoryError)):
        fbd.tile(x, (2 ** 62, 2 ** 62))


def test_signatures_match():
    for name in ("space_to_depth", "depth_to_space", "tile", "rearrange", "repeat"):
        lazy = inspect.signature(getattr(fbd, name)).parameters
        eager = inspect.signature(getattr(fb, name)).parameters
        assert [(p.name, p.kind, p.default) for p in lazy.values()] == \
               [(p.name, p.kind, p.default) for p in eager.values()]


def test_import_fastblock_does_not_import_dask():
    code = "import sys, fastblock; assert 'dask' not in sys.modules, 'dask imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


# --------------------------------------------------------------------------
# threads per block
# --------------------------------------------------------------------------

@pytest.fixture
def recorded_threads(monkeypatch):
    seen = []
    from fastblock._ops.table import OPERATORS
    for name in ("space_to_depth", "depth_to_space", "tile"):
        original = OPERATORS[name].door

        def spy(*args, _original=original, **kwargs):
            seen.append(kwargs.get("num_threads"))
            return _original(*args, **kwargs)

        monkeypatch.setattr(OPERATORS[name], "door", spy)
    return seen


def test_blocks_run_single_threaded_by_default(recorded_threads):
    x = da.zeros((4, 3, 8, 8), chunks=(1, 3, 4, 4))
    threaded(fbd.space_to_depth(x, 2))
    threaded(fbd.depth_to_space(x[:, :, :, :], 1))
    threaded(fbd.tile(da.zeros((2, 2), chunks=-1), (3, 3)))
    assert recorded_threads and set(recorded_threads) == {1}
    recorded_threads.clear()
    threaded(fbd.space_to_depth(x, 2, num_threads=2))
    threaded(fbd.tile(da.zeros((2, 2), chunks=-1), (3, 3), num_threads=3))
    assert set(recorded_threads) == {2, 3}


# --------------------------------------------------------------------------
# tile
# --------------------------------------------------------------------------

TILE_CASES = [
    ((2, 3), (1, 3), (2, 3)),
    ((2, 3), (1, 1), (3, 1)),
    ((2, 3), -1, (2, 3)),
    ((2, 3), -1, 4),
    ((2, 3), (1, 2), (0, 2)),
    ((2, 3), (2, 2), (2, 1, 3)),
    ((4, 1, 5), (2, 1, 2), (1, 7, 2)),
    ((3,), 1, ()),
    ((), (), (2, 3)),
    ((), (), ()),
    ((0, 3), -1, (2, 2)),
    ((5, 4), (2, 3), np.array([3, 2], dtype=np.uint8)),
]


@pytest.mark.parametrize("dtype", [np.float64, object, "U3", [("a", "i1"), ("b", "f4")]],
                         ids=["f8", "object", "U3", "struct"])
@pytest.mark.parametrize("shape,chunks,reps", TILE_CASES)
def test_tile_matches_numpy(shape, chunks, reps, dtype):
    a = make_values(int(np.prod(shape)), dtype).reshape(shape)
    y = fbd.tile(da.from_array(a, chunks=chunks), reps)
    expected = fb.tile(a, reps)
    same(expected, np.tile(a, reps))
    assert y.shape == expected.shape and y.dtype == expected.dtype
    same(threaded(checked(y)), expected)


def test_tile_plans_blocks():
    # Several chunks on an axis: the output repeats the input blocks by
    # reference, with no kernel layer at all.
    x = da.arange(12, chunks=4).reshape(3, 4).rechunk((1, 2))
    y = fbd.tile(x, (2, 3))
    assert y.chunks == ((1,) * 6, (2,) * 6)
    assert not any(n.startswith("tile-") and not n.startswith("tile-blocks") for n in y.dask.layers)
    same(threaded(y), np.tile(x.compute(), (2, 3)))
    # One small chunk: the repeats are folded into one block by the kernel.
    x = da.from_array(np.arange(6).reshape(2, 3), chunks=-1)
    y = fbd.tile(x, (1000, 3))
    assert y.chunks == ((2000,), (9,))
    same(threaded(y), np.tile(np.arange(6).reshape(2, 3), (1000, 3)))
    # ... up to array.chunk-size, the last block taking the remainder.
    with dask.config.set({"array.chunk-size": "1KiB"}):
        y = fbd.tile(x, (100, 1))  # 48 bytes per repeat: 21 per block
    assert y.chunks == ((42,) * 4 + (32,), (3,))
    same(threaded(checked(y)), np.tile(np.arange(6).reshape(2, 3), (100, 1)))
    # Mixed: a chunked axis referenced, a single-chunk axis folded.
    x = da.from_array(np.arange(12).reshape(4, 3), chunks=(2, 3))
    y = fbd.tile(x, (2, 5))
    assert y.chunks == ((2, 2, 2, 2), (15,))
    same(threaded(y), np.tile(np.arange(12).reshape(4, 3), (2, 5)))


# --------------------------------------------------------------------------
# a real LocalCluster with worker processes
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  memory_limit="512MiB", dashboard_address=None) as cluster:
        with distributed.Client(cluster, set_as_default=False) as c:
            yield c


@pytest.mark.slow
@drawn(2, op=list(OPS), mode=MODES)
def test_local_cluster(client, op, mode):
    """Every layout and rank, aligned and misaligned chunks, object and
    plain items, computed by the worker processes (one batch per test).
    A seeded draw of the four cases (two, or three where the draw's first
    two share an operator or a mode): every operator and every mode on
    every run, each pairing of the two over runs."""
    lazy, eager, ref = OPS[op]
    cases, graphs = [], []
    for data_format, rank in LAYOUTS:
        for chunking, dtype in [("coarse-aligned", object), ("coarse-misaligned", object),
                                ("coarse-misaligned", np.float32)]:
            a = make_input(op, data_format, rank, 2, dtype)
            x = da.from_array(a, chunks=chunks_for(chunking, op, mode, data_format, a.shape, 2))
            y = lazy(x, 2, mode, data_format)
            assert has_rechunk(y) == (chunking == "coarse-misaligned"), (data_format, rank)
            cases.append((a, data_format))
            graphs.append(checked(y))
    results = client.gather(client.compute(graphs))
    for (a, data_format), result in zip(cases, results):
        same(result, eager(a, 2, mode, data_format))
        if not a.dtype.hasobject:
            same(result, ref(a, 2, mode, data_format))


@pytest.mark.slow
def test_local_cluster_tile_and_round_trip(client):
    a = make_values(6 * 5, object).reshape(6, 5)
    cases = [((2, 5), (3, 4)), ((3, 2), (2, 1, 2)), (-1, (7, 0)), (-1, (4, 3))]
    tiled = [fbd.tile(da.from_array(a, chunks=chunks), reps) for chunks, reps in cases]
    for (_, reps), result in zip(cases, client.gather(client.compute(tiled))):
        same(result, np.tile(a, reps))
    x = da.random.default_rng(1).integers(0, 1000, (2, 6, 12, 12), chunks=(1, 4, 5, 7))
    with client.as_current():  # rechunks planned as under a default client
        checks = [(fbd.depth_to_space(fbd.space_to_depth(x, 2, mode), 2, mode) == x).all()
                  for mode in MODES]
    assert all(client.gather(client.compute(checks)))


@pytest.mark.slow
def test_local_cluster_report_cases(client):
    """The cases of ``python -m speed_reports --dask`` (speed_reports/dask_cases.py), on
    small inputs made on the workers: fastblock.dask and map_blocks of the
    same fastblock call give Dask's own result bit for bit, in its chunks."""
    cases = pytest.importorskip("speed_reports.dask_cases")  # the source tree's, when on sys.path
    for case in cases.CASES:
        small = cases.shrink(case)
        x, _ = cases.make_input(client, small)
        cases.check(small, x, cases.on_cluster(client))
        del x


# --------------------------------------------------------------------------
# rearrange / repeat (einops patterns), against einops on the computed input
# --------------------------------------------------------------------------

PATTERN_CASES = [
    # (operation, pattern, lengths, shape, chunks, batch axes kept)
    ("rearrange", "b c (h p) (w q) -> b (h w) (p q c)", {"p": 4, "q": 2}, (6, 3, 8, 8),
     (2, 3, 4, 4), 1),
    ("rearrange", "b c (h h2) (w w2) -> b (h2 w2 c) h w", {"h2": 2, "w2": 2}, (5, 4, 6, 6),
     (2, 2, 6, 3), 1),
    ("rearrange", "b t c h w -> b t h w c", {}, (4, 3, 2, 5, 5), (1, 2, 2, 5, 5), 2),
    ("rearrange", "... h w -> ... (h w)", {}, (3, 4, 5, 6), (1, 2, 5, 3), 2),
    ("rearrange", "b 1 h w -> b h w", {}, (4, 1, 3, 5), (3, 1, 3, 5), 1),
    ("repeat", "b c h w -> b c (h 2) (w r)", {"r": 3}, (4, 2, 3, 5), (2, 1, 3, 5), 2),
    ("repeat", "b h w -> b h w k", {"k": 4, "b": 6}, (6, 3, 3), (4, 3, 3), 3),
]


@pytest.mark.parametrize("dtype", [np.uint8, np.float32, "U3", object])
@pytest.mark.parametrize("operation, pattern, lengths, shape, chunks, batch", PATTERN_CASES)
def test_patterns_match_einops(operation, pattern, lengths, shape, chunks, batch, dtype):
    einops = pytest.importorskip("einops")
    x_np = (np.arange(int(np.prod(shape))) % 97).astype(dtype).reshape(shape)
    x = da.from_array(x_np, chunks=chunks)
    y = getattr(fbd, operation)(x, pattern, **lengths)
    expected = getattr(einops, operation)(x_np, pattern, **lengths)
    assert y.shape == expected.shape and y.dtype == expected.dtype
    # The kept batch axes keep their chunks; every other axis is one chunk.
    assert y.chunks[:batch] == x.chunks[:batch]
    assert all(len(c) == 1 for c in y.chunks[batch:])
    got = y.compute(scheduler="threads")
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def test_pattern_without_rechunk_where_the_blocks_fit():
    x = da.zeros((8, 3, 16, 16), chunks=(2, 3, 16, 16))
    y = fbd.rearrange(x, "b c h w -> b h w c")
    assert not has_rechunk(y) and y.chunks == ((2, 2, 2, 2), (16,), (16,), (3,))
    assert has_rechunk(fbd.rearrange(x.rechunk((2, 3, 8, 16)), "b c h w -> b h w c"))


@pytest.mark.parametrize("pattern, lengths", [("b c h w -> c b h w", {}),
                                              ("b c h w -> (b c) h w", {}),
                                              ("(b b2) c h w -> b b2 c h w", {"b2": 2})])
def test_pattern_that_moves_the_first_axis_is_refused(pattern, lengths):
    x = da.zeros((4, 3, 2, 2), chunks=2)
    with pytest.raises(ValueError, match="first axis"):
        fbd.rearrange(x, pattern, **lengths)


@pytest.mark.parametrize("operation, pattern, lengths", [
    ("rearrange", "b c h w -> b h w", {}),                # an axis lost
    ("rearrange", "b c (h p) w -> b c h p w", {"p": 3}),  # 4 does not divide by 3
    ("repeat", "b c h w -> b c h w k", {}),               # a new axis with no length
    ("rearrange", "b c h -> b h c", {}),                  # wrong rank
])
def test_pattern_errors_match_in_memory(operation, pattern, lengths):
    x_np = np.zeros((2, 3, 4, 4))
    with pytest.raises(ValueError) as in_memory:
        getattr(fb, operation)(x_np, pattern, **lengths)
    with pytest.raises(ValueError) as lazy:
        getattr(fbd, operation)(da.from_array(x_np, chunks=1), pattern, **lengths)
    assert str(lazy.value) == str(in_memory.value)
    with pytest.raises(TypeError, match="out"):
        getattr(fbd, operation)(da.from_array(x_np), "b c h w -> b h w c", out=x_np)


# --------------------------------------------------------------------------
# what each block is given, and what the graph carries
# --------------------------------------------------------------------------

def _recording(monkeypatch, module, name):
    """Replace ``module.name`` (an operator's ``door``) by a wrapper that records the array and the
    scale and offset of each call (before the lazy result is built: the
    blocks' calls are bound then)."""
    seen = []
    real = getattr(module, name)

    def record(x, *args, **kwargs):
        seen.append((x, kwargs.get("scale"), kwargs.get("offset")))
        return real(x, *args, **kwargs)

    monkeypatch.setattr(module, name, record)
    return seen


def test_blocks_get_their_own_compact_scale_and_offset(monkeypatch):
    from fastblock._ops.table import OPERATORS
    rng = np.random.default_rng(67)
    # Per channel of a channel axis in one chunk: every block gets the 3 values.
    a = rng.integers(0, 256, (6, 8, 8, 3), dtype=np.uint8)
    s = rng.random((3, 1, 1))
    o = rng.random((3, 1, 1))
    seen = _recording(monkeypatch, OPERATORS["rearrange"], "door")
    y = fbd.rearrange(da.from_array(a, chunks=(2, 8, 8, 3)), "b h w c -> b c h w",
                      dtype=np.float32, scale=s, offset=o)
    same(y.compute(scheduler="sync"), fb.rearrange(a, "b h w c -> b c h w", dtype=np.float32,
                                                    scale=s, offset=o))
    assert len(seen) == 3
    for _, scale, offset in seen:
        assert scale.shape == (3, 1, 1) and offset.shape == (3, 1, 1)
    # The same scale as a broadcast view of the whole result, and per sample
    # along the chunked batch axis: each block gets its own samples' values.
    per_sample = rng.random((6, 1, 1, 1))
    seen.clear()
    y = fbd.rearrange(da.from_array(a, chunks=(2, 8, 8, 3)), "b h w c -> b c h w",
                      dtype=np.float32, scale=np.broadcast_to(s, (6, 3, 8, 8)),
                      offset=per_sample)
    same(y.compute(scheduler="sync"), fb.rearrange(a, "b h w c -> b c h w", dtype=np.float32,
                                                    scale=s, offset=per_sample))
    for block, scale, offset in seen:
        assert scale.shape == (3, 1, 1) and offset.shape == (2, 1, 1, 1)
        first = int(np.flatnonzero((a == block[0]).all(axis=(1, 2, 3)))[0])
        np.testing.assert_array_equal(offset, per_sample[first:first + 2].astype(np.float32))
    # Per result channel, the channel axis in several chunks: each block gets
    # its own channels.
    x = rng.integers(0, 256, (2, 8, 6, 4), dtype=np.uint8)
    per_channel = rng.random((16, 1, 1))
    seen = _recording(monkeypatch, OPERATORS["tile"], "door")
    y = fbd.tile(da.from_array(x, chunks=(1, 3, 6, 2)), (1, 2, 1, 1), dtype=np.float32,
                 scale=per_channel)
    same(y.compute(scheduler="sync"), fb.tile(x, (1, 2, 1, 1), dtype=np.float32,
                                               scale=per_channel))
    assert sorted({scale.shape[0] for _, scale, _ in seen}) == [2, 3]
    assert all(scale.shape[1:] == (1, 1) and offset is None for _, scale, offset in seen)


def _graph_bytes(y, x):
    cloudpickle = pytest.importorskip("cloudpickle")
    inputs = set(dict(x.__dask_graph__()))
    graph = {k: v for k, v in dict(y.__dask_graph__()).items() if k not in inputs}
    return len(graph), len(cloudpickle.dumps(graph))


@pytest.mark.parametrize("op", ["space_to_depth", "depth_to_space", "tile", "rearrange",
                                "repeat"])
def test_graph_carries_what_a_map_blocks_of_the_call_carries(op):
    """As many tasks, and about the bytes, of x.map_blocks of the same
    fastblock call, whatever the size of the result: the compact scale and
    offset, not a view of them broadcast to the result."""
    import functools
    calls = {
        "space_to_depth": ((8, 3, 16, 16), lambda m: functools.partial(m.space_to_depth,
                                                                     block_size=2), 12),
        "depth_to_space": ((8, 12, 8, 8), lambda m: functools.partial(m.depth_to_space,
                                                                    block_size=2), 3),
        "tile": ((8, 3, 8, 8), lambda m: functools.partial(m.tile, repeats=(1, 1, 2, 2)), 3),
        "rearrange": ((8, 8, 8, 3), lambda m: functools.partial(
            m.rearrange, pattern="b h w c -> b c h w"), 3),
        "repeat": ((8, 3, 8, 8), lambda m: functools.partial(
            m.repeat, pattern="b c h w -> b c (h 2) (w 2)"), 3),
    }
    shape, call, channels = calls[op]
    sizes = []
    for factor in (1, 4):
        big = shape[:2] + tuple(n * factor for n in shape[2:]) if op != "rearrange" else \
            shape[:1] + tuple(n * factor for n in shape[1:3]) + shape[3:]
        x = da.zeros(big, dtype=np.uint8, chunks=(2,) + big[1:])
        expected = call(fb)(np.zeros((2,) + big[1:], np.uint8))
        s = np.arange(1, channels + 1, dtype=np.float32).reshape(channels, 1, 1)
        o = -s
        whole = (big[0],) + expected.shape[1:]
        y = call(fbd)(x, dtype=np.float32, scale=np.broadcast_to(s, whole), offset=o)
        ref = x.map_blocks(call(fb), dtype=np.float32, scale=s, offset=o,
                           chunks=((2,) * (big[0] // 2),) + tuple((n,) for n in
                                                                   expected.shape[1:]))
        (tasks, nbytes), (ref_tasks, ref_bytes) = _graph_bytes(y, x), _graph_bytes(ref, x)
        assert tasks == ref_tasks == big[0] // 2
        assert nbytes <= 1.25 * ref_bytes, (nbytes, ref_bytes)
        sizes.append(nbytes)
    assert sizes[1] <= sizes[0] + 64, sizes


@pytest.mark.parametrize("pattern, lengths", [
    ("b c h w -> b h w c", {}),                       # the same rank
    ("b c h w -> b (c h w)", {}),                     # fewer axes
    ("b c (h p) w -> b c h p w", {"p": 2}),           # more axes
])
def test_pattern_blocks_are_the_input_blocks(monkeypatch, pattern, lengths):
    """The fastblock call reads each input block where it lies: no copy on
    the way (Dask's drop_axis would concatenate the block, alone, into a new
    array)."""
    from fastblock._ops.table import OPERATORS
    a = np.arange(6 * 3 * 4 * 4, dtype=np.float32).reshape(6, 3, 4, 4)
    # Blocks that are views of ``a`` (from_array copies each chunk).
    x = da.concatenate([da.from_delayed(dask.delayed(a[i:i + 2]), (2, 3, 4, 4), a.dtype)
                        for i in range(0, 6, 2)])
    seen = _recording(monkeypatch, OPERATORS["rearrange"], "door")
    y = fbd.rearrange(x, pattern, **lengths)
    got = checked(y).compute(scheduler="sync")
    same(got, fb.rearrange(a, pattern, **lengths))
    assert len(seen) == 3 and all(np.shares_memory(block, a) for block, _, _ in seen)
