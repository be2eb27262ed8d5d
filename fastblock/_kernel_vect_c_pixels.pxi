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
# In the engine on the AMD EPYC (Zen 4) CI machine, x np.copyto:
#                          one thread     two threads   before (1 / 2 threads)
#   s2d uint8 64 MiB       1.26-1.41      0.84-0.91     planes 2.86 / 1.52
#   s2d float32 64 MiB     1.33-1.36      0.87-1.08     planes 2.02 / 1.16
#   s2d uint16 16 MiB      1.33-1.65      0.79-0.88     planes 2.01 / 1.10
#   s2d uint8 1 MiB        1.73-2.06      1.05-1.24     planes 6.55 / 3.46
#   d2s uint8 64 MiB       1.20           0.73          tables 1.50 / 0.81
#   d2s float32 64 MiB     1.20           0.83          tables 2.23 / 1.09
#   d2s uint8 16 MiB       1.17           0.74          tables 2.33 / 1.35
#   d2s uint8 4 MiB        1.63           0.64          planes 2.66 / 1.57
# (s2d: three processes, the others one), and float32 from 1 to 8 MiB about
# even with the planes (s2d 2.58 / 2.65 one thread at 1 MiB, 0.90 / 0.91
# two at 8 MiB; d2s 1.17 / 1.43 two at 1 MiB, 0.89 / 1.05 at 4 MiB).
# Permuting all three space rows for every s2d plane (27 permutes), uint8
# took 1.49-1.53 and 0.87-0.90 at 64 MiB, 2.58-2.79 and 1.54-1.60 at 1 MiB.
#
# A store ends past its NP pixels (24 bytes for uint8 planes, 8 for rows)
# while the row goes on (the next store writes those bytes); the row's last
# stores and loads are masked, so nothing outside the rows is read or
# written.

from ._kernels_c cimport (FB_VECT_C_BS, FB_VECT_C_M, FB_VECT_C_PIXELS_BUILT, fb_cpu_has_avx512_vbmi,
                          fb_vect_c_pixels, fb_vect_c_row_planes)

cdef enum:
    VECT_C_PIXELS_BS = FB_VECT_C_BS
    VECT_C_PIXELS_M = FB_VECT_C_M
    # Permutes a step: (plane, space row) for space_to_depth, 27 of which
    # 18 run; (space row, half, pair of planes) for depth_to_space, 18.
    VECT_C_PIXELS_ENTRIES = VECT_C_PIXELS_BS * VECT_C_PIXELS_M

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
