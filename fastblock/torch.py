"""fastblock inside torch's DataLoader: batches of uint8 images converted to
a model's input (float32, float16 or bfloat16, NCHW or channels_last, per
channel mean and std) in one pass, where the bytes are fewest.

Importing :mod:`fastblock` never imports torch; this module does.

>>> import fastblock.torch as fbt
>>> loader = fbt.DataLoader(dataset, batch_size=64, num_workers=2,
...                         mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))
>>> for images, labels in loader:            # images: float32 [64, 3, H, W]
...     ...

:func:`DataLoader` takes torch's ``DataLoader`` arguments (``num_workers``,
``persistent_workers``, ``prefetch_factor``, ``multiprocessing_context``,
``sampler``...) and builds one with its own ``collate_fn``:

- with worker processes, each worker stacks its batch's images as uint8,
  channels last, into shared memory (a quarter of a float32 batch's
  bytes), and the main process converts the batch into the model's input
  in one call (``fastblock.transpose`` with ``dtype``, ``scale`` and
  ``offset``), on its own threads;
- without workers (``num_workers=0``), the batch is collated and converted
  in one call (``fastblock.collate``), straight from the samples.

Samples are an image (a ``H, W, C`` uint8 array or tensor, or anything
``numpy.asarray`` makes one of, a PIL image say), or a tuple, list or dict
holding one (``image=``: its index or key; by default element 0 of a
sequence, key ``"image"`` of a dict). Everything else in a sample is
collated by torch's ``default_collate``.

Each image of the result is, bit for bit, ``fastblock.transpose(img, (2, 0,
1), dtype=dtype, scale=1 / (255 * std), offset=-mean / std)``
(``docs/convert.md`` gives that conversion's exact rule): ``(x / 255 -
mean) / std`` folded into one multiply and one add in float32.

Result batches live in buffers that are reused: a buffer is written again
only once nothing the user holds refers to it (no tensor, view or storage
of the batch: its NumPy buffer's reference count says so). A batch kept is
never overwritten; the loader then takes a new buffer.
"""
from __future__ import annotations

import math
import multiprocessing
import os
import secrets
import threading
from typing import Any, Optional, Sequence

import numpy as np
import torch
import torch.utils.data as tud
from torch.utils.data._utils.collate import default_collate

from ._ops import collate as _collate, permute as _permute
from ._reused import ReusedResults
from .pipelines import _affine

__all__ = ["DataLoader", "Loader", "Collate"]

# torch's result dtypes and NumPy's buffers for them (bfloat16: 2-byte items
# written through ml_dtypes.bfloat16, handed out as torch.bfloat16).
_BUFFER_DTYPES = {torch.float32: np.float32, torch.float16: np.float16,
                  torch.bfloat16: np.int16, torch.float64: np.float64, torch.uint8: np.uint8}


def _fastblock_dtype(dtype: torch.dtype):
    if dtype is torch.bfloat16:
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(_BUFFER_DTYPES[dtype])


# Result buffers the main process keeps for reuse (fastblock._reused): two
# alternate while a loop holds the last batch as it takes the next;
# batches held past these are their holder's alone, freed as they are
# dropped.
_KEPT_BUFFERS = 4


