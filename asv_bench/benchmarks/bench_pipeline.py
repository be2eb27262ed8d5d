"""fastblock in a multi-process pipeline (``speed_reports/pipeline.py``): K worker
processes (K = the usable cores), started with ``fork`` and ``forkserver``
(``spawn`` where neither exists) from a fresh parent that imported fastblock
and made no call, or K threads of that parent (``threads``), all calling
the same front door on a per-sample 1x3x224x224 float32 input at the same
time; and ``imagenet``: a 1x224x224x3 uint8 image to a
1x3x224x224 float32 model input with ImageNet's mean and std, in one
``fb.transpose(..., dtype=np.float32, scale=, offset=)`` (NumPy's way:
``astype``, ``*=``, ``+=``), skipped where this fastblock has no ``dtype=``.

- ``track_fastblock``, ``track_one_thread``, ``track_numpy``: calls/s summed
  over the workers, fastblock with default settings, with
  ``num_threads=1``, and NumPy's own way (view chain and one copy);
- ``track_vs_one_thread``, ``track_vs_numpy``: default fastblock's calls/s
  over the other two (below 0.9 and below 1 are issue 34's misses).

``setup_cache`` runs every case once (one pool per start method) and each
benchmark reads its figure from there. FASTBLOCK_ASV_QUICK shortens the
counting to 0.1 s per case.
"""
from .common import QUICK

from speed_reports import pipeline  # noqa: E402  (common put the repository root on sys.path)

METHODS = [*pipeline.start_methods(), pipeline.THREADS]
OPERATORS = ["space_to_depth", "transpose", "rearrange"]
CONFIG = pipeline.Config(operators=tuple(OPERATORS), sizes=("224",),
                         variants=(pipeline.FASTBLOCK, pipeline.ONE_THREAD, pipeline.NUMPY),
                         seconds=0.1 if QUICK else 0.3, warmup=0.05 if QUICK else 0.1,
                         copy=False, rounds=1 if QUICK else 3)
# the 224x224 ImageNet case, on the uint8 HWC sample
CONFIG_IMAGENET = CONFIG._replace(operators=(pipeline.IMAGENET,), sizes=("nhwc",))


class Pipeline:
    param_names = ["method", "operator"]
    params = [METHODS, OPERATORS + [pipeline.IMAGENET]]
    timeout = 300.0

    def setup_cache(self):
        totals = {}
        for method in METHODS:
            rates = pipeline.in_fresh_process(
                pipeline.run_pipeline, (method, CONFIG),
                timeout=pipeline.pipeline_timeout(CONFIG) + 30)
            for (operator, _, variant), rate in rates.items():
                if rate.error:
                    raise RuntimeError(f"{method} {operator} {variant}: {rate.error}")
                totals[(method, operator, variant)] = rate.total
            # a fastblock without dtype= (an older commit) leaves it out
            rates = pipeline.in_fresh_process(
                pipeline.run_pipeline, (method, CONFIG_IMAGENET),
                timeout=pipeline.pipeline_timeout(CONFIG_IMAGENET) + 30)
            for (operator, _, variant), rate in rates.items():
                if not rate.error:
                    totals[(method, operator, variant)] = rate.total
        return totals

    def setup(self, totals, method, operator):
        if (method, operator, pipeline.FASTBLOCK) not in totals:
            raise NotImplementedError(f"{operator} did not run in the pipeline (no dtype= "
                                      f"in this fastblock?)")

    def track_fastblock(self, totals, method, operator):
        return totals[(method, operator, pipeline.FASTBLOCK)]

    def track_one_thread(self, totals, method, operator):
        return totals[(method, operator, pipeline.ONE_THREAD)]

    def track_numpy(self, totals, method, operator):
        return totals[(method, operator, pipeline.NUMPY)]

    def track_vs_one_thread(self, totals, method, operator):
        return (totals[(method, operator, pipeline.FASTBLOCK)]
                / totals[(method, operator, pipeline.ONE_THREAD)])

    def track_vs_numpy(self, totals, method, operator):
        return (totals[(method, operator, pipeline.FASTBLOCK)]
                / totals[(method, operator, pipeline.NUMPY)])

    track_fastblock.unit = "calls/s"
    track_one_thread.unit = "calls/s"
    track_numpy.unit = "calls/s"
    track_vs_one_thread.unit = "x num_threads=1"
    track_vs_numpy.unit = "x NumPy"
