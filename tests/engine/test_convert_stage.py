"""The convert stage (``fastblock/_engine/plan/convert.pxi``, ``run/convert.pxi``,
``src/convert*.c``): every path it can choose, forced, with sources and
results against guard pages and every byte compared with the contract's
NumPy expression (``reference.converted_ref``).

Paths: the tile shapes (one box; a last tile shorter on one axis, on two);
the scale and offset read one value a row or gathered into lines a tile
(and those lines kept across a thread's tiles); the fused one-pass kernels
(packed results of the common pairs) and the three passes (every other
pair, and results whose items are apart); the SIMD variants (AVX2, NEON)
and the portable ones; one thread and a team; a copy in parts (space_to_batch's
padding, collate's samples).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import fastblock as fb
from draws import drawn
from fastblock import _engine
from fastblock._call import fastpath as _fastpath, memory as _memory
from fastblock._call.convert import broadcast_strides, type_code
from guarded import Guarded
from reference import converted_ref

BF16 = np.dtype(ml_dtypes.bfloat16)
SOURCES = ["?", "u1", "i1", "u2", "i2", "u4", "i4", "u8", "i8", "f2", BF16, "f4", "f8"]
RESULTS = ["u1", "i1", "u2", "i2", "f2", BF16, "f4", "f8"]
# The fused kernels' pairs (src/convert_passes.h: FB_CV_FUSED_TO).
FUSED_SOURCES = ["u1", "u2", "i2", "f2", BF16, "f4"]
FUSED_RESULTS = ["f4", "f2", BF16, "u1"]


@pytest.fixture(params=["simd", "portable"])
def variant(request):
    """The SIMD variants of the convert kernels (AVX2 and F16C, or NEON),
    and the portable ones."""
    if request.param == "simd" and not _engine.cpu_features()["convert_simd"]:
        pytest.skip("this CPU has no AVX2 and F16C")
    with _engine.tune(convert_simd=request.param == "simd"):
        yield request.param


def raw_values(shape, dtype, seed) -> np.ndarray:
    """Random bytes as ``dtype`` (NaNs with payloads, subnormals, infs),
    bools 0 or 1."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 2 if dtype == np.bool_ else 256, (*shape, dtype.itemsize), np.uint8)
    return raw.view(dtype).reshape(shape)


def guarded_copy(a: np.ndarray, at_end: bool) -> np.ndarray:
    """``a`` in memory flush against an inaccessible page at one end."""
    g = Guarded(max(a.nbytes, 1), at_end)
    view = g.array(a.shape, a.dtype)
    view[...] = a           # the view keeps the mapping alive
    return view


def guarded_out(shape, dtype, at_end: bool) -> np.ndarray:
    out = np.empty(shape, dtype)
    g = Guarded(max(out.nbytes, 1), at_end)
    view = g.array(shape, dtype)
    view.view(np.uint8)[...] = 0x5A
    return view


def same_bytes(result, expected):
    result, expected = np.asarray(result), np.asarray(expected)
    assert result.dtype == expected.dtype and result.shape == expected.shape
    got = np.ascontiguousarray(result).view(np.uint8)
    want = np.ascontiguousarray(expected).view(np.uint8)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (f"{bad.size} bytes differ, first at byte {bad[0]}: "
                           f"{got.ravel()[bad[0]]:#x} != {want.ravel()[bad[0]]:#x}")


def converted(op, x, dtype, scale=None, offset=None, at_end=False, threads=1, **kw):
    """``op(x, dtype=...)`` into a guarded out, checked byte for byte
    against the reference; returns the result."""
    plain = op(x, **kw)
    out = guarded_out(plain.shape, dtype, at_end)
    result = op(x, **kw, out=out, num_threads=threads, dtype=dtype, scale=scale, offset=offset)
    assert result is out
    same_bytes(result, converted_ref(plain, dtype, scale, offset))
    return result


def describe_transpose(x, axes, dtype, scale=False, offset=False):
    """The plan of ``fb.transpose(x, axes, dtype=dtype)`` with a scale and
    an offset given (True: one value; an array: read as it broadcasts)."""
    result = np.empty([x.shape[a] for a in axes], dtype)

    def affine_steps(value):
        if isinstance(value, np.ndarray):
            return np.broadcast_to(value.astype(np.float32), result.shape).strides
        return (0,) * x.ndim

    steps = ([x.strides[a] for a in axes], result.strides, affine_steps(scale),
             affine_steps(offset))
    return _engine.describe_convert(result.shape, steps, x.itemsize, result.itemsize,
                                    type_code(x.dtype), type_code(np.dtype(dtype)),
                                    scale is not None and scale is not False,
                                    offset is not None and offset is not False)


# --------------------------------------------------------------------------
# Every pair, both variants, fused and by passes
# --------------------------------------------------------------------------

@drawn(40, source=SOURCES, result=RESULTS, affine=["none", "scale", "offset", "both"],
       out=["packed", "apart"], cover=("source", "result"))
