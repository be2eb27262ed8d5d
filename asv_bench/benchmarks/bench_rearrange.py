"""fb.rearrange and fb.repeat against einops on NumPy arrays and PyTorch CPU
tensors, and against the fastblock operator doing the same move, on the
patterns of ``speed_reports/patterns.py`` (SpaceToDepth, pixel shuffle, NCHW->NHWC,
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

from speed_reports import patterns  # noqa: E402  (common put the repository root on sys.path)

CASES = {case.label: case for case in patterns.CASES}
IMPLS = ["fastblock", "operator", "einops numpy", "einops torch"]


class Rearrange:
    param_names = ["pattern", "size", "impl"]
    # The smoke run (FASTBLOCK_ASV_QUICK) leaves out the 64 MiB results: the
    # same calls at 1 MiB show that every case runs, in a third of its 61 s.
    params = [list(CASES), [size for size in patterns.SIZES if not (QUICK and size == "64MiB")],
              IMPLS]
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
