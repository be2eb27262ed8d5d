"""Docstring sections that several operators share, written once.

An operator's docstring holds a marker line such as ``%(out_and_result)s``;
:func:`fill_doc` replaces it with the section, at the marker's indentation
(Cython-compiled modules keep their docstrings dedented), when the module is
imported.
"""
from __future__ import annotations

import re
import textwrap
from typing import Any, Callable, TypeVar

Function = TypeVar("Function", bound=Callable[..., Any])

_SECTIONS = {
    "out_and_result": """\
out : numpy.ndarray, optional
    Destination of the result's shape and dtype, writable, any strides,
    not overlapping ``x``. Nothing is written to it unless every argument
    is valid.
num_threads : int, optional
    Threads for this call (default: :func:`fastblock.get_num_threads`).

Returns
-------
numpy.ndarray
    ``out``, or a new C-contiguous array of ``x``'s dtype (or ``dtype``).""",
    "convert": """\
dtype : data-type or torch.dtype, optional
    The result's dtype, converted in the same pass: float16, bfloat16,
    float32, float64, uint8, int8, uint16 or int16 (NumPy's, or torch's
    as NumPy's: torch.bfloat16 is ml_dtypes.bfloat16), from any numeric
    dtype. A float result is ``astype``'s; an integer result is rounded
    half to even and saturated (NaN to 0). See docs/convert.md.
scale, offset : array_like, optional
    ``v * scale + offset``, where ``v`` is the item in float32 (float64 for
    a float64 result), the multiply and the add each rounded (no fused
    multiply-add); each broadcasts against the result, e.g. ``(3, 1, 1)``
    per channel of a ``C, H, W`` result. Without ``dtype``, the result
    keeps ``x``'s dtype.""",
    "dask_result": """\
Same arguments, checks and results as the NumPy function; the result is a
lazy :class:`dask.array.Array` of ``x``'s dtype (or ``dtype``: ``dtype``,
``scale`` and ``offset`` as for the NumPy function, the scale and offset
broadcast against the whole result).""",
    "dask_pattern_parameters": """\
Parameters
----------
x : dask.array.Array
    Array-likes go through :func:`dask.array.asarray`.
pattern, **axes_lengths
    As for the NumPy function of the same name.
out : None
    Not supported on Dask arrays (TypeError); present for the signature.
num_threads : int, optional
    fastblock threads per block (default 1).""",
    "dask_block_parameters": """\
Parameters
----------
x : dask.array.Array
    Rank >= 3 (array-likes go through :func:`dask.array.asarray`).
block_size, mode, data_format
    As for the NumPy function of the same name.
out : None
    Not supported on Dask arrays (TypeError); present for the signature.
num_threads : int, optional
    fastblock threads per block (default 1).""",
}

_MARKER = re.compile(r"^( *)%\((\w+)\)s$", re.M)


def fill_doc(function: Function) -> Function:
    """``function`` with the shared sections written into its docstring."""
    if function.__doc__:        # None under python -OO
        function.__doc__ = _MARKER.sub(
            lambda m: textwrap.indent(_SECTIONS[m[2]], m[1], lambda line: line.strip() != ""),
            function.__doc__)
    return function
