# The bytes an array's items span: read by the engine (a result's span, for
# its faults ahead) and by the call machinery's memory checks (out= apart
# from x). An inline function, compiled into each module that cimports it.
cimport numpy as cnp


cdef inline bint byte_range(cnp.ndarray a, char** low, char** high) noexcept:
    """The bytes ``a``'s items span, ``[low, high)``; False when it has no items."""
    cdef cnp.npy_intp* shape = cnp.PyArray_DIMS(a)
    cdef cnp.npy_intp* strides = cnp.PyArray_STRIDES(a)
    cdef cnp.npy_intp lowest = 0, highest = cnp.PyArray_ITEMSIZE(a), reach
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
