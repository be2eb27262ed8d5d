/* The convert stage's one-pass lanes kernels on x86 (convert.h,
   fb_convert_lanes): packed uint8 pixels of 3 or 4 lanes into float
   planes (AVX2 byte shuffles), float32 planes back into uint8 pixels (AVX2,
   and AVX-512 VBMI in 64-byte registers), and pixels of 5 to 64 lanes of
   2-byte integers into float planes (AVX2). */
#include "convert_kernels.h"

#if FB_X86_SIMD
#include "convert_x86.h"
#include "lanes.h"

/* Byte shuffles of cv_lanes_case_avx2 over a 16-byte chunk of 16 pixels
   broadcast to both halves of a register (0x80: a zero byte).
   cv_lane_items[lanes - 3][lane][group][k], over chunk lanes * group / 2
   + k: `lane` of pixel 8 * group + j as the 32-bit item j.
   cv_lane_pairs[lanes - 3][lane][chunk]: `lane` of pixels 2j and 2j + 1
   as the low two bytes of 32-bit item j (the chunks ORed). */
static unsigned char cv_lane_items[2][4][2][2][32];
static unsigned char cv_lane_pairs[2][4][4][32];

/* cv_pixel_masks[lane][chunk]: byte j of 16-byte chunk `chunk` of 16
   3-lane pixels, where it lies in `lane`'s register (0x80: in another
   lane's). A lane's register holds its pixels in the order its packs
   leave them (cv_pixels_case_avx2): 0-3, 8-11, 4-7, 12-15. */
static unsigned char cv_pixel_masks[3][3][16];

/* cv_pixel_permutes[lanes - 3]: lanes.h's permutes that interleave 3 or
   4 lanes of bytes, each index composed with the order that
   cv_pixels_case_avx512's packs leave the pixels in (CV_PACKED_AT64). */
static FbLanePermutes cv_pixel_permutes[2];

/* Where pixel p of 64 lies in a lane's bytes after those packs: each
   pack works within 16-byte quarters, so byte 16k + 4j + m holds pixel
   16j + 4k + m. */
#define CV_PACKED_AT64(p) (16 * ((p) % 16 / 4) + 4 * ((p) / 16) + (p) % 4)

#define CV_PACKED_AT(p) (((p) & 3) | (((p) & 4) << 1) | (((p) & 8) >> 1))

/* The byte of `lane` of pixel p of 16 `lanes`-lane pixels, where chunk
   `chunk` holds it, else 0x80. */
static unsigned char cv_lane_byte(int lanes, int lane, int p, int chunk) {
    int at = lanes * p + lane;
    return (unsigned char)(at / 16 == chunk ? at % 16 : 0x80);
}

FB_INTERNAL void cv_build_lane_masks(void) {
    int l, lane, chunk, j, g, k, b;
    for (l = 3; l <= 4; l++)
        for (lane = 0; lane < l; lane++)
            for (b = 0; b < 32; b++) {
                /* Byte b lies in 32-bit item j, at byte b % 4 of it. */
                j = b / 4;
                for (g = 0; g < 2; g++)
                    for (k = 0; k < 2; k++)
                        cv_lane_items[l - 3][lane][g][k][b] =
                            b % 4 ? 0x80 : cv_lane_byte(l, lane, 8 * g + j, l * g / 2 + k);
                for (chunk = 0; chunk < l; chunk++)
                    cv_lane_pairs[l - 3][lane][chunk][b] =
                        b % 4 > 1 ? 0x80 : cv_lane_byte(l, lane, 2 * j + b % 4, chunk);
            }
    for (l = 3; l <= 4; l++) {
        FbLanePermutes *t = &cv_pixel_permutes[l - 3];
        fb_lane_permutes_build(t, l, 1, 1);
        for (lane = 0; lane < l; lane++)
            for (j = 0; j < 64; j++) {
                /* Bit 6 picks the input; the byte, below it, is a pixel. */
                int a = t->pair_a[lane][j], b = t->pair_b[lane][j];
                t->pair_a[lane][j] = (unsigned char)((a & 64) | CV_PACKED_AT64(a & 63));
                t->pair_b[lane][j] = (unsigned char)((b & 64) | CV_PACKED_AT64(b & 63));
            }
    }
    for (lane = 0; lane < 3; lane++)
        for (chunk = 0; chunk < 3; chunk++)
            for (j = 0; j < 16; j++) {
                int at = 16 * chunk + j;
                cv_pixel_masks[lane][chunk][j] =
                    (unsigned char)(at % 3 == lane ? CV_PACKED_AT(at / 3) : 0x80);
            }
}


