# The engine's settings: every value the planner and the runs read that a
# test or a benchmark may change (tune), with its default, in one table
# (SETTINGS). The Tuning struct and the thread policy's FbTeamSettings
# (_engine/src/team.h) hold the values now in force, field for field under the
# same names; default_tuning, current_tuning, tune and thresholds all come
# from the table. Sizes fixed when the engine is built (buffers, registers,
# pages) are not settings: thresholds() reports them from their own
# definitions (LIMITS).
#
# What the CPU can run is asked once (cpu_*); a setting that needs an
# instruction set the CPU or the build lacks is kept off.

from collections import namedtuple
from time import sleep

cimport cython

from fastblock._engine.shared_state cimport (FB_SHARED_ADD, FB_SHARED_LOAD, FB_SHARED_PEEK,
                                           FB_SHARED_STORE)
from fastblock._engine.types cimport intp
from fastblock._engine.kernels_c cimport (FB_FAULT_AHEAD_BUILT, FB_STREAM_BUILT,
                                          FB_VECT_C_PIXELS_BUILT, FbTeamSettings, fb_cpu_has_avx,
                                          fb_cpu_has_avx2, fb_cpu_has_avx512_bf16,
                                          fb_cpu_has_avx512_vbmi,
                                          fb_cpu_has_convert_simd, fb_cpu_has_neon,
                                          fb_cpu_has_simd128, fb_cpu_has_ssse3,
                                          fb_stream_avx, fb_team_settings)

cdef struct Tuning:
    bint simd
    bint shuffles
    intp shuffle_min_bytes
    bint wide_shuffles
    bint shuffled_repeats
    bint avx2_repeats
    bint register_repeats
    bint period_repeats
    bint line_splits
    bint periodic_shuffles
    bint long_shuffle_runs
    bint streaming
    intp stream_min_bytes
    bint fault_ahead
    intp fault_ahead_min_bytes
    bint caller_faults
    intp fault_unit_bytes
    intp fault_lead_bytes
    intp parallel_min_bytes
    intp chunks_per_thread
    intp block_bytes
    intp min_block_bytes
    intp small_block_bytes
    intp unfold_short_min_bytes
    intp weave_min_run
    bint vect_c_pixels
    intp vect_c_rows_min_bytes
    bint prefetch
    bint convert_simd
    bint convert_avx512
    intp convert_tile_bytes
    intp convert_lanes_run_bytes

#: One engine setting: its ``name`` (a tune() keyword), ``default``,
#: ``unit`` ("on/off" for a switch, else what the number counts) and what
#: it ``switches``.
Setting = namedtuple("Setting", "name default unit switches")

