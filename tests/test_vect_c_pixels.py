"""NCHW_VECT_C depth_first space_to_depth with bs 3 in one pass
(``fastblock/_pixels.pxi``, VectCPixels in ``_plans.pxi``): the 9 depth
rows of 3 space rows at a time, by byte permutes of AVX-512 VBMI.

Every result is compared with the SPEC's formulas in NumPy. Widths run
through every remainder of the kernel's steps (10, 5 and 2 pixels for
1-, 2- and 4-byte items), with one and several row blocks and threads.
Sources and results that end where the readable memory ends show that no
load or store leaves the arrays. Copies the kernel does not take (8-byte
items, lanes or pixels not adjacent, a reversed ``out=``) keep the planes and are checked too.
"""
from __future__ import annotations

import ctypes
import mmap
import sys

import numpy as np
import pytest

import fastblock as fb
from fastblock import _engine
from reference import space_to_depth_ref

BS = 3
HAS_KERNEL = _engine.set_vect_c_pixels(_engine.set_vect_c_pixels(True))


@pytest.fixture(params=["pixels", "planes"])
def pixels_path(request):
    """The kernel (where the CPU has it), or the planes."""
    if request.param == "pixels" and not HAS_KERNEL:
        pytest.skip("this CPU has no AVX-512 VBMI")
    before = _engine.set_vect_c_pixels(request.param == "pixels")
    yield request.param
    _engine.set_vect_c_pixels(before)


def _values(shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    raw = np.random.default_rng(sum(shape)).integers(0, 256, (*shape, dtype.itemsize), np.uint8)
    return raw.view(dtype).reshape(shape)


def _expect_path(x, out, path):
    assert _engine.vect_c_path(x, out, BS, True) == path


@pytest.mark.parametrize("num_threads", [1, 2, 3])
@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.int16, np.float32, np.int32])
@pytest.mark.parametrize("out_w", [1, 2, 3, 5, 9, 10, 11, 19, 20, 21, 33])
def test_widths_and_item_sizes(out_w, dtype, num_threads, pixels_path):
    x = _values((2, 3, 4 * BS, out_w * BS, 4), dtype)
    expected = space_to_depth_ref(x, BS, "depth_first", "NCHW_VECT_C")
    _expect_path(x, expected, pixels_path)
    got = fb.space_to_depth(x, BS, "depth_first", "NCHW_VECT_C", num_threads=num_threads)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("num_threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_several_row_blocks(dtype, num_threads, pixels_path):
    """Rows in blocks of about 256 KiB of result, the last one shorter."""
    x = _values((1, 2, 97 * BS, 150 * BS, 4), dtype)
    got = fb.space_to_depth(x, BS, "depth_first", "NCHW_VECT_C", num_threads=num_threads)
    np.testing.assert_array_equal(got, space_to_depth_ref(x, BS, "depth_first", "NCHW_VECT_C"))


def test_strided_rows_and_groups_into_a_strided_out(pixels_path):
    """Rows, groups and batches with steps on both sides; the pixels and
    lanes adjacent, so the kernel still takes it."""
    big = _values((3, 5, 8 * BS, 13 * BS, 4), np.uint8)
    x = big[::2, 1::2, ::2]
    expected = space_to_depth_ref(x, BS, "depth_first", "NCHW_VECT_C")
    holder = np.zeros((2, expected.shape[1] + 4, 2 * expected.shape[2], 13, 4), np.uint8)
    out = holder[:, 2:-2, ::2]
    _expect_path(x, out, pixels_path)
    fb.space_to_depth(x, BS, "depth_first", "NCHW_VECT_C", out=out, num_threads=2)
    np.testing.assert_array_equal(out, expected)
    assert not holder[:, :2].any() and not holder[:, -2:].any() and not holder[:, :, 1::2].any()


@pytest.mark.parametrize("case", ["float64", "stepped pixels", "reversed out"])
def test_copies_the_kernel_does_not_take(case):
    """These keep the planes, and give the same bytes."""
    before = _engine.set_vect_c_pixels(True)
    try:
        dtype = np.float64 if case == "float64" else np.uint8
        x = _values((1, 2, 4 * BS, 14 * BS, 4), dtype)
        if case == "stepped pixels":
            x = x[:, :, :, ::2]
        expected = space_to_depth_ref(x, BS, "depth_first", "NCHW_VECT_C")
        out = np.empty_like(expected)
        if case == "reversed out":
            out = np.empty_like(expected)[:, :, ::-1]
        assert _engine.vect_c_path(x, out, BS, True) == "planes"
        fb.space_to_depth(x, BS, "depth_first", "NCHW_VECT_C", out=out)
        np.testing.assert_array_equal(out, expected)
    finally:
        _engine.set_vect_c_pixels(before)


def _guarded(nbytes: int):
    """``nbytes`` of zeros that end where readable memory ends (the next
    page is made inaccessible), and the mapping holding them."""
    page = mmap.PAGESIZE
    size = -(-nbytes // page) * page
    mapping = mmap.mmap(-1, size + page, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    whole = np.frombuffer(mapping, np.uint8)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    if libc.mprotect(whole.ctypes.data + size, page, 0) != 0:
        pytest.skip(f"mprotect failed: errno {ctypes.get_errno()}")
    return whole[size - nbytes:size], mapping, (libc, whole.ctypes.data + size, page)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mprotect through ctypes")
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32])
@pytest.mark.parametrize("out_w", [1, 4, 10, 11, 23])
def test_no_load_or_store_past_the_arrays(out_w, dtype, pixels_path):
    """A source and a result whose last bytes are the last readable ones:
    a load or store past either would crash the test."""
    shape = (1, 2, 2 * BS, out_w * BS, 4)
    values = _values(shape, dtype)
    src_bytes, src_map, src_guard = _guarded(values.nbytes)
    x = src_bytes.view(dtype).reshape(shape)
    x[...] = values
    expected = space_to_depth_ref(values, BS, "depth_first", "NCHW_VECT_C")
    dst_bytes, dst_map, dst_guard = _guarded(expected.nbytes)
    out = dst_bytes.view(dtype).reshape(expected.shape)
    _expect_path(x, out, pixels_path)
    fb.space_to_depth(x, BS, "depth_first", "NCHW_VECT_C", out=out)
    np.testing.assert_array_equal(out, expected)
    for libc, address, size in (src_guard, dst_guard):
        libc.mprotect(address, size, mmap.PROT_READ | mmap.PROT_WRITE)