/* 16 floats as bfloat16 at `at`, given as items 0, 2, ..., 14 (even) and
   1, 3, ..., 15 (odd): a word blend leaves them in order, where 16 floats
   in order take a pack and a lane permute. */
static inline __attribute__((always_inline, target("avx2"))) void
cv_store_bf16_pairs_avx2(int rounding, char *at, __m256 even, __m256 odd) {
    _mm256_storeu_si256((__m256i *)at, _mm256_blend_epi16(cv_bf16_words_avx2(rounding, even),
                                                          cv_bf16_high_avx2(rounding, odd),
                                                          0xaa));
}

/* 16 floats (lo, hi) into the result type at `at`: float32; float16 by
   F16C (from these kernels' sources a NaN can only come of the
   arithmetic, a quiet one, which F16C converts by the NaN rule); bfloat16
   by the rounding given (convert_lanes.h). */
static inline __attribute__((always_inline, target("avx2,f16c"))) void
cv_store_lane_avx2(int dst_type, int rounding, char *at, __m256 lo, __m256 hi) {
    if (dst_type == FB_NUM_F32) {
        _mm256_storeu_ps((float *)at, lo);
        _mm256_storeu_ps((float *)(at + 32), hi);
    } else if (dst_type == FB_NUM_F16) {
        _mm_storeu_si128((__m128i *)at, _mm256_cvtps_ph(lo, _MM_FROUND_TO_NEAREST_INT));
        _mm_storeu_si128((__m128i *)(at + 16), _mm256_cvtps_ph(hi, _MM_FROUND_TO_NEAREST_INT));
    } else if (rounding == CV_BF16_BY_CPU) {
        /* vcvtne2ps2bf16 (AT&T order: lo into the low half), by asm: the
           kernels are compiled for AVX2, which its intrinsic's target
           attribute would not inline into. */
        __m256i both;
        __asm__("vcvtne2ps2bf16 %2, %1, %0" : "=v"(both) : "v"(hi), "v"(lo));
        _mm256_storeu_si256((__m256i *)at, both);
    } else {
        _mm256_storeu_si256((__m256i *)at,
                            _mm256_permute4x64_epi64(
                                _mm256_packus_epi32(cv_bf16_words_avx2(rounding, lo),
                                                    cv_bf16_words_avx2(rounding, hi)),
                                0xd8));
    }
}

/* A byte shuffle of cv_lanes_case_avx2's tables. */
#define CV_LANE_SHUFFLE(chunk, mask) \
    _mm256_shuffle_epi8(chunk, _mm256_loadu_si256((const __m256i *)(mask)))

/* One case of cv_lanes_avx2 (CV_LANES_KERNEL), 16 pixels a round: each
   16-byte chunk broadcast to both halves of a register, each lane's items
   gathered by byte shuffles straight into 32-bit items (cv_lane_items:
   two shuffles of 8 items; for bfloat16, pairs of items by
   cv_lane_pairs, split into even and odd ones by cv_store_bf16_pairs_avx2),
   converted, scaled, offset and stored. */
