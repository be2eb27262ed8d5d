# Writing into fresh pages: fault each huge page at its end first.
#
# A new result's pages are not in memory until first written. NumPy asks for
# transparent huge pages (2 MiB) for arrays of 4 MiB or more, and the first
# write to one makes the kernel zero all of it. Those zeros are still in
# cache when the copy's own stores reach them only if the kernel zeroed the
# page in the order the copy then writes it, and that depends on where the
# first write fell: on the 2-core AMD EPYC (Zen 4) CI machine (Linux 6.18),
# a C model writing 64 MiB forwards into fresh huge pages took 1.69 x
# np.copyto (touched memory) on one thread and 1.66 on two when each page
# was first written at its start, as a forward copy does, and 1.02 and 0.80
# when each page was first written at its last byte; writing four rows 8
# MiB apart (a lane split) 1.63 / 1.40 against 1.09 / 1.00. glibc's memcpy
# ran its loop backwards there (``perf annotate``; source and destination at
# the same page offset, as NumPy's large arrays are), which gives it the
# good order: one thread 1.26-1.38, and ``x.copy()`` about 1.2.
#
# So a copy into memory that is not yet resident first touches the last byte
# of every huge page a kernel block is about to write, clamped to the
# destination's end. The touch is an atomic OR of zero: a write to the CPU
# and to the kernel, but it leaves whatever another thread stores into that
# byte meanwhile. Each thread remembers the pages it touched last, so a page
# is touched about once per thread. With small pages the touch costs one
# page fault that the copy would take anyway.
#
# In the engine, 64 MiB new results over ``x.copy()``, in-process A/B with
# the order alternated, on the machine above: the 69 target-1 cases and a
# plain copy, two threads, median 1.04 -> 0.87, at or below 1.0 in 25 -> 52
# of 70; depth_to_space blocks_first channels_last C=16 bs=2 uint8 on one
# thread 1.71 -> 1.23.

from ._kernels_c cimport (FB_FAULT_AHEAD_BUILT, fb_load, fb_publish, fb_spin_pause, fb_take,
                          fb_touch_for_write)


cdef enum:
    # The huge page size of x86-64 and of ARM64 with 4 KiB pages. Only the
    # speed depends on it.
    HUGE_PAGE_BYTES = 2 * 1024 * 1024
    # Pages each thread remembers having touched: a kernel block writes rows
    # in a few pages at a time (a lane split: one per lane, up to 16).
    RECENT_PAGES = 16

# Copies of this many bytes or more into memory that is not resident fault
# ahead: NumPy's threshold for asking for huge pages.
cdef intp FAULT_AHEAD_MIN_BYTES = 4 * 1024 * 1024
cdef bint fault_ahead_enabled = FB_FAULT_AHEAD_BUILT != 0
cdef intp fault_ahead_min_bytes = FAULT_AHEAD_MIN_BYTES


cdef struct RecentPages:
    size_t page[RECENT_PAGES]   # huge page numbers (address // HUGE_PAGE_BYTES)
    int next                    # the entry to replace next


cdef inline void forget_pages(RecentPages* recent) noexcept nogil:
    cdef int i
    for i in range(RECENT_PAGES):
        recent.page[i] = <size_t>-1
    recent.next = 0


cdef inline void fault_page_at_end(RecentPages* recent, const char* byte,
                                   const char* dst_end) noexcept nogil:
    """Touch the last byte of the huge page holding ``byte`` (at most the
    byte before ``dst_end``), unless this thread touched it lately."""
    cdef size_t page = <size_t>byte // HUGE_PAGE_BYTES
    cdef const char* last
    cdef int i
    for i in range(RECENT_PAGES):
        if recent.page[i] == page:
            return
    recent.page[recent.next] = page
    recent.next = (recent.next + 1) % RECENT_PAGES
    last = byte + (HUGE_PAGE_BYTES - 1 - <size_t>byte % HUGE_PAGE_BYTES)
    if last >= dst_end:
        last = dst_end - 1
    fb_touch_for_write(last)


