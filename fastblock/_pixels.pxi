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

cdef extern from *:
    """
    #define FB_VECT_C_BS 3
    #define FB_VECT_C_M 9
    /* The depth planes (of a space group's 9) that draw on space row r:
       plane g takes t = 4g .. 4g+3, from space rows (4g % 9) / 3 and
       ((4g + 3) % 9) / 3. Taken in pairs, the two tables of a permute. */
    static const signed char fb_vect_c_row_planes[FB_VECT_C_BS][6] = {
        {0, 2, 4, 5, 6, 7}, {0, 1, 3, 5, 7, 8}, {1, 2, 3, 4, 6, 8}};
    #if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    #define FB_VECT_C_PIXELS_BUILT 1
    static inline __mmask64 fb_low_bytes(Py_ssize_t n) {
        return n <= 0 ? 0 : n >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << n) - 1);
    }
    #define FB_PERMUTE(k, a, b) _mm512_maskz_permutex2var_epi8( \
        masks[k], (a), _mm512_loadu_si512((const void *)(idx + 64 * (k))), (b))

    /* space_to_depth: depth row y of out_w pixels of W-byte items in the 9
       planes from space rows 3y .. 3y+2, NP pixels a step (W and NP are
       constants after inlining). Entry 3g + r: plane g's bytes from row r. */
    static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vbmi")))
    void fb_vect_c_split_row(char *depth, Py_ssize_t plane_step, const char *space,
                             Py_ssize_t space_row_step, Py_ssize_t out_w,
                             const unsigned char *idx, const unsigned long long *masks,
                             const int W, const int NP) {
        const Py_ssize_t space_px = FB_VECT_C_BS * 4 * W, depth_px = 4 * W;
        Py_ssize_t x, left;
        int g, r;
        for (x = 0; x < out_w; x += NP) {
            __m512i lo[FB_VECT_C_BS], hi[FB_VECT_C_BS];
            const char *s = space + x * space_px;
            char *d = depth + x * depth_px;
            left = out_w - x < NP ? out_w - x : NP;
            if (x + NP < out_w) {
                /* The row goes on past these 128 bytes ((NP + 1) * space_px > 128). */
                #pragma GCC unroll 3
                for (r = 0; r < FB_VECT_C_BS; r++) {
                    lo[r] = _mm512_loadu_si512((const void *)(s + r * space_row_step));
                    hi[r] = _mm512_loadu_si512((const void *)(s + r * space_row_step + 64));
                }
            } else {
                __mmask64 lo_mask = fb_low_bytes(left * space_px);
                __mmask64 hi_mask = fb_low_bytes(left * space_px - 64);
                #pragma GCC unroll 3
                for (r = 0; r < FB_VECT_C_BS; r++) {
                    lo[r] = _mm512_maskz_loadu_epi8(lo_mask, s + r * space_row_step);
                    hi[r] = _mm512_maskz_loadu_epi8(hi_mask, s + r * space_row_step + 64);
                }
            }
            /* Unrolled, so that g is a constant and lo and hi stay in registers. */
            #pragma GCC unroll 9
            for (g = 0; g < FB_VECT_C_M; g++) {
                const int first = 4 * g % FB_VECT_C_M / FB_VECT_C_BS;
                const int last = (4 * g + 3) % FB_VECT_C_M / FB_VECT_C_BS;
                const int k = FB_VECT_C_BS * g + first, k2 = FB_VECT_C_BS * g + last;
                __m512i item = _mm512_or_si512(FB_PERMUTE(k, lo[first], hi[first]),
                                               FB_PERMUTE(k2, lo[last], hi[last]));
                if (x + 2 * NP <= out_w)
                    _mm512_storeu_si512((void *)(d + g * plane_step), item);
                else
                    _mm512_mask_storeu_epi8(d + g * plane_step, fb_low_bytes(left * depth_px), item);
            }
        }
    }

    /* depth_to_space: space rows 3y .. 3y+2 from depth row y of the 9
       planes. Entry 6r + 3h + q: half h (64 bytes) of row r's register
       pair from the q-th pair of planes of fb_vect_c_row_planes[r]. */
    static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vbmi")))
    void fb_vect_c_join_row(char *space, Py_ssize_t space_row_step, const char *depth,
                            Py_ssize_t plane_step, Py_ssize_t out_w,
                            const unsigned char *idx, const unsigned long long *masks,
                            const int W, const int NP) {
        const Py_ssize_t space_px = FB_VECT_C_BS * 4 * W, depth_px = 4 * W;
        Py_ssize_t x, left;
        int g, r, h;
        for (x = 0; x < out_w; x += NP) {
            __m512i plane[FB_VECT_C_M];
            const char *s = depth + x * depth_px;
            char *d = space + x * space_px;
            left = out_w - x < NP ? out_w - x : NP;
            if ((x + 16 / W) <= out_w) {
                /* 64 bytes of each plane row (16 / W pixels) are there. */
                #pragma GCC unroll 9
                for (g = 0; g < FB_VECT_C_M; g++)
                    plane[g] = _mm512_loadu_si512((const void *)(s + g * plane_step));
            } else {
                __mmask64 mask = fb_low_bytes(left * depth_px);
                #pragma GCC unroll 9
                for (g = 0; g < FB_VECT_C_M; g++)
                    plane[g] = _mm512_maskz_loadu_epi8(mask, s + g * plane_step);
            }
            /* Unrolled, so that r, h and the planes are constants. */
            #pragma GCC unroll 3
            for (r = 0; r < FB_VECT_C_BS; r++) {
                #pragma GCC unroll 2
                for (h = 0; h < 2; h++) {
                    const int k = 6 * r + 3 * h;
                    const signed char *pair = fb_vect_c_row_planes[r];
                    __m512i item = _mm512_or_si512(
                        _mm512_or_si512(FB_PERMUTE(k, plane[pair[0]], plane[pair[1]]),
                                        FB_PERMUTE(k + 1, plane[pair[2]], plane[pair[3]])),
                        FB_PERMUTE(k + 2, plane[pair[4]], plane[pair[5]]));
                    char *row = d + r * space_row_step + 64 * h;
                    /* The row goes on past this step's NP * space_px bytes
                       by at least space_px > 128 - NP * space_px. */
                    if (x + NP < out_w)
                        _mm512_storeu_si512((void *)row, item);
                    else
                        _mm512_mask_storeu_epi8(row, fb_low_bytes(left * space_px - 64 * h), item);
                }
            }
        }
    }
    #undef FB_PERMUTE

    /* rows depth rows (depth_row_step apart) and their space rows (3 *
       space_row_step apart), one way or the other. */
    __attribute__((target("avx512f,avx512bw,avx512vbmi")))
    static void fb_vect_c_pixels(char *depth, Py_ssize_t plane_step, Py_ssize_t depth_row_step,
                                 char *space, Py_ssize_t space_row_step, Py_ssize_t rows,
                                 Py_ssize_t out_w, const unsigned char *idx,
                                 const unsigned long long *masks, int W, int to_depth) {
        Py_ssize_t y;
        for (y = 0; y < rows; y++) {
            char *d = depth + y * depth_row_step;
            char *s = space + y * FB_VECT_C_BS * space_row_step;
            #define FB_VECT_C_ROW(W_, NP_) \
                if (to_depth) fb_vect_c_split_row(d, plane_step, s, space_row_step, out_w, idx, masks, W_, NP_); \
                else fb_vect_c_join_row(s, space_row_step, d, plane_step, out_w, idx, masks, W_, NP_);
            switch (W) {
                case 1: FB_VECT_C_ROW(1, 10) break;
                case 2: FB_VECT_C_ROW(2, 5) break;
                default: FB_VECT_C_ROW(4, 2) break;
            }
            #undef FB_VECT_C_ROW
        }
    }
    #else
    #define FB_VECT_C_PIXELS_BUILT 0
    /* Never called: vect_c_pixels_enabled is false without the kernel. */
    static void fb_vect_c_pixels(char *depth, Py_ssize_t plane_step, Py_ssize_t depth_row_step,
                                 char *space, Py_ssize_t space_row_step, Py_ssize_t rows,
                                 Py_ssize_t out_w, const unsigned char *idx,
                                 const unsigned long long *masks, int W, int to_depth) {
        (void)depth; (void)plane_step; (void)depth_row_step; (void)space; (void)space_row_step;
        (void)rows; (void)out_w; (void)idx; (void)masks; (void)W; (void)to_depth;
    }
    #endif
    """
    int FB_VECT_C_PIXELS_BUILT
    const signed char fb_vect_c_row_planes[3][6]
    void fb_vect_c_pixels(char* depth, intp plane_step, intp depth_row_step, char* space,
                          intp space_row_step, intp rows, intp out_w, const unsigned char* idx,
                          const unsigned long long* masks, int W, int to_depth) noexcept nogil

cdef enum:
    VECT_C_PIXELS_BS = 3
    VECT_C_PIXELS_M = 9
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
