"""Model-input preprocessing: the layout move, the dtype conversion and the
per-channel scale and offset in one pass, against the ways
users do it today.

Each case is timed on one thread and on fastblock's default thread count,
its ways interleaved in one process (``fastblock/_timing.py``: medians of
rounds that take turns), and every figure is divided by the **limit**
measured in the same run: ``np.copyto`` of the result's bytes between two
preallocated, already-written arrays on one thread. The ways:

- ``numpy``: NumPy's chain, ``x = np.transpose(img, (2, 0, 1)).astype(np.float32,
  order="C"); x *= scale; x += offset`` (or the case's equivalent: a plain
  ``astype`` without scale; ``rint``, ``clip`` and ``astype`` in place for an
  integer result; a loop over the samples into the preallocated batch).
  ``order="C"``: ``astype``'s default order ``"K"`` keeps the input's memory
  order, so it would hand on an HWC array seen as CHW, the layout move never
  made;
- ``fb+numpy``: fastblock's move, then NumPy's conversion
  (``fb.transpose(img, (2, 0, 1)).astype(np.float32)``, then in place
  ``*=`` and ``+=``; the batch: ``fb.collate`` of the move, then
  ``np.multiply(moved, scale, out=out); out += offset``);
- ``fastblock``: one pass, ``fb.transpose(img, (2, 0, 1), dtype=np.float32,
  scale=s, offset=o, out=out)`` (the batch: ``fb.collate(samples, fb.transpose,
  (2, 0, 1), dtype=..., out=out)``), into a preallocated result;
- ``fastblock new``: the same call without ``out=`` (a new result each call);
- ``opencv``: ``cv2.dnn.blobFromImageWithParams`` / ``blobFromImagesWithParams``
  into a preallocated blob, where cv2 imports and it can express the case
  (1, 3 or 4 channels of uint8 or float32 into a float32 blob). It computes
  ``(x - mean) * scalefactor`` per channel: ``mean = 255 * mean``,
  ``scalefactor = 1 / (255 * std)``, ``swapRB`` for a BGR image;
- ``torch``: PyTorch's chain where torch imports, ``torch.set_num_threads`` set
  to the same thread count: ``torch.from_numpy(img).permute(2, 0, 1).to(
  torch.float32, memory_format=torch.contiguous_format).div_(255).sub_(mean)
  .div_(std)`` (torchvision v2's ``ToDtype(scale=True)`` and ``Normalize``, on a
  contiguous result); the batch stacks the samples into a preallocated tensor
  (``torch.stack(..., out=)``, as ``default_collate`` does); the way back is
  ``torchvision.utils.save_image``'s ``mul(255).add_(0.5).clamp_(0, 255)``;
- ``limit new``: ``x.copy()`` of the result's bytes, the limit of a new result
  (a copy and its allocation).

Every way's result is checked first against the conversion's contract (docs/convert.md), its NumPy
expression (a multiply, then an add, in float32, then one rounding):
bit for bit for ``numpy``, ``fb+numpy``, ``fastblock`` and ``fastblock new``;
to within a few units in the last place for ``opencv`` and ``torch``, which
divide by 255 and by ``std`` (their contiguity too).

``python -m speed_reports --preprocess`` prints the ratio table and draws
the ratios as grouped bars on a log axis into a PNG (``--plot PATH``;
default ``preprocess.png``); ``--quick`` takes 3 rounds instead of 7,
``--rounds N`` any count, ``--cases`` a subset. The asv benchmark
(``asv_bench/benchmarks/bench_preprocess.py``) times the ``fastblock`` way and the
limit of the same cases.
"""
from __future__ import annotations

import argparse
import os
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from .source import timing

# fastblock is imported inside the functions that call it, so that
# ``python -m speed_reports --help`` works without a build.

