# Tuning: every setting the engine reads when it plans or runs a copy, in
# one place. The defaults are what the engine runs with; tests turn them to
# force each path at any size, benchmarks to compare paths (tune).
#
# What the CPU can run is asked once (cpu_*); a setting that needs an
# instruction set the CPU or the build lacks is kept off.

cdef struct Tuning:
    bint simd                   # the SSSE3 / AVX-512 VBMI kernels, where the CPU has them
    bint shuffles               # gathered runs of 1- to 4-byte items by byte shuffles
    intp shuffle_min_bytes      # ... in copies of at least this many bytes
    bint wide_shuffles          # 64-byte shuffle pieces (AVX-512 VBMI), else 16-byte
    bint periodic_shuffles      # repeating shuffle programs by the periodic kernel
    bint long_shuffle_runs      # repeating programs over rows longer than the tables
    bint streaming              # non-temporal stores into resident destinations
    intp stream_min_bytes       # ... of at least this many bytes
    bint wide_streams           # ... 32 bytes a store where the CPU has AVX
    bint fault_ahead            # fresh destination pages faulted at their ends first
    intp fault_ahead_min_bytes  # ... in copies of at least this many bytes
    bint caller_faults          # the calling thread takes the other threads' faults
    intp fault_unit_bytes       # ... in units of about this many bytes
    intp fault_lead_bytes       # ... this far ahead of its own unit
    intp parallel_min_bytes     # copies smaller than this run on the calling thread
    bint vect_c_pixels          # NCHW_VECT_C bs 3 by the one-pass kernel (AVX-512 VBMI)
    intp vect_c_rows_min_bytes  # NCHW_VECT_C depth_to_space through tables from this size
    bint prefetch               # transposes ask for the source two blocks ahead
# The thread policy's settings live in C (fb_team_settings, _src/team.h):
# adaptive_teams, team_late_ns, team_cold_late_ns, team_hot_ns,
# team_late_streak, team_backoff_min_ns, team_backoff_max_ns
# and the test hook team_helper_delay_ns (a team's last thread starts late).


cdef Tuning tuning
# Counts the calls of tune(): a plan stored under another count was chosen
# with other settings (_engine_program.pxi).
cdef unsigned long tuning_generation = 0

from ._kernels_c cimport (FB_TEAM_BACKOFF_MAX_NS, FB_TEAM_BACKOFF_MIN_NS, FB_TEAM_COLD_LATE_NS,
                          FB_TEAM_HOT_NS, FB_TEAM_LATE_NS, FB_TEAM_LATE_STREAK,
                          fb_team_settings)

cdef bint cpu_ssse3 = fb_cpu_has_ssse3() != 0
cdef bint cpu_vbmi = cpu_ssse3 and fb_cpu_has_avx512_vbmi() != 0
cdef bint cpu_avx = fb_cpu_has_avx() != 0


cdef inline bint use_ssse3() noexcept nogil:
    """Whether the SSSE3 kernels run (lane transposes, shuffles, Tile rows)."""
    return tuning.simd and cpu_ssse3


cdef inline bint use_vbmi() noexcept nogil:
    """Whether the AVX-512 VBMI kernels run (64-byte shuffles, VECT_C pixels)."""
    return tuning.simd and cpu_vbmi


cdef inline bint use_shuffles() noexcept nogil:
    return tuning.shuffles and use_ssse3()


cdef inline bint use_wide_shuffles() noexcept nogil:
    return tuning.wide_shuffles and use_shuffles() and use_vbmi()


def default_tuning():
    """The settings the engine runs with unless told otherwise."""
    return dict(
        simd=True, shuffles=True, shuffle_min_bytes=SHUFFLE_MIN_BYTES, wide_shuffles=True,
        periodic_shuffles=True, long_shuffle_runs=True,
        streaming=True, stream_min_bytes=STREAM_MIN_BYTES, wide_streams=True,
        fault_ahead=True, fault_ahead_min_bytes=FAULT_AHEAD_MIN_BYTES,
        caller_faults=True, fault_unit_bytes=FAULT_UNIT_DEFAULT, fault_lead_bytes=FAULT_LEAD_DEFAULT,
        parallel_min_bytes=PARALLEL_MIN_BYTES,
        vect_c_pixels=True, vect_c_rows_min_bytes=VECT_C_ROWS_MIN_BYTES,
        prefetch=True,
        adaptive_teams=True, team_late_ns=FB_TEAM_LATE_NS,
        team_cold_late_ns=FB_TEAM_COLD_LATE_NS, team_hot_ns=FB_TEAM_HOT_NS,
        team_late_streak=FB_TEAM_LATE_STREAK,
        team_backoff_min_ns=FB_TEAM_BACKOFF_MIN_NS, team_backoff_max_ns=FB_TEAM_BACKOFF_MAX_NS,
        team_helper_delay_ns=0)


