"""Arrays of other libraries in and out, through DLPack.

The scientific stack's convention (the array API standard's): an array of a
library comes back as an array of that library. An input that is not a
NumPy array but exports DLPack (a PyTorch tensor, a JAX array, anything
with ``__dlpack__``) is read in place through ``numpy.from_dlpack``, and
the result goes back through the input's library (its ``from_dlpack``):
neither way copies. An ``out=`` may be such an array too; it is written in
place and returned as given. Memory on another device than the CPU is
refused with a TypeError that names the device. Anything else keeps the
NumPy path (``numpy.asarray``).
"""
from __future__ import annotations

import functools
import sys

import numpy as np

# DLPack's device types (dlpack.h, DLDeviceType): only kDLCPU memory can be read.
_DLPACK_CPU = 1
_DLPACK_DEVICES = {2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal", 9: "vpi",
                   10: "rocm", 11: "rocm_host", 12: "ext_dev", 13: "cuda_managed", 14: "oneapi",
                   15: "webgpu", 16: "hexagon", 17: "maia"}


def _foreign(value) -> bool:
    """Whether ``value`` is another library's array that exports DLPack."""
    return not isinstance(value, np.ndarray) and hasattr(value, "__dlpack__")


def _as_numpy(value, name: str) -> np.ndarray:
    """A NumPy view of another library's CPU array."""
    device = value.__dlpack_device__() if hasattr(value, "__dlpack_device__") else (_DLPACK_CPU, 0)
    kind, index = int(device[0]), int(device[1])
    if kind != _DLPACK_CPU:
        raise TypeError(f"{name} is on device {_DLPACK_DEVICES.get(kind, f'type {kind}')}:{index}; "
                        f"fastblock works on CPU memory: move it to the CPU first "
                        f"(for example tensor.cpu())")
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


def arrays_in_out(operator):
    """Let ``operator(x, ..., *, out=None, num_threads=None, **keywords)``
    take and give other libraries' arrays (see the module docstring); NumPy
    arrays pass straight through. ``keywords``: rearrange's axis lengths."""
    @functools.wraps(operator)
    def wrapper(x, *args, out=None, num_threads=None, **keywords):
        if type(x) is np.ndarray and (out is None or type(out) is np.ndarray):
            if out is None and num_threads is None:
                return operator(x, *args, **keywords)   # no keywords to parse: a third of the cost
            return operator(x, *args, out=out, num_threads=num_threads, **keywords)
        foreign_x = _foreign(x)
        if foreign_x:
            x_array = _as_numpy(x, "x")
        else:
            x_array = x
        if _foreign(out):
            operator(x_array, *args, out=_as_numpy(out, "out"), num_threads=num_threads,
                     **keywords)
            return out
        result = operator(x_array, *args, out=out, num_threads=num_threads, **keywords)
        if out is not None or not foreign_x:
            return result
        back = _from_dlpack_of(x)
        return result if back is None else back(result)
    return wrapper
