"""Every engine setting (``_engine.SETTINGS``) governs what it says it does.

Each setting is changed through ``tune()`` and the plan, path or schedule it
governs is read back: plans with ``describe()``, the NCHW_VECT_C paths with
``vect_c_path()``, a copy's share-out among threads with ``describe()``'s
``num_threads``. The thread
policy's settings have their own tests (``test_thread_policy.py``). A
setting added to the table without a case here fails
``test_every_setting_has_a_case``.
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional

import numpy as np
import pytest

from fastblock import _engine

FEATURES = _engine.cpu_features()


def _transpose(shape, axes, width=1, fresh=False, num_threads=1):
    """describe() of a transpose of a C-order array of ``shape`` into a new
    C-order destination (touched first unless ``fresh``), on ``num_threads``."""
    dtype = {1: np.uint8, 2: np.uint16, 4: np.float32}[width]
    view = np.zeros(shape, dtype).transpose(axes)
    dst = np.empty(view.shape, dtype)
    if not fresh:
        dst[...] = 0
    return lambda: _engine.describe(view.shape, view.strides, dst.strides, width, dst,
                                    num_threads=num_threads)


def _every_other(rows, items):
    """describe() of the block kernel: rows of items two apart."""
    view = np.zeros((rows, 2 * items), np.uint8)[:, ::2]
    return lambda: _engine.describe(view.shape, view.strides, (items, 1), 1)


def _space_to_depth_3x3_channels_last(edge):
    """space_to_depth blocks_first channels_last uint8 C=1 bs=3: (bw, c)
    folds into 3-byte items."""
    space = np.zeros((1, 3 * edge, edge, 1), np.uint8)
    n, h, w, c = space.shape
    s = space.strides
    view = np.lib.stride_tricks.as_strided(space, (n, h // 3, w // 3, 3, 3, c),
                                           (s[0], 3 * s[1], 3 * s[2], s[1], s[2], s[3]))
    return lambda: _engine.describe(view.shape, view.strides,
                                    np.empty(view.shape, np.uint8).strides, 1)


def _vect_c(block_size, to_depth, channels=4, edge=60):
    """vect_c_path() of NCHW_VECT_C uint8 depth_first arrays."""
    space = np.zeros((1, channels // 4, edge, edge, 4), np.uint8)
    depth = np.zeros((1, channels * block_size ** 2 // 4, edge // block_size,
                      edge // block_size, 4), np.uint8)
    return lambda: _engine.vect_c_path(space, depth, block_size, to_depth)


def _tile_repeats(width, count):
    """describe() of 1000 packed ``width``-byte items each tiled ``count`` times."""
    x = np.zeros((1000, 1), f"V{width}")
    out = np.zeros((1000, count), f"V{width}")
    return lambda: _engine.describe(*_engine.tile_copy_axes(x, out, (1, count)), width,
                                    dst_array=out)


# Rows of space_to_depth depth_first channels_last C=3 bs=2 (252 KB):
# destination runs of 12-item pixels gathered from two source rows, longer
# than the gather table.
_LONG_RUNS = _transpose((30, 2, 700, 2, 3), (0, 2, 4, 1, 3))
# Its kernel blocks at 25 KB (3 x 2 items a block): whole runs gathered.
_SMALL_BLOCKS = _transpose((3, 2, 700, 2, 3), (0, 2, 4, 1, 3))
# space_to_depth depth_first channels_last C=3 bs=3 (324 KB): 27-item
# pixels, whose 64-byte shuffle pieces repeat each pixel.
_PIXEL_RUNS = _transpose((200, 3, 20, 3, 3), (0, 2, 4, 1, 3))
# A 6 MiB transpose into a destination never touched.
_FRESH = _transpose((2048, 1024, 3), (2, 0, 1), fresh=True)
_EVERY_OTHER = _every_other(1000, 500)
# The same fresh transpose and a 1 MiB one into touched memory, on two threads.
_FRESH_TWO = _transpose((2048, 1024, 3), (2, 0, 1), fresh=True, num_threads=2)
_TOUCHED_TWO = _transpose((512, 512, 4), (2, 0, 1), num_threads=2)
GATHER_MAX = _engine.thresholds()["gather_max_items"]


def _convert_hwc(edge):
    """describe_convert() of uint8 HWC to float32 CHW with a scale per channel."""
    x = np.zeros((edge, edge, 3), np.uint8)
    out = np.zeros((3, edge, edge), np.float32)
    steps = ((x.strides[2], x.strides[0], x.strides[1]), out.strides, (4, 0, 0), (0, 0, 0))
    return lambda: _engine.describe_convert(out.shape, steps, 1, 4, 1, 11, True, False)


def _convert_chw_to_hwc(edge):
    """describe_convert() of float32 CHW to uint8 HWC (the way back) by 255."""
    x = np.zeros((3, edge, edge), np.float32)
    out = np.zeros((edge, edge, 3), np.uint8)
    steps = ((x.strides[1], x.strides[2], x.strides[0]), out.strides, (0, 0, 0), (0, 0, 0))
    return lambda: _engine.describe_convert(out.shape, steps, 4, 1, 11, 1, True, False)


class Case(NamedTuple):
    read: Callable[[], object]          # the plan, path or schedule, as read now
    settings: dict                      # the change, from the defaults
    change: Callable[[object, object], bool]   # true of (before, after)
    needs: Optional[str] = None         # a cpu_features() key it needs
    base: dict = {}                     # settings both readings run under


def _moves(key, before, after):
    """The change of ``key`` from ``before`` to ``after``."""
    return lambda a, b: (a[key], b[key]) == (before, after)


def _drops(key):
    """``key`` positive before, 0 after."""
    return lambda a, b: a[key] > 0 == b[key]


def _is(before, after):
    return lambda a, b: (a, b) == (before, after)


CASES = {
    "simd": Case(_transpose((256, 256, 4), (2, 0, 1)), {"simd": False},
                 _moves("kernel", "lanes", "block"), "simd128"),
    "shuffles": Case(_LONG_RUNS, {"shuffles": False}, _drops("shuffled_pieces"), "simd128"),
    "shuffle_min_bytes": Case(_LONG_RUNS, {"shuffle_min_bytes": 1 << 40},
                              _drops("shuffled_pieces"), "simd128"),
    "wide_shuffles": Case(_LONG_RUNS, {"wide_shuffles": False},
                          _moves("shuffle_piece_bytes", 64, 16), "avx512_vbmi"),
    "shuffled_repeats": Case(_tile_repeats(3, 5), {"shuffled_repeats": False},
                             _moves("repeats", "shuffles", None), "simd128",
                             base={"wide_shuffles": False}),
    # Rows of 512 bytes: by 16-byte shuffles only with AVX2's 32-byte ones.
    "avx2_repeats": Case(_tile_repeats(8, 64), {"avx2_repeats": False},
                         _moves("repeats", "shuffles", None), "avx2",
                         base={"wide_shuffles": False}),
    "register_repeats": Case(_tile_repeats(40, 8), {"register_repeats": False},
                             _moves("repeats", "registers", None), "avx",
                             base={"wide_shuffles": False}),
    # Rows of 768 bytes: past fb_repeat_item_rows's, so memcpy doubling without periods.
    "period_repeats": Case(_tile_repeats(24, 32), {"period_repeats": False},
                           _moves("repeats", "periods", None), "avx2",
                           base={"wide_shuffles": False}),
    "line_splits": Case(_transpose((1, 64, 64, 64), (0, 3, 1, 2)), {"line_splits": False},
                        _moves("line_splits", True, False), "simd128"),
    "periodic_shuffles": Case(_PIXEL_RUNS, {"periodic_shuffles": False}, _drops("shuffle_period"),
                              "avx512_vbmi"),
    "long_shuffle_runs": Case(_LONG_RUNS, {"long_shuffle_runs": False},
                              lambda a, b: a["row_items"] > GATHER_MAX >= b["row_items"],
                              "avx512_vbmi"),
    "streaming": Case(_transpose((2048, 2048, 3), (2, 0, 1)), {"streaming": False},
                      _moves("streams", True, False), "streaming_stores"),
    "stream_min_bytes": Case(_transpose((1024, 1024, 3), (2, 0, 1)), {"stream_min_bytes": 0},
                             _moves("streams", False, True), "streaming_stores"),
    "wide_streams": Case(_transpose((1024, 1024, 3), (2, 0, 1)), {"wide_streams": False},
                         _moves("stream_store_bytes", 32, 16), "avx", base={"stream_min_bytes": 0}),
    "fault_ahead": Case(_FRESH, {"fault_ahead": False}, _moves("faults_ahead", True, False),
                        "fault_ahead"),
    "fault_ahead_min_bytes": Case(_FRESH, {"fault_ahead_min_bytes": 1 << 40},
                                  _moves("faults_ahead", True, False), "fault_ahead"),
    "block_bytes": Case(_EVERY_OTHER, {"block_bytes": 4096}, _moves("row_items", 32768, 4096)),
    "min_block_bytes": Case(_EVERY_OTHER, {"min_block_bytes": 512}, _moves("row_items", 2048, 1024),
                            base={"block_bytes": 1024}),
    "small_block_bytes": Case(_SMALL_BLOCKS, {"small_block_bytes": 0},
                              _moves("kernel", "gather", "block")),
    "weave_min_run": Case(_SMALL_BLOCKS, {"weave_min_run": 1}, _moves("kernel", "gather", "block")),
    "unfold_short_min_bytes": Case(_space_to_depth_3x3_channels_last(600),
                                   {"unfold_short_min_bytes": 1 << 40}, _moves("width", 1, 3),
                                   "simd128"),
    "prefetch": Case(_transpose((2048, 2048), (1, 0), 4), {"prefetch": False},
                     _drops("source_ahead")),
    "parallel_min_bytes": Case(_transpose((100, 100, 4), (2, 0, 1), num_threads=2),
                               {"parallel_min_bytes": 0}, _moves("threads", 1, 2)),
    "chunks_per_thread": Case(_TOUCHED_TWO, {"chunks_per_thread": 1}, _moves("units", 8, 2)),
    "fault_unit_bytes": Case(_FRESH_TWO, {"fault_unit_bytes": 4 << 20}, _moves("units", 12, 8),
                             "fault_ahead"),
    "fault_lead_bytes": Case(_FRESH_TWO, {"fault_lead_bytes": 0}, _moves("lead_units", 8, 2),
                             "fault_ahead"),
    "caller_faults": Case(_FRESH_TWO, {"caller_faults": False},
                          _moves("caller_faults", True, False), "fault_ahead"),
    "vect_c_pixels": Case(_vect_c(3, True), {"vect_c_pixels": False}, _is("pixels", "planes"),
                          "vect_c_pixels"),
    "vect_c_rows_min_bytes": Case(_vect_c(5, False), {"vect_c_rows_min_bytes": 0},
                                  _is("planes", "rows")),
    "convert_simd": Case(_convert_hwc(64), {"convert_simd": False}, _moves("simd", True, False),
                         "convert_simd"),
    "convert_avx512": Case(_convert_chw_to_hwc(64), {"convert_avx512": False},
                           _moves("vbmi", True, False), "avx512_vbmi"),
    "convert_tile_bytes": Case(_convert_hwc(64), {"convert_tile_bytes": 3 * 64 * 4},
                               _moves("tile_items", 3 * 1024, 3 * 64),
                               base={"convert_lanes_run_bytes": 1}),
    "convert_lanes_run_bytes": Case(_convert_hwc(224), {"convert_lanes_run_bytes": 64},
                                    _moves("tile_items", 3 * 1792, 3 * 1024), "convert_simd"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_setting_changes_what_it_governs(name):
    case = CASES[name]
    if case.needs is not None and not FEATURES[case.needs]:
        pytest.skip(f"this CPU or build lacks {case.needs}")
    assert name in case.settings
    with _engine.tune(**dict(_engine.default_tuning(), **case.base)):
        before = case.read()
        with _engine.tune(**case.settings):
            after = case.read()
    assert case.change(before, after), (before, after)


def test_every_setting_has_a_case():
    # The thread policy's settings are exercised by test_thread_policy.py.
    policy = {"adaptive_teams", "team_late_ns", "team_cold_late_ns", "team_hot_ns",
              "team_late_streak", "team_backoff_min_ns", "team_backoff_max_ns",
              "team_helper_delay_ns"}
    names = {setting.name for setting in _engine.SETTINGS}
    assert names == set(_engine.default_tuning())
    assert names - policy == set(CASES)


def test_unknown_settings_are_refused_by_name():
    with pytest.raises(TypeError, match="unknown engine setting.*'no_such_setting'"):
        _engine.tune(no_such_setting=1)


def test_settings_are_kept_in_their_range():
    # A unit of 0 bytes would never end; a back-off's longest is its shortest at least.
    before = _engine.current_tuning()
    with _engine.tune(fault_unit_bytes=0, team_backoff_min_ns=5000, team_backoff_max_ns=10):
        now = _engine.current_tuning()
        assert now["fault_unit_bytes"] == 1
        assert now["team_backoff_max_ns"] == 5000
    assert _engine.current_tuning() == before


def test_thresholds_follow_the_settings_in_force():
    with _engine.tune(block_bytes=4096, stream_min_bytes=1 << 20):
        sizes = _engine.thresholds()
        assert (sizes["block_bytes"], sizes["stream_min_bytes"]) == (4096, 1 << 20)
    assert _engine.thresholds()["block_bytes"] == _engine.default_tuning()["block_bytes"]
    assert set(_engine.LIMITS) <= set(_engine.thresholds())


def test_settings_the_build_lacks_stay_off():
    features = _engine.cpu_features()
    with _engine.tune(streaming=True, fault_ahead=True, vect_c_pixels=True, wide_streams=True):
        now = _engine.current_tuning()
        assert now["streaming"] == features["streaming_stores"]
        assert now["fault_ahead"] == features["fault_ahead"]
        assert now["wide_streams"] == features["avx"]


@pytest.mark.parametrize("settings", [{"block_bytes": "large"}, {"team_late_ns": None},
                                      {"block_bytes": 4096, "team_hot_ns": "x"}])
def test_settings_of_the_wrong_type_change_nothing(settings):
    before = _engine.current_tuning()
    with pytest.raises(TypeError):
        _engine.tune(**settings)
    assert _engine.current_tuning() == before
