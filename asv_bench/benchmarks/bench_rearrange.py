"""fb.rearrange and fb.repeat against einops on NumPy arrays and PyTorch CPU
tensors, and against the fastblock operator doing the same move, on the
patterns of ``speed/patterns.py`` (SpaceToDepth, pixel shuffle, NCHW->NHWC,
uint8 patchify, a 5-D SpaceToDepth, two repeats), at about 64 MiB and 1 MiB
of result and a tiny call. ``impl`` is the call:

- ``fastblock``: ``fb.rearrange`` / ``fb.repeat``;
- ``operator``: the fastblock operator doing the same move (skipped where
  none does);
- ``einops numpy``, ``einops torch``: einops on a NumPy array / a PyTorch
  tensor, made contiguous (skipped where not installed).

``time_call`` times one call (a new result each time); ``track_ratio`` its
median time over the copy ceiling (a one-thread ``np.copyto`` of the
result's bytes between preallocated arrays), interleaved in one process.
"""
from .common import QUICK

from speed import patterns  # noqa: E402  (common put asv_bench/ on sys.path)

CASES = {case.label: case for case in patterns.CASES}
IMPLS = ["fastblock", "operator", "einops numpy", "einops torch"]


class Rearrange:
    param_names = ["pattern", "size", "impl"]
    params = [list(CASES), list(patterns.SIZES), IMPLS]
    timeout = 600.0

    def setup(self, label, size, impl):
        self.case = CASES[label]
        functions = patterns.calls(self.case, patterns.make_input(self.case, size))
        if impl not in functions:
            raise NotImplementedError(f"no {impl} call for {label} here")
        self.call = functions[impl]

    def time_call(self, label, size, impl):
        self.call()

    def track_ratio(self, label, size, impl):
        return patterns.ratios(self.case, size, rounds=1 if QUICK else 7, names=(impl,))[impl]

    track_ratio.unit = "x np.copyto"