def test_every_pair(variant, source, result, affine, out):
    """Each pair through the stage (an HWC to CHW move), packed results
    (fused where the pair has a kernel) and results whose items are apart
    (always by the passes)."""
    x = guarded_copy(raw_values((5, 37, 3), source, 7), at_end=True)
    scale = np.array([1.5, -0.25, 3.0], np.float64).reshape(3, 1, 1) if affine in ("scale", "both") else None
    offset = np.array([-7.5, 0.0, 2.0], np.float32).reshape(3, 1, 1) if affine in ("offset", "both") else None
    if out == "packed":
        converted(fb.transpose, x, result, scale, offset, axes=(2, 0, 1))
    else:
        plain = fb.transpose(x, (2, 0, 1))
        wide = np.zeros((3, 5, 74), np.dtype(result))
        out_view = wide[:, :, ::2]
        before = wide.copy()
        fb.transpose(x, (2, 0, 1), out=out_view, dtype=result, scale=scale, offset=offset)
        same_bytes(out_view, converted_ref(plain, result, scale, offset))
        same_bytes(wide[:, :, 1::2], before[:, :, 1::2])


@pytest.mark.parametrize("source", FUSED_SOURCES, ids=str)
@pytest.mark.parametrize("result", FUSED_RESULTS, ids=str)
def test_fused_pairs_every_mode(variant, source, result):
    """The fused kernels' nine ways of scale and offset (none, one value a
    row, a line), at run lengths across a vector's remainder (AVX2 float32
    into uint8: 32 items a round)."""
    for width in (29, 3 * 32 + 7):
        x = guarded_copy(raw_values((3, width), source, 3), at_end=False)
        per_row = np.array([2.0, -0.5, 0.1], np.float32).reshape(3, 1)
        per_item = np.linspace(-3, 3, width, dtype=np.float32)
        for scale in (None, per_row, per_item):
            for offset in (None, per_row * 7, per_item[::-1].copy()):
                converted(fb.rearrange, x, result, scale, offset, pattern="a b -> a b")


# --------------------------------------------------------------------------
# Packed uint8 pixels into planes, and float32 planes into uint8 pixels, in
# one pass (fb_convert_lanes)
# --------------------------------------------------------------------------

LANE_AFFINES = {
    "none": (None, None),
    "imagenet": (np.array([1 / 255 / 0.229, 1 / 255 / 0.224, 1 / 255 / 0.225, 0.5]),
                 np.array([-0.485 / 0.229, -0.456 / 0.224, -0.406 / 0.225, 3.0])),
    # 0 * inf is a NaN, 255 * 1e38 overflows, -inf offsets: NaN and inf results.
    "extreme": (np.array([np.inf, 1e38, -0.37, 1e-40]), np.array([0.0, 1.0, -np.inf, 0.0])),
    # Subnormal results (bfloat16 by the CPU's conversion would flush them).
    "subnormal": (np.array([1e-39, 2.0 ** -110, 0.5, 2.0 ** -101]),
                  np.array([0.0, 0.0, 1e-40, 0.0])),
    # The least scale and offset that bfloat16 by the CPU's conversion takes
    # (2^-100): results 0 or normal, the least of them 2^-100.
    "least_normal": (np.array([2.0 ** -100, -3 * 2.0 ** -100, 1.0, 2.0 ** -100]),
                     np.array([-(2.0 ** -100), 2.0 ** -100, 0.0, 2.0 ** -99])),
    "offset": (None, np.array([0.25, -1e4, 7.0, 65504.0])),
}


def lanes_in_order(x, order):
    """``x`` (channels last) as given, or its lanes backwards (BGR read as
    ``img[..., ::-1]``)."""
    return x if order == "forwards" else x[..., ::-1]


def assert_direct_lanes(plan, lanes, order):
    """Every tile of ``plan`` by the one-pass lanes kernel with ``lanes``
    lanes in ``order`` (0 lanes: none by it)."""
    shapes = {(shape["lanes_direct"], shape["lanes_reversed"]) for shape in plan["shapes"]}
    assert shapes == {(lanes, bool(lanes) and order == "backwards")}, plan


def bf16_ways(result):
    """The settings of convert_avx512 a lanes test runs under: both for
    bfloat16 results where the CPU converts them (the CPU's conversion, the
    kernel's rounding), else the default."""
    both = np.dtype(result) == BF16 and _engine.cpu_features()["avx512_bf16"]
    return (True, False) if both else (True,)


# A seeded draw (of 72 cases): both lane counts both ways round into each
# result, every result under every affine, each on both variants.
@drawn(24, lanes=[3, 4], result=["f4", "f2", BF16], affine=sorted(LANE_AFFINES),
       order=["forwards", "backwards"], cover=[("lanes", "order", "result"), ("result", "affine")])
def test_lanes_in_one_pass(variant, lanes, result, affine, order):
    """Channels-last uint8 pixels of 3 and 4 lanes into planes: by the SIMD
    lanes kernel (16 pixels a round; AVX2 byte shuffles, NEON LD3/LD4) where
    it runs, lanes in order or backwards (BGR to RGB: the planes, scale and
    offset then taken from the last), every pixel count across a round's
    remainder, against guard pages on both sides, every byte compared;
    bfloat16 both by the CPU's conversion (AVX-512 BF16, where no result
    can be subnormal) and by the kernel's rounding."""
    scale, offset = LANE_AFFINES[affine]
    scale = None if scale is None else scale[:lanes].reshape(lanes, 1, 1).astype(np.float32)
    offset = None if offset is None else offset[:lanes].reshape(lanes, 1, 1).astype(np.float32)
    for avx512 in bf16_ways(result):
        with _engine.tune(convert_avx512=avx512):
            for width in (1, 15, 16, 17, 33, 64 + 7):
                for at_end in (True, False):
                    x = lanes_in_order(guarded_copy(
                        raw_values((2, width, lanes), "u1", width + lanes), at_end), order)
                    plan = describe_transpose(x, (2, 0, 1), result, scale, offset)
                    assert_direct_lanes(plan, lanes if variant == "simd" else 0, order)
                    converted(fb.transpose, x, result, scale, offset, at_end=not at_end,
                              axes=(2, 0, 1))