cdef void fault_rows(RecentPages* recent, const char* first, intp n_rows, intp row_step,
                     intp row_bytes, const char* dst_end) noexcept nogil:
    """Fault ahead the huge pages of ``n_rows`` destination rows of
    ``row_bytes`` bytes, ``row_step`` apart from ``first``: every page from
    the first row to the last where the rows are closer than a page, else
    each row's pages."""
    cdef const char* byte
    cdef const char* last
    cdef intp i
    if n_rows <= 0 or row_bytes <= 0:
        return
    if row_step < HUGE_PAGE_BYTES:
        n_rows, row_bytes = 1, (n_rows - 1) * row_step + row_bytes
    for i in range(n_rows):
        byte = first + i * row_step
        last = byte + row_bytes - 1
        while True:
            fault_page_at_end(recent, byte, dst_end)
            byte += HUGE_PAGE_BYTES - <size_t>byte % HUGE_PAGE_BYTES
            if byte > last:
                break


cdef inline bint faults_pay(intp copy_bytes, int resident) noexcept nogil:
    """Whether a copy of ``copy_bytes`` bytes into a destination whose pages
    are ``resident`` (``fb_pages_resident``; asked only of copies this
    large) faults ahead: large enough, and none of its pages resident."""
    return fault_ahead_enabled and copy_bytes >= fault_ahead_min_bytes and resident == 0


def set_fault_ahead(bint enabled, intp min_bytes=FAULT_AHEAD_MIN_BYTES):
    """Fault fresh destination pages at their ends first in copies of
    ``min_bytes`` bytes or more, in plans built from now on (where the build
    can); return the previous ``(enabled, min_bytes)``. For tests and
    benchmarks."""
    global fault_ahead_enabled, fault_ahead_min_bytes
    before = (fault_ahead_enabled, fault_ahead_min_bytes)
    fault_ahead_enabled = enabled and FB_FAULT_AHEAD_BUILT != 0
    fault_ahead_min_bytes = min_bytes
    return before


# Who takes the faults: the calling thread, ahead of the others.
#
# Which thread faults a fresh page matters. On the 2-core AMD EPYC (Zen 4)
# CI machine, a C model filling fresh 64 MiB huge-page mappings (memcpy, 30
# calls a process, 6 processes each, unpinned):
#   each thread faults its own half    median 4.9-7.1 ms, 90th percentile
#                                      5.5-12.8 ms, worst call up to 109 ms
#   the calling thread faults the      median 5.0-5.7 ms, 90th percentile
#   other's pages just ahead of it     5.3-10.5 ms, worst call 5.6-32 ms
#   one thread alone                   median 6.1-6.9 ms
# and with the filling thread pinned to the CPU that does not free the
# mappings, its first calls took 49-162 ms, then 7-11 ms. The likely cause:
# Linux keeps freed pages on per-CPU lists first, so the calling thread,
# which frees the NumPy arrays, finds the pages it freed, while another CPU
# takes pages from the shared free lists, which this VM's kernel reports
# to the host (page_reporting_order=11 on its command line: np.copyto into
# a fresh 64 MiB took 69-145 ms 4 s after a free of 64 MiB, 6.0-7.0 ms
# right after it; five calls each), so those cost a host fault each.
#
# So a copy into fresh pages on two threads runs as units (ranges of its
# blocks) taken in order, and the calling thread (OpenMP thread 0), each
# time it takes a unit, first faults every unit up to about
# fault_lead_bytes past it (running the plans in FAULTS_ONLY mode) and
# publishes how far it has got. The other thread runs a unit in that
# promised range once it is faulted (it spins until then), and faults a
# unit beyond it itself, as before. The calling thread keeps its promise
# when it runs out of units, so no thread waits for a unit nobody faults.

cdef enum:
    FAULTS_OWN = 0      # a plan that faults ahead does it block by block (run_block)
    FAULTS_NONE = 1     # the pages are in place: copy only
    FAULTS_ONLY = 2     # fault the pages a run would write, copy nothing

# Runs ``unit`` of ``job`` on OpenMP thread ``thread``, faulting as ``faults``.
ctypedef void (*UnitRunner)(const void* job, intp unit, int faults, int thread) noexcept nogil