class Collate:
    """The ``collate_fn`` of :func:`DataLoader` (see the module docstring).

    In a worker process it stacks the batch's images as uint8 in shared
    memory and returns a ``Staged`` batch for :class:`Loader` to convert; in
    the main process it converts them straight into the result."""

    def __init__(self, dtype: torch.dtype = torch.float32, mean: Optional[Sequence[float]] = None,
                 std: Optional[Sequence[float]] = None, channels_last: bool = False,
                 image: Any = None, num_threads: Optional[int] = None):
        if dtype not in _BUFFER_DTYPES:
            raise TypeError(f"dtype must be one of {', '.join(map(str, _BUFFER_DTYPES))}, "
                            f"got {dtype!r}")
        self.dtype = dtype
        self.channels_last = bool(channels_last)
        self.image = image
        self.num_threads = num_threads
        self.scale, self.offset = _affine(mean, std)
        self.pin_memory = False         # set by DataLoader where CUDA is there
        self._buffers = ReusedResults(_KEPT_BUFFERS)     # the main process's results
        self._ring = _Ring()            # a worker's staging buffers

    def __getstate__(self):
        state = dict(self.__dict__)
        del state["_buffers"], state["_ring"]   # each process's own
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._buffers = ReusedResults(_KEPT_BUFFERS)
        self._ring = _Ring()

    def __call__(self, samples: Sequence) -> Any:
        if not samples:
            raise ValueError("a batch of no samples")
        where = _image_place(samples[0], self.image)
        images = [np.asarray(_get(sample, where)) for sample in samples]
        if tud.get_worker_info() is not None:
            staged, sent, place = self._ring.stage(images)
            return Staged(_rebuild(samples, where, staged), where, sent, place)
        return _rebuild(samples, where, self.convert_samples(images))

    def convert_samples(self, images: list) -> torch.Tensor:
        """The batch of ``images`` (``H, W, C`` each) converted, in one call."""
        first = images[0]
        _check_image(first)
        out, tensor = self._result(self._shape(len(images), first.shape))
        axes = (0, 1, 2) if self.channels_last else (2, 0, 1)
        _collate.collate(images, _permute.transpose, axes, out=self._view(out),
                         num_threads=self.num_threads, **self._keywords())
        return tensor

    def convert_batch(self, batch: np.ndarray) -> torch.Tensor:
        """A stacked uint8 batch (``N, H, W, C``) converted, in one call."""
        _check_image(batch[0])
        out, tensor = self._result(self._shape(batch.shape[0], batch.shape[1:]))
        axes = (0, 1, 2, 3) if self.channels_last else (0, 3, 1, 2)
        _permute.transpose(batch, axes, out=self._view(out), num_threads=self.num_threads,
                           **self._keywords())
        return tensor

    def _result(self, shape: tuple):
        """A result batch's NumPy buffer and the tensor handed out for it:
        page-locked memory where ``pin_memory`` is on (a new tensor from
        torch's caching host allocator, which recycles what is freed),
        else a reused buffer."""
        if self.pin_memory:
            pinned = _pinned_empty(shape, torch.int16 if self.dtype is torch.bfloat16
                                   else self.dtype)
            return pinned.numpy(), self._tensor_of(pinned)
        out = self._buffers.take(shape, self._buffer_dtype())
        return out, self._tensor_of(torch.from_numpy(out))

    def _shape(self, n: int, hwc: tuple) -> tuple:
        h, w, c = hwc
        return (n, h, w, c) if self.channels_last else (n, c, h, w)

    def _buffer_dtype(self) -> np.dtype:
        return np.dtype(_BUFFER_DTYPES[self.dtype])

    def _view(self, out: np.ndarray) -> np.ndarray:
        return out.view(_fastblock_dtype(self.dtype))

    def _keywords(self) -> dict:
        """dtype, scale and offset for a result whose channels are the
        last axis (channels_last) or the one before the image's rows."""
        keywords = {"dtype": _fastblock_dtype(self.dtype)}
        shape = (-1,) if self.channels_last else (-1, 1, 1)
        if self.scale is not None:
            keywords["scale"] = self.scale.reshape(shape)
            keywords["offset"] = self.offset.reshape(shape)
        return keywords

    def _tensor_of(self, tensor: torch.Tensor) -> torch.Tensor:
        if self.dtype is torch.bfloat16:
            tensor = tensor.view(torch.bfloat16)
        return tensor.permute(0, 3, 1, 2) if self.channels_last else tensor


class Staged:
    """A batch whose images a worker stacked as uint8 (``N, H, W, C``) in
    one of its staging buffers, for the main process to convert. The
    images are the batch's only while this object lives in the main
    process: once it is released or freed, the worker writes the buffer
    again (:class:`Loader` releases it as soon as the batch is converted).

    On its way to the main process, a buffer's images travel as a torch
    tensor (a file descriptor, passed over a socket) the first time only;
    the main process keeps that mapping (_received) and later batches in
    the buffer name it. Small tensors beside the images (labels) travel as
    NumPy arrays, in the pickle: each tensor would take a file descriptor
    and a new shared-memory segment. Both passings cost the main process
    about as much as the conversion itself (py-spy, 2 workers)."""

    def __init__(self, batch, where=None, sent: int = 0, place=None):
        self.batch = batch
        self.where = where
        self._sent = sent               # the buffer's count of batches sent; 0: not a ring's
        self._place = place             # (ring, buffer index, first time sent), or None
        self._received = False          # True in the process that unpickled it

    def __getstate__(self):
        state = dict(self.__dict__)
        if self._received:
            state["_place"] = None      # sent on again: its images as a tensor
        place = state["_place"]
        state["batch"] = _portable(self.batch, self.where, place is not None and not place[2])
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._received = True
        if self._place is not None:
            self.batch = _received.attach(self.batch, self.where, self._place)
        self.batch = _tensors_back(self.batch, self.where)

    @property
    def images(self) -> torch.Tensor:
        return _get(self.batch, self.where)

    def release(self) -> None:
        """Hands the staging buffer back to its worker (in the main process)."""
        if self._received and self._sent:
            _counters(self.images)[1] = self._sent
            self._sent = 0

    def __del__(self):
        self.release()


