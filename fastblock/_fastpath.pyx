# cython: boundscheck=False, wraparound=False
"""The common call of space_to_depth and depth_to_space, decided in C.

On a tiny input the general argument handling of ``_api`` costs more than the
copy, compiled as it is: it works on Python objects (shape tuples, dtype
attributes, names looked up in any case). This decides the common call from
the array struct instead: ``x`` an ndarray of a plain-data dtype with items, a
Python ``int`` block size, ``mode`` and ``data_format`` spelled as in the
tables below (not NCHW_VECT_C), ``num_threads`` None or a positive ``int``,
and ``out`` None or a writable, contiguous ndarray of exactly the result's
shape and dtype whose bytes lie apart from ``x``'s.

It accepts only calls that the general path accepts and runs the same engine
copy on them. Every other call, each error included, gets None and takes the
general path, which decides (and words every message) alone.
"""

cimport numpy as cnp
from cpython.dict cimport PyDict_GetItemWithError
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF

from ._memory cimport is_clear_destination

from . import _engine, _threads
from . import _layouts

cnp.import_array()

ctypedef cnp.npy_intp intp

cdef extern from "numpy/arrayobject.h":
    # Steals a reference to descr.
    object PyArray_Empty(int nd, intp* dims, cnp.PyArray_Descr* descr, int fortran)
    bint PyDataType_FLAGCHK(cnp.PyArray_Descr* descr, int flags)
    enum:
        NPY_ITEM_HASOBJECT

cdef enum:
    MAX_DIMS = 64       # NPY_MAXDIMS of NumPy 2 (32 in NumPy 1)

# The spellings taken here: each name of the general tables, as written there
# (lower case) and in upper case ("NHWC", "DCR"); any other mix of cases takes
# the general path. mode -> depth_first; data_format -> (layout, rank or 0).
cdef dict MODES = {spelling: canonical == _layouts.DEPTH_FIRST
                   for name, canonical in _layouts.MODES.items()
                   for spelling in (name, name.upper())}
cdef dict FORMATS = {spelling: (layout, rank or 0)
                     for name, (layout, rank) in _layouts.DATA_FORMATS.items()
                     if layout != _layouts.NCHW_VECT_C
                     for spelling in (name, name.upper())}
cdef int LAYOUT_CHANNELS_FIRST = _layouts.CHANNELS_FIRST
cdef str DEFAULT_MODE = "blocks_first"
cdef str DEFAULT_FORMAT = "channels_first"
cdef tuple CHANNELS_FIRST_FORMAT = FORMATS[DEFAULT_FORMAT]
cdef object engine_block_copy = _engine.block_copy
cdef object resolve_num_threads = _threads.resolve_num_threads
cdef object openmp_max_threads = _engine.openmp_max_threads
# _threads._effective's cap on a call's threads (a constant of the process).
cdef long max_threads = _threads._MAX_THREADS


cdef inline object spelled(dict table, str spelling, str default_spelling, object default):
    """``table[spelling]``, or None where the table has no such spelling. The
    defaults arrive as the very string objects named here (literals are
    interned), which saves the lookup on most calls."""
    cdef PyObject* entry
    if spelling is default_spelling:
        return default
    entry = PyDict_GetItemWithError(table, spelling)
    return None if entry is NULL else <object>entry


def block_call(x, block_size, mode, data_format, out, num_threads, bint to_depth):
    """space_to_depth (``to_depth``) or depth_to_space of a common call (see
    the module's doc), or None: the call needs the general path."""
    cdef cnp.ndarray src, dst
    cdef cnp.PyArray_Descr* descr
    cdef tuple fmt
    cdef intp result_dims[MAX_DIMS]
    cdef intp* dims
    cdef intp bs, blocks = 1, channels
    cdef int ndim, rank, channel_axis, k
    if (type(x) is not cnp.ndarray or type(block_size) is not int
            or type(mode) is not str or type(data_format) is not str):
        return None
    depth_first = spelled(MODES, mode, DEFAULT_MODE, False)
    fmt_entry = spelled(FORMATS, data_format, DEFAULT_FORMAT, CHANNELS_FIRST_FORMAT)
    if depth_first is None or fmt_entry is None:
        return None
    fmt = <tuple>fmt_entry
    layout = fmt[0]
    rank = fmt[1]
    try:
        bs = block_size
    except OverflowError:
        return None
    if bs < 1:
        return None
    src = <cnp.ndarray>x
    ndim = cnp.PyArray_NDIM(src)
    descr = cnp.PyArray_DESCR(src)
    if (ndim < 3 or ndim > MAX_DIMS or (rank and rank != ndim)
            or cnp.PyArray_SIZE(src) == 0 or cnp.PyArray_ITEMSIZE(src) == 0
            or PyDataType_FLAGCHK(descr, NPY_ITEM_HASOBJECT)):
        return None

    # The result's shape: the rules of _layouts restated in C (a Python
    # call here would cost more than a tiny copy). Its item count is x's, so nothing here overflows
    # once the block size is known to fit (bs <= a spatial size, or
    # bs**K <= the channel count).
    dims = cnp.PyArray_DIMS(src)
    channel_axis = 1 if <int>layout == LAYOUT_CHANNELS_FIRST else ndim - 1
    channels = dims[channel_axis]
    for k in range(ndim):
        result_dims[k] = dims[k]
    for k in range(1, ndim):
        if k == channel_axis:
            continue
        if to_depth:
            if dims[k] % bs:
                return None
            result_dims[k] = dims[k] // bs
        elif blocks > channels // bs:
            return None             # bs**K > channels: not a divisor
        blocks *= bs
    if to_depth:
        result_dims[channel_axis] = channels * blocks
    else:
        if channels % blocks:
            return None
        result_dims[channel_axis] = channels // blocks
        for k in range(1, ndim):
            if k != channel_axis:
                result_dims[k] = dims[k] * bs

    if num_threads is None:
        n_threads = _threads._default_call_threads
        if n_threads == 0:
            # OpenMP's default, as resolve_num_threads(None) gives it.
            n_threads = min(<long>openmp_max_threads(), max_threads)
    elif type(num_threads) is int and num_threads >= 1:
        n_threads = resolve_num_threads(num_threads)
    else:
        return None
    if out is None:
        Py_INCREF(<object>descr)
        result = PyArray_Empty(ndim, result_dims, descr, 0)
    else:
        if type(out) is not cnp.ndarray:
            return None
        dst = <cnp.ndarray>out
        if cnp.PyArray_NDIM(dst) != ndim or cnp.PyArray_DESCR(dst) != descr:
            return None
        for k in range(ndim):
            if cnp.PyArray_DIMS(dst)[k] != result_dims[k]:
                return None
        if not is_clear_destination(dst, src):
            return None
        result = out
    if to_depth:
        engine_block_copy(x, result, layout, block_size, depth_first, True, n_threads)
    else:
        engine_block_copy(result, x, layout, block_size, depth_first, False, n_threads)
    return result