@pytest.mark.parametrize("source, lanes", [("u1", 3), ("u1", 4), ("u2", 13)])
def test_lanes_bfloat16_ties_every_exponent(variant, source, lanes):
    """bfloat16 planes from the one-pass lanes kernels at rounding ties of
    every exponent, from the subnormals to overflow: a scale (1 + 2**-8) *
    2**e per lane puts x * scale on a tie or beside one (x times 9 bits is
    exact in float32), by the kernel's rounding and by the CPU's conversion
    (AVX-512 BF16, from 2**-100 up), against guard pages."""
    info = np.iinfo(source)
    # Pixels of many 2-byte lanes go in one pass by AVX2 alone (else the stage).
    runs = variant == "simd" and (source == "u1" or _engine.cpu_features()["avx2"])
    x = np.resize(np.arange(min(info.max + 1, 4096), dtype=source), (2, 301, lanes))
    x = guarded_copy(x, at_end=True)
    for e in range(-141, 121, lanes):
        exponents = np.arange(e, e + lanes).clip(None, 120)
        scale = ((1 + 2.0 ** -8) * 2.0 ** exponents).astype(np.float32).reshape(lanes, 1, 1)
        for avx512 in bf16_ways(BF16):
            with _engine.tune(convert_avx512=avx512):
                plan = describe_transpose(x, (2, 0, 1), BF16, scale, None)
                assert_direct_lanes(plan, lanes if runs else 0, "forwards")
                converted(fb.transpose, x, BF16, scale, at_end=False, axes=(2, 0, 1))


WIDE_LANES = (5, 64)        # src/convert.h: FB_CONVERT_WIDE_LANES_MIN, _MAX


# A seeded draw (672 cases in all, 13.5 s): every lane count (the kernel's
# edges 4|5 and 64|65 among them) both ways round, every pair under every
# affine, each on both variants.
@drawn(36, lanes=[4, 5, 8, 13, 17, 64, 65],
       **{"source, result": [("u2", "f4"), ("i2", "f4"), ("u2", "f2"), ("i2", BF16)]},
       affine=sorted(LANE_AFFINES), order=["forwards", "backwards"],
       cover=[("lanes", "order"), ("source, result", "affine")])
def test_wide_lanes_in_one_pass(variant, lanes, source, result, affine, order):
    """Channels-last pixels of many 2-byte integer lanes (a multispectral
    image's bands) into planes: by the AVX2 kernel (blocks of 8 lanes split
    from pairs, 16 pixels a round, the row's last pixel read ending at its
    own end) where it runs, lanes in order or backwards, every pixel count
    across a round's remainder (rows of 2 x width pixels: 2 to 66),
    against guard pages on both sides, every byte compared; bfloat16 both
    ways (test_lanes_in_one_pass)."""
    scale, offset = LANE_AFFINES[affine]
    scale = None if scale is None else np.resize(scale, lanes).reshape(lanes, 1, 1).astype(
        np.float32)
    offset = None if offset is None else np.resize(offset, lanes).reshape(lanes, 1, 1).astype(
        np.float32)
    runs = (variant == "simd" and _engine.cpu_features()["avx2"]
            and WIDE_LANES[0] <= lanes <= WIDE_LANES[1])
    for avx512 in bf16_ways(result):
        with _engine.tune(convert_avx512=avx512):
            for width in (1, 4, 7, 8, 9, 12, 15, 16, 17, 33):
                for at_end in (True, False):
                    x = lanes_in_order(guarded_copy(
                        raw_values((2, width, lanes), source, width + lanes), at_end), order)
                    plan = describe_transpose(x, (2, 0, 1), result, scale, offset)
                    # (A tile that cuts the lanes goes through the stage.)
                    assert_direct_lanes(plan, lanes if runs and plan["box"][0] == lanes else 0,
                                        order)
                    converted(fb.transpose, x, result, scale, offset, at_end=not at_end,
                              axes=(2, 0, 1))