NUMPY, FB_NUMPY, FASTBLOCK, FASTBLOCK_NEW = "numpy", "fb+numpy", "fastblock", "fastblock new"
OPENCV, TORCH, LIMIT_NEW, LIMIT = "opencv", "torch", "limit new", "limit"
WAYS = (NUMPY, FB_NUMPY, FASTBLOCK, FASTBLOCK_NEW, OPENCV, TORCH, LIMIT_NEW)
# The ways whose result must be the contract's expression bit for bit.
EXACT_WAYS = (NUMPY, FB_NUMPY, FASTBLOCK, FASTBLOCK_NEW)

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
# A mean and a standard deviation per band of a 13-band uint16 satellite
# image (Sentinel-2-like reflectances, 0 to 10000).
BANDS = 13
BAND_MEAN = tuple(1000.0 + 150.0 * band for band in range(BANDS))
BAND_STD = tuple(500.0 + 60.0 * band for band in range(BANDS))


class Case(NamedTuple):
    """One preprocessing case: ``fb.transpose(view(x), axes, dtype=result_dtype,
    scale=..., offset=...)`` (``batch`` > 0: ``fb.collate`` of that call over
    ``batch`` samples).

    ``shape``/``dtype``: the input (one sample's where ``batch``); ``view``:
    what the call reads of it (``""`` all of it, ``"bgr"`` ``x[None, ..., ::-1]``
    (a batch axis of 1 and the channels reversed, in place), ``"first"``
    ``x[0]``). The conversion is ``(x / divide - mean) / std * multiply`` per
    channel of the result (axis ``-3``), given to fastblock as ``scale`` and
    ``offset`` (:func:`scale_offset`)."""

    name: str
    label: str
    shape: Tuple[int, ...]
    dtype: str
    axes: Tuple[int, ...]
    result_dtype: str
    view: str = ""
    batch: int = 0
    divide: float = 1.0
    mean: Tuple[float, ...] = ()
    std: Tuple[float, ...] = ()
    multiply: float = 1.0


CASES = (
    Case("imagenet", "224x224x3 u8 -> 3x224x224 f32, ImageNet mean/std", (224, 224, 3), "uint8",
         (2, 0, 1), "float32", divide=255.0, mean=IMAGENET_MEAN, std=IMAGENET_STD),
    Case("batch_f32", "64 x 224x224x3 u8 -> 64x3x224x224 f32, collate", (224, 224, 3), "uint8",
         (2, 0, 1), "float32", batch=64, divide=255.0, mean=IMAGENET_MEAN, std=IMAGENET_STD),
    Case("batch_bf16", "64 x 224x224x3 u8 -> 64x3x224x224 bf16, collate", (224, 224, 3),
         "uint8", (2, 0, 1), "bfloat16", batch=64, divide=255.0, mean=IMAGENET_MEAN,
         std=IMAGENET_STD),
    Case("yolo", "640x640x3 u8 BGR -> 1x3x640x640 f32 RGB, x/255", (640, 640, 3), "uint8",
         (0, 3, 1, 2), "float32", view="bgr", divide=255.0),
    Case("video", "8x1080x1920x3 u8 -> 8x3x1080x1920 f16", (8, 1080, 1920, 3), "uint8",
         (0, 3, 1, 2), "float16"),
    Case("bands", "256x256x13 u16 -> 13x256x256 f32, mean/std per band", (256, 256, BANDS),
         "uint16", (2, 0, 1), "float32", mean=BAND_MEAN, std=BAND_STD),
    Case("back", "1x3x512x512 f32 -> 512x512x3 u8, x255 rounded", (1, 3, 512, 512), "float32",
         (1, 2, 0), "uint8", view="first", multiply=255.0),
)
CASE_BY_NAME = {case.name: case for case in CASES}
# The threads of each run: one, and fastblock's default (None).
THREAD_SETTINGS = (1, None)
PLOT_DEFAULT = "preprocess.png"


def shrink(case: Case, side: int = 8, batch: int = 3) -> Case:
    """``case`` on a small input (tests, smoke runs): the two spatial extents
    ``side``, at most 2 frames, at most ``batch`` samples."""
    shape = list(case.shape)
    if case.view == "first":                 # [1, C, H, W]
        shape[-2:] = [side, side]
    elif len(shape) == 4:                    # [N, H, W, C]
        shape = [min(shape[0], 2), side, side, shape[-1]]
    else:                                    # [H, W, C]
        shape[:2] = [side, side]
    return case._replace(shape=tuple(shape), batch=min(case.batch, batch))


# ---------------------------------------------------------------------------
# Dtypes, scale and offset, the contract's expression

