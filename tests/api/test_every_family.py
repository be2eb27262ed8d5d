"""One case of every operator, every kernel family and every item width:
what a new interpreter, compiler or build can break.

ci/core_tests.sh runs this file and a short stress run on every extra
Python and on the installed wheel; the main job runs it with the rest.
Each kernel case asserts the plan the engine makes (where this CPU has the
kernel's instructions) and compares every byte with NumPy, once with the
SIMD kernels and once on the portable path.
"""
import einops
import numpy as np
import pytest

import fastblock as fb
from fastblock import _engine
from fastblock._call.convert import type_code
from reference import (batch_to_space_ref, converted_ref, depth_to_space_ref, space_to_batch_ref,
                       space_to_depth_ref)

CPU = _engine.cpu_features()


def _values(shape, width: int) -> np.ndarray:
    """Distinct bytes in every item, as a void array of ``width``-byte items."""
    count = int(np.prod(shape)) * width
    raw = np.random.default_rng(count).integers(0, 256, count, np.uint8)
    return raw.view(f"V{width}").reshape(shape)


# --------------------------------------------------------------------------
# every front door, against its definition
# --------------------------------------------------------------------------

X = np.arange(2 * 3 * 4 * 6, dtype=np.float32).reshape(2, 3, 4, 6)

OPERATORS = {
    "space_to_depth": (lambda: fb.space_to_depth(X, 2), lambda: space_to_depth_ref(X, 2)),
    "depth_to_space": (lambda: fb.depth_to_space(space_to_depth_ref(X, 2), 2, "CRD"),
                       lambda: depth_to_space_ref(space_to_depth_ref(X, 2), 2, "CRD")),
    "tile": (lambda: fb.tile(X, (2, 1, 3)), lambda: np.tile(X, (2, 1, 3))),
    "transpose": (lambda: fb.transpose(X, (3, 1, 0, 2)), lambda: np.transpose(X, (3, 1, 0, 2))),
    "pixel_shuffle": (lambda: fb.pixel_shuffle(np.ones((1, 8, 3, 3)) * np.arange(8)[:, None, None], 2),
                      lambda: depth_to_space_ref(np.ones((1, 8, 3, 3)) * np.arange(8)[:, None, None],
                                                 2, "CRD")),
    "pixel_unshuffle": (lambda: fb.pixel_unshuffle(X, 2), lambda: space_to_depth_ref(X, 2, "CRD")),
    "space_to_batch": (lambda: fb.space_to_batch(X, [1, 1, 2, 3], [0, 0, 1, 0], [0, 0, 1, 0]),
                       lambda: space_to_batch_ref(X, [1, 1, 2, 3], [0, 0, 1, 0], [0, 0, 1, 0])),
    "batch_to_space": (lambda: fb.batch_to_space(X, [1, 1, 2, 1], [0, 0, 1, 0], [0, 0, 1, 0]),
                       lambda: batch_to_space_ref(X, [1, 1, 2, 1], [0, 0, 1, 0], [0, 0, 1, 0])),
    "rearrange": (lambda: fb.rearrange(X, "n c (h a) w -> n (a c) h w", a=2),
                  lambda: einops.rearrange(X, "n c (h a) w -> n (a c) h w", a=2)),
    "repeat": (lambda: fb.repeat(X, "n c h w -> n c (h 2) (w k)", k=3),
               lambda: einops.repeat(X, "n c h w -> n c (h 2) (w k)", k=3)),
}


@pytest.mark.parametrize("name", OPERATORS)
def test_every_operator(name):
    run, reference = OPERATORS[name]
    got, expected = run(), reference()
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert np.array_equal(got, expected)


# --------------------------------------------------------------------------
# every kernel family: (shape, axes, item bytes, settings, the plan's facts)
# of a transpose, or a tile of rows of one item ("tile" as the axes)
# --------------------------------------------------------------------------

