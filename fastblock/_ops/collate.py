"""fastblock.collate: one operator over a batch of samples into one array,
in one call (a DataLoader's collate, with the conversion of each sample in
the same pass). Samples and ``out=`` of another library (torch tensors)
are read and written in place through DLPack, and the batch comes back as
the first sample's library's array, as the front doors do (interop)."""
from __future__ import annotations

import functools
import inspect
from typing import Callable, Optional, Sequence

import numpy as np

from .._call.convert import check_conversion, converting, is_plain_move, run_converted
from .._call.interop import _as_numpy, _foreign, as_library_of
from .._call.memory import stand_in
from .._call.operation import Operator
from .._call.threads import resolve_num_threads
from .._call.validate import check_out, check_result_size
from .table import by_door


def collate(samples: Sequence, op: Callable, *args, out: Optional[np.ndarray] = None,
            num_threads: Optional[int] = None, **kwargs) -> np.ndarray:
    """Stack ``op(sample, *args, **kwargs)`` for every sample into one array.

    ``result[i]`` equals ``op(samples[i], *args, **kwargs)`` exactly, the
    conversion of ``dtype=``, ``scale=`` and ``offset=`` included; the
    whole batch is one call, its threads shared across the samples.

    Parameters
    ----------
    samples : sequence of array_like
        Arrays of one shape and dtype: NumPy's, or CPU arrays of another
        library that exports DLPack (torch tensors), read in place.
    op : callable
        A fastblock front door: space_to_depth, depth_to_space, tile,
        transpose, pixel_shuffle, pixel_unshuffle, space_to_batch,
        batch_to_space, rearrange or repeat.
    *args, **kwargs
        ``op``'s arguments after its input (``dtype``, ``scale`` and
        ``offset`` included; not ``out`` or ``num_threads``).
    out : numpy.ndarray or DLPack array, optional
        Destination of shape ``(len(samples),) + op's result shape`` and the
        result's dtype, not overlapping any sample; nothing is written to
        it unless every argument is valid.
    num_threads : int, optional
        Threads for the whole batch (default: :func:`fastblock.get_num_threads`).

    Returns
    -------
    numpy.ndarray or the first sample's library's array
        ``out``, or a new C-contiguous array: a NumPy array, or where
        ``samples[0]`` is another library's array (a torch tensor), that
        library's array sharing its memory.

    Raises
    ------
    TypeError
        ``op`` is not a fastblock front door; its own errors.
    ValueError
        No samples, or samples of different shapes or dtypes; a bad ``out``;
        ``op``'s own errors.

    Examples
    --------
    >>> import numpy as np, fastblock as fb
    >>> images = [np.full((2, 2, 3), i, np.uint8) for i in range(4)]
    >>> batch = fb.collate(images, fb.transpose, (2, 0, 1), dtype=np.float32, scale=0.5)
    >>> batch.shape, float(batch[3, 0, 0, 0])
    ((4, 3, 2, 2), 1.5)
    """
    operator = _operator_of(op)
    given = list(samples)
    if not given:
        raise ValueError("samples is empty; collate needs at least one sample")
    arrays = [_as_numpy(sample, f"samples[{i}]") if _foreign(sample) else np.asarray(sample)
              for i, sample in enumerate(given)]
    if not _foreign(out):
        result = _collate(arrays, operator, args, out, num_threads, kwargs)
        return as_library_of(given[0], result) if out is None and _foreign(given[0]) else result
    _collate(arrays, operator, args, _as_numpy(out, "out"), num_threads, kwargs)
    return out


def _operator_of(op: Callable) -> Operator:
    """The operator of front door ``op``; TypeError for anything else."""
    try:
        return by_door(op)
    except KeyError:
        raise TypeError(f"op must be a fastblock front door, got {op!r}") from None


# A front door's signature, made once: inspect.signature took 90 us a call,
# as long as the rest of a collate of 64 small samples.
_signature = functools.lru_cache(maxsize=None)(inspect.signature)


def _collate(arrays: list, operator: Operator, args: tuple, out: Optional[np.ndarray],
             num_threads: Optional[int], kwargs: dict) -> np.ndarray:
    """:func:`collate` of NumPy samples into a NumPy ``out`` (or a new array)."""
    first = arrays[0]
    for i, array in enumerate(arrays):
        if array.shape != first.shape or array.dtype != first.dtype:
            raise ValueError(f"samples must share one shape and dtype: samples[0] is "
                             f"{first.shape} {first.dtype}, samples[{i}] {array.shape} {array.dtype}")
    dtype, scale, offset = (kwargs.pop(name, None) for name in ("dtype", "scale", "offset"))
    bound = _signature(operator.door).bind(first, *args, **kwargs)
    bound.apply_defaults()
    call = operator.prepare(first, *[bound.arguments[name] for name in operator.arguments])
    convert = converting(dtype, scale, offset)
    if convert is not None and is_plain_move(first.dtype, convert):
        convert = None
    shape = (len(arrays),) + tuple(call.result_shape)
    conversion = None if convert is None else check_conversion(first.dtype, call.result_shape, convert)
    result_dtype = first.dtype if conversion is None else conversion.dtype
    if out is not None:
        for array in arrays:
            check_out(out, shape, result_dtype, array)
    else:
        check_result_size(shape, result_dtype)
        out = np.empty(shape, result_dtype)
    n_threads = resolve_num_threads(num_threads)
    if out.size == 0:
        return out
    shares_strides = all(array.strides == first.strides for array in arrays)
    if conversion is not None and shares_strides and call.copies(first, stand_in(
            first.dtype, out.shape[1:], out.strides[1:])) is not None:
        base = first.__array_interface__["data"][0]
        shifts = tuple((array.__array_interface__["data"][0] - base, i * out.strides[0])
                       for i, array in enumerate(arrays))
        run_converted(first, out[0], call.copies, call.copy, conversion, n_threads, shifts)
        return out
    for i, array in enumerate(arrays):
        operator.door(array, *args, out=out[i], num_threads=n_threads, dtype=dtype, scale=scale,
                      offset=offset, **kwargs)
    return out