def result_dtype(case: Case) -> np.dtype:
    if case.result_dtype == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(case.result_dtype)


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """The contract's compute type: float64 for a float64 result, else float32."""
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


def scale_offset(case: Case) -> Tuple[object, object]:
    """(scale, offset) as given to fastblock (float64; None where there is
    none): per channel, shape (C, 1, 1), where the case has a mean and std."""
    if case.mean:
        mean = np.asarray(case.mean, np.float64).reshape(-1, 1, 1)
        std = np.asarray(case.std, np.float64).reshape(-1, 1, 1)
        return 1.0 / (case.divide * std), -mean / std
    factor = case.multiply / case.divide
    return (None if factor == 1.0 else factor), None


def contract_convert(r: np.ndarray, dtype, scale=None, offset=None) -> np.ndarray:
    """Issue 50's contract, its NumPy expression of converting the moved array
    ``r``: a multiply, then an add, in the compute type, then one rounding
    (``rint`` and saturation for an integer result); no scale, no offset and a
    float result: ``astype`` alone."""
    dtype = np.dtype(dtype)
    if scale is None and offset is None and (dtype.kind == "f" or dtype.name == "bfloat16"):
        return r.astype(dtype)
    ct = compute_dtype(dtype)
    v = r.astype(ct)
    if scale is not None:
        v = v * np.asarray(scale).astype(ct)
    if offset is not None:
        v = v + np.asarray(offset).astype(ct)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.where(np.isnan(v), 0, np.clip(np.rint(v), info.min, info.max)).astype(dtype)
    return v.astype(dtype)


def make_input(case: Case, seed: int = 0):
    """The case's input: one array, or a list of ``batch`` arrays."""
    rng = np.random.default_rng(seed)

    def one(shape):
        if case.dtype == "uint8":
            return rng.integers(0, 256, shape, dtype=np.uint8)
        if case.dtype == "uint16":
            return rng.integers(0, 10001, shape, dtype=np.uint16)
        # float, about -0.1 to 1.1: the way back saturates at both ends
        return (rng.random(shape, dtype=np.float32) * 1.2 - 0.1).astype(case.dtype)

    if case.batch:
        return [one(case.shape) for _ in range(case.batch)]
    return one(case.shape)


def view_of(case: Case, x: np.ndarray) -> np.ndarray:
    """What the call reads of one input (a view, no copy)."""
    if case.view == "bgr":
        return x[None, ..., ::-1]
    if case.view == "first":
        return x[0]
    return x


def moved(case: Case, x) -> np.ndarray:
    """The layout move alone (NumPy), the batch stacked."""
    if case.batch:
        return np.stack([view_of(case, sample).transpose(case.axes) for sample in x])
    return np.ascontiguousarray(view_of(case, x).transpose(case.axes))


def expected(case: Case, x) -> np.ndarray:
    """The result the contract defines, from NumPy's move."""
    scale, offset = scale_offset(case)
    return contract_convert(moved(case, x), result_dtype(case), scale, offset)


def result_shape(case: Case) -> Tuple[int, ...]:
    one = view_of(case, np.broadcast_to(np.uint8(0), case.shape)).transpose(case.axes).shape
    return ((case.batch,) + one) if case.batch else one


def result_nbytes(case: Case) -> int:
    return int(np.prod(result_shape(case))) * result_dtype(case).itemsize


# ---------------------------------------------------------------------------
# The ways

class Prepared(NamedTuple):
    """One case at one thread setting: the calls by way (the limit's
    included), their results checked; ``notes``: why a way is left out."""
    calls: Dict[str, Callable[[], object]]
    notes: Dict[str, str]
    nbytes: int


def _in_compute_type(value, ct: np.dtype):
    return None if value is None else np.asarray(value).astype(ct)


def _numpy_convert_in_place(v: np.ndarray, dtype: np.dtype, scale, offset) -> np.ndarray:
    """The case's conversion of ``v`` (already the compute type, a new array;
    ``scale``, ``offset``: in that type or None) in place where it can be, the
    way NumPy users write it."""
    ct = v.dtype
    if scale is not None:
        v *= scale
    if offset is not None:
        v += offset
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        np.rint(v, out=v)
        np.clip(v, info.min, info.max, out=v)
        return v.astype(dtype)
    return v if dtype == ct else v.astype(dtype)


