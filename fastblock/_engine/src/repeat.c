/* Tile's repeated items (repeat.h). The engine's fill_repeats doubles the
   written run with one memcpy per doubling, most of them a library call
   for a few bytes; whole registers of the row's period write a 3-byte item
   repeated 64 times in 0.6 of np.copyto's time against 1.0. */
#include "repeat.h"

#if FB_SIMD128
#include "simd128.h"
#if FB_X86_SIMD
#include <immintrin.h>
#endif

/* 16-byte registers (SSSE3, NEON) */

/* The `width` (1 to 15) bytes at src in the low bytes of a register, the
   others zero: two loads that overlap inside the item, not byte by byte. */
static inline FB_ALWAYS_INLINE FB_V128_TARGET
fb_v128 fb_load_item(const char *src, fb_intp width) {
    uint64_t lo = 0, hi = 0;
    uint32_t a4, b4;
    uint16_t a2, b2;
    if (width >= 8) {
        memcpy(&lo, src, 8);
        if (width > 8) {
            memcpy(&hi, src + width - 8, 8);
            hi >>= 8 * (16 - width);       /* keep item bytes 8 ... width - 1 */
        }
    } else if (width >= 4) {
        memcpy(&a4, src, 4);
        memcpy(&b4, src + width - 4, 4);
        lo = (uint64_t)a4 | ((uint64_t)b4 << (8 * (width - 4)));
    } else if (width >= 2) {
        memcpy(&a2, src, 2);
        memcpy(&b2, src + width - 2, 2);
        lo = (uint64_t)a2 | ((uint64_t)b2 << (8 * (width - 2)));
    } else {
        lo = (unsigned char)src[0];
    }
    return fb_v128_from_u64(hi, lo);
}

/* A row's whole R-byte registers `pattern[0 ... N - 1]`, period after
   period, then the period's first registers while R bytes are left; `off`
   ends at the bytes written. */
#define FB_STORE_PERIODS(STOREU, VEC, R)                                       \
    for (off = 0; off + (R) * N <= total; off += (R) * N)                      \
        for (r = 0; r < N; r++)                                                \
            STOREU((VEC *)(d + off + (R) * r), pattern[r]);                    \
    for (r = 0; r < N && off + (R) <= total; off += (R), r++)                  \
        STOREU((VEC *)(d + off), pattern[r])

/* One row's whole registers, period after period of N; returns the
   bytes written (a multiple of 16). The period's registers stay in
   registers only with N a constant after inlining: a loop over a
   register array indexed at run time took 2 to 3 times as long (64 MiB
   of 3-byte items repeated 64 times). */
static inline FB_ALWAYS_INLINE FB_V128_TARGET
fb_intp fb_repeat_period(char *d, fb_v128 item, fb_intp total,
                         const unsigned char *masks, const int N) {
    fb_v128 pattern[16];
    fb_intp off;
    int r;
    for (r = 0; r < N; r++)
        pattern[r] = fb_v128_shuffle(item, fb_v128_load(masks + 16 * r));
    if (N == 1) {
        /* One register is the whole period: four stores a line. */
        for (off = 0; off + 64 <= total; off += 64) {
            fb_v128_store(d + off, pattern[0]);
            fb_v128_store(d + off + 16, pattern[0]);
            fb_v128_store(d + off + 32, pattern[0]);
            fb_v128_store(d + off + 48, pattern[0]);
        }
        for (; off + 16 <= total; off += 16)
            fb_v128_store(d + off, pattern[0]);
        return off;
    }
    FB_STORE_PERIODS(fb_v128_store, fb_v128, 16);
    return off;
}

/* The shuffle of a row's last 16 bytes (byte j: item byte (total - 16 +
   j) % width), for rows of at least 16 bytes. */
