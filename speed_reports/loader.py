"""Images a second through torch's DataLoader: uint8 ``H, W, C`` images to a
model's input normalised by ImageNet's mean and std, the ways users write
it, each beside the floor: the same loader carrying the raw uint8 batches
with no conversion at all.

Two sources: decoded images (arrays in memory), and JPEG files decoded by
Pillow in ``__getitem__`` (the floor then is decoding alone). Batches of
64, 0 and 2 worker processes (fork). The ways:

- ``floor``: torch's ``DataLoader`` of the uint8 samples, ``default_collate``;
- ``torch ops``: torchvision v2's ``ToDtype(scale=True)`` and ``Normalize``
  per sample, written as the torch ops they run (the torchvision wheel from
  PyPI is linked against CUDA torch): ``permute(2, 0, 1).contiguous()``,
  ``.to(float32).mul_(1 / 255)``, ``.sub_(mean).div_(std)``, then
  ``default_collate``;
- ``timm``: timm's loader written as the operations it runs (timm imports
  torchvision): each sample to CHW uint8 (``ToNumpy``), the batch stacked
  into a uint8 tensor (``fast_collate``), normalised in the main process
  (``float().sub_(255 * mean).div_(255 * std)``, its prefetcher on a CPU);
- ``numpy``: ``(x.transpose(2, 0, 1).astype(float32) / 255 - mean) / std``
  per sample, ``default_collate``;
- ``dali``: NVIDIA DALI's CPU pipeline (``device_id=None``) with as many
  threads as workers (one without): ``crop_mirror_normalize`` to CHW
  float32, fed the same arrays, or the JPEG files through its own decoder;
- ``fastblock``: ``fastblock.torch.DataLoader`` (docs/loaders.md), float32
  NCHW, and the same as channels_last, float16 and bfloat16 batches;
- ``bare`` (0 workers): no loader at all, the same samples read and
  converted by ``fastblock.collate`` into one reused batch: what the
  loader's own cost is measured against.

Each way runs a warm-up epoch, then ``rounds`` epochs taking turns with the
other ways (persistent workers: their start is not timed); the figure is
the median. Every way's first batch is checked against the contract's
expression first (bit for bit for fastblock, within float32 rounding for
the others, which divide; DALI's JPEG decoder within 3 levels of Pillow's).

``python -m speed_reports --loader`` prints the table.
"""
from __future__ import annotations

import gc
import io
import time

import numpy as np

MEAN = np.array([0.485, 0.456, 0.406])
STD = np.array([0.229, 0.224, 0.225])
SOURCES = ("decoded", "jpeg")
_SETTLE_SECONDS = 0.5
FASTBLOCK = {"fastblock": {}, "fb channels_last": {"channels_last": True},
             "fb float16": {"dtype": "float16"}, "fb bfloat16": {"dtype": "bfloat16"}}
WAYS = ("floor", "torch ops", "timm", "numpy", "dali") + tuple(FASTBLOCK) + ("bare",)


def _pictures(n: int, side: int) -> np.ndarray:
    """``n`` uint8 pictures: smooth gradients with a little noise, which
    JPEG compresses about as it does photographs (random pixels would not)."""
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:side, 0:side] / side
    out = np.empty((n, side, side, 3), np.uint8)
    for i in range(n):
        a, b, c = rng.uniform(1, 6, 3)
        base = np.stack([np.sin(a * xx + b * yy), np.cos(b * xx - c * yy),
                         np.sin(c * (xx + yy))], axis=-1)
        noise = rng.normal(0, 0.05, base.shape)
        out[i] = np.clip((base + noise + 1) * 127.5, 0, 255)
    return out


def _jpegs(pictures: np.ndarray) -> list:
    from PIL import Image
    files = []
    for picture in pictures:
        buffer = io.BytesIO()
        Image.fromarray(picture).save(buffer, format="JPEG", quality=90)
        files.append(buffer.getvalue())
    return files


def _decode(jpeg: bytes) -> np.ndarray:
    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(jpeg)).convert("RGB"))


class _Images:
    """A map-style dataset of (image, label), the image decoded or read
    from a JPEG file, then transformed as ``way`` does per sample."""

    def __init__(self, pictures: np.ndarray, jpegs, way: str):
        self.pictures, self.jpegs, self.way = pictures, jpegs, way

    def __len__(self):
        return len(self.pictures)

    def __getitem__(self, i):
        image = _decode(self.jpegs[i]) if self.jpegs else self.pictures[i]
        return _transform(self.way, image), i


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
    if way == "timm":
        return np.moveaxis(image, 2, 0)         # ToNumpy: a CHW view
    return image


