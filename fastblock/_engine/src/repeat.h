/* Tile's repeated items: an item of up to 64 bytes repeated along
   destination rows, from registers of the item, byte shuffles of a
   register of items, or dword permutes of the item (repeat.c). */
#ifndef FASTBLOCK_REPEAT_H
#define FASTBLOCK_REPEAT_H

#include "fb_common.h"

/* The most copies fb_repeat_packed_items_wide writes of an item. */
#define FB_PACKED_COUNT_MAX 64

/* n_rows rows (dst_row / src_row bytes apart) of `count` copies of one
   `width`-byte item (1 to 15). Each row is periodic with lcm(width, 16)
   bytes, which are `n_masks` registers, each a byte shuffle of the item
   (`masks`: 16 bytes a register, built by the engine's repeat_masks).
   Rows hold at least one period. Called only where cpu.h reports 16-byte
   shuffles (SSSE3, NEON). */
#if FB_SIMD128
FB_INTERNAL void fb_repeat_rows(char *dst, const char *src, fb_intp n_rows, fb_intp dst_row,
                                fb_intp src_row, fb_intp width, fb_intp count,
                                const unsigned char *masks, int n_masks);
/* The same for rows of any length from 3 copies (count >= 3), shorter
   than a period too: rows packed one after another (dst_row == width *
   count) may be written up to 15 bytes past their end, over the rows
   that follow them among the n_rows, never past the last one. */
FB_INTERNAL void fb_repeat_short_rows(char *dst, const char *src, fb_intp n_rows, fb_intp dst_row,
                                      fb_intp src_row, fb_intp width, fb_intp count,
                                      const unsigned char *masks, int n_masks);
/* n items of `width` bytes (1 to 16) packed in src, each written
   `count` times (2 to FB_PACKED_COUNT_MAX) side by side into dst, also
   packed: every 16 source bytes give the registers of their result, each
   a byte shuffle of them; 32-byte registers where `avx2` is set (the CPU
   has AVX2; ignored elsewhere). */
FB_INTERNAL void fb_repeat_packed_items(char *dst, const char *src, fb_intp n, fb_intp width,
                                        fb_intp count, int avx2);
/* n_rows rows (dst_row / src_row bytes apart) of `count` copies of one
   item of 17 to 64 bytes, from two registers of the item: 16-byte ones
   under 32 bytes, 32-byte ones (AVX: the caller checks) from 32. */
FB_INTERNAL void fb_repeat_item_rows(char *dst, const char *src, fb_intp n_rows, fb_intp dst_row,
                                     fb_intp src_row, fb_intp width, fb_intp count);
#else
/* Without 16-byte kernels the planner repeats no rows by registers
   (cpu.h answers 0): the calls compile to nothing. */
#define fb_repeat_rows(...) ((void)0)
#define fb_repeat_short_rows(...) ((void)0)
#define fb_repeat_packed_items(...) ((void)0)
#define fb_repeat_item_rows(...) ((void)0)
#endif
#if FB_X86_SIMD
/* The same for items of 20, 24, 40 or 48 bytes, at least twice, by the
   registers of each row's period (lcm(width, 32) bytes), each byte
   written once: called only where the CPU has AVX2. */
FB_INTERNAL void fb_repeat_period_rows(char *dst, const char *src, fb_intp n_rows,
                                       fb_intp dst_row, fb_intp src_row, fb_intp width,
                                       fb_intp count);
/* The same by 64-byte registers, for items of 1 to 64 bytes written 2 to
   FB_PACKED_COUNT_MAX times: called only where the CPU has AVX-512 VBMI. */
FB_INTERNAL void fb_repeat_packed_items_wide(char *dst, const char *src, fb_intp n, fb_intp width,
                                             fb_intp count);
#else
#define fb_repeat_packed_items_wide(...) ((void)0)
#define fb_repeat_period_rows(...) ((void)0)
#endif

#endif
