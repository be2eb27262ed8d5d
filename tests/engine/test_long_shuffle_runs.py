"""Long gathered runs of repeated items (``lengthen_split_parts`` in
``fastblock/_engine/plan/gather.pxi``, ``plan_run_program`` in
``fastblock/_engine/plan/shuffle.pxi``): Tile of short pixels along the last axis
([N, W, C] by (1, 1, r)), whose destination pixels of C * r items read C.

- A run reads at most 4 KiB of source and writes at most a block, so these
  runs are far longer than the 512-item table.
- Where the table's pixels span less source than a 64-byte window (3-byte
  pixels: 21 of them, 63 bytes), the run's 64-byte program is planned from
  them reading on into the rest of the run: its first periods run by the
  periodic kernel from the lead's own masks, and the rest's windows may
  reach back into the lead's source.

Sources sit against inaccessible pages on both sides (a source read
backwards is a view with a negative step), results end where readable
memory ends, and every byte is compared with ``np.tile``. The cases are a
seeded draw of the edges (``draws.drawn``): every pixel and every run
length with every shuffle setting this CPU runs, and (with AVX-512 VBMI)
a run of 64-byte pieces planned from a short table, on every run; the
rest sampled.
"""
import sys

import numpy as np
import pytest

import fastblock as fb
from draws import drawn
from fastblock import _engine
from guarded import Guarded

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="mprotect through ctypes")

# (name, tune settings): 64-byte pieces by the periodic kernel, 64-byte by
# the table loop only, 16-byte pieces.
SHUFFLES = [("64-byte periodic", dict(wide_shuffles=True, periodic_shuffles=True)),
            ("64-byte table", dict(wide_shuffles=True, periodic_shuffles=False)),
            ("16-byte periodic", dict(wide_shuffles=False, periodic_shuffles=True))]
# The settings this CPU runs: 64-byte pieces need AVX-512 VBMI (the 16-byte
# shuffles run instead).
RUNNABLE = [name for name, settings in SHUFFLES
            if not settings["wide_shuffles"] or _engine.cpu_features()["avx512_vbmi"]]


def _source(values: np.ndarray, backwards: bool, at_end: bool):
    """``values`` in guarded memory (kept alive by the returned holder),
    read forwards or, as a view with a negative step along its pixels,
    backwards."""
    holder = Guarded(values.nbytes, at_end)
    stored = holder.array(values.shape, values.dtype)
    stored[...] = values[:, ::-1] if backwards else values
    return (stored[:, ::-1] if backwards else stored), holder


def _plan(x, out, repeats, settings) -> dict:
    with _engine.tune(shuffle_min_bytes=0, **settings):
        return _engine.describe(*_engine.tile_copy_axes(x, out, repeats), x.itemsize,
                                dst_array=out)


# (dtype, channels, repeats): pixels of 3 bytes 8 or 16 times, 5 bytes 8
# times and 6 bytes 8 times span less source in the table (21, 10, 12 and
# 21 pixels: 63, 30, 60 and 126 / 2 items) than a 64-byte window holds;
# the others are ordinary long runs (12 bytes 3 times: pieces that advance
# by whole pixels).
PIXELS = [(np.uint8, 3, 8), (np.uint8, 3, 16), (np.uint8, 5, 8), (np.uint16, 3, 8),
          (np.uint8, 3, 12), (np.uint8, 3, 5), (np.uint16, 3, 4), (np.uint8, 5, 3)]
SHORT_TABLE = PIXELS[:4]


def _short_table_lead(pixel, rows, backwards, shuffles) -> bool:
    """Whether a case's runs take 64-byte pieces though the table's pixels
    span less than one. (Read backwards, a window from a piece's lowest
    item reaches up past the run's first pixel, and none repeats.)"""
    return shuffles == "64-byte periodic" and pixel in SHORT_TABLE and rows > 3 and not backwards


@pytest.mark.skipif(not _engine.cpu_features()["simd128"], reason="byte shuffles need 16-byte kernels (SSSE3, NEON)")
@drawn(40, {"dtype, channels, repeats": PIXELS,
            "rows, pixels": [(64, 200), (16, 1365), (16, 3000), (16, 4099), (3, 4099)]},
       backwards=[False, True], shuffles=RUNNABLE,
       cover=[("dtype, channels, repeats", "shuffles"), ("rows, pixels", "backwards"),
              ("rows, pixels", "shuffles"), ("backwards", "shuffles")],
       path=lambda pixel, size, backwards, shuffles: _short_table_lead(pixel, size[0], backwards,
                                                                       shuffles))
def test_tile_runs_of_short_pixels(dtype, channels, repeats, rows, pixels, backwards, shuffles):
    settings = dict(SHUFFLES)[shuffles]
    values = np.random.default_rng(pixels * channels).integers(
        0, 1 << 16, (rows, pixels, channels)).astype(dtype)
    expected = np.tile(values, (1, 1, repeats))
    pixel_items = channels * repeats
    for at_end in (False, True):
        x, source = _source(values, backwards, at_end)
        result = Guarded(expected.nbytes, True)
        out = result.array(expected.shape, dtype)
        plan = _plan(x, out, (1, 1, repeats), settings)
        if _short_table_lead((dtype, channels, repeats), rows, backwards, shuffles):
            assert plan["kernel"] == "gather" and plan["shuffle_piece_bytes"] == 64, plan
            assert plan["row_items"] > 512 and plan["shuffle_period"] > 0, plan
        if plan["kernel"] == "gather" and plan["row_items"] > 512:
            # Runs write at most a block (32 KiB) and read at most 4 KiB.
            assert plan["row_items"] * values.itemsize <= 32 * 1024, plan
            assert plan["row_items"] // pixel_items * channels * values.itemsize <= 4096, plan
            if shuffles.endswith("periodic"):
                # The lead covers all but the run's last pieces (at most
                # the 1088 bytes of the rest).
                assert plan["periodic_pieces"] >= plan["shuffled_pieces"] - 1088 // \
                    plan["shuffle_piece_advance"] - 1, plan
        for num_threads in (1, 3):
            out[...] = 0
            with _engine.tune(shuffle_min_bytes=0, **settings):
                assert fb.tile(x, (1, 1, repeats), out=out, num_threads=num_threads) is out
            assert out.tobytes() == expected.tobytes()
        del source, result


@pytest.mark.parametrize("pixels", [1000, 5000])
def test_long_runs_of_items_that_do_not_repeat_keep_their_reach(pixels):
    # space_to_depth depth_first channels_last C 3 bs 2 of bytes: a 12-item
    # pixel reads 12 distinct bytes, so its runs still reach 4 KiB of
    # destination (the block's rows share source lines in L1).
    x = np.arange(2 * 2 * pixels * 2 * 3, dtype=np.uint8).reshape(2, 2, pixels, 2, 3)
    view = np.transpose(x, (0, 2, 4, 1, 3))
    out = np.empty(view.shape, np.uint8)
    with _engine.tune(shuffle_min_bytes=0):
        plan = _engine.describe(view.shape, view.strides, out.strides, 1, dst_array=out)
        assert plan["kernel"] == "gather"
        if plan["shuffle_period"]:
            assert 512 < plan["row_items"] <= 4096, plan
        fb.transpose(x, (0, 2, 4, 1, 3), out=out)
    assert np.array_equal(out, np.transpose(x, (0, 2, 4, 1, 3)))
