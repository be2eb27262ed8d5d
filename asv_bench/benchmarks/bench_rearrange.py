"""fb.rearrange and fb.repeat against einops on NumPy arrays and PyTorch CPU
tensors, and against the fastblock operator doing the same move, on the
patterns of ``speed/patterns.py`` (SpaceToDepth, pixel shuffle, NCHW->NHWC,
uint8 patchify, a 5-D SpaceToDepth, two repeats), at about 64 MiB and 1 MiB
of result and a tiny call.

- ``time_*``: one call, a new result each time.
- ``track_ratio_*``: its median time over the copy ceiling (a one-thread
  ``np.copyto`` of the result's bytes between preallocated arrays), timed
  interleaved in the same process. A call that is not available here (no
  einops, no torch, no equivalent operator) is skipped.
"""
from .common import QUICK  # noqa: F401  (puts asv_bench/ on sys.path for speed/)

from speed import patterns  # noqa: E402

CASES = {case.label: case for case in patterns.CASES}


class Rearrange:
    param_names = ["pattern", "size"]
    params = [list(CASES), list(patterns.SIZES)]
    timeout = 600.0

    def setup(self, label, size):
        self.case = CASES[label]
        self.x = patterns.make_input(self.case, size)
        self.functions = patterns.calls(self.case, self.x)
        self.size = size
        self.ratios = None

    def _ratio(self, name):
        if name not in self.functions:
            raise NotImplementedError(f"no {name} here")
        if self.ratios is None:
            self.ratios = patterns.ratios(self.case, self.size, rounds=1 if QUICK else 7)
        return self.ratios[name]

    def time_fastblock(self, label, size):
        self.functions["fastblock"]()

    def time_einops_numpy(self, label, size):
        if "einops numpy" not in self.functions:
            raise NotImplementedError("einops is not installed")
        self.functions["einops numpy"]()

    def track_ratio_fastblock(self, label, size):
        return self._ratio("fastblock")

    def track_ratio_operator(self, label, size):
        return self._ratio("operator")

    def track_ratio_einops_numpy(self, label, size):
        return self._ratio("einops numpy")

    def track_ratio_einops_torch(self, label, size):
        return self._ratio("einops torch")

    for _method in (track_ratio_fastblock, track_ratio_operator, track_ratio_einops_numpy,
                    track_ratio_einops_torch):
        _method.unit = "x np.copyto"
    del _method
