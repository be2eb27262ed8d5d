# Counters and flags shared by Python threads (shared_state.h): plain under
# the GIL, CPython's atomics in a free-threaded build.
cdef extern from "shared_state.h" nogil:
    Py_ssize_t FB_SHARED_ADD(Py_ssize_t* counter, Py_ssize_t value)   # the value before
    Py_ssize_t FB_SHARED_LOAD(Py_ssize_t* counter)
    void FB_SHARED_STORE(Py_ssize_t* counter, Py_ssize_t value)
    Py_ssize_t FB_SHARED_PEEK(Py_ssize_t* counter)   # without the GIL: relaxed