static inline __attribute__((always_inline, target("avx2,f16c"))) void cv_lanes_case_avx2(
        char *dst, fb_intp plane_step, const uint8_t *src, fb_intp n, const int lanes,
        const int dst_type, const int rounding, const float *s, const float *o, const int has_s,
        const int has_o) {
    const fb_intp out_item = dst_type == FB_NUM_F32 ? 4 : 2;
    /* bfloat16 rounded by the kernel: items in pairs (cv_store_bf16_pairs_avx2). */
    const int bf16 = dst_type == FB_NUM_BF16 && rounding != CV_BF16_BY_CPU;
    const fb_intp second = cv_round_start(dst, out_item, 16 * out_item);
    __m256 scale[4], offset[4];
    int lane, chunk, g;
    fb_intp i;
    FB_UNROLL
    for (lane = 0; lane < lanes; lane++) {
        scale[lane] = _mm256_set1_ps(has_s ? s[lane] : 1.0f);
        offset[lane] = _mm256_set1_ps(has_o ? o[lane] : 0.0f);
    }
    for (i = 0; i + 16 <= n; i = i ? i + 16 : (second ? second : 16)) {
        __m256i chunks[4];
        FB_UNROLL
        for (chunk = 0; chunk < lanes; chunk++)
            chunks[chunk] = _mm256_broadcastsi128_si256(
                _mm_loadu_si128((const __m128i *)(src + lanes * i + 16 * chunk)));
        FB_UNROLL
        for (lane = 0; lane < lanes; lane++) {
            __m256 f[2];
            if (!bf16) {
                const unsigned char(*items)[2][32] = cv_lane_items[lanes - 3][lane];
                FB_UNROLL
                for (g = 0; g < 2; g++)
                    f[g] = _mm256_cvtepi32_ps(_mm256_or_si256(
                        CV_LANE_SHUFFLE(chunks[lanes * g / 2], items[g][0]),
                        CV_LANE_SHUFFLE(chunks[lanes * g / 2 + 1], items[g][1])));
            } else {
                /* bfloat16: even items as f[0], odd ones as f[1]. */
                const unsigned char(*pairs)[32] = cv_lane_pairs[lanes - 3][lane];
                __m256i both = CV_LANE_SHUFFLE(chunks[0], pairs[0]);
                FB_UNROLL
                for (chunk = 1; chunk < lanes; chunk++)
                    both = _mm256_or_si256(both, CV_LANE_SHUFFLE(chunks[chunk], pairs[chunk]));
                f[0] = _mm256_cvtepi32_ps(_mm256_and_si256(both, _mm256_set1_epi32(0xff)));
                f[1] = _mm256_cvtepi32_ps(_mm256_srli_epi32(both, 8));
            }
            /* Each operation only where given: no multiply by 1, no add of 0. */
            FB_UNROLL
            for (g = 0; g < 2; g++) {
                if (has_s)
                    f[g] = _mm256_mul_ps(f[g], scale[lane]);
                if (has_o)
                    f[g] = _mm256_add_ps(f[g], offset[lane]);
            }
            if (!bf16)
                cv_store_lane_avx2(dst_type, rounding, dst + lane * plane_step + i * out_item,
                                   f[0], f[1]);
            else
                cv_store_bf16_pairs_avx2(rounding, dst + lane * plane_step + i * out_item, f[0],
                                         f[1]);
        }
    }
    cv_lanes_tail(dst, plane_step, src, i, n, lanes, dst_type, s, o, has_s, has_o);
}
#undef CV_LANE_SHUFFLE

CV_LANES_KERNEL(cv_lanes_avx2, FB_INTERNAL __attribute__((target("avx2,f16c"))), cv_lanes_case_avx2)

/* One case of cv_pixels_avx2 (CV_PIXELS_KERNEL), 32 pixels a round: each
   plane's 32 floats saturated and converted as store_f32_u8_x86 does,
   packed to 32 bytes whose 16-byte halves hold pixels 0-15 and 16-31
   (each in the order CV_PACKED_AT says), then interleaved half by half:
   3 lanes by byte shuffles, 4 by unpacks. The last round ends at the last
   pixel (it may write a few again, with the same bytes); rows of fewer
   than 32 pixels go item by item. */
