# Staged transposes: the kernel block of a copy whose source is contiguous
# along one set of axes and whose destination is contiguous along another.
#
# The block is R rows by C items. Row r is contiguous in the source (all
# rows one run: the source's innermost axes) and written at its own
# destination offset; item c of every row is read at its own source offset
# and the items of a row are contiguous in the destination (the
# destination's innermost axes). Both offset tables come from the plan, so
# each side may be several axes: a Fortran-order float32 input has runs of
# only 8 items (32 bytes) along N, but N and C together are 1 KiB.
#
# When the C runs of R source items lie far apart, they are first copied
# whole into a buffer in L1 (each source line read once, in order: steps
# that are powers of two map every run to the same cache sets, so lines
# read a piece at a time are evicted before their next piece is used);
# runs side by side are read in place. The block is then read G x G
# items at a time (G = 16 / item bytes: 16 bytes, 8 two-byte items, 4
# float32, 2 float64) into SSE2 registers, transposed by unpacks, and each
# register stored as 16 bytes of one destination row. Other item sizes, and
# the block's edges, go item by item. Each run copied asks for its lines
# two blocks on in L2 (fb_prefetch_run).
#
# A streamed destination takes the block through a stage instead
# (fb_transpose_runs, run by stream_transpose): the tiles go G source runs
# at a time, each run read start to end in place (only G source lines in
# use, so no copy first), into packed destination rows that then stream
# out in whole lines; each run's lines two blocks on are asked for in L2
# as it is finished, the plan walking the blocks in source order.

from libc.stdint cimport uint64_t
from libc.string cimport memcpy

from fastblock._engine.types cimport TRANSPOSE_MAX, intp
from fastblock._engine.kernels_c cimport fb_prefetch_run, fb_transpose_rows


cdef enum:
    # Bytes of one staged block (a buffer on the stack): with the block's
    # destination lines, it stays in L1.
    TRANSPOSE_WORDS = 2048
    TRANSPOSE_BYTES = TRANSPOSE_WORDS * 8


cdef inline void transpose_block(char* dst, const char* src, intp n_rows, intp n_items,
                                 const intp* row_offset, const intp* item_offset,
                                 intp width, bint staged, intp ahead) noexcept nogil:
    """One transpose block: ``n_items`` source runs of ``n_rows`` items (run
    ``c`` at ``src + item_offset[c]``) become ``n_rows`` destination rows of
    ``n_items`` contiguous items (row ``r`` at ``dst + row_offset[r]``);
    through the buffer if ``staged`` (then ``n_rows * n_items * width`` is
    at most TRANSPOSE_BYTES), asking for each run's lines ``ahead`` bytes
    on as it is copied (0: none). Streamed blocks go by
    ``fb_transpose_runs`` instead (``stream_transpose``)."""
    cdef uint64_t buffer[TRANSPOSE_WORDS]
    cdef intp buffer_offset[TRANSPOSE_MAX]
    cdef char* copied = <char*>buffer
    cdef intp run = n_rows * width, c
    if not staged:
        fb_transpose_rows(dst, src, n_rows, n_items, item_offset, row_offset, width)
        return
    for c in range(n_items):
        memcpy(copied + c * run, src + item_offset[c], <size_t>run)
        if ahead:
            fb_prefetch_run(src + item_offset[c] + ahead, run)
        buffer_offset[c] = c * run
    fb_transpose_rows(dst, copied, n_rows, n_items, buffer_offset, row_offset, width)