class Loader:
    """A torch ``DataLoader`` (``.loader``) whose batches :class:`Collate`
    converts: iterate it as the DataLoader itself."""

    def __init__(self, loader: tud.DataLoader, collate: Collate):
        self.loader = loader
        self.collate = collate

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self):
        for batch in self.loader:
            if isinstance(batch, Staged):
                batch = self._convert(batch)
            yield batch
        # Workers that are not persistent have ended with the epoch: their
        # buffers are unmapped now, not when the next epoch's workers send.
        _received.forget_ended_workers()

    def _convert(self, staged: Staged):
        result = self.collate.convert_batch(staged.images.numpy())
        staged.release()
        return _rebuild([staged.batch], staged.where, result, collated=True)


def DataLoader(dataset, *, dtype: torch.dtype = torch.float32,
               mean: Optional[Sequence[float]] = None, std: Optional[Sequence[float]] = None,
               channels_last: bool = False, image: Any = None, num_threads: Optional[int] = None,
               **loader_kwargs) -> Loader:
    """torch's ``DataLoader`` over ``dataset`` whose image batches come out
    converted, in one pass, to ``dtype`` (float32, float16, bfloat16,
    float64, or uint8 to move the channels alone), NCHW, or NCHW in
    channels_last memory (``channels_last=True``), as
    ``(x / 255 - mean) / std`` per channel when ``mean`` and ``std`` are
    given (in units of the full scale, as torchvision's Normalize after
    ToTensor), else as ``x`` itself.

    ``image``: where the image is in a sample (module docstring).
    ``num_threads``: fastblock's threads for each batch's conversion in
    the main process (default :func:`fastblock.get_num_threads`).
    ``loader_kwargs``: torch's ``DataLoader`` arguments, ``collate_fn``
    excepted. Returns a :class:`Loader`, iterated as the DataLoader is."""
    if "collate_fn" in loader_kwargs:
        raise TypeError("fastblock.torch.DataLoader makes its own collate_fn; "
                        "use torch.utils.data.DataLoader with fastblock.torch.Collate to combine")
    collate = Collate(dtype, mean, std, channels_last, image, num_threads)
    # Pinned: the images written straight into page-locked memory, which
    # torch's pinning thread then leaves as they are (pin_memory() of a
    # pinned tensor is the tensor); it pins the rest of the batch.
    collate.pin_memory = bool(loader_kwargs.get("pin_memory", False)) and _cuda_available()
    return Loader(tud.DataLoader(dataset, collate_fn=collate, **loader_kwargs), collate)


def _cuda_available() -> bool:
    return torch.cuda.is_available()


def _pinned_empty(shape: tuple, dtype: torch.dtype) -> torch.Tensor:
    return torch.empty(shape, dtype=dtype, pin_memory=True)


def _check_image(image: np.ndarray) -> None:
    if image.ndim != 3:
        raise ValueError(f"images must be H, W, C arrays, got shape {image.shape}")
    if image.dtype != np.uint8:
        raise TypeError(f"images must be uint8, got {image.dtype}")


def _image_place(sample, image):
    """Where a sample's image is: None (the sample itself), an index or a key."""
    if image is not None:
        return image
    if isinstance(sample, (tuple, list)):
        return 0
    if isinstance(sample, dict):
        return "image"
    return None


def _get(sample, where):
    return sample if where is None else sample[where]


def _rebuild(samples, where, images, collated: bool = False):
    """The batch: ``images`` where the samples hold their image, everything
    else by ``default_collate`` (or as it is, ``collated``: a worker's
    batch)."""
    if where is None:
        return images
    first = samples[0]
    if isinstance(first, dict):
        return {key: (images if key == where else
                      first[key] if collated else default_collate([s[key] for s in samples]))
                for key in first}
    # A list, as default_collate gives for tuples and lists alike.
    return [images if k == where else
            first[k] if collated else default_collate([s[k] for s in samples])
            for k in range(len(first))]


# Bytes before a staging buffer's images: two int64 counts, of batches
# sent (written by the worker alone) and of batches released (by the main
# process alone); the buffer is free when they are equal. 64 keeps the
# images cache-line aligned.
_HEADER = 64
# Staging buffers a worker keeps. A worker has at most prefetch_factor
# batches in flight (2 by default) besides the one being converted; past
# this many, a batch goes into fresh shared memory as torch's own collate.
_RING_SIZE = 8


def _counters(images: torch.Tensor) -> np.ndarray:
    """The sent and released counts in the header of the staging buffer
    that holds ``images``."""
    header = torch.empty(0, dtype=torch.uint8).set_(images.untyped_storage(), 0, (16,))
    return header.view(torch.int64).numpy()


