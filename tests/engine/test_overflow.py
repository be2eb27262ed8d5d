"""Results too large for the address space or for ``npy_intp``: a
ValueError or MemoryError, before anything is allocated, never a crash.

The inputs are stride-0 broadcast views (a few bytes of memory standing for
2**40 items and more) and zero-size arrays with huge extents, so nothing here
allocates more than a few bytes; ``tracemalloc`` (which sees NumPy's data
allocations) checks that no attempt got through, and the process survives.
"""
import tracemalloc

import numpy as np
import pytest

import fastblock as fb

INTP_MAX = np.iinfo(np.intp).max
# Allocated memory one refused call may use (messages, small temporaries).
SMALL = 1 << 20
TOO_BIG = (ValueError, MemoryError)


def huge(shape, dtype=np.uint8):
    """A read-only array of ``shape`` backed by one item."""
    return np.broadcast_to(np.zeros((), dtype=dtype), shape)


def refused(call, *errors):
    """Run ``call``: it must raise one of ``errors`` (ValueError or
    MemoryError by default) and allocate next to nothing on the way.

    NumPy reports a failed allocation to tracemalloc as if it had succeeded
    (it traces the NULL pointer with the size asked for), so a MemoryError's
    own failed attempt shows as a peak larger than any memory (>= 2**40
    bytes); anything between SMALL and that is a real allocation."""
    errors = errors or TOO_BIG
    tracemalloc.start()
    try:
        with pytest.raises(errors) as info:
            call()
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    failed_attempt = isinstance(info.value, MemoryError) and peak >= 2**40
    assert peak < SMALL or failed_attempt, f"{peak} bytes allocated before refusing"
    assert current < SMALL or failed_attempt, f"{current} bytes still allocated"
    return info.value


# ---------------------------------------------------------------- tile

@pytest.mark.parametrize("repeats", [
    2**30,                    # 2**70 items: more than an intp counts
    2**23,                    # 2**63 items: just past INTP_MAX
    2**20,                    # 2**60 items of 8 bytes: the byte count overflows
    2**19,                    # 2**59 items, 2**62 bytes: fits an intp, no memory has it
    (2**21, 2**21),           # the product of two repeats overflows
    (2**62, 1),               # a huge leading repeat on a promoted axis
    np.array([2**63 - 1], np.int64),
    np.array([2**64 - 1], np.uint64),
    [2**64],                  # beyond every C integer type
    [10**30],
])
def test_tile_of_broadcast_view_with_enormous_repeats(repeats):
    x = huge((2**40,), np.float64)
    refused(lambda: fb.tile(x, repeats))


@pytest.mark.parametrize("shape, repeats", [
    ((2**31, 2**31), (2, 2)),          # 2**64 items from a 2**62-item view
    ((2**31, 2**31), (1, 2)),          # 2**63 items: one past INTP_MAX
    ((2**31, 2**31), (3, 1, 1)),       # a leading axis multiplies the count
    ((1, 2**62), (2, 2)),
    ((2**20,) * 3, (2**4, 1, 1)),      # 2**64
    ((3,), 2**62),                     # small input, 3 * 2**62 items
    ((2**40,), 2**10),                 # 2**50 one-byte items: no memory has them
])
def test_tile_item_count_overflow(shape, repeats):
    refused(lambda: fb.tile(huge(shape), repeats))


def test_tile_result_fitting_intp_but_not_memory_is_memory_error_or_value_error():
    # 2**50 bytes: a valid npy_intp byte count that no machine can allocate.
    x = huge((2**25,), np.uint8)
    refused(lambda: fb.tile(x, 2**25))


def test_tile_zero_size_result_of_huge_input_is_fine():
    # Zero items: nothing overflows, and nothing is copied.
    x = huge((2**40, 0))
    y = fb.tile(x, (2**10, 3))
    assert y.shape == (2**50, 0) and y.size == 0
    y = fb.tile(huge((2**40,)), 0)
    assert y.shape == (0,)


def test_tile_zero_size_result_that_numpy_cannot_describe():
    # Zero items, but the other extents multiply past npy_intp: NumPy
    # itself cannot describe that array, so a ValueError is the answer.
    refused(lambda: fb.tile(np.zeros((0, 2), np.float64), (1, 2**62)))
    refused(lambda: fb.tile(np.zeros((0, 1)), (1, 2**64)))