def numpy_call(case: Case, x, out: np.ndarray) -> Callable[[], object]:
    """NumPy's chain (a new result; the batch into ``out``)."""
    dtype = result_dtype(case)
    scale, offset = scale_offset(case)
    plain = scale is None and offset is None
    ct = compute_dtype(dtype)
    scale_ct, offset_ct = _in_compute_type(scale, ct), _in_compute_type(offset, ct)
    axes = case.axes
    if case.batch:
        samples = [view_of(case, sample) for sample in x]
        if dtype == ct:
            def batch_into_out():
                for i, sample in enumerate(samples):
                    row = out[i]
                    np.multiply(sample.transpose(axes), scale_ct, out=row)
                    row += offset_ct
                return out
            return batch_into_out

        def batch_through_compute_type():
            for i, sample in enumerate(samples):
                v = np.multiply(sample.transpose(axes), scale_ct, dtype=ct)
                v += offset_ct
                out[i] = v
            return out
        return batch_through_compute_type
    view = view_of(case, x)
    if plain:
        return lambda: view.transpose(axes).astype(dtype, order="C")
    return lambda: _numpy_convert_in_place(view.transpose(axes).astype(ct, order="C"),
                                           dtype, scale_ct, offset_ct)


def fb_numpy_call(case: Case, x, out: np.ndarray, threads) -> Callable[[], object]:
    """fastblock's move (``fb.transpose``; the batch ``fb.collate``), then
    NumPy's conversion."""
    import fastblock as fb
    dtype = result_dtype(case)
    scale, offset = scale_offset(case)
    ct = compute_dtype(dtype)
    scale_ct, offset_ct = _in_compute_type(scale, ct), _in_compute_type(offset, ct)
    axes = case.axes
    if case.batch:
        samples = [view_of(case, sample) for sample in x]

        def batch():
            m = fb.collate(samples, fb.transpose, axes, num_threads=threads)
            if dtype == ct:
                np.multiply(m, scale_ct, out=out)
                np.add(out, offset_ct, out=out)
            else:
                v = np.multiply(m, scale_ct, dtype=ct)
                v += offset_ct
                out[...] = v
            return out
        return batch
    view = view_of(case, x)
    if scale is None and offset is None:
        return lambda: fb.transpose(view, axes, num_threads=threads).astype(dtype)
    return lambda: _numpy_convert_in_place(
        fb.transpose(view, axes, num_threads=threads).astype(ct, copy=False),
        dtype, scale_ct, offset_ct)


def fastblock_call(case: Case, x, out: Optional[np.ndarray], threads) -> Callable[[], object]:
    """fastblock's one pass, into ``out`` (None: a new result)."""
    import fastblock as fb
    dtype = result_dtype(case)
    scale, offset = scale_offset(case)
    options = dict(dtype=dtype, num_threads=threads)
    if scale is not None:
        options["scale"] = scale
    if offset is not None:
        options["offset"] = offset
    if out is not None:
        options["out"] = out
    if case.batch:
        samples = [view_of(case, sample) for sample in x]
        return lambda: fb.collate(samples, fb.transpose, case.axes, **options)
    view = view_of(case, x)
    return lambda: fb.transpose(view, case.axes, **options)


def opencv_call(case: Case, x, cv2) -> Callable[[], object]:
    """``cv2.dnn.blobFromImage(s)WithParams`` into a preallocated blob; raises
    NotImplementedError where a blob cannot express the case."""
    channels = case.shape[-1]
    hwc_to_chw = (case.view, case.axes) in (("", (2, 0, 1)), ("bgr", (0, 3, 1, 2)))
    if (not hwc_to_chw or len(case.shape) != 3 or channels not in (1, 3, 4)
            or case.result_dtype != "float32" or case.dtype not in ("uint8", "float32")):
        raise NotImplementedError("no blob for this case (1, 3 or 4 channels of one HWC "
                                  "image into float32 NCHW)")
    params = cv2.dnn.Image2BlobParams()
    params.ddepth = cv2.CV_32F
    if case.mean:
        params.mean = tuple(case.divide * np.asarray(case.mean)) + (0.0,) * (4 - channels)
        params.scalefactor = tuple(1.0 / (case.divide * np.asarray(case.std))) + \
            (1.0,) * (4 - channels)
    else:
        factor = case.multiply / case.divide
        params.scalefactor = (factor,) * 4
    # blobFromImage reads an image as it is in memory: a BGR image and swapRB
    params.swapRB = case.view == "bgr"
    height, width = case.shape[:2]
    blob = np.empty((case.batch or 1, channels, height, width), np.float32)
    if case.batch:
        return lambda: cv2.dnn.blobFromImagesWithParams(x, blob, params)
    return lambda: cv2.dnn.blobFromImageWithParams(x, blob, params)