static inline __attribute__((always_inline, target("avx2"))) void cv_pixels_case_avx2(
        uint8_t *dst, fb_intp plane_step, const char *src, fb_intp n, const int lanes,
        const int dst_type, const int rounding, const float *s, const float *o, const int has_s,
        const int has_o) {
    __m256 scale[4], offset[4];
    __m256i mask[3][3];
    int lane, chunk, k;
    fb_intp i, next;
    (void)dst_type; (void)rounding;
    if (n < 32) {
        cv_pixels_tail(dst, plane_step, src, 0, n, lanes, s, o, has_s, has_o);
        return;
    }
    FB_UNROLL
    for (lane = 0; lane < lanes; lane++) {
        scale[lane] = _mm256_set1_ps(has_s ? s[lane] : 1.0f);
        offset[lane] = _mm256_set1_ps(has_o ? o[lane] : 0.0f);
        if (lanes == 3) {
            FB_UNROLL
            for (chunk = 0; chunk < 3; chunk++)
                mask[lane][chunk] = _mm256_broadcastsi128_si256(
                    _mm_loadu_si128((const __m128i *)cv_pixel_masks[lane][chunk]));
        }
    }
    for (next = 0; next < n; next += 32) {
        __m256i bytes[4];
        uint8_t *d;
        i = next + 32 > n ? n - 32 : next;
        d = dst + lanes * i;
        FB_UNROLL
        for (lane = 0; lane < lanes; lane++) {
            const float *from = (const float *)(src + lane * plane_step) + i;
            __m256i ints[4];
            FB_UNROLL
            for (k = 0; k < 4; k++) {
                __m256 f = _mm256_loadu_ps(from + 8 * k);
                /* Each operation only where given: no multiply by 1, no add of 0. */
                if (has_s)
                    f = _mm256_mul_ps(f, scale[lane]);
                if (has_o)
                    f = _mm256_add_ps(f, offset[lane]);
                ints[k] = _mm256_cvtps_epi32(cv_saturated_avx2(f, 0.0f, 255.0f));
            }
            bytes[lane] = _mm256_permute4x64_epi64(
                _mm256_packus_epi16(_mm256_packs_epi32(ints[0], ints[1]),
                                    _mm256_packs_epi32(ints[2], ints[3])), 0xd8);
        }
        if (lanes == 3) {
            FB_UNROLL
            for (chunk = 0; chunk < 3; chunk++) {
                __m256i out = _mm256_or_si256(_mm256_or_si256(
                                                  _mm256_shuffle_epi8(bytes[0], mask[0][chunk]),
                                                  _mm256_shuffle_epi8(bytes[1], mask[1][chunk])),
                                              _mm256_shuffle_epi8(bytes[2], mask[2][chunk]));
                _mm_storeu_si128((__m128i *)(d + 16 * chunk), _mm256_castsi256_si128(out));
                _mm_storeu_si128((__m128i *)(d + 48 + 16 * chunk),
                                 _mm256_extracti128_si256(out, 1));
            }
        } else {
            /* Pairs of lanes, then pixels: in each half the low bytes
               hold pixels 0-3 and 8-11 of its 16, the high ones 4-7 and
               12-15. */
            __m256i rg_lo = _mm256_unpacklo_epi8(bytes[0], bytes[1]);
            __m256i ba_lo = _mm256_unpacklo_epi8(bytes[2], bytes[3]);
            __m256i rg_hi = _mm256_unpackhi_epi8(bytes[0], bytes[1]);
            __m256i ba_hi = _mm256_unpackhi_epi8(bytes[2], bytes[3]);
            __m256i p0 = _mm256_unpacklo_epi16(rg_lo, ba_lo), p1 = _mm256_unpacklo_epi16(rg_hi, ba_hi);
            __m256i p2 = _mm256_unpackhi_epi16(rg_lo, ba_lo), p3 = _mm256_unpackhi_epi16(rg_hi, ba_hi);
            _mm256_storeu_si256((__m256i *)d, _mm256_permute2x128_si256(p0, p1, 0x20));
            _mm256_storeu_si256((__m256i *)(d + 32), _mm256_permute2x128_si256(p2, p3, 0x20));
            _mm256_storeu_si256((__m256i *)(d + 64), _mm256_permute2x128_si256(p0, p1, 0x31));
            _mm256_storeu_si256((__m256i *)(d + 96), _mm256_permute2x128_si256(p2, p3, 0x31));
        }
    }
}

