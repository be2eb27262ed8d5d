"""PyTorch at every front door (issue 64): ``dtype=`` takes torch's dtypes
as NumPy's of the same items (torch.bfloat16 as ml_dtypes.bfloat16), on
every front door, fastblock.collate and fastblock.dask; collate gives a
torch tensor for torch samples and writes a torch ``out=``; bfloat16 and
float8 tensors cross DLPack (which NumPy's takes without them) in place.
Results are compared as bytes with the contract's NumPy reference
(``fastblock._reference.converted_ref`` of the operator's plain result).

torch is imported by the tests alone (the sanitized suite leaves this file
out: -k "not torch"); ``import fastblock`` never imports it.
"""
import subprocess
import sys

import numpy as np
import pytest

import fastblock as fb
from fastblock._call import fastpath as _fastpath
from fastblock._reference import converted_ref

torch = pytest.importorskip("torch")
ml_dtypes = pytest.importorskip("ml_dtypes")

# The result dtypes of a conversion (docs/convert.md), by name: torch's and NumPy's.
RESULTS = ["float16", "bfloat16", "float32", "float64", "uint8", "int8", "uint16", "int16"]

DOORS = {
    "space_to_depth": lambda x, **kw: fb.space_to_depth(x, 2, **kw),
    "depth_to_space": lambda x, **kw: fb.depth_to_space(x, 2, "CRD", **kw),
    "tile": lambda x, **kw: fb.tile(x, (1, 2, 1, 1), **kw),
    "transpose": lambda x, **kw: fb.transpose(x, (0, 2, 3, 1), **kw),
    "pixel_shuffle": lambda x, **kw: fb.pixel_shuffle(x, 2, **kw),
    "pixel_unshuffle": lambda x, **kw: fb.pixel_unshuffle(x, 2, **kw),
    "space_to_batch": lambda x, **kw: fb.space_to_batch(x, [1, 1, 2, 2], [0, 0, 1, 0],
                                                        [0, 0, 1, 0], **kw),
    "batch_to_space": lambda x, **kw: fb.batch_to_space(x, [1, 1, 2, 2], [0] * 4, [0] * 4, **kw),
    "rearrange": lambda x, **kw: fb.rearrange(x, "b c (h p) (w q) -> b (h w) (p q c)", p=2, q=2,
                                              **kw),
    "repeat": lambda x, **kw: fb.repeat(x, "b c h w -> b c h (w r)", r=2, **kw),
}
SENTINEL = 0x5A


def torch_dtype(name):
    if not hasattr(torch, name):
        pytest.skip(f"torch {torch.__version__} has no {name}")
    return getattr(torch, name)


def numpy_dtype(name):
    return np.dtype(getattr(ml_dtypes, name) if name == "bfloat16" else name)


def _values(shape=(4, 8, 6, 4), dtype=np.uint8):
    # Fixed data: test_convert.py draws the conversions themselves.
    rng = np.random.default_rng(64)
    return rng.integers(0, 256, shape).astype(dtype)


def tensor_bytes(t):
    """A tensor's items as bytes, in C order."""
    return t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def array_bytes(a):
    return np.ascontiguousarray(a).tobytes()


def _sentinel_tensor(shape, dtype):
    out = torch.empty(shape, dtype=dtype)
    out.view(torch.uint8).fill_(SENTINEL)
    return out


# ---------------------------------------------------------------------------
# dtype= at every front door

@pytest.mark.parametrize("affine", [False, True], ids=["plain", "scale_offset"])
@pytest.mark.parametrize("result", RESULTS)
@pytest.mark.parametrize("door", list(DOORS))
def test_torch_dtypes_at_every_front_door(door, result, affine):
    """NumPy in, NumPy out; torch in, torch out: the bytes of NumPy's dtype."""
    call = DOORS[door]
    x = _values()
    kw = dict(scale=0.75, offset=-3.5) if affine else {}
    want = converted_ref(call(x), numpy_dtype(result), **kw)
    got = call(x, dtype=torch_dtype(result), **kw)
    assert type(got) is np.ndarray and got.dtype == numpy_dtype(result)
    assert array_bytes(got) == array_bytes(want)
    got = call(torch.from_numpy(x), dtype=torch_dtype(result), **kw)
    assert isinstance(got, torch.Tensor) and got.dtype == torch_dtype(result)
    assert tuple(got.shape) == want.shape
    assert tensor_bytes(got) == array_bytes(want)


