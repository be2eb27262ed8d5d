"""The 64 MiB cases against their own limits (``speed_reports.peers.LIMIT_CASES``),
on two threads: SpaceToDepth and DepthToSpace move as many bytes as a copy,
so their limit is ``np.copyto`` of the result's bytes split over two
threads; Tile reads a fraction of what it writes, so its limit is a
write-only fill of its result.

- ``AgainstLimits.track_vs_limit``      ``out=`` over the limit, same run.
- ``AgainstLimits.track_new_vs_limit``  a new result each call over the limit
  (fresh pages included).
"""
import numpy as np

import fastblock as fb

from .common import QUICK, interleaved_medians

from speed_reports import peers  # noqa: E402  (common put the repository root on sys.path)

CASES = {peers.case_label(case, 0).split(" ->")[0]: case for case in peers.LIMIT_CASES}
THREADS = 2


class AgainstLimits:
    param_names = ["case"]
    params = [list(CASES)]
    timeout = 300.0

    def setup(self, name):
        case = CASES[name]
        if QUICK:
            # A smoke run checks that the figures can be computed, on a
            # result of a few KiB.
            case = case._replace(shape=case.shape[:-2] + (8, 8) if case.op != "tile"
                                 else tuple(min(e, 16) for e in case.shape))
        self.case = case
        self.x = peers.make_input(case)
        self.out = peers.run_fastblock(case, self.x, num_threads=THREADS)
        if not np.array_equal(self.out, peers.run_numpy(case, self.x)):
            raise AssertionError(f"fastblock differs from NumPy on {case}")
        _, self.limit = peers.limit(case, self.out.nbytes)

    def _over_limit(self, call) -> float:
        times = interleaved_medians({"call": call, "limit": self.limit})
        return times["call"] / times["limit"]

    def track_vs_limit(self, name):
        return self._over_limit(lambda: peers.run_fastblock(self.case, self.x, out=self.out,
                                                            num_threads=THREADS))

    track_vs_limit.unit = "time / limit's time"

    def track_new_vs_limit(self, name):
        return self._over_limit(lambda: peers.run_fastblock(self.case, self.x,
                                                            num_threads=THREADS))

    track_new_vs_limit.unit = "time / limit's time"
