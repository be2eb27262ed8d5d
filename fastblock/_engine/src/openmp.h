/* Whether the engine was compiled with OpenMP, and OpenMP's thread count
   (1 without it). */
#ifndef FASTBLOCK_OPENMP_H
#define FASTBLOCK_OPENMP_H

#ifdef _OPENMP
#include <omp.h>
#define FB_HAVE_OPENMP 1
static inline int fb_openmp_max_threads(void) { return omp_get_max_threads(); }
#else
#define FB_HAVE_OPENMP 0
static inline int fb_openmp_max_threads(void) { return 1; }
#endif

#endif