def torch_call(case: Case, x, torch) -> Callable[[], object]:
    """PyTorch's chain (module docstring), on tensors sharing ``x``'s memory."""
    to_torch = {"float32": torch.float32, "float16": torch.float16,
                "bfloat16": torch.bfloat16, "uint8": torch.uint8}
    dtype = to_torch[case.result_dtype]
    contiguous = torch.contiguous_format
    channels = result_shape(case)[-3]
    mean = torch.tensor(case.mean, dtype=torch.float32).reshape(channels, 1, 1) \
        if case.mean else None
    std = torch.tensor(case.std, dtype=torch.float32).reshape(channels, 1, 1) \
        if case.mean else None
    axes = case.axes

    def chain(t):
        if case.view == "first":             # the way back: save_image's chain
            return (t[0].mul(case.multiply).add_(0.5).clamp_(0, 255).permute(axes)
                    .to(dtype, memory_format=contiguous))
        if case.view == "bgr":               # torch has no negative strides
            t = t.flip(-1)[None]
        t = t.permute(axes)
        if not case.mean and case.divide == 1.0:
            return t.to(dtype, memory_format=contiguous)
        v = t.to(torch.float32, memory_format=contiguous)
        if case.divide != 1.0:
            v = v.div_(case.divide)
        if case.mean:
            v = v.sub_(mean).div_(std)
        return v if dtype == torch.float32 else v.to(dtype)

    if case.batch:
        tensors = [torch.from_numpy(sample) for sample in x]
        out = torch.empty(result_shape(case), dtype=dtype)
        return lambda: torch.stack([chain(t) for t in tensors], out=out)
    tensor = torch.from_numpy(x)
    return lambda: chain(tensor)


def _as_numpy(result, torch=None) -> Tuple[np.ndarray, bool]:
    """(the result as a NumPy array, whether it is C-contiguous)."""
    if torch is not None and isinstance(result, torch.Tensor):
        contiguous = result.is_contiguous()
        if result.dtype == torch.bfloat16:
            return result.float().numpy(), contiguous
        return result.numpy(), contiguous
    result = np.asarray(result)
    return result, result.flags.c_contiguous


def _tolerance(dtype: np.dtype) -> Tuple[float, float]:
    """(rtol, atol) for a way that computes differently (divides)."""
    if dtype.kind in "iu":
        return 0.0, 1.0
    if dtype.name == "bfloat16":
        return 2.0 ** -7, 1e-6
    if dtype == np.float16:
        return 2.0 ** -10, 1e-6
    return 1e-5, 1e-5


