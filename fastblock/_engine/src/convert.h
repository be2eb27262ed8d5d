/* The convert stage's kernels (convert.c, and by instruction set
   convert_x86.c, convert_lanes_x86.c, convert_neon.c): a run of items of one numeric
   type into another, with an optional multiply and add in between,
   y = round(cvt(x) * scale + offset), each operation rounded on its own.

   The exact rule, which docs/convert.md states for users:
   - v = x in the compute type (float32, or float64 for a float64 result),
     converted as NumPy's astype converts (one rounding);
   - v = v * scale if there is a scale, then v = v + offset if there is an
     offset: two roundings, never one fused multiply-add (the engine is
     built with -ffp-contract=off and these variants never target FMA);
   - a float result is v converted by the float rule: each number rounded
     once to nearest even, from its exact value; each NaN keeps its sign
     and the top of its payload, and is quieted (convert_scalar.h: the NaN rule).
     Without scale or offset a float result is x converted straight by
     that rule (float64 and 32/64-bit integers to bfloat16 in one
     rounding, not by way of float32);
   - an 8- or 16-bit integer result is v rounded half to even (rint, the
     current rounding mode) and saturated to the type's range, NaN to 0.

   The floating-point control state is read, never changed. */
#ifndef FASTBLOCK_CONVERT_H
#define FASTBLOCK_CONVERT_H

#include "fb_common.h"

/* The numeric types of sources and results (fastblock/_convert.py names
   them by the same codes). */
enum {
    FB_NUM_BOOL = 0, FB_NUM_U8, FB_NUM_I8, FB_NUM_U16, FB_NUM_I16, FB_NUM_U32, FB_NUM_I32,
    FB_NUM_U64, FB_NUM_I64, FB_NUM_F16, FB_NUM_BF16, FB_NUM_F32, FB_NUM_F64, FB_NUM_TYPES
};

/* How a scale or an offset is given for a run: none, one value for the
   whole run, or one value per item (a line as long as the run). */
enum { FB_AFFINE_NONE = 0, FB_AFFINE_VALUE = 1, FB_AFFINE_LINE = 2 };

typedef struct {
    int src, dst;           /* FB_NUM_* */
    int compute;            /* FB_NUM_F32 or FB_NUM_F64: the type of v */
    int scale, offset;      /* FB_AFFINE_* */
    int simd;               /* run the SIMD variants (cpu.h: fb_cpu_has_convert_simd) */
    int vbmi;               /* ... and the way back in 64-byte registers (AVX-512 VBMI) */
    int bf16;               /* ... and bfloat16 results by the CPU's conversion (AVX-512 BF16) */
} FbConvert;

/* Items a run is converted in at a time, through a buffer of v on the stack. */
#define FB_CONVERT_PIECE 256

/* The compute type for a conversion (see above). */
FB_INTERNAL int fb_convert_compute(int src, int dst, int affine);

/* A run's conversion: n items from src (packed, cv->src) into dst,
   dst_step bytes apart; scale and offset point to one value or n values
   of the compute type (cv->scale, cv->offset). */
typedef void (*FbConvertRun)(const FbConvert *cv, char *dst, fb_intp dst_step, const char *src,
                             fb_intp n, const char *scale, const char *offset);

/* The run conversion for cv's runs into results dst_step bytes apart:
   chosen once, when a plan's tile shape is made (straight, fused, a load
   alone, or in pieces through the passes; SIMD or portable). */
FB_INTERNAL FbConvertRun fb_convert_run_for(const FbConvert *cv, fb_intp dst_step);

/* Build the tables of the run conversions' SIMD variants and of
   fb_convert_lanes (once, when the engine loads, before any thread runs). */
FB_INTERNAL void fb_convert_init(void);

/* Lanes of the one-pass split of 2-byte integers (a multispectral image's
   bands), at least and at most. */
#define FB_CONVERT_WIDE_LANES_MIN 5
#define FB_CONVERT_WIDE_LANES_MAX 64

/* A lane split or interleave and a conversion in one pass, by the rule
   above: n_pixels pixels of `lanes` items, packed on one side, and `lanes`
   planes of n_pixels packed items each, `plane_step` bytes apart, on the
   other. A split (interleave 0) takes pixels of 3 or 4 uint8 lanes, or of
   FB_CONVERT_WIDE_LANES_MIN to _MAX uint16 or int16 lanes (AVX2 only),
   into float32, float16 or bfloat16 planes (channels last to channels
   first); an interleave takes 3 or 4 float32 planes into uint8 pixels
   (the way back to an image). scale and offset: one value a plane, steps
   bytes apart (whatever the plan's mode: the way back's values vary along
   the result's rows, its lanes, so that its stage would take lines), or
   none (FB_AFFINE_NONE). Only with cv->simd and those types
   (fb_convert_lanes_runs says): the convert stage moves other tiles
   through its stage. */
FB_INTERNAL int fb_convert_lanes_runs(const FbConvert *cv, int lanes, int interleave);

/* A lanes kernel: n_pixels pixels of `lanes` items on one side, the
   planes plane_step bytes apart on the other; s and o one value a lane
   (NULL: none); bf16_rounding how a bfloat16 result is rounded
   (convert_lanes.h). */
typedef void (*FbConvertLanes)(const FbConvert *cv, char *dst, const char *src,
                               fb_intp plane_step, fb_intp n_pixels, int lanes, const float *s,
                               const float *o, int bf16_rounding);

/* The lanes kernel of a tile shape's runs of n_pixels pixels, chosen once
   when the plan is made (NULL where fb_convert_lanes_runs says no). */
FB_INTERNAL FbConvertLanes fb_convert_lanes_for(const FbConvert *cv, int lanes, int interleave,
                                                fb_intp n_pixels);

/* A run by its kernel. The scale's and offset's values are read here, on
   every run: they may change from tile to tile (a scale along the batch),
   and whether they are finite and normal picks the bfloat16 rounding. */
FB_INTERNAL void fb_convert_lanes(FbConvertLanes kernel, const FbConvert *cv, char *dst,
                                  const char *src, fb_intp plane_step, fb_intp n_pixels,
                                  int lanes, const char *scale, fb_intp scale_step,
                                  const char *offset, fb_intp offset_step);

#endif
