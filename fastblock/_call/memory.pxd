cimport numpy as cnp

ctypedef cnp.npy_intp intp

cdef enum:
    # The most axes compact() cuts, and the fast path keys (higher ranks take
    # the general path).
    MAX_DIMS = 32

cdef bint ranges_meet(cnp.ndarray a, cnp.ndarray b) noexcept
cdef bint is_clear_destination(cnp.ndarray out, cnp.ndarray x) noexcept

cdef int compact_shape(cnp.ndarray a, intp* dims, intp* strides) noexcept
cdef object compact(object values)
cdef cnp.ndarray values_in(object values, int compute)