@pytest.mark.parametrize("lanes", [5, 13, 16, 24, 32, 64, 65])
def test_wide_lanes_tiles_keep_every_lane(variant, lanes):
    """Tiles of a large multispectral image keep all its lanes where the
    one-pass kernel splits them (a box of 16 of 64 lanes went through the
    stage, reading each pixel's lines four times), and a box of pixels
    within the tile budget; elsewhere a box of each axis."""
    x = np.empty((256, 256, lanes), np.uint16)
    plan = describe_transpose(x, (2, 0, 1), "f4", True, True)
    runs = (variant == "simd" and _engine.cpu_features()["avx2"]
            and WIDE_LANES[0] <= lanes <= WIDE_LANES[1])
    shapes = {(shape["lanes_direct"], shape["move"] is None) for shape in plan["shapes"]}
    if runs:
        assert plan["box"][0] == lanes and shapes == {(lanes, True)}, plan
        assert 16 <= plan["box"][1] <= 256 * 256 // 4, plan
    else:
        assert shapes == {(0, False)}, plan
        assert plan["box"][0] < lanes or lanes <= 16, plan
    if runs:
        # At least convert_lanes_run_bytes of each plane (no stage bounds it).
        assert plan["box"][1] * 4 >= _engine.default_tuning()["convert_lanes_run_bytes"], plan
    # The same rule on data: tiles cut from 1,999 pixels (the last one
    # shorter), on one and two threads, every byte compared.
    x = guarded_copy(raw_values((1, 1999, lanes), "u2", lanes), at_end=True)
    scale = np.linspace(0.5, 2, lanes, dtype=np.float32).reshape(lanes, 1, 1)
    with _engine.tune(convert_lanes_run_bytes=512, parallel_min_bytes=0):
        assert describe_transpose(x, (2, 0, 1), "f4", True, True)["tiles"] > 2
        for threads in (1, 2):
            converted(fb.transpose, x, "f4", scale, -scale, threads=threads, axes=(2, 0, 1))


@pytest.mark.parametrize("source, lanes", [("u1", 3), ("u1", 4), ("u2", 13), ("i2", 5)])
@pytest.mark.parametrize("result", ["f4", "f2", BF16], ids=str)
def test_lanes_rounds_from_whole_lines(variant, source, lanes, result):
    """The one-pass split kernels run their first round of 16 pixels at
    pixel 0 and the next ones from the first pixel whose store into the
    first plane starts a whole round's bytes (so that NumPy's arrays, 16
    bytes past a page, are stored in whole lines): the result placed at
    every item's offset within a round and one byte off the items' own
    alignment, rows across a round's remainders, the bytes around the
    result left as they were, every byte compared."""
    out_item = np.dtype(result).itemsize
    scale = np.linspace(0.5, 2, lanes, dtype=np.float32).reshape(lanes, 1, 1)
    for n in (16, 17, 31, 32, 33, 47, 48, 100):
        x = raw_values((1, n, lanes), source, n + lanes)
        plan = describe_transpose(x, (2, 0, 1), result, True, True)
        wide = lanes > 4
        runs = variant == "simd" and (not wide or _engine.cpu_features()["avx2"])
        assert_direct_lanes(plan, lanes if runs else 0, "forwards")
        expected = converted_ref(x.transpose(2, 0, 1), result, scale, -scale)
        for skew in [*range(0, 16 * out_item, out_item), 1]:
            g = Guarded(skew + expected.nbytes + 64, at_end=False)
            g.bytes[...] = 0x5A
            out = g.bytes[skew:skew + expected.nbytes].view(result).reshape(expected.shape)
            assert fb.transpose(x, (2, 0, 1), out=out, dtype=result, scale=scale,
                                offset=-scale, num_threads=1) is out
            same_bytes(out, expected)
            around = np.concatenate([g.bytes[:skew], g.bytes[skew + expected.nbytes:]])
            assert (around == 0x5A).all(), (n, skew)


# float32 values at the uint8 rule's edges: ties (rounded to even), the
# saturation bounds and past them, -0.0, subnormals, infs and NaNs.
EDGE_FLOATS = np.array([0.5, 1.5, 2.5, 254.5, 255.5, 253.49998, -0.5, -0.49999997, -0.0, 0.0,
                        255.0, 256.0, -1.0, 1e-45, -1e-45, 1e9, -1e9, np.inf, -np.inf, np.nan,
                        -np.nan, 127.5, 128.5, 3.4e38], np.float32)


@pytest.mark.parametrize("lanes", [3, 4])
@pytest.mark.parametrize("affine", sorted(LANE_AFFINES))
@pytest.mark.parametrize("registers", ["64-byte", "32-byte"])
def test_pixels_in_one_pass(variant, lanes, affine, registers):
    """float32 planes of 3 and 4 lanes into channels-last uint8 pixels (the
    way back to an image): by the SIMD interleave kernel (AVX-512 VBMI: 64
    pixels a round, rows of 64 or more, lane permutes; AVX2: 32, byte
    shuffles or unpacks; the last round ending at the last pixel; NEON:
    16, ST3/ST4) where it runs, pixel counts across both rounds (rows of 2
    x width pixels: 2 to 142), the rule's edges and random bytes (NaN
    payloads, subnormals), against guard pages on both sides, every byte
    compared."""
    wide = registers == "64-byte"
    if wide and not _engine.cpu_features()["avx512_vbmi"]:
        pytest.skip("this CPU has no AVX-512 VBMI")
    scale, offset = LANE_AFFINES[affine]
    scale = None if scale is None else scale[:lanes].reshape(1, 1, lanes).astype(np.float32)
    offset = None if offset is None else offset[:lanes].reshape(1, 1, lanes).astype(np.float32)
    rng = np.random.default_rng(lanes)
    with _engine.tune(convert_avx512=wide):
        pixels_in_one_pass(variant, lanes, scale, offset, rng, wide)


