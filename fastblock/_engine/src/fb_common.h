/* What every kernel family of the copy engine shares: the byte-count type,
   the 16-byte item, the SIMD build test and the loop-unrolling pragma. */
#ifndef FASTBLOCK_FB_COMMON_H
#define FASTBLOCK_FB_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Byte counts, steps and offsets: the C type of the engine's intp
   (npy_intp, Py_ssize_t), without Python's headers. */
typedef ptrdiff_t fb_intp;

/* An item of 16 bytes, moved by one memcpy of a compile-time size. */
typedef struct { uint64_t lo, hi; } fb_item16;

/* x86 with GCC or Clang: the SIMD variants are compiled. The package is
   built without -march flags; each SIMD function carries its own target
   attribute and runs only where cpu.h reports the instructions. Other
   CPUs and compilers get each family's portable fallback. */
#ifndef FB_X86_SIMD           /* -DFB_X86_SIMD=0: the fallbacks alone (ci/c_warnings.sh) */
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define FB_X86_SIMD 1
#else
#define FB_X86_SIMD 0
#endif
#endif
/* aarch64 with GCC or Clang: the 16-byte kernels in NEON (simd128.h),
   which every aarch64 CPU has. */
#ifndef FB_NEON               /* -DFB_NEON=0: the fallbacks alone */
#if defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
#define FB_NEON 1
#else
#define FB_NEON 0
#endif
#endif
/* The 16-byte kernels are built (on x86 they run only where cpu.h
   reports SSSE3). */
#define FB_SIMD128 (FB_X86_SIMD || FB_NEON)
#if FB_SIMD128
/* Unroll a loop whose trip count is a constant after inlining, so that
   register indices are constants and the registers stay registers. */
#define FB_UNROLL _Pragma("GCC unroll 16")
#endif

/* The compiler-specific spellings, in one place: GCC and clang's
   attributes, MSVC's equivalents (untested: docs/platforms.md), nothing
   elsewhere. FB_INTERNAL: functions of the _engine/src .c files, shared
   by the engine's objects, not exported from the extension module.
   (The SIMD kernels, compiled by GCC and clang only, also use
   __attribute__((target)) directly; the atomics of team.c, faults.h and
   shared_state.h have their own fallbacks.) */
#if defined(__GNUC__) || defined(__clang__)
#define FB_INTERNAL __attribute__((visibility("hidden")))
#define FB_ALWAYS_INLINE __attribute__((always_inline))
#define FB_NOINLINE __attribute__((noinline))
#define FB_THREAD_LOCAL __thread
#elif defined(_MSC_VER)
#define FB_INTERNAL
#define FB_ALWAYS_INLINE
#define FB_NOINLINE __declspec(noinline)
#define FB_THREAD_LOCAL __declspec(thread)
#else
#define FB_INTERNAL
#define FB_ALWAYS_INLINE
#define FB_NOINLINE
#define FB_THREAD_LOCAL _Thread_local
#endif

#endif
