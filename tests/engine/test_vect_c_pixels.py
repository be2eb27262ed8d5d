"""NCHW_VECT_C depth_first SpaceToDepth and DepthToSpace with bs 3 in one
pass (``fastblock/_engine/kernels/vect_c_pixels.pxi``, VectCPixels in ``_engine/operators/vect_c.pxi``): the 9
depth rows and 3 space rows of a block row at a time, by byte permutes of
AVX-512 VBMI.

Every result is compared with the documented formulas in NumPy. Widths run
through every remainder of the kernel's steps (10, 5 and 2 pixels for
1-, 2- and 4-byte items), with one and several row blocks and threads;
the widths and item types are a seeded draw of the edges
(``draws.drawn``): every width with every item type on each path this CPU
runs, and every other value, on every run; the rest sampled.
Sources and results that end where the readable memory ends show that no
load or store leaves the arrays. Copies the kernel does not take (8-byte
items, lanes or pixels not adjacent, a reversed ``out=``) keep the other
paths and are checked too.
"""
from __future__ import annotations

import ctypes
import mmap
import sys

import numpy as np
import pytest

import fastblock as fb
from draws import drawn
from fastblock import _engine
from reference import depth_to_space_ref, space_to_depth_ref
from test_fault_ahead import _values

BS = 3
HAS_KERNEL = _engine.cpu_features()["vect_c_pixels"]
OPS = ["space_to_depth", "depth_to_space"]
# The paths this CPU runs (``pixels_path`` skips "pixels" without the kernel).
PIXELS_PATHS = ["pixels", "other"] if HAS_KERNEL else ["other"]


@pytest.fixture(params=["pixels", "other"])
def pixels_path(request):
    """The kernel (where the CPU has it), or the path taken without it."""
    if request.param == "pixels" and not HAS_KERNEL:
        pytest.skip("this CPU has no AVX-512 VBMI")
    with _engine.tune(vect_c_pixels=request.param == "pixels"):
        yield request.param


def _case(op_name, space):
    """(operator, input, expected result) for a space-side array."""
    depth = space_to_depth_ref(space, BS, "depth_first", "NCHW_VECT_C")
    if op_name == "space_to_depth":
        return fb.space_to_depth, space, depth
    return fb.depth_to_space, depth, depth_to_space_ref(depth, BS, "depth_first", "NCHW_VECT_C")


def _run(op, x, **kw):
    return op(x, BS, "depth_first", "NCHW_VECT_C", **kw)


def _check_path(op_name, x, out, path):
    space, depth = (x, out) if op_name == "space_to_depth" else (out, x)
    taken = _engine.vect_c_path(space, depth, BS, op_name == "space_to_depth")
    assert (taken == "pixels") == (path == "pixels"), taken


@drawn(120, op_name=OPS, out_w=[1, 2, 3, 4, 5, 9, 10, 11, 16, 17, 19, 20, 21, 33],
       dtype=[np.uint8, np.float16, np.int16, np.float32, np.int32], num_threads=[1, 2, 3],
       pixels_path=PIXELS_PATHS,
       cover=[("out_w", "dtype", "pixels_path"), ("op_name", "pixels_path"), ("num_threads",)],
       indirect=("pixels_path",))
def test_widths_and_item_sizes(op_name, out_w, dtype, num_threads, pixels_path):
    op, x, expected = _case(op_name, _values((2, 3, 4 * BS, out_w * BS, 4), dtype))
    out = np.empty_like(expected)
    _check_path(op_name, x, out, pixels_path)
    _run(op, x, out=out, num_threads=num_threads)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(_run(op, x, num_threads=num_threads), expected)


@pytest.mark.parametrize("num_threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
@pytest.mark.parametrize("op_name", OPS)
def test_several_row_blocks(op_name, dtype, num_threads, pixels_path):
    """Rows in blocks of about 256 KiB of result, the last one shorter."""
    op, x, expected = _case(op_name, _values((1, 2, 97 * BS, 150 * BS, 4), dtype))
    np.testing.assert_array_equal(_run(op, x, num_threads=num_threads), expected)


@pytest.mark.parametrize("op_name", OPS)
def test_strided_rows_and_groups_into_a_strided_out(op_name, pixels_path):
    """Rows, groups and batches with steps on both sides; the pixels and
    lanes adjacent, so the kernel still takes it."""
    op, whole_x, whole_expected = _case(op_name, _values((4, 6, 8 * BS, 13 * BS, 4), np.uint8))
    x = whole_x[::2, 1::2, ::2]
    expected = (space_to_depth_ref(x, BS, "depth_first", "NCHW_VECT_C") if op_name == OPS[0]
                else depth_to_space_ref(x, BS, "depth_first", "NCHW_VECT_C"))
    holder = np.zeros((2, expected.shape[1] + 4, 2 * expected.shape[2], *expected.shape[3:]),
                      np.uint8)
    out = holder[:, 2:-2, ::2]
    _check_path(op_name, x, out, pixels_path)
    _run(op, x, out=out, num_threads=2)
    np.testing.assert_array_equal(out, expected)
    assert not holder[:, :2].any() and not holder[:, -2:].any() and not holder[:, :, 1::2].any()


@pytest.mark.parametrize("case", ["float64", "stepped pixels", "reversed out"])
@pytest.mark.parametrize("op_name", OPS)
def test_copies_the_kernel_does_not_take(op_name, case):
    """These keep the other paths, and give the same bytes."""
    with _engine.tune(vect_c_pixels=True):
        space = _values((1, 2, 4 * BS, 14 * BS, 4), np.float64 if case == "float64" else np.uint8)
        op, x, expected = _case(op_name, space)
        if case == "stepped pixels":
            x = x[:, :, :, ::2]
            expected = (space_to_depth_ref(x, BS, "depth_first", "NCHW_VECT_C")
                        if op_name == OPS[0]
                        else depth_to_space_ref(x, BS, "depth_first", "NCHW_VECT_C"))
        out = np.empty_like(expected)
        if case == "reversed out":
            out = np.empty_like(expected)[:, :, ::-1]
        _check_path(op_name, x, out, "other")
        _run(op, x, out=out)
        np.testing.assert_array_equal(out, expected)


def _guarded(nbytes: int):
    """``nbytes`` of zeros that end where readable memory ends (the next
    page is made inaccessible), the mapping holding them, and what
    restores the page."""
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
@pytest.mark.parametrize("out_w", [1, 4, 10, 11, 17, 23])
@pytest.mark.parametrize("op_name", OPS)
def test_no_load_or_store_past_the_arrays(op_name, out_w, dtype, pixels_path):
    """A source and a result whose last bytes are the last readable ones:
    a load or store past either would crash the test."""
    op, values, expected = _case(op_name, _values((1, 2, 2 * BS, out_w * BS, 4), dtype))
    src_bytes, src_map, src_guard = _guarded(values.nbytes)
    x = src_bytes.view(dtype).reshape(values.shape)
    x[...] = values
    dst_bytes, dst_map, dst_guard = _guarded(expected.nbytes)
    out = dst_bytes.view(dtype).reshape(expected.shape)
    _check_path(op_name, x, out, pixels_path)
    _run(op, x, out=out)
    np.testing.assert_array_equal(out, expected)
    for libc, address, size in (src_guard, dst_guard):
        libc.mprotect(address, size, mmap.PROT_READ | mmap.PROT_WRITE)