@pytest.mark.parametrize("result", RESULTS)
def test_a_torch_out_of_a_torch_dtype(result):
    x = torch.from_numpy(_values((5, 7, 3), np.float32) / 3)
    out = _sentinel_tensor((3, 5, 7), torch_dtype(result))
    address = out.data_ptr()
    got = fb.transpose(x, (2, 0, 1), out=out, dtype=torch_dtype(result), scale=2.0)
    assert got is out and out.data_ptr() == address
    want = converted_ref(x.numpy().transpose(2, 0, 1), numpy_dtype(result), 2.0)
    assert tensor_bytes(out) == array_bytes(want)


def test_a_torch_dtype_is_numpys_in_the_cache_of_calls():
    """A NumPy input with a torch dtype is run from the cache of prepared
    calls, as with NumPy's dtype: the same entry."""
    x = _values((6, 5, 3))
    _fastpath.clear()
    first = fb.transpose(x, (2, 0, 1), dtype=torch.float16, scale=0.5)
    stats = _fastpath.stats()
    again = fb.transpose(x, (2, 0, 1), dtype=torch.float16, scale=0.5)
    numpy = fb.transpose(x, (2, 0, 1), dtype=np.float16, scale=0.5)
    after = _fastpath.stats()
    assert after["stored"] == stats["stored"] and after["hits"] == stats["hits"] + 2
    assert array_bytes(first) == array_bytes(again) == array_bytes(numpy)
    bf16 = fb.transpose(x, (2, 0, 1), dtype=torch.bfloat16)
    assert fb.transpose(x, (2, 0, 1), dtype=torch.bfloat16).dtype == bf16.dtype
    assert _fastpath.stats()["hits"] == after["hits"] + 1


def test_the_input_dtype_asked_for_is_the_plain_move():
    """A torch dtype equal to the input's, without scale or offset, is the
    move for any dtype, as NumPy's is; any other pair is refused by name."""
    x = torch.arange(96, dtype=torch.int32).reshape(4, 4, 6)
    got = fb.transpose(x, (2, 0, 1), dtype=torch.int32)
    assert torch.equal(got, x.permute(2, 0, 1))
    c = torch.randn(2, 3, 4, dtype=torch.complex64)
    assert torch.equal(fb.transpose(c, (2, 0, 1), dtype=torch.complex64), c.permute(2, 0, 1))
    for source, result in [(torch.uint8, torch.int32), (torch.float32, torch.complex64),
                           (torch.float32, torch.bool), (torch.complex64, torch.float32)]:
        with pytest.raises(TypeError) as caught:
            fb.transpose(torch.zeros(2, 3, 4, dtype=source), (2, 0, 1), dtype=result)
        message = str(caught.value)
        assert str(source).split(".")[1] in message and str(result).split(".")[1] in message


@pytest.mark.parametrize("name", ["qint8", "quint8", "complex32", "bits8", "uint4",
                                  "float4_e2m1fn_x2"])
def test_torch_dtypes_without_a_numpy_one_are_refused_by_name(name):
    bad = torch_dtype(name)
    x = _values()
    for door, call in DOORS.items():
        out = np.full(call(x).shape, SENTINEL, np.uint8)
        for given in (x, torch.from_numpy(x)):
            with pytest.raises(TypeError) as caught:
                call(given, out=out, dtype=bad)
            message = str(caught.value)
            assert f"dtype=torch.{name}" in message, (door, message)
            assert all(r in message for r in RESULTS), (door, message)
        assert (out == SENTINEL).all(), f"{door}: out= written before the error"
    with pytest.raises(TypeError, match=f"dtype=torch.{name}"):
        fb.collate([x[0]] * 2, fb.transpose, (1, 2, 0), dtype=bad)


