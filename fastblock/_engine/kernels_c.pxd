# The engine's C (fastblock/_engine/src), declared to Cython: one block per
# header. The .c files are compiled into the _engine extension (setup.py).

from libc.stdint cimport uint64_t
from numpy cimport npy_intp


cdef extern from "src/fb_common.h":
    # The engine's intp (ptrdiff_t in C, the size of npy_intp).
    ctypedef npy_intp fb_intp
    ctypedef struct fb_item16:
        uint64_t lo
        uint64_t hi


cdef extern from "src/cpu.h" nogil:
    int fb_cpu_has_simd128()
    int fb_cpu_has_ssse3()
    int fb_cpu_has_neon()
    int fb_cpu_has_avx()
    int fb_cpu_has_avx2()
    int fb_cpu_has_convert_simd()
    int fb_cpu_has_avx512_vbmi()
    int fb_cpu_has_avx512_bf16()


cdef extern from "src/openmp.h" nogil:
    int FB_HAVE_OPENMP
    int fb_openmp_max_threads()


cdef extern from "src/repeat.h" nogil:
    enum: FB_PACKED_COUNT_MAX
    void fb_repeat_rows(char* dst, const char* src, fb_intp n_rows, fb_intp dst_row,
                        fb_intp src_row, fb_intp width, fb_intp count,
                        const unsigned char* masks, int n_masks) noexcept
    void fb_repeat_short_rows(char* dst, const char* src, fb_intp n_rows, fb_intp dst_row,
                              fb_intp src_row, fb_intp width, fb_intp count,
                              const unsigned char* masks, int n_masks) noexcept
    void fb_repeat_packed_items(char* dst, const char* src, fb_intp n, fb_intp width,
                                fb_intp count, int avx2) noexcept
    void fb_repeat_packed_items_wide(char* dst, const char* src, fb_intp n, fb_intp width,
                                     fb_intp count) noexcept
    void fb_repeat_item_rows(char* dst, const char* src, fb_intp n_rows, fb_intp dst_row,
                             fb_intp src_row, fb_intp width, fb_intp count) noexcept
    void fb_repeat_period_rows(char* dst, const char* src, fb_intp n_rows, fb_intp dst_row,
                               fb_intp src_row, fb_intp width, fb_intp count) noexcept


cdef extern from "src/shuffle.h" nogil:
    int fb_periodic_has(int piece_bytes, int period, int windows)
    void fb_shuffle_pieces(char* dst, const char* src, fb_intp n_pieces, fb_intp last_start,
                           const unsigned char* n_windows, const fb_intp* window_offset,
                           const unsigned char* window_mask, int max_windows, int uniform,
                           int period, fb_intp period_step, fb_intp segment_pieces,
                           fb_intp n_segments, fb_intp segment_step,
                           fb_intp last_segment_pieces, fb_intp lead_rounds,
                           const fb_intp* lead_offset, const unsigned char* lead_mask) noexcept
    void fb_shuffle_wide(char* dst, const char* src, fb_intp n_pieces, fb_intp advance,
                         fb_intp last_start, const unsigned char* n_windows,
                         const fb_intp* window_offset, const unsigned char* window_mask,
                         int max_windows, int uniform, int period, fb_intp period_step,
                         fb_intp segment_pieces, fb_intp n_segments, fb_intp segment_step,
                         fb_intp last_segment_pieces, fb_intp lead_rounds,
                         const fb_intp* lead_offset, const unsigned char* lead_mask) noexcept


cdef extern from "src/transpose.h" nogil:
    void fb_transpose_rows(char* dst, const char* src, fb_intp n_rows, fb_intp n_items,
                           const fb_intp* item_offset, const fb_intp* row_offset,
                           fb_intp width) noexcept
    void fb_transpose_runs(char* dst, const char* src, fb_intp n_rows, fb_intp n_items,
                           const fb_intp* item_offset, fb_intp row_bytes, fb_intp width,
                           fb_intp ahead) noexcept
    void fb_prefetch_run(const char* p, fb_intp n) noexcept


cdef extern from "src/lanes.h" nogil:
    enum: FB_LANES_MAX
    ctypedef struct FbLaneRows:
        fb_intp n_groups, dst_group, src_group
        fb_intp n_in, dst_in, src_in
    ctypedef void (*FbLanesRows)(char* dst, const char* src, const FbLaneRows* rows, fb_intp n,
                                 int L, const fb_intp* lane, const unsigned char* masks,
                                 int interleave, int width) noexcept nogil
    FbLanesRows fb_lanes_rows_for(int L, int width, int interleave, int line_split,
                                  const fb_intp* lane) noexcept
    void fb_lanes_rows_wide(char* dst, const char* src, const FbLaneRows* rows, fb_intp n, int L,
                            const fb_intp* lane, int interleave, int width) noexcept


