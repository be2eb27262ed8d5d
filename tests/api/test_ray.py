"""fastblock.pipelines.RayImages in a real local Ray (``ray.init(num_cpus=2)``,
a few seconds to start: marked slow, ci/slow_tests.sh runs it): through
``Dataset.map_batches(..., batch_format="numpy")``, with Ray's zero-copy
(read-only) batches and its copies, every byte of the result against the
contract's NumPy expression; bfloat16 read back by torch; the error of a
column of several shapes as Ray reports it."""
import numpy as np
import pytest

from fastblock.pipelines import RayImages
from reference import converted_ref

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")

pytestmark = pytest.mark.slow

MEAN = np.array([0.485, 0.456, 0.406])
STD = np.array([0.229, 0.224, 0.225])


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield ray
    ray.shutdown()


def image_dataset(x):
    return ray.data.from_numpy(x).rename_columns({"data": "image"})


def expected(x, dtype, channels_last):
    r, shape = (x, (-1,)) if channels_last else (x.transpose(0, 3, 1, 2), (-1, 1, 1))
    return converted_ref(r, dtype, (1 / (255 * STD)).reshape(shape), (-MEAN / STD).reshape(shape))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("zero_copy", [True, False])
def test_map_batches_is_the_rule(local_ray, dtype, channels_last, zero_copy):
    """Every batch of the materialized dataset, in order, is the rule's
    (bfloat16 as its bits, int16, the form Ray's Arrow blocks hold)."""
    if dtype == "bfloat16":
        dtype = pytest.importorskip("ml_dtypes").bfloat16
    x = np.random.default_rng(1).integers(0, 256, (40, 9, 13, 3), dtype=np.uint8)
    fn = RayImages("image", dtype, MEAN, STD, channels_last)
    out = image_dataset(x).map_batches(fn, batch_format="numpy", batch_size=16,
                                       zero_copy_batch=zero_copy)
    got = out.take_batch(len(x), batch_format="numpy")["image"]
    want = expected(x, dtype, channels_last)
    if np.dtype(dtype).name == "bfloat16":
        want = want.view(np.int16)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


def test_bfloat16_reaches_torch(local_ray):
    """iter_torch_batches gives the int16 bits; .view(torch.bfloat16) is the
    rule's bfloat16, without a copy."""
    torch = pytest.importorskip("torch")
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.random.default_rng(2).integers(0, 256, (8, 6, 5, 3), dtype=np.uint8)
    out = image_dataset(x).map_batches(RayImages(dtype=torch.bfloat16, mean=MEAN, std=STD),
                                       batch_format="numpy")
    batch = next(iter(out.iter_torch_batches(batch_size=8)))["image"].view(torch.bfloat16)
    want = expected(x, ml_dtypes.bfloat16, False)
    assert batch.dtype == torch.bfloat16
    assert np.array_equal(batch.view(torch.int16).numpy(), want.view(np.int16))


def test_variable_shape_column_is_refused(local_ray):
    """Images of two shapes: Ray's column is an array of objects, refused
    with the column's name."""
    rng = np.random.default_rng(3)
    rows = [{"image": rng.integers(0, 256, (h, 7, 3), dtype=np.uint8)} for h in (5, 6)]
    ds = ray.data.from_items(rows).map_batches(RayImages("image"), batch_format="numpy",
                                                 batch_size=2)
    with pytest.raises(Exception, match="column 'image' holds images of several shapes"):
        ds.take_batch(2)
