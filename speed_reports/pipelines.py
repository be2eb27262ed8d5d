"""Images a second through Ray Data's ``map_batches`` and Hugging Face
datasets' ``with_transform``: uint8 ``H, W, C`` images to a float32 NCHW
batch normalised by ImageNet's mean and std, the ways users write it, each
beside the floor: the same pipeline passing the image column through.

Ray (``--ray``): a local Ray (``ray.init(num_cpus=2)``), the images in the
object store as blocks of ``batch`` images, each epoch one
``map_batches(fn, batch_format="numpy", zero_copy_batch=True)`` of them,
materialized (the results written to the object store, as for a next
stage). The ways, ``fn``:

- ``floor``: the batch as it comes;
- ``float32 floor``: the limit of any way: a float32 result of the batch's
  shape, made at the first batch in each Ray worker process (the untimed
  epoch) and handed back for every batch: what Ray costs to carry a result
  four times the uint8 batch's bytes (it copies each result into its object
  store), with no conversion at all;
- ``numpy``: NumPy's own way, ``(x.transpose(0, 3, 1, 2).astype(float32) /
  255 - mean) / std`` (mean and std float32);
- ``fastblock``: ``fastblock.pipelines.RayImages``.

Hugging Face (``--hf``): an in-memory ``datasets.Dataset`` of PIL images
(the ``Image`` feature: PNG bytes, decoded by datasets at each read), read
in slices of ``batch`` rows (``ds[i:i + batch]``) through ``with_transform``
of each way; results are torch tensors. The ways:

- ``floor``: the batch as it comes (decoded PIL images);
- ``torch ops``: torchvision's ToTensor and Normalize per image, written as
  the torch ops they run (torchvision's PyPI wheel needs CUDA torch):
  ``torch.from_numpy(np.array(img)).permute(2, 0, 1).contiguous()``,
  ``.to(float32).mul_(1 / 255)``, ``.sub_(mean).div_(std)``, then
  ``torch.stack`` (what a DataLoader's collate does with the list);
- ``fastblock``: ``fastblock.pipelines.HFImages``.

The HF report also times each transform alone, on one decoded batch: the
part of the pipeline each way adds to the floor.

Every way runs once first (checked against the contract's expression: bit
for bit for fastblock, within float32 rounding for the others, which
divide), then ``rounds`` epochs taking turns with the other ways; a figure
is the median.

``python -m speed_reports --ray`` / ``--hf`` prints the tables (about 2
and 3 minutes on 2 cores).
"""
from __future__ import annotations

import logging
import os
import time
from typing import Callable, Dict

import numpy as np

from .source import reference, timing

MEAN = np.array([0.485, 0.456, 0.406])
STD = np.array([0.229, 0.224, 0.225])
_MEAN32 = MEAN.astype(np.float32).reshape(3, 1, 1)
_STD32 = STD.astype(np.float32).reshape(3, 1, 1)


def _images(n: int, side: int) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, (n, side, side, 3), dtype=np.uint8)


def _want(x: np.ndarray) -> np.ndarray:
    """The contract's result for the NHWC batch ``x``."""
    return reference.converted_ref(x.transpose(0, 3, 1, 2), np.float32,
                                   (1 / (255 * STD)).reshape(3, 1, 1),
                                   (-MEAN / STD).reshape(3, 1, 1))


def _check(way: str, got: np.ndarray, x: np.ndarray) -> None:
    if way == "floor":
        assert np.array_equal(got, x), way
    elif way == "fastblock":
        assert np.array_equal(got.view(np.uint32), _want(x).view(np.uint32)), way
    else:
        np.testing.assert_allclose(got, _want(x), rtol=1e-5, atol=1e-5)


def _rates(epochs: Dict[str, Callable[[], int]], rounds: int) -> Dict[str, float]:
    """Images a second of each epoch function (it returns its image count):
    one untimed epoch each, then the median of ``rounds`` epochs, the ways
    taking turns."""
    for epoch in epochs.values():
        epoch()
    samples = {way: [] for way in epochs}
    for _ in range(rounds):
        for way, epoch in epochs.items():
            start = time.perf_counter()
            count = epoch()
            samples[way].append(count / (time.perf_counter() - start))
    return {way: float(np.median(s)) for way, s in samples.items()}


