# NCHW_VECT_C depth_first space_to_depth with bs 3 in one pass, in registers.
#
# With M = 9 block offsets, depth channel (4*g + l)*9 + B (space group g,
# lane l, block offset B = 3*b1 + b2) is depth group 9*g + t // 4, lane
# t % 4, where t = 9*l + B: each depth pixel's 4 items come from up to two
# of the three space rows of its block, at offsets no strided axes give
# (see VectCRows). So the 36 items of one depth pixel in its 9 depth
# planes are a fixed permutation of the 3 x 12 items of its block in 3
# space rows.
#
# The kernel moves NP depth pixels at a time: the 3 space rows' 12*NP items
# each fit two 64-byte registers (NP = 10 for 1-byte items, 5 for 2-byte
# ones, 2 for 4-byte ones), and each of the 9 depth planes gets one 64-byte
# register built from them by one two-register byte permute (AVX-512 VBMI
# vpermt2b) per space row, under a mask of the bytes that row supplies:
# 27 permutes, 6 loads and 9 stores for 360 bytes of uint8. A C model
# (64 MiB, one thread, x memcpy, on the AMD EPYC (Zen 4) CI machine): uint8
# 1.39, float32 1.30, against 2.34 and 1.76 for the two passes through
# planes (StagedVectC) that CPUs without VBMI keep.
#
# A store ends past its NP pixels (24 bytes for uint8) while the row goes on
# (the next store writes those bytes); the row's last two stores and the
# loads of its last group are masked, so nothing outside the rows is read or
# written.

cdef extern from *:
    """
    #define FB_VECT_C_BS 3
    #define FB_VECT_C_M 9
    #if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    #define FB_VECT_C_PIXELS_BUILT 1
    static inline __mmask64 fb_low_bytes(Py_ssize_t n) {
        return n >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << n) - 1);
    }

    /* One depth row of out_w pixels of W-byte items, NP pixels a step (W
       and NP are constants after inlining). idx/masks: for plane g and
       space row r, entry 3*g + r. */
    static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vbmi")))
    void fb_vect_c_pixels_row(char *dst, Py_ssize_t plane_step, const char *src,
                              Py_ssize_t src_row_step, Py_ssize_t out_w,
                              const unsigned char *idx, const unsigned long long *masks,
                              const int W, const int NP) {
        const Py_ssize_t in_px = FB_VECT_C_BS * 4 * W, out_px = 4 * W;
        Py_ssize_t x, left;
        int g, r;
        for (x = 0; x < out_w; x += NP) {
            __m512i lo[FB_VECT_C_BS], hi[FB_VECT_C_BS];
            const char *s = src + x * in_px;
            char *d = dst + x * out_px;
            left = out_w - x < NP ? out_w - x : NP;
            if (x + NP < out_w) {
                /* The row goes on past these 128 bytes ((NP + 1) * in_px > 128). */
                #pragma GCC unroll 3
                for (r = 0; r < FB_VECT_C_BS; r++) {
                    lo[r] = _mm512_loadu_si512((const void *)(s + r * src_row_step));
                    hi[r] = _mm512_loadu_si512((const void *)(s + r * src_row_step + 64));
                }
            } else {
                __mmask64 lo_mask = fb_low_bytes(left * in_px);
                __mmask64 hi_mask = left * in_px > 64 ? fb_low_bytes(left * in_px - 64) : 0;
                for (r = 0; r < FB_VECT_C_BS; r++) {
                    lo[r] = _mm512_maskz_loadu_epi8(lo_mask, s + r * src_row_step);
                    hi[r] = _mm512_maskz_loadu_epi8(hi_mask, s + r * src_row_step + 64);
                }
            }
            /* Unrolled, so that lo and hi stay in registers. */
            #pragma GCC unroll 9
            for (g = 0; g < FB_VECT_C_M; g++) {
                __m512i item = _mm512_setzero_si512();
                #pragma GCC unroll 3
                for (r = 0; r < FB_VECT_C_BS; r++) {
                    int k = FB_VECT_C_BS * g + r;
                    item = _mm512_or_si512(item, _mm512_maskz_permutex2var_epi8(
                        masks[k], lo[r], _mm512_loadu_si512((const void *)(idx + 64 * k)), hi[r]));
                }
                if (x + 2 * NP <= out_w)
                    _mm512_storeu_si512((void *)(d + g * plane_step), item);
                else
                    _mm512_mask_storeu_epi8(d + g * plane_step, fb_low_bytes(left * out_px), item);
            }
        }
    }

    /* rows depth rows (dst_row_step apart; space rows 3 * src_row_step). */
    __attribute__((target("avx512f,avx512bw,avx512vbmi")))
    static void fb_vect_c_pixels(char *dst, Py_ssize_t plane_step, Py_ssize_t dst_row_step,
                                 const char *src, Py_ssize_t src_row_step, Py_ssize_t rows,
                                 Py_ssize_t out_w, const unsigned char *idx,
                                 const unsigned long long *masks, int W) {
        Py_ssize_t y;
        for (y = 0; y < rows; y++) {
            char *d = dst + y * dst_row_step;
            const char *s = src + y * FB_VECT_C_BS * src_row_step;
            switch (W) {
                case 1: fb_vect_c_pixels_row(d, plane_step, s, src_row_step, out_w, idx, masks, 1, 10); break;
                case 2: fb_vect_c_pixels_row(d, plane_step, s, src_row_step, out_w, idx, masks, 2, 5); break;
                default: fb_vect_c_pixels_row(d, plane_step, s, src_row_step, out_w, idx, masks, 4, 2); break;
            }
        }
    }
    #else
    #define FB_VECT_C_PIXELS_BUILT 0
    /* Never called: vect_c_pixels_enabled is false without the kernel. */
    static void fb_vect_c_pixels(char *dst, Py_ssize_t plane_step, Py_ssize_t dst_row_step,
                                 const char *src, Py_ssize_t src_row_step, Py_ssize_t rows,
                                 Py_ssize_t out_w, const unsigned char *idx,
                                 const unsigned long long *masks, int W) {
        (void)dst; (void)plane_step; (void)dst_row_step; (void)src; (void)src_row_step;
        (void)rows; (void)out_w; (void)idx; (void)masks; (void)W;
    }
    #endif
    """
    int FB_VECT_C_PIXELS_BUILT
    void fb_vect_c_pixels(char* dst, intp plane_step, intp dst_row_step, const char* src,
                          intp src_row_step, intp rows, intp out_w, const unsigned char* idx,
                          const unsigned long long* masks, int W) noexcept nogil