FAMILIES = {
    "rows": ((50, 3, 700), (1, 0, 2), 4, {}, {"kernel": "block"}),
    "items": ((9, 30, 5), (2, 0, 1), 40, {}, {"kernel": "block"}),
    "register transpose": ((64, 48), (1, 0), 8, {}, {"kernel": "transpose", "staged": False}),
    "staged transpose": ((300, 200), (1, 0), 4, {}, {"kernel": "transpose", "staged": True}),
    "lane interleave": ((5, 9, 40), (0, 2, 1), 1, {}, {"kernel": "lanes", "lanes": 9}),
    "lane split": ((5, 40, 9), (0, 2, 1), 2, {}, {"kernel": "lanes", "lanes": 9}),
    "line splits": ((2, 8192, 17), (0, 2, 1), 1, {}, {"kernel": "lanes", "line_splits": True}),
    "gather": ((6, 2, 10, 2, 3), (0, 2, 4, 1, 3), 1, {"shuffles": False}, {"kernel": "gather"}),
    "gather by shuffles": ((6, 2, 10, 2, 3), (0, 2, 4, 1, 3), 1, {"shuffle_min_bytes": 0},
                           {"kernel": "gather", "shuffle_period": 0}),
    "periodic shuffles": ((6, 2, 200, 2, 3), (0, 2, 4, 1, 3), 1, {"shuffle_min_bytes": 0},
                          {"kernel": "gather", "shuffle_period": 3}),
    "streamed": ((300, 200), (1, 0), 4, {"streaming": True, "stream_min_bytes": 0},
                 {"streams": True}),
    # Packed repeats take AVX-512 VBMI's 64-byte permutes where the CPU has
    # them, the other kernels without (wide_shuffles off).
    "repeats by permutes": ((40, 1), "tile", 3, {}, {"repeats": "permutes"}),
    "repeats by shuffles": ((40, 1), "tile", 3, {"wide_shuffles": False}, {"repeats": "shuffles"}),
    "repeats from registers": ((40, 1), "tile", 24, {"count": 3, "wide_shuffles": False},
                               {"repeats": "registers"}),
    "repeats by periods": ((40, 1), "tile", 24, {"wide_shuffles": False}, {"repeats": "periods"}),
}
# The instructions each family's plan needs (the portable path runs it otherwise).
NEEDS = {"lane interleave": "simd128", "lane split": "simd128", "line splits": "simd128",
         "gather by shuffles": "simd128", "periodic shuffles": "simd128", "streamed": "streaming_stores",
         "repeats by shuffles": "simd128", "repeats from registers": "simd128",
         "repeats by periods": "avx2", "repeats by permutes": "avx512_vbmi"}
TILE_COUNT = 20


@pytest.mark.parametrize("simd", [True, False], ids=["simd", "portable"])
@pytest.mark.parametrize("family", FAMILIES)
def test_every_kernel_family(family, simd):
    shape, axes, width, settings, facts = FAMILIES[family]
    settings = dict(settings)
    count = settings.pop("count", TILE_COUNT)
    x = _values(shape, width)
    if axes == "tile":
        expected = np.tile(x, (1, count))
        out = np.zeros(expected.shape, expected.dtype)
        plan_axes = _engine.tile_copy_axes(x, out, (1, count))
        run = lambda: fb.tile(x, (1, count), out=out)   # noqa: E731
    else:
        expected = np.ascontiguousarray(np.transpose(x, axes))
        out = np.ones(expected.shape, expected.dtype)   # resident: may stream
        view = np.transpose(x, axes)
        plan_axes = (view.shape, view.strides, out.strides)
        run = lambda: fb.transpose(x, axes, out=out, num_threads=2)   # noqa: E731
    with _engine.tune(simd=simd, **settings):
        plan = _engine.describe(*plan_axes, width, dst_array=out)
        assert run() is out
    assert out.tobytes() == expected.tobytes()
    if simd and CPU.get(NEEDS.get(family, "simd128"), False):
        assert {key: plan[key] for key in facts} == facts, plan
        # The 16-byte kernels: NEON on aarch64, SSSE3 on x86.
        assert plan["simd128"] == ("neon" if CPU["neon"] else "ssse3"), plan
    if not simd:
        assert plan["kernel"] != "lanes" and not plan["shuffled_pieces"] and not plan["repeats"], plan
        assert plan["simd128"] is None, plan


