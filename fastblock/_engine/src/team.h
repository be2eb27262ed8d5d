/* The thread policy: how many threads a parallel copy runs now.

   A call asks for up to `wanted` threads (its num_threads). Where another
   process keeps the cores busy, an OpenMP helper thread may not run for a
   whole scheduler time slice (milliseconds), and the calling thread waits
   that long at the end of the parallel region for a share of work that it
   has long since done itself; or, entering the region, for a helper that
   has not yet left the last one (GNU OpenMP starts a team only once every
   pool thread is back). So each team run reports how long the calling
   thread waited for its helpers, at either end (not counting the start
   of new helper threads). A run is late when that wait passes a threshold
   (below) and a quarter of the caller's own work: with 4 units a thread,
   a prompt team's last unit keeps the caller waiting an eighth at most.
   Late runs cap the team at the threads that came in time, for a back-off
   period, after which one call tries twice the cap (a probe; a prompt probe's team
   is the new cap, on probation: the next late run cuts it at once). The
   back-off grows fourfold with each cut (up to team_backoff_max_ns)
   and halves once a probe's team has run FB_TEAM_PROBATION_RUNS prompt
   runs, so a busy machine is probed rarely, one helper at a time, and a
   quiet one gets its threads back within a few back-offs.

   The state is process-wide; updates are atomic where the compiler has
   atomics, and a lost update only moves a probe. */
#ifndef FASTBLOCK_TEAM_H
#define FASTBLOCK_TEAM_H

#include "fb_common.h"

/* A woken helper preempts another process's thread at once, so one
   prompt probe says little; 8 prompt runs after it say the core is free. */
#define FB_TEAM_PROBATION_RUNS 8

/* The policy's settings: the engine's tune() sets them (their defaults,
   and why, are in its table of settings, _engine/tuning.pxi); until then
   the policy is off. */
typedef struct {
    long long team_late_ns;         /* a wait this long marks a run of spinning helpers late */
    long long team_cold_late_ns;    /* ... and of helpers woken from sleep */
    long long team_hot_ns;          /* helpers spin for this long after a run (at least) */
    int team_late_streak;           /* late runs in a row that cap a whole team */
    long long team_backoff_min_ns;  /* the first back-off */
    long long team_backoff_max_ns;  /* the longest back-off */
    long long team_helper_delay_ns; /* test hook: a team's last thread sleeps this long first */
    int adaptive_teams;             /* 0: every call runs the team it asks for */
} FbTeamSettings;

/* What one run of a team saw, filled in by the team's threads. */
typedef struct {
    long long start_ns;         /* the caller asked OpenMP for the team */
    int grows;                  /* more threads than the caller's last team: new ones start */
    int hot;                    /* the same team as the caller's last, ended under hot_ns before */
    long long caller_in_ns;     /* the caller entered the parallel region */
    long long caller_done_ns;   /* the caller found no unit left */
    fb_intp prompt_helpers;     /* helpers that took a unit while units were left */
} FbTeamRun;

/* What the policy holds now (for tests and describe-like reports). */
typedef struct {
    int cap;                    /* threads a call may run; 0: no cap */
    long long backoff_ns;       /* the back-off after the next late run */
    long long probe_in_ns;      /* time until the next probe (<= 0: due) */
    long long runs, late_runs, probes;
    int last_team;              /* threads the last team run asked for */
    long long last_wait_ns;     /* ... how long its caller waited for helpers */
    long long last_work_ns;     /* ... and worked itself */
} FbTeamState;

FB_INTERNAL extern FbTeamSettings fb_team_settings;

FB_INTERNAL long long fb_now_ns(void);
/* Threads to run a call that asks for `wanted` (>= 1): `wanted`, or fewer
   while helpers have lately come late. */
FB_INTERNAL int fb_team_size(int wanted);
/* Start, arrivals and end of a run of `team` threads (team >= 2) for a
   call that asked for `wanted`. */
FB_INTERNAL void fb_team_start(FbTeamRun *run, int team);
FB_INTERNAL void fb_team_caller_arrives(FbTeamRun *run);
FB_INTERNAL void fb_team_helper_arrives(int thread, int team);
FB_INTERNAL void fb_team_helper_took_first(FbTeamRun *run);
FB_INTERNAL void fb_team_caller_done(FbTeamRun *run);
FB_INTERNAL void fb_team_finish(const FbTeamRun *run, int team, int wanted);
FB_INTERNAL void fb_team_state(FbTeamState *state);
/* Forget what was seen (a forked child's helpers are new threads). */
FB_INTERNAL void fb_team_reset(void);
/* Whether the calling thread has started a team of two or more threads:
   its OpenMP thread pool then holds threads that a forked child lacks. */
FB_INTERNAL int fb_team_started_here(void);

#endif
