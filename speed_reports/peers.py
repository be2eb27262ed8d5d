"""Speed of fastblock against its peers: ONNX Runtime, OpenVINO, PyTorch and TensorFlow.

Every installed peer computes the same operator on the same input. Before
anything is timed, fastblock's result is checked equal to NumPy's
(``fastblock/_reference.py``, ``np.tile``) and each peer's result equal to
fastblock's (values, shape and dtype). A peer whose result differs is listed
as WRONG OUTPUT and not timed. A peer without an operator for the case
(TensorFlow's CPU kernels are NHWC and blocks_first only; ONNX's and
OpenVINO's are channels first) is listed as n/a with the reason: no layout
transpose is added to make a case fit. A peer that cannot be imported, or
fails to build or run a case, gets one line saying why and is skipped.

The contestants, timed round-robin with the copy ceiling (``np.copyto`` of
the result's bytes between two preallocated, touched arrays; see
``fastblock/_timing.py``), all with fastblock's thread count:

- fastblock into a preallocated ``out=``, and into a new result;
- NumPy's way: reshape/transpose/copy (the SPEC's formulas) or ``np.tile``;
- ONNX Runtime: a one-node opset-13 model in an ``InferenceSession``
  (``intra_op_num_threads`` = fastblock's threads, ``inter_op_num_threads``
  = 1), run by ``session.run`` (ORT allocates the result), and through an
  ``io_binding`` that binds the input array and a preallocated output array
  (out=);
- OpenVINO: the opset1 operator compiled for CPU (``INFERENCE_NUM_THREADS``
  = fastblock's threads, one stream, f32 inference precision), run by an
  ``InferRequest`` whose input and output tensors share the memory of the
  input array and of a preallocated output array (out=);
- PyTorch (``torch.set_num_threads``): ``pixel_shuffle`` /
  ``pixel_unshuffle`` for depth_first NCHW, else ``reshape`` + ``permute`` +
  ``contiguous``; ``Tensor.repeat`` for tile; and ``copy_`` of the permuted
  (for tile: expanded) view into a preallocated tensor (out=);
- TensorFlow (intra-op threads = fastblock's, inter-op 1), eager on the CPU:
  ``tf.nn.space_to_depth`` / ``tf.nn.depth_to_space`` (NHWC) and ``tf.tile``
  on a tensor made once before timing.

Each case is also timed against its own limit (``limit``): a block
operator against a two-thread ``np.copyto`` of the result's
bytes, a Tile against a write-only fill of its result.

``report()`` prints the table; ``python -m speed_reports --peers`` calls it.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

import fastblock as fb

from .machine import two_thread_copy
from .source import reference, timing


class PeerCase(NamedTuple):
    """One operator call: ``op`` is ``"space_to_depth"``, ``"depth_to_space"`` or ``"tile"``.

    ``layout`` is ``"NCHW"`` or ``"NHWC"`` and ``mode`` ``"blocks_first"`` or
    ``"depth_first"`` (block operators); ``repeats`` has one entry per axis (tile)."""
    op: str
    shape: tuple[int, ...]
    dtype: str
    block_size: int = 0
    mode: str = "blocks_first"
    layout: str = "NCHW"
    repeats: tuple[int, ...] = ()


# The 64 MiB cases measured against their own limits (bench_limits.py): a
# block operator against a two-thread np.copyto of its result's bytes (it
# moves as many bytes as a copy), a Tile against a write-only fill of its
# result (it reads a fraction of what it writes).
LIMIT_CASES = [
    PeerCase("space_to_depth", (4, 64, 256, 256), "float32", 2, "blocks_first"),
    PeerCase("space_to_depth", (4, 64, 256, 256), "float32", 2, "depth_first"),
    PeerCase("space_to_depth", (4, 64, 256, 256), "float32", 4, "blocks_first"),
    PeerCase("space_to_depth", (4, 64, 256, 256), "float32", 4, "depth_first"),
    PeerCase("space_to_depth", (8, 64, 256, 256), "float16", 2, "blocks_first"),
    PeerCase("space_to_depth", (4, 16, 16, 128, 128), "float32", 2, "blocks_first"),
    PeerCase("depth_to_space", (4, 256, 128, 128), "float32", 2, "blocks_first"),
    PeerCase("depth_to_space", (4, 256, 128, 128), "float32", 2, "depth_first"),
    PeerCase("depth_to_space", (4, 128, 8, 64, 64), "float32", 2, "depth_first"),
    PeerCase("tile", (256, 256, 3), "uint8", repeats=(1, 1, 8)),
    PeerCase("tile", (1024, 1024), "float32", repeats=(4, 4)),
    PeerCase("tile", (64, 1024), "float32", repeats=(16, 1)),
]

CASES = [
    PeerCase("depth_to_space", (1, 64, 256, 256), "float32", 2, "blocks_first"),
    PeerCase("depth_to_space", (1, 64, 256, 256), "float32", 2, "depth_first"),
    PeerCase("space_to_depth", (1, 64, 256, 256), "float32", 2, "blocks_first"),
    PeerCase("space_to_depth", (32, 224, 224, 3), "uint8", 2, "blocks_first", "NHWC"),
    PeerCase("depth_to_space", (32, 112, 112, 12), "uint8", 2, "blocks_first", "NHWC"),
    PeerCase("tile", (1 << 18, 3), "uint8", repeats=(1, 64)),
    PeerCase("tile", (1024, 1024), "float32", repeats=(1, 8)),
] + LIMIT_CASES


class NotApplicable(Exception):
    """The peer has no operator for this case; the message says why."""


class PeerRun(NamedTuple):
    """One way a peer computes a case: ``call()`` returns the result (``into_out``:
    written into a preallocated array, else a new one)."""
    name: str
    into_out: bool
    call: Callable[[], object]


class Peer(NamedTuple):
    """A peer library: ``load(threads)`` imports it and returns ``(state, description)``;
    ``build(state, case, x, out_shape, threads)`` returns its runs for one case."""
    name: str
    load: Callable[[int], tuple[Any, str]]
    build: Callable[[Any, PeerCase, np.ndarray, tuple[int, ...], int], list[PeerRun]]


# ---------------------------------------------------------------------------
# the case, fastblock and NumPy


def case_label(case: PeerCase, result_nbytes: int) -> str:
    """A one-line description of ``case`` whose result has ``result_nbytes`` bytes."""
    dtype = {"float32": "f32", "uint8": "u8"}.get(case.dtype, case.dtype)
    shape = "[" + ",".join(map(str, case.shape)) + "]"
    size = f"{result_nbytes / 2**20:.1f} MiB"
    if case.op == "tile":
        return f"tile {case.repeats} {dtype} {shape} -> {size}"
    op = "s2d" if case.op == "space_to_depth" else "d2s"
    mode = "DCR" if case.mode == "blocks_first" else "CRD"
    return f"{op} {mode} bs={case.block_size} {dtype} {case.layout} {shape} -> {size}"


def limit(case: PeerCase, nbytes: int) -> tuple[str, Callable[[], object]]:
    """The case's own limit for a result of ``nbytes``: a write-only fill of
    a preallocated, touched array for Tile, else ``np.copyto`` between two,
    each half by its own thread (``machine.two_thread_copy``)."""
    if case.op == "tile":
        filled = np.ones(nbytes, np.uint8)
        return "fill (write-only)", lambda: filled.fill(3)
    src = np.ones(nbytes, np.uint8)
    dst = np.ones(nbytes, np.uint8)
    return "copy, 2 threads", lambda: two_thread_copy(dst, src)


def make_input(case: PeerCase, seed: int = 0) -> np.ndarray:
    """A C-contiguous random input of the case's shape and dtype."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, 250, size=case.shape, dtype=np.uint8).astype(case.dtype)