#: The engine's settings, each defined here once.
SETTINGS = (
    Setting("simd", True, "on/off",
            "the SIMD kernels (SSSE3, AVX2, AVX-512 VBMI; NEON), where the CPU has them"),
    Setting("shuffles", True, "on/off", "gathered runs of 1- to 4-byte items by byte shuffles"),
    Setting("shuffle_min_bytes", 64 * 1024, "bytes",
            "shuffles only in copies this large: building a program costs about 2 K "
            "instructions a 16-byte piece, against about 6 saved a byte copied (callgrind)"),
    Setting("wide_shuffles", True, "on/off",
            "64-byte shuffle pieces (AVX-512 VBMI), else 16-byte"),
    Setting("shuffled_repeats", True, "on/off",
            "packed items of up to 16 bytes repeated side by side by 16-byte shuffles "
            "where the CPU has no AVX-512 VBMI"),
    Setting("avx2_repeats", True, "on/off",
            "those repeats by 32-byte shuffles where the CPU has AVX2"),
    Setting("register_repeats", True, "on/off",
            "items of 17 to 64 bytes repeated side by side, each copy stored from "
            "two registers of the item"),
    Setting("period_repeats", True, "on/off",
            "items of 20, 24, 40 or 48 bytes repeated 16 times or more side by side, "
            "each row from the 32-byte registers of its period, where the CPU has AVX2"),
    Setting("line_splits", True, "on/off",
            "splits into more than 8 lanes of 1- to 4-byte items, whole L1 ways apart, "
            "write a line of each lane at a time"),
    Setting("periodic_shuffles", True, "on/off", "repeating shuffle programs by the periodic kernel"),
    Setting("long_shuffle_runs", True, "on/off",
            "repeating programs over rows longer than the tables"),
    Setting("streaming", True, "on/off", "non-temporal stores into resident destinations"),
    Setting("stream_min_bytes", 8 * 1024 * 1024, "bytes",
            "streaming, and the unfolded tries of short folds, from this size (past the caches)"),
    Setting("wide_streams", True, "on/off", "streamed stores of 32 bytes where the CPU has AVX"),
    Setting("fault_ahead", True, "on/off", "fresh destination pages faulted at their ends first"),
    Setting("fault_ahead_min_bytes", 4 * 1024 * 1024, "bytes",
            "faulting ahead only in copies this large (NumPy's threshold for huge pages)"),
    Setting("caller_faults", True, "on/off",
            "on two threads, the calling thread takes the other thread's faults"),
    Setting("fault_unit_bytes", 512 * 1024, "bytes",
            "units of a fresh copy the calling thread faults ahead in (64 MiB new results, "
            "two threads: 0.83-0.87 x x.copy(), against 0.93-1.08 each faulting its own)"),
    Setting("fault_lead_bytes", 4 * 1024 * 1024, "bytes",
            "how far past its own unit the calling thread faults"),
    Setting("parallel_min_bytes", 256 * 1024, "bytes",
            "smaller copies run on the calling thread: a team costs more than it saves"),
    Setting("chunks_per_thread", 4, "chunks",
            "a team's loop in this many chunks a thread: slack for uneven chunks"),
    Setting("block_bytes", 32 * 1024, "bytes",
            "destination bytes of a kernel block (not a transpose): hides the loop, "
            "small enough to share out"),
    Setting("min_block_bytes", 2 * 1024, "bytes",
            "a copy in parts shares block_bytes among its parts, down to this"),
    Setting("small_block_bytes", 1024, "bytes",
            "a kernel block below this pays more for its call than for its items: "
            "whole destination runs are gathered instead"),
    Setting("unfold_short_min_bytes", 256 * 1024, "bytes",
            "from this size, 3-byte folds (5- and 6-byte ones with 64-byte pieces) "
            "are tried unfolded"),
    Setting("weave_min_run", 32, "pixels",
            "pixel runs this long keep the weave loop (2 to 4 rows woven item by item) "
            "even in a small block"),
    Setting("vect_c_pixels", True, "on/off",
            "NCHW_VECT_C bs 3 by the one-pass kernel (AVX-512 VBMI)"),
    Setting("vect_c_rows_min_bytes", 16 * 1024 * 1024, "bytes",
            "NCHW_VECT_C depth_to_space results this large read through tables "
            "(bs 3, 64 MiB uint8, two threads: 1.38 -> 0.80 x np.copyto), smaller ones "
            "through planes (in cache the gathers cost more)"),
    Setting("prefetch", True, "on/off", "transposes ask for the source two blocks ahead"),
    Setting("convert_simd", True, "on/off",
            "conversions (dtype=, scale=, offset=) by the SIMD variants of the convert "
            "kernels: AVX2 and F16C on x86-64, NEON on aarch64"),
    Setting("convert_avx512", True, "on/off",
            "the convert kernels' AVX-512 variants, where the CPU has them: the way back "
            "(float32 planes into 3- or 4-lane uint8 pixels, rows of 64 or more) in 64-byte "
            "registers, interleaved by the lane permutes (VBMI; 3x512x512, one thread: 54 -> "
            "43 us, the kernel alone); bfloat16 planes by vcvtne2ps2bf16 (BF16) where no "
            "result can be subnormal"),
    Setting("convert_tile_bytes", 16 * 1024, "bytes",
            "a converting copy's tile: this many bytes of its widest side (source, result "
            "or compute type), moved into a stage that stays in L1 and converted out"),
    Setting("convert_lanes_run_bytes", 8 * 1024, "bytes",
            "a tile of the one-pass lanes kernels (they have no stage) holds at least this "
            "many bytes of each plane: 256x256x13 uint16 into float32, one thread, 1 KiB a "
            "plane: 1.61-1.66 x np.copyto, 8 KiB: 1.37-1.41"),
    # The thread policy (_engine/src/team.h).
    Setting("adaptive_teams", True, "on/off",
            "teams shrink while helper threads come late (off: every call runs the team it asks)"),
    Setting("team_late_ns", 200 * 1000, "ns",
            "a wait for helpers still spinning from a team moments ago is late from this long "
            "(another process's time slice is 1-8 ms)"),
    Setting("team_cold_late_ns", 2 * 1000 * 1000, "ns",
            "... and for helpers woken from sleep (waking takes hundreds of microseconds on an "
            "idle VM; a 16-core VM lost a tenth of its speed when that counted)"),
    Setting("team_hot_ns", 1000 * 1000, "ns",
            "helpers still spin this long after a team (GNU OpenMP spins some milliseconds)"),
    Setting("team_late_streak", 2, "runs",
            "late runs in a row that cut a whole team (one straggler does not)"),
    Setting("team_backoff_min_ns", 2 * 1000 * 1000, "ns",
            "the first back-off before a cut team is probed again (x4 a cut)"),
    Setting("team_backoff_max_ns", 1000 * 1000 * 1000, "ns", "the longest back-off"),
    Setting("team_helper_delay_ns", 0, "ns",
            "test hook: a team's last thread sleeps this long before it starts"),
)

