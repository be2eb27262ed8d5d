/* Streaming (non-temporal) stores for large destinations (stream.c): they
   write whole lines without reading them first, a third less memory
   traffic than ordinary stores. Streaming stores are weakly ordered: every
   thread fences after its last one (fb_stream_fence). */
#ifndef FASTBLOCK_STREAM_H
#define FASTBLOCK_STREAM_H

#include "fb_common.h"

#if FB_X86_SIMD && defined(__SSE2__)
#include <emmintrin.h>
#define FB_STREAM_BUILT 1
#else
#define FB_STREAM_BUILT 0
#endif

/* Whether fb_stream_copy streams whole lines by 32-byte AVX stores (set by
   the engine where cpu.h reports AVX). */
FB_INTERNAL extern int fb_stream_avx;

/* [dst, dst + n) by streaming stores, the unaligned ends by masked ones. */
FB_INTERNAL void fb_stream_copy(char *dst, const char *src, fb_intp n);

/* The whole lines of [dst, dst + n) by streaming stores, the partial
   lines at its ends by ordinary ones: no line is written both ways, and
   none is flushed as a partial streamed line. */
static inline void fb_stream_lines(char *dst, const char *src, fb_intp n) {
    fb_intp head = (fb_intp)((64 - ((uintptr_t)dst & 63)) & 63), body;
    if (head > n)
        head = n;
    body = (n - head) & ~(fb_intp)63;
    memcpy(dst, src, (size_t)head);
    fb_stream_copy(dst + head, src + head, body);
    memcpy(dst + head + body, src + head + body, (size_t)(n - head - body));
}

static inline void fb_stream_fence(void) {
#if FB_STREAM_BUILT
    _mm_sfence();
#endif
}

/* Whether the pages of [low, high) are in memory, asked of three (first,
   middle, last): 1 all three, 0 not all, -1 cannot tell. */
FB_INTERNAL int fb_pages_resident(const char *low, const char *high);

#endif