def _timm_collate(samples):
    """fast_collate's work: the CHW uint8 images copied into one tensor."""
    import torch
    first = samples[0][0]
    batch = torch.zeros((len(samples),) + first.shape, dtype=torch.uint8)
    for k, (image, _) in enumerate(samples):
        batch[k] += torch.from_numpy(image)
    return batch, torch.tensor([label for _, label in samples])


class _TimmLoader:
    """timm's prefetcher on a CPU: each uint8 batch normalised in float32."""

    def __init__(self, loader):
        import torch
        self.loader = loader
        self.mean = torch.tensor(255 * MEAN, dtype=torch.float32).view(1, 3, 1, 1)
        self.std = torch.tensor(255 * STD, dtype=torch.float32).view(1, 3, 1, 1)

    def __iter__(self):
        for images, labels in self.loader:
            yield images.float().sub_(self.mean).div_(self.std), labels


class _Dali:
    """DALI's CPU pipeline over the same pictures or JPEG files, in order."""

    def __init__(self, pictures, jpegs, batch: int, workers: int):
        from nvidia.dali import fn, pipeline_def, types
        self.items = jpegs if jpegs else list(pictures)
        self.batch = batch
        self.epoch_batches = len(self.items) // batch

        @pipeline_def(batch_size=batch, num_threads=max(workers, 1), device_id=None)
        def pipeline():
            if jpegs:
                images = fn.decoders.image(fn.external_source(source=self._source),
                                           device="cpu", output_type=types.RGB)
            else:
                images = fn.external_source(source=self._source, layout="HWC")
            labels = fn.external_source(source=self._labels)
            return fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW",
                                            mean=list(255 * MEAN), std=list(255 * STD)), labels
        self._next = 0
        self.pipeline = pipeline()
        self.pipeline.build()

    def _indices(self, iteration):
        start = (iteration % self.epoch_batches) * self.batch
        return range(start, start + self.batch)

    def _source(self, iteration: int):
        return [np.frombuffer(self.items[i], np.uint8) if isinstance(self.items[i], bytes)
                else self.items[i] for i in self._indices(iteration)]

    def _labels(self, iteration: int):
        return [np.array(i) for i in self._indices(iteration)]

    def __iter__(self):
        """An epoch's batches, DALI's iterations scheduled within the epoch
        alone: run() schedules one more as it returns, so the last batches
        would start the next epoch's first ones, which then ran on its
        threads under the next way's timed epoch. Scheduled ahead as run()
        does (prefetch_queue_depth), and left with none in flight, even
        where the epoch is broken off (a first batch checked)."""
        import torch
        depth = min(int(self.pipeline.prefetch_queue_depth), self.epoch_batches)
        scheduled = 0
        for _ in range(depth):
            self.pipeline.schedule_run()
            scheduled += 1
        taken = 0
        try:
            while taken < self.epoch_batches:
                images, labels = self.pipeline.outputs()
                taken += 1
                if scheduled < self.epoch_batches:
                    self.pipeline.schedule_run()
                    scheduled += 1
                yield (torch.from_numpy(np.asarray(images.as_tensor())),
                       torch.from_numpy(np.asarray(labels.as_tensor())))
        finally:
            for _ in range(scheduled - taken):
                self.pipeline.outputs()


class _Bare:
    """No loader: the samples read and converted into one reused batch."""

    def __init__(self, data: _Images, batch: int):
        self.data, self.batch, self.out = data, batch, None

    def __iter__(self):
        import fastblock as fb
        import torch
        for start in range(0, len(self.data), self.batch):
            samples = [self.data[i] for i in range(start, start + self.batch)]
            images = [image for image, _ in samples]
            if self.out is None:
                self.out = np.empty((self.batch, 3) + images[0].shape[:2], np.float32)
            fb.collate(images, fb.transpose, (2, 0, 1), out=self.out, dtype=np.float32,
                       scale=(1 / (255 * STD)).reshape(3, 1, 1), offset=(-MEAN / STD).reshape(3, 1, 1))
            yield torch.from_numpy(self.out), torch.tensor([label for _, label in samples])