CV_PIXELS_KERNEL(cv_pixels_avx2, FB_INTERNAL __attribute__((target("avx2"))), cv_pixels_case_avx2)

/* cv_pixels_case_avx2 in 64-byte registers, 64 pixels a round (rows of
   64 or more): each plane's 64 floats saturated and converted alike,
   packed, then interleaved by the lane permutes of lanes.h (vpermt2b:
   two or three byte permutes a result register, where 32-byte registers
   take shuffles and ORs a half) composed with the packs' order
   (cv_pixel_permutes). The last round ends at the last pixel. */
static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vbmi"))) void
cv_pixels_case_avx512(uint8_t *dst, fb_intp plane_step, const char *src, fb_intp n,
                      const int lanes, const int dst_type, const int rounding, const float *s,
                      const float *o, const int has_s, const int has_o) {
    const __m512 hi = _mm512_set1_ps(255.0f);
    __m512 scale[4], offset[4];
    FbLaneIndex x;
    int lane, k;
    fb_intp i, next;
    (void)dst_type; (void)rounding;
    fb_lane_index(&x, &cv_pixel_permutes[lanes - 3]);
    FB_UNROLL
    for (lane = 0; lane < lanes; lane++) {
        scale[lane] = _mm512_set1_ps(has_s ? s[lane] : 1.0f);
        offset[lane] = _mm512_set1_ps(has_o ? o[lane] : 0.0f);
    }
    for (next = 0; next < n; next += 64) {
        __m512i bytes[4];
        i = next + 64 > n ? n - 64 : next;
        FB_UNROLL
        for (lane = 0; lane < lanes; lane++) {
            const float *from = (const float *)(src + lane * plane_step) + i;
            __m512i ints[4];
            FB_UNROLL
            for (k = 0; k < 4; k++) {
                __m512 f = _mm512_loadu_ps(from + 16 * k);
                if (has_s)
                    f = _mm512_mul_ps(f, scale[lane]);
                if (has_o)
                    f = _mm512_add_ps(f, offset[lane]);
                /* min returns f where it is a NaN, which converts to
                   0x80000000 and packs to 0, as cv_saturated_avx2's. */
                ints[k] = _mm512_cvtps_epi32(_mm512_min_ps(hi, f));
            }
            bytes[lane] = _mm512_packus_epi16(_mm512_packs_epi32(ints[0], ints[1]),
                                              _mm512_packs_epi32(ints[2], ints[3]));
        }
        FB_UNROLL
        for (k = 0; k < lanes; k++)
            _mm512_storeu_si512((void *)(dst + lanes * i + 64 * k),
                                fb_lane_result(&x, k, bytes, lanes));
    }
}

CV_PIXELS_KERNEL(cv_pixels_avx512, FB_INTERNAL __attribute__((target("avx512f,avx512bw,avx512vbmi"))),
                 cv_pixels_case_avx512)

/* Pixels i to n of a split of 2-byte integer lanes, item by item. */
static inline FB_ALWAYS_INLINE void cv_wide_lanes_tail(char *dst, fb_intp plane_step,
                                                       const char *src, fb_intp i, fb_intp n,
                                                       int lanes, const int dst_type,
                                                       const float *s, const float *o,
                                                       const int has_s, const int has_o,
                                                       const int is_signed) {
    const fb_intp out_item = dst_type == FB_NUM_F32 ? 4 : 2;
    int lane;
    for (; i < n; i++)
        for (lane = 0; lane < lanes; lane++) {
            uint16_t x;
            float t;
            char *at = dst + lane * plane_step + i * out_item;
            memcpy(&x, src + 2 * (lanes * i + lane), 2);
            t = is_signed ? (float)(int16_t)x : (float)x;
            if (has_s)
                t = t * s[lane];
            if (has_o)
                t = t + o[lane];
            if (dst_type == FB_NUM_F32) {
                memcpy(at, &t, 4);
            } else {
                uint16_t y = dst_type == FB_NUM_F16 ? cv_f16_from_f32(t) : cv_bf16_from_f32(t);
                memcpy(at, &y, 2);
            }
        }
}

