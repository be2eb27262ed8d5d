"""fastblock.pipelines: RayImages on the batches map_batches hands out (dicts
of NumPy arrays, read-only ones included; Ray itself in test_ray.py) and
HFImages as the transform of a Hugging Face ``datasets.Dataset`` made here,
each result checked byte for byte against the contract's NumPy expression
(``reference.converted_ref``) and against ``fastblock.transpose``, and the
errors, which name the argument at fault."""
import subprocess
import sys

import numpy as np
import pytest

import fastblock as fb
from fastblock.pipelines import HFImages, RayImages
from reference import converted_ref

MEAN = np.array([0.485, 0.456, 0.406])
STD = np.array([0.229, 0.224, 0.225])


def _bfloat16():
    return pytest.importorskip("ml_dtypes").bfloat16


def expected(x, dtype, channels_last=False, normalized=True):
    """The batch ``x`` (N, H, W, C uint8) as the rule writes it."""
    if channels_last:
        r, shape = x, (-1,)
    else:
        r, shape = x.transpose(0, 3, 1, 2), (-1, 1, 1)
    if not normalized:
        return converted_ref(r, dtype)
    return converted_ref(r, dtype, (1 / (255 * STD)).reshape(shape), (-MEAN / STD).reshape(shape))


def same_bytes(got, want):
    got, want = np.ascontiguousarray(got), np.ascontiguousarray(want)
    return got.shape == want.shape and np.array_equal(got.view(np.uint8), want.view(np.uint8))


def images(n=6, h=5, w=7, c=3, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, h, w, c), dtype=np.uint8)


# ---------------------------------------------------------------- RayImages

@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("writeable", [True, False])
def test_ray_batch_is_the_rule(dtype, channels_last, writeable):
    """The column converted, every byte the rule's (bfloat16 as its bits,
    int16), read-only columns as well; the other columns as they were."""
    dtype = _bfloat16() if dtype == "bfloat16" else np.dtype(dtype)
    x = images()
    x.flags.writeable = writeable
    labels = np.arange(len(x))
    batch = {"label": labels, "image": x}
    out = RayImages("image", dtype, MEAN, STD, channels_last)(batch)
    want = expected(x, dtype, channels_last)
    if np.dtype(dtype).name == "bfloat16":
        assert out["image"].dtype == np.int16
        want = want.view(np.int16)
    assert out["image"].dtype == want.dtype and same_bytes(out["image"], want)
    assert out["label"] is labels and batch["image"] is x


def test_ray_each_image_is_fastblock_transpose():
    """Each image of the result is fastblock.transpose of the image, as the
    module documents, bit for bit."""
    x = images(n=4)
    scale, offset = (1 / (255 * STD)).reshape(3, 1, 1), (-MEAN / STD).reshape(3, 1, 1)
    out = RayImages("pixels", np.float16, MEAN, STD)({"pixels": x})["pixels"]
    for i in range(len(x)):
        one = fb.transpose(x[i], (2, 0, 1), dtype=np.float16, scale=scale, offset=offset)
        assert same_bytes(out[i], one)


def test_ray_without_mean_and_torch_dtypes():
    """No mean and std: the images converted alone; uint8 moves the
    channels; torch dtypes name NumPy's."""
    torch = pytest.importorskip("torch")
    x = images(c=4)
    out = RayImages(dtype=torch.float16)({"image": x})["image"]
    assert out.dtype == np.float16 and same_bytes(out, expected(x, np.float16, normalized=False))
    moved = RayImages(dtype=np.uint8)({"image": x})["image"]
    assert same_bytes(moved, x.transpose(0, 3, 1, 2))
    assert RayImages(dtype=np.uint8)({"image": x[:0]})["image"].shape == (0, 4, 5, 7)


def test_ray_one_mean_for_every_channel():
    x = images(c=1)
    out = RayImages(mean=[0.5], std=[0.25])({"image": x})["image"]
    want = converted_ref(x.transpose(0, 3, 1, 2), np.float32, 1 / (255 * 0.25), -0.5 / 0.25)
    assert same_bytes(out, want)


