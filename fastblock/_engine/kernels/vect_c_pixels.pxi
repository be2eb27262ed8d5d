# NCHW_VECT_C depth_first SpaceToDepth and DepthToSpace with bs 3 in one
# pass, in registers.
#
# With M = 9 block offsets, depth channel (4*g + l)*9 + B (space group g,
# lane l, block offset B = 3*b1 + b2) is depth group 9*g + t // 4, lane
# t % 4, where t = 9*l + B: each depth pixel's 4 items come from two of the
# three space rows of its block, at offsets no strided axes give (see
# VectCRows). So the 36 items of one depth pixel in its 9 depth planes are
# a fixed permutation of the 3 x 12 items of its block in 3 space rows.
#
# The kernel moves NP depth pixels at a time: the 3 space rows' 12*NP items
# each fit two 64-byte registers (NP = 10 for 1-byte items, 5 for 2-byte
# ones, 2 for 4-byte ones), and each depth plane's NP pixels one.
# - space_to_depth (split): each plane's register is built from the two
#   space rows it draws on, by one two-register byte permute (AVX-512 VBMI
#   vpermt2b) each, under a mask of the bytes that row supplies.
# - depth_to_space (join): each of a space row's two registers from the 6
#   planes that draw on that row, three permutes of two planes each.
# Either way 18 permutes, 15 loads and stores for 360 bytes of uint8.
#
# It replaces the staged planes (space_to_depth, and depth_to_space in cache)
# and the gather tables (depth_to_space): space_to_depth uint8, 64 MiB, two
# threads, 1.52 -> 0.84-0.91 x np.copyto; float32 from 1 to 8 MiB is about
# even with the planes. Permuting all three space rows for every
# space_to_depth plane (27 permutes) was slower.
#
# A store ends past its NP pixels (24 bytes for uint8 planes, 8 for rows)
# while the row goes on (the next store writes those bytes); the row's last
# stores and loads are masked, so nothing outside the rows is read or
# written.

from fastblock._engine.types cimport VECT_C_PIXELS_BS, VECT_C_PIXELS_ENTRIES, VECT_C_PIXELS_M, intp
from fastblock._engine.kernels_c cimport (FB_VECT_C_PIXELS_BUILT, fb_cpu_has_avx512_vbmi,
                                          fb_vect_c_pixels, fb_vect_c_row_planes)

cdef void vect_c_pixel_tables(unsigned char* idx, unsigned long long* masks, intp itemsize,
                              bint to_depth) noexcept:
    """The permutes' byte indices and masks. A step moves NP depth pixels
    (as fb_vect_c_pixels: 10, 5, 2 for W = 1, 2, 4). Item (pixel p, lane j)
    of depth plane g is t = 4*g + j = 9*l + 3*b1 + b2: item (3*p + b2, l)
    of space row b1. space_to_depth: entry 3*g + b1 builds plane g's
    register from row b1's two. depth_to_space: entry 6*b1 + 3*h + q builds
    half h of row b1's two from its q-th pair of planes
    (fb_vect_c_row_planes)."""
    cdef intp W = itemsize, pixel_bytes = VECT_C_GROUP * itemsize
    cdef intp space_pixel_bytes = VECT_C_PIXELS_BS * pixel_bytes
    cdef intp n_pixels = 128 // space_pixel_bytes
    cdef intp g, i, p, j, e, t, l, B, b1, k, place, space_byte, depth_byte
    for k in range(VECT_C_PIXELS_ENTRIES):
        masks[k] = 0
        for i in range(64):
            idx[64 * k + i] = 0
    for g in range(VECT_C_PIXELS_M):
        for i in range(n_pixels * pixel_bytes):
            p = i // pixel_bytes
            j = i % pixel_bytes // W
            e = i % W
            t = VECT_C_GROUP * g + j
            l = t // VECT_C_PIXELS_M
            B = t % VECT_C_PIXELS_M
            b1 = B // VECT_C_PIXELS_BS
            space_byte = (VECT_C_PIXELS_BS * p + B % VECT_C_PIXELS_BS) * pixel_bytes + l * W + e
            depth_byte = i
            if to_depth:
                k = VECT_C_PIXELS_BS * g + b1
                idx[64 * k + depth_byte] = <unsigned char>space_byte
                masks[k] |= (<unsigned long long>1) << depth_byte
            else:
                place = 0
                while fb_vect_c_row_planes[b1][place] != g:
                    place += 1
                k = 6 * b1 + 3 * (space_byte // 64) + place // 2
                idx[64 * k + space_byte % 64] = <unsigned char>(64 * (place % 2) + depth_byte)
                masks[k] |= (<unsigned long long>1) << (space_byte % 64)