static inline FB_ALWAYS_INLINE FB_V128_TARGET
fb_v128 fb_tail_mask(fb_intp total, fb_intp width) {
    unsigned char bytes[16];
    fb_intp j, b = (total - 16) % width;
    for (j = 0; j < 16; j++) {
        bytes[j] = (unsigned char)b;
        b = b + 1 == width ? 0 : b + 1;
    }
    return fb_v128_load(bytes);
}

/* Every register comes from the item in a register: the rest of a row
   read back from the bytes just stored (16-byte loads across two
   stores, which the CPU cannot forward) took 3.4 x np.copyto for 3-byte
   items 40 times, against 1.0 so. */
FB_V128_TARGET
void fb_repeat_rows(char *dst, const char *src, fb_intp n_rows, fb_intp dst_row,
                    fb_intp src_row, fb_intp width, fb_intp count,
                    const unsigned char *masks, int n_masks) {
    const fb_intp total = width * count;
    const fb_v128 tail = fb_tail_mask(total, width);
    fb_intp i, off;
    for (i = 0; i < n_rows; i++) {
        char *d = dst + i * dst_row;
        fb_v128 item = fb_load_item(src + i * src_row, width);
        switch (n_masks) {   /* widths 1, 2, 4, 8; 3, 6, 12; 5, 10; 7, 14 */
        case 1: off = fb_repeat_period(d, item, total, masks, 1); break;
        case 3: off = fb_repeat_period(d, item, total, masks, 3); break;
        case 5: off = fb_repeat_period(d, item, total, masks, 5); break;
        case 7: off = fb_repeat_period(d, item, total, masks, 7); break;
        default: off = fb_repeat_period(d, item, total, masks, n_masks); break;
        }
        /* The row's last bytes (under 16): one register that ends at the
           row's end, over bytes already right. */
        if (off < total)
            fb_v128_store(d + total - 16, fb_v128_shuffle(item, tail));
    }
}

/* Rows of 3 to 15 copies, shorter than a period or not: each row's
   registers are those of the period's start, the last one past the
   row's end. Rows packed one after another (dst_row == total)
   store the last register whole, over the next rows, which are written
   after it; the block's last rows, and rows apart, end with a register
   that ends at the row's end (tail_mask), or under 16 bytes, with a copy
   of the row's bytes. */
FB_V128_TARGET
void fb_repeat_short_rows(char *dst, const char *src, fb_intp n_rows, fb_intp dst_row,
                          fb_intp src_row, fb_intp width, fb_intp count,
                          const unsigned char *masks, int n_masks) {
    const fb_intp total = width * count, n_regs = (total + 15) / 16;
    const fb_intp past_end = 16 * n_regs - total;
    /* Rows the last register of a row reaches into. */
    const fb_intp spill_rows = (past_end + total - 1) / total;
    /* total is at most 15 * 15 bytes: 15 registers. */
    fb_v128 reg_mask[15], tail = fb_v128_zero();
    fb_intp i, r, packed = 0;
    for (r = 0; r < n_regs; r++)
        reg_mask[r] = fb_v128_load(masks + 16 * (r % n_masks));
    if (total >= 16)
        tail = fb_tail_mask(total, width);
    /* Rows whose last register stays inside the block's later rows. */
    if (dst_row == total && n_rows > spill_rows)
        packed = n_rows - spill_rows;
    for (i = 0; i < packed; i++) {
        char *d = dst + i * dst_row;
        fb_v128 item = fb_load_item(src + i * src_row, width);
        for (r = 0; r < n_regs; r++)
            fb_v128_store(d + 16 * r, fb_v128_shuffle(item, reg_mask[r]));
    }
    for (; i < n_rows; i++) {
        char *d = dst + i * dst_row;
        fb_v128 item = fb_load_item(src + i * src_row, width);
        if (total >= 16) {
            for (r = 0; 16 * (r + 1) <= total; r++)
                fb_v128_store(d + 16 * r, fb_v128_shuffle(item, reg_mask[r]));
            fb_v128_store(d + total - 16, fb_v128_shuffle(item, tail));
        } else {
            unsigned char row[16];
            fb_v128_store(row, fb_v128_shuffle(item, reg_mask[0]));
            memcpy(d, row, (size_t)total);
        }
    }
}