def test_tile_zero_byte_items():
    # np.dtype([]) items have no bytes: a huge count may be made or refused,
    # but an item count past npy_intp must be refused.
    x = np.zeros(3, dtype=np.dtype([]))
    refused(lambda: fb.tile(x, 2**62))
    try:
        y = fb.tile(x, 2**40)
    except TOO_BIG:
        pass
    else:
        assert y.shape == (3 * 2**40,) and y.nbytes == 0


def test_tile_with_out_never_allocates():
    out = np.empty((2, 6))
    with pytest.raises((ValueError, TypeError)):
        fb.tile(huge((2**40,)), 2**30, out=out)


# ---------------------------------------------------------------- block operators

NEAR_2_31 = [2**31 - 1, 2**31, 2**31 + 1, 2**32, 2**32 + 1]
NEAR_2_63 = [2**62, 2**63 - 1, 2**63, 2**64, 2**100]


@pytest.mark.parametrize("bs", NEAR_2_31 + NEAR_2_63)
@pytest.mark.parametrize("data_format", ["channels_first", "channels_last"])
def test_space_to_depth_huge_block_size_on_a_small_input(bs, data_format):
    # 2, 4, 6... are not divisible by a huge block size: ValueError.
    x = np.zeros((1, 2, 4, 6), np.float32)
    refused(lambda: fb.space_to_depth(x, bs, data_format=data_format), ValueError)


@pytest.mark.parametrize("bs", NEAR_2_31 + NEAR_2_63)
def test_depth_to_space_huge_block_size_on_a_small_input(bs):
    x = np.zeros((1, 8, 2, 2), np.float32)
    refused(lambda: fb.depth_to_space(x, bs), ValueError)


@pytest.mark.parametrize("bs", NEAR_2_31 + NEAR_2_63)
@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_space_to_depth_block_size_power_overflows_channels(bs, k):
    # Zero spatial extents divide by anything; the result has C * bs**K
    # channels, past npy_intp for most of these: ValueError (or MemoryError),
    # else a zero-size result.
    x = np.zeros((1, 3) + (0,) * k, np.float64)
    channels = 3 * bs**k
    shape = (1, channels) + (0,) * k
    if channels * x.itemsize > INTP_MAX:
        refused(lambda: fb.space_to_depth(x, bs))
    else:
        y = fb.space_to_depth(x, bs)
        assert y.shape == shape and y.size == 0


@pytest.mark.parametrize("bs", NEAR_2_31 + NEAR_2_63)
@pytest.mark.parametrize("k", [1, 2, 3])
def test_depth_to_space_block_size_power_overflows_spatial(bs, k):
    # No channels: bs**K divides 0; the spatial extents become D * bs.
    x = np.zeros((1, 0) + (1,) * k, np.uint8)
    nonzero_items = bs**k
    if bs > INTP_MAX or nonzero_items > INTP_MAX:
        refused(lambda: fb.depth_to_space(x, bs))
    else:
        y = fb.depth_to_space(x, bs)
        assert y.shape == (1, 0) + (bs,) * k


@pytest.mark.parametrize("op, shape, bs, result_items", [
    # 2**62 one-byte items from a broadcast input: fits npy_intp, not memory.
    ("space_to_depth", (1, 1, 2**31, 2**31), 2**31, 2**62),
    ("space_to_depth", (1, 2**20, 2**21, 2**21), 2**20, 2**62),
    ("depth_to_space", (1, 2**62, 1), 2**31, 2**62),
    ("depth_to_space", (1, 2**62, 1, 1), 2**31, 2**62),
    ("depth_to_space", (2**20, 2**40, 1, 1), 2**20, 2**60),
    # channels * bs**K past npy_intp: 2**40 * 2**32
    ("space_to_depth", (1, 2**40, 2**10, 2**10), 2**10, 2**60),
    ("space_to_depth", (1, 2**30, 2**16, 2**16), 2**16, 2**62),
])
def test_block_operators_on_broadcast_inputs(op, shape, bs, result_items):
    x = huge(shape)
    assert x.size == result_items
    refused(lambda: getattr(fb, op)(x, bs))
    refused(lambda: getattr(fb, op)(x, bs, data_format="channels_last"
                                    if op == "space_to_depth" else "channels_first"))


