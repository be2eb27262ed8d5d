"""fastblock on PyTorch CPU tensors (through DLPack, tensor in and tensor
out) against PyTorch's own ``pixel_shuffle``, as ratios to the copy ceiling
(``np.copyto`` of the same bytes between preallocated arrays). Skipped
where PyTorch is not installed.

- ``TorchPixelShuffle.track_ratio_*``: float32 ``[N, 4C, H, W]`` ->
  ``[N, C, 2H, 2W]`` (``fb.depth_to_space(t, 2, "CRD")``, the same
  operation), new results, at 1 MiB and 64 MiB, on every core.
"""
import numpy as np

from .common import interleaved_medians

try:
    import torch
except ImportError:
    torch = None

import fastblock as fb

SHAPES = {"1MiB": (1, 64, 64, 64), "64MiB": (8, 256, 128, 64)}


class TorchPixelShuffle:
    param_names = ["size"]
    params = [list(SHAPES)]
    timeout = 300.0

    def setup(self, size):
        if torch is None:
            raise NotImplementedError("PyTorch is not installed")
        self.t = torch.ones(SHAPES[size], dtype=torch.float32)
        reference = torch.nn.functional.pixel_shuffle(self.t, 2)
        got = fb.depth_to_space(self.t, 2, "CRD")
        if not (isinstance(got, torch.Tensor) and torch.equal(got, reference)):
            raise AssertionError("fastblock and torch differ")
        nbytes = self.t.numel() * 4
        self.src = np.ones(nbytes, np.uint8)
        self.dst = np.ones(nbytes, np.uint8)
        self.times = None

    def _times(self):
        if self.times is None:
            self.times = interleaved_medians({
                "copy": lambda: np.copyto(self.dst, self.src),
                "fastblock": lambda: fb.depth_to_space(self.t, 2, "CRD"),
                "torch": lambda: torch.nn.functional.pixel_shuffle(self.t, 2),
            })
        return self.times

    def time_fastblock(self, size):
        fb.depth_to_space(self.t, 2, "CRD")

    def time_torch(self, size):
        torch.nn.functional.pixel_shuffle(self.t, 2)

    def track_ratio_fastblock(self, size):
        t = self._times()
        return t["fastblock"] / t["copy"]

    def track_ratio_torch(self, size):
        t = self._times()
        return t["torch"] / t["copy"]

    track_ratio_fastblock.unit = "x np.copyto"
    track_ratio_torch.unit = "x np.copyto"