/* The packed repeats' shuffle indices: byte p of a run of items each
   written `count` times is byte p % width of item p / (width count).
   Register r of a round of R-byte registers (R = 16 or 64) is bytes
   R r .. R r + R - 1 of this sequence, so both kernels read a prefix of
   it. Each thread keeps the last (width, count) it built: built with two
   divisions a byte for every block, the 64-byte masks of 15 copies cost
   more than the block's stores (7.7 x np.copyto against 2.6). */
typedef struct {
    fb_intp width, count;
    unsigned char index[64 * FB_PACKED_COUNT_MAX];
} FbPackedIndex;

static FB_THREAD_LOCAL FbPackedIndex fb_packed_index;

/* The thread's indices, through a pointer the compiler cannot rebuild:
   inlined, gcc asked the dynamic loader for the thread's address again
   for each index byte and each mask register (a library call each; at
   1 MiB, 8-byte items 64 times took 1.8 x np.copyto, 1.1 by one pass of
   each row's pattern). */
FB_NOINLINE
static FbPackedIndex *fb_packed_slot(void) {
    return &fb_packed_index;
}

static const unsigned char *fb_packed_indices(fb_intp width, fb_intp count) {
    FbPackedIndex *t = fb_packed_slot();
    if (t->width != width || t->count != count) {
        const fb_intp n = 64 * count;
        fb_intp p = 0, item = 0, k, b;
        for (item = 0; p < n; item++)
            for (k = 0; k < count && p < n; k++)
                for (b = 0; b < width && p < n; b++)
                    t->index[p++] = (unsigned char)(item * width + b);
        t->width = width;
        t->count = count;
    }
    return t->index;
}

/* The whole rounds of fb_repeat_packed_items in R-byte registers of type
   VEC, the round's masks loaded into `mask` first; `regs` the round's
   registers (a constant where the caller made it one). ITEMS(p) is the
   round's 16 source bytes at p in a register (in both halves of a 32-byte
   one, since a 32-byte shuffle picks each half's bytes from its own
   half). Leaves in `i` the items done. */
#define FB_SHUFFLE_ROUNDS(VEC, R, LOADU, ITEMS, SHUFFLE, STOREU)                    \
    do {                                                                            \
        const fb_intp per_round = 16 / width, item_bytes = width * count;           \
        const fb_intp last = per_round * item_bytes - (R);  /* the last register */ \
        fb_intp r;                                                                  \
        for (r = 0; r < regs; r++)                                                  \
            mask[r] = LOADU((const VEC *)(index + (r < regs - 1 ? (R) * r : last))); \
        for (i = 0; (n - i) * width >= 16; i += per_round) {                        \
            const VEC items = ITEMS(src + i * width);                               \
            char *d = dst + i * item_bytes;                                         \
            for (r = 0; r < regs - 1; r++)                                          \
                STOREU((VEC *)(d + (R) * r), SHUFFLE(items, mask[r]));              \
            STOREU((VEC *)(d + last), SHUFFLE(items, mask[r]));                     \
        }                                                                           \
    } while (0)

#define FB_ITEMS_16(p) fb_v128_load(p)
#if FB_X86_SIMD
#define FB_ITEMS_32(p) _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(p)))
#endif

/* fb_repeat_packed_items' rounds in 16-byte registers; returns the items
   done. Called with an array of 4 or 15 (kept in registers) or of
   FB_PACKED_COUNT_MAX + 1; REGS: the round's registers where a constant
   (0: worked out). */
