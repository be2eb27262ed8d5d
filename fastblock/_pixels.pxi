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
# register built from the two space rows it draws on, by one two-register
# byte permute (AVX-512 VBMI vpermt2b) each under a mask of the bytes that
# row supplies: 18 permutes, 6 loads and 9 stores for 360 bytes of uint8.
# In the engine on the AMD EPYC (Zen 4) CI machine, x np.copyto, against
# the two passes through planes (StagedVectC) that CPUs without VBMI keep:
#                    one thread     two threads
#   uint8 64 MiB     1.26-1.41      0.84-0.91    planes 2.86, 1.52
#   float32 64 MiB   1.33-1.36      0.87-1.08    planes 2.02, 1.16
#   uint16 16 MiB    1.33-1.65      0.79-0.88    planes 2.01, 1.10
#   uint8 1 MiB      1.73-2.06      1.05-1.24    planes 6.55, 3.46
# (three processes; the planes in one), float32 1 to 8 MiB even with the
# planes (2.58 / 2.65 one thread at 1 MiB, 0.90 / 0.91 two at 8 MiB).
# Permuting all three rows for every plane (27 permutes), uint8 took
# 1.49-1.53 and 0.87-0.90 at 64 MiB, 2.58-2.79 and 1.54-1.60 at 1 MiB.
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
            /* Unrolled, so that g is a constant and lo and hi stay in
               registers. Plane g takes t = 4g .. 4g+3: space rows
               (4g % 9) / 3 and ((4g + 3) % 9) / 3, never the third. */
            #pragma GCC unroll 9
            for (g = 0; g < FB_VECT_C_M; g++) {
                const int first = 4 * g % FB_VECT_C_M / FB_VECT_C_BS;
                const int last = (4 * g + 3) % FB_VECT_C_M / FB_VECT_C_BS;
                const int k = FB_VECT_C_BS * g + first, k2 = FB_VECT_C_BS * g + last;
                __m512i item = _mm512_maskz_permutex2var_epi8(
                    masks[k], lo[first], _mm512_loadu_si512((const void *)(idx + 64 * k)), hi[first]);
                item = _mm512_or_si512(item, _mm512_maskz_permutex2var_epi8(
                    masks[k2], lo[last], _mm512_loadu_si512((const void *)(idx + 64 * k2)), hi[last]));
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


def set_vect_c_pixels(bint enabled):
    """Whether NCHW_VECT_C depth_first space_to_depth with bs 3 runs the
    one-pass kernel where the CPU has it; returns the previous setting (for
    tests and benchmarks)."""
    global vect_c_pixels_enabled
    before = vect_c_pixels_enabled
    vect_c_pixels_enabled = enabled and FB_VECT_C_PIXELS_BUILT != 0 and fb_cpu_can_shuffle_wide() != 0
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
