# The schedule's shared declarations (_engine/run/schedule.pxi): how a unit of a
# copy is run and who faults its pages, for the files that hand units to
# run_units (the copy plans' chunks, the NCHW_VECT_C blocks) and for
# run_range. Declarations only: no module implements this file.

from fastblock._engine.kernels_c cimport fb_intp


cdef enum:
    FAULTS_OWN = 0      # a plan that faults ahead does it block by block (run_block)
    FAULTS_NONE = 1     # the pages are in place: copy only
    FAULTS_ONLY = 2     # fault the pages a run would write, copy nothing

# Runs ``unit`` of ``job`` on OpenMP thread ``thread``, faulting as ``faults``.
ctypedef void (*UnitRunner)(const void* job, fb_intp unit, int faults, int thread) noexcept nogil