def same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal shape, dtype and bytes (-0.0 and NaN payloads included)."""
    return (got.shape == want.shape and got.dtype == want.dtype
            and np.array_equal(np.ascontiguousarray(got).view(np.uint8),
                               np.ascontiguousarray(want).view(np.uint8)))


def check(case: Case, way: str, result, want: np.ndarray, torch=None) -> None:
    """Raise AssertionError unless ``result`` is the contract's (bit for bit
    for EXACT_WAYS, else within _tolerance), C-contiguous."""
    got, contiguous = _as_numpy(result, torch)
    if got.shape != want.shape and got.size == want.size and \
            got.shape[1:] == want.shape and got.shape[0] == 1:
        got = got[0]                         # cv2's blob of one image: [1, C, H, W]
    problem = ""
    if got.shape != want.shape:
        problem = f"shape {got.shape}, not {want.shape}"
    elif not contiguous:
        problem = "not C-contiguous"
    elif way in EXACT_WAYS:
        if not same_bits(got, want):
            problem = "not bit for bit the contract's result"
    else:
        rtol, atol = _tolerance(want.dtype)
        if not np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                           atol=atol):
            worst = np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))
            problem = f"differs by up to {worst:g}"
    if problem:
        raise AssertionError(f"{case.name}: {way}: {problem}")


def prepare(case: Case, threads=None, torch=None, cv2=None,
            ways: Sequence[str] = WAYS, x=None) -> Prepared:
    """The calls of ``ways`` for one case, at ``threads`` (None: fastblock's
    default), each checked against the contract's result, and the limit.
    A way that cannot run here goes to ``notes`` with the reason; a way that
    gives a wrong result raises AssertionError."""
    x = make_input(case) if x is None else x
    want = expected(case, x)
    dtype = result_dtype(case)
    nbytes = want.nbytes
    calls: Dict[str, Callable[[], object]] = {}
    notes: Dict[str, str] = {}
    builders = {
        NUMPY: lambda: numpy_call(case, x, np.empty(want.shape, dtype)),
        FB_NUMPY: lambda: fb_numpy_call(case, x, np.empty(want.shape, dtype), threads),
        FASTBLOCK: lambda: fastblock_call(case, x, np.empty(want.shape, dtype), threads),
        FASTBLOCK_NEW: lambda: fastblock_call(case, x, None, threads),
        OPENCV: lambda: opencv_call(case, x, cv2),
        TORCH: lambda: torch_call(case, x, torch),
    }
    for way in ways:
        if way == LIMIT_NEW:
            source = np.ones(nbytes, np.uint8)
            calls[way] = source.copy
            continue
        if way == OPENCV and cv2 is None:
            notes[way] = "cv2 not importable"
            continue
        if way == TORCH and torch is None:
            notes[way] = "torch not importable"
            continue
        try:
            call = builders[way]()
            result = call()
        except NotImplementedError as exc:
            notes[way] = str(exc)
            continue
        except Exception as exc:  # a way this build or library lacks: said, not fatal
            notes[way] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            continue
        check(case, way, result, want, torch)
        calls[way] = call
    calls[LIMIT] = timing.copy_ceiling(nbytes)
    return Prepared(calls, notes, nbytes)


# ---------------------------------------------------------------------------
# Measuring

class _Threads:
    """torch's and cv2's thread counts set to ``count`` inside the block."""

    def __init__(self, count: int, torch=None, cv2=None):
        self.count, self.torch, self.cv2 = count, torch, cv2

    def __enter__(self):
        if self.torch is not None:
            self.torch_before = self.torch.get_num_threads()
            self.torch.set_num_threads(self.count)
        if self.cv2 is not None:
            self.cv2_before = self.cv2.getNumThreads()
            self.cv2.setNumThreads(self.count)
        return self

    def __exit__(self, *exc):
        if self.torch is not None:
            self.torch.set_num_threads(self.torch_before)
        if self.cv2 is not None:
            self.cv2.setNumThreads(self.cv2_before)
        return False


def default_threads() -> int:
    import fastblock as fb
    return fb.get_num_threads()


def measure(case: Case, threads=None, torch=None, cv2=None, rounds: int = 7,
            min_seconds: float = 0.005, ways: Sequence[str] = WAYS
            ) -> Tuple[Dict[str, float], Dict[str, str]]:
    """({way: median seconds per call}, the limit's included; {way: why it
    is left out}) of one case at one thread setting."""
    count = threads if threads is not None else default_threads()
    with _Threads(count, torch, cv2):
        prepared = prepare(case, threads, torch, cv2, ways)
        seconds = timing.interleaved_medians(prepared.calls, rounds=rounds,
                                             min_seconds=min_seconds)
    return seconds, prepared.notes


Results = Dict[Tuple[str, Optional[int]], Dict[str, float]]


def run(cases: Sequence[Case] = CASES, thread_settings=THREAD_SETTINGS, torch=None, cv2=None,
        rounds: int = 7, min_seconds: float = 0.005, ways: Sequence[str] = WAYS,
        progress: bool = False) -> Tuple[Results, Dict[str, Dict[str, str]]]:
    """Every case at every thread setting: ({(case name, threads): seconds by
    way}, {case name: notes})."""
    results: Results = {}
    notes: Dict[str, Dict[str, str]] = {}
    for threads in thread_settings:
        for case in cases:
            if progress:
                print(f"  {case.name}, threads {threads or 'default'} ...", flush=True)
            results[(case.name, threads)], notes[case.name] = measure(
                case, threads, torch, cv2, rounds, min_seconds, ways)
    return results, notes


def ratios(seconds: Dict[str, float]) -> Dict[str, float]:
    """Each way's time over the limit's (the limit itself left out)."""
    return {way: t / seconds[LIMIT] for way, t in seconds.items() if way != LIMIT}


# ---------------------------------------------------------------------------
# Table and plot

def _threads_label(threads, default: Optional[int] = None) -> str:
    if threads is not None:
        return f"{threads} thread" + ("s" if threads != 1 else "")
    return f"default ({default if default is not None else default_threads()} threads)"


def table(results: Results, ways: Sequence[str] = WAYS, default: Optional[int] = None
          ) -> List[Tuple[str, List[str], List[List[str]]]]:
    """Per thread setting (title, column heads, rows): a row per case, its
    label first, then each way's time over the limit ("-" where it did not
    run), the limit's time in ms and NumPy's chain over fastblock's one pass."""
    blocks = []
    settings = list(dict.fromkeys(threads for _, threads in results))
    case_names = list(dict.fromkeys(name for name, _ in results))
    for threads in settings:
        head = ["case"] + list(ways) + ["limit ms", "np/fb"]
        rows = []
        for name in case_names:
            seconds = results.get((name, threads))
            if seconds is None:
                continue
            r = ratios(seconds)
            cells = [name] + [f"{r[way]:.2f}" if way in r else "-" for way in ways]
            cells.append(f"{seconds[LIMIT] * 1e3:.3f}")
            speedup = (seconds[NUMPY] / seconds[FASTBLOCK]
                       if NUMPY in seconds and FASTBLOCK in seconds else None)
            cells.append(f"{speedup:.1f}x" if speedup is not None else "-")
            rows.append(cells)
        blocks.append((f"threads: {_threads_label(threads, default)}", head, rows))
    return blocks