static inline FB_ALWAYS_INLINE FB_V128_TARGET
fb_intp fb_shuffle_rounds(char *dst, const char *src, fb_intp n, fb_intp width, fb_intp count,
                          const unsigned char *index, fb_v128 *mask, const fb_intp REGS) {
    const fb_intp regs = REGS ? REGS : (16 / width * width * count + 15) / 16;
    fb_intp i;
    FB_SHUFFLE_ROUNDS(fb_v128, 16, fb_v128_load, FB_ITEMS_16, fb_v128_shuffle,
                      fb_v128_store);
    return i;
}

#if FB_X86_SIMD
/* The same in 32-byte registers, for rounds of at least 32 result bytes. */
static inline __attribute__((always_inline, target("avx2")))
fb_intp fb_shuffle_rounds_avx2(char *dst, const char *src, fb_intp n, fb_intp width,
                               fb_intp count, const unsigned char *index, __m256i *mask,
                               const fb_intp REGS) {
    const fb_intp regs = REGS ? REGS : (16 / width * width * count + 31) / 32;
    fb_intp i;
    FB_SHUFFLE_ROUNDS(__m256i, 32, _mm256_loadu_si256, FB_ITEMS_32, _mm256_shuffle_epi8,
                      _mm256_storeu_si256);
    return i;
}

#endif
#undef FB_SHUFFLE_ROUNDS
#undef FB_ITEMS_16
#undef FB_ITEMS_32

#if FB_X86_SIMD

/* The rounds by fb_shuffle_rounds_avx2, with the round's register count a
   constant up to 4 (then the loop over them unrolls); returns the items
   done. In a function of its own: its target is not the caller's. */
__attribute__((target("avx2"), noinline))
static fb_intp fb_repeat_rounds_avx2(char *dst, const char *src, fb_intp n, fb_intp width,
                                     fb_intp count, const unsigned char *index) {
    const fb_intp regs = (16 / width * width * count + 31) / 32;
    if (regs <= 4) {
        __m256i mask[4];
        if (regs == 1)
            return fb_shuffle_rounds_avx2(dst, src, n, width, count, index, mask, 1);
        if (regs == 2)
            return fb_shuffle_rounds_avx2(dst, src, n, width, count, index, mask, 2);
        if (regs == 3)
            return fb_shuffle_rounds_avx2(dst, src, n, width, count, index, mask, 3);
        return fb_shuffle_rounds_avx2(dst, src, n, width, count, index, mask, 4);
    } else {
        __m256i mask[FB_PACKED_COUNT_MAX / 2 + 1];
        return fb_shuffle_rounds_avx2(dst, src, n, width, count, index, mask, 0);
    }
}
#endif

/* fb_repeat_packed_items_wide's rounds in 16-byte registers, for CPUs
   without VBMI: a round is the 16 / width items that fit in a register,
   and each 16 (with AVX2, 32) bytes of its result one byte shuffle of
   it; a round's last register ends at the round's end, over the one
   before it. The items after the last whole round (under 16 source
   bytes) are read from a copy, and their result's last register ends at
   the result's end (or, under 16 bytes, goes through a copy). Item by
   item or by the registers of each row's period, 1 MiB results of 1-byte
   items 16 times took 7 x np.copyto, 5-byte items twice 4.5 x. */
