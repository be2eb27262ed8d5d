"""Other libraries' arrays in and out through DLPack: a CPU array of a
library comes back as that library's array, read and returned without a
copy; out= may be one; device memory is refused by name."""
import sys

import numpy as np
import pytest

import fastblock as fb
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