def _loader(way: str, pictures, jpegs, batch: int, workers: int):
    import torch
    import fastblock.torch as fbt
    data = _Images(pictures, jpegs, way)
    kwargs = dict(batch_size=batch, num_workers=workers, persistent_workers=workers > 0)
    if way in FASTBLOCK:
        options = dict(FASTBLOCK[way])
        options["dtype"] = getattr(torch, options.get("dtype", "float32"))
        return fbt.DataLoader(data, mean=MEAN, std=STD, **options, **kwargs)
    if way == "timm":
        return _TimmLoader(torch.utils.data.DataLoader(data, collate_fn=_timm_collate, **kwargs))
    if way == "dali":
        return _Dali(pictures, jpegs, batch, workers)
    if way == "bare":
        return _Bare(data, batch)
    return torch.utils.data.DataLoader(data, **kwargs)


def _check(way: str, loader, decoded: np.ndarray, jpeg: bool) -> None:
    """The way's first batch against the contract's expression."""
    import torch
    from fastblock._reference import converted_ref
    images, labels = next(iter(loader))
    source = decoded[labels.numpy()]
    if way == "floor":
        assert np.array_equal(images.numpy(), source), way
        return
    dtype = FASTBLOCK.get(way, {}).get("dtype", "float32")
    want = converted_ref(source.transpose(0, 3, 1, 2), _numpy_dtype(dtype),
                         (1 / (255 * STD)).reshape(3, 1, 1), (-MEAN / STD).reshape(3, 1, 1))
    if way in FASTBLOCK or way == "bare":
        got = images.view(torch.int16).numpy() if dtype == "bfloat16" else images.numpy()
        assert np.array_equal(np.ascontiguousarray(got).view(np.uint8),
                              np.ascontiguousarray(want).view(np.uint8)), way
    else:
        tolerance = 3 / 255 / STD.min() if (way == "dali" and jpeg) else 1e-5
        np.testing.assert_allclose(images.numpy(), want, rtol=1e-5, atol=tolerance, err_msg=way)


def _numpy_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _epoch(loader) -> float:
    start = time.perf_counter()
    images = 0
    for batch, _ in loader:
        images += batch.shape[0]
    return images / (time.perf_counter() - start)


def _available(way: str) -> bool:
    if way == "dali":
        try:
            import nvidia.dali  # noqa: F401
        except ImportError:
            return False
    return True


def measure(source: str = "decoded", n: int = 1024, side: int = 224, batch: int = 64,
            workers: int = 0, rounds: int = 3, ways=WAYS) -> dict:
    """Images a second of each way (median of ``rounds`` epochs, taking
    turns); a way that cannot run here (DALI not installed; ``bare`` with
    workers) is left out."""
    pictures = _pictures(n, side)
    jpegs = _jpegs(pictures) if source == "jpeg" else None
    decoded = np.stack([_decode(j) for j in jpegs]) if jpegs else pictures
    chosen = [w for w in ways if _available(w) and not (w == "bare" and workers)]
    loaders = {}
    try:
        # DALI's pipeline last, once every worker process has started: a
        # worker forked beside a live pipeline hangs when it frees its copy.
        for way in sorted(chosen, key=lambda w: w == "dali"):
            loaders[way] = _loader(way, pictures, jpegs, batch, workers)
            _check(way, loaders[way], decoded, bool(jpegs))
            _epoch(loaders[way])
        rates = {way: [] for way in chosen}
        for _ in range(rounds):
            for way in chosen:
                # A pause before each epoch: the way before may leave
                # threads at work (a fastblock epoch right after DALI's
                # made 19,694 images/s, after 0.2 s 22,076, after the
                # floor's 25,134; 0 workers, medians of 7).
                time.sleep(_SETTLE_SECONDS)
                rates[way].append(_epoch(loaders[way]))
    finally:
        loaders.clear()
        gc.collect()        # the pipeline and the workers gone before the next forks
    return {way: float(np.median(r)) for way, r in rates.items()}


def report(n: int = 1024, rounds: int = 3) -> None:
    try:
        import torch
    except ImportError:
        print("loader: torch is not installed")
        return
    print(f"torch {torch.__version__}: {n} images of 224x224x3 uint8 (decoded, or JPEG decoded "
          f"by Pillow in __getitem__), batches of 64, to float32 NCHW (fb: also channels_last, "
          f"float16, bfloat16), ImageNet mean/std; images/s, median of {rounds} epochs "
          f"(ratio to the floor)")
    columns = {(source, workers): measure(source, n=n, workers=workers, rounds=rounds)
               for source in SOURCES for workers in (0, 2)}
    print(f"{'way':17s}" + "".join(f"{f'{s}, {w} workers':>22s}" for s, w in columns))
    for way in WAYS:
        cells = "".join(f"{rates[way]:>13.0f} ({rates[way] / rates['floor']:4.2f}x)"
                        if way in rates else f"{'-':>22s}" for rates in columns.values())
        print(f"{way:17s}{cells}")
