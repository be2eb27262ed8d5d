/* The thread policy (team.h). */
#include "team.h"

#if defined(_WIN32)
#include <windows.h>
#else
#include <time.h>
#endif

#if defined(__GNUC__) || defined(__clang__)
#define TEAM_LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define TEAM_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define TEAM_ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define TEAM_CLAIM(p, expected, v) \
    __atomic_compare_exchange_n((p), (expected), (v), 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)
#else
/* No atomics: concurrent calls may each probe, which costs time only. */
#define TEAM_LOAD(p) (*(p))
#define TEAM_STORE(p, v) (*(p) = (v))
#define TEAM_ADD(p, v) ((*(p) += (v)) - (v))   /* the value before, as the atomic's */
#define TEAM_CLAIM(p, expected, v) (*(p) = (v), 1)
#endif

#define TEAM_COUNT(p) ((void)TEAM_ADD((p), 1))

FbTeamSettings fb_team_settings;

static struct {
    int cap;                    /* 0: no cap */
    long long probe_at_ns;      /* a capped call from then on probes */
    long long backoff_ns;       /* 0: the shortest */
    long long runs, late_runs, probes;
    int last_team;
    long long last_wait_ns, last_work_ns;
    int streak;                 /* late runs in a row of a team with no cap */
    int probation;              /* prompt runs still to go after a prompt probe */
} policy;

/* GNU OpenMP keeps a pool of helpers for each thread that starts teams,
   as many as its last team had: a smaller team ends the others, a larger
   one starts new threads, which takes the caller a while before the team
   runs (not a late helper). */
static FB_THREAD_LOCAL int started_team_here;
static FB_THREAD_LOCAL int last_team_here;
static FB_THREAD_LOCAL long long last_team_end_ns;

long long fb_now_ns(void) {
#if defined(_WIN32)
    LARGE_INTEGER count, frequency;
    QueryPerformanceCounter(&count);
    QueryPerformanceFrequency(&frequency);
    return (long long)((double)count.QuadPart * 1e9 / (double)frequency.QuadPart);
#else
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
#endif
}

static long long current_backoff(void) {
    long long backoff = TEAM_LOAD(&policy.backoff_ns);
    return backoff > 0 ? backoff : fb_team_settings.team_backoff_min_ns;
}

int fb_team_size(int wanted) {
    int cap;
    long long due, now;
    if (wanted <= 1 || !fb_team_settings.adaptive_teams)
        return wanted;
    cap = TEAM_LOAD(&policy.cap);
    if (cap == 0 || cap >= wanted)
        return wanted;
    due = TEAM_LOAD(&policy.probe_at_ns);
    now = fb_now_ns();
    if (now < due)
        return cap;
    /* One caller claims the probe; the others keep the cap meanwhile. */
    if (!TEAM_CLAIM(&policy.probe_at_ns, &due, now + current_backoff()))
        return cap;
    TEAM_COUNT(&policy.probes);
    return wanted / 2 > cap ? 2 * cap : wanted;
}

void fb_team_start(FbTeamRun *run, int team) {
    run->start_ns = fb_now_ns();
    run->grows = team > last_team_here;
    run->hot = !run->grows && run->start_ns - last_team_end_ns < fb_team_settings.team_hot_ns;
    last_team_here = team;
    run->caller_in_ns = run->start_ns;
    run->caller_done_ns = run->start_ns;
    run->prompt_helpers = 0;
    TEAM_STORE(&policy.last_team, team);
    started_team_here = 1;
}

void fb_team_caller_arrives(FbTeamRun *run) {
    run->caller_in_ns = fb_now_ns();
}

void fb_team_helper_arrives(int thread, int team) {
    long long delay = fb_team_settings.team_helper_delay_ns;
    if (delay <= 0 || thread != team - 1)
        return;
#if defined(_WIN32)
    Sleep((DWORD)(delay / 1000000));
#else
    {
        struct timespec t;
        t.tv_sec = (time_t)(delay / 1000000000LL);
        t.tv_nsec = (long)(delay % 1000000000LL);
        nanosleep(&t, NULL);
    }
#endif
}

void fb_team_helper_took_first(FbTeamRun *run) {
    TEAM_COUNT(&run->prompt_helpers);
}

