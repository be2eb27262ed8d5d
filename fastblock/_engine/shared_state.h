/* Counters and flags that Python threads share: the engine's settings
   guard and count of stored plans (tuning.pxi, run/program.pxi) and the
   front doors' call cache (fastblock/_fastpath.pyx).

   A build with a GIL (every CPython but 3.13t and later "t" builds) reads
   and writes them only with the GIL held, which orders them: plain loads
   and stores. A free-threaded build (Py_GIL_DISABLED) uses CPython's
   atomics (cpython/pyatomic.h), sequentially consistent: the settings
   guard is a handshake in which each side writes its flag, then reads the
   other's. */
#ifndef FB_SHARED_STATE_H
#define FB_SHARED_STATE_H

#include <Python.h>

#ifdef Py_GIL_DISABLED
/* The value before the addition. */
#define FB_SHARED_ADD(p, v) _Py_atomic_add_ssize((p), (v))
#define FB_SHARED_LOAD(p) _Py_atomic_load_ssize(p)
#define FB_SHARED_STORE(p, v) _Py_atomic_store_ssize((p), (v))
#else
static inline Py_ssize_t fb_shared_add(Py_ssize_t *p, Py_ssize_t v) {
    Py_ssize_t before = *p;
    *p = before + v;
    return before;
}
#define FB_SHARED_ADD(p, v) fb_shared_add((p), (v))
#define FB_SHARED_LOAD(p) (*(p))
#define FB_SHARED_STORE(p, v) ((void)(*(p) = (v)))
#endif

/* A read from code that runs without the GIL (a copy's planning), racing
   the writers: relaxed, some value a writer wrote. */
#if defined(Py_GIL_DISABLED)
#define FB_SHARED_PEEK(p) _Py_atomic_load_ssize_relaxed(p)
#elif defined(__GNUC__)
#define FB_SHARED_PEEK(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#else
#define FB_SHARED_PEEK(p) (*(volatile Py_ssize_t *)(p))
#endif

#endif
