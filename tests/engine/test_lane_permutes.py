"""Lane transposes by 64-byte permutes (``fb_lanes_rows_wide`` in
``fastblock/_engine/src/lanes_wide.c``, with AVX-512 VBMI): 2 to 4 lanes of 1- or
2-byte items, 3 or 4 of 4-byte items, as channels-last pixels become planes
(a split) and back (an interleave), RGB uint8 images the common case. Rows
of every length around a step (64 bytes of each lane) run whole steps, then
the last pixels under byte masks; sources and results end where readable
memory ends, and every byte is compared with NumPy's transpose. The cases
are a seeded draw of the edges (``draws.drawn``): every value on every
run, every row length of each item size both with the permutes and on the
16-byte kernel (``wide_shuffles`` off), the rest sampled."""
import sys

import numpy as np
import pytest

import fastblock as fb
from draws import drawn
from fastblock import _engine
from test_vect_c_pixels import _guarded

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="mprotect through ctypes")


def _placed(values):
    """A copy of ``values`` whose last byte is the last readable one."""
    raw, mapping, _ = _guarded(values.nbytes)
    array = raw.view(values.dtype).reshape(values.shape)
    array[...] = values
    return array, mapping


@drawn(150, to_planes=[True, False], dtype=[np.uint8, np.int16, np.int32], channels=[2, 3, 4],
       width=[1, 5, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 300], num_threads=[1, 2],
       permutes=[True, False],
       cover=[("width", "dtype", "permutes"), ("dtype", "channels", "permutes"),
              ("to_planes", "permutes"), ("num_threads",)])
def test_pixels_to_planes_and_back(to_planes, dtype, channels, width, num_threads, permutes):
    height = 7
    values = np.random.default_rng(width * channels).integers(
        0, 1 << 31, (height, width, channels)).astype(dtype)
    if to_planes:
        x, source_map = _placed(values)
        axes, expected = (2, 0, 1), values.transpose(2, 0, 1)
    else:
        x, source_map = _placed(np.ascontiguousarray(values.transpose(2, 0, 1)))
        axes, expected = (1, 2, 0), values
    out, out_map = _placed(np.zeros(expected.shape, dtype))
    view = x.transpose(axes)
    with _engine.tune(wide_shuffles=permutes):
        plan = _engine.describe(view.shape, view.strides, out.strides, x.itemsize, dst_array=out)
        assert fb.transpose(x, axes, out=out, num_threads=num_threads) is out
    # Rows of at least one step (64 bytes of a lane) go by the permutes;
    # shorter ones stay with the 16-byte kernel (all masked tails), and so
    # do two lanes of 4-byte items (their own pair kernel).
    by_permutes = permutes and _engine.cpu_features()["avx512_vbmi"] and (
        x.itemsize <= 2 or channels > 2)
    if plan["kernel"] == "lanes":
        assert plan["lane_permutes"] == (by_permutes
                                         and plan["row_items"] * x.itemsize >= 64), plan
    if width * x.itemsize >= 64 and by_permutes:
        assert plan["lane_permutes"], plan
    assert out.tobytes() == np.ascontiguousarray(expected).tobytes()
    del source_map, out_map
