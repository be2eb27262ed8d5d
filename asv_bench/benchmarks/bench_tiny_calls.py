"""The tiny call of every front door: a float32 result of 64 or 256 bytes,
a new array each call, the operators and calls of ``speed_reports/sizes.py``.

Such a call is all front door (argument handling, the fast path's cache
lookup, the allocation): ``track_vs_copy`` is its median time over
``x.copy()`` of the same input (the bound is 3), ``track_vs_copyto`` over
``np.copyto`` of the result's bytes between preallocated arrays, each
interleaved with the call in one process.
"""
import numpy as np

from .common import interleaved_medians

from speed_reports import sizes  # noqa: E402  (common put the repository root on sys.path)
from speed_reports.source import timing  # noqa: E402

OPERATORS = {op.name: op for op in sizes.OPERATORS}


class TinyCall:
    param_names = ["operator", "size"]
    params = [list(OPERATORS), [64, 256]]

    def setup(self, name, nbytes):
        op = OPERATORS[name]
        shape = op.shape(nbytes // 4)
        self.x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
        self.call = lambda: op.fastblock(self.x, None)
        result = self.call()
        if not np.array_equal(result, op.numpy(self.x)):
            raise AssertionError(f"{name} differs from NumPy's way")
        self.nbytes = result.nbytes

    def time_call(self, name, nbytes):
        self.call()

    def track_vs_copy(self, name, nbytes):
        times = interleaved_medians({"call": self.call, "copy": self.x.copy}, rounds=9)
        return times["call"] / times["copy"]

    track_vs_copy.unit = "time / x.copy() time"

    def track_vs_copyto(self, name, nbytes):
        times = interleaved_medians({"call": self.call, "copy": timing.copy_ceiling(self.nbytes)},
                                    rounds=9)
        return times["call"] / times["copy"]

    track_vs_copyto.unit = "time / np.copyto time"
