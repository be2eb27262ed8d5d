"""The general path of every front door: any call the fast path leaves,
other libraries' arrays included, with every check and every message.

One function for every operator (einops' ``rearrange`` is its ``reduce``
the same way): the operator's ``prepare`` checks the arguments and gives
the result's shape and the copy (a ``Prepared`` call), and ``execute`` is
the one exit.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .convert import Convert
from .execute import execute
from .interop import _as_numpy, _foreign, as_library_of
from .operation import Operator


def general(op: Operator, x, args: tuple, out, num_threads: Optional[int],
            convert: Optional[Convert]):
    """``op``'s call on ``x`` with ``args`` (its arguments but the
    keywords), into ``out`` or a new array. An ``x`` or ``out`` of another
    library that exports DLPack is read or written in place, and a new
    result goes back as ``x``'s library's array (``interop``)."""
    if type(x) is np.ndarray and (out is None or type(out) is np.ndarray):
        return _run(op, x, args, out, num_threads, convert)
    foreign_x = _foreign(x)
    x_array = _as_numpy(x, "x") if foreign_x else x
    if _foreign(out):
        _run(op, x_array, args, _as_numpy(out, "out"), num_threads, convert)
        return out
    result = _run(op, x_array, args, out, num_threads, convert)
    if out is not None or not foreign_x:
        return result
    return as_library_of(x, result)


def _run(op: Operator, x, args: tuple, out: Optional[np.ndarray], num_threads: Optional[int],
         convert: Optional[Convert]) -> np.ndarray:
    """:func:`general` of NumPy arrays (``x`` any array-like)."""
    x = np.asarray(x)
    call = op.prepare(x, *args)
    return execute(x, call.result_shape, out, call.copy, num_threads,
                   writes_zeros=call.writes_zeros, convert=convert, copies=call.copies)