def _data_format(case: PeerCase) -> str:
    """The case's layout as a rank-free ``data_format``."""
    return "channels_last" if case.layout == "NHWC" else "channels_first"


def run_fastblock(case: PeerCase, x: np.ndarray, **kwargs) -> np.ndarray:
    """fastblock's result for ``case``; ``kwargs`` go to the call (``out=``, ``num_threads=``)."""
    if case.op == "tile":
        return fb.tile(x, case.repeats, **kwargs)
    return getattr(fb, case.op)(x, case.block_size, case.mode, _data_format(case), **kwargs)


def run_numpy(case: PeerCase, x: np.ndarray) -> np.ndarray:
    """NumPy's way: the SPEC's reshape/transpose/copy, or ``np.tile``."""
    if case.op == "tile":
        return np.tile(x, case.repeats)
    formula = getattr(reference, f"{case.op}_ref")
    return formula(x, case.block_size, case.mode, _data_format(case))


def block_permutation(case: PeerCase, shape: Sequence[int]) -> tuple[list[int], list[int]]:
    """``(split, order)`` such that ``x.reshape(split).transpose(order)``, reshaped to
    the result's shape, is the block operator's result (any rank, NCHW or NHWC)."""
    bs = case.block_size
    k = len(shape) - 2
    n = shape[0]
    channels_last = case.layout == "NHWC"
    spatial = list(shape[1:-1] if channels_last else shape[2:])
    channels = shape[-1] if channels_last else shape[1]
    blocks_first = case.mode == "blocks_first"
    if case.op == "space_to_depth":
        # split: [N, C, D1/bs, bs, ..., DK/bs, bs] or [N, D1/bs, bs, ..., DK/bs, bs, C];
        # the result's depth axis is (offsets..., C) for blocks_first, (C, offsets...) else
        split = [n]
        for d in spatial:
            split += [d // bs, bs]
        if channels_last:
            split.append(channels)
            positions = [1 + 2 * i for i in range(k)]
            offsets = [2 + 2 * i for i in range(k)]
            depth = offsets + [2 * k + 1] if blocks_first else [2 * k + 1] + offsets
            return split, [0] + positions + depth
        split.insert(1, channels)
        positions = [2 + 2 * i for i in range(k)]
        offsets = [3 + 2 * i for i in range(k)]
        depth = offsets + [1] if blocks_first else [1] + offsets
        return split, [0] + depth + positions
    # depth_to_space: the depth axis splits into (bs,)*K and C' in the mode's order, and
    # each position axis Di is followed by its offset axis
    depth = [bs] * k + [channels // bs ** k] if blocks_first else [channels // bs ** k] + [bs] * k
    first = 1 + k if channels_last else 1  # index of the first depth axis in split
    split = [n] + (spatial + depth if channels_last else depth + spatial)
    offsets = [first + i for i in range(k)] if blocks_first else [first + 1 + i for i in range(k)]
    out_channel = first + k if blocks_first else first
    positions = list(range(1, 1 + k)) if channels_last else list(range(2 + k, 2 + 2 * k))
    interleaved = [axis for pair in zip(positions, offsets, strict=True) for axis in pair]
    if channels_last:
        return split, [0] + interleaved + [out_channel]
    return split, [0, out_channel] + interleaved


def tile_views(shape: Sequence[int], repeats: Sequence[int]) -> tuple[list[int], list[int]]:
    """``(source, target)`` for a tile by broadcasting: the result viewed as
    ``target = [r0, d0, r1, d1, ...]`` is the input viewed as
    ``source = [1, d0, 1, d1, ...]`` and expanded to ``target``."""
    source = [v for d in shape for v in (1, d)]
    target = [v for d, r in zip(shape, repeats, strict=True) for v in (r, d)]
    return source, target


# ---------------------------------------------------------------------------
# the peers


def _load_onnxruntime(threads: int) -> tuple[Any, str]:
    import onnx
    import onnxruntime as ort
    return ort, (f"onnxruntime {ort.__version__} (models by onnx {onnx.__version__}): "
                 f"intra_op_num_threads {threads}, inter_op_num_threads 1")


def _onnx_model(case: PeerCase, x: np.ndarray, out_shape: tuple[int, ...]) -> bytes:
    """A one-node opset-13 model ``x -> y`` computing ``case``, serialized."""
    import onnx
    from onnx import helper, numpy_helper

    initializers = []
    if case.op == "tile":
        node = helper.make_node("Tile", ["x", "repeats"], ["y"])
        initializers.append(numpy_helper.from_array(np.array(case.repeats, np.int64), "repeats"))
    elif case.op == "space_to_depth":
        node = helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=case.block_size)
    else:
        node = helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=case.block_size,
                                mode="DCR" if case.mode == "blocks_first" else "CRD")
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    graph = helper.make_graph([node], "peer", [helper.make_tensor_value_info("x", elem, list(x.shape))],
                              [helper.make_tensor_value_info("y", elem, list(out_shape))],
                              initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _build_onnxruntime(ort: Any, case: PeerCase, x: np.ndarray, out_shape: tuple[int, ...],
                       threads: int) -> list[PeerRun]:
    if case.op != "tile" and (case.layout != "NCHW" or x.ndim != 4):
        raise NotApplicable("ONNX SpaceToDepth/DepthToSpace take 4-D NCHW only")
    if case.op == "space_to_depth" and case.mode != "blocks_first":
        raise NotApplicable("ONNX SpaceToDepth-13 is DCR only")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(_onnx_model(case, x, out_shape), options,
                                   providers=["CPUExecutionProvider"])
    out = np.empty(out_shape, x.dtype)
    binding = session.io_binding()
    binding.bind_cpu_input("x", x)
    binding.bind_output("y", "cpu", 0, out.dtype, out.shape, out.ctypes.data)

    def into_out() -> np.ndarray:
        session.run_with_iobinding(binding)
        return out

    return [PeerRun("onnxruntime run", False, lambda: session.run(None, {"x": x})[0]),
            PeerRun("onnxruntime io_binding out=", True, into_out)]


def _load_openvino(threads: int) -> tuple[Any, str]:
    import openvino as ov
    return ov.Core(), (f"openvino {ov.__version__}: CPU, INFERENCE_NUM_THREADS {threads}, "
                       f"NUM_STREAMS 1, INFERENCE_PRECISION_HINT f32")


def _build_openvino(core: Any, case: PeerCase, x: np.ndarray, out_shape: tuple[int, ...],
                    threads: int) -> list[PeerRun]:
    if case.op != "tile" and case.layout != "NCHW":
        raise NotApplicable("OpenVINO SpaceToDepth-1/DepthToSpace-1 are channels first only")
    import openvino as ov
    try:
        from openvino import opset1
    except ImportError:  # OpenVINO before 2024
        from openvino.runtime import opset1
    param = opset1.parameter(list(x.shape), ov.Type(x.dtype))
    if case.op == "tile":
        node = opset1.tile(param, opset1.constant(np.array(case.repeats, np.int64)))
    else:
        node = getattr(opset1, case.op)(param, case.mode, case.block_size)
    compiled = core.compile_model(ov.Model([node], [param]), "CPU", {
        "INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": 1, "INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()
    out = np.empty(out_shape, x.dtype)
    request.set_input_tensor(ov.Tensor(x, shared_memory=True))
    request.set_output_tensor(ov.Tensor(out, shared_memory=True))

    def into_out() -> np.ndarray:
        request.infer()
        return out

    return [PeerRun("openvino InferRequest out=", True, into_out)]


def _load_torch(threads: int) -> tuple[Any, str]:
    import torch
    torch.set_num_threads(threads)
    return torch, f"torch {torch.__version__}: {torch.get_num_threads()} threads (torch.set_num_threads)"


def _build_torch(torch: Any, case: PeerCase, x: np.ndarray, out_shape: tuple[int, ...],
                 threads: int) -> list[PeerRun]:
    t = torch.from_numpy(x)
    out = torch.from_numpy(np.empty(out_shape, x.dtype))
    if case.op == "tile":
        source, target = tile_views(x.shape, case.repeats)
        out_view = out.view(target)

        def tile_into_out() -> Any:
            out_view.copy_(t.view(source).expand(target))
            return out

        return [PeerRun("torch Tensor.repeat", False, lambda: t.repeat(*case.repeats)),
                PeerRun("torch expand copy_ out=", True, tile_into_out)]
    split, order = block_permutation(case, x.shape)
    out_view = out.view([split[axis] for axis in order])

    def into_out() -> Any:
        out_view.copy_(t.reshape(split).permute(order))
        return out

    if case.layout == "NCHW" and case.mode == "depth_first" and x.ndim == 4:  # 2-D spatial only
        name = "pixel_unshuffle" if case.op == "space_to_depth" else "pixel_shuffle"
        shuffle = getattr(torch.nn.functional, name)
        new = PeerRun(f"torch {name}", False, lambda: shuffle(t, case.block_size))
    else:
        new = PeerRun("torch reshape+permute+contiguous", False,
                      lambda: t.reshape(split).permute(order).contiguous().view(out_shape))
    return [new, PeerRun("torch permute copy_ out=", True, into_out)]


def _load_tensorflow(threads: int) -> tuple[Any, str]:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # no start-up banner
    import tensorflow as tf
    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except RuntimeError:  # the runtime had started: its counts stay, and are printed
        pass
    intra = tf.config.threading.get_intra_op_parallelism_threads() or "default"
    inter = tf.config.threading.get_inter_op_parallelism_threads() or "default"
    return tf, f"tensorflow {tf.__version__}: CPU, intra-op {intra} threads, inter-op {inter}"


def _build_tensorflow(tf: Any, case: PeerCase, x: np.ndarray, out_shape: tuple[int, ...],
                      threads: int) -> list[PeerRun]:
    if case.op != "tile":
        if case.layout != "NHWC" or x.ndim != 4:
            raise NotApplicable("TensorFlow's CPU SpaceToDepth/DepthToSpace take 4-D NHWC only")
        if case.mode != "blocks_first":
            raise NotApplicable("TensorFlow's SpaceToDepth/DepthToSpace are DCR only")
    with tf.device("/CPU:0"):
        tx = tf.constant(x)
    if case.op == "tile":
        name = "tensorflow tf.tile"

        def compute() -> Any:
            return tf.tile(tx, list(case.repeats))
    else:
        name = f"tensorflow tf.nn.{case.op}"
        op = getattr(tf.nn, case.op)

        def compute() -> Any:
            return op(tx, case.block_size, data_format="NHWC")

    def on_cpu() -> Any:
        with tf.device("/CPU:0"):
            return compute()

    return [PeerRun(name, False, on_cpu)]


PEERS = [
    Peer("onnxruntime", _load_onnxruntime, _build_onnxruntime),
    Peer("openvino", _load_openvino, _build_openvino),
    Peer("torch", _load_torch, _build_torch),
    Peer("tensorflow", _load_tensorflow, _build_tensorflow),
]


def load_peers(threads: int) -> tuple[list[tuple[Peer, Any]], list[str]]:
    """Import every peer that can be imported.

    Returns
    -------
    loaded : list of (Peer, state)
        The peers that loaded, with what their ``build`` takes.
    lines : list of str
        One line per peer: its version and thread settings, or why it is skipped.
    """
    loaded, lines = [], []
    for peer in PEERS:
        try:
            state, description = peer.load(threads)
        except ImportError as exc:
            lines.append(f"{peer.name}: not installed ({exc})")
            continue
        except Exception as exc:  # a broken installation must not stop the report
            lines.append(f"{peer.name}: skipped, failed to load ({type(exc).__name__}: {exc})")
            continue
        loaded.append((peer, state))
        lines.append(description)
    return loaded, lines


# ---------------------------------------------------------------------------
# checking and timing


def _as_numpy(value: object) -> np.ndarray:
    """A result as a NumPy array (torch and TensorFlow tensors have ``.numpy()``)."""
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


def difference(got: object, expected: np.ndarray) -> str | None:
    """Why ``got`` is not ``expected`` (dtype, shape or values), or None when equal."""
    got = _as_numpy(got)
    if got.dtype != expected.dtype:
        return f"dtype {got.dtype}, expected {expected.dtype}"
    if got.shape != expected.shape:
        return f"shape {got.shape}, expected {expected.shape}"
    if not np.array_equal(got, expected):
        return f"{int(np.count_nonzero(got != expected))} of {expected.size} elements differ"
    return None


def check_peer(peer: Peer, state: Any, case: PeerCase, x: np.ndarray, expected: np.ndarray,
               threads: int) -> tuple[list[PeerRun], list[str]]:
    """Build ``peer``'s runs for ``case`` and keep those whose result equals ``expected``.

    Returns
    -------
    runs : list of PeerRun
        The runs that gave ``expected``, ready to time.
    notes : list of str
        One line per run left out, or for the whole peer: ``"<name>: n/a: ..."``
        when it has no operator for the case, ``"<name>: WRONG OUTPUT: ..."``,
        ``"<name>: failed to build: ..."`` or ``"<name>: failed to run: ..."``.
    """
    try:
        built = peer.build(state, case, x, expected.shape, threads)
    except NotApplicable as exc:
        return [], [f"{peer.name}: n/a: {exc}"]
    except Exception as exc:  # the peer cannot build this case; report it, do not stop
        return [], [f"{peer.name}: failed to build: {type(exc).__name__}: {_first_line(exc)}"]
    runs, notes = [], []
    for run in built:
        try:
            wrong = difference(run.call(), expected)
        except Exception as exc:
            notes.append(f"{run.name}: failed to run: {type(exc).__name__}: {_first_line(exc)}")
            continue
        if wrong:
            notes.append(f"{run.name}: WRONG OUTPUT: {wrong}")
        else:
            runs.append(run)
    return runs, notes


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else ""


# The key of a measurement's own limit (``limit``) among its contestants.
LIMIT = "limit"


class Measurement(NamedTuple):
    """One case's medians (seconds) by contestant, which of them wrote into ``out=``,
    and the notes on peers left out."""
    label: str
    seconds: dict[str, float]
    into_out: dict[str, bool]
    notes: list[str]


def measure(case: PeerCase, loaded: list[tuple[Peer, Any]], threads: int,
            rounds: int = 7) -> Measurement:
    """Check every contestant's result for ``case``, then time those that agree."""
    x = make_input(case)
    expected = run_numpy(case, x)
    out = np.empty_like(expected)
    for result in (run_fastblock(case, x, num_threads=threads),
                   run_fastblock(case, x, out=out, num_threads=threads)):
        wrong = difference(result, expected)
        if wrong:
            raise AssertionError(f"fastblock differs from NumPy on {case}: {wrong}")
    numpy_name = "numpy np.tile" if case.op == "tile" else "numpy reshape/transpose/copy"
    functions: dict[str, Callable[[], object]] = {
        "fastblock out=": lambda: run_fastblock(case, x, out=out, num_threads=threads),
        "fastblock new": lambda: run_fastblock(case, x, num_threads=threads),
        numpy_name: lambda: run_numpy(case, x),
    }
    into_out = {"fastblock out=": True, "fastblock new": False, numpy_name: False}
    notes = []
    for peer, state in loaded:
        runs, peer_notes = check_peer(peer, state, case, x, expected, threads)
        notes += peer_notes
        for run in runs:
            functions[run.name] = run.call
            into_out[run.name] = run.into_out
    limit_name, functions[LIMIT] = limit(case, expected.nbytes)
    functions["copy"] = timing.copy_ceiling(expected.nbytes)
    label = f"{case_label(case, expected.nbytes)} (limit: {limit_name})"
    del expected, result
    return Measurement(label, timing.interleaved_medians(functions, rounds=rounds), into_out, notes)


def report(threads: int | None = None, cases: list[PeerCase] | None = None) -> list[Measurement]:
    """Print the peers' versions and the comparison table; return the measurements.

    Parameters
    ----------
    threads : int, optional
        Threads for fastblock and every peer; ``fb.get_num_threads()`` when None.
    cases : list of PeerCase, optional
        The cases to run; ``CASES`` when None.
    """
    threads = fb.get_num_threads() if threads is None else threads
    cases = CASES if cases is None else cases
    loaded, lines = load_peers(threads)
    print(f"Peer comparison: fastblock {fb.__version__} ({threads} threads), numpy {np.__version__}")
    for line in lines:
        print(f"  {line}")
    print(f"{'case / contestant':40} {'time':>10} {'/copy':>6} {'fb speed-up':>11}")
    results = []
    for case in cases:
        result = measure(case, loaded, threads)
        results.append(result)
        t = result.seconds
        print(result.label)
        for name, seconds in t.items():
            if name in ("copy", LIMIT):
                continue
            baseline = t["fastblock out=" if result.into_out[name] else "fastblock new"]
            speed_up = "" if name.startswith("fastblock") else f"{seconds / baseline:10.2f}x"
            print(f"  {name:38} {seconds * 1e3:8.2f}ms {seconds / t['copy']:6.2f} {speed_up:>11}".rstrip())
        print(f"  {'copy ceiling (np.copyto, 1 thread)':38} {t['copy'] * 1e3:8.2f}ms {1.0:6.2f}")
        print(f"  {'the limit (in the label)':38} {t[LIMIT] * 1e3:8.2f}ms {t[LIMIT] / t['copy']:6.2f}")
        for note in result.notes:
            print(f"  {note}")
    print("/copy: time over np.copyto of the result's bytes between preallocated, touched arrays\n"
          "(1.00 = a one-thread memory copy; lower is faster). fb speed-up: that row's time over\n"
          "fastblock's (out= rows against fastblock out=, the others against fastblock new).\n"
          "Every timed result was checked equal to fastblock's, and fastblock's to NumPy's.\n"
          "Medians of interleaved rounds.")
    return results


if __name__ == "__main__":
    report()
