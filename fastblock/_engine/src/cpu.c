/* CPU feature detection (cpu.h): one probe, its answers kept in a bit set. */
#include "cpu.h"

#if FB_X86_SIMD
#include <cpuid.h>
#endif

enum {
    FB_CPU_DETECTED = 1,
    FB_CPU_SSSE3 = 2,
    FB_CPU_AVX = 4,
    FB_CPU_AVX512_VBMI = 8,
    FB_CPU_AVX2 = 16,
    FB_CPU_F16C = 32,
    FB_CPU_NEON = 64,
    FB_CPU_AVX512_BF16 = 128
};

/* 0 until the first question; the probe gives the same bits on every
   thread, so a race only repeats it. */
static int fb_cpu_features;

#if FB_X86_SIMD
/* F16C by CPUID (leaf 1, ECX bit 29): clang's __builtin_cpu_supports has
   no "f16c". Its registers are AVX's, so the caller also asks for AVX
   (which checks that the OS saves them). */
static int fb_cpu_f16c(void) {
    unsigned int a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}
#endif

static int fb_cpu_probe(void) {
    int features = FB_CPU_DETECTED;
#if FB_X86_SIMD
    __builtin_cpu_init();
    if (__builtin_cpu_supports("ssse3"))
        features |= FB_CPU_SSSE3;
    if (__builtin_cpu_supports("avx"))
        features |= FB_CPU_AVX;
    if (__builtin_cpu_supports("avx2"))
        features |= FB_CPU_AVX2;
    if (__builtin_cpu_supports("avx") && fb_cpu_f16c())
        features |= FB_CPU_F16C;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
        && __builtin_cpu_supports("avx512vbmi"))
        features |= FB_CPU_AVX512_VBMI;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")
        && __builtin_cpu_supports("avx512bf16"))
        features |= FB_CPU_AVX512_BF16;
#endif
#if FB_NEON
    features |= FB_CPU_NEON;
#endif
    return features;
}

static int fb_cpu_has(int feature) {
    if (!fb_cpu_features)
        fb_cpu_features = fb_cpu_probe();
    return (fb_cpu_features & feature) != 0;
}

int fb_cpu_has_simd128(void) { return fb_cpu_has(FB_CPU_SSSE3 | FB_CPU_NEON); }
int fb_cpu_has_ssse3(void) { return fb_cpu_has(FB_CPU_SSSE3); }
int fb_cpu_has_neon(void) { return fb_cpu_has(FB_CPU_NEON); }
int fb_cpu_has_avx(void) { return fb_cpu_has(FB_CPU_AVX); }
int fb_cpu_has_avx2(void) { return fb_cpu_has(FB_CPU_AVX2); }
int fb_cpu_has_convert_simd(void) {
    return fb_cpu_has(FB_CPU_NEON) || (fb_cpu_has(FB_CPU_AVX2) && fb_cpu_has(FB_CPU_F16C));
}
int fb_cpu_has_avx512_vbmi(void) { return fb_cpu_has(FB_CPU_AVX512_VBMI); }
int fb_cpu_has_avx512_bf16(void) { return fb_cpu_has(FB_CPU_AVX512_BF16); }