void fb_team_caller_done(FbTeamRun *run) {
    run->caller_done_ns = fb_now_ns();
}

void fb_team_finish(const FbTeamRun *run, int team, int wanted) {
    long long end = fb_now_ns();
    long long wait = (run->grows ? 0 : run->caller_in_ns - run->start_ns)
                     + (end - run->caller_done_ns);
    long long work = run->caller_done_ns - run->caller_in_ns;
    long long backoff;
    long long late = run->hot ? fb_team_settings.team_late_ns : fb_team_settings.team_cold_late_ns;
    int came = (int)TEAM_LOAD(&run->prompt_helpers) + 1, cap;
    last_team_end_ns = end;
    TEAM_COUNT(&policy.runs);
    TEAM_STORE(&policy.last_wait_ns, wait);
    TEAM_STORE(&policy.last_work_ns, work);
    if (!fb_team_settings.adaptive_teams)
        return;
    cap = TEAM_LOAD(&policy.cap);
    if (wait >= late && 4 * wait > work) {
        /* Late: the threads that came in time, for a back-off period; a
           whole team only once team_late_streak runs in a row were late. */
        TEAM_COUNT(&policy.late_runs);
        if (cap == 0 && TEAM_LOAD(&policy.probation) == 0
                && TEAM_ADD(&policy.streak, 1) + 1 < fb_team_settings.team_late_streak)
            return;
        TEAM_STORE(&policy.streak, 0);
        TEAM_STORE(&policy.probation, 0);
        backoff = current_backoff();
        TEAM_STORE(&policy.cap, came < team ? came : team - 1);
        TEAM_STORE(&policy.probe_at_ns, end + backoff);
        backoff = backoff > fb_team_settings.team_backoff_max_ns / 4
                  ? fb_team_settings.team_backoff_max_ns : 4 * backoff;
        TEAM_STORE(&policy.backoff_ns, backoff);
        return;
    }
    TEAM_STORE(&policy.streak, 0);
    if (cap != 0 && team > cap) {
        /* A prompt probe: its team from now on (no cap once it is whole),
           on probation: a woken helper may have preempted another
           process's thread, which the next runs show. */
        TEAM_STORE(&policy.cap, team < wanted ? team : 0);
        TEAM_STORE(&policy.probation, FB_TEAM_PROBATION_RUNS);
        return;
    }
    if (TEAM_LOAD(&policy.probation) > 0 && TEAM_ADD(&policy.probation, -1) == 1) {
        backoff = current_backoff() / 2;
        TEAM_STORE(&policy.backoff_ns, backoff > fb_team_settings.team_backoff_min_ns
                                       ? backoff : fb_team_settings.team_backoff_min_ns);
    }
}

void fb_team_state(FbTeamState *state) {
    state->cap = TEAM_LOAD(&policy.cap);
    state->backoff_ns = current_backoff();
    state->probe_in_ns = state->cap ? TEAM_LOAD(&policy.probe_at_ns) - fb_now_ns() : 0;
    state->runs = TEAM_LOAD(&policy.runs);
    state->late_runs = TEAM_LOAD(&policy.late_runs);
    state->probes = TEAM_LOAD(&policy.probes);
    state->last_team = TEAM_LOAD(&policy.last_team);
    state->last_wait_ns = TEAM_LOAD(&policy.last_wait_ns);
    state->last_work_ns = TEAM_LOAD(&policy.last_work_ns);
}

void fb_team_reset(void) {
    TEAM_STORE(&policy.cap, 0);
    TEAM_STORE(&policy.probe_at_ns, 0);
    TEAM_STORE(&policy.backoff_ns, 0);
    TEAM_STORE(&policy.runs, 0);
    TEAM_STORE(&policy.late_runs, 0);
    TEAM_STORE(&policy.probes, 0);
    TEAM_STORE(&policy.last_team, 0);
    TEAM_STORE(&policy.last_wait_ns, 0);
    TEAM_STORE(&policy.last_work_ns, 0);
    TEAM_STORE(&policy.streak, 0);
    TEAM_STORE(&policy.probation, 0);
}

int fb_team_started_here(void) {
    return started_team_here;
}