# Settings that need this build or CPU: kept off without them.
cdef dict NEEDS = {"streaming": FB_STREAM_BUILT != 0, "fault_ahead": FB_FAULT_AHEAD_BUILT != 0,
                   "vect_c_pixels": FB_VECT_C_PIXELS_BUILT != 0,
                   "wide_streams": fb_cpu_has_avx() != 0, "avx2_repeats": fb_cpu_has_avx2() != 0,
                   "convert_simd": fb_cpu_has_convert_simd() != 0,
                   "convert_avx512": fb_cpu_has_convert_simd() != 0
                                     and (fb_cpu_has_avx512_vbmi() != 0
                                          or fb_cpu_has_avx512_bf16() != 0)}
# Settings that must be at least this (a unit of 0 bytes never ends).
cdef dict MINIMUM = {"convert_tile_bytes": 1, "convert_lanes_run_bytes": 1, "fault_unit_bytes": 1, "chunks_per_thread": 1, "block_bytes": 1,
                     "min_block_bytes": 1, "team_late_streak": 1, "team_backoff_min_ns": 1}

cdef Tuning tuning
# Counts the calls of tune(): a plan stored under another count was chosen
# with other settings (_engine/run/program.pxi).
cdef Py_ssize_t tuning_generation = 0

# The settings guard. Every entry point that plans or runs a copy counts
# itself in copies_running for its whole call (enter_copy, leave_copy);
# tune() raises settings_changing, waits for the count to drain, changes
# the settings and lowers the flag, and a copy that finds the flag raised
# waits for it to fall. So no copy ever reads settings half changed, and
# tune() waits at most for the copies already running (threads calling
# without end cannot starve it). tunes_lock: one tune() at a time.
cdef Py_ssize_t copies_running = 0
cdef Py_ssize_t settings_changing = 0
cdef cython.pymutex tunes_lock
# How long a waiting side sleeps between looks (with the GIL released).
cdef double GUARD_NAP_S = 50e-6


cdef int enter_copy() except -1:
    """Count a copy as running, first waiting out a tune() in progress."""
    while True:
        FB_SHARED_ADD(&copies_running, 1)
        if not FB_SHARED_LOAD(&settings_changing):
            return 0
        FB_SHARED_ADD(&copies_running, -1)
        while FB_SHARED_LOAD(&settings_changing):
            sleep(GUARD_NAP_S)


cdef inline void leave_copy() noexcept:
    FB_SHARED_ADD(&copies_running, -1)


def settings_guard():
    """The settings guard now: the copies counted as running, and whether
    a tune() is changing the settings (for tests)."""
    return {"copies_running": FB_SHARED_LOAD(&copies_running),
            "changing": bool(FB_SHARED_LOAD(&settings_changing))}

# The 16-byte kernels: SSSE3 on x86, NEON on aarch64 (src/simd128.h).
cdef bint cpu_simd128 = fb_cpu_has_simd128() != 0
cdef bint cpu_neon = fb_cpu_has_neon() != 0
cdef bint cpu_vbmi = cpu_simd128 and fb_cpu_has_avx512_vbmi() != 0
cdef bint cpu_avx512_bf16 = fb_cpu_has_avx512_bf16() != 0
cdef bint cpu_avx = fb_cpu_has_avx() != 0
cdef bint cpu_avx2 = cpu_simd128 and fb_cpu_has_avx2() != 0
# The convert stage's SIMD variants (src/convert.c): AVX2 with F16C, or NEON.
cdef bint cpu_convert_simd = fb_cpu_has_convert_simd() != 0


cdef inline bint use_simd128() noexcept nogil:
    """Whether the 16-byte kernels run (lane transposes, shuffles, Tile rows)."""
    return tuning.simd and cpu_simd128


