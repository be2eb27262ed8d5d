"""fastblock against the operators' own implementations: ONNX's node test data,
onnx.reference, onnxruntime and OpenVINO (each optional: skipped when absent).
The larger enumerations are seeded draws of their cross products
(``draws.drawn``): every value on every run (each ONNX operator and mode
at every block size), the rest sampled."""
import os

import numpy as np
import pytest

import fastblock as fb
from draws import drawn

ONNX_TEST_OPS = ("spacetodepth", "depthtospace", "tile")


# ---------------------------------------------------------------------------
# ONNX node test data

def _onnx_node_cases():
    """(name, model, inputs, outputs) of ONNX's node tests for our three ops.

    Read from ``onnx/backend/test/data/node`` when the wheel ships it; else
    produced by the case scripts that generate that data
    (``onnx/backend/test/case/node/{spacetodepth,depthtospace,tile}.py``)."""
    import onnx
    from onnx import numpy_helper

    cases = {}
    data_dir = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
    if os.path.isdir(data_dir):
        for name in sorted(os.listdir(data_dir)):
            if not name.startswith(tuple(f"test_{op}" for op in ONNX_TEST_OPS)):
                continue
            if name.endswith("_expanded"):
                continue
            model = onnx.load(os.path.join(data_dir, name, "model.onnx"))
            for ds in sorted(os.listdir(os.path.join(data_dir, name))):
                ds_dir = os.path.join(data_dir, name, ds)
                if not ds.startswith("test_data_set"):
                    continue

                def load(prefix, ds_dir=ds_dir):
                    arrays = []
                    k = 0
                    while os.path.exists(os.path.join(ds_dir, f"{prefix}_{k}.pb")):
                        tensor = onnx.TensorProto()
                        with open(os.path.join(ds_dir, f"{prefix}_{k}.pb"), "rb") as f:
                            tensor.ParseFromString(f.read())
                        arrays.append(numpy_helper.to_array(tensor))
                        k += 1
                    return arrays

                cases[f"{name}/{ds}"] = (model, load("input"), load("output"))
    if not cases:
        import importlib

        import onnx.backend.test.case.node as node_cases
        for op in ONNX_TEST_OPS:
            importlib.import_module(f"onnx.backend.test.case.node.{op}")
        for case in node_cases._NodeTestCases:
            if not case.name.startswith(tuple(f"test_{op}" for op in ONNX_TEST_OPS)):
                continue
            if case.name.endswith("_expanded"):
                continue
            for k, (inputs, outputs) in enumerate(case.data_sets):
                cases[f"{case.name}/{k}"] = (case.model, list(inputs), list(outputs))
    return cases


@pytest.fixture(scope="module")
def onnx_node_cases():
    pytest.importorskip("onnx")
    return _onnx_node_cases()


def _attributes(node):
    from onnx import helper
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return {k: (v.decode() if isinstance(v, bytes) else v) for k, v in attrs.items()}


def _run_onnx_node_with_fastblock(model, inputs):
    (node,) = model.graph.node
    attrs = _attributes(node)
    if node.op_type == "SpaceToDepth":
        return fb.space_to_depth(inputs[0], attrs["blocksize"], attrs.get("mode", "DCR"))
    if node.op_type == "DepthToSpace":
        return fb.depth_to_space(inputs[0], attrs["blocksize"], attrs.get("mode", "DCR"))
    if node.op_type == "Tile":
        return fb.tile(inputs[0], inputs[1])
    raise AssertionError(node.op_type)


def test_onnx_node_test_data(onnx_node_cases):
    names = sorted(onnx_node_cases)
    # the suite covers each of the three operators, DCR and CRD
    for op in ONNX_TEST_OPS:
        assert any(n.startswith(f"test_{op}") for n in names), names
    assert any("crd" in n for n in names)
    for name in names:
        model, inputs, outputs = onnx_node_cases[name]
        got = _run_onnx_node_with_fastblock(model, inputs)
        expected = outputs[0]
        assert got.dtype == expected.dtype, name
        assert got.shape == expected.shape, name
        np.testing.assert_array_equal(got, expected, err_msg=name)


# ---------------------------------------------------------------------------
# tiny ONNX models: onnx.reference and onnxruntime on random inputs

