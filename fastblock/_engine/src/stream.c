/* Streaming (non-temporal) stores (stream.h), and whether pages are
   resident. */
#if defined(__linux__) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE         /* mincore */
#endif
#include "stream.h"

int fb_stream_avx = 0;

#if FB_STREAM_BUILT
#include <immintrin.h>

/* AVX */

/* Whole lines from dst + i (a line start) by 32-byte streaming stores;
   returns where it stopped. */
__attribute__((target("avx")))
static fb_intp fb_stream_lines_avx(char *dst, const char *src, fb_intp n, fb_intp i) {
    for (; i + 64 <= n; i += 64) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(src + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(src + i + 32));
        _mm256_stream_si256((__m256i *)(dst + i), a);
        _mm256_stream_si256((__m256i *)(dst + i + 32), b);
    }
    return i;
}

/* SSE2 */

/* Bytes k with lo <= k < hi of a 16-byte mask set (0x80: store). */
static inline __m128i fb_byte_mask(int lo, int hi) {
    const __m128i index = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m128i above = _mm_cmpgt_epi8(index, _mm_set1_epi8((char)(lo - 1)));
    __m128i below = _mm_cmplt_epi8(index, _mm_set1_epi8((char)hi));
    return _mm_and_si128(above, below);
}
void fb_stream_copy(char *dst, const char *src, fb_intp n) {
    fb_intp head = (fb_intp)((16 - ((uintptr_t)dst & 15)) & 15), i;
    if (n < head + 16) {
        memcpy(dst, src, (size_t)n);
        return;
    }
    /* Every byte goes by a streaming store, the unaligned ends by masked
       ones: a line written partly by ordinary stores and partly by
       streaming ones costs several times a whole line. */
    if (head)
        _mm_maskmoveu_si128(_mm_loadu_si128((const __m128i *)src), fb_byte_mask(0, (int)head),
                            dst);
    dst += head;
    src += head;
    n -= head;
    i = 0;
    for (; i + 16 <= n && ((uintptr_t)(dst + i) & 63) != 0; i += 16)
        _mm_stream_si128((__m128i *)(dst + i), _mm_loadu_si128((const __m128i *)(src + i)));
    if (fb_stream_avx)
        i = fb_stream_lines_avx(dst, src, n, i);
    for (; i + 64 <= n; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(src + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(src + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(src + i + 32));
        __m128i d = _mm_loadu_si128((const __m128i *)(src + i + 48));
        _mm_stream_si128((__m128i *)(dst + i), a);
        _mm_stream_si128((__m128i *)(dst + i + 16), b);
        _mm_stream_si128((__m128i *)(dst + i + 32), c);
        _mm_stream_si128((__m128i *)(dst + i + 48), d);
    }
    for (; i + 16 <= n; i += 16)
        _mm_stream_si128((__m128i *)(dst + i), _mm_loadu_si128((const __m128i *)(src + i)));
    if (i < n)
        _mm_maskmoveu_si128(_mm_loadu_si128((const __m128i *)(src + n - 16)),
                            fb_byte_mask((int)(16 - (n - i)), 16), dst + n - 16);
}

#else

/* Portable fallback: ordinary stores (the plan streams nothing). */
void fb_stream_copy(char *dst, const char *src, fb_intp n) {
    memcpy(dst, src, (size_t)n);
}

#endif

/* [dst, dst + n) from src, n <= 64, by moves of constant sizes, the last
   overlapping the one before where n is not a sum of them: a call of
   memcpy costs more than these bytes (fb_stream_span makes three a span). */
static inline void fb_copy_short(char *dst, const char *src, fb_intp n) {
    if (n >= 16) {
        if (n > 32) {
            memcpy(dst + 16, src + 16, 16);
            memcpy(dst + n - 32, src + n - 32, 16);
        }
        memcpy(dst, src, 16);
        memcpy(dst + n - 16, src + n - 16, 16);
    } else if (n >= 8) {
        memcpy(dst, src, 8);
        memcpy(dst + n - 8, src + n - 8, 8);
    } else if (n >= 4) {
        memcpy(dst, src, 4);
        memcpy(dst + n - 4, src + n - 4, 4);
    } else if (n >= 2) {
        memcpy(dst, src, 2);
        memcpy(dst + n - 2, src + n - 2, 2);
    } else if (n) {
        *dst = *src;
    }
}

/* One whole line (dst on a line) by streaming stores. */
static inline void fb_stream_line(char *dst, const unsigned char *src) {
#if FB_STREAM_BUILT
    int k;
    for (k = 0; k < 64; k += 16)
        _mm_stream_si128((__m128i *)(dst + k), _mm_loadu_si128((const __m128i *)(src + k)));
#else
    memcpy(dst, src, 64);
#endif
}

void fb_release_line(FbHeldLine *line) {
    fb_copy_short(line->dst, (const char *)line->bytes, line->n);
    line->n = 0;
}

void fb_stream_span(FbHeldLine *line, char *dst, const char *src, fb_intp n) {
    fb_intp take, body;
    if (line->n && line->dst + line->n == dst) {
        take = 64 - line->n < n ? 64 - line->n : n;
        fb_copy_short((char *)line->bytes + line->n, src, take);
        line->n += take;
        if (line->n < 64)
            return;
        fb_stream_line(line->dst, line->bytes);
        line->n = 0;
    } else {
        fb_release_line(line);
        take = (fb_intp)((64 - ((uintptr_t)dst & 63)) & 63);
        if (take > n)
            take = n;
        fb_copy_short(dst, src, take);
    }
    dst += take;
    src += take;
    n -= take;
    body = n & ~(fb_intp)63;
    if (body)
        fb_stream_copy(dst, src, body);
    if (n > body) {
        line->dst = dst + body;
        line->n = n - body;
        fb_copy_short((char *)line->bytes, src + body, line->n);
    }
}

/* Pages: mincore where the system has it. */
#if defined(__linux__) || defined(__APPLE__)
#include <sys/mman.h>
#include <unistd.h>
int fb_pages_resident(const char *low, const char *high) {
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const char *probe[3];
    unsigned char state;
    int k;
    probe[0] = low; probe[1] = low + (high - low) / 2; probe[2] = high - 1;
    for (k = 0; k < 3; k++) {
        void *start = (void *)((uintptr_t)probe[k] & ~(page - 1));
        if (mincore(start, (size_t)page, (void *)&state) != 0)
            return -1;
        if (!(state & 1))
            return 0;
    }
    return 1;
}
#else
int fb_pages_resident(const char *low, const char *high) {
    (void)low; (void)high;
    return -1;
}
#endif
