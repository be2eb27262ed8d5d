# cython: cdivision=True
# The types the engine's layers hand each other: the plan (_engine/plan/planner.pxi)
# and what sizes and fills it (the limits, the kernels' programs and loops),
# declared here once so that no file depends on the order _engine/core.pyx
# includes the others in. Declarations only: no module implements this file.
# C division, as in _engine/core.pyx: the array sizes below divide with //.

from numpy cimport npy_intp

from fastblock._engine.kernels_c cimport (FB_LANES_MAX, FB_VECT_C_BS, FB_VECT_C_M, FbConvert,
                                          FbConvertLanes, FbConvertRun, FbLanesRows)

ctypedef npy_intp intp


cdef enum:
    # After dropping extent-1 axes every axis has extent >= 2, and the item
    # count fits in an intp, so no copy has more than 63 axes.
    MAX_AXES = 64
    # Two tile counters are added to the loop axes.
    MAX_LOOP = MAX_AXES + 2
    # Items in one gathered destination run (its offsets stay in L1).
    GATHER_MAX = 512
    # Axes a copy may be described with, extent-1 axes included (a Tile of
    # a 64-D array has 128).
    MAX_INPUT_AXES = 2 * MAX_AXES + 4


cdef enum:
    # Rows, and items a row, of a block at most (the plan's offset tables).
    TRANSPOSE_MAX = 512


