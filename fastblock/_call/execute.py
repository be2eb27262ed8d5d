"""The one exit of every operator: ``out=`` or a new result, empty results,
and dtypes whose items hold references.

An operator checks its arguments, computes the result's shape and hands
:func:`execute` its raw copy (a :data:`Copier`). Plain-data items are moved
as raw bytes by the engine, from the strided input where it lies.

Items that hold references (``object``, ``StringDType``, structured dtypes
with object fields) cannot be moved as bytes: every copy must take a
reference. The same copy is instead run by the engine over an array of
source indices, and NumPy's own gather (which keeps reference counts and
strings right) then fetches the items. No item is touched until every
argument has been checked, and NumPy's gather either completes or raises
without side effects.
"""
from __future__ import annotations

from typing import Callable, Optional, Tuple

import numpy as np

from .convert import Convert, check_conversion, is_plain_move, run_converted
from .strided_copy import StridedCopies
from .threads import resolve_num_threads
from .validate import check_out, check_result_size

# copy(source, destination, num_threads): an operator's copy between two
# checked arrays of the same item size.
Copier = Callable[[np.ndarray, np.ndarray, int], None]


def execute(x: np.ndarray, result_shape: tuple[int, ...], out: Optional[np.ndarray],
            copy: Copier, num_threads: Optional[int], writes_zeros: bool = False,
            convert: Optional[Convert] = None,
            copies: Optional[StridedCopies] = None) -> np.ndarray:
    """Check ``out`` (or the result size), then run ``copy`` from ``x`` into
    ``out`` or into a new C-contiguous array, and return that array.

    ``writes_zeros``: ``copy`` also fills items of the result from a single
    zero item of its own (a step-0 source: space_to_batch's padding); only
    the reference-dtype gather needs to know. ``convert``: the call's
    dtype, scale and offset (``_convert``), run by the operator's
    ``copies`` through the engine's convert stage."""
    n_threads = resolve_num_threads(num_threads)
    if convert is not None and not is_plain_move(x.dtype, convert):
        return _execute_converted(x, result_shape, out, copy, copies, convert, n_threads)
    empty = _empty_or_checked(x, result_shape, x.dtype, out)
    if empty is not None:
        return empty
    if x.dtype.hasobject:
        result = _gather_with_references(x, result_shape, copy, n_threads, writes_zeros)
        if out is None:
            return result
        np.copyto(out, result)
        return out
    if out is None:
        out = np.empty(result_shape, dtype=x.dtype)
    if x.dtype.itemsize:
        copy(x, out, n_threads)
    return out


def _gather_with_references(x: np.ndarray, result_shape: tuple[int, ...], copy: Copier,
                            n_threads: int, writes_zeros: bool) -> np.ndarray:
    """A new C-contiguous array of ``result_shape``: ``copy`` applied to ``x``,
    run over the C-order positions of ``x``'s items.

    With ``writes_zeros`` the positions are 1-based and index 0 is the
    dtype's zero (``0`` for object, ``""`` for StringDType), which the
    copy's zero items then pick."""
    first = 1 if writes_zeros else 0
    source_index = np.arange(first, x.size + first, dtype=np.intp).reshape(x.shape)
    result_index = np.empty(result_shape, dtype=np.intp)
    copy(source_index, result_index, n_threads)
    items = x.reshape(-1)
    if writes_zeros:
        # np.concatenate would normalise the dtype (byte order); keep it exactly.
        items = np.zeros(x.size + 1, dtype=x.dtype)
        items[1:] = x.reshape(-1)
    # Index with a 1-D array: a 0-d index would give a scalar, not an array.
    return items[result_index.reshape(-1)].reshape(result_shape)


def _empty_or_checked(x: np.ndarray, result_shape: Tuple[int, ...], dtype: np.dtype,
                      out: Optional[np.ndarray]) -> Optional[np.ndarray]:
    """``out`` checked for a result of ``result_shape`` and ``dtype`` (or a
    new result's size); the result itself where it has no items, else None.
    Nothing then moves, which also keeps huge block sizes or repeats of an
    empty result away from the engine's C-sized arguments."""
    if out is not None:
        check_out(out, result_shape, dtype, x)
    else:
        check_result_size(result_shape, dtype)
    if 0 in result_shape:
        return np.empty(result_shape, dtype=dtype) if out is None else out
    return None


def _execute_converted(x: np.ndarray, result_shape: tuple[int, ...], out: Optional[np.ndarray],
                       copy: Copier, copies: StridedCopies, convert: Convert,
                       n_threads: int) -> np.ndarray:
    """:func:`execute` for a call that converts: every argument checked
    before anything is written."""
    conversion = check_conversion(x.dtype, result_shape, convert)
    empty = _empty_or_checked(x, result_shape, conversion.dtype, out)
    if empty is not None:
        return empty
    if out is None:
        out = np.empty(result_shape, dtype=conversion.dtype)
    run_converted(x, out, copies, copy, conversion, n_threads)
    return out