cdef inline bint use_vbmi() noexcept nogil:
    """Whether the AVX-512 VBMI kernels run (64-byte shuffles, VECT_C pixels)."""
    return tuning.simd and cpu_vbmi


cdef inline bint use_avx2() noexcept nogil:
    """Whether the AVX2 kernels run (Tile's packed repeats in 32-byte registers)."""
    return tuning.simd and tuning.avx2_repeats and cpu_avx2


cdef inline bint use_shuffles() noexcept nogil:
    return tuning.shuffles and use_simd128()


cdef inline bint use_wide_shuffles() noexcept nogil:
    return tuning.wide_shuffles and use_shuffles() and use_vbmi()


def default_tuning():
    """The settings the engine runs with unless told otherwise (their
    meanings: :data:`SETTINGS`)."""
    return {setting.name: setting.default for setting in SETTINGS}


def cpu_features():
    """What this CPU and build can run: the engine's SIMD kernels and its
    memory paths (a setting that needs one of these stays off without it)."""
    return {"simd128": bool(cpu_simd128), "ssse3": fb_cpu_has_ssse3() != 0,
            "neon": bool(cpu_neon), "avx512_vbmi": bool(cpu_vbmi), "avx": bool(cpu_avx),
            "avx2": bool(cpu_avx2), "convert_simd": bool(cpu_convert_simd),
            "avx512_bf16": bool(cpu_avx512_bf16),
            "streaming_stores": FB_STREAM_BUILT != 0, "fault_ahead": FB_FAULT_AHEAD_BUILT != 0,
            "vect_c_pixels": FB_VECT_C_PIXELS_BUILT != 0 and bool(cpu_vbmi)}


def current_tuning():
    """The settings now in force, as :func:`tune` takes them (what the
    build cannot run reads as off; what needs ``simd`` reads as set)."""
    with tunes_lock:
        return settings_now()


cdef dict settings_now():
    """current_tuning's values; the caller holds tunes_lock."""
    values = dict(<dict>tuning, **<dict>fb_team_settings)
    values["wide_streams"] = fb_stream_avx != 0
    return {setting.name: type(setting.default)(values[setting.name]) for setting in SETTINGS}


class TuningChange:
    """What :func:`tune` returns: the settings before the change, put back
    when it is used as a context manager and the block ends."""

    def __init__(self, before):
        self.before = before

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        tune(**self.before)
        return False


def tune(**settings):
    """Change engine settings (:data:`SETTINGS`) for plans built from now
    on, process-wide. Use as ``with tune(shuffles=False): ...`` to have them
    put back afterwards. For tests and benchmarks. Safe while other threads
    copy: the change waits for the copies already running to end, and
    copies that start meanwhile wait for it (their results are the same
    under any settings)."""
    global tuning, fb_team_settings, fb_stream_avx
    cdef Tuning engine
    cdef FbTeamSettings team
    with tunes_lock:
        before = settings_now()
        unknown = sorted(set(settings) - set(before))
        if unknown:
            raise TypeError(f"fastblock: unknown engine setting(s) {unknown}; known: {sorted(before)}")
        values = dict(before, **settings)
        for name, available in NEEDS.items():
            values[name] = bool(values[name]) and available
        for name, least in MINIMUM.items():
            values[name] = max(values[name], least)
        values["team_backoff_max_ns"] = max(values["team_backoff_max_ns"],
                                            values["team_backoff_min_ns"])
        # Both structs are converted before either is set: a value of the
        # wrong type changes nothing.
        engine = {name: values[name] for name in (<dict>tuning)}
        team = {name: values[name] for name in (<dict>fb_team_settings)}
        FB_SHARED_STORE(&settings_changing, 1)
        try:
            while FB_SHARED_LOAD(&copies_running):
                sleep(GUARD_NAP_S)
            tuning = engine
            fb_team_settings = team
            fb_stream_avx = values["wide_streams"]
            FB_SHARED_ADD(&tuning_generation, 1)
        finally:
            FB_SHARED_STORE(&settings_changing, 0)
    return TuningChange(before)


def thresholds():
    """The sizes at which the planner switches paths, by name: the size
    settings now in force (:data:`SETTINGS`, units other than "on/off" and
    the thread policy's) and the sizes fixed by the build (LIMITS). For the
    stress tests, which draw cases on both sides of each."""
    now = current_tuning()
    sizes = {setting.name: now[setting.name] for setting in SETTINGS
             if setting.unit in ("bytes", "pixels")}
    sizes.update(LIMITS)
    return sizes