# --------------------------------------------------------------------- Ray

def ray_numpy_way(batch: dict) -> dict:
    """NumPy's own way, on Ray's batch."""
    x = batch["image"].transpose(0, 3, 1, 2).astype(np.float32) / np.float32(255)
    return {"image": (x - _MEAN32) / _STD32}


def _ray_floor(batch: dict) -> dict:
    return batch


# The float32 floor's results, by shape, one of each in each Ray worker
# process (Ray unpickles a task's function anew for each task).
_FLOAT32_RESULTS: Dict[tuple, np.ndarray] = {}


def ray_float32_floor(batch: dict) -> dict:
    """The float32 floor: a float32 NCHW array of the batch's shape, made
    at the first batch of its shape in each Ray worker process and handed
    back for every batch after (Ray copies it into its object store each
    time). Written through: np.zeros' untouched pages would all read as
    one page of zeros, which no result is."""
    n, h, w, c = batch["image"].shape
    result = _FLOAT32_RESULTS.get((n, c, h, w))
    if result is None:
        result = np.random.default_rng(0).random((n, c, h, w), np.float32)
        _FLOAT32_RESULTS[result.shape] = result
    return {"image": result}


def ray_ways() -> Dict[str, Callable[[dict], dict]]:
    from fastblock.pipelines import RayImages
    return {"floor": _ray_floor, "float32 floor": ray_float32_floor, "numpy": ray_numpy_way,
            "fastblock": RayImages("image", np.float32, MEAN, STD)}


def measure_ray(n: int = 512, side: int = 224, batch: int = 64, rounds: int = 5) -> dict:
    """Images a second of each Ray way (a local Ray of 2 CPUs, started here
    and shut down after)."""
    import ray
    # Ray's workers unpickle the ways by module: the folder that holds
    # speed_reports/ must be on their path.
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             logging_level=logging.ERROR, runtime_env={"env_vars": {"PYTHONPATH": path}})
    try:
        ray.data.DataContext.get_current().enable_progress_bars = False
        # After ray.data's import, which sets its logger: a line each execution.
        logging.getLogger("ray.data").setLevel(logging.ERROR)
        x = _images(n, side)
        blocks = [x[i:i + batch] for i in range(0, n, batch)]
        source = ray.data.from_numpy(blocks).rename_columns({"data": "image"}).materialize()

        def epoch(fn):
            def run() -> int:
                done = source.map_batches(fn, batch_format="numpy", batch_size=batch,
                                          zero_copy_batch=True).materialize()
                return done.count()
            return run

        epochs = {}
        for way, fn in ray_ways().items():
            first = source.map_batches(fn, batch_format="numpy", batch_size=batch,
                                       zero_copy_batch=True).take_batch(batch, batch_format="numpy")
            if way != "float32 floor":
                _check(way, first["image"], x[:batch])
            epochs[way] = epoch(fn)
        return _rates(epochs, rounds)
    finally:
        ray.shutdown()


def report_ray(rounds: int = 7) -> None:
    try:
        import ray
    except ImportError:
        print("ray: Ray is not installed (python3 -m pip install 'ray[data,train]')")
        return
    print(f"Ray {ray.__version__}, ray.init(num_cpus=2): 224x224x3 uint8 images in blocks of a "
          f"batch, map_batches(batch_format='numpy', zero_copy_batch=True) materialized, to "
          f"float32 NCHW, ImageNet mean/std; images/s, median of {rounds} epochs (ratio to the "
          f"floor)")
    # Ray's own cost is per batch: batches of 64 and of 256 (its default is 1024).
    for batch, n in ((64, 512), (256, 1024)):
        print(f" batches of {batch}, {n} images:")
        rates = measure_ray(n=n, batch=batch, rounds=rounds)
        _print_rates(rates, "numpy")
        print(f"  fastblock / float32 floor: {rates['fastblock'] / rates['float32 floor']:.2f}x "
              f"the rate; any float32 way's best against numpy: "
              f"{rates['float32 floor'] / rates['numpy']:.2f}x")