def _model(op_type, x_dtype, inputs, opset, out_rank=4, **attrs):
    """A one-node model; ``inputs`` are (name, dtype, rank)."""
    onnx = pytest.importorskip("onnx")
    from onnx import helper
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(x_dtype))
    node = helper.make_node(op_type, [name for name, _, _ in inputs], ["y"], **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dt)),
                                       [None] * rank)
         for name, dt, rank in inputs],
        [helper.make_tensor_value_info("y", elem, [None] * out_rank)])
    # IR version 8 so that onnxruntime accepts it
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    onnx.checker.check_model(model)
    return model


def _random(shape, dtype, rng):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    return (rng.standard_normal(shape) * 100).astype(dtype)


BLOCK_CASES = {
    # name: (op_type, onnx mode or None, fastblock op, fastblock mode)
    "S2D": ("SpaceToDepth", None, fb.space_to_depth, "blocks_first"),
    "D2S-DCR": ("DepthToSpace", "DCR", fb.depth_to_space, "DCR"),
    "D2S-CRD": ("DepthToSpace", "CRD", fb.depth_to_space, "CRD"),
}


def _block_input_shape(op_type, bs, n, c, h, w):
    if op_type == "SpaceToDepth":
        return (n, c, h * bs, w * bs)
    return (n, c * bs * bs, h, w)


def _block_model(case, bs, dtype):
    """The one-node opset-13 ONNX model of a BLOCK_CASES entry."""
    op_type, onnx_mode, _, _ = case
    attrs = {"blocksize": bs}
    if onnx_mode:
        attrs["mode"] = onnx_mode
    return _model(op_type, dtype, [("x", dtype, 4)], 13, **attrs)


def _check_block_op(session, case, bs, dtype, shapes, rng):
    """fastblock's result equals ``session.run``'s (ONNX's reference
    evaluator or ONNX Runtime) on inputs of each ``_block_input_shape``."""
    op_type, _, op, mode = case
    for shape_args in shapes:
        x = _random(_block_input_shape(op_type, bs, *shape_args), dtype, rng)
        (expected,) = session.run(None, {"x": x})
        got = op(x, bs, mode)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


@drawn(24, case_name=list(BLOCK_CASES), bs=[1, 2, 3, 4],
       dtype=[np.float32, np.float64, np.float16, np.int8, np.uint8, np.int32, np.int64, np.bool_],
       cover=[("case_name", "bs"), ("dtype",)])
def test_onnx_reference_evaluator_block_ops(case_name, bs, dtype, rng):
    pytest.importorskip("onnx")
    from onnx.reference import ReferenceEvaluator
    case = BLOCK_CASES[case_name]
    session = ReferenceEvaluator(_block_model(case, bs, dtype))
    _check_block_op(session, case, bs, dtype, [(1, 1, 1, 1), (2, 3, 2, 3), (1, 2, 5, 1)], rng)


def test_onnx_reference_evaluator_space_to_depth_crd(rng):
    """SpaceToDepth's mode attribute (newer opsets): CRD = depth_first."""
    onnx = pytest.importorskip("onnx")
    from onnx.reference import ReferenceEvaluator
    schema = onnx.defs.get_schema("SpaceToDepth")
    if "mode" not in schema.attributes:
        pytest.skip("this onnx has no SpaceToDepth mode attribute")
    opset = schema.since_version
    for mode, fb_mode in [("DCR", "blocks_first"), ("CRD", "depth_first")]:
        model = _model("SpaceToDepth", np.float32, [("x", np.float32, 4)], opset,
                       blocksize=2, mode=mode)
        x = _random((2, 3, 4, 6), np.float32, rng)
        (expected,) = ReferenceEvaluator(model).run(None, {"x": x})
        np.testing.assert_array_equal(fb.space_to_depth(x, 2, fb_mode), expected)


# onnxruntime's CPU SpaceToDepth/DepthToSpace kernels exist for these types
ORT_BLOCK_DTYPES = [np.float32, np.float64, np.float16, np.int8, np.uint8]


@drawn(16, case_name=list(BLOCK_CASES), bs=[1, 2, 3, 4], dtype=ORT_BLOCK_DTYPES,
       cover=[("case_name", "bs"), ("dtype",)])