def pixels_in_one_pass(variant, lanes, scale, offset, rng, wide):
    for width in (1, 15, 16, 17, 24, 31, 32, 33, 63, 64, 65, 64 + 7):
        for at_end in (True, False):
            values = raw_values((lanes, 2, width), "f4", width + lanes)
            edges = rng.random(values.shape) < 0.5
            values[edges] = rng.choice(EDGE_FLOATS, edges.sum())
            x = guarded_copy(values, at_end)
            # The scale and offset as given: one value a lane, along the
            # result's rows (the one-pass kernel reads them a plane).
            plan = describe_transpose(x, (1, 2, 0), np.uint8, scale, offset)
            direct = {(shape["lanes_direct"], shape["lanes_interleave"])
                      for shape in plan["shapes"]}
            assert direct == ({(lanes, True)} if variant == "simd" else {(0, False)}), plan
            assert plan["vbmi"] == (wide and variant == "simd"), plan
            converted(fb.transpose, x, np.uint8, scale, offset, at_end=not at_end,
                      axes=(1, 2, 0))


# --------------------------------------------------------------------------
# Tiles: shapes, cuts, lines
# --------------------------------------------------------------------------

@pytest.mark.parametrize("shape, axes, cuts", [
    ((224, 224, 3), (2, 0, 1), 0),       # channels last to first: whole rows, no cut
    ((10007, 3), (1, 0), 1),             # a prime extent: the last tile shorter
    ((307, 701), (1, 0), 2),             # a transpose of two long (prime) axes
])
def test_tile_shapes(variant, shape, axes, cuts):
    x = guarded_copy(raw_values(shape, "u1", 11), at_end=True)
    plan = describe_transpose(x, axes, np.float32, scale=True)
    assert len(plan["cuts"]) == cuts
    assert len(plan["shapes"]) == 1 << cuts
    scale = np.float32(0.5)
    for threads in (1, 2):
        with _engine.tune(parallel_min_bytes=0):
            converted(fb.transpose, x, np.float32, scale, -1.0, threads=threads, axes=axes)


def test_stage_moves_never_stream_or_fault_ahead(variant):
    """A tile's move writes the thread's stage, which is resident and in
    cache: it never streams or faults ahead, whatever the thresholds (its
    plan is built against a stand-in address, whose pages say nothing of
    the stage's; faulting ahead from one touched unmapped memory)."""
    x = guarded_copy(raw_values((64, 33, 3), "u1", 9), at_end=False)
    with _engine.tune(stream_min_bytes=0, fault_ahead_min_bytes=0, fault_unit_bytes=1,
                      fault_lead_bytes=0, parallel_min_bytes=0):
        plan = describe_transpose(x, (2, 1, 0), BF16, offset=True)
        moves = [shape["move"] for shape in plan["shapes"]]
        assert moves and all(m is not None and not m["streams"] and not m["faults_ahead"]
                             for m in moves), plan
        offset = np.linspace(-2, 2, 64, dtype=np.float32)
        for threads in (1, 2):
            converted(fb.transpose, x, BF16, None, offset, threads=threads, axes=(2, 1, 0))


IN_PLACE_MIN_RUN = 256      # plan/convert.pxi: CONVERT_IN_PLACE_MIN_RUN


@pytest.mark.parametrize("run", [IN_PLACE_MIN_RUN - 1, IN_PLACE_MIN_RUN, 301])
@pytest.mark.parametrize("source", ["u2", "f4"])
def test_rows_converted_in_place(variant, run, source):
    """A tile whose source rows run forwards like the result's is converted
    where it lies, no move, where its rows are long enough, else through the
    stage: rows of the threshold's either side, read forwards and with the
    outer axis backwards, from an unaligned source, a scale one a row and
    an offset one an item (gathered into lines), against guard pages."""
    raw = raw_values((7, run + 5), source, run)
    if source == "f4":
        raw[1, 2:2 + EDGE_FLOATS.size] = EDGE_FLOATS
    bytes_ = np.zeros(raw.nbytes + 1, np.uint8)
    unaligned = bytes_[1:].view(raw.dtype).reshape(raw.shape)
    unaligned[...] = raw
    scale = np.linspace(-2, 3, 7, dtype=np.float32).reshape(7, 1)
    offset = np.linspace(-1, 1, run, dtype=np.float32)
    for x in (guarded_copy(raw, True)[:, :run], guarded_copy(raw, False)[::-1, 2:run + 2],
              unaligned[:, :run]):
        for dtype in ("f4", "u1", BF16):
            plan = describe_transpose(x, (0, 1), dtype, True, True)
            moves = {shape["move"] is None for shape in plan["shapes"]}
            assert moves == {run >= IN_PLACE_MIN_RUN}, plan
            converted(fb.rearrange, x, dtype, scale, offset, pattern="a b -> a b")


