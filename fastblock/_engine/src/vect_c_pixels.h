/* NCHW_VECT_C depth_first SpaceToDepth and DepthToSpace with bs 3 in one
   pass, in registers (vect_c_pixels.c). With M = 9 block offsets, each
   depth pixel's 4 items in its 9 depth planes are a fixed permutation of
   the 3 x 12 items of its block in 3 space rows. */
#ifndef FASTBLOCK_VECT_C_PIXELS_H
#define FASTBLOCK_VECT_C_PIXELS_H

#include "fb_common.h"

/* The block size the kernel takes, and its block offsets (bs * bs). */
#define FB_VECT_C_BS 3
#define FB_VECT_C_M 9

#if FB_X86_SIMD
#define FB_VECT_C_PIXELS_BUILT 1
#else
#define FB_VECT_C_PIXELS_BUILT 0
#endif

/* The depth planes (of a space group's 9) that draw on space row r:
   plane g takes t = 4g .. 4g+3, from space rows (4g % 9) / 3 and
   ((4g + 3) % 9) / 3. Taken in pairs, the two tables of a permute. */
FB_INTERNAL extern const signed char fb_vect_c_row_planes[FB_VECT_C_BS][6];

/* rows depth rows (depth_row_step apart) and their space rows (3 *
   space_row_step apart), to_depth (space_to_depth) or back; `idx` and
   `masks`: the permutes' byte indices and masks (the engine's
   vect_c_pixel_tables). Items of W = 1, 2 or 4 bytes. */
FB_INTERNAL void fb_vect_c_pixels(char *depth, fb_intp plane_step, fb_intp depth_row_step,
                                  char *space, fb_intp space_row_step, fb_intp rows,
                                  fb_intp out_w, const unsigned char *idx,
                                  const unsigned long long *masks, int W, int to_depth);

#endif