def test_onnxruntime_block_ops(case_name, bs, dtype, rng):
    ort = pytest.importorskip("onnxruntime")
    case = BLOCK_CASES[case_name]
    session = ort.InferenceSession(_block_model(case, bs, dtype).SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    _check_block_op(session, case, bs, dtype, [(1, 1, 1, 1), (2, 3, 2, 3), (3, 2, 4, 5)], rng)


TILE_CASES = [
    ((3,), (4,)),
    ((2, 3), (2, 2)),
    ((2, 3), (1, 3)),
    ((2, 3, 4), (3, 1, 2)),
    ((2, 1, 3, 1), (1, 2, 1, 3)),
    ((2, 3), (0, 2)),
    ((1, 2, 3, 4, 2), (2, 1, 2, 1, 3)),
]


@drawn(18, {"shape,repeats": TILE_CASES,
            "dtype": [np.float32, np.float64, np.int8, np.uint8, np.int16, np.int32, np.int64,
                      np.uint64, np.bool_, np.float16]})
def test_onnx_tile_reference_and_onnxruntime(shape, repeats, dtype, rng):
    pytest.importorskip("onnx")
    from onnx.reference import ReferenceEvaluator
    model = _model("Tile", dtype, [("x", dtype, len(shape)), ("repeats", np.int64, 1)], 13,
                   out_rank=len(shape))
    x = _random(shape, dtype, rng)
    reps = np.array(repeats, dtype=np.int64)
    got = fb.tile(x, reps)
    (expected,) = ReferenceEvaluator(model).run(None, {"x": x, "repeats": reps})
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    try:
        import onnxruntime as ort
    except ImportError:
        return
    try:
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
    except Exception as exc:  # no CPU kernel for this type
        if "NOT_IMPLEMENTED" in str(exc):
            return
        raise
    (expected_ort,) = session.run(None, {"x": x, "repeats": reps})
    np.testing.assert_array_equal(got, expected_ort)


# ---------------------------------------------------------------------------
# OpenVINO opset1 SpaceToDepth / DepthToSpace / Tile on CPU

@pytest.fixture(scope="module")
def ov_core():
    ov = pytest.importorskip("openvino")
    return ov.Core()


def _opset1():
    try:
        from openvino import opset1
    except ImportError:
        from openvino.runtime import opset1
    return opset1


def _ov_run(core, build, x):
    import openvino as ov
    opset1 = _opset1()
    param = opset1.parameter(list(x.shape), ov.Type(x.dtype))
    node = build(opset1, param)
    compiled = core.compile_model(ov.Model([node], [param]), "CPU")
    return np.asarray(compiled(x)[0])


def _ov_shape(op_name, rank, bs, rng):
    k = rank - 2
    spatial = list(rng.integers(1, 4, k))
    if op_name == "space_to_depth":
        return [2, 3] + [bs * s for s in spatial]
    return [2, 2 * bs ** k] + spatial


OV_DTYPES = [np.float32, np.uint8, np.float16]


# OpenVINO compiles a model per case: a small draw.
@drawn(18, op_name=["space_to_depth", "depth_to_space"], mode=["blocks_first", "depth_first"],
       rank=[3, 4, 5], bs=[1, 2, 3], dtype=OV_DTYPES,
       cover=[("op_name", "mode"), ("rank", "bs"), ("op_name", "dtype")])
def test_openvino_block_ops(ov_core, op_name, mode, rank, bs, dtype, rng):
    shape = _ov_shape(op_name, rank, bs, rng)
    x = _random(shape, dtype, rng)
    expected = _ov_run(ov_core, lambda o, p: getattr(o, op_name)(p, mode, bs), x)
    got = getattr(fb, op_name)(x, bs, mode)
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8])
@pytest.mark.parametrize("shape,repeats", TILE_CASES + [((2, 3, 4), (2,)), ((3,), (2, 2, 2))])
def test_openvino_tile(ov_core, shape, repeats, dtype, rng):
    x = _random(shape, dtype, rng)
    reps = np.array(repeats, dtype=np.int64)
    expected = _ov_run(ov_core, lambda o, p: o.tile(p, o.constant(reps)), x)
    got = fb.tile(x, reps)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
