"""Conversions in the same pass as the move: every front door's ``dtype=``,
``scale=`` and ``offset=`` (docs/convert.md states the rule for users).

The result is the operator's result converted item by item: ``v``, the
item in the compute type (float64 for a float64 result, else float32), as
``astype`` converts it; times ``scale``, then plus ``offset``, each rounded
on its own; then into the result dtype (a float as ``astype`` converts, an
8- or 16-bit integer rounded half to even and saturated, NaN to 0). A float
result without scale and offset is ``astype`` of the item itself.

This module checks the three arguments and runs the operator's strided
copies (``Prepared.copies``) through the engine's convert stage
(``_engine.convert_copy``). The scale and the offset are read along the
copy's own axes: the operator describes its copy once more into a
stand-in for the result whose strides are theirs, broadcast to the
result's shape (an operator's axes depend on the shapes alone; their steps
are linear in the result's strides).
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from .. import _engine
from .interop import numpy_dtype, torch_dtype_name
from .memory import compute_values, stand_in
from .strided_copy import StridedCopy

# The engine's numeric type codes (src/convert.h: FB_NUM_*), by dtype.
_CODES = {np.dtype(np.bool_): 0, np.dtype(np.uint8): 1, np.dtype(np.int8): 2,
          np.dtype(np.uint16): 3, np.dtype(np.int16): 4, np.dtype(np.uint32): 5,
          np.dtype(np.int32): 6, np.dtype(np.uint64): 7, np.dtype(np.int64): 8,
          np.dtype(np.float16): 9, np.dtype(np.float32): 11, np.dtype(np.float64): 12}
_BFLOAT16 = 10
_FLOAT64 = 12
_RESULTS = (1, 2, 3, 4, 9, _BFLOAT16, 11, _FLOAT64)
_SOURCES_TEXT = ("bool, int8 to int64, uint8 to uint64, float16, bfloat16, float32 or float64")
_RESULTS_TEXT = "float16, bfloat16, float32, float64, uint8, int8, uint16 or int16"


class Convert(NamedTuple):
    """A front door's ``dtype``, ``scale`` and ``offset`` as given."""

    dtype: object
    scale: object
    offset: object


def converting(dtype, scale, offset) -> Optional[Convert]:
    """The conversion a call asks for, or None (a plain move)."""
    if dtype is None and scale is None and offset is None:
        return None
    return Convert(dtype, scale, offset)


def result_dtype(dtype) -> np.dtype:
    """``dtype=`` (not None) as a NumPy dtype: NumPy's, or a torch dtype as
    NumPy's of the same items (torch.bfloat16: ml_dtypes'); else TypeError."""
    try:
        return np.dtype(dtype)
    except TypeError as error:
        name = torch_dtype_name(dtype)
        if not name:
            what = ("a torch dtype without a NumPy one" if name == ""
                    else "not a NumPy dtype (nor a torch dtype)")
            raise TypeError(f"fastblock: dtype={dtype!r} is {what}; a result dtype is "
                            f"{_RESULTS_TEXT} (NumPy's or torch's)") from error
        return numpy_dtype(name, f"dtype={dtype!r}")


def is_plain_move(source: np.dtype, convert: Convert) -> bool:
    """Whether ``convert`` asks for nothing but the move: the source's own
    dtype, no scale, no offset (astype to the same dtype copies the bytes)."""
    if convert.scale is not None or convert.offset is not None:
        return False
    try:
        return result_dtype(convert.dtype) == source
    except TypeError:
        return False


class Conversion(NamedTuple):
    """A checked conversion: the result dtype, the engine's type codes, the
    compute type (the engine's rule: ``_engine.compute_type``), and the
    scale and offset in it (None: not given)."""

    dtype: np.dtype
    src_code: int
    dst_code: int
    compute: np.dtype
    scale: Optional[np.ndarray]
    offset: Optional[np.ndarray]


def type_code(dtype: np.dtype) -> Optional[int]:
    """The engine's code for a native-order numeric dtype, else None."""
    code = _CODES.get(dtype)
    if code is None and dtype.name == "bfloat16" and dtype.itemsize == 2 and dtype.isnative:
        return _BFLOAT16
    return code if code is None or dtype.isnative else None


def check_conversion(source: np.dtype, result_shape: tuple, convert: Convert) -> Conversion:
    """``convert`` checked for a source of dtype ``source`` and a result of
    ``result_shape``: TypeError for an unsupported pair or a non-numeric
    scale or offset, ValueError for one that does not broadcast."""
    result = source if convert.dtype is None else result_dtype(convert.dtype)
    src_code, dst_code = type_code(source), type_code(result)
    if src_code is None or dst_code not in _RESULTS:
        raise TypeError(f"fastblock: cannot convert {source} to {result}: the source must be "
                        f"{_SOURCES_TEXT}, the result {_RESULTS_TEXT} (native byte order)")
    affine = convert.scale is not None or convert.offset is not None
    compute = np.dtype(np.float64 if _engine.compute_type(src_code, dst_code, affine) == _FLOAT64
                       else np.float32)
    return Conversion(result, src_code, dst_code, compute,
                      _affine_values(convert.scale, "scale", compute, result_shape),
                      _affine_values(convert.offset, "offset", compute, result_shape))


