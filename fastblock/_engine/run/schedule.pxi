# The schedule: a copy's work cut into units (a Plan's loop in chunks, or the
# NCHW_VECT_C runners' blocks) for the OpenMP team, or run on the calling
# thread alone (copy_team decides which, for every copy); in a copy into
# fresh pages, the calling thread faults the pages ahead of the others
# (run_units). How many threads a team has is the thread policy's
# (_engine/src/team.h): up to the call's count.

from fastblock._engine.types cimport Plan, intp
from fastblock._engine.kernels_c cimport (FbTeamRun, fb_load, fb_publish, fb_spin_pause, fb_take,
                                          fb_team_caller_arrives, fb_team_caller_done,
                                          fb_team_finish, fb_team_helper_arrives,
                                          fb_team_helper_took_first, fb_team_size, fb_team_start)
from fastblock._engine.schedule_types cimport FAULTS_NONE, FAULTS_ONLY, FAULTS_OWN, UnitRunner


cdef inline bint runs_alone(intp copy_bytes, intp n_units, int num_threads) noexcept nogil:
    """Whether a copy of ``copy_bytes`` bytes in up to ``n_units`` units,
    for a call of ``num_threads``, runs on the calling thread alone: one
    unit, or a copy under tuning.parallel_min_bytes (starting a team costs
    more than it saves)."""
    return num_threads <= 1 or n_units < 2 or copy_bytes < tuning.parallel_min_bytes


cdef int copy_team(intp copy_bytes, intp n_units, int num_threads) noexcept nogil:
    """Threads to run a copy (see runs_alone): 1, or the thread policy's
    team out of the call's share of its threads, a unit a thread at most.
    Known before the copy runs: per-thread buffers are sized by it."""
    if runs_alone(copy_bytes, n_units, num_threads):
        return 1
    return <int>imin(fb_team_size(threads_share(num_threads)), n_units)