cdef enum:
    VECT_C_PIXELS_BS = 3
    VECT_C_PIXELS_M = 9
    VECT_C_PIXELS_ENTRIES = VECT_C_PIXELS_BS * VECT_C_PIXELS_M   # (plane, space row) pairs

# Whether space_to_depth takes the kernel where it fits (the CPU has AVX-512
# VBMI); tests switch it off to reach the planes on such CPUs too.
cdef bint vect_c_pixels_enabled = FB_VECT_C_PIXELS_BUILT != 0 and fb_cpu_can_shuffle_wide() != 0
# 4-byte items take it from results this large: each step moves only 2
# pixels, and in cache the planes' register transposes of 4-byte items cost
# less. In the engine, x np.copyto, two threads, kernel against planes:
# float32 1 MiB 1.84 / 1.47, 4 MiB 1.40 / 1.03, 16 MiB 0.89 / 1.06, 64 MiB
# 0.89 / 1.18; uint16 1 MiB 1.93 / 6.98, 4 MiB 1.32 / 2.02, 16 MiB
# 0.80 / 1.10; uint8 1 MiB 2.12 / 3.46, 64 MiB 0.96 / 1.52 (one process).
cdef intp VECT_C_PIXELS_WIDE_MIN_BYTES = 16 << 20
cdef intp vect_c_pixels_wide_min_bytes = VECT_C_PIXELS_WIDE_MIN_BYTES


def set_vect_c_pixels(bint enabled, intp wide_min_bytes=VECT_C_PIXELS_WIDE_MIN_BYTES):
    """Whether NCHW_VECT_C depth_first space_to_depth with bs 3 runs the
    one-pass kernel where the CPU has it, and from which result size for
    4-byte items; returns the previous ``(enabled, wide_min_bytes)`` (for
    tests and benchmarks)."""
    global vect_c_pixels_enabled, vect_c_pixels_wide_min_bytes
    before = (vect_c_pixels_enabled, vect_c_pixels_wide_min_bytes)
    vect_c_pixels_enabled = enabled and FB_VECT_C_PIXELS_BUILT != 0 and fb_cpu_can_shuffle_wide() != 0
    vect_c_pixels_wide_min_bytes = wide_min_bytes
    return before


cdef void vect_c_pixel_tables(unsigned char* idx, unsigned long long* masks,
                              intp itemsize) noexcept:
    """The permutes' byte indices and masks: byte i of plane g's register
    (pixel p, lane j, byte e) takes t = 4*g + j = 9*l + 3*b1 + b2 from space
    row b1, byte (3*p + b2)*4*W + l*W + e of its two registers."""
    cdef intp W = itemsize, pixel_bytes = VECT_C_GROUP * itemsize
    cdef intp n_pixels = imin(64 // pixel_bytes, 128 // (VECT_C_PIXELS_BS * pixel_bytes))
    cdef intp g, i, p, j, e, t, l, B, k
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
            k = VECT_C_PIXELS_BS * g + B // VECT_C_PIXELS_BS
            idx[64 * k + i] = <unsigned char>((VECT_C_PIXELS_BS * p + B % VECT_C_PIXELS_BS)
                                              * pixel_bytes + l * W + e)
            masks[k] |= (<unsigned long long>1) << i
