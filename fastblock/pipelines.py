"""fastblock in data pipelines: a column of uint8 ``H, W, C`` images turned
into a model's input (float32, float16, bfloat16 or float64, NCHW or NHWC,
per channel mean and std) in one pass, for

- **Ray Data**: :class:`RayImages`, for ``Dataset.map_batches(...,
  batch_format="numpy")``, whose batches hold the column as one
  ``N, H, W, C`` array (read-only when Ray lends it without a copy);
- **Hugging Face datasets**: :class:`HFImages`, for
  ``Dataset.with_transform``, whose batches hold the column as a list of
  images (PIL images, arrays or tensors), converted in one call.

>>> from fastblock.pipelines import RayImages, HFImages
>>> ds = ds.map_batches(RayImages("image", mean=(0.485, 0.456, 0.406),
...                               std=(0.229, 0.224, 0.225)), batch_format="numpy")
>>> hf = hf.with_transform(HFImages("image", mean=(0.485, 0.456, 0.406),
...                                 std=(0.229, 0.224, 0.225)))

Each image of the result is, bit for bit, ``fastblock.transpose(img, (2, 0,
1), dtype=dtype, scale=1 / (255 * std), offset=-mean / std)`` (axes ``(0,
1, 2)`` for NHWC), ``mean`` and ``std`` as float64 arrays:
``(x / 255 - mean) / std`` folded into one multiply and one add
(``docs/convert.md`` gives the rule of each step). Without ``mean`` and
``std`` it is ``x`` converted.

Importing this module imports neither Ray, datasets nor torch: the classes
take NumPy's dtypes or torch's, and :class:`HFImages` imports torch only to
hand out torch tensors.
"""
from __future__ import annotations

import importlib.util
import sys
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from ._call.convert import result_dtype
from ._ops import collate as _collate, permute as _permute
from ._reused import ReusedResults

__all__ = ["RayImages", "HFImages"]

# The result dtypes, by NumPy name: the float types a model reads, and
# uint8 to move the channels alone.
_RESULTS = ("float32", "float16", "bfloat16", "float64", "uint8")

# RayImages' results, kept for reuse in each process: Ray makes a task's
# function anew for each task, and copies each result into its object store
# once the task has given it, so one or two suffice (a batch of 64 of
# 224x224 float32: 38 MB each).
_RAY_RESULTS = ReusedResults(kept=2)

# PIL's modes whose bytes (Image.tobytes) are numpy.asarray's H, W, C uint8
# items, by their channel count.
_PIL_BYTE_MODES = {"RGB": 3, "RGBA": 4}


def _affine(mean, std):
    """The folded scale and offset of ``(x / 255 - mean) / std``, float64,
    one a channel; (None, None) without mean and std."""
    if mean is None and std is None:
        return None, None
    if mean is None or std is None:
        raise ValueError("mean and std go together: give both or neither")
    mean = np.asarray(mean, np.float64).ravel()
    std = np.asarray(std, np.float64).ravel()
    if mean.shape != std.shape:
        raise ValueError(f"mean and std must have one value a channel each, got {mean.size} "
                         f"and {std.size}")
    return 1.0 / (255.0 * std), -mean / std


def _result_dtype(dtype) -> np.dtype:
    """``dtype`` (NumPy's or torch's) as a NumPy dtype of _RESULTS."""
    refusal = f"dtype must be one of {', '.join(_RESULTS)} (NumPy's or torch's), got {dtype!r}"
    try:
        found = result_dtype(dtype)
    except TypeError as error:
        raise TypeError(refusal) from error
    if found.name not in _RESULTS:
        raise TypeError(refusal)
    return found