def test_bfloat16_needs_ml_dtypes(monkeypatch):
    """Without ml_dtypes NumPy has no bfloat16: dtype=torch.bfloat16 and a
    bfloat16 tensor are refused by name, saying what to install."""
    x = _values()
    tb = torch.ones(2, 3, 4, dtype=torch.bfloat16)
    out = np.full((4, 6, 4, 8), SENTINEL, np.uint8)
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)      # import ml_dtypes fails
    with pytest.raises(TypeError, match="dtype=torch.bfloat16 needs ml_dtypes"):
        fb.transpose(x, (0, 2, 3, 1), dtype=torch.bfloat16)
    with pytest.raises(TypeError, match="dtype=torch.bfloat16 needs ml_dtypes"):
        fb.transpose(torch.from_numpy(x), (0, 2, 3, 1), out=out, dtype=torch.bfloat16, scale=2.0)
    with pytest.raises(TypeError, match="x of dtype torch.bfloat16 needs ml_dtypes"):
        fb.transpose(tb, (2, 0, 1))
    with pytest.raises(TypeError, match=r"samples\[0\] of dtype torch.bfloat16 needs ml_dtypes"):
        fb.collate([tb, tb], fb.transpose, (2, 0, 1))
    assert (out == SENTINEL).all()


def test_import_fastblock_never_imports_torch():
    """torch is looked up in sys.modules, never imported: a stand-in type
    named torch.dtype is no torch dtype while torch is not imported."""
    code = """if True:
        import sys
        import numpy as np
        import fastblock as fb
        class dtype:
            pass
        dtype.__module__ = "torch"
        x = np.zeros((2, 3, 4), np.uint8)
        for bad in (dtype(), "torch.float32"):
            try:
                fb.transpose(x, (2, 0, 1), dtype=bad)
            except TypeError as error:
                assert "is not a NumPy dtype" in str(error), error
            else:
                raise AssertionError(bad)
        fb.collate([x, x], fb.transpose, (2, 0, 1), dtype=np.float16)
        assert "torch" not in sys.modules, "torch imported"
    """
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------------------
# bfloat16 and float8 tensors

def test_bfloat16_tensors_in_and_out():
    t = torch.randn(2, 8, 6, 4).to(torch.bfloat16)
    got = fb.depth_to_space(t, 2, "CRD")
    assert got.dtype == torch.bfloat16
    assert torch.equal(got, torch.nn.functional.pixel_shuffle(t, 2))
    as_numpy = t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    got = fb.transpose(t, (0, 2, 3, 1), dtype=torch.float32, scale=3.0)
    assert got.dtype == torch.float32
    want = converted_ref(as_numpy.transpose(0, 2, 3, 1), np.float32, 3.0)
    assert tensor_bytes(got) == array_bytes(want)
    out = _sentinel_tensor((2, 6, 4, 8), torch.bfloat16)
    assert fb.transpose(t, (0, 2, 3, 1), out=out) is out
    assert torch.equal(out, t.permute(0, 2, 3, 1))
    # A bfloat16 tensor's memory is read in place, as any other tensor's.
    strided = t.permute(0, 2, 3, 1)
    assert torch.equal(fb.transpose(strided, (0, 3, 1, 2)), t)


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2"])
def test_float8_tensors_are_moved(name):
    if not hasattr(ml_dtypes, name):
        pytest.skip(f"ml_dtypes {ml_dtypes.__version__} has no {name}")
    t = torch.randn(2, 8, 6, 4).to(torch_dtype(name))
    got = fb.space_to_depth(t, 2, "depth_first")
    assert got.dtype == t.dtype
    want = torch.nn.functional.pixel_unshuffle(t.view(torch.uint8), 2)
    assert torch.equal(got.view(torch.uint8), want)


# ---------------------------------------------------------------------------
# collate

