# What the other modules of fastblock cimport from the engine: the stored
# programs (_engine/run/program.pxi), run from the front doors' cache.
cimport numpy as cnp


cdef class CopyProgram:
    cdef int n_copies
    cdef void* copies           # StoredCopy[n_copies]
    cdef char* zero             # one zero item, for copies that read it
    cdef cnp.npy_intp itemsize
    cdef Py_ssize_t generation  # tuning_generation when it was planned

    cdef bint is_current(self) noexcept
    cdef int run(self, char* src, char* dst, int num_threads) except -1
    cdef int run_copies(self, char* src, char* dst, int num_threads) except -1


cdef class ConvertProgram:
    cdef int n_copies
    cdef void* copies           # StoredConvert[n_copies]
    cdef char* zero             # one zero source item, for copies that read it
    cdef bint has_scale, has_offset
    cdef int n_plans            # Plans held, counted in stored_plans
    cdef Py_ssize_t generation  # tuning_generation when it was planned

    cdef bint is_current(self) noexcept
    cdef int run(self, const char* src, char* dst, const char* scale, const char* offset,
                 int num_threads) except -1