def test_ray_errors_name_the_argument():
    call = RayImages("image", mean=MEAN, std=STD)
    with pytest.raises(KeyError, match="column 'image' is not in the batch; its columns: 'img'"):
        call({"img": images()})
    ragged = np.empty(2, object)
    ragged[0], ragged[1] = images()[0], images(h=6)[0]
    with pytest.raises(ValueError, match="column 'image' holds images of several shapes"):
        call({"image": ragged})
    with pytest.raises(ValueError, match=r"column 'image' must be N, H, W, C images, "
                                         r"got shape \(5, 7, 3\)"):
        call({"image": images()[0]})
    with pytest.raises(TypeError, match="column 'image': images must be uint8, got float32"):
        call({"image": images().astype(np.float32)})
    with pytest.raises(ValueError,
                       match="mean and std have 3 values, the images of column 'image' 4"):
        call({"image": images(c=4)})
    with pytest.raises(TypeError, match="column 'image' must be a NumPy array"):
        call({"image": list(images())})
    with pytest.raises(TypeError, match="a batch must be a dict"):
        call(images())


def test_construction_errors_name_the_argument():
    with pytest.raises(TypeError,
                       match="dtype must be one of float32, float16, bfloat16, float64, uint8"):
        RayImages(dtype=np.int32)
    with pytest.raises(TypeError, match="dtype must be one of .*got 'pixels'"):
        HFImages(dtype="pixels")
    with pytest.raises(ValueError, match="mean and std go together"):
        RayImages(mean=MEAN)
    with pytest.raises(ValueError, match="one value a channel each, got 3 and 2"):
        HFImages(mean=MEAN, std=STD[:2])
    with pytest.raises(ValueError, match="return_tensors must be 'pt', 'np' or None, got 'tf'"):
        HFImages(return_tensors="tf")


def test_import_fastblock_imports_no_pipeline_library():
    """Neither fastblock nor fastblock.pipelines imports Ray, datasets or torch."""
    code = ("import sys, fastblock, fastblock.pipelines\n"
            "loaded = {'ray', 'datasets', 'torch', 'pyarrow'} & set(sys.modules)\n"
            "assert not loaded, loaded")
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------------------------------ HFImages

def hf_dataset(x, labels=None):
    """An in-memory datasets.Dataset of PIL images (datasets' Image feature,
    PNG bytes in Arrow, as image datasets on the hub hold them)."""
    datasets = pytest.importorskip("datasets")
    pil = pytest.importorskip("PIL.Image")
    features = datasets.Features({"image": datasets.Image(), "label": datasets.Value("int64")})
    rows = {"image": [pil.fromarray(a) for a in x],
            "label": list(range(len(x))) if labels is None else labels}
    return datasets.Dataset.from_dict(rows, features=features)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("channels_last", [False, True])
def test_hf_torch_batches_are_the_rule(dtype, channels_last):
    """32x32 images through with_transform as torch tensors, every byte the
    rule's; channels_last: NCHW in channels_last memory."""
    torch = pytest.importorskip("torch")
    x = images(n=20, h=32, w=32)
    ds = hf_dataset(x).with_transform(
        HFImages("image", getattr(torch, dtype), MEAN, STD, channels_last))
    batch = ds[4:17]
    got = batch["image"]
    assert isinstance(got, torch.Tensor) and got.dtype == getattr(torch, dtype)
    assert got.shape == (13, 3, 32, 32) and batch["label"] == list(range(4, 17))
    if channels_last:
        assert got.is_contiguous(memory_format=torch.channels_last)
        got = got.permute(0, 2, 3, 1)
    np_dtype = _bfloat16() if dtype == "bfloat16" else np.dtype(dtype)
    bits = got.view(torch.int16) if dtype == "bfloat16" else got
    assert same_bytes(bits.numpy(), expected(x[4:17], np_dtype, channels_last))


