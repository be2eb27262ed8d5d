/* The CPU's SIMD features, detected once and cached: every kernel family
   asks here before it plans its SIMD variant. Each answer is 0 where the
   build has no SIMD variants (fb_common.h: FB_X86_SIMD, FB_NEON). */
#ifndef FASTBLOCK_CPU_H
#define FASTBLOCK_CPU_H

#include "fb_common.h"

/* The 16-byte kernels (simd128.h: byte shuffles, lane transposes, Tile's
   repeated rows): SSSE3's pshufb on x86, NEON on aarch64 (every aarch64
   CPU has it). */
FB_INTERNAL int fb_cpu_has_simd128(void);
FB_INTERNAL int fb_cpu_has_ssse3(void);
FB_INTERNAL int fb_cpu_has_neon(void);
/* 32-byte streaming stores. */
FB_INTERNAL int fb_cpu_has_avx(void);
/* 32-byte byte shuffles: Tile's packed repeats without VBMI. */
FB_INTERNAL int fb_cpu_has_avx2(void);
/* The convert stage's SIMD variants (convert.c): AVX2 with F16C's float16
   conversions (vcvtps2ph) on x86-64, NEON on aarch64. */
FB_INTERNAL int fb_cpu_has_convert_simd(void);
/* vpermb / vpermt2b with AVX-512 F and BW: 64-byte shuffles and the
   NCHW_VECT_C bs 3 pixel kernel. */
FB_INTERNAL int fb_cpu_has_avx512_vbmi(void);
/* vcvtne2ps2bf16 on 32-byte registers (AVX-512 BF16 and VL): the convert
   stage's bfloat16 results where none can be subnormal. */
FB_INTERNAL int fb_cpu_has_avx512_bf16(void);

#endif