cdef enum:
    SHUFFLE_BYTES = 16
    # Source loads per 16-byte piece, at most one per item.
    SHUFFLE_WINDOWS = 16
    # Pieces in the longest gathered run of 1- or 2-byte items (the last
    # one may overlap the one before it).
    SHUFFLE_PIECES = GATHER_MAX * 2 // SHUFFLE_BYTES + 1
    # The 64-byte pieces' sizes: the same tables hold at most this many
    # windows per piece (more, and the run takes 16-byte pieces).
    WIDE_SHUFFLE_BYTES = 64
    WIDE_SHUFFLE_WINDOWS = SHUFFLE_PIECES * SHUFFLE_WINDOWS * SHUFFLE_BYTES // (
        (GATHER_MAX * 2 // WIDE_SHUFFLE_BYTES + 1) * WIDE_SHUFFLE_BYTES)
    # Most windows (period times windows a piece) the periodic kernel keeps
    # in registers.
    SHUFFLE_PERIOD_SLOTS = 15


cdef struct ShuffleProgram:
    intp n_pieces               # pieces covering the run (0: none)
    intp piece_bytes            # 16 (SSSE3, NEON) or 64 (AVX-512 VBMI)
    # Bytes from one piece's start to the next (but the last's): the piece
    # size, or whole pixels of fewer bytes (pixel_pieces).
    intp piece_advance
    int max_windows             # window slots per piece in the tables
    intp last_start             # the last piece's first byte in the run
    int uniform                 # windows in every piece (0: they differ)
    # The first n_segments * segment_pieces pieces, for the periodic
    # kernel (find_period); period 0: none.
    int period
    intp period_step
    intp segment_pieces
    intp n_segments
    intp segment_step
    intp last_segment_pieces
    # A long run (plan_run_program): the pieces above come after this many
    # periods of the first ones, which the periodic kernel runs first from
    # their windows' offsets and masks (period * uniform slots in order).
    intp lead_rounds
    intp lead_offset[SHUFFLE_PERIOD_SLOTS]
    unsigned char lead_mask[SHUFFLE_PERIOD_SLOTS * WIDE_SHUFFLE_BYTES]
    unsigned char n_windows[SHUFFLE_PIECES]
    intp window_offset[SHUFFLE_PIECES * SHUFFLE_WINDOWS]
    unsigned char window_mask[SHUFFLE_PIECES * SHUFFLE_WINDOWS * SHUFFLE_BYTES]


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
# The 16-byte kernels (SSSE3 on x86, checked at run time; NEON on aarch64)
# run only where ``use_simd128()`` says so (_engine/tuning.pxi).
# The planner finds them, builds the byte shuffles and chooses the kernel
# (_engine/plan/lanes.pxi: fb_lanes_rows_for); run_lanes calls it.

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
    FbLanesRows rows_kernel     # the kernel of its rows (fb_lanes_rows_for)
    # Rows in groups: each row of the kernel's a axis is rows_in rows of
    # the axis that it continues (src_in, dst_in bytes apart), taken whole
    # (1: a row; group_lane_rows).
    intp rows_in, src_in, dst_in


cdef enum BlockLoop:
    # The loop copy_block runs a block by; the block's arguments come in
    # the loop's order.
    BLOCK_ROWS          # inner axis contiguous on both sides: a memcpy a row
    BLOCK_REPEATS       # inner axis repeats one source item side by side
    BLOCK_WEAVE         # a weave where the block's size makes one (copy_weave), else items
    BLOCK_ITEMS         # item by item (copy_strided_block)


cdef struct BlockCopy:
    # How a plan's blocks run (chosen from the steps: choose_block_copy):
    # by loop, the kernel's a axis inside where a_inside.
    BlockLoop loop
    bint a_inside


cdef enum:
    VECT_C_PIXELS_BS = FB_VECT_C_BS
    VECT_C_PIXELS_M = FB_VECT_C_M
    # Permutes a step: (plane, space row) for space_to_depth, 27 of which
    # 18 run; (space row, half, pair of planes) for depth_to_space, 18.
    VECT_C_PIXELS_ENTRIES = VECT_C_PIXELS_BS * VECT_C_PIXELS_M


cdef enum Kernel:
    # The kernel that runs a plan's blocks (run_kernel); each reads the Plan
    # fields named by its comment.
    KERNEL_BLOCK        # rows of the a axis, items of the b axis (copy_block, block_copy)
    KERNEL_GATHER       # rows of gather_len destination items read through
                        # gather: by byte shuffles where a program was built
    KERNEL_LANES        # lane transposes of pixels (lanes, LaneTranspose)
    KERNEL_TRANSPOSE    # staged transposes (transpose_rows, gather, _engine/kernels/transpose.pxi)


cdef struct Plan:
    Kernel kernel
    int n_loop                  # loop axes, outermost first
    int a_loop, b_loop          # the loop axes that count tiles of a and of b
    intp extent[MAX_LOOP]
    intp src_step[MAX_LOOP]
    intp dst_step[MAX_LOOP]
    intp n_iter                 # product of the loop extents
    intp width                  # bytes per (folded) item
    intp n_a, n_b               # kernel axes: a (outer) and b (inner, destination-innermost)
    intp tile_a, tile_b
    intp src_a, src_b, dst_a, dst_b
    intp total_bytes
    # Bytes of the whole copy this plan is run in: all parts, or the
    # whole_bytes of a plan run block by block. Shuffle programs (built
    # once, _engine/plan/shuffle.pxi) must pay for themselves over these.
    intp copy_bytes
    # KERNEL_BLOCK: how copy_block runs the blocks written in place, and
    # those written into the stream stage, whose rows are packed (a block
    # one item wide, the last tile of b, has rows one item apart there).
    BlockCopy block_copy
    BlockCopy staged_copy
    BlockCopy staged_column_copy
    # KERNEL_GATHER: the kernel writes rows of gather_len
    # contiguous destination items, item j read at gather[j] bytes past the
    # row's source position; the b axis is unused (extent 1).
    intp gather_len
    intp gather[GATHER_MAX]
    # A table axis (source_table not NULL): the innermost axis, contiguous
    # in the destination, reads its items at these source offsets, which no
    # step describes (NCHW_VECT_C depth_first, _engine/operators/vect_c.pxi). It is always
    # part of the gathered run.
    const intp* source_table
    # KERNEL_TRANSPOSE (_engine/kernels/transpose.pxi): the a and b
    # axes are the outermost of the source's and the destination's
    # innermost axes; one index of a is a_in rows (transpose_rows: their
    # destination offsets, over a tile of a), one of b is b_in items
    # (gather: their source offsets, over a tile of b).
    bint transpose_staged       # through a buffer (source runs far apart)
    intp source_ahead           # a transpose asks for its source this far on (0: not)
    intp a_in, b_in
    intp b_shift                # the first b tile is this many items short (line_phase)
    intp transpose_rows[TRANSPOSE_MAX]
    ShuffleProgram shuffle      # the gathered run by byte shuffles, if any
    # A run split from an axis with no fitting divisor: the last index of
    # loop axis ragged_loop (-1: none), or the last row of the a axis
    # (ragged_rows), runs the first gather_tail_len items.
    int ragged_loop
    bint ragged_rows
    intp gather_tail_len
    ShuffleProgram tail_shuffle
    # KERNEL_LANES: the b axis runs over pixels
    # of n_lanes bytes, packed on one side and split into lanes on the other.
    LaneTranspose lanes
    # Each kernel block is copied once per part, shifted by these byte offsets.
    intp n_parts
    intp block_bytes            # destination bytes per kernel block, all parts together
    bint stream                 # blocks go through a buffer and stream out (_engine/kernels/stream.pxi)
    bint fault_ahead            # fresh destination pages are faulted at their ends (_engine/kernels/faults.pxi)
    const char* dst_end         # one past the destination's last byte
    const intp* src_offsets
    const intp* dst_offsets


cdef struct Axes:
    # A copy's axes as the steps rewrite them (steps 1 to 3): n axes, each
    # with its extent and its source and destination steps in bytes.
    int n
    intp extent[MAX_AXES]
    intp src_step[MAX_AXES]
    intp dst_step[MAX_AXES]


cdef struct KernelAxes:
    # Step 3's choice among the axes: the kernel's a axis (-1: none) and b
    # axis; the first axis the kernel takes whole (the loop runs over the
    # axes before it, but a); the outer part of a ragged split (-1: none);
    # a transpose's axes grouped into its rows and items.
    int a, b, first, ragged
    bint grouped[MAX_AXES]


cdef enum:
    # The sides of a converting copy (_engine/plan/convert.pxi): its source,
    # its result, and the scale's and the offset's values along its axes.
    CONVERT_SIDES = 4
    SIDE_SRC = 0
    SIDE_DST = 1
    SIDE_SCALE = 2
    SIDE_OFFSET = 3
    # Axes whose last tile is shorter, at most; and so the tile shapes:
    # whole, short on the first such axis, on the second, on both.
    CUTS_MAX = 2
    TILE_SHAPES = 4


cdef struct TileShape:
    # One shape of a converting copy's tiles: how its source goes into the
    # stage (packed, in the result's axis order), how the scale's and the
    # offset's values for it go into lines packed the same way (where they
    # vary along its rows), and its rows out of the stage into the result.
    # (Plans on the heap, the lines' only where the tile gathers them: a
    # Plan is about 60 KB.)
    Plan* move
    Plan* scale_line
    Plan* offset_line
    # Where each plan's bases lie from the tile's first item (source) and
    # the stage's or line's (build_plan's moves for the stage axes packed
    # backwards: those the source reads backwards, but the innermost).
    intp move_shift[2]          # source, stage
    intp scale_shift[2]
    intp offset_shift[2]
    intp stage_origin           # the tile's first item in the stage, bytes
    intp line_origin            # ... in the lines
    intp extent[MAX_AXES]       # the tile's extent along each axis
    # A tile of packed pixels split into planes, or planes interleaved into
    # pixels, converted in one pass (fb_convert_lanes): its lanes (0: by
    # the stage), which way, whether the packed side holds them backwards
    # (BGR read as img[..., ::-1]), the planes' step (the result's for a
    # split, the source's for an interleave), and the scale's and offset's
    # steps a plane, all in the result's lane order.
    int lanes
    bint lanes_interleave
    bint lanes_reversed
    intp plane_step, lane_scale_step, lane_offset_step
    FbConvertLanes convert_lanes    # its kernel (fb_convert_lanes_for)
    intp run                    # items of a row
    intp run_step               # result bytes between a row's items
    FbConvertRun convert_run    # a row's conversion (fb_convert_run_for)
    int n_rows                  # axes of the row loop, outermost first
    intp row_extent[MAX_AXES]
    intp row_step[CONVERT_SIDES][MAX_AXES]   # stage, result, scale, offset bytes


cdef struct ConvertPlan:
    # A converting copy (_engine/plan/convert.pxi): its normalised axes with
    # a step per side, the tile (box) along each, the axes whose last tile
    # is shorter, and each tile shape's plans.
    FbConvert cv
    intp item[CONVERT_SIDES]    # bytes an item: source, result, compute, compute
    int n
    intp extent[MAX_AXES]
    intp step[CONVERT_SIDES][MAX_AXES]
    intp box[MAX_AXES]
    intp tiles[MAX_AXES]        # tiles along each axis
    int n_cuts
    int cut[CUTS_MAX]
    intp n_tiles                # tiles of one part
    intp tile_items             # items of a whole tile
    TileShape* shapes           # 1 << n_cuts of them (heap)
    int n_shapes
