# Byte shuffles for gathered runs of 1-, 2- and 4-byte items.
#
# A gathered run (the plan's gather mode) reads each destination item from
# its own source offset: one load and one store per item, which for bytes is
# several times slower than memory. Where the CPU has a byte shuffle (x86-64
# SSSE3 ``pshufb``, checked at run time; aarch64 NEON ``tbl``), each 16-byte
# piece of the run is built from unaligned 16-byte source loads (windows), each shuffled into
# place by a mask computed when the plan is built and OR-ed together (mask
# bytes of 0x80 give zeros). Even a window per item beats the item loop.
#
# Where the CPU also has AVX-512 VBMI (``vpermb``: any byte of a 64-byte
# register to any place), pieces and windows are 64 bytes instead: a 3-byte
# pixel row interleaved from two source rows takes two windows per 64 bytes
# rather than two per 16, so a quarter of the loads, shuffles and stores
# (channels_last C 3 uint8, 64 MiB, two threads: 0.99-1.33 -> 0.81-1.04 x
# np.copyto). A window's bytes are merged into the piece under a mask (its
# mask bytes below 0x80), so no OR is needed.
#
# Most programs repeat: NCHW_VECT_C depth_first bs 2 every piece (4-byte
# items: 4 destination pixels, 128 source bytes on), channels_last C 3 bs 2
# every third piece (16 pixels on), Tile's 3-byte items repeated 8 times
# every third 16-byte piece. Their repeating pieces run by a kernel that
# keeps the period's masks in registers and loads only the windows
# (find_period; fb_shuffle_periodic_n, fb_shuffle_periodic16_n); the table
# loop, which also loads a mask and an offset per window, finishes the
# rest. In L1 a 64-byte piece of 4 windows takes 8 cycles that way against
# 21 through the tables.
#
# A run whose length is not a whole number of pieces ends with a piece
# that overlaps the one before it (it ends at the run's end; the bytes
# written twice are the same), so only runs shorter than a piece gather
# item by item.
#
# Every load lies between the smallest and the largest source byte the run
# reads, so it never leaves the source array's memory.
#
# The package is built without -march flags; each SIMD function carries its
# own target attribute and runs only if the CPU reports the instructions.
# Other CPUs and compilers get the portable item loop.
#
# The programs (pieces, windows, masks, periods) are built by the planner
# (_engine/plan/shuffle.pxi); here they run.

from fastblock._engine.types cimport ShuffleProgram, WIDE_SHUFFLE_BYTES, intp
from fastblock._engine.kernels_c cimport fb_shuffle_pieces, fb_shuffle_wide


cdef inline void shuffle_rows(const ShuffleProgram* prog, char* dst, const char* src,
                              intp n_rows, intp dst_row, intp src_row) noexcept nogil:
    """The gathered rows, every one by the program's pieces."""
    cdef intp i
    for i in range(n_rows):
        if prog.piece_bytes == WIDE_SHUFFLE_BYTES:
            fb_shuffle_wide(dst + i * dst_row, src + i * src_row, prog.n_pieces, prog.piece_advance,
                            prog.last_start,
                            prog.n_windows, prog.window_offset, prog.window_mask,
                            prog.max_windows, prog.uniform, prog.period, prog.period_step,
                            prog.segment_pieces, prog.n_segments, prog.segment_step,
                            prog.last_segment_pieces, prog.lead_rounds, prog.lead_offset,
                            prog.lead_mask)
        else:
            fb_shuffle_pieces(dst + i * dst_row, src + i * src_row, prog.n_pieces, prog.last_start,
                              prog.n_windows, prog.window_offset, prog.window_mask,
                              prog.max_windows, prog.uniform, prog.period, prog.period_step,
                              prog.segment_pieces, prog.n_segments, prog.segment_step,
                              prog.last_segment_pieces, prog.lead_rounds, prog.lead_offset,
                              prog.lead_mask)