def _images(n=5, shape=(6, 9, 3)):
    return [_values(shape) + i for i in range(n)]


NORMALIZE = dict(scale=np.array([1 / 58.4, 1 / 57.1, 1 / 57.4]).reshape(3, 1, 1),
                 offset=np.array([-2.1, -2.0, -1.8]).reshape(3, 1, 1))


@pytest.mark.parametrize("result", RESULTS)
def test_collate_of_tensors_is_a_tensor(result):
    images = _images()
    want = converted_ref(np.stack(images).transpose(0, 3, 1, 2), numpy_dtype(result), **NORMALIZE)
    got = fb.collate([torch.from_numpy(i) for i in images], fb.transpose, (2, 0, 1),
                     dtype=torch_dtype(result), **NORMALIZE)
    assert isinstance(got, torch.Tensor) and got.dtype == torch_dtype(result)
    assert tuple(got.shape) == want.shape and got.is_contiguous()
    assert tensor_bytes(got) == array_bytes(want)
    # NumPy samples and a NumPy dtype: a NumPy array, the same bytes.
    numpy = fb.collate(images, fb.transpose, (2, 0, 1), dtype=numpy_dtype(result), **NORMALIZE)
    assert type(numpy) is np.ndarray and array_bytes(numpy) == array_bytes(want)


def test_collate_without_conversion_and_sample_by_sample():
    """The move alone, and samples of different strides (one call per
    sample): a tensor still, bfloat16 included."""
    t = torch.randn(4, 2, 8, 6).to(torch.bfloat16)
    samples = [t[0], t[1].permute(0, 2, 1).contiguous().permute(0, 2, 1), t[2], t[3]]
    got = fb.collate(samples, fb.pixel_unshuffle, 2)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.bfloat16
    assert torch.equal(got, torch.nn.functional.pixel_unshuffle(t, 2))
    got = fb.collate(samples, fb.pixel_unshuffle, 2, dtype=torch.float32, scale=2.0)
    want = converted_ref(torch.nn.functional.pixel_unshuffle(t, 2).view(torch.int16).numpy()
                         .view(ml_dtypes.bfloat16), np.float32, 2.0)
    assert got.dtype == torch.float32 and tensor_bytes(got) == array_bytes(want)


@pytest.mark.parametrize("result", ["float32", "bfloat16", "uint8"])
def test_collate_into_a_torch_out(result):
    images = _images()
    want = converted_ref(np.stack(images).transpose(0, 3, 1, 2), numpy_dtype(result), **NORMALIZE)
    for samples in ([torch.from_numpy(i) for i in images], images):
        out = _sentinel_tensor((7, 3, 6, 9), torch_dtype(result))
        got = fb.collate(samples, fb.transpose, (2, 0, 1), out=out[1:6],
                         dtype=torch_dtype(result), **NORMALIZE)
        assert isinstance(got, torch.Tensor) and got.data_ptr() == out[1:6].data_ptr()
        assert tensor_bytes(out[1:6]) == array_bytes(want)
        assert (out[0].view(torch.uint8) == SENTINEL).all()
        assert (out[6].view(torch.uint8) == SENTINEL).all()
    out = _sentinel_tensor((5, 3, 6, 9), torch_dtype(result))
    assert fb.collate(images, fb.transpose, (2, 0, 1), out=out, dtype=torch_dtype(result),
                      **NORMALIZE) is out
    # torch samples into a NumPy out: that array.
    numpy_out = np.zeros((5, 3, 6, 9), numpy_dtype(result))
    assert fb.collate([torch.from_numpy(i) for i in images], fb.transpose, (2, 0, 1),
                      out=numpy_out, dtype=numpy_dtype(result), **NORMALIZE) is numpy_out
    assert array_bytes(numpy_out) == array_bytes(want)


