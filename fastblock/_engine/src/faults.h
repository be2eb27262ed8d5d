/* Fault-ahead primitives: a write that faults a fresh page in without
   changing its bytes, and the atomic counters of the thread team that
   hands page faults over (the engine's FaultTeam). */
#ifndef FASTBLOCK_FAULTS_H
#define FASTBLOCK_FAULTS_H

#include "fb_common.h"

#if defined(__GNUC__) || defined(__clang__)
#define FB_FAULT_AHEAD_BUILT 1
/* volatile keeps the compiler from turning the idempotent RMW into a
   load, which would map the shared zero page instead. */
static inline void fb_touch_for_write(const char *byte) {
    __atomic_fetch_or((volatile unsigned char *)byte, (unsigned char)0, __ATOMIC_RELAXED);
}
/* The counters of the engine's FaultTeam. */
static inline fb_intp fb_take(fb_intp *counter) {
    return __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}
static inline fb_intp fb_load(const fb_intp *counter) {
    return __atomic_load_n(counter, __ATOMIC_ACQUIRE);
}
static inline void fb_publish(fb_intp *counter, fb_intp value) {
    __atomic_store_n(counter, value, __ATOMIC_RELEASE);
}
static inline void fb_spin_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}
#else
/* No atomics: the fault_ahead setting stays off, so no FaultTeam runs and
   these are never called. */
#define FB_FAULT_AHEAD_BUILT 0
static inline void fb_touch_for_write(const char *byte) { (void)byte; }
static inline fb_intp fb_take(fb_intp *counter) { return (*counter)++; }
static inline fb_intp fb_load(const fb_intp *counter) { return *counter; }
static inline void fb_publish(fb_intp *counter, fb_intp value) { *counter = value; }
static inline void fb_spin_pause(void) {}
#endif

#endif