/* Pixels at to at + 7 * pixel of cv_wide_lanes_case_avx2's block: the
   16 bytes of pixels k and k + 4 share a register, and a 4 x 4 transpose
   of 32-bit items within its halves leaves pair m of the block's lanes
   of the 8 pixels in pairs[m], in pixel order. With `end_shift`, pixel 7
   reads its 16 bytes ending `over` bytes before, shifted into place. */
static inline __attribute__((always_inline, target("avx2"))) void cv_lane_pairs_avx2(
        __m256i pairs[4], const char *at, fb_intp pixel, const int shifted, __m128i end_shift,
        int over) {
    __m256i r[4], t[4];
    int k;
    FB_UNROLL
    for (k = 0; k < 4; k++) {
        const char *p = at + k * pixel;
        __m128i high = k == 3 && shifted
                           ? _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 4 * pixel - over)),
                                              end_shift)
                           : _mm_loadu_si128((const __m128i *)(p + 4 * pixel));
        r[k] = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)p)),
                                       high, 1);
    }
    t[0] = _mm256_unpacklo_epi32(r[0], r[1]);
    t[1] = _mm256_unpacklo_epi32(r[2], r[3]);
    t[2] = _mm256_unpackhi_epi32(r[0], r[1]);
    t[3] = _mm256_unpackhi_epi32(r[2], r[3]);
    pairs[0] = _mm256_unpacklo_epi64(t[0], t[1]);
    pairs[1] = _mm256_unpackhi_epi64(t[0], t[1]);
    pairs[2] = _mm256_unpacklo_epi64(t[2], t[3]);
    pairs[3] = _mm256_unpackhi_epi64(t[2], t[3]);
}

/* One lane of a pair (cv_lane_pairs_avx2) as 8 float32: the low half of
   each 32-bit item (HIGH 0) or the high one, zero- or sign-extended by
   shifts, which run on every vector pipe. */
static inline __attribute__((always_inline, target("avx2"))) __m256 cv_pair_half_avx2(
        __m256i pair, const int high, const int is_signed) {
    if (is_signed)
        return _mm256_cvtepi32_ps(_mm256_srai_epi32(high ? pair : _mm256_slli_epi32(pair, 16), 16));
    return _mm256_cvtepi32_ps(high ? _mm256_srli_epi32(pair, 16)
                                   : _mm256_and_si256(pair, _mm256_set1_epi32(0xffff)));
}

/* One case of cv_wide_lanes_avx2: pixels of `lanes` 2-byte integers
   (FB_CONVERT_WIDE_LANES_MIN or more) into planes, a block of 8 lanes at
   a time over the row (so that at most 8 planes are written at once:
   planes a multiple of 4 KiB apart share L1 sets; 13 at once took 1.6
   times as long), 16 pixels a round: two sets of lane pairs
   (cv_lane_pairs_avx2: 12 shuffles for 64 items, where an 8 x 8
   transpose of 16-bit items and widening took 32), then each lane split
   from its pair, scaled, offset and stored as the result type, its scale
   and offset loaded once for 16 items. A block's load reads up to 16
   bytes, into the next pixel where the lanes end short of a block; the
   row's last pixel reads its last block ending at its own end instead
   (end_shift). Rows of fewer than 16 pixels go item by item. */
