"""Float casts (docs/convert.md, the float rule): a 128 x 128 x 3 image of
each source dtype into each result dtype, without scale or offset, one
thread, into a preallocated result: through the stage (transposed to
channels first) and in place (the layout kept), the result checked against
the rule (``fastblock._reference.converted_ref``) first.

- ``Casts.track_vs_limit``: the call's time over the limit's in the same
  run (``np.copyto`` of the result's bytes between preallocated arrays).

The pairs are those the rule's kernels treat apart: bfloat16 from float64
and from 32/64-bit integers (one rounding, not through float32), float16
and bfloat16 loads (their NaNs quieted), float16 from float64.
"""
import numpy as np

from .common import interleaved_medians, timing

from fastblock._reference import converted_ref  # noqa: E402

PAIRS = ["f8-bf16", "i8-bf16", "i4-bf16", "f4-bf16", "bf16-f4", "f2-f4", "f4-f2", "bf16-f2",
         "f2-bf16", "f8-f2"]
LAYOUTS = ["stage", "in_place"]


def _dtype(name: str) -> np.dtype:
    if name == "bf16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


class Casts:
    param_names = ["pair", "layout"]
    params = [PAIRS, LAYOUTS]
    timeout = 120.0

    def setup(self, pair, layout):
        import fastblock as fb
        try:
            source, result = (_dtype(name) for name in pair.split("-"))
        except ImportError:
            raise NotImplementedError("ml_dtypes is not installed")
        rng = np.random.default_rng(0)
        values = rng.standard_normal((128, 128, 3)) * 2.0 ** rng.integers(-10, 10, (128, 128, 3))
        if source.kind == "i":          # integers over the whole range of 32 bits
            values = np.clip(values * 2.0 ** 20, -2.0 ** 31, 2.0 ** 31 - 1)
        x = values.astype(source)
        axes = (2, 0, 1) if layout == "stage" else (0, 1, 2)
        out = np.empty([x.shape[a] for a in axes], result)
        fb.transpose(x, axes, out=out, dtype=result, num_threads=1)
        want = np.ascontiguousarray(converted_ref(np.transpose(x, axes), result))
        if not np.array_equal(out.view(np.uint8), want.view(np.uint8)):
            raise AssertionError(f"{pair} {layout}: not the float rule's bytes")
        self.call = lambda: fb.transpose(x, axes, out=out, dtype=result, num_threads=1)
        self.limit = timing.copy_ceiling(out.nbytes)

    def track_vs_limit(self, pair, layout):
        times = interleaved_medians({"call": self.call, "limit": self.limit})
        return times["call"] / times["limit"]

    track_vs_limit.unit = "time / limit's time"