class _ImageColumn:
    """What both pipelines share: the column's name, the conversion, and
    its checks on the images."""

    def __init__(self, column: str = "image", dtype: Any = np.float32,
                 mean: Optional[Sequence[float]] = None, std: Optional[Sequence[float]] = None,
                 channels_last: bool = False, num_threads: Optional[int] = None):
        self.column = column
        self.dtype = _result_dtype(dtype)
        self.scale, self.offset = _affine(mean, std)
        self.channels_last = bool(channels_last)
        self.num_threads = num_threads

    def _images_of(self, batch) -> Any:
        """The batch's column; KeyError naming it where the batch has none."""
        if not isinstance(batch, Mapping):
            raise TypeError(f"a batch must be a dict of column -> values, got "
                            f"{type(batch).__name__}")
        if self.column not in batch:
            raise KeyError(f"column {self.column!r} is not in the batch; its columns: "
                           f"{', '.join(map(repr, batch))}")
        return batch[self.column]

    def _check(self, shape: tuple, dtype: np.dtype) -> None:
        """One image's shape and dtype, and the channels against mean and std."""
        if len(shape) != 3:
            raise ValueError(f"column {self.column!r}: images must be H, W, C arrays, got an "
                             f"image of shape {shape}")
        if dtype != np.uint8:
            raise TypeError(f"column {self.column!r}: images must be uint8, got {dtype}")
        if self.scale is not None and self.scale.size not in (1, shape[2]):
            raise ValueError(f"mean and std have {self.scale.size} values, the images of column "
                             f"{self.column!r} {shape[2]} channels")

    def _keywords(self) -> dict:
        """dtype, scale and offset, the channels the result's last axis
        (channels_last) or the one before the image's rows."""
        keywords = {"dtype": self.dtype, "num_threads": self.num_threads}
        if self.scale is not None:
            shape = (-1,) if self.channels_last else (-1, 1, 1)
            keywords["scale"] = self.scale.reshape(shape)
            keywords["offset"] = self.offset.reshape(shape)
        return keywords

    def _convert_stack(self, images: np.ndarray,
                       results: Optional[ReusedResults] = None) -> np.ndarray:
        """An ``N, H, W, C`` batch converted, one call, into an array of
        ``results`` or a new one (bfloat16 as ml_dtypes')."""
        self._check(images.shape[1:], images.dtype)
        out = None
        if results is not None:
            out = results.take(self._result_shape(len(images), images.shape[1:]), self.dtype)
        axes = (0, 1, 2, 3) if self.channels_last else (0, 3, 1, 2)
        return _permute.transpose(images, axes, out=out, **self._keywords())

    def _result_shape(self, n: int, hwc: tuple) -> tuple:
        h, w, c = hwc
        return (n, h, w, c) if self.channels_last else (n, c, h, w)


class RayImages(_ImageColumn):
    """The ``fn`` of Ray Data's ``Dataset.map_batches(fn,
    batch_format="numpy")``: the batch with its ``column`` (an ``N, H, W,
    C`` uint8 array, read-only or not) replaced by its images converted,
    one ``fastblock.transpose`` call a batch.

    ``column``: the image column. ``dtype``: float32 (default), float16,
    bfloat16, float64, or uint8 (the channels moved alone), NumPy's or
    torch's. ``mean``, ``std``: one value a channel (or one for all), in
    units of the full scale (torchvision's Normalize after ToTensor); both
    or neither. ``channels_last``: ``N, H, W, C`` results instead of
    ``N, C, H, W``. ``num_threads``: fastblock's threads a batch (default
    :func:`fastblock.get_num_threads`).

    Ray's blocks are Arrow tables, and Arrow has no bfloat16: a bfloat16
    column would be kept as pickled rows. So a bfloat16 result leaves as
    its bits, an int16 array (the items unchanged), which
    ``x.view(ml_dtypes.bfloat16)`` or torch's ``t.view(torch.bfloat16)``
    reads back without a copy.

    Raises KeyError where the batch has no ``column``, ValueError where it
    is not one ``N, H, W, C`` array (a column of images of several shapes
    is an array of objects) or the channels do not match ``mean``, and
    TypeError where the images are not uint8.
    """

    def __call__(self, batch: Mapping[str, np.ndarray]) -> dict:
        images = self._images_of(batch)
        if not isinstance(images, np.ndarray):
            raise TypeError(f"column {self.column!r} must be a NumPy array (map_batches(..., "
                            f"batch_format='numpy')), got {type(images).__name__}")
        if images.dtype == object:
            raise ValueError(f"column {self.column!r} holds images of several shapes (Ray "
                             f"gives such a column as an array of objects); this needs one "
                             f"shape: resize the images first")
        if images.ndim != 4:
            raise ValueError(f"column {self.column!r} must be N, H, W, C images, got shape "
                             f"{images.shape}")
        converted = self._convert_stack(images, _RAY_RESULTS)
        if self.dtype.name == "bfloat16":
            converted = converted.view(np.int16)
        result = dict(batch)
        result[self.column] = converted
        return result