def cpu_features():
    """What this CPU and build can run: the engine's SIMD kernels and its
    memory paths (a setting that needs one of these stays off without it)."""
    return {"ssse3": bool(cpu_ssse3), "avx512_vbmi": bool(cpu_vbmi), "avx": bool(cpu_avx),
            "streaming_stores": FB_STREAM_BUILT != 0, "fault_ahead": FB_FAULT_AHEAD_BUILT != 0,
            "vect_c_pixels": FB_VECT_C_PIXELS_BUILT != 0 and bool(cpu_vbmi)}


def current_tuning():
    """The settings now in force, as :func:`tune` takes them (what the
    build cannot run reads as off; what needs ``simd`` reads as set)."""
    return dict(
        simd=tuning.simd, shuffles=tuning.shuffles, shuffle_min_bytes=tuning.shuffle_min_bytes,
        wide_shuffles=tuning.wide_shuffles, periodic_shuffles=tuning.periodic_shuffles,
        long_shuffle_runs=tuning.long_shuffle_runs,
        streaming=tuning.streaming, stream_min_bytes=tuning.stream_min_bytes,
        wide_streams=fb_stream_avx != 0,
        fault_ahead=tuning.fault_ahead, fault_ahead_min_bytes=tuning.fault_ahead_min_bytes,
        caller_faults=tuning.caller_faults, fault_unit_bytes=tuning.fault_unit_bytes,
        fault_lead_bytes=tuning.fault_lead_bytes, parallel_min_bytes=tuning.parallel_min_bytes,
        vect_c_pixels=tuning.vect_c_pixels,
        vect_c_rows_min_bytes=tuning.vect_c_rows_min_bytes, prefetch=tuning.prefetch,
        adaptive_teams=bool(fb_team_settings.adaptive), team_late_ns=fb_team_settings.late_ns,
        team_cold_late_ns=fb_team_settings.cold_late_ns, team_hot_ns=fb_team_settings.hot_ns,
        team_late_streak=fb_team_settings.late_streak,
        team_backoff_min_ns=fb_team_settings.backoff_min_ns,
        team_backoff_max_ns=fb_team_settings.backoff_max_ns,
        team_helper_delay_ns=fb_team_settings.helper_delay_ns)


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
    """Change engine settings (names and meanings: :func:`default_tuning`,
    the ``Tuning`` struct) for plans built from now on, process-wide. Use as
    ``with tune(shuffles=False): ...`` to have them put back afterwards.
    For tests and benchmarks; not thread-safe against running copies."""
    before = current_tuning()
    unknown = sorted(set(settings) - set(before))
    if unknown:
        raise TypeError(f"fastblock: unknown engine setting(s) {unknown}; known: {sorted(before)}")
    global fb_stream_avx, tuning_generation
    values = dict(before, **settings)
    tuning_generation += 1
    tuning.simd = values["simd"]
    tuning.shuffles = values["shuffles"]
    tuning.shuffle_min_bytes = values["shuffle_min_bytes"]
    tuning.wide_shuffles = values["wide_shuffles"]
    tuning.periodic_shuffles = values["periodic_shuffles"]
    tuning.long_shuffle_runs = values["long_shuffle_runs"]
    tuning.streaming = values["streaming"] and FB_STREAM_BUILT != 0
    tuning.stream_min_bytes = values["stream_min_bytes"]
    fb_stream_avx = values["wide_streams"] and cpu_avx
    tuning.fault_ahead = values["fault_ahead"] and FB_FAULT_AHEAD_BUILT != 0
    tuning.fault_ahead_min_bytes = values["fault_ahead_min_bytes"]
    tuning.caller_faults = values["caller_faults"]
    tuning.fault_unit_bytes = max(values["fault_unit_bytes"], 1)
    tuning.fault_lead_bytes = values["fault_lead_bytes"]
    tuning.parallel_min_bytes = values["parallel_min_bytes"]
    tuning.vect_c_pixels = values["vect_c_pixels"] and FB_VECT_C_PIXELS_BUILT != 0
    tuning.vect_c_rows_min_bytes = values["vect_c_rows_min_bytes"]
    tuning.prefetch = values["prefetch"]
    fb_team_settings.adaptive = values["adaptive_teams"]
    fb_team_settings.late_ns = values["team_late_ns"]
    fb_team_settings.cold_late_ns = values["team_cold_late_ns"]
    fb_team_settings.hot_ns = values["team_hot_ns"]
    fb_team_settings.late_streak = max(values["team_late_streak"], 1)
    fb_team_settings.backoff_min_ns = max(values["team_backoff_min_ns"], 1)
    fb_team_settings.backoff_max_ns = max(values["team_backoff_max_ns"],
                                          fb_team_settings.backoff_min_ns)
    fb_team_settings.helper_delay_ns = values["team_helper_delay_ns"]
    return TuningChange(before)