FB_V128_TARGET
void fb_repeat_packed_items(char *dst, const char *src, fb_intp n, fb_intp width,
                            fb_intp count, int avx2) {
    const fb_intp item_bytes = width * count;
    const fb_intp regs = (16 / width * item_bytes + 15) / 16;   /* a round's registers */
    const unsigned char *index = fb_packed_indices(width, count);
    unsigned char rest[16];
    fb_intp i, off, left;
    fb_v128 items;
    char *d;
#if FB_X86_SIMD
    if (avx2 && 16 / width * item_bytes >= 32) {
        i = fb_repeat_rounds_avx2(dst, src, n, width, count, index);
    } else
#else
    (void)avx2;
#endif
    if (regs <= 4) {
        fb_v128 mask[4];
        if (regs == 2)
            i = fb_shuffle_rounds(dst, src, n, width, count, index, mask, 2);
        else if (regs == 3)
            i = fb_shuffle_rounds(dst, src, n, width, count, index, mask, 3);
        else
            i = fb_shuffle_rounds(dst, src, n, width, count, index, mask, 4);
    } else if (regs <= 15) {
        fb_v128 mask[15];
        i = fb_shuffle_rounds(dst, src, n, width, count, index, mask, 0);
    } else {
        fb_v128 mask[FB_PACKED_COUNT_MAX + 1];
        i = fb_shuffle_rounds(dst, src, n, width, count, index, mask, 0);
    }
    if (i == n)
        return;
    memset(rest, 0, 16);
    memcpy(rest, src + i * width, (size_t)((n - i) * width));
    items = fb_v128_load(rest);
    d = dst + i * item_bytes;
    left = (n - i) * item_bytes;
    for (off = 0; off + 16 <= left; off += 16)
        fb_v128_store(d + off, fb_v128_shuffle(items, fb_v128_load(index + off)));
    if (off == left)
        return;
    if (left >= 16) {
        fb_v128_store(d + left - 16, fb_v128_shuffle(items,
                                          fb_v128_load(index + left - 16)));
    } else {
        fb_v128_store(rest, fb_v128_shuffle(items, fb_v128_load(index)));
        memcpy(d, rest, (size_t)left);
    }
}

/* Rows of copies of one item of 17 to 64 bytes (fb_repeat_item_rows):
   the item in two registers of R bytes (the second ending at the item's
   end), each copy two stores. Rows of 2 to 4 copies have their stores
   written out (COUNT a constant): entering a row's loop cost more than
   its stores (Tile of 24-byte items x 3: 40 arm64 instructions a row
   with the loop, counted under qemu). */
#define FB_ITEM_ROWS_OF(LOADU, STOREU, VEC, R, COUNT)                          \
    for (i = 0; i < n_rows; i++) {                                             \
        const char *s = src + i * src_row;                                     \
        char *d = dst + i * dst_row;                                           \
        const VEC head = LOADU((const VEC *)s);                                \
        const VEC tail = LOADU((const VEC *)(s + width - (R)));                \
        for (k = 0; k < (COUNT); k++, d += width) {                            \
            STOREU((VEC *)d, head);                                            \
            STOREU((VEC *)(d + width - (R)), tail);                            \
        }                                                                      \
    }

#define FB_ITEM_ROWS(LOADU, STOREU, VEC, R)                                    \
    switch (count) {                                                           \
    case 2: FB_ITEM_ROWS_OF(LOADU, STOREU, VEC, R, 2) break;                   \
    case 3: FB_ITEM_ROWS_OF(LOADU, STOREU, VEC, R, 3) break;                   \
    case 4: FB_ITEM_ROWS_OF(LOADU, STOREU, VEC, R, 4) break;                   \
    default: FB_ITEM_ROWS_OF(LOADU, STOREU, VEC, R, count) break;              \
    }

#if FB_X86_SIMD
__attribute__((target("avx")))
static void fb_repeat_item_rows_avx(char *dst, const char *src, fb_intp n_rows,
                                    fb_intp dst_row, fb_intp src_row, fb_intp width,
                                    fb_intp count) {
    fb_intp i, k;
    FB_ITEM_ROWS(_mm256_loadu_si256, _mm256_storeu_si256, __m256i, 32)
}
#endif

/* Items of 17 to 31 bytes in 16-byte registers; from 32 bytes in 32-byte
   ones (the caller has checked for AVX). Item by item, two 32-byte copies
   an item with a library loop around them, or memcpy doubling from 16
   copies, 1 MiB results of 24- to 64-byte items took 1.2 to 2.8 x
   np.copyto. */