def _print_rates(rates: Dict[str, float], other: str) -> None:
    """Each way's rate, its ratio to the floor and the time it adds to the
    floor's; fastblock's ratios to ``other``: of the rates, of the times added."""
    added = {way: 1 / rate - 1 / rates["floor"] for way, rate in rates.items()}
    for way, rate in rates.items():
        print(f"  {way:12s}{rate:>10.0f} ({rate / rates['floor']:4.2f}x), "
              f"{added[way] * 1e6:8.1f} us an image over the floor")
    # Within the noise of the floor, fastblock adds nothing measurable.
    less = (f"{added[other] / added['fastblock']:.2f}x" if added["fastblock"] > 0
            else "unmeasurably")
    print(f"  fastblock / {other}: {rates['fastblock'] / rates[other]:.2f}x the rate, "
          f"{less} less time over the floor")


# ------------------------------------------------------ Hugging Face datasets

def hf_dataset(x: np.ndarray):
    """An in-memory datasets.Dataset of the images as PIL images (the Image
    feature) with labels."""
    import datasets
    from PIL import Image
    features = datasets.Features({"image": datasets.Image(), "label": datasets.Value("int64")})
    return datasets.Dataset.from_dict({"image": [Image.fromarray(a) for a in x],
                                       "label": list(range(len(x)))}, features=features)


def _hf_floor(batch: dict) -> dict:
    return batch


def hf_torch_ops(batch: dict) -> dict:
    """torchvision's ToTensor + Normalize per image, as the torch ops they
    run, then stacked."""
    import torch
    mean = torch.from_numpy(_MEAN32)
    std = torch.from_numpy(_STD32)
    out = []
    for image in batch["image"]:
        t = torch.from_numpy(np.array(image)).permute(2, 0, 1).contiguous()
        out.append(t.to(torch.float32).mul_(1 / 255).sub_(mean).div_(std))
    result = dict(batch)
    result["image"] = torch.stack(out)
    return result


def hf_ways() -> Dict[str, Callable[[dict], dict]]:
    from fastblock.pipelines import HFImages
    return {"floor": _hf_floor, "torch ops": hf_torch_ops,
            "fastblock": HFImages("image", np.float32, MEAN, STD, return_tensors="pt")}


def measure_hf(n: int = 4096, side: int = 32, batch: int = 256, rounds: int = 7) -> dict:
    """{"pipeline": images a second of each way, "transform": seconds per
    image of each way's transform alone on one decoded batch}."""
    x = _images(n, side)
    data = hf_dataset(x)
    views = {way: data.with_transform(fn) for way, fn in hf_ways().items()}
    for way, view in views.items():
        got = view[:batch]["image"]
        _check(way, np.stack([np.asarray(g) for g in got]) if way == "floor" else got.numpy(),
               x[:batch])

    def epoch(view):
        def run() -> int:
            for start in range(0, n, batch):
                view[start:start + batch]
            return n
        return run

    rates = _rates({way: epoch(view) for way, view in views.items()}, rounds)
    decoded = views["floor"][:batch]
    alone = timing.interleaved_medians({way: (lambda fn=fn: fn(dict(decoded)))
                                        for way, fn in hf_ways().items() if way != "floor"},
                                       rounds=rounds)
    return {"pipeline": rates, "transform": {way: s / batch for way, s in alone.items()}}


def report_hf(rounds: int = 7) -> None:
    try:
        import datasets
        import torch
    except ImportError as error:
        print(f"hf: {error.name} is not installed (python3 -m pip install datasets pillow torch)")
        return
    print(f"datasets {datasets.__version__}, torch {torch.__version__}: in-memory Dataset of PNG "
          f"images (Image feature), slices of 256 through with_transform, to float32 NCHW "
          f"torch tensors, ImageNet mean/std; images/s, median of {rounds} epochs (ratio to "
          f"the floor), and each transform alone on a decoded batch")
    for side, n in ((32, 4096), (224, 256)):
        figures = measure_hf(n=n, side=side, batch=256 if side == 32 else 64, rounds=rounds)
        print(f" {side}x{side}, {n} images:")
        _print_rates(figures["pipeline"], "torch ops")
        alone = figures["transform"]
        print(f"  transform alone, us an image: torch ops {alone['torch ops'] * 1e6:.1f}, "
              f"fastblock {alone['fastblock'] * 1e6:.1f} "
              f"({alone['torch ops'] / alone['fastblock']:.2f}x)")
