"""Model-input preprocessing in one pass (``speed_reports/preprocess.py``, docs/convert.md):
the layout move, the dtype conversion and the per-channel scale and offset
of each case of ``speed_reports.preprocess.CASES`` in one fastblock call into a
preallocated result (``fb.transpose(img, (2, 0, 1), dtype=np.float32,
scale=s, offset=o, out=out)``; the batches ``fb.collate``), its result
checked against the contract's NumPy expression first.

- ``Preprocess.time_one_pass``   seconds per call (``out=``), 1 and all threads;
- ``Preprocess.track_vs_limit``  that call's time over the limit's in the same
  run: ``np.copyto`` of the result's bytes between preallocated arrays, one
  thread;
- ``PreprocessLimit.time_limit`` the limit alone, seconds per copy (run
  whatever the fastblock).

A fastblock without ``dtype=`` (or without ``fb.collate``, for the batches)
skips its ``Preprocess`` cases. FASTBLOCK_ASV_QUICK skips the 8x1080x1920 video case (a
100 MB result); the other cases keep their sizes (at most 38 MB).
``python -m speed_reports --preprocess`` compares the same cases with
NumPy, OpenCV and PyTorch.
"""
import functools

from .common import QUICK, THREADS, interleaved_medians, thread_count, timing

from speed_reports import preprocess  # noqa: E402  (common put the repository root on sys.path)

CASES = [case.name for case in preprocess.CASES]
# Cases too large for a smoke run.
SKIPPED_WHEN_QUICK = ("video",)


@functools.lru_cache(maxsize=2)
def _prepared(name: str, threads: int) -> preprocess.Prepared:
    """The case's fastblock call (checked) and its limit; cached, as asv
    runs setup before every sample."""
    return preprocess.prepare(preprocess.CASE_BY_NAME[name], threads, ways=(preprocess.FASTBLOCK,))


def _calls(name: str, threads: int):
    if QUICK and name in SKIPPED_WHEN_QUICK:
        raise NotImplementedError(f"{name}: skipped under FASTBLOCK_ASV_QUICK")
    prepared = _prepared(name, threads)
    if preprocess.FASTBLOCK not in prepared.calls:
        raise NotImplementedError(f"{name}: {prepared.notes.get(preprocess.FASTBLOCK, '')}")
    return prepared.calls[preprocess.FASTBLOCK], prepared.calls[preprocess.LIMIT]


class Preprocess:
    param_names = ["case", "threads"]
    params = [CASES, THREADS]
    timeout = 300.0

    def setup(self, name, threads):
        self.call, self.limit = _calls(name, thread_count(threads))

    def time_one_pass(self, name, threads):
        self.call()

    def track_vs_limit(self, name, threads):
        times = interleaved_medians({"call": self.call, "limit": self.limit})
        return times["call"] / times["limit"]

    track_vs_limit.unit = "time / limit's time"


class PreprocessLimit:
    param_names = ["case"]
    params = [CASES]
    timeout = 300.0

    def setup(self, name):
        # the machine's figure: measured whatever this fastblock can do
        if QUICK and name in SKIPPED_WHEN_QUICK:
            raise NotImplementedError(f"{name}: skipped under FASTBLOCK_ASV_QUICK")
        self.limit = timing.copy_ceiling(preprocess.result_nbytes(preprocess.CASE_BY_NAME[name]))

    def time_limit(self, name):
        self.limit()
