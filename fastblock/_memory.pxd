cimport numpy as cnp

cdef bint byte_range(cnp.ndarray a, char** low, char** high) noexcept

cdef bint ranges_meet(cnp.ndarray a, cnp.ndarray b) noexcept
cdef bint is_clear_destination(cnp.ndarray out, cnp.ndarray x) noexcept
