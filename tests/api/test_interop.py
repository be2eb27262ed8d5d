"""Other libraries' arrays in and out through DLPack: a CPU array of a
library comes back as that library's array, read and returned without a
copy; out= may be one; host memory of a GPU's (pinned, managed) is read
and written as the CPU's; device memory is refused by name."""
import ctypes
import sys

import numpy as np
import pytest

import fastblock as fb
from fastblock._reference import converted_ref
from reference import depth_to_space_ref, space_to_depth_ref

OPERATORS = {
    "space_to_depth": (lambda x, **kw: fb.space_to_depth(x, 2, **kw),
                       lambda x: space_to_depth_ref(x, 2)),
    "depth_to_space": (lambda x, **kw: fb.depth_to_space(x, 2, "depth_first", **kw),
                       lambda x: depth_to_space_ref(x, 2, "depth_first")),
    "tile": (lambda x, **kw: fb.tile(x, (1, 2, 1, 3), **kw), lambda x: np.tile(x, (1, 2, 1, 3))),
    "transpose": (lambda x, **kw: fb.transpose(x, (0, 2, 3, 1), **kw),
                  lambda x: np.transpose(x, (0, 2, 3, 1))),
    "pixel_shuffle": (lambda x, **kw: fb.pixel_shuffle(x, 2, **kw),
                      lambda x: depth_to_space_ref(x, 2, "depth_first")),
    "pixel_unshuffle": (lambda x, **kw: fb.pixel_unshuffle(x, 2, **kw),
                        lambda x: space_to_depth_ref(x, 2, "depth_first")),
    "space_to_batch": (lambda x, **kw: fb.space_to_batch(x, [1, 1, 2, 2], [0] * 4, [0] * 4, **kw), None),
    "batch_to_space": (lambda x, **kw: fb.batch_to_space(x, [1, 1, 2, 2], [0] * 4, [0] * 4, **kw), None),
}


def _values(shape=(4, 8, 6, 10), dtype=np.float32):
    return np.arange(np.prod(shape), dtype=np.int64).reshape(shape).astype(dtype)


class Box:
    """A minimal foreign array: NumPy memory behind the DLPack protocol
    only, its module's ``from_dlpack`` (below) making new boxes."""

    def __init__(self, array, device=(1, 0)):
        self.array = array
        self.device = device

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.device


def from_dlpack(value):
    return Box(np.from_dlpack(value))


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_a_foreign_array_comes_back_foreign(name):
    run, reference = OPERATORS[name]
    x = _values()
    got = run(Box(x))
    assert isinstance(got, Box)
    np.testing.assert_array_equal(got.array, run(x) if reference is None else reference(x))


def test_the_result_is_not_copied_on_the_way_back():
    calls = []

    class Tracked(Box):
        pass

    module = sys.modules[__name__]
    original = module.from_dlpack

    def tracking(value):
        array = np.from_dlpack(value)
        calls.append(array)
        return Tracked(array)
    module.from_dlpack = tracking
    try:
        x = _values()
        got = fb.space_to_depth(Tracked(x), 2)
    finally:
        module.from_dlpack = original
    assert len(calls) == 1 and calls[0].flags.c_contiguous
    np.testing.assert_array_equal(got.array, space_to_depth_ref(x, 2))


def test_a_foreign_out_is_written_in_place_and_returned():
    x = _values()
    out_memory = np.zeros((4, 32, 3, 5), np.float32)
    out = Box(out_memory)
    assert fb.space_to_depth(x, 2, out=out) is out
    np.testing.assert_array_equal(out_memory, space_to_depth_ref(x, 2))
    assert fb.space_to_depth(Box(x), 2, out=out_memory) is out_memory


# DLPack's host memory of a GPU: kDLCUDAHost (pinned), kDLROCMHost, kDLCUDAManaged.
HOST_DEVICES = {"cuda_host": 3, "rocm_host": 11, "cuda_managed": 13}

_capsule = ctypes.pythonapi
_capsule.PyCapsule_GetName.restype = ctypes.c_char_p
_capsule.PyCapsule_GetName.argtypes = [ctypes.py_object]
_capsule.PyCapsule_GetPointer.restype = ctypes.c_void_p
_capsule.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _on_device(capsule, kind):
    """A fresh DLPack capsule of NumPy's, its tensor's device type set to
    ``kind`` (dlpack.h: the DLTensor after a versioned tensor's version,
    context, deleter and flags; its device after the data pointer)."""
    pointer = ctypes.sizeof(ctypes.c_void_p)
    name = _capsule.PyCapsule_GetName(capsule)
    managed = _capsule.PyCapsule_GetPointer(capsule, name)
    tensor = managed + (16 + 2 * pointer if name == b"dltensor_versioned" else 0)
    ctypes.c_int32.from_address(tensor + pointer).value = kind
    return capsule


class HostMemory(Box):
    """NumPy memory exported as a GPU's host memory: ``__dlpack_device__``
    says ``kind``, and so does the capsule where ``in_capsule`` (torch's
    pinned tensors say kDLCUDAHost by ``__dlpack_device__`` alone)."""

    def __init__(self, array, kind, in_capsule=True):
        super().__init__(array, (kind, 0))
        self.in_capsule = in_capsule

    def __dlpack__(self, **kwargs):
        capsule = self.array.__dlpack__(**kwargs)
        return _on_device(capsule, self.device[0]) if self.in_capsule else capsule


