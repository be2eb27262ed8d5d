"""fastblock.torch's DataLoader against the floor (``speed_reports/loader.py``,
issue 64): 224x224x3 uint8 images in batches of 64 to float32 NCHW with
ImageNet's mean and std, against torch's DataLoader carrying the raw uint8
batches (the floor) and, without workers, against ``fastblock.collate``
into a reused batch with no loader around it (the bare work). Medians of
3 interleaved epochs after a warm-up, every way's first batch checked
first.

- ``track_vs_floor_2_workers``  fastblock's images/s over the floor's, 2
  worker processes (higher is better; issue 64 asks for at least 0.9);
- ``track_vs_bare_0_workers``   fastblock's images/s over the bare work's,
  no workers (at least 0.9).

``setup_cache`` runs the loaders in a fresh process (1,024 images, about
15 s; under FASTBLOCK_ASV_QUICK 256 images and one epoch). Without torch
the benchmarks are skipped.
"""
from .common import QUICK

from speed_reports import loader, pipeline  # noqa: E402  (common put the repository root on sys.path)


class DataLoader:
    timeout = 300.0

    def setup_cache(self):
        try:
            import torch  # noqa: F401
        except ImportError:
            return None
        n, rounds = (256, 1) if QUICK else (1024, 3)
        ways = ("floor", "fastblock", "bare")
        return {workers: pipeline.in_fresh_process(
                    loader.measure, ("decoded", n, 224, 64, workers, rounds, ways), timeout=240)
                for workers in (0, 2)}

    def setup(self, rates):
        if rates is None:
            raise NotImplementedError("torch is not installed")

    def track_vs_floor_2_workers(self, rates):
        return rates[2]["fastblock"] / rates[2]["floor"]

    def track_vs_bare_0_workers(self, rates):
        return rates[0]["fastblock"] / rates[0]["bare"]

    track_vs_floor_2_workers.unit = "images/s / floor's images/s"
    track_vs_bare_0_workers.unit = "images/s / bare work's images/s"