class _Ring:
    """A worker's staging buffers: uint8 batches in shared memory, each
    written again once the main process has released the batch it last
    carried. Reuse saves the fresh pages of a new batch in the worker and,
    as the main process keeps them mapped, the new mapping there: 64
    images of 224x224x3 stack into a reused buffer in a seventh of the
    time they take into fresh shared pages."""

    def __init__(self):
        self._buffers = []
        self._name = None               # (pid, token): made in the process that stages

    def stage(self, images: list):
        """The images stacked into a free buffer: (the batch tensor, the
        buffer's new count of batches sent, its place: (ring, index, sent
        for the first time)), or a fresh tensor, 0 and None."""
        _check_image(images[0])
        shape = (len(images),) + images[0].shape
        size = _HEADER + math.prod(shape)
        index = next((k for k, b in enumerate(self._buffers)
                      if b.numel() == size and _released(b)), None)
        if index is None:
            if len(self._buffers) == _RING_SIZE:
                return default_collate(images), 0, None
            buffer = torch.empty(size, dtype=torch.uint8).share_memory_()
            buffer[:_HEADER].zero_()            # share_memory_ keeps what empty held
            self._buffers.append(buffer)
            index = len(self._buffers) - 1
        if self._name is None:
            self._name = (os.getpid(), secrets.token_hex(8))
        buffer = self._buffers[index]
        staged = buffer[_HEADER:].view(shape)
        np.stack(images, out=staged.numpy())
        counts = _counters(buffer)
        counts[0] += 1
        return staged, int(counts[0]), (self._name, index, int(counts[0]) == 1)


def _released(buffer: torch.Tensor) -> bool:
    sent, released = _counters(buffer)
    return sent == released


class _ByName:
    """A staging buffer's images on their way to the main process, which
    holds the buffer already: their shape alone."""

    def __init__(self, shape: tuple):
        self.shape = shape


class _Small:
    """A small tensor on its way to the main process, as a NumPy array."""

    def __init__(self, array: np.ndarray):
        self.array = array


# Tensors beside the images up to this size travel in the pickle (a batch's
# labels: 512 bytes); larger ones as torch sends them, in shared memory.
_SMALL_BYTES = 64 * 1024


def _portable(batch, where, by_name: bool):
    """A worker's batch as it is pickled: the images by name where the main
    process holds their buffer, small tensors as NumPy arrays."""
    def field(key, value):
        if key == where:
            return _ByName(tuple(value.shape)) if by_name else value
        if isinstance(value, torch.Tensor) and value.dtype in _NUMPY_DTYPES \
                and value.nbytes <= _SMALL_BYTES and not value.requires_grad:
            return _Small(value.numpy())
        return value
    return _each_field(batch, where, field)


def _tensors_back(batch, where):
    """_portable's small tensors as tensors again (in the main process)."""
    return _each_field(batch, where, lambda key, value: torch.from_numpy(value.array)
                       if isinstance(value, _Small) else value)


def _each_field(batch, where, field):
    if where is None:
        return field(None, batch)
    if isinstance(batch, dict):
        return {key: field(key, value) for key, value in batch.items()}
    return [field(key, value) for key, value in enumerate(batch)]


# torch dtypes whose tensors NumPy holds (bfloat16 has none).
_NUMPY_DTYPES = {torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
                 torch.float16, torch.float32, torch.float64}


class _Received:
    """The main process's record of the workers' staging buffers, by place:
    each buffer's storage, mapped once, as its first batch brought it.
    torch's storage cache then has nothing to map for it again, and later
    batches name the buffer (_ByName). A buffer's record goes once its
    worker process has ended."""

    def __init__(self):
        self._storages = {}
        self._lock = threading.Lock()

    def attach(self, batch, where, place):
        """The batch with its images, as a view of their buffer."""
        ring, index, first = place
        with self._lock:
            if first:
                self._forget_ended_workers()
                self._storages[ring, index] = _get(batch, where).untyped_storage()
                return batch
            storage = self._storages[ring, index]
        shape = _get(batch, where).shape
        flat = torch.empty(0, dtype=torch.uint8).set_(storage)
        images = flat[_HEADER:_HEADER + math.prod(shape)].view(shape)
        return _each_field(batch, where, lambda key, value: images if key == where else value)

    def forget_ended_workers(self) -> None:
        with self._lock:
            self._forget_ended_workers()

    def _forget_ended_workers(self) -> None:
        alive = {process.pid for process in multiprocessing.active_children()}
        for key in [key for key in self._storages if key[0][0] not in alive]:
            del self._storages[key]


_received = _Received()