def test_hf_numpy_results_and_rows():
    """return_tensors="np": NumPy arrays (NHWC with channels_last); a row
    (ds[i]) is its image of the batch."""
    pytest.importorskip("torch")
    x = images(n=9, h=32, w=32)
    ds = hf_dataset(x)
    nchw = ds.with_transform(HFImages(mean=MEAN, std=STD, return_tensors="np"))
    assert same_bytes(nchw[:]["image"], expected(x, np.float32))
    assert same_bytes(nchw[3]["image"], expected(x[3:4], np.float32)[0])
    nhwc = ds.with_transform(HFImages(dtype=np.float16, channels_last=True, return_tensors="np"))
    assert same_bytes(nhwc[2:5]["image"], expected(x[2:5], np.float16, True, normalized=False))
    assert nchw[0:0]["image"].shape == (0,)


def test_hf_each_image_is_fastblock_transpose():
    x = images(n=5, h=32, w=32)
    scale, offset = (1 / (255 * STD)).reshape(3, 1, 1), (-MEAN / STD).reshape(3, 1, 1)
    out = HFImages(mean=MEAN, std=STD, return_tensors="np")({"image": list(x)})["image"]
    for i in range(len(x)):
        assert same_bytes(out[i], fb.transpose(x[i], (2, 0, 1), dtype=np.float32, scale=scale,
                                               offset=offset))


def test_hf_default_tensors_follow_torch():
    """return_tensors=None: torch's tensors where torch is installed (it is,
    with the test extras), NumPy's where find_spec finds no torch."""
    pytest.importorskip("torch")
    assert HFImages().return_tensors == "pt"
    code = ("import sys; sys.modules['torch'] = None\n"
            "from fastblock.pipelines import HFImages\n"
            "assert HFImages().return_tensors == 'np'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_hf_errors_name_the_argument():
    pil = pytest.importorskip("PIL.Image")
    x = images(n=4, h=32, w=32)
    mixed = hf_dataset([x[0], x[1], images(n=1, h=31, w=32)[0]])
    with pytest.raises(ValueError, match=r"column 'image': image 2 is uint8 \(31, 32, 3\), "
                                         r"image 0 uint8 \(32, 32, 3\)"):
        mixed.with_transform(HFImages(mean=MEAN, std=STD))[:]
    grey = hf_dataset([x[0]])
    grey_image = pil.fromarray(x[0, :, :, 0])
    with pytest.raises(ValueError, match=r"column 'image': images must be H, W, C arrays, got an "
                                         r"image of shape \(32, 32\)"):
        HFImages()({"image": [grey_image]})
    with pytest.raises(KeyError, match="column 'pixels' is not in the batch; its columns: "
                                       "'image', 'label'"):
        grey.with_transform(HFImages("pixels"))[:]
    with pytest.raises(TypeError, match="column 'image': images must be uint8, got float64"):
        HFImages()({"image": [x[0] / 255.0]})
    with pytest.raises(ValueError, match="image 1 is float32"):
        HFImages()({"image": [x[0], x[1].astype(np.float32)]})


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "CMYK"])
def test_hf_pil_images_read_as_numpy_asarray(mode):
    """PIL images (RGB and RGBA read from their bytes, others by
    numpy.asarray) give what numpy.asarray's arrays give; mixed modes fall
    back to the arrays and their shape check."""
    pil = pytest.importorskip("PIL.Image")
    x = images(n=5, h=6, w=9, c=len(mode))
    pictures = [pil.fromarray(a, mode) for a in x]
    arrays = [np.asarray(p) for p in pictures]
    assert same_bytes(np.stack(arrays), x)
    transform = HFImages(dtype=np.float16, return_tensors="np")
    got = transform({"image": pictures})["image"]
    assert same_bytes(got, transform({"image": arrays})["image"])
    assert same_bytes(got, expected(x, np.float16, normalized=False))
    if mode == "RGB":
        rgba = pil.fromarray(images(n=1, h=6, w=9, c=4)[0], "RGBA")
        with pytest.raises(ValueError, match=r"image 2 is uint8 \(6, 9, 4\)"):
            transform({"image": pictures[:2] + [rgba]})
