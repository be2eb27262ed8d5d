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

/* The first n bytes (0: none) of the destination line at dst, not yet
   written: the partial last line of a streamed span, held for the span
   that continues it (fb_stream_span). */
typedef struct {
    char *dst;
    fb_intp n;
    unsigned char bytes[64];
} FbHeldLine;

/* [dst, dst + n) by streaming stores of whole lines only: a span that
   continues `line` completes it, and the span's partial last line is held
   in `line` for the span after it. A held line this span does not
   continue, and a first line this span starts mid-way, go by ordinary
   stores. */
FB_INTERNAL void fb_stream_span(FbHeldLine *line, char *dst, const char *src, fb_intp n);

/* Write a held line's bytes by ordinary stores (no span continues it) and
   hold nothing. */
FB_INTERNAL void fb_release_line(FbHeldLine *line);

/* Whether the pages of [low, high) are in memory, asked of three (first,
   middle, last): 1 all three, 0 not all, -1 cannot tell. */
FB_INTERNAL int fb_pages_resident(const char *low, const char *high);

#endif
