/* The register transpose shared by the staged and the lane transposes
   (SSE2 unpacks or NEON zips, simd128.h): P registers of P elements each (P = 2, 4, 8, 16: elements of
   16 / P bytes) transposed by log2(P) rounds of unpacks. */
#ifndef FASTBLOCK_REGISTER_TRANSPOSE_H
#define FASTBLOCK_REGISTER_TRANSPOSE_H

#include "fb_common.h"

#include "simd128.h"

#if FB_SIMD128

/* One round: register i is paired with register i + P/2, elements of
   the given size interleaved. log2(P) rounds rotate the (row, column)
   bit address of each element by log2(P) bits: a transpose (register j
   ends up holding element j of every input register, in order). */
#define FB_LANE_ROUND(LO, HI) do {                                   \
        fb_v128 t_[16];                                              \
        int i_;                                                      \
        FB_UNROLL                                                    \
        for (i_ = 0; i_ < P / 2; i_++) {                             \
            t_[2 * i_] = LO(r[i_], r[i_ + P / 2]);                   \
            t_[2 * i_ + 1] = HI(r[i_], r[i_ + P / 2]);               \
        }                                                            \
        FB_UNROLL                                                    \
        for (i_ = 0; i_ < P; i_++)                                   \
            r[i_] = t_[i_];                                          \
    } while (0)

static inline FB_ALWAYS_INLINE FB_V128_BASE_TARGET
void fb_transpose_registers(fb_v128 *r, const int P) {
    int round;
    if (P == 2) {
        FB_LANE_ROUND(fb_v128_zip_lo64, fb_v128_zip_hi64);
    } else if (P == 4) {
        FB_UNROLL
        for (round = 0; round < 2; round++)
            FB_LANE_ROUND(fb_v128_zip_lo32, fb_v128_zip_hi32);
    } else if (P == 8) {
        FB_UNROLL
        for (round = 0; round < 3; round++)
            FB_LANE_ROUND(fb_v128_zip_lo16, fb_v128_zip_hi16);
    } else {
        FB_UNROLL
        for (round = 0; round < 4; round++)
            FB_LANE_ROUND(fb_v128_zip_lo8, fb_v128_zip_hi8);
    }
}
#undef FB_LANE_ROUND

#endif

#endif