class HFImages(_ImageColumn):
    """The transform of Hugging Face datasets' ``Dataset.with_transform``
    (and ``set_transform``): the batch with its ``column`` (a list of
    ``H, W, C`` uint8 images: PIL images, NumPy arrays, tensors, anything
    ``numpy.asarray`` makes one of) replaced by the images converted and
    stacked, one call a batch: RGB and RGBA PIL images (what datasets'
    ``Image`` feature decodes to) are read from their bytes into one
    ``N, H, W, C`` array and converted by one ``fastblock.transpose``;
    other images are read by ``numpy.asarray`` and converted by one
    :func:`fastblock.collate`.

    ``column``, ``dtype``, ``mean``, ``std``, ``num_threads``: as
    :class:`RayImages`. ``return_tensors``: ``"pt"``, a torch tensor
    (bfloat16 as ``torch.bfloat16``), ``"np"``, a NumPy array, or None
    (default): ``"pt"`` where torch is installed, else ``"np"``.
    ``channels_last``: NumPy's result is ``N, H, W, C``; torch's is
    ``N, C, H, W`` in channels_last memory (``torch.channels_last``), as
    ``fastblock.torch`` gives it.

    A batch of no rows gives a result of shape ``(0,)``. Raises KeyError
    where the batch has no ``column``, ValueError where an image is not
    ``H, W, C`` (a grey PIL image is ``H, W``: ``.convert("RGB")``), the
    images differ in shape or the channels do not match ``mean``, and
    TypeError where they are not uint8.
    """

    def __init__(self, column: str = "image", dtype: Any = np.float32,
                 mean: Optional[Sequence[float]] = None, std: Optional[Sequence[float]] = None,
                 channels_last: bool = False, num_threads: Optional[int] = None,
                 return_tensors: Optional[str] = None):
        super().__init__(column, dtype, mean, std, channels_last, num_threads)
        if return_tensors is None:
            return_tensors = "pt" if importlib.util.find_spec("torch") is not None else "np"
        if return_tensors not in ("pt", "np"):
            raise ValueError(f"return_tensors must be 'pt', 'np' or None, got {return_tensors!r}")
        self.return_tensors = return_tensors

    def __call__(self, batch: Mapping[str, Any]) -> dict:
        images = self._images_of(batch)
        stacked = _pil_stack(images)
        if stacked is not None:
            converted = self._convert_stack(stacked)
        else:
            converted = self._convert([np.asarray(image) for image in images])
        result = dict(batch)
        result[self.column] = self._wrap(converted)
        return result

    def _convert(self, images: list) -> np.ndarray:
        """The images converted into one new array, one collate call (in
        the result's own dtype; bfloat16 as ml_dtypes')."""
        if not images:
            return np.empty((0,), self.dtype)
        first = images[0]
        self._check(first.shape, first.dtype)
        for index, image in enumerate(images):
            if image.shape != first.shape or image.dtype != first.dtype:
                raise ValueError(f"column {self.column!r}: image {index} is {image.dtype} "
                                 f"{image.shape}, image 0 {first.dtype} {first.shape}; a batch "
                                 f"needs one shape: resize the images first")
        out = np.empty(self._result_shape(len(images), first.shape), self.dtype)
        axes = (0, 1, 2) if self.channels_last else (2, 0, 1)
        _collate.collate(images, _permute.transpose, axes, out=out, **self._keywords())
        return out

    def _wrap(self, out: np.ndarray) -> Any:
        """``out`` as ``return_tensors`` says (torch's shares its memory)."""
        if self.return_tensors == "np":
            return out
        import torch
        if self.dtype.name == "bfloat16":
            tensor = torch.from_numpy(out.view(np.int16)).view(torch.bfloat16)
        else:
            tensor = torch.from_numpy(out)
        return tensor.permute(0, 3, 1, 2) if self.channels_last and out.ndim == 4 else tensor


def _pil_stack(images: Sequence) -> Optional[np.ndarray]:
    """PIL images of one size and one mode of _PIL_BYTE_MODES stacked into
    one ``N, H, W, C`` uint8 array from their bytes, each image as
    ``numpy.asarray`` reads it; None for anything else. For small images
    this is the cost that counts: one bytes copy each (as numpy.asarray's
    own) and one conversion call, where numpy.asarray and a collate of the
    arrays cost about 8 us an image at 32x32."""
    pil = sys.modules.get("PIL.Image")
    if pil is None or not len(images) or not isinstance(images[0], pil.Image):
        return None
    mode, size = images[0].mode, images[0].size
    channels = _PIL_BYTE_MODES.get(mode)
    if channels is None:
        return None
    for image in images:
        if not isinstance(image, pil.Image) or image.mode != mode or image.size != size:
            return None
    width, height = size
    data = b"".join([image.tobytes() for image in images])
    return np.frombuffer(data, np.uint8).reshape(len(images), height, width, channels)