cdef enum:
    # Result bytes a unit of a fresh copy by one plan covers, and how far
    # past its own unit the calling thread faults. On the CI machine, 64 MiB
    # new results / x.copy(), two threads, in-process A/B over 17 to 23 of
    # the target-2 cases a process (four processes), medians of the cases:
    # lead 8 MiB, units 1 MiB
    # 0.88-0.94; lead 2 MiB, units 1 MiB 0.83-0.89; lead 4 MiB, units 512 KiB
    # 0.83-0.87; each thread faulting its own pages 0.93-1.08.
    FAULT_UNIT_DEFAULT = 512 * 1024
    FAULT_LEAD_DEFAULT = 4 * 1024 * 1024
    # Teams of up to this many threads: measured on two cores only. With
    # more, one thread faulting for all the others would fall behind them.
    CALLER_FAULTS_MAX_THREADS = 2

cdef intp fault_unit_bytes = FAULT_UNIT_DEFAULT
cdef intp fault_lead_bytes = FAULT_LEAD_DEFAULT
cdef bint caller_faults_enabled = True


cdef struct FaultTeam:
    intp next_unit      # the next unit to hand out
    intp faulted        # every unit before this one has its pages
    intp promised       # the calling thread faults every unit before this one


cdef inline void fault_units(FaultTeam* team, const void* job, UnitRunner run_unit,
                             intp stop) noexcept nogil:
    """The calling thread faults the units before ``stop`` not yet faulted."""
    cdef intp unit
    for unit in range(fb_load(&team.faulted), stop):
        run_unit(job, unit, FAULTS_ONLY, 0)
        fb_publish(&team.faulted, unit + 1)


cdef void run_units(const void* job, UnitRunner run_unit, intp n_units, intp unit_bytes,
                    int num_threads, bint fresh) noexcept nogil:
    """Run ``n_units`` units on ``num_threads`` threads, taken in order as
    threads come free; where the result is ``fresh`` (its plans fault
    ahead), the calling thread takes the faults (above)."""
    cdef FaultTeam team
    cdef intp unit, ahead
    cdef int thread
    if not (fresh and caller_faults_enabled and num_threads <= CALLER_FAULTS_MAX_THREADS):
        with parallel(num_threads=num_threads):
            for unit in prange(n_units, schedule="dynamic"):
                run_unit(job, unit, FAULTS_OWN, threadid())
        return
    ahead = imax(num_threads, fault_lead_bytes // imax(unit_bytes, 1))
    team.next_unit = 0
    team.faulted = 0
    team.promised = imin(n_units, ahead + 1)
    thread = 0
    unit = 0
    with parallel(num_threads=num_threads):
        thread = threadid()
        while True:
            unit = fb_take(&team.next_unit)
            if unit >= n_units:
                break
            if thread == 0:
                fb_publish(&team.promised,
                           imin(n_units, imax(unit + ahead + 1, fb_load(&team.promised))))
                fault_units(&team, job, run_unit, fb_load(&team.promised))
                run_unit(job, unit, FAULTS_NONE, 0)
            elif unit < fb_load(&team.promised):
                while fb_load(&team.faulted) <= unit:
                    fb_spin_pause()
                run_unit(job, unit, FAULTS_NONE, thread)
            else:
                run_unit(job, unit, FAULTS_OWN, thread)
        if thread == 0:
            fault_units(&team, job, run_unit, fb_load(&team.promised))


def set_caller_faults(bint enabled, intp unit_bytes=FAULT_UNIT_DEFAULT,
                      intp lead_bytes=FAULT_LEAD_DEFAULT):
    """Whether the calling thread takes a fresh result's faults for the
    other thread (run_units), in units of about ``unit_bytes`` (copies by
    one plan) and ``lead_bytes`` ahead; returns the previous ``(enabled,
    unit_bytes, lead_bytes)``. For tests and benchmarks."""
    global caller_faults_enabled, fault_unit_bytes, fault_lead_bytes
    before = (caller_faults_enabled, fault_unit_bytes, fault_lead_bytes)
    caller_faults_enabled = enabled
    fault_unit_bytes = imax(unit_bytes, 1)
    fault_lead_bytes = lead_bytes
    return before