# The convert stage's SIMD variants (AVX2 + F16C, NEON): (source shape and
# dtype, axes, result dtype, scale, the tiles' lanes kernel: its lanes and
# whether it interleaves; "x86": that kernel is AVX2's alone).
CONVERT_FAMILIES = {
    "convert pixels into planes": ((7, 40, 3), "u1", (2, 0, 1), "f4", 1 / 255, (3, False)),
    "convert planes into pixels": ((4, 7, 40), "f4", (1, 2, 0), "u1", 255.0, (4, True)),
    "convert bands into planes": ((7, 40, 13), "u2", (2, 0, 1), "f4", 1e-3, (13, False, "x86")),
    "convert by the stage": ((5, 7, 40), "f4", (1, 2, 0), "u1", 255.0, (0, False)),
}


@pytest.mark.parametrize("simd", [True, False], ids=["simd", "portable"])
@pytest.mark.parametrize("family", CONVERT_FAMILIES)
def test_every_convert_family(family, simd):
    shape, source, axes, result, scale, lanes = CONVERT_FAMILIES[family]
    x = np.random.default_rng(5).uniform(-0.2, 1.2, shape)
    if source == "u1":
        x = (x * 255).clip(0, 255).astype(source)
    elif source == "u2":
        x = (x * 60000).clip(0, 65535).astype(source)
    else:
        x = x.astype(source)
    out = np.zeros(np.transpose(x, axes).shape, result)
    view = np.transpose(x, axes)
    steps = (view.strides, out.strides, (0,) * out.ndim, (0,) * out.ndim)
    with _engine.tune(convert_simd=simd):
        plan = _engine.describe_convert(out.shape, steps, x.itemsize, out.itemsize,
                                        type_code(x.dtype), type_code(out.dtype), True, False)
        assert fb.transpose(x, axes, out=out, dtype=result, scale=scale) is out
    assert out.tobytes() == converted_ref(view, out.dtype, scale).tobytes()
    assert plan["simd"] == (simd and CPU["convert_simd"]), plan
    if lanes[2:] == ("x86",):
        lanes = lanes[:2] if CPU["avx2"] else (0, False)
    assert {(t["lanes_direct"], t["lanes_interleave"]) for t in plan["shapes"]} == {
        lanes if plan["simd"] else (0, False)}, plan


@pytest.mark.parametrize("layout", ["NCHW_VECT_C"])
@pytest.mark.parametrize("bs", [2, 3])
def test_nchw_vect_c(layout, bs):
    space = np.arange(2 * 3 * bs * bs * 4 * bs * 5 * bs * 4, dtype=np.uint32).astype(np.uint8)
    space = space.reshape(2, 3 * bs * bs, 4 * bs, 5 * bs, 4)
    for mode in ("blocks_first", "depth_first"):
        depth = fb.space_to_depth(space, bs, mode, layout)
        assert np.array_equal(depth, space_to_depth_ref(space, bs, mode, layout))
        assert np.array_equal(fb.depth_to_space(depth, bs, mode, layout), space)


# --------------------------------------------------------------------------
# every item width, and the dtypes that hold references
# --------------------------------------------------------------------------

def _dtypes():
    names = ["?", "u1", "i2", "f2", "f4", "i8", "f8", "c16", "V3", "V24", "O", "U3"]
    try:
        import ml_dtypes
        names.append(ml_dtypes.bfloat16)
    except ImportError:
        pass
    return [np.dtype(name) for name in names] + [np.dtypes.StringDType()]


@pytest.mark.parametrize("dtype", _dtypes(), ids=str)
def test_every_item_width(dtype):
    values = np.arange(2 * 4 * 6 * 6) % 7
    if dtype.kind == "V":
        x = _values((2, 4, 6, 6), dtype.itemsize)
    elif dtype.kind in "OUT":
        x = values.astype(str).astype(dtype).reshape(2, 4, 6, 6)
    else:
        x = values.astype(dtype).reshape(2, 4, 6, 6)
    for bs, mode in ((2, "blocks_first"), (3, "depth_first")):
        y = fb.space_to_depth(x, bs, mode)
        assert np.array_equal(y, space_to_depth_ref(x, bs, mode))
        assert np.array_equal(fb.depth_to_space(y, bs, mode), x)
    assert np.array_equal(fb.tile(x, (1, 2, 1, 3)), np.tile(x, (1, 2, 1, 3)))
    assert np.array_equal(fb.transpose(x, (2, 0, 3, 1), num_threads=2), x.transpose(2, 0, 3, 1))