void fb_repeat_item_rows(char *dst, const char *src, fb_intp n_rows, fb_intp dst_row,
                         fb_intp src_row, fb_intp width, fb_intp count) {
    fb_intp i, k;
#if FB_X86_SIMD
    if (width >= 32) {
        fb_repeat_item_rows_avx(dst, src, n_rows, dst_row, src_row, width, count);
        return;
    }
#endif
    FB_ITEM_ROWS(fb_v128_load, fb_v128_store, fb_v128, 16)
}

#undef FB_ITEM_ROWS
#undef FB_ITEM_ROWS_OF

#if FB_X86_SIMD
/* AVX2 */

/* One row's whole 32-byte registers, period after period of N (3 or 5:
   a constant after inlining, so that the period stays in registers, as in
   fb_repeat_period); register r is item dwords (8 r + k) % (width / 4),
   k = 0 ... 7: a dword permute of the item's first eight dwords (lo) or of
   the rest (hi), `upper` choosing. Returns the bytes written. */
static inline __attribute__((always_inline, target("avx2")))
fb_intp fb_repeat_period32(char *d, __m256i lo, __m256i hi, fb_intp total,
                           const __m256i *index, const __m256i *upper, const int N) {
    __m256i pattern[5];
    fb_intp off;
    int r;
    for (r = 0; r < N; r++)
        pattern[r] = _mm256_blendv_epi8(_mm256_permutevar8x32_epi32(lo, index[r]),
                                        _mm256_permutevar8x32_epi32(hi, index[r]), upper[r]);
    FB_STORE_PERIODS(_mm256_storeu_si256, __m256i, 32);
    return off;
}

#undef FB_STORE_PERIODS

/* The dword permute (index) and the choice of hi (upper) that give the 8
   item dwords from `first` on, wrapping at `dwords`. */
static inline __attribute__((always_inline, target("avx2")))
void fb_period_register(fb_intp first, fb_intp dwords, __m256i *index, __m256i *upper) {
    int32_t pick[8], high[8];
    int k;
    for (k = 0; k < 8; k++) {
        fb_intp j = (first + k) % dwords;
        pick[k] = (int32_t)(j & 7);
        high[k] = j >= 8 ? -1 : 0;
    }
    *index = _mm256_loadu_si256((const __m256i *)pick);
    *upper = _mm256_loadu_si256((const __m256i *)high);
}

/* Items of 20, 24, 40 or 48 bytes, `count` times a row: each row is
   periodic with lcm(width, 32) bytes, 3 or 5 registers, each byte written
   once (fb_repeat_item_rows writes each 1.3 to 1.6 times; memcpy doubling
   makes a library call a doubling). The item is read under dword masks,
   which leave the bytes past it unread. The row's last bytes, under 32,
   come from one register that ends at the row's end. */
__attribute__((target("avx2")))
void fb_repeat_period_rows(char *dst, const char *src, fb_intp n_rows, fb_intp dst_row,
                           fb_intp src_row, fb_intp width, fb_intp count) {
    const fb_intp total = width * count, dwords = width / 4;
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i lo_mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)dwords), lanes);
    const __m256i hi_mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)dwords - 8), lanes);
    const int n = width % 3 ? 5 : 3;   /* lcm(width, 32) / 32: 3 for 24 and 48, 5 for 20 and 40 */
    __m256i index[5], upper[5], tail_index, tail_upper;
    fb_intp i, off;
    int r;
    for (r = 0; r < n; r++)
        fb_period_register(8 * r, dwords, &index[r], &upper[r]);
    fb_period_register((total - 32) / 4, dwords, &tail_index, &tail_upper);
    for (i = 0; i < n_rows; i++) {
        const char *s = src + i * src_row;
        char *d = dst + i * dst_row;
        const __m256i lo = _mm256_maskload_epi32((const int *)s, lo_mask);
        const __m256i hi = _mm256_maskload_epi32((const int *)(s + 32), hi_mask);
        if (n == 3)
            off = fb_repeat_period32(d, lo, hi, total, index, upper, 3);
        else
            off = fb_repeat_period32(d, lo, hi, total, index, upper, 5);
        if (off < total)
            _mm256_storeu_si256((__m256i *)(d + total - 32),
                                _mm256_blendv_epi8(_mm256_permutevar8x32_epi32(lo, tail_index),
                                                   _mm256_permutevar8x32_epi32(hi, tail_index),
                                                   tail_upper));
    }
}

