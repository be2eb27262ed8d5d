# Lane transposes of 1-, 2-, 4- and 8-byte items: interleave L rows ("lanes") of
# items into pixels of L items, or split pixels back into lanes, 16 bytes of
# each lane at a time in SSE registers (16 pixels of bytes, 8 of 2-byte items).
#
# This is the inner move of SpaceToDepth/DepthToSpace on small items: the block
# offsets (bx; or by, bx) are the lanes and the pixels run along a spatial
# axis (channels_first) or along the channels (depth_first, channels_last,
# where the lanes are bs*bs block offsets read from bs source rows). Item by
# item that costs several instructions per byte, and byte shuffles need a
# 16-byte load per lane and piece; a register transpose moves 16 pixels of
# L lanes with L loads, log2(P) rounds of P unpacks (P: L rounded up to a
# power of two) and one store per 16 bytes: 1.4-1.8 instructions per byte
# for 9 lanes of bytes against 5.1 with byte shuffles.
#
# Interleave (lanes -> pixels): lane l of a group of pixels is one 16-byte
# load at its own offset; P registers (the lanes, padded with zeros) hold a
# P x P matrix of (16/P)-byte elements, each element the next pixels of one
# lane; the transpose leaves register c with the elements of every lane for
# the same pixels, and a byte shuffle orders them pixel by pixel (L items a
# pixel). The registers are stored overlapping, each over the previous one's
# spare bytes. The last store would write past the group, so at the end
# of a run it is rebuilt from the last two registers to end exactly there.
#
# Split (pixels -> lanes): the same in reverse; the last 16-byte load of a
# run is taken to end at the run's last byte, so no load leaves the source.
# A run that is not a whole number of groups ends with a group that ends at
# the run's end, over pixels already moved (the same bytes written again);
# only runs shorter than a group go item by item (and the pixels after the
# last whole group of fb_wide_lines, below). Item by item, the 8 pixels
# past 48 of a 56-pixel row of 12 byte lanes took a third of the lane
# kernel's time in 1 MiB space_to_depth depth_first NCHW_VECT_C bs 3 uint8.
#
# Items of 4 and 8 bytes (float32, float64), and more than 16 bytes of
# lanes of 1- or 2-byte items, take the register transposes alone: a
# register holds G = 16 / W pixels of one lane, so a block of G lanes
# transposed gives each pixel's 16 bytes of those lanes, stored in place
# with no shuffle, a block at a time; pixels of up to 256 bytes (the 27 or
# 64 block offsets of 5-D depth_first channels_last, a channels-first to
# channels-last transpose of up to 256 bytes of channels), the last block
# padded. The 12 lanes of the staged NCHW_VECT_C float32 planes went from
# item by item (1.2 x np.copyto on two threads) to 0.6.
#
# SSSE3 (pshufb) is checked at run time with the byte shuffles; the plan
# uses lane transposes only where ``use_ssse3()`` says so (_engine_tuning.pxi).
# The planner finds them and builds the byte shuffles (_plan_lanes.pxi);
# run_kernel runs fb_lanes_rows.

from ._kernels_c cimport FB_LANES_MAX

cdef enum:
    # Bytes in one pixel (lanes of bytes; of wider items, as many as fit).
    LANES_MAX = FB_LANES_MAX
    # Pixels moved together at most (bytes); a pixel axis shorter than a
    # register's worth of its items is not planned.
    LANE_GROUP = 16
    LANE_MASKS = 5


cdef struct LaneTranspose:
    int n_lanes                 # L (0: not a lane transpose)
    bint interleave             # lanes -> pixels (else pixels -> lanes)
    intp offset[LANES_MAX]      # each lane's byte offset (source if interleave, else destination)
    unsigned char masks[LANE_MASKS * 16]