def _affine_values(value, name: str, compute, result_shape: tuple) -> Optional[np.ndarray]:
    """``scale`` or ``offset`` as an array of the compute type that
    broadcasts against the result, in its compact form (axes of step 0 cut
    to one value: ``memory.compact``); checked by its shape as given
    (None stays None)."""
    if value is None:
        return None
    values = np.asarray(value)
    if values.dtype.kind not in "biuf" and type_code(values.dtype) is None:
        raise TypeError(f"fastblock: {name} must hold real numbers; got dtype {values.dtype}")
    lead = len(result_shape) - values.ndim
    if lead < 0 or any(n != 1 and n != result_shape[lead + k] for k, n in enumerate(values.shape)):
        raise ValueError(f"fastblock: {name} of shape {values.shape} does not broadcast to the "
                         f"result's shape {tuple(result_shape)}")
    return compute_values(values, compute)


def broadcast_strides(values: np.ndarray, shape: tuple) -> tuple:
    """``values``'s strides broadcast to ``shape`` (checked by _affine_values):
    0 along the axes it lacks or holds once."""
    lead = len(shape) - values.ndim
    return (0,) * lead + tuple([0 if n == 1 else step
                                for n, step in zip(values.shape, values.strides)])


def run_converted(x: np.ndarray, result: np.ndarray, copies, copy, conversion: Conversion,
                  n_threads: int, shifts=((0, 0),)) -> None:
    """Run an operator's copy of ``x`` into ``result`` (checked, of the
    result dtype), converting; ``copies``/``copy``: its Prepared copies.
    ``shifts``: (source, result) byte shifts, one run each (the samples of
    a batch, which share ``x``'s strides; collate); scale and offset are
    read the same for each."""
    program = converting_copies(x, result, copies, conversion, shifts)
    if program is None:
        # NCHW_VECT_C copies that no axes describe: the move first, then the
        # conversion over the result's own axes.
        if shifts != ((0, 0),):
            raise AssertionError("fastblock: a batch of copies that no axes describe")
        moved = np.empty(result.shape, x.dtype)
        copy(x, moved, n_threads)
        x = moved
        program = converting_copies(x, result, _identity_copies, conversion)
    run_program(program, x, result, conversion.src_code, conversion.dst_code, conversion.scale,
                conversion.offset, n_threads)


def _identity_copies(src: np.ndarray, dst: np.ndarray) -> list:
    """The copy of ``src`` onto ``dst``'s strides, item for item."""
    return [StridedCopy(src.shape, src.strides, dst.strides)]


def converting_copies(x: np.ndarray, result: np.ndarray, copies, conversion: Conversion,
                      shifts=((0, 0),)) -> Optional[list]:
    """The operator's copies as the convert stage runs them: for each, its
    zero_source flag, extents, four sides' steps and parts' four offsets
    (see run_converted); None where no axes describe them. Depends on the
    geometry alone: a program for every later call of the same one."""
    shape = result.shape
    sides = [conversion.scale, conversion.offset]
    strided = copies(x, stand_in(x.dtype, shape, result.strides))
    if strided is None:
        return None
    side_copies = [None if v is None else copies(x, stand_in(x.dtype, shape,
                                                             broadcast_strides(v, shape)))
                   for v in sides]
    program = []
    for i, part in enumerate(strided):
        steps = [part.src_strides, part.dst_strides]
        offsets = [[src_off + (0 if part.zero_source else src_shift), dst_off + dst_shift]
                   for src_shift, dst_shift in shifts for src_off, dst_off in part.parts]
        for side in side_copies:
            if side is None:
                steps.append((0,) * len(part.extents))
                for at in offsets:
                    at.append(0)
            else:
                mine = side[i]
                if mine.extents != part.extents or len(mine.parts) != len(part.parts):
                    raise AssertionError("fastblock: an operator's axes changed with the strides")
                steps.append(mine.dst_strides)
                for at, (_, side_off) in zip(offsets, mine.parts * len(shifts)):
                    at.append(side_off)
        program.append((part.zero_source, part.extents, steps, offsets))
    return program


def run_program(program: list, x: np.ndarray, result: np.ndarray, src_code: int, dst_code: int,
                scale: Optional[np.ndarray], offset: Optional[np.ndarray], n_threads: int) -> None:
    """Run converting_copies' ``program`` from ``x`` into ``result``: type
    codes, and scale and offset in the compute type (Conversion's)."""
    _engine.ConvertProgram(program, x.itemsize, result.itemsize, src_code, dst_code,
                           scale is not None, offset is not None)(x, result, scale, offset,
                                                                  n_threads)
