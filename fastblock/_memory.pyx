# cython: boundscheck=False, wraparound=False
"""Facts about an array's memory, read from its C struct.

Every call with ``out=`` asks whether ``out`` is writable, holds each item in
its own bytes and overlaps ``x``. NumPy's Python-level answers (``flags``,
``np.shares_memory``, byte bounds from ``__array_interface__``) cost more than
a tiny copy; these answer the common case from the data pointers, shapes and
strides and leave the rest to them.
"""

cimport numpy as cnp
from cpython.ref cimport Py_INCREF

cnp.import_array()

ctypedef cnp.npy_intp intp


cdef bint byte_range(cnp.ndarray a, char** low, char** high) noexcept:
    """The bytes ``a``'s items span, ``[low, high)``; False when it has no items."""
    cdef intp* shape = cnp.PyArray_DIMS(a)
    cdef intp* strides = cnp.PyArray_STRIDES(a)
    cdef intp lowest = 0, highest = cnp.PyArray_ITEMSIZE(a), reach
    cdef int k
    for k in range(cnp.PyArray_NDIM(a)):
        if shape[k] == 0:
            return False
        reach = (shape[k] - 1) * strides[k]
        if reach < 0:
            lowest += reach
        else:
            highest += reach
    low[0] = <char*>cnp.PyArray_DATA(a) + lowest
    high[0] = <char*>cnp.PyArray_DATA(a) + highest
    return True


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
