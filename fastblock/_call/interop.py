"""Arrays of other libraries in and out, through DLPack.

The scientific stack's convention (the array API standard's): an array of a
library comes back as an array of that library. An input that is not a
NumPy array but exports DLPack (a PyTorch tensor, a JAX array, anything
with ``__dlpack__``) is read in place through ``numpy.from_dlpack``, and
the result goes back through the input's library (its ``from_dlpack``):
neither way copies. An ``out=`` may be such an array too; it is written in
place and returned as given. Memory the CPU addresses is read as NumPy
reads it: the CPU's, pinned host memory (CUDA's and ROCm's) and CUDA
managed memory; any other device is refused with a TypeError that names
it. Anything else keeps the NumPy path (``numpy.asarray``).

torch's dtypes are taken for NumPy's of the same items (``dtype=``, and
torch tensors of bfloat16 or float8, which NumPy's DLPack does not take:
their items are read and returned as integers of their size,
viewed as ml_dtypes'). torch is never imported here: a torch dtype or
tensor exists only once its user has imported torch.
"""
from __future__ import annotations

import sys

import numpy as np

# DLPack's device types (dlpack.h, DLDeviceType). The CPU addresses kDLCPU,
# kDLCUDAHost (pinned), kDLROCMHost and kDLCUDAManaged memory: the four
# numpy.from_dlpack reads.
_DLPACK_CPU = 1
_DLPACK_HOST = (1, 3, 11, 13)
_DLPACK_DEVICES = {2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal", 9: "vpi",
                   10: "rocm", 11: "rocm_host", 12: "ext_dev", 13: "cuda_managed", 14: "oneapi",
                   15: "webgpu", 16: "hexagon", 17: "maia"}

# torch's dtypes that hold the items of the NumPy dtype of the same name,
# and those that hold ml_dtypes' (NumPy has no bfloat16 or float8).
_TORCH_NUMPY = ("bool", "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64",
                "float16", "float32", "float64", "complex64", "complex128")
_TORCH_ML_DTYPES = ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                    "float8_e5m2fnuz")
# Integers by item size: how ml_dtypes' items cross DLPack.
_RAW_ITEMS = {1: np.dtype(np.uint8), 2: np.dtype(np.int16)}

_torch_names = None     # torch dtype -> name above; built at the first torch dtype


def _torch_name_of(torch, dtype):
    """The NumPy or ml_dtypes name of torch dtype ``dtype``, None if it has none."""
    global _torch_names
    names = _torch_names
    if names is None:
        # Built whole, then published: another thread sees all of it or none.
        names = {getattr(torch, name): name for name in _TORCH_NUMPY + _TORCH_ML_DTYPES
                 if hasattr(torch, name)}
        _torch_names = names
    return names.get(dtype)


def numpy_dtype(name: str, what: str) -> np.dtype:
    """The NumPy dtype of a name of _TORCH_NUMPY or _TORCH_ML_DTYPES;
    TypeError naming ``what`` (the argument) when ml_dtypes is missing."""
    if name not in _TORCH_ML_DTYPES:
        return np.dtype(name)
    try:
        import ml_dtypes
    except ImportError:
        ml_dtypes = None
    found = getattr(ml_dtypes, name, None)
    if found is None:
        raise TypeError(f"fastblock: {what} needs ml_dtypes with {name} (NumPy has no {name} "
                        f"of its own): python3 -m pip install ml_dtypes")
    return np.dtype(found)


def torch_dtype_name(value):
    """The NumPy or ml_dtypes name of ``value`` if it is a torch dtype (""
    for one without), None for anything else."""
    torch = sys.modules.get("torch")
    if torch is None or type(value) is not getattr(torch, "dtype", None):
        return None
    return _torch_name_of(torch, value) or ""


def _foreign(value) -> bool:
    """Whether ``value`` is another library's array that exports DLPack."""
    return not isinstance(value, np.ndarray) and hasattr(value, "__dlpack__")


def _torch_ml_name(value):
    """The ml_dtypes name of a torch tensor's dtype, None for any other
    value or dtype."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(value, torch.Tensor):
        return None
    name = _torch_name_of(torch, value.dtype)
    return name if name in _TORCH_ML_DTYPES else None


def _as_numpy(value, name: str) -> np.ndarray:
    """A NumPy view of another library's array in memory the CPU addresses."""
    device = value.__dlpack_device__() if hasattr(value, "__dlpack_device__") else (_DLPACK_CPU, 0)
    kind, index = int(device[0]), int(device[1])
    if kind not in _DLPACK_HOST:
        raise TypeError(f"{name} is on device {_DLPACK_DEVICES.get(kind, f'type {kind}')}:{index}; "
                        f"fastblock works on memory the CPU addresses (the CPU's, pinned or "
                        f"managed): move it to the CPU first (for example tensor.cpu())")
    ml_name = _torch_ml_name(value)
    if ml_name is not None:
        dtype = numpy_dtype(ml_name, f"{name} of dtype torch.{ml_name}")
        torch = sys.modules["torch"]
        items = torch.uint8 if dtype.itemsize == 1 else torch.int16
        return np.from_dlpack(value.view(items)).view(dtype)
    return np.from_dlpack(value)


def _from_dlpack_of(like):
    """The ``from_dlpack`` of ``like``'s library: its array API namespace's,
    else its top-level module's; None if it has neither."""
    namespace = getattr(like, "__array_namespace__", None)
    if namespace is not None:
        function = getattr(namespace(), "from_dlpack", None)
        if function is not None:
            return function
    module = sys.modules.get(type(like).__module__.partition(".")[0])
    return getattr(module, "from_dlpack", None)


def as_library_of(like, result: np.ndarray):
    """``result`` as an array of ``like``'s library, sharing its memory
    (``result`` itself where that library has no ``from_dlpack``)."""
    back = _from_dlpack_of(like)
    if back is None:
        return result
    torch = sys.modules.get("torch")
    if (torch is not None and isinstance(like, torch.Tensor)
            and result.dtype.name in _TORCH_ML_DTYPES and result.dtype.itemsize in _RAW_ITEMS):
        # bfloat16 and float8 cross DLPack as integers of their size.
        return back(result.view(_RAW_ITEMS[result.dtype.itemsize])).view(
            getattr(torch, result.dtype.name))
    return back(result)