/* AVX-512 VBMI */

/* The whole rounds of fb_repeat_packed_items_wide, the round's masks
   loaded into `mask` first; returns the items done. Called with an array
   of 15 (kept in registers) or of FB_PACKED_COUNT_MAX + 1. */
static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vbmi")))
fb_intp fb_permute_rounds(char *dst, const char *src, fb_intp n, fb_intp width, fb_intp count,
                          const unsigned char *index, __m512i *mask) {
    const fb_intp per_round = 64 / width, item_bytes = width * count;
    const fb_intp round_bytes = per_round * item_bytes, regs = (round_bytes + 63) / 64;
    const fb_intp last = round_bytes - 64;      /* the round's last register */
    fb_intp i, r;
    for (r = 0; r < regs; r++)
        mask[r] = _mm512_loadu_si512((const void *)(index + (r < regs - 1 ? 64 * r : last)));
    for (i = 0; (n - i) * width >= 64; i += per_round) {
        const __m512i items = _mm512_loadu_si512((const void *)(src + i * width));
        char *d = dst + i * item_bytes;
        for (r = 0; r < regs - 1; r++)
            _mm512_storeu_si512((void *)(d + 64 * r), _mm512_permutexvar_epi8(mask[r], items));
        _mm512_storeu_si512((void *)(d + last), _mm512_permutexvar_epi8(mask[r], items));
    }
    return i;
}

/* fb_repeat_packed_items by 64-byte rounds, for items of any width up to
   64 bytes: a round is the k = 64 / width items that fit in a register,
   and its k width count result bytes are registers, each a byte
   permutation (vpermb) of the round's source register. The last register
   of a round ends at the round's end, over bytes of the one before it
   (widths that do not divide 64). Up to 15 registers a round the masks
   stay in registers (with the source and a result, within the 32); more
   load each register's mask from the thread's indices (in L1). The last
   items, under 64 source bytes, read and write under byte masks, which
   leave the bytes past them untouched. */
__attribute__((target("avx512f,avx512bw,avx512vbmi")))
void fb_repeat_packed_items_wide(char *dst, const char *src, fb_intp n, fb_intp width,
                                 fb_intp count) {
    const fb_intp item_bytes = width * count;
    const fb_intp regs = (64 / width * item_bytes + 63) / 64;   /* a round's registers */
    const unsigned char *index = fb_packed_indices(width, count);
    fb_intp i, r, left;
    if (regs <= 15) {
        __m512i mask[15];
        i = fb_permute_rounds(dst, src, n, width, count, index, mask);
    } else {
        __m512i mask[FB_PACKED_COUNT_MAX + 1];
        i = fb_permute_rounds(dst, src, n, width, count, index, mask);
    }
    if (i < n) {
        const __m512i items = _mm512_maskz_loadu_epi8(
            (1ULL << ((n - i) * width)) - 1, src + i * width);
        char *d = dst + i * item_bytes;
        for (r = 0, left = (n - i) * item_bytes; left > 0; r++, left -= 64)
            _mm512_mask_storeu_epi8(d + 64 * r, left >= 64 ? ~0ULL : (1ULL << left) - 1,
                                    _mm512_permutexvar_epi8(
                                        _mm512_loadu_si512((const void *)(index + 64 * r)),
                                        items));
    }
}

#endif
#endif
