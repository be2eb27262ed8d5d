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
