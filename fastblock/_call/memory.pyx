# cython: boundscheck=False, wraparound=False
"""Facts about an array's memory, read from its C struct.

Every call with ``out=`` asks whether ``out`` is writable, holds each item in
its own bytes and overlaps ``x``. NumPy's Python-level answers (``flags``,
``np.shares_memory``, byte bounds from ``__array_interface__``) cost more than
a tiny copy; these answer the common case from the data pointers, shapes and
strides and leave the rest to them. A scale's or offset's values are read by
their strides too (``compact``): a broadcast view is the few values it holds.
"""

cimport numpy as cnp
from cpython.ref cimport Py_INCREF

from .._engine.array_bytes cimport byte_range

import numpy as np

cnp.import_array()

cdef enum:
    # A scale's or offset's values as the convert stage reads them
    # (values_in): C-contiguous, aligned, cast as np.asarray casts.
    VALUES_FLAGS = cnp.NPY_ARRAY_C_CONTIGUOUS | cnp.NPY_ARRAY_ALIGNED | cnp.NPY_ARRAY_FORCECAST


cdef bint ranges_meet(cnp.ndarray a, cnp.ndarray b) noexcept:
    cdef char* a_low
    cdef char* a_high
    cdef char* b_low
    cdef char* b_high
    if not byte_range(a, &a_low, &a_high) or not byte_range(b, &b_low, &b_high):
        return False
    return a_low < b_high and b_low < a_high


cdef bint is_clear_destination(cnp.ndarray out, cnp.ndarray x) noexcept:
    return (cnp.PyArray_ISWRITEABLE(out)
            and (cnp.PyArray_IS_C_CONTIGUOUS(out) or cnp.PyArray_IS_F_CONTIGUOUS(out))
            and not ranges_meet(out, x))


def byte_ranges_meet(cnp.ndarray a not None, cnp.ndarray b not None) -> bool:
    """False when the bytes spanned by ``a`` and ``b`` are disjoint, or one has
    no items: then they share no memory. True leaves the question to
    ``np.shares_memory``."""
    return ranges_meet(a, b)


def out_is_clear(cnp.ndarray out not None, cnp.ndarray x not None) -> bool:
    """True when ``out`` passes ``check_out``'s writability, distinct-items
    and no-overlap checks at a glance: writable, C- or Fortran-contiguous
    (each item in its own bytes) and its bytes outside ``x``'s span.
    False only means that the full checks must decide."""
    return is_clear_destination(out, x)


cdef extern from *:
    """
    /* A read-only ndarray over `data` (stand_in); steals a reference to descr. */
    static PyObject *fb_stand_in_array(PyArray_Descr *descr, int nd, npy_intp *dims,
                                       npy_intp *strides, void *data) {
        return PyArray_NewFromDescr(&PyArray_Type, descr, nd, dims, strides, data, 0, NULL);
    }
    """
    object fb_stand_in_array(cnp.dtype descr, int nd, cnp.npy_intp* dims, cnp.npy_intp* strides,
                             void* data)

# The one item every stand-in points at (stand_in).
cdef double stand_in_item[2]


def stand_in(cnp.dtype dtype not None, tuple shape, tuple strides):
    """A read-only array of ``dtype``, ``shape`` and ``strides`` that only
    describes a layout: its data is one dummy item, never to be read (an
    operator's copies read shapes and strides; the convert stage describes
    a result, a scale or an offset through it). Much cheaper than
    numpy.lib.stride_tricks.as_strided."""
    cdef int nd = len(shape), k
    cdef cnp.npy_intp dims[64]
    cdef cnp.npy_intp steps[64]
    if nd > 64 or len(strides) != nd or dtype.itemsize > sizeof(stand_in_item):
        raise ValueError("fastblock: a stand-in of at most 64 axes and 16-byte items")
    for k in range(nd):
        dims[k] = shape[k]
        steps[k] = strides[k]
    Py_INCREF(dtype)       # PyArray_NewFromDescr steals it
    return fb_stand_in_array(dtype, nd, dims, steps, <void*>stand_in_item)


cdef int compact_shape(cnp.ndarray a, intp* dims, intp* strides) noexcept:
    """The shape and strides of ``a`` read by its strides, not its shape,
    into ``dims`` and ``strides`` (room for its rank); returns their count.
    An axis of step 0 holds one value (a broadcast view, ``np.broadcast_to``),
    so it is cut to that one, and leading axes of one value are dropped."""
    cdef int k, n = 0
    for k in range(cnp.PyArray_NDIM(a)):
        dims[n] = cnp.PyArray_DIMS(a)[k]
        strides[n] = cnp.PyArray_STRIDES(a)[k]
        if strides[n] == 0:
            dims[n] = min(dims[n], 1)
        if n > 0 or dims[n] != 1:
            n += 1
    return n


cdef object compact(object values):
    """``values`` in its compact form (``compact_shape``): the same values
    broadcast alike, and a broadcast view plans as its compact form (a
    (16, 3, 224, 224) view of a (3, 1, 1) scale: 3 values to convert, not
    2.4 million, and one value a row, not lines). Anything but an ndarray
    as it is."""
    cdef cnp.ndarray a, view
    cdef cnp.dtype descr
    cdef int k, n, ndim
    cdef intp dims[MAX_DIMS]
    cdef intp strides[MAX_DIMS]
    if type(values) is not cnp.ndarray:
        return values
    a = <cnp.ndarray>values
    ndim = cnp.PyArray_NDIM(a)
    if ndim > MAX_DIMS:
        return values
    n = compact_shape(a, dims, strides)
    if n == ndim:
        for k in range(ndim):
            if dims[k] != cnp.PyArray_DIMS(a)[k]:
                break
        else:
            return values
    descr = <cnp.dtype>cnp.PyArray_DESCR(a)
    Py_INCREF(descr)       # PyArray_NewFromDescr steals it
    view = fb_stand_in_array(descr, n, dims, strides, cnp.PyArray_DATA(a))
    cnp.set_array_base(view, a)
    return view


cdef cnp.ndarray values_in(object values, int compute):
    """A scale's or offset's values as the convert stage reads them: in the
    compute type ``compute`` (a NumPy type number), compact, C-contiguous
    (so their layout follows from their shape), aligned; cast as
    ``np.asarray(values, dtype)`` casts."""
    return cnp.PyArray_FROMANY(compact(values), compute, 0, 0, VALUES_FLAGS)


def compute_values(values, compute):
    """``values_in`` for a compute type given as a dtype (numpy.float32 or
    numpy.float64): the layout a converting call's program reads (the
    general path's, convert, and the cached calls')."""
    return values_in(values, np.dtype(compute).num)
