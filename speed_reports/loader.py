"""Images a second through torch's DataLoader: uint8 ``H, W, C`` images to a
float32 NCHW batch normalised by ImageNet's mean and std, the ways users
write it, each beside the floor: the same loader carrying the raw uint8
batches with no conversion at all.

The ways (batches of 64 images, 0 and 2 worker processes, fork):

- ``floor``: torch's ``DataLoader`` of the uint8 samples, ``default_collate``;
- ``torch ops``: torchvision v2's ``ToDtype(scale=True)`` and ``Normalize``
  per sample, written as the torch ops they run (the torchvision wheel from
  PyPI is linked against CUDA torch): ``permute(2, 0, 1).contiguous()``,
  ``.to(float32).mul_(1 / 255)``, ``.sub_(mean).div_(std)``, then
  ``default_collate``;
- ``numpy``: ``(x.transpose(2, 0, 1).astype(float32) / 255 - mean) / std``
  per sample, ``default_collate``;
- ``fastblock``: ``fastblock.torch.DataLoader`` (docs/loaders.md).

Each way runs a warm-up epoch, then ``rounds`` epochs taking turns with the
other ways (persistent workers: their start is not timed); the figure is
the median. Every way's first batch is checked against the contract's
expression first (bit for bit for fastblock, within a few float32 units
for the others, which divide).

``python -m speed_reports --loader`` prints the table.
"""
from __future__ import annotations

import time

import numpy as np

MEAN = np.array([0.485, 0.456, 0.406])
STD = np.array([0.229, 0.224, 0.225])


class _Images:
    """``n`` uint8 images with labels, as a map-style dataset."""

    def __init__(self, n: int, side: int, way: str):
        self.x = np.random.default_rng(0).integers(0, 256, (n, side, side, 3), dtype=np.uint8)
        self.way = way

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return _transform(self.way, self.x[i]), i


def _transform(way: str, image: np.ndarray):
    if way == "torch ops":
        import torch
        mean = torch.tensor(MEAN, dtype=torch.float32).view(3, 1, 1)
        std = torch.tensor(STD, dtype=torch.float32).view(3, 1, 1)
        x = torch.from_numpy(image).permute(2, 0, 1).contiguous()
        return x.to(torch.float32).mul_(1 / 255).sub_(mean).div_(std)
    if way == "numpy":
        x = image.transpose(2, 0, 1).astype(np.float32) / np.float32(255)
        return (x - MEAN.astype(np.float32).reshape(3, 1, 1)) / STD.astype(np.float32).reshape(3, 1, 1)
    return image


def _loader(way: str, n: int, side: int, batch: int, workers: int):
    import torch
    import fastblock.torch as fbt
    data = _Images(n, side, way)
    kwargs = dict(batch_size=batch, num_workers=workers, persistent_workers=workers > 0)
    if way == "fastblock":
        return fbt.DataLoader(data, mean=MEAN, std=STD, **kwargs)
    return torch.utils.data.DataLoader(data, **kwargs)


def _check(way: str, loader, data_x: np.ndarray) -> None:
    from fastblock._reference import converted_ref
    images, labels = next(iter(loader))
    if way == "floor":
        assert np.array_equal(images.numpy(), data_x[labels.numpy()])
        return
    want = converted_ref(data_x[labels.numpy()].transpose(0, 3, 1, 2), np.float32,
                         (1 / (255 * STD)).reshape(3, 1, 1), (-MEAN / STD).reshape(3, 1, 1))
    if way == "fastblock":
        assert np.array_equal(images.numpy().view(np.uint32), want.view(np.uint32)), way
    else:
        np.testing.assert_allclose(images.numpy(), want, rtol=1e-5, atol=1e-5)


def _epoch(loader) -> float:
    start = time.perf_counter()
    images = 0
    for batch, _ in loader:
        images += batch.shape[0]
    return images / (time.perf_counter() - start)


WAYS = ("floor", "torch ops", "numpy", "fastblock")


def measure(n: int = 1024, side: int = 224, batch: int = 64, workers: int = 0,
            rounds: int = 3) -> dict:
    """Images a second of each way (median of ``rounds`` epochs, taking turns)."""
    loaders = {way: _loader(way, n, side, batch, workers) for way in WAYS}
    data_x = _Images(n, side, "floor").x
    for way, loader in loaders.items():
        _check(way, loader, data_x)
        _epoch(loader)
    rates = {way: [] for way in WAYS}
    for _ in range(rounds):
        for way, loader in loaders.items():
            rates[way].append(_epoch(loader))
    return {way: float(np.median(r)) for way, r in rates.items()}


def report(n: int = 1024, rounds: int = 3) -> None:
    try:
        import torch
    except ImportError:
        print("loader: torch is not installed")
        return
    print(f"torch {torch.__version__}: {n} images of 224x224x3 uint8, batches of 64, to float32 "
          f"NCHW, ImageNet mean/std; images/s, median of {rounds} epochs (ratio to the floor)")
    columns = {workers: measure(n=n, workers=workers, rounds=rounds) for workers in (0, 2)}
    print(f"{'way':12s}" + "".join(f"{f'{w} workers':>20s}" for w in columns))
    for way in WAYS:
        cells = "".join(f"{rates[way]:>11.0f} ({rates[way] / rates['floor']:4.2f}x)"
                        for rates in columns.values())
        print(f"{way:12s}{cells}")