def test_products_of_block_sizes_that_overflow():
    # K = 5 spatial axes, bs = 2**13: bs**5 = 2**65 > npy_intp.
    x = huge((1, 2**10, 1, 1, 1, 1, 1))
    refused(lambda: fb.depth_to_space(x, 2**13), ValueError)
    # ... and the channel count of space_to_depth: 2**10 * 2**65.
    z = np.zeros((1, 2**10, 0, 0, 0, 0, 0), np.uint8)
    refused(lambda: fb.space_to_depth(z, 2**13))
    # NCHW_VECT_C: C = 4 * groups, bs**2 = 2**62.
    v = huge((1, 2**40, 1, 1, 4))
    refused(lambda: fb.depth_to_space(v, 2**31, data_format="NCHW_VECT_C"), ValueError)
    w = np.zeros((1, 1, 0, 0, 4), np.uint8)
    refused(lambda: fb.space_to_depth(w, 2**31, data_format="NCHW_VECT_C"))


def test_memory_error_is_clean():
    # A MemoryError (or ValueError) leaves nothing behind: the input is intact
    # and the next call works.
    x = huge((1, 1, 2**31, 2**31))
    before = x.base.copy() if x.base is not None else None
    for _ in range(3):
        refused(lambda: fb.space_to_depth(x, 2**31))
    if before is not None:
        assert np.array_equal(x.base, before)
    y = fb.space_to_depth(np.arange(16).reshape(1, 1, 4, 4), 2)
    assert y[0, :, 0, 0].tolist() == [0, 1, 4, 5]


def test_out_of_the_right_shape_makes_no_allocation():
    # The result's shape fits an out that exists; nothing else is allocated.
    x = np.zeros((2, 3, 64, 64), np.float32)
    out = np.empty((2, 12, 32, 32), np.float32)
    tracemalloc.start()
    try:
        fb.space_to_depth(x, 2, out=out)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024


# ---------------------------------------------------------------- thread counts

@pytest.mark.parametrize("n", [2**31 - 1, 2**31, 2**32 + 1, 2**63 - 1, 2**63, 2**64, 10**30])
def test_huge_num_threads_is_a_result_or_value_error(n):
    # The contract bounds num_threads from below only: an absurd count must be
    # clamped or refused with ValueError, never OverflowError or a crash.
    x = np.arange(2 * 4 * 4 * 4).reshape(2, 4, 4, 4)
    for call, expected in [
        (lambda: fb.space_to_depth(x, 2, num_threads=n), x.reshape(2, 4, 2, 2, 2, 2)
         .transpose(0, 3, 5, 1, 2, 4).reshape(2, 16, 2, 2)),
        (lambda: fb.tile(x, 2, num_threads=n), np.tile(x, 2)),
    ]:
        try:
            y = call()
        except ValueError:
            continue
        assert np.array_equal(y, expected)


@pytest.mark.parametrize("n", [2**31, 2**40, 2**63, 2**64])
def test_huge_default_thread_count(n):
    # set_num_threads must not accept a count that makes every later call fail.
    x = np.arange(64).reshape(1, 4, 4, 4)
    before = fb.get_num_threads()
    try:
        try:
            fb.set_num_threads(n)
        except ValueError:
            assert fb.get_num_threads() == before
            return
        y = fb.depth_to_space(fb.space_to_depth(x, 2), 2)
        assert np.array_equal(y, x)
    finally:
        fb.set_num_threads(before)


def test_docstrings_state_the_error_guarantees():
    # The operators' docstrings give both guarantees: no write before every
    # argument is checked, and a clean MemoryError for a result that cannot
    # be allocated.
    for op in (fb.space_to_depth, fb.depth_to_space, fb.tile):
        doc = op.__doc__ or ""
        assert "Nothing is written" in doc, f"{op.__name__}: no-half-work guarantee undocumented"
        assert "MemoryError" in doc, f"{op.__name__}: MemoryError undocumented"
