"""Lane transposes of 2 to 4 lanes, every item width, at the run lengths
where the kernel switches (a register of pixels, a part more, the last
step short): on aarch64 NEON's structured loads and stores
(ld2/ld3/ld4, st2/st3/st4: a register of 16 / width pixels a step, the
last step ending at the run's end over pixels already moved, runs shorter
than a register item by item); on x86 the 16-byte register kernel.

Pixels to planes (split) and planes to pixels (interleave), one run a row
(``rows`` rows), sources and results against inaccessible pages at either
end, every byte of the result's memory compared (nothing written past
the view)."""
import sys

import numpy as np
import pytest

import fastblock as fb
from fastblock import _engine

from guarded import Guarded

pytestmark = [
    pytest.mark.skipif(not _engine.cpu_features()["simd128"],
                       reason="lane transposes need 16-byte kernels (SSSE3, NEON)"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mprotect through ctypes"),
]

WIDTHS = [1, 2, 4, 8]


def _pixels_a_register(width):
    return 16 // width


def _runs(width):
    """Pixels a run: 1, under a register, one, one and one more, a register
    and a part, several."""
    g = _pixels_a_register(width)
    return sorted({1, g - 1, g, g + 1, 2 * g + 3, 7 * g + 5} - {0})


CASES = [(lanes, width, n) for lanes in (2, 3, 4) for width in WIDTHS for n in _runs(width)]


def _guarded_copy(values, at_end):
    memory = Guarded(values.nbytes, at_end)
    x = memory.array(values.shape, values.dtype)
    x[...] = values
    return x


@pytest.mark.parametrize("at_end", [True, False], ids=["guard after", "guard before"])
@pytest.mark.parametrize("split", [True, False], ids=["split", "interleave"])
@pytest.mark.parametrize("lanes, width, n", CASES)
def test_few_lanes_write_exactly_the_result(lanes, width, n, split, at_end):
    rows = 3
    dtype = np.dtype(f"u{width}")
    rng = np.random.default_rng(1000 * lanes + 10 * width + n)
    pixels = rng.integers(0, 1 << (8 * width - 1), (rows, n, lanes), dtype=np.uint64).astype(dtype)
    if split:
        values, axes = pixels, (0, 2, 1)                      # [rows, n, L] -> [rows, L, n]
    else:
        values, axes = np.ascontiguousarray(pixels.transpose(0, 2, 1)), (0, 2, 1)
    expected = np.ascontiguousarray(values.transpose(axes))
    x = _guarded_copy(values, at_end)
    result = Guarded(expected.nbytes, not at_end)
    out = result.array(expected.shape, dtype)
    out[...] = 0
    view = np.transpose(x, axes)
    plan = _engine.describe(view.shape, view.strides, out.strides, width, dst_array=out)
    assert fb.transpose(x, axes, out=out, num_threads=1) is out
    assert result.bytes.tobytes() == expected.tobytes()
    if plan["kernel"] == "lanes":
        assert plan["simd128"] in ("neon", "ssse3"), plan
    # The longest runs take the lane kernel with their own lanes on every
    # CPU that has one (shorter ones may be planned otherwise: a register
    # or two of pixels, or rows merged into one run).
    if n == max(_runs(width)):
        assert plan["kernel"] == "lanes" and plan["lanes"] == lanes, plan
