/* Staged transposes into destination rows (transpose.h). */
#include "transpose.h"

/* Rows a0 .. a1-1, items b0 .. b1-1 of a block into their destination
   rows, item by item; item b of row a is read at src + item_offset[b]
   + a * W. */
static inline FB_ALWAYS_INLINE
void fb_transpose_items(char *dst, const char *src, fb_intp a0, fb_intp a1,
                        fb_intp b0, fb_intp b1, const fb_intp *item_offset,
                        const fb_intp *row_offset, const fb_intp W) {
    fb_intp a, b;
    for (a = a0; a < a1; a++) {
        char *d = dst + row_offset[a];
        for (b = b0; b < b1; b++)
            fb_move_item(d + b * W, src + item_offset[b] + a * W, W);
    }
}

#if FB_SIMD128
/* Register tile (a, b) of a block: items b .. b+G-1 of rows a ..
   a+G-1, transposed so that register k holds row a+k's G items. */
static inline FB_ALWAYS_INLINE FB_V128_BASE_TARGET
void fb_tile(fb_v128 *r, const char *src, const fb_intp *item_offset, fb_intp a,
             fb_intp b, const fb_intp W, const int G) {
    int k;
    FB_UNROLL
    for (k = 0; k < G; k++)
        r[k] = fb_v128_load(src + item_offset[b + k] + a * W);
    fb_transpose_registers(r, G);
}
#endif

/* A block into destination rows, G x G register tiles where the item
   size has them, then the edges item by item: a row's tiles one after
   another, so the destination is written in order. */
static inline FB_ALWAYS_INLINE FB_V128_BASE_TARGET
void fb_transpose_rows_w(char *dst, const char *src, fb_intp n_rows, fb_intp n_items,
                         const fb_intp *item_offset, const fb_intp *row_offset,
                         const fb_intp W) {
#if FB_SIMD128
    if (W == 1 || W == 2 || W == 4 || W == 8) {
        const int G = 16 / (int)W;
        const fb_intp whole_items = n_items - n_items % G;
        fb_intp a, b;
        int k;
        for (a = 0; a + G <= n_rows; a += G) {
            char *d[16];
            FB_UNROLL
            for (k = 0; k < G; k++)
                d[k] = dst + row_offset[a + k];
            for (b = 0; b < whole_items; b += G) {
                fb_v128 r[16];
                fb_tile(r, src, item_offset, a, b, W, G);
                FB_UNROLL
                for (k = 0; k < G; k++)
                    fb_v128_store(d[k] + b * W, r[k]);
            }
        }
        /* The items after the last whole tile, then the rows after it. */
        fb_transpose_items(dst, src, 0, a, whole_items, n_items, item_offset, row_offset, W);
        fb_transpose_items(dst, src, a, n_rows, 0, n_items, item_offset, row_offset, W);
        return;
    }
#endif
    fb_transpose_items(dst, src, 0, n_rows, 0, n_items, item_offset, row_offset, W);
}

FB_V128_BASE_TARGET void fb_transpose_rows(char *dst, const char *src, fb_intp n_rows,
                               fb_intp n_items, const fb_intp *item_offset,
                               const fb_intp *row_offset, fb_intp width) {
    #define FB_ROWS(W) fb_transpose_rows_w(dst, src, n_rows, n_items, item_offset, row_offset, W)
    switch (width) {
    case 1: FB_ROWS(1); break;
    case 2: FB_ROWS(2); break;
    case 4: FB_ROWS(4); break;
    case 8: FB_ROWS(8); break;
    case 16: FB_ROWS(16); break;
    default: fb_transpose_items(dst, src, 0, n_rows, 0, n_items, item_offset, row_offset, width);
    }
    #undef FB_ROWS
}
