"""transpose, pixel_shuffle / pixel_unshuffle, space_to_batch / batch_to_space.

References: NumPy (``np.transpose``; the reshape/transpose formulas of
PyTorch's PixelShuffle and of OpenVINO's SpaceToBatch-2 / BatchToSpace-2,
written below), PyTorch's CPU ``pixel_shuffle`` / ``pixel_unshuffle`` and
OpenVINO's CPU SpaceToBatch / BatchToSpace where those are installed.
"""
import itertools
import threading

import numpy as np
import pytest
from numpy.exceptions import AxisError

import fastblock as fb
from reference import assert_same_array, batch_to_space_ref, space_to_batch_ref

try:
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None


# --------------------------------------------------------------------------
# References (plain NumPy)
# --------------------------------------------------------------------------

def pixel_shuffle_ref(x, r, data_format="channels_first"):
    x = np.asarray(x)
    if data_format == "channels_last":
        return np.ascontiguousarray(np.moveaxis(pixel_shuffle_ref(np.moveaxis(x, -1, -3), r), -3, -1))
    *lead, c, h, w = x.shape
    n = len(lead)
    y = x.reshape(*lead, c // (r * r), r, r, h, w)
    order = list(range(n)) + [n, n + 3, n + 1, n + 4, n + 2]
    return np.ascontiguousarray(y.transpose(order).reshape(*lead, c // (r * r), h * r, w * r))


def pixel_unshuffle_ref(x, r, data_format="channels_first"):
    x = np.asarray(x)
    if data_format == "channels_last":
        return np.ascontiguousarray(np.moveaxis(pixel_unshuffle_ref(np.moveaxis(x, -1, -3), r), -3, -1))
    *lead, c, h, w = x.shape
    n = len(lead)
    y = x.reshape(*lead, c, h // r, r, w // r, r)
    order = list(range(n)) + [n, n + 2, n + 4, n + 1, n + 3]
    return np.ascontiguousarray(y.transpose(order).reshape(*lead, c * r * r, h // r, w // r))


def by_index(op, x, *args):
    """``op`` of an index array, then the items of ``x`` (1-based; 0 = the dtype's zero):
    a reference for any dtype, object and StringDType included."""
    index = np.arange(1, x.size + 1).reshape(x.shape)
    items = np.zeros(x.size + 1, dtype=x.dtype)
    items[1:] = x.reshape(-1)
    return items[op(index, *args)]


def c_copy(a):
    """A C-contiguous copy; unlike np.ascontiguousarray, a 0-d array stays 0-d."""
    return np.array(a, order="C", copy=True)


# --------------------------------------------------------------------------
# Inputs of every dtype
# --------------------------------------------------------------------------

def _dtype_cases():
    cases = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
             np.uint64, np.float16, np.float32, np.float64, np.longdouble, np.complex64,
             np.complex128, np.clongdouble, "M8[s]", "m8[ms]", ">i4", "S7", "U3", "V5",
             [("a", "u1"), ("b", "<f8")], [("a", "u1"), ("b", "O")], object]
    if ml_dtypes is not None:
        cases += [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn]
    cases.append(np.dtypes.StringDType())
    return [np.dtype(c) for c in cases]


DTYPES = _dtype_cases()


def make(shape, dtype, seed=0):
    """Distinct-ish values of ``dtype`` (items of ``shape``)."""
    rng = np.random.default_rng(seed)
    values = rng.integers(1, 120, size=shape)
    dtype = np.dtype(dtype)
    if dtype.kind in "OT":
        return np.array([f"s{v}" for v in values.ravel()], dtype=dtype).reshape(shape)
    if dtype.type is np.void and dtype.names is None:
        return np.frombuffer(rng.integers(0, 256, size=int(np.prod(shape)) * dtype.itemsize,
                                          dtype=np.uint8).tobytes(), dtype=dtype).reshape(shape)
    if dtype.names is not None:
        x = np.zeros(shape, dtype)
        for name in dtype.names:
            x[name] = values if dtype[name].kind != "O" else values.astype(str).astype(object)
        return x
    if dtype.kind == "b":
        return (values % 2).astype(dtype)
    if dtype.kind in "SU":
        return values.astype(str).astype(dtype)
    return values.astype(dtype)


def layouts(x):
    """x in C order, Fortran order, reversed, and as a strided slice of a larger array."""
    yield x
    if x.ndim == 0:
        return
    yield np.asfortranarray(x)
    yield x[(slice(None, None, -1),) * x.ndim]
    big = np.zeros(tuple(2 * s + 1 for s in x.shape), dtype=x.dtype)
    view = big[(slice(1, None, 2),) * x.ndim]
    view[...] = x
    yield view


# --------------------------------------------------------------------------
# transpose
# --------------------------------------------------------------------------

@pytest.mark.parametrize("rank", range(0, 7))
def test_transpose_every_permutation_or_a_sample(rank):
    rng = np.random.default_rng(rank)
    shape = tuple(int(s) for s in rng.integers(1, 5, rank))
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    perms = list(itertools.permutations(range(rank)))
    if len(perms) > 40:
        perms = [perms[i] for i in rng.choice(len(perms), 40, replace=False)]
    for perm in perms:
        for view in layouts(x):
            assert_same_array(fb.transpose(view, perm), c_copy(np.transpose(view, perm)))
    assert_same_array(fb.transpose(x), c_copy(x.T))


@pytest.mark.parametrize("axes", [(0, -1, 1), [-3, -2, -1], np.array([2, 0, 1]),
                                  np.array([-1, 0, 1], dtype=np.int8), (np.int64(1), 0, 2)])
def test_transpose_axes_forms_and_negative_axes(axes):
    x = make((3, 4, 5), np.float64)
    assert_same_array(fb.transpose(x, axes), np.ascontiguousarray(np.transpose(x, axes)))


def test_transpose_one_d_takes_an_int_and_zero_d_works():
    assert_same_array(fb.transpose(np.arange(5), 0), np.arange(5))
    assert_same_array(fb.transpose(np.float32(2.5)), np.array(2.5, np.float32))
    assert_same_array(fb.transpose(np.array(7), ()), np.array(7))
    assert_same_array(fb.transpose([[1, 2], [3, 4]]), np.array([[1, 3], [2, 4]]))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_transpose_every_dtype(dtype):
    x = make((3, 4, 5), dtype)
    for view in layouts(x):
        for perm in [(2, 0, 1), (1, 0, 2), (0, 1, 2)]:
            assert_same_array(fb.transpose(view, perm), np.ascontiguousarray(np.transpose(view, perm)))


def test_transpose_always_new_and_contiguous():
    x = np.arange(12).reshape(3, 4)
    y = fb.transpose(x, (0, 1))
    assert not np.shares_memory(x, y)
    assert_same_array(y, x)
    f = fb.transpose(np.asfortranarray(x), (0, 1))
    assert_same_array(f, x)


def test_transpose_broadcast_and_zero_size_inputs():
    b = np.broadcast_to(np.arange(4.0), (3, 4))
    assert_same_array(fb.transpose(b), np.ascontiguousarray(b.T))
    for shape in [(0,), (2, 0, 3), (0, 5)]:
        z = np.zeros(shape, np.float32)
        assert_same_array(fb.transpose(z), np.ascontiguousarray(z.T))


@pytest.mark.parametrize("shape,axes", [((1024, 768), (1, 0)), ((4, 32, 48, 40), (0, 2, 3, 1)),
                                        ((4, 48, 40, 32), (0, 3, 1, 2)),
                                        ((3, 8, 10, 12, 14), (0, 2, 3, 4, 1)),
                                        ((2, 3, 200, 300), (0, 2, 3, 1))])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.complex128])
def test_transpose_large_threaded_matches_numpy(shape, axes, dtype):
    x = make(shape, dtype)
    expected = np.ascontiguousarray(np.transpose(x, axes))
    for n in (1, 2, 3):
        assert_same_array(fb.transpose(x, axes, num_threads=n), expected)
    assert_same_array(fb.transpose(x[..., ::-1], axes, num_threads=2),
          np.ascontiguousarray(np.transpose(x[..., ::-1], axes)))


def test_transpose_out():
    x = make((6, 7, 8), np.int16)
    expected = np.ascontiguousarray(np.transpose(x, (2, 0, 1)))
    out = np.empty((8, 6, 7), np.int16)
    assert fb.transpose(x, (2, 0, 1), out=out) is out
    np.testing.assert_array_equal(out, expected)
    strided = np.zeros((16, 6, 14), np.int16)[::2, :, ::-2]
    assert fb.transpose(x, (2, 0, 1), out=strided) is strided
    np.testing.assert_array_equal(strided, expected)
    fortran = np.empty((8, 6, 7), np.int16, order="F")
    np.testing.assert_array_equal(fb.transpose(x, (2, 0, 1), out=fortran), expected)
    objects = np.empty((8, 6, 7), object)
    xo = x.astype(object)
    assert fb.transpose(xo, (2, 0, 1), out=objects) is objects
    np.testing.assert_array_equal(objects, expected.astype(object))


def test_transpose_out_errors_leave_out_untouched():
    x = np.arange(12).reshape(3, 4)
    with pytest.raises(ValueError, match="shape"):
        fb.transpose(x, out=np.empty((3, 4), x.dtype))
    with pytest.raises(TypeError, match="dtype"):
        fb.transpose(x, out=np.empty((4, 3), np.float32))
    with pytest.raises(ValueError, match="shares memory"):
        fb.transpose(x, (0, 1), out=x)
    out = np.full((4, 3), -1)
    with pytest.raises(ValueError, match="repeated axis"):
        fb.transpose(x, (0, 0), out=out)
    assert (out == -1).all()


@pytest.mark.parametrize("axes,error,match", [
    ((0, 0, 1), ValueError, "repeated axis in transpose"),
    ((0, 1, -3), ValueError, "repeated axis in transpose"),
    ((0, 1, 3), AxisError, "axis 3 is out of bounds for array of dimension 3"),
    ((0, 1, -4), AxisError, "axes"),
    ((0, 1), ValueError, "axes don't match array"),
    ((0, 1, 2, 3), ValueError, "axes don't match array"),
    ((0.0, 1, 2), TypeError, "axes"),
    ((True, False, 2), TypeError, "axes"),
    (np.array([0.0, 1.0, 2.0]), TypeError, "axes"),
    (np.array([[0, 1, 2]]), ValueError, "axes"),
    ("abc", TypeError, "axes"),
])
def test_transpose_axis_errors_like_numpy(axes, error, match):
    x = np.zeros((2, 3, 4))
    with pytest.raises(error, match=match):
        fb.transpose(x, axes)


def test_transpose_errors_have_numpys_types():
    x = np.zeros((2, 3, 4))
    for axes in [(0, 0, 1), (0, 1, 3), (0, 1)]:
        with pytest.raises(Exception) as ours:
            fb.transpose(x, axes)
        with pytest.raises(Exception) as theirs:
            np.transpose(x, axes)
        assert type(ours.value) is type(theirs.value)
        assert str(theirs.value) in str(ours.value)
    with pytest.raises(ValueError, match="num_threads"):
        fb.transpose(x, num_threads=0)


def test_transpose_from_several_python_threads():
    x = make((64, 48, 40), np.float32)
    expected = np.ascontiguousarray(x.transpose(2, 0, 1))
    results = [None] * 4

    def work(i):
        results[i] = fb.transpose(x, (2, 0, 1), num_threads=2)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        assert_same_array(r, expected)


# --------------------------------------------------------------------------
# pixel_shuffle / pixel_unshuffle
# --------------------------------------------------------------------------

@pytest.mark.parametrize("lead", [(), (2,), (2, 3), (1, 2, 2)])
@pytest.mark.parametrize("r", [1, 2, 3])
@pytest.mark.parametrize("data_format", ["channels_first", "channels_last"])
def test_pixel_shuffle_matches_formula(lead, r, data_format):
    if data_format == "channels_first":
        shape = (*lead, 2 * r * r, 3, 4)
    else:
        shape = (*lead, 3, 4, 2 * r * r)
    x = make(shape, np.int64)
    for view in layouts(x):
        assert_same_array(fb.pixel_shuffle(view, r, data_format), pixel_shuffle_ref(view, r, data_format))


@pytest.mark.parametrize("lead", [(), (2,), (2, 3), (1, 2, 2)])
@pytest.mark.parametrize("r", [1, 2, 3])
@pytest.mark.parametrize("data_format", ["channels_first", "channels_last"])
def test_pixel_unshuffle_matches_formula_and_inverts(lead, r, data_format):
    if data_format == "channels_first":
        shape = (*lead, 3, 2 * r, 3 * r)
    else:
        shape = (*lead, 2 * r, 3 * r, 3)
    x = make(shape, np.int64)
    for view in layouts(x):
        y = fb.pixel_unshuffle(view, r, data_format)
        assert_same_array(y, pixel_unshuffle_ref(view, r, data_format))
        assert_same_array(fb.pixel_shuffle(y, r, data_format), np.ascontiguousarray(view))


def test_pixel_shuffle_channels_last_is_moveaxis_of_channels_first():
    x = make((2, 3, 5, 4, 18), np.float32)
    expected = np.moveaxis(fb.pixel_shuffle(np.moveaxis(x, -1, -3), 3), -3, -1)
    assert_same_array(fb.pixel_shuffle(x, 3, "channels_last"), np.ascontiguousarray(expected))
    assert_same_array(fb.pixel_shuffle(x, 3, "CHANNELS_LAST"), np.ascontiguousarray(expected))


def test_pixel_ops_leading_axes_that_do_not_collapse():
    # Leading axes (3, 4) with steps that no single batch axis can express.
    base = make((4, 9, 8, 5, 6), np.float64)
    x = base.transpose(1, 0, 2, 3, 4)[::3, ::-1]
    assert x.shape[:2] == (3, 4)
    # Not a view: the leading axes do not collapse, so reshape copies.
    assert not np.shares_memory(x.reshape(12, 8, 5, 6), x)
    assert_same_array(fb.pixel_shuffle(x, 2), pixel_shuffle_ref(x, 2))
    y = base.transpose(1, 0, 2, 4, 3)[::3, ::-1, :, :, 1:5]   # [3, 4, 8, 6, 4]
    assert_same_array(fb.pixel_unshuffle(y, 2), pixel_unshuffle_ref(y, 2))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_pixel_ops_every_dtype(dtype):
    x = make((2, 8, 2, 3), dtype)
    assert_same_array(fb.pixel_shuffle(x[:, ::-1], 2), by_index(pixel_shuffle_ref, x[:, ::-1], 2))
    s = make((2, 2, 4, 6), dtype)
    assert_same_array(fb.pixel_unshuffle(s, 2, "channels_last"),
          by_index(pixel_unshuffle_ref, s, 2, "channels_last"))


@pytest.mark.parametrize("shape,r", [((4, 64, 64, 64), 2), ((2, 3, 72, 40, 45), 3)])
def test_pixel_ops_large_threaded(shape, r):
    x = make(shape, np.float32)
    expected = pixel_shuffle_ref(x, r)
    for n in (1, 2):
        assert_same_array(fb.pixel_shuffle(x, r, num_threads=n), expected)
        assert_same_array(fb.pixel_unshuffle(expected, r, num_threads=n), x)


def test_pixel_ops_out_and_zero_size():
    x = make((2, 12, 3, 4), np.uint8)
    out = np.zeros((2, 3, 12, 16), np.uint8)[:, :, ::2, ::2]
    assert fb.pixel_shuffle(x, 2, out=out) is out
    np.testing.assert_array_equal(out, pixel_shuffle_ref(x, 2))
    assert_same_array(fb.pixel_shuffle(np.zeros((0, 8, 2, 2)), 2), np.zeros((0, 2, 4, 4)))
    assert_same_array(fb.pixel_unshuffle(np.zeros((2, 0, 4, 4)), 2), np.zeros((2, 0, 2, 2)))
    assert_same_array(fb.pixel_shuffle(np.zeros((2, 8, 0, 2)), 2), np.zeros((2, 2, 0, 4)))


@pytest.mark.parametrize("call,error,match", [
    (lambda: fb.pixel_shuffle(np.zeros((8, 2, 2)), 0), ValueError, "upscale_factor must be >= 1"),
    (lambda: fb.pixel_shuffle(np.zeros((8, 2, 2)), 2.0), TypeError, "upscale_factor"),
    (lambda: fb.pixel_shuffle(np.zeros((8, 2, 2)), True), TypeError, "upscale_factor"),
    (lambda: fb.pixel_shuffle(np.zeros((6, 2, 2)), 2), ValueError, "channel count"),
    (lambda: fb.pixel_shuffle(np.zeros((4, 4)), 2), ValueError, "rank >= 3"),
    (lambda: fb.pixel_shuffle(np.zeros((4, 2, 2)), 2, "NCHW"), ValueError, "data_format"),
    (lambda: fb.pixel_unshuffle(np.zeros((1, 4, 5)), 2), ValueError, "width 5"),
    (lambda: fb.pixel_unshuffle(np.zeros((1, 3, 4)), 2), ValueError, "height 3"),
    (lambda: fb.pixel_unshuffle(np.zeros((1, 4, 4)), -1), ValueError, "downscale_factor"),
    (lambda: fb.pixel_unshuffle(np.zeros((1, 4, 4)), 2, num_threads=0), ValueError, "num_threads"),
    (lambda: fb.pixel_shuffle(np.zeros((1, 0, 2, 2)), 2 ** 62), ValueError, "too large"),
])
def test_pixel_op_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_pixel_ops_match_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    for lead, r, dtype in [((), 2, np.float32), ((3,), 3, np.float32), ((2, 3), 2, np.int64),
                           ((2, 1, 2), 1, np.uint8), ((4,), 4, np.float64), ((0,), 2, np.float32)]:
        c = int(rng.integers(1, 4))
        h, w = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        x = rng.integers(0, 100, size=(*lead, c * r * r, h, w)).astype(dtype)
        t = torch.from_numpy(x)
        assert_same_array(fb.pixel_shuffle(x, r), torch.nn.functional.pixel_shuffle(t, r).numpy())
        s = rng.integers(0, 100, size=(*lead, c, h * r, w * r)).astype(dtype)
        ts = torch.from_numpy(s)
        if s.size:
            assert_same_array(fb.pixel_unshuffle(s, r), torch.nn.functional.pixel_unshuffle(ts, r).numpy())
        else:
            # PyTorch's CPU kernel hands back the input's shape for a zero-element
            # input (pytorch/pytorch PR 192816); its meta kernel has the documented one.
            meta = torch.nn.functional.pixel_unshuffle(ts.to("meta"), r)
            assert fb.pixel_unshuffle(s, r).shape == tuple(meta.shape)
        # A non-contiguous input (PyTorch reads it through its strides too).
        v = x[..., ::-1, :]
        assert_same_array(fb.pixel_shuffle(v, r),
              torch.nn.functional.pixel_shuffle(torch.from_numpy(v.copy()), r).numpy())


# --------------------------------------------------------------------------
# space_to_batch / batch_to_space
# --------------------------------------------------------------------------

def test_space_to_batch_one_axis_every_small_padding():
    """Every block size 1..4, pads 0..4 on each side, axis size 0..5, on a
    spatial axis and on the last (channel-like) axis; and back."""
    count = 0
    for block, before, size, after in itertools.product(range(1, 5), range(5), range(6), range(5)):
        if (before + size + after) % block:
            continue
        for axis in (1, 2):
            shape = [2, 3, 3]
            shape[axis] = size
            x = make(tuple(shape), np.int32)
            blocks, pb, pe = [1, 1, 1], [0, 0, 0], [0, 0, 0]
            blocks[axis], pb[axis], pe[axis] = block, before, after
            y = fb.space_to_batch(x, blocks, pb, pe)
            assert_same_array(y, space_to_batch_ref(x, blocks, pb, pe))
            assert_same_array(fb.batch_to_space(y, blocks, pb, pe), x)
            assert_same_array(fb.batch_to_space(y, blocks, pb, pe), batch_to_space_ref(y, blocks, pb, pe))
            count += 1
    assert count > 400


def _random_batch_case(rng):
    k = int(rng.integers(1, 4))
    blocks = [1] + [int(b) for b in rng.integers(1, 4, k)]
    pb = [0] + [int(p) for p in rng.integers(0, 4, k)]
    pe = [0] + [int(p) for p in rng.integers(0, 4, k)]
    shape = [int(rng.integers(1, 4))]
    for i in range(1, k + 1):
        size = int(rng.integers(0, 6))
        while (pb[i] + size + pe[i]) % blocks[i]:
            size += 1
        shape.append(size)
    return tuple(shape), blocks, pb, pe


def test_space_to_batch_random_ranks_and_layouts():
    rng = np.random.default_rng(11)
    for _ in range(120):
        shape, blocks, pb, pe = _random_batch_case(rng)
        x = make(shape, np.int16, seed=int(rng.integers(1000)))
        for view in layouts(x):
            y = fb.space_to_batch(view, blocks, pb, pe)
            assert_same_array(y, space_to_batch_ref(view, blocks, pb, pe))
            assert_same_array(fb.batch_to_space(y[::-1][::-1], blocks, pb, pe), np.ascontiguousarray(view))


def test_batch_to_space_random_crops():
    rng = np.random.default_rng(12)
    for _ in range(120):
        k = int(rng.integers(1, 4))
        blocks = [1] + [int(b) for b in rng.integers(1, 4, k)]
        shape = [int(np.prod(blocks)) * int(rng.integers(1, 3))] + [int(s) for s in rng.integers(0, 4, k)]
        cb, ce = [0], [0]
        for i in range(1, k + 1):
            full = shape[i] * blocks[i]
            a = int(rng.integers(0, full + 1))
            cb.append(a)
            ce.append(int(rng.integers(0, full - a + 1)))
        x = make(tuple(shape), np.float64, seed=int(rng.integers(1000)))
        for view in layouts(x):
            assert_same_array(fb.batch_to_space(view, blocks, cb, ce), batch_to_space_ref(view, blocks, cb, ce))


def test_space_to_batch_tensorflow_nhwc_form():
    # tf.space_to_batch_nd(x, block_shape=[2, 2], paddings=[[1, 1], [2, 0]]) on NHWC:
    # the batch and channel entries are 1 / 0 here.
    x = make((2, 4, 6, 3), np.float32)
    y = fb.space_to_batch(x, [1, 2, 2, 1], [0, 1, 2, 0], [0, 1, 0, 0])
    assert_same_array(y, space_to_batch_ref(x, [1, 2, 2, 1], [0, 1, 2, 0], [0, 1, 0, 0]))
    assert y.shape == (8, 3, 4, 3)
    # A block of the batch's position is outermost, the batch innermost (TF's order).
    np.testing.assert_array_equal(y[1], np.pad(x, [(0, 0), (1, 1), (2, 0), (0, 0)])[1, 0::2, 0::2])


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_batch_ops_every_dtype_with_padding(dtype):
    x = make((2, 3, 5), dtype)
    blocks, pb, pe = [1, 2, 3], [0, 1, 0], [0, 0, 1]
    y = fb.space_to_batch(x, blocks, pb, pe)
    assert_same_array(y, by_index(space_to_batch_ref, x, blocks, pb, pe))
    # The padding is the dtype's zero: 0, "", b"", epoch, all-zero bytes.
    np.testing.assert_array_equal(y[0, 0], np.zeros(2, dtype))
    assert_same_array(fb.batch_to_space(y, blocks, pb, pe), x)
    assert_same_array(fb.space_to_batch(x[:, ::-1, ::2], [1, 3, 2], [0, 0, 1], [0, 0, 0]),
          by_index(space_to_batch_ref, x[:, ::-1, ::2], [1, 3, 2], [0, 0, 1], [0, 0, 0]))


def test_batch_ops_out_is_fully_written():
    x = make((3, 5, 7), np.int32)
    blocks, pb, pe = [1, 3, 2], [0, 2, 1], [0, 2, 0]
    expected = space_to_batch_ref(x, blocks, pb, pe)
    out = np.full(expected.shape, -7, np.int32)
    assert fb.space_to_batch(x, blocks, pb, pe, out=out) is out
    np.testing.assert_array_equal(out, expected)
    strided = np.full((expected.shape[0], 2 * expected.shape[1], expected.shape[2]), -7,
                      np.int32)[::-1, ::2]
    fb.space_to_batch(x, blocks, pb, pe, out=strided)
    np.testing.assert_array_equal(strided, expected)
    back = np.full((3, 5, 7), -1, np.int32, order="F")
    assert fb.batch_to_space(expected, blocks, pb, pe, out=back) is back
    np.testing.assert_array_equal(back, x)
    objects = np.full(expected.shape, None, object)
    fb.space_to_batch(x.astype(object), blocks, pb, pe, out=objects)
    np.testing.assert_array_equal(objects, expected.astype(object))


def test_batch_ops_zero_size():
    # Empty batch; an empty axis padded into an all-zero result; crops to nothing.
    assert_same_array(fb.space_to_batch(np.zeros((0, 4)), [1, 2], [0, 0], [0, 0]), np.zeros((0, 2)))
    assert_same_array(fb.space_to_batch(np.ones((2, 0), np.int8), [1, 2], [0, 1], [0, 3]), np.zeros((4, 2), np.int8))
    assert_same_array(fb.space_to_batch(np.ones((2, 0), object), [1, 2], [0, 1], [0, 1]),
          np.zeros((4, 1), object))
    assert_same_array(fb.batch_to_space(np.ones((4, 3)), [1, 2], [0, 4], [0, 2]), np.zeros((2, 0)))
    assert_same_array(fb.batch_to_space(np.ones((0, 3)), [1, 2], [0, 1], [0, 1]), np.zeros((0, 4)))


@pytest.mark.parametrize("padding", [([0, 0, 0, 0], [0, 0, 0, 0]), ([0, 3, 1, 0], [0, 1, 2, 0])])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_batch_ops_large_threaded(padding, dtype):
    x = make((4, 124, 93, 16), dtype)
    pb, pe = padding
    blocks = [1, 4, 3, 1]
    expected = space_to_batch_ref(x, blocks, pb, pe)
    for n in (1, 2):
        assert_same_array(fb.space_to_batch(x, blocks, pb, pe, num_threads=n), expected)
        assert_same_array(fb.batch_to_space(expected, blocks, pb, pe, num_threads=n), x)


def _errors():
    x = np.zeros((2, 4, 6))
    s2b, b2s = fb.space_to_batch, fb.batch_to_space
    z = [0, 0, 0]
    return [
        (lambda: s2b(np.zeros(4), [1], [0], [0]), ValueError, "rank >= 2"),
        (lambda: s2b(x, [1, 2], [0, 0], [0, 0]), ValueError, "block_shape must have one entry per axis"),
        (lambda: s2b(x, [1, 2, 2], [0, 0], z), ValueError, "pads_begin must have one entry"),
        (lambda: s2b(x, [1, 2, 2], z, [0, 0, 0, 0]), ValueError, "pads_end must have one entry"),
        (lambda: s2b(x, [2, 2, 2], z, z), ValueError, r"block_shape\[0\]"),
        (lambda: s2b(x, [1, 0, 2], z, z), ValueError, "block_shape entries must be >= 1"),
        (lambda: s2b(x, [1, 2, 2], [1, 0, 0], [1, 0, 0]), ValueError, r"pads_begin\[0\]"),
        (lambda: s2b(x, [1, 2, 2], z, [0, -2, 0]), ValueError, "pads_end entries must be >= 0"),
        (lambda: s2b(x, [1, 3, 2], z, z), ValueError, r"block_shape\[1\] = 3 must divide"),
        (lambda: s2b(x, [1, 2.0, 2], z, z), TypeError, "block_shape entry"),
        (lambda: s2b(x, [1, True, 2], z, z), TypeError, "block_shape entry"),
        (lambda: s2b(x, np.array([1.0, 2, 2]), z, z), TypeError, "block_shape must hold integers"),
        (lambda: s2b(x, np.ones((1, 3), int), z, z), ValueError, "block_shape must be 1-D"),
        (lambda: s2b(x, 2, z, z), TypeError, "block_shape must be a sequence"),
        (lambda: s2b(x, [1, [2], 2], z, z), ValueError, "1-D"),
        (lambda: s2b(x, [1, 2 ** 40, 2 ** 40], [0, 0, 0], [0, 2 ** 40 - 4, 2 ** 40 - 6]),
         ValueError, "too large"),
        (lambda: s2b(x, [1, 2, 2], z, z, num_threads=0), ValueError, "num_threads"),
        (lambda: s2b(x, [1, 2, 2], z, z, out=np.zeros((8, 3, 2))), ValueError, "shape"),
        (lambda: b2s(x, [1, 2, 2], z, z), ValueError, "must divide the batch size"),
        (lambda: b2s(np.zeros((4, 2, 3)), [1, 2, 2], [0, 2, 0], [0, 3, 0]), ValueError, "crops of axis 1"),
        (lambda: b2s(np.zeros((4, 2, 3)), [1, 2, 2], [0, 0, 0], [1, 0, 0]), ValueError, r"crops_end\[0\]"),
        (lambda: b2s(np.zeros((4, 2, 3)), [1, 2, 2], [0, -1, 0], z), ValueError, "crops_begin entries"),
        (lambda: b2s(np.zeros((4, 2, 3)), [1, 2, 2], "000", z), TypeError, "crops_begin"),
        (lambda: b2s(np.zeros((0, 2, 3)), [1, 2 ** 62, 2 ** 62], z, z), ValueError, "too large"),
    ]


@pytest.mark.parametrize("case", range(len(_errors())))
def test_batch_op_errors(case):
    call, error, match = _errors()[case]
    with pytest.raises(error, match=match):
        call()


def test_batch_op_errors_leave_out_untouched():
    x = np.ones((2, 4, 6))
    out = np.full((8, 2, 3), 5.0)
    with pytest.raises(ValueError):
        fb.space_to_batch(x, [1, 2, 2], [0, 0, 0], [0, 0, 0], out=out, num_threads=0)
    with pytest.raises(ValueError, match="shares memory"):
        fb.batch_to_space(out, [1, 2, 2], [0, 0, 0], [0, 0, 0], out=out.reshape(2, 4, 6))
    assert (out == 5.0).all()


def _openvino():
    ov = pytest.importorskip("openvino")
    import openvino.opset1 as ops1
    import openvino.opset2 as ops2
    core = ov.Core()

    def run(op, x, *args):
        data = ops1.parameter(list(x.shape), dtype=x.dtype)
        node = op(data, *[np.array(a, dtype=np.int64) for a in args])
        compiled = core.compile_model(ov.Model([node], [data]), "CPU")
        return np.asarray(compiled(x)[0])

    return (lambda x, *a: run(ops2.space_to_batch, x, *a),
            lambda x, *a: run(ops2.batch_to_space, x, *a))


@pytest.mark.slow  # compiles 15 OpenVINO models per dtype (0.7 s)
@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.int64, np.float16])
def test_batch_ops_match_openvino(dtype):
    ov_s2b, ov_b2s = _openvino()
    rng = np.random.default_rng(5)
    cases = [((2, 3, 4, 5), [1, 1, 2, 3], [0, 0, 1, 0], [0, 0, 1, 1]),
             ((1, 6, 5, 3), [1, 2, 2, 1], [0, 1, 0, 0], [0, 1, 1, 0]),
             ((2, 4, 7), [1, 4, 3], [0, 3, 1], [0, 1, 1]),
             ((3, 2, 3, 4, 2), [1, 2, 3, 2, 1], [0, 1, 2, 0, 0], [0, 1, 1, 0, 0]),
             ((2, 5), [1, 3], [0, 2], [0, 2])]
    for shape, blocks, pb, pe in cases:
        x = rng.integers(0, 100, size=shape).astype(dtype)
        y = fb.space_to_batch(x, blocks, pb, pe)
        assert_same_array(y, ov_s2b(x, blocks, pb, pe))
        assert_same_array(fb.batch_to_space(y, blocks, pb, pe), ov_b2s(y, blocks, pb, pe))
        # Crops that differ from the pads (BatchToSpace on its own).
        cb = [0] + [min(p + 1, s * b) for p, s, b in zip(pb[1:], y.shape[1:], blocks[1:])]
        ce = [0] + [0] * (len(shape) - 1)
        assert_same_array(fb.batch_to_space(y, blocks, cb, ce), ov_b2s(y, blocks, cb, ce))


def test_space_to_batch_keeps_reference_counts():
    import sys
    item = object()
    x = np.empty((1, 5), dtype=object)
    x[...] = [[item] * 5]
    before = sys.getrefcount(item)
    y = fb.space_to_batch(x, [1, 2], [0, 1], [0, 0])
    assert y.tolist() == [[0, item, item], [item, item, item]]
    assert sys.getrefcount(item) == before + 5
    z = fb.batch_to_space(y, [1, 2], [0, 1], [0, 0])
    assert sys.getrefcount(item) == before + 10
    del y, z
    assert sys.getrefcount(item) == before
