"""An operator, declared once: its front door and its ``prepare``.

A front door is its docstring and one line, ``fastpath.operate(ITS_ROW, x,
(its arguments), out, num_threads, dtype, scale, offset)``; the rest of
what an operator is follows from the two functions. The fast path keys a
call by its ``Operator`` (the object itself: no code to keep apart), the
general path and ``collate`` run its ``prepare``, and ``collate`` and
``fastblock.dask`` find it in the operators' table (``_ops.table``).
"""
from __future__ import annotations

import inspect
from typing import Callable

from .strided_copy import Prepared

# The front door parameters that are not the operator's own arguments.
_CALL_KEYWORDS = ("out", "num_threads", "dtype", "scale", "offset")


class Operator:
    """One operator: ``door``, its public function; ``prepare(x, *arguments)``,
    its checked call (a ``Prepared``); ``name``, the door's; ``arguments``,
    the names of the door's parameters after ``x`` that ``prepare`` takes,
    in order (a ``**`` parameter, rearrange's axis lengths, as one dict)."""

    __slots__ = ("door", "prepare", "name", "arguments")

    def __init__(self, door: Callable, prepare: Callable[..., Prepared]):
        parameters = list(inspect.signature(door).parameters.values())[1:]
        self.door = door
        self.prepare = prepare
        self.name = door.__name__
        self.arguments = tuple(p.name for p in parameters if p.name not in _CALL_KEYWORDS)

    def __repr__(self) -> str:
        return f"Operator({self.name}{self.arguments})"