cdef inline int threads_share(int num_threads) noexcept nogil:
    """A call's share of its ``num_threads`` while other copies of this
    process run (tuning.pxi's count, this one included): divided among
    them, at least 1. Python threads calling at once then run about the
    threads one call would, not a team each: two threads of a free-threaded
    Python, each copying 1x3x224x224 float32 with two-thread teams on 2
    cores, made 0.6x the calls of one thread per call."""
    cdef Py_ssize_t running = FB_SHARED_PEEK(&copies_running)
    if running <= 1:
        return num_threads
    return <int>imax(1, num_threads // running)


cdef intp plan_chunks(const Plan* p, int team) noexcept nogil:
    """The chunks a team of ``team`` threads cuts a plan's loop into:
    tuning.chunks_per_thread a thread, and where the plan faults ahead,
    units small enough for the calling thread to fault just ahead."""
    cdef intp n_chunks = team * tuning.chunks_per_thread
    if p.fault_ahead:
        n_chunks = imax(n_chunks, p.total_bytes * p.n_parts // tuning.fault_unit_bytes)
    return imin(p.n_iter, n_chunks)


cdef struct PlanChunks:
    # A plan's iterations cut into chunks, the units of run_units.
    const Plan* plan
    char* dst
    const char* src
    intp base, extra            # iterations a chunk; the first `extra` take one more


cdef void run_chunk(const void* job, intp chunk, int faults, int thread) noexcept nogil:
    cdef const PlanChunks* chunks = <const PlanChunks*>job
    cdef intp start = chunk * chunks.base + imin(chunk, chunks.extra)
    cdef intp stop = start + chunks.base + (1 if chunk < chunks.extra else 0)
    run_range(chunks.plan, chunks.dst, chunks.src, start, stop, faults)


cdef inline void run_whole_plan(const Plan* p, char* dst, const char* src,
                                int faults=FAULTS_OWN) noexcept nogil:
    """A plan's whole loop on this thread, faulting as ``faults`` says: a
    part of a unit of another job's (the NCHW_VECT_C blocks', each a few
    plans)."""
    run_range(p, dst, src, 0, p.n_iter, faults)


cdef void run_plan(const Plan* p, char* dst, const char* src, int num_threads) noexcept nogil:
    cdef intp n_chunks, copy_bytes = p.total_bytes * p.n_parts
    cdef PlanChunks chunks
    cdef int team = copy_team(copy_bytes, p.n_iter, num_threads)
    if team <= 1:
        run_range(p, dst, src, 0, p.n_iter)
        return
    n_chunks = plan_chunks(p, team)
    chunks.plan = p
    chunks.dst = dst
    chunks.src = src
    chunks.base = p.n_iter // n_chunks
    chunks.extra = p.n_iter % n_chunks
    run_units(&chunks, run_chunk, n_chunks, copy_bytes // n_chunks, team, num_threads,
              p.fault_ahead)


# Who takes the faults: the calling thread, ahead of the others.
#
# Which thread faults a fresh page matters: the calling thread, which
# freed the NumPy arrays before, finds its freed pages on its CPU's lists,
# while another CPU may take pages the host must fault in first (worst
# calls 109 ms against 32 ms when the calling thread faults for both).
#
# So a copy into fresh pages on two threads runs as units (ranges of its
# blocks) taken in order, and the calling thread (OpenMP thread 0), each
# time it takes a unit, first faults every unit up to about
# tuning.fault_lead_bytes past it (running the plans in FAULTS_ONLY mode) and
# publishes how far it has got. The other thread runs a unit in that
# promised range once it is faulted (it spins until then), and faults a
# unit beyond it itself, as before. The calling thread keeps its promise
# when it runs out of units, so no thread waits for a unit nobody faults.

# How a unit runs (FAULTS_OWN, FAULTS_NONE, FAULTS_ONLY) and UnitRunner are
# declared in _engine/schedule_types.pxd, for the files that hand units over.

cdef enum:
    # Teams of up to this many threads: measured on two cores only. With
    # more, one thread faulting for all the others would fall behind them.
    CALLER_FAULTS_MAX_THREADS = 2


cdef inline bint caller_takes_faults(int n_threads, bint fresh) noexcept nogil:
    """Whether the calling thread of a team faults for the others."""
    return fresh and tuning.caller_faults and n_threads <= CALLER_FAULTS_MAX_THREADS


cdef inline intp fault_lead_units(int n_threads, intp unit_bytes) noexcept nogil:
    """How many units past its own the calling thread faults ahead."""
    return imax(n_threads, tuning.fault_lead_bytes // imax(unit_bytes, 1))


cdef struct FaultTeam:
    intp next_unit      # the next unit to hand out
    intp faulted        # every unit before this one has its pages
    intp promised       # the calling thread faults every unit before this one


cdef inline void fault_units(FaultTeam* team, const void* job, UnitRunner run_unit,
                             intp stop) noexcept nogil:
    """The calling thread faults the units before ``stop`` not yet faulted."""
    cdef intp unit
    for unit in range(fb_load(&team.faulted), stop):
        run_unit(job, unit, FAULTS_ONLY, 0)
        fb_publish(&team.faulted, unit + 1)


cdef void run_units(const void* job, UnitRunner run_unit, intp n_units, intp unit_bytes,
                    int n_threads, int wanted, bint fresh) noexcept nogil:
    """Run ``n_units`` units of about ``unit_bytes`` result bytes on
    ``n_threads`` threads (copy_team's answer for a call that asked for
    ``wanted``; 1: the calling thread runs them all, in order), taken in
    order as threads come free; where the result is ``fresh`` (its plans
    fault ahead), the calling thread takes the faults (above)."""
    cdef FaultTeam team
    cdef FbTeamRun run
    cdef intp unit, ahead
    cdef int thread
    cdef bint caller_faults, took
    if n_threads <= 1:
        for unit in range(n_units):
            run_unit(job, unit, FAULTS_OWN, 0)
        return
    caller_faults = caller_takes_faults(n_threads, fresh)
    ahead = fault_lead_units(n_threads, unit_bytes)
    team.next_unit = 0
    team.faulted = 0
    team.promised = imin(n_units, ahead + 1) if caller_faults else 0
    thread = 0
    unit = 0
    took = False
    fb_team_start(&run, n_threads)
    with parallel(num_threads=n_threads):
        thread = threadid()
        took = False
        if thread == 0:
            fb_team_caller_arrives(&run)
        else:
            fb_team_helper_arrives(thread, n_threads)
        while True:
            unit = fb_take(&team.next_unit)
            if unit >= n_units:
                break
            if thread != 0 and not took:
                took = True
                fb_team_helper_took_first(&run)
            if not caller_faults:
                run_unit(job, unit, FAULTS_OWN, thread)
            elif thread == 0:
                fb_publish(&team.promised,
                           imin(n_units, imax(unit + ahead + 1, fb_load(&team.promised))))
                fault_units(&team, job, run_unit, fb_load(&team.promised))
                run_unit(job, unit, FAULTS_NONE, 0)
            elif unit < fb_load(&team.promised):
                while fb_load(&team.faulted) <= unit:
                    fb_spin_pause()
                run_unit(job, unit, FAULTS_NONE, thread)
            else:
                run_unit(job, unit, FAULTS_OWN, thread)
        if thread == 0:
            if caller_faults:
                fault_units(&team, job, run_unit, fb_load(&team.promised))
            fb_team_caller_done(&run)
    fb_team_finish(&run, n_threads, wanted)