def bfloat16_ties_f64() -> np.ndarray:
    """float64 values at every bfloat16 rounding tie, from the subnormals
    (quantum 2**-133) to the overflow threshold (2**128 - 2**119), with both
    neighbours of each bit (even and odd kept bits), and each nudged by a
    float64 ulp either way: the nudged ones land on the tie when rounded to
    float32 first, so a second rounding goes the wrong way."""
    values = []
    for p in range(-126, 128):                       # the normal binades
        for kept in (2 ** 7, 2 ** 7 + 1, 2 ** 8 - 2, 2 ** 8 - 1):
            tie = (kept + 0.5) * 2.0 ** (p - 7)
            values += [tie, np.nextafter(tie, 0), np.nextafter(tie, np.inf)]
    for kept in range(2 ** 7):                       # the subnormals
        tie = (kept + 0.5) * 2.0 ** -133
        values += [tie, np.nextafter(tie, 0), np.nextafter(tie, np.inf)]
    values = np.array(values)
    return np.concatenate([values, -values])


def bfloat16_ties_int(dtype) -> np.ndarray:
    """Integers of ``dtype`` at every bfloat16 rounding tie (top bit p from
    8 to the type's last) with both neighbours, and 1 either side."""
    info = np.iinfo(dtype)
    values = []
    for p in range(8, 8 * np.dtype(dtype).itemsize):
        for kept in (2 ** 7, 2 ** 7 + 1, 2 ** 8 - 2, 2 ** 8 - 1):
            tie = (2 * kept + 1) << (p - 8)
            values += [v for v in (tie - 1, tie, tie + 1) if v <= info.max]
    values += [-v for v in values if -v >= info.min] + [info.min, info.max]
    return np.array(values, dtype)


