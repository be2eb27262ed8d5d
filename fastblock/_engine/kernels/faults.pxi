# Writing into fresh pages: fault each huge page at its end first.
#
# A new result's pages are not in memory until first written. NumPy asks for
# transparent huge pages (2 MiB) for arrays of 4 MiB or more, and the first
# write to one makes the kernel zero all of it. Those zeros are still in
# cache when the copy's own stores reach them only if the kernel zeroed the
# page in the order the copy then writes it, and that depends on where the
# first write fell: writing 64 MiB forwards into fresh huge pages took 1.69
# x np.copyto (touched memory) on one thread when each page was first
# written at its start, as a forward copy does, and 1.02 when it was first
# written at its last byte. glibc's memcpy runs its loop backwards where
# source and destination are at the same page offset, as NumPy's large
# arrays are, which gives it the good order.
#
# So a copy into memory that is not yet resident first touches the last byte
# of every huge page a kernel block is about to write, clamped to the
# destination's end. The touch is an atomic OR of zero: a write to the CPU
# and to the kernel, but it leaves whatever another thread stores into that
# byte meanwhile. Each thread remembers the pages it touched last, so a page
# is touched about once per thread. With small pages the touch costs one
# page fault that the copy would take anyway.

from fastblock._engine.types cimport intp
from fastblock._engine.kernels_c cimport (FB_FAULT_AHEAD_BUILT, fb_load, fb_publish, fb_spin_pause,
                                          fb_take, fb_touch_for_write)


cdef enum:
    # The huge page size of x86-64 and of ARM64 with 4 KiB pages. Only the
    # speed depends on it.
    HUGE_PAGE_BYTES = 2 * 1024 * 1024
    # Pages each thread remembers having touched: a kernel block writes rows
    # in a few pages at a time (a lane split: one per lane, up to 16).
    RECENT_PAGES = 16

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
    return tuning.fault_ahead and copy_bytes >= tuning.fault_ahead_min_bytes and resident == 0