cdef extern from "src/stream.h" nogil:
    int FB_STREAM_BUILT
    int fb_stream_avx
    int fb_pages_resident(const char* low, const char* high) noexcept
    void fb_stream_copy(char* dst, const char* src, fb_intp n) noexcept
    void fb_stream_lines(char* dst, const char* src, fb_intp n) noexcept
    void fb_stream_fence() noexcept
    ctypedef struct FbHeldLine:
        char* dst
        fb_intp n
    void fb_stream_span(FbHeldLine* line, char* dst, const char* src, fb_intp n) noexcept
    void fb_release_line(FbHeldLine* line) noexcept


cdef extern from "src/team.h" nogil:
    ctypedef struct FbTeamSettings:
        long long team_late_ns
        long long team_cold_late_ns
        long long team_hot_ns
        int team_late_streak
        long long team_backoff_min_ns
        long long team_backoff_max_ns
        long long team_helper_delay_ns
        int adaptive_teams
    ctypedef struct FbTeamRun:
        long long start_ns
        int grows
        int hot
        long long caller_in_ns
        long long caller_done_ns
        fb_intp prompt_helpers
    ctypedef struct FbTeamState:
        int cap
        long long backoff_ns
        long long probe_in_ns
        long long runs
        long long late_runs
        long long probes
        int last_team
        long long last_wait_ns
        long long last_work_ns
    FbTeamSettings fb_team_settings
    int fb_team_size(int wanted) noexcept
    void fb_team_start(FbTeamRun* run, int team) noexcept
    void fb_team_caller_arrives(FbTeamRun* run) noexcept
    void fb_team_helper_arrives(int thread, int team) noexcept
    void fb_team_helper_took_first(FbTeamRun* run) noexcept
    void fb_team_caller_done(FbTeamRun* run) noexcept
    void fb_team_finish(const FbTeamRun* run, int team, int wanted) noexcept
    void fb_team_state(FbTeamState* state) noexcept
    void fb_team_reset() noexcept
    int fb_team_started_here() noexcept


cdef extern from "src/faults.h" nogil:
    int FB_FAULT_AHEAD_BUILT
    void fb_touch_for_write(const char* byte) noexcept
    fb_intp fb_take(fb_intp* counter) noexcept
    fb_intp fb_load(const fb_intp* counter) noexcept
    void fb_publish(fb_intp* counter, fb_intp value) noexcept
    void fb_spin_pause() noexcept


cdef extern from "src/vect_c_pixels.h" nogil:
    enum: FB_VECT_C_BS
    enum: FB_VECT_C_M
    int FB_VECT_C_PIXELS_BUILT
    const signed char fb_vect_c_row_planes[3][6]
    void fb_vect_c_pixels(char* depth, fb_intp plane_step, fb_intp depth_row_step,
                          char* space, fb_intp space_row_step, fb_intp rows, fb_intp out_w,
                          const unsigned char* idx, const unsigned long long* masks, int W,
                          int to_depth) noexcept


cdef extern from "src/convert.h" nogil:
    enum:
        FB_NUM_BOOL
        FB_NUM_F16
        FB_NUM_BF16
        FB_NUM_F32
        FB_NUM_F64
        FB_NUM_TYPES
        FB_AFFINE_NONE
        FB_AFFINE_VALUE
        FB_AFFINE_LINE
    ctypedef struct FbConvert:
        int src
        int dst
        int compute
        int scale
        int offset
        int simd
        int vbmi
        int bf16
    int fb_convert_compute(int src, int dst, int affine)
    ctypedef void (*FbConvertRun)(const FbConvert* cv, char* dst, fb_intp dst_step,
                                  const char* src, fb_intp n, const char* scale,
                                  const char* offset) noexcept nogil
    FbConvertRun fb_convert_run_for(const FbConvert* cv, fb_intp dst_step)
    void fb_convert_init()
    int fb_convert_lanes_runs(const FbConvert* cv, int lanes, int interleave)
    ctypedef void (*FbConvertLanes)(const FbConvert* cv, char* dst, const char* src,
                                    fb_intp plane_step, fb_intp n_pixels, int lanes,
                                    const float* s, const float* o, int bf16_type) noexcept nogil
    FbConvertLanes fb_convert_lanes_for(const FbConvert* cv, int lanes, int interleave,
                                        fb_intp n_pixels)
    void fb_convert_lanes(FbConvertLanes kernel, const FbConvert* cv, char* dst, const char* src,
                          fb_intp plane_step, fb_intp n_pixels, int lanes, const char* scale,
                          fb_intp scale_step, const char* offset, fb_intp offset_step)