@pytest.mark.parametrize("source", ["f8", "i8", "u8", "i4", "u4"])
@pytest.mark.parametrize("path", ["stage", "in_place"])
@pytest.mark.parametrize("threads", [1, 2])
def test_bfloat16_ties_round_once(variant, source, path, threads):
    """bfloat16 results from the sources float32 cannot hold, without scale
    or offset, at every tie from subnormal to overflow: rounded once from
    the exact value, through the stage (a transpose) and in place (rows of
    IN_PLACE_MIN_RUN and more), the source and the result against guard
    pages."""
    ties = bfloat16_ties_f64() if source == "f8" else bfloat16_ties_int(source)
    run = IN_PLACE_MIN_RUN + 3
    ties = np.resize(ties, (-(-ties.size // run), run)).astype(source)
    for at_end in (True, False):
        x = guarded_copy(ties, at_end)
        if path == "stage":
            converted(fb.transpose, x, BF16, at_end=not at_end, threads=threads, axes=(1, 0))
        else:
            plan = describe_transpose(x, (0, 1), BF16)
            assert {shape["move"] is None for shape in plan["shapes"]} == {True}, plan
            converted(fb.rearrange, x, BF16, at_end=not at_end, threads=threads,
                      pattern="a b -> a b")
    # Results whose items are apart (every other one of a wider row).
    wide = np.zeros((ties.shape[0], 2 * run), BF16)
    fb.rearrange(ties, "a b -> a b", out=wide[:, ::2], dtype=BF16, num_threads=threads)
    same_bytes(wide[:, ::2], converted_ref(ties, BF16))
    assert not wide[:, 1::2].view(np.uint16).any()


# NaNs of each float source, signalling and quiet, both signs, with payloads
# at the top and the bottom of the fraction (bit patterns).
NAN_BITS = {"f2": [0x7C01, 0xFD23, 0x7E00, 0x7DFF], BF16: [0x7FED, 0x7F81, 0xFF81, 0x7FC1],
            "f4": [0x7F812345, 0xFF800001, 0x7FC00001, 0x7FA34567],
            "f8": [0x7FF0000000000001, 0xFFF4000000000000, 0x7FF0123456789ABC, 0x7FF8000000000001]}


@pytest.mark.parametrize("source", list(NAN_BITS), ids=str)
@pytest.mark.parametrize("result", ["f2", BF16, "f4", "f8"], ids=str)
@pytest.mark.parametrize("path", ["stage", "in_place"])
def test_nan_rule_every_path(variant, source, result, path):
    """Every NaN keeps its sign and the top of its payload and is quieted,
    without scale or offset and through a scale, on each path (the stage,
    in place, the fused and the three passes), against guard pages."""
    sdt = np.dtype(source)
    bits = np.array(NAN_BITS[source], f"u{sdt.itemsize}")
    x = guarded_copy(np.resize(bits, (3, IN_PLACE_MIN_RUN + 5)).view(sdt), at_end=True)
    # (The same dtype without a scale is the plain move: nothing converted.)
    for scale in (np.float32(1.0),) if sdt == np.dtype(result) else (None, np.float32(1.0)):
        if path == "stage":
            converted(fb.transpose, x, result, scale, axes=(1, 0))
        else:
            converted(fb.rearrange, x, result, scale, pattern="a b -> a b")


FAULT_EVERY_TILE = {"fault_ahead_min_bytes": 0, "fault_unit_bytes": 1, "fault_lead_bytes": 0,
                    "parallel_min_bytes": 0}


@pytest.mark.parametrize("case", ["split", "interleave", "staged", "parts"])
def test_fresh_results_fault_each_tile_ahead(variant, case):
    """Results whose pages are not yet in memory have each tile's rows
    faulted ahead (forced here for every size: the calling thread faults
    for a team of two), clamped to the result's end: fresh guarded pages
    right before an inaccessible one, every byte compared."""
    rng = np.random.default_rng(17)
    if case == "split":
        x, axes, dtype, scale = rng.integers(0, 256, (37, 41, 3), np.uint8), (2, 0, 1), BF16, 0.5
    elif case == "interleave":
        x, axes, dtype, scale = rng.random((4, 37, 41), np.float32) * 300, (1, 2, 0), "u1", 0.9
    else:
        x, axes, dtype, scale = rng.integers(0, 60000, (29, 31, 13), np.uint16), (2, 0, 1), "f4", 3.0
    plain = np.ascontiguousarray(x.transpose(axes))
    with _engine.tune(**FAULT_EVERY_TILE):
        for threads in (1, 2):
            if case == "parts":
                samples = [x, x[::-1], x + 1]
                fresh = Guarded(3 * plain.size * 4, at_end=True).array((3,) + plain.shape,
                                                                           np.float32)
                assert fb.collate(samples, fb.transpose, axes, out=fresh, num_threads=threads,
                                  dtype=np.float32, scale=scale) is fresh
                for sample, got in zip(samples, fresh):
                    same_bytes(got, converted_ref(np.ascontiguousarray(sample.transpose(axes)),
                                                  np.float32, scale))
                continue
            fresh = Guarded(plain.size * np.dtype(dtype).itemsize, at_end=True).array(
                plain.shape, dtype)
            assert fb.transpose(x, axes, out=fresh, num_threads=threads, dtype=dtype,
                                scale=scale) is fresh
            same_bytes(fresh, converted_ref(plain, dtype, scale))


def test_small_tiles_every_shape(variant):
    """Tiles of a few items: many tiles, both cut axes, every shape."""
    x = guarded_copy(raw_values((13, 11, 3), "f4", 5), at_end=False)
    with _engine.tune(convert_tile_bytes=64, parallel_min_bytes=0):
        plan = describe_transpose(x, (2, 1, 0), np.float16)
        assert plan["tiles"] > 8
        for threads in (1, 3):
            converted(fb.transpose, x, np.float16, threads=threads, axes=(2, 1, 0))
            converted(fb.transpose, x, BF16, np.float32(3), threads=threads, axes=(1, 0, 2))


@pytest.mark.parametrize("layout", ["channels_last", "per_column"])
def test_scale_lines(variant, layout):
    """A scale that varies along the rows is gathered into lines a tile;
    a thread keeps them across tiles that read the same values."""
    x = guarded_copy(raw_values((64, 50, 3), "u1", 9), at_end=True)
    if layout == "channels_last":
        scale, offset, pattern = np.array([0.1, 0.2, 0.3]), np.array([-1.0, 0.0, 1.0]), "h w c -> h w c"
    else:
        scale, offset, pattern = np.linspace(0, 1, 50), None, "h w c -> c h w"
        scale = scale.reshape(1, 50)
    steps_plan = None
    with _engine.tune(convert_tile_bytes=1024, parallel_min_bytes=0):
        for threads in (1, 2):
            converted(fb.rearrange, x, np.float32, scale, offset, threads=threads,
                      pattern=pattern)
        if layout == "channels_last":
            out = np.empty((64, 50, 3), np.float32)
            steps_plan = _engine.describe_convert(
                out.shape, (x.strides, out.strides, (0, 0, 4), (0, 0, 4)), 1, 4, 1, 11, True, True)
    if steps_plan is not None:
        assert steps_plan["scale"] == "line" and steps_plan["offset"] == "line"


def test_scale_one_value_a_row():
    x = raw_values((3, 40, 40), "u1", 1)
    out = np.empty((3, 40, 40), np.float32)
    plan = _engine.describe_convert(out.shape, (x.strides, out.strides, (4, 0, 0), (4, 0, 0)),
                                    1, 4, 1, 11, True, True)
    assert plan["scale"] == plan["offset"] == "value"
    assert plan["shapes"][0]["run"] >= 40 * 40 // 2


# --------------------------------------------------------------------------
# Scales and offsets read by their strides
# --------------------------------------------------------------------------

# kind -> (the result's axes from an N, H, W, C source, the compact shape of
# the scale and offset, how the plan reads them)
STRIDE_KINDS = {
    "one_value": ((0, 3, 1, 2), (), "value"),
    "per_channel_first": ((0, 3, 1, 2), (3, 1, 1), "value"),   # one value a row
    "per_channel_last": ((0, 2, 1, 3), (3,), "line"),           # a period of 3 along the rows
    "per_item": ((0, 3, 1, 2), (1, 9, 11), "line"),             # every pixel its own
}


def broadcast_forms(compact, shape):
    """``compact`` as users and fastblock.dask pass it: broadcast to the
    result, cut from a broadcast to a larger whole (a block), stepped, and
    with leading axes of one item."""
    whole = np.broadcast_to(compact, (2 * shape[0],) + shape[1:])
    return [np.broadcast_to(compact, shape), whole[shape[0]:], whole[::2],
            compact.reshape((1,) * (len(shape) - compact.ndim) + compact.shape)]


def stride_plan(x, axes, result, values):
    """The normalised values' shape and the plan they get (as the general
    path and the fast path normalise them), read as scale and offset."""
    v = _memory.compute_values(values, np.float32)
    shape = tuple(x.shape[a] for a in axes)
    out = np.empty(shape, result)
    steps = broadcast_strides(v, shape)
    return v.shape, _engine.describe_convert(
        shape, ([x.strides[a] for a in axes], out.strides, steps, steps), x.itemsize,
        out.itemsize, type_code(x.dtype), type_code(out.dtype), True, True)


@pytest.mark.parametrize("kind", list(STRIDE_KINDS))
@pytest.mark.parametrize("source, result", [("u1", "f4"), ("i2", "f2"), ("f4", "u1")])
def test_broadcast_views_read_as_compact(variant, kind, source, result):
    """A scale or offset is read by its strides: axes of step 0 are one
    value, so a broadcast view plans and converts as its compact form
    (the fast path runs the compact form's stored program), by either
    path. The compact values lie against a guard page: a view read item
    by item past them would fault."""
    axes, compact_shape, mode = STRIDE_KINDS[kind]
    x = guarded_copy(raw_values((4, 9, 11, 3), source, 3), at_end=True)
    shape = tuple(x.shape[a] for a in axes)
    rng = np.random.default_rng(11)
    scale = guarded_copy(np.asarray(rng.uniform(-2, 2, compact_shape), np.float32), at_end=True)
    offset = guarded_copy(np.asarray(rng.uniform(-50, 50, compact_shape), np.float32),
                          at_end=False)
    views = zip(broadcast_forms(scale, shape), broadcast_forms(offset, shape))
    with _engine.tune(convert_tile_bytes=512, parallel_min_bytes=0):
        compact_plan = stride_plan(x, axes, result, scale)
        assert compact_plan[1]["scale"] == compact_plan[1]["offset"] == mode
        assert compact_plan[1]["tiles"] > 1
        for view_scale, view_offset in views:
            assert stride_plan(x, axes, result, view_scale) == compact_plan
            for threads in (1, 2):
                want = converted(fb.transpose, x, result, scale, offset, threads=threads,
                                 axes=axes)
                stored = _fastpath.stats()["stored"]
                got = converted(fb.transpose, x, result, view_scale, view_offset,
                                threads=threads, axes=axes)
                assert _fastpath.stats()["stored"] == stored
                same_bytes(got, want)
                with _fastpath.enabled(False):
                    same_bytes(converted(fb.transpose, x, result, view_scale, view_offset,
                                         threads=threads, axes=axes), want)


# --------------------------------------------------------------------------
# Copies in parts
# --------------------------------------------------------------------------

def test_padding_parts_convert(variant):
    """space_to_batch's padding (a step-0 source) is converted too: it
    becomes the offset where one is given."""
    x = guarded_copy(raw_values((2, 6, 5, 3), "i2", 4), at_end=True)
    offset = np.array([1.0, -2.0, 0.5], np.float32)
    converted(fb.space_to_batch, x, np.float32, np.float32(0.25), offset,
              block_shape=[1, 2, 3, 1], pads_begin=[0, 1, 1, 0], pads_end=[0, 1, 0, 0])


def test_collate_parts(variant):
    samples = [raw_values((17, 19, 3), "u1", i) for i in range(5)]
    scale = np.array([1 / 255, 2 / 255, 3 / 255], np.float32).reshape(3, 1, 1)
    with _engine.tune(parallel_min_bytes=0):
        for threads in (1, 2):
            out = guarded_out((5, 3, 17, 19), BF16, at_end=True)
            fb.collate(samples, fb.transpose, (2, 0, 1), out=out, num_threads=threads,
                       dtype=BF16, scale=scale, offset=-0.5)
            for i, sample in enumerate(samples):
                same_bytes(out[i], converted_ref(sample.transpose(2, 0, 1), BF16, scale, -0.5))


def test_vect_c_moves_then_converts():
    """NCHW_VECT_C copies that no axes describe: moved first, then converted."""
    x = raw_values((1, 9, 2, 2, 4), "u1", 2)
    converted(fb.depth_to_space, x, np.float32, 0.5, block_size=3, mode="depth_first",
              data_format="NCHW_VECT_C")


@pytest.mark.parametrize("pattern, scale", [
    ("h w c -> c h w", np.array([0.5, 2.0, -1.0]).reshape(3, 1, 1)),    # one value a row
    ("h w c -> h w c", np.array([0.5, 2.0, -1.0])),                      # lines
    ("h w c -> w h c", np.linspace(-1, 1, 40 * 3).reshape(40, 1, 3)),    # lines, every tile its own
])
def test_backwards_source_axes(variant, pattern, scale):
    """Axes the source reads backwards (BGR as img[..., ::-1], a flipped
    image) are packed backwards in the stage and lines, but the innermost."""
    base = guarded_copy(raw_values((33, 40, 3), "u1", 8), at_end=True)
    with _engine.tune(convert_tile_bytes=512, parallel_min_bytes=0):
        for x in (base[..., ::-1], base[::-1, :, ::-1], base[::-1, ::-1]):
            for threads in (1, 2):
                converted(fb.rearrange, x, np.float32, scale, -3.0, threads=threads,
                          pattern=pattern)
                converted(fb.rearrange, x, np.uint8, scale * 100, threads=threads,
                          pattern=pattern)