static inline __attribute__((always_inline, target("avx2,f16c"))) void cv_wide_lanes_case_avx2(
        char *dst, fb_intp plane_step, const char *src, fb_intp n, int lanes, const int dst_type,
        const int rounding, const float *s, const float *o, const int has_s, const int has_o,
        const int is_signed) {
    const fb_intp out_item = dst_type == FB_NUM_F32 ? 4 : 2, pixel = 2 * (fb_intp)lanes;
    const int blocks = (lanes + 7) / 8, over = 16 * blocks - 2 * lanes;
    /* Loaded from `over` on: byte j takes byte j + over, zeros past 15. */
    static const unsigned char shift_bytes[32] = {
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
        0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
        0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80};
    const __m128i end_shift = _mm_loadu_si128((const __m128i *)(shift_bytes + over));
    const fb_intp start = cv_round_start(dst, out_item, 16 * out_item);
    const fb_intp second = start ? start : 16;
    fb_intp i, next;
    int q, j;
    if (n < 16) {
        cv_wide_lanes_tail(dst, plane_step, src, 0, n, lanes, dst_type, s, o, has_s, has_o,
                           is_signed);
        return;
    }
    for (q = 0; q < blocks; q++) {
        const int block_lanes = lanes - 8 * q < 8 ? lanes - 8 * q : 8;
        const int end_block = q == blocks - 1 && over;
        /* Broadcast once a block: locals no store can alias, which
           the multiplies and adds read as operands. */
        __m256 scale[8], offset[8];
        for (j = 0; j < block_lanes; j++) {
            scale[j] = _mm256_set1_ps(has_s ? s[8 * q + j] : 1.0f);
            offset[j] = _mm256_set1_ps(has_o ? o[8 * q + j] : 0.0f);
        }
        for (next = 0; next < n; next = next ? next + 16 : second) {
            /* The last round ends at the last pixel (it may redo a few). */
            const int last = next + 16 >= n;
            __m256i pairs[2][4];
            char *at;
            i = last ? n - 16 : next;
            cv_lane_pairs_avx2(pairs[0], src + i * pixel + 16 * q, pixel, 0, end_shift, over);
            cv_lane_pairs_avx2(pairs[1], src + (i + 8) * pixel + 16 * q, pixel,
                               last && end_block, end_shift, over);
            /* One pointer a side for the block, stepped lane by lane,
               so that no lane's address waits on the stack. */
            at = dst + 8 * q * plane_step + i * out_item;
            FB_UNROLL
            for (j = 0; j < 8; j++) {
                __m256 v0, v1;
                if (j >= block_lanes)
                    break;
                v0 = cv_pair_half_avx2(pairs[0][j / 2], j % 2, is_signed);
                v1 = cv_pair_half_avx2(pairs[1][j / 2], j % 2, is_signed);
                /* Each operation only where given: no multiply by 1, no add of 0. */
                if (has_s) {
                    v0 = _mm256_mul_ps(v0, scale[j]);
                    v1 = _mm256_mul_ps(v1, scale[j]);
                }
                if (has_o) {
                    v0 = _mm256_add_ps(v0, offset[j]);
                    v1 = _mm256_add_ps(v1, offset[j]);
                }
                cv_store_lane_avx2(dst_type, rounding, at, v0, v1);
                at += plane_step;
            }
        }
    }
}

#define CV_WIDE_LANES_CASE(dst, plane_step, src, n, SIGNED, DST, ROUNDING, s, o, HS, HO)     \
    cv_wide_lanes_case_avx2(dst, plane_step, src, n, lanes, DST, ROUNDING, s, o, HS, HO, SIGNED)

/* cv_wide_lanes_case_avx2's cases: signedness, result type and rounding,
   scale, offset. */
FB_INTERNAL __attribute__((target("avx2,f16c"))) void cv_wide_lanes_avx2(
        int dst_type, int bf16_rounding, char *dst, fb_intp plane_step, const char *src,
        fb_intp n, int lanes, int is_signed, const float *s, const float *o) {
    if (is_signed)
        CV_LANES_RESULT(CV_WIDE_LANES_CASE, 1);
    else
        CV_LANES_RESULT(CV_WIDE_LANES_CASE, 0);
}
#undef CV_WIDE_LANES_CASE
#endif