def test_collate_follows_the_first_sample():
    images = _images(3)
    mixed = [torch.from_numpy(images[0]), images[1], torch.from_numpy(images[2])]
    assert isinstance(fb.collate(mixed, fb.transpose, (2, 0, 1)), torch.Tensor)
    got = fb.collate(mixed[::-1][1:] + mixed[:1], fb.transpose, (2, 0, 1))
    assert type(got) is np.ndarray


def test_collate_errors_write_nothing_into_a_torch_out():
    samples = [torch.from_numpy(i) for i in _images()]
    for kwargs, error, words in [
            (dict(dtype=torch.int32), TypeError, ["uint8", "int32"]),
            (dict(dtype=torch.qint8), TypeError, ["dtype=torch.qint8"]),
            (dict(dtype=torch.float32, scale=np.ones(3)), ValueError, ["scale"]),
            (dict(dtype=torch.float16), TypeError, ["out"])]:               # out is float32
        out = _sentinel_tensor((5, 3, 6, 9), torch.float32)
        with pytest.raises(error) as caught:
            fb.collate(samples, fb.transpose, (2, 0, 1), out=out, **kwargs)
        assert all(w in str(caught.value) for w in words), (kwargs, str(caught.value))
        assert (out.view(torch.uint8) == SENTINEL).all(), kwargs
    # A sample in out='s own memory.
    out = _sentinel_tensor((1, 3, 6, 9), torch.float32)
    inside = out.view(torch.uint8).reshape(-1)[:162].reshape(6, 9, 3)
    with pytest.raises(ValueError, match="shares memory"):
        fb.collate([inside], fb.transpose, (2, 0, 1), out=out, dtype=torch.float32)
    assert (out.view(torch.uint8) == SENTINEL).all()


# ---------------------------------------------------------------------------
# fastblock.dask

def test_dask_takes_torch_dtypes():
    da = pytest.importorskip("dask.array")
    import fastblock.dask as fbd
    x = _values()
    dx = da.from_array(x, chunks=(2, 8, 6, 4))
    for result in ("bfloat16", "float16", "uint8"):
        lazy = fbd.space_to_depth(dx, 2, dtype=torch_dtype(result), scale=0.75, offset=1.5)
        assert lazy.dtype == numpy_dtype(result)
        want = converted_ref(fb.space_to_depth(x, 2), numpy_dtype(result), 0.75, 1.5)
        assert array_bytes(lazy.compute()) == array_bytes(want)
    with pytest.raises(TypeError, match="dtype=torch.qint8"):
        fbd.space_to_depth(dx, 2, dtype=torch.qint8)


# ---------------------------------------------------------------------------
# pinned memory (test_interop.py checks it without a GPU, by a stand-in exporter)

@pytest.mark.skipif(not torch.cuda.is_available(), reason="pinned memory needs CUDA")
def test_pinned_tensors_in_and_out():
    """torch's pinned tensors say kDLCUDAHost; the CPU addresses them."""
    x = torch.from_numpy(_values()).pin_memory()
    assert int(x.__dlpack_device__()[0]) == 3
    want = converted_ref(fb.space_to_depth(x.numpy(), 2), np.float16, 0.5)
    out = torch.empty(want.shape, dtype=torch.float16).pin_memory()
    assert fb.space_to_depth(x, 2, out=out, dtype=torch.float16, scale=0.5) is out
    assert tensor_bytes(out) == array_bytes(want)
    new = fb.space_to_depth(x, 2, dtype=torch.float16, scale=0.5)
    assert tensor_bytes(new) == array_bytes(want)
    batch = torch.empty((2,) + want.shape, dtype=torch.float16).pin_memory()
    assert fb.collate([x, x], fb.space_to_depth, 2, out=batch, dtype=torch.float16,
                      scale=0.5) is batch
    assert tensor_bytes(batch) == array_bytes(np.stack([want, want]))
    with pytest.raises(TypeError, match="x is on device cuda:0"):
        fb.space_to_depth(x.cuda(), 2)
    with pytest.raises(TypeError, match="out is on device cuda:0"):
        fb.space_to_depth(x, 2, out=out.cuda(), dtype=torch.float16)