@pytest.mark.parametrize("in_capsule", [True, False], ids=["capsule", "device_only"])
@pytest.mark.parametrize("kind", list(HOST_DEVICES))
def test_host_memory_of_a_gpu_is_read_and_written_in_place(kind, in_capsule):
    """Pinned and managed memory is the CPU's to address: NumPy reads it,
    and so does fastblock, as x and as out= (the bytes land in the
    exporter's own memory)."""
    x = _values()
    want = space_to_depth_ref(x, 2)
    np.testing.assert_array_equal(np.from_dlpack(HostMemory(x, HOST_DEVICES[kind], in_capsule)), x)
    memory = np.zeros((4, 32, 3, 5), np.float32)
    out = HostMemory(memory, HOST_DEVICES[kind], in_capsule)
    assert fb.space_to_depth(x, 2, out=out) is out
    assert memory.tobytes() == want.tobytes()
    got = fb.space_to_depth(HostMemory(x, HOST_DEVICES[kind], in_capsule), 2)
    assert isinstance(got, Box)
    assert got.array.tobytes() == want.tobytes()
    memory[...] = 0
    converted = np.zeros((4, 32, 3, 5), np.float16)
    out = HostMemory(converted, HOST_DEVICES[kind], in_capsule)
    assert fb.space_to_depth(HostMemory(x, HOST_DEVICES[kind], in_capsule), 2, out=out,
                             dtype=np.float16, scale=0.5) is out
    assert converted.tobytes() == converted_ref(want, np.float16, 0.5).tobytes()


def test_collate_writes_host_memory():
    samples = [_values((8, 6, 10), np.uint8) + i for i in range(3)]
    memory = np.zeros((3, 6, 10, 8), np.float32)
    out = HostMemory(memory, HOST_DEVICES["cuda_host"])
    assert fb.collate(samples, fb.transpose, (1, 2, 0), out=out, dtype=np.float32,
                      scale=1 / 255) is out
    want = converted_ref(np.stack(samples).transpose(0, 2, 3, 1), np.float32, 1 / 255)
    assert memory.tobytes() == want.tobytes()


def test_device_memory_in_the_capsule_is_refused_and_nothing_written():
    x = _values()
    with pytest.raises((BufferError, RuntimeError)):
        np.from_dlpack(HostMemory(x, 2))      # NumPy reads the device from the capsule
    memory = np.full((4, 32, 3, 5), 7, np.float32)
    with pytest.raises(TypeError, match="out is on device cuda:0"):
        fb.space_to_depth(x, 2, out=HostMemory(memory, 2))
    with pytest.raises(TypeError, match=r"samples\[1\] is on device rocm:0"):
        fb.collate([x[0], HostMemory(x[1], 10)], fb.transpose, (1, 2, 0))
    assert (memory == 7).all()


@pytest.mark.parametrize("device, name", [((2, 0), "cuda:0"), ((10, 3), "rocm:3"), ((99, 1), "type 99:1")])
def test_device_memory_is_refused_by_name(device, name):
    with pytest.raises(TypeError, match=f"x is on device {name}"):
        fb.space_to_depth(Box(_values(), device), 2)
    with pytest.raises(TypeError, match=f"out is on device {name}"):
        fb.space_to_depth(_values(), 2, out=Box(np.zeros((4, 32, 3, 5), np.float32), device))


def test_arrays_without_dlpack_keep_the_numpy_path():
    x = _values()
    got = fb.space_to_depth(x.tolist(), 2)
    assert type(got) is np.ndarray
    np.testing.assert_array_equal(got, space_to_depth_ref(x, 2))


@pytest.fixture
def torch():
    """PyTorch, imported only by the tests that use it (the sanitized
    suite leaves them out: -k "not torch")."""
    return pytest.importorskip("torch")


class TestTorch:
    @pytest.mark.parametrize("name", sorted(OPERATORS))
    def test_tensor_in_tensor_out(self, torch, name):
        run, reference = OPERATORS[name]
        x = _values()
        got = run(torch.from_numpy(x))
        assert isinstance(got, torch.Tensor)
        np.testing.assert_array_equal(got.numpy(), run(x) if reference is None else reference(x))

    def test_pixel_shuffle_matches_torch(self, torch):
        t = torch.randn(2, 3 * 9, 17, 11)
        assert torch.equal(fb.pixel_shuffle(t, 3), torch.nn.functional.pixel_shuffle(t, 3))
        assert torch.equal(fb.depth_to_space(t, 3, "CRD"), torch.nn.functional.pixel_shuffle(t, 3))
        assert torch.equal(fb.pixel_unshuffle(t, 1), t)

    def test_a_strided_tensor_is_read_in_place_and_out_written(self, torch):
        t = torch.randn(2, 6, 8, 4).permute(0, 3, 1, 2)      # channels-last memory
        out = torch.empty(2, 16, 3, 4)
        assert fb.space_to_depth(t, 2, out=out) is out
        np.testing.assert_array_equal(out.numpy(), space_to_depth_ref(t.numpy(), 2))

    def test_the_result_shares_memory_with_the_tensor(self, torch):
        y = fb.space_to_depth(torch.ones(1, 1, 4, 4), 2)
        assert np.from_dlpack(y).ctypes.data == y.data_ptr()


def test_jax_arrays_in_and_out():
    """JAX (where installed, on the CPU): its arrays come back as JAX
    arrays; being immutable, they are refused as out=."""
    jnp = pytest.importorskip("jax.numpy")
    x = _values()
    got = fb.depth_to_space(jnp.asarray(x), 2, "depth_first")
    assert type(got) is type(jnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(got), depth_to_space_ref(x, 2, "depth_first"))
    with pytest.raises(ValueError, match="writable"):
        fb.space_to_depth(x, 2, out=jnp.zeros((4, 32, 3, 5), jnp.float32))
