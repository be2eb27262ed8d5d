"""fastblock.dask on a LocalCluster of 2 worker processes x 1 thread
(``speed_reports/dask_cases.py``, issue 67): the preprocessing case, 256 images of
224x224x3 uint8 in chunks of 16 to float32 NCHW with ImageNet's mean and
std, ``fastblock.dask.rearrange(img, "b h w c -> b c h w", dtype=np.float32,
scale=s, offset=o)``, persisted and waited for (the graph's build
included), against Dask's own chain (``img.transpose(0, 3, 1, 2).astype(
np.float32) * s + o``), against ``map_blocks`` of the same fastblock call
and against the floor (a map_blocks that only allocates each block's
result). Medians of 5 interleaved rounds after a warm-up, every result
checked against Dask's own first.

- ``track_vs_dask``        fastblock.dask's time over Dask's own (lower is
  better; issue 67 asks for at most 0.4);
- ``track_vs_map_blocks``  over map_blocks of the same call (at most 1.1);
- ``track_vs_floor``       over the floor.

``setup_cache`` runs the cluster in a fresh process (about 10 s; under
FASTBLOCK_ASV_QUICK 64 images and one round, about 5 s). Without
``distributed`` the benchmarks are skipped.
"""
from .common import QUICK

from speed_reports import dask_cases, pipeline  # noqa: E402  (common put the repository root on sys.path)

CASE = "preprocess"


class DaskPreprocess:
    timeout = 300.0

    def setup_cache(self):
        try:
            import distributed  # noqa: F401
        except ImportError:
            return None
        args = ([CASE], 1 if QUICK else dask_cases.ROUNDS, dask_cases.WAYS, 64 if QUICK else None)
        return pipeline.in_fresh_process(dask_cases.measure, args, timeout=240)[CASE]

    def setup(self, seconds):
        if seconds is None:
            raise NotImplementedError("distributed is not installed")

    def _ratio(self, seconds, other):
        return seconds[f"{dask_cases.FASTBLOCK_DASK}/{other}"]

    def track_vs_dask(self, seconds):
        return self._ratio(seconds, dask_cases.DASK)

    def track_vs_map_blocks(self, seconds):
        return self._ratio(seconds, dask_cases.MAP_BLOCKS)

    def track_vs_floor(self, seconds):
        return self._ratio(seconds, dask_cases.FLOOR)

    track_vs_dask.unit = "time / Dask's time"
    track_vs_map_blocks.unit = "time / map_blocks' time"
    track_vs_floor.unit = "time / floor's time"