def print_table(results: Results, notes: Dict[str, Dict[str, str]], ways: Sequence[str] = WAYS,
                default: Optional[int] = None) -> None:
    for title, head, rows in table(results, ways, default):
        print(f"\n{title}; time / limit (np.copyto of the result's bytes, 1 thread, same run)")
        widths = [max(len(head[0]), *(len(row[0]) for row in rows))] + \
            [max(len(h), 6) for h in head[1:]]
        print("  " + "  ".join(h.ljust(widths[0]) if i == 0 else h.rjust(widths[i])
                               for i, h in enumerate(head)))
        for row in rows:
            print("  " + "  ".join(c.ljust(widths[0]) if i == 0 else c.rjust(widths[i])
                                   for i, c in enumerate(row)))
    print()
    for name, case_notes in notes.items():
        for way, why in case_notes.items():
            print(f"  {name} {way}: n/a ({why})")


def plot(results: Results, path: str, ways: Sequence[str] = WAYS,
         default: Optional[int] = None) -> Optional[str]:
    """Grouped bars, a group per case, a bar per way, of time over the limit
    on a log axis; a panel per thread setting. The path written, or None
    (with a line saying so) without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib, or the bench extra)")
        return None
    settings = list(dict.fromkeys(threads for _, threads in results))
    case_names = list(dict.fromkeys(name for name, _ in results))
    shown = [way for way in ways if any(way in seconds for seconds in results.values())]
    figure, axes = plt.subplots(len(settings), 1, squeeze=False, sharey=True,
                                figsize=(1.4 * len(case_names) + 2, 3.8 * len(settings) + 0.6))
    width = 0.8 / max(1, len(shown))
    for panel, threads in zip(axes[:, 0], settings):
        for index, way in enumerate(shown):
            xs, heights = [], []
            for position, name in enumerate(case_names):
                seconds = results.get((name, threads), {})
                if way in seconds:
                    xs.append(position + (index - (len(shown) - 1) / 2) * width)
                    heights.append(seconds[way] / seconds[LIMIT])
            panel.bar(xs, heights, width, label=way,
                      color="0.6" if way == LIMIT_NEW else None)
        panel.axhline(1.0, color="black", linewidth=0.8)
        panel.set_yscale("log")
        panel.set_xticks(range(len(case_names)))
        panel.set_xticklabels(case_names, rotation=30, ha="right", fontsize=8)
        panel.set_title(_threads_label(threads, default), fontsize=9)
        panel.set_ylabel("time / limit")
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="upper center", ncol=(len(labels) + 1) // 2, fontsize=8)
    figure.suptitle("time / limit (np.copyto of the result's bytes, 1 thread); lower is faster",
                    fontsize=9, y=0.005, va="bottom")
    figure.tight_layout(rect=(0, 0.03, 1, 0.95))
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


# ---------------------------------------------------------------------------
# The report

def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "--preprocess options",
        "--plot PATH (default here preprocess.png), --quick (3 rounds) and --rounds N "
        "(default 7) of the --pipeline options apply to --preprocess too")
    group.add_argument("--cases", default=None,
                       help=f"comma-separated subset of {', '.join(CASE_BY_NAME)}")


def _import(name: str):
    try:
        return __import__(name)
    except ImportError:
        return None


def plot_path(args) -> str:
    """``--plot``'s path for this report: PLOT_DEFAULT where it was left at
    the --pipeline report's default; beside that report's own where both run."""
    path = getattr(args, "plot", None)
    if path is None or path == "pipeline.png":
        return PLOT_DEFAULT
    if path and getattr(args, "pipeline", False):
        stem, ext = os.path.splitext(path)
        return f"{stem}-preprocess{ext or '.png'}"
    return path


def selected_cases(args) -> Tuple[Case, ...]:
    text = getattr(args, "cases", None)
    if not text:
        return CASES
    names = [item.strip() for item in text.split(",") if item.strip()]
    unknown = [name for name in names if name not in CASE_BY_NAME]
    if unknown:
        raise SystemExit(f"unknown case: {', '.join(unknown)} (known: {', '.join(CASE_BY_NAME)})")
    return tuple(CASE_BY_NAME[name] for name in names)


def report(args=None) -> Tuple[Results, Dict[str, Dict[str, str]]]:
    """Run every case, print the table, draw the plot; return the medians and notes."""
    import fastblock as fb
    if args is None:
        parser = argparse.ArgumentParser()
        add_arguments(parser)
        args = parser.parse_args([])
    quick = getattr(args, "quick", False)
    rounds = getattr(args, "rounds", None) or (3 if quick else 7)
    cases = selected_cases(args)
    torch, cv2 = _import("torch"), _import("cv2")
    default = fb.get_num_threads()
    print(f"Preprocessing in one pass: fastblock {fb.__version__}, default {default} "
          f"threads; numpy {np.__version__}; "
          + (f"torch {torch.__version__}" if torch else "no torch") + "; "
          + (f"cv2 {cv2.__version__}" if cv2 else "no cv2")
          + f". Medians of {rounds} interleaved rounds, each way's time over the limit's "
            f"(np.copyto of the result's bytes between preallocated arrays, 1 thread) in the "
            f"same run; lower is faster, 1.00 = a one-thread copy of the result.")
    if hasattr(os, "getloadavg"):  # other work on the cores moves every threaded figure
        print(f"Load average before the run: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    for case in cases:
        print(f"  {case.name:10} {case.label}")
    results, notes = run(cases, THREAD_SETTINGS, torch, cv2, rounds=rounds)
    print_table(results, notes, default=default)
    print("numpy: NumPy's chain (astype(order='C'), *=, +=); fb+numpy: fb.transpose/fb.collate, "
          "then NumPy's conversion; fastblock: one pass into out=; fastblock new: one pass, a "
          "new result; limit new: x.copy() of the result's bytes; np/fb: numpy's time over "
          "fastblock's.")
    path = plot_path(args)
    if path:
        written = plot(results, path, default=default)
        if written:
            print(f"plot: {os.path.abspath(written)}")
    return results, notes
