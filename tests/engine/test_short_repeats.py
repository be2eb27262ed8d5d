"""Short repeat axes in the block kernel (``copy_block`` in
``fastblock/_engine/kernels/block.pxi``): each source item written 2 to 64 times
side by side, as ``fb.repeat(x, "r w -> r (w k)")``, ``fb.tile(x[N, 1],
(1, k))`` or an upsampling ``(h 2) (w 2)`` asks. With AVX-512 VBMI, packed
items of up to 64 bytes repeated up to 64 times go through 64-byte
permutes (register widths up to 8 bytes from 4 copies, 4- and 8-byte items
from 3); packed items of up to 16 bytes otherwise through byte shuffles of
16 source bytes at a time, in 32-byte registers with AVX2 and 16-byte ones
without (there in rows of up to 64 bytes), but register widths twice,
which are a weave; other widths through the registers of their row's
period, other counts and stepped sources through one load and k stores
an item. Items of 17 to 64 bytes go from two registers of the item, or
(20, 24, 40 or 48 bytes, 16 times or more, with AVX2) from the 32-byte
registers of their row's period. Each test is a seeded draw of its edges
(``draws.drawn``): every value, every kernel setting (``KERNELS``) with every
item width, and every kernel the rules choose, on every run; sources and
results end where readable memory ends, and every byte is compared with
``np.repeat`` or ``np.tile``."""
import sys

import numpy as np
import pytest

import fastblock as fb
from draws import drawn
from fastblock import _engine
from test_vect_c_pixels import _guarded

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="mprotect through ctypes")

DTYPES = [np.uint8, np.uint16, np.float32, np.float64, np.complex128]   # 1 to 16 bytes
# The repeat kernels each setting leaves: 64-byte permutes (with AVX-512
# VBMI), 32-byte shuffles (with AVX2), 16-byte shuffles, and the portable
# loops.
KERNELS = {"64-byte": {}, "32-byte": {"wide_shuffles": False},
           "16-byte": {"wide_shuffles": False, "avx2_repeats": False}, "portable": {"simd": False}}


def _placed(shape, dtype, fill):
    """An array of ``shape`` whose last byte is the last readable one."""
    dtype = np.dtype(dtype)
    raw, mapping, _ = _guarded(int(np.prod(shape)) * dtype.itemsize)
    array = raw.view(dtype).reshape(shape)
    array[...] = fill
    return array, mapping


def _packed_repeats_kernel(width, count, kernels):
    """The kernel describe() should name for packed ``width``-byte items
    repeated ``count`` times under ``kernels`` (the rules in the docstring)."""
    cpu = _engine.cpu_features()
    register = width in (1, 2, 4, 8, 16)
    if kernels == "portable" or not cpu["simd128"]:
        return None
    if kernels == "64-byte" and cpu["avx512_vbmi"] and (
            count >= 4 or width > 8 or not register or count == 3 and width >= 4):
        return "permutes"
    avx2 = kernels != "16-byte" and cpu["avx2"]
    if (count == 2 and register) or not (avx2 or width * count <= 64):
        return None
    return "shuffles"


def _by_periods(width, count):
    """Whether ``width``-byte items repeated ``count`` times go by the
    registers of each row's period (repeats_by_periods), where not by
    permutes, with the default settings."""
    return width in (20, 24, 40, 48) and count >= 16 and _engine.cpu_features()["avx2"]


def _register_repeats(width, count, kernels):
    """The repeats describe() should name for items of 17 to 64 bytes under
    ``kernels`` (a KERNELS name or "registers off"), where not permutes."""
    cpu = _engine.cpu_features()
    registers = (kernels not in ("portable", "registers off") and cpu["simd128"]
                 and (count < 16 or width * count < 512) and (width < 32 or cpu["avx"]))
    periods = kernels != "portable" and _by_periods(width, count)
    return "periods" if periods else "registers" if registers else None


@drawn(48, dtype=DTYPES, count=[2, 3, 4, 5, 8, 15, 16, 17], items=[1, 7, 64, 129],
       stepped=[False, True], kernels=list(KERNELS),
       cover=[("dtype", "kernels"), ("count", "kernels"), "items", "stepped"])
def test_short_repeats_against_np_repeat(dtype, count, items, stepped, kernels):
    rows = 3
    whole, source_map = _placed((rows, 2 * items if stepped else items), dtype,
                                np.arange(rows * (2 * items if stepped else items)).reshape(
                                    rows, -1) % 251 + 1)
    x = whole[:, ::2] if stepped else whole
    out, out_map = _placed((rows, items * count), dtype, 0)
    plan = _engine.describe((rows, items, count), (x.strides[0], x.strides[1], 0),
                            (out.strides[0], count * out.itemsize, out.itemsize), out.itemsize)
    if items > 1:
        # The repeat axis is the kernel's inner axis: the block kernel's repeat path.
        assert plan["kernel"] == "block" and plan["row_items"] == count, plan
    with _engine.tune(**KERNELS[kernels]):
        got = fb.repeat(x, "r w -> r (w k)", k=count, out=out)
    assert got is out
    expected = np.repeat(x, count, axis=1)
    assert out.tobytes() == expected.tobytes()
    del source_map, out_map


@drawn(72, width=range(1, 17), count=[2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 40, 63, 64],
       kernels=list(KERNELS), cover=[("width", "kernels"), ("count", "kernels")],
       path=lambda width, count, kernels: _packed_repeats_kernel(width, count, kernels))
def test_packed_items_repeated_by_shuffles(width, count, kernels):
    # Packed items of every width up to 16 bytes, each tiled ``count``
    # times. With AVX-512 VBMI (``64-byte``): fb_repeat_packed_items_wide,
    # 64 source bytes a round, the items after the last whole round read
    # and written under byte masks. Else (``32-byte`` with AVX2,
    # ``16-byte``): fb_repeat_packed_items, a round of the 16 // width
    # items in 16 source bytes, whose result's last register ends at the
    # round's end over the one before it (rounds of 1 to 4 registers
    # unrolled, more kept in registers or loaded; with AVX2, rounds under
    # 32 bytes in 16-byte registers), then the items after the last whole
    # round from a copy, their last register ending at the result's end or
    # copied under 16 bytes. Item counts reach whole rounds, one round and
    # a few items, one item, and long runs. The source's last byte and the
    # result's are the last readable ones; every byte is compared with
    # np.tile. Each case rebuilds the thread's shuffle indices (another
    # width or count than the case before).
    item = np.dtype(f"V{width}")
    per_round = 16 // width
    for items in sorted({1, per_round - 1, per_round, per_round + 1, 2 * per_round + 1, 100, 4101}
                        - {0}):
        raw = np.random.default_rng(items * count + width).integers(1, 256, items * width,
                                                                     np.uint8)
        source, source_map, _ = _guarded(items * width)
        source[...] = raw
        x = source.view(item).reshape(items, 1)
        result, out_map, _ = _guarded(items * count * width)
        out = result.view(item).reshape(items, count)
        with _engine.tune(**KERNELS[kernels]):
            plan = _engine.describe(*_engine.tile_copy_axes(x, out, (1, count)), width,
                                    dst_array=out)
            assert fb.tile(x, (1, count), out=out) is out
        if items > 1:
            assert plan["repeats"] == _packed_repeats_kernel(width, count, kernels), plan
        assert out.tobytes() == np.tile(x, (1, count)).tobytes()
        del source_map, out_map


def _check_repeated_rows(width, count, rows, gap, kernels):
    """``rows`` items of ``width`` bytes (a void dtype), each tiled ``count``
    times into rows ``gap`` items longer, under the ``kernels`` setting (a
    KERNELS name, or the settings themselves),
    with 1 and 3 threads: the source's last byte and the result's are the
    last readable ones, every byte is compared with ``np.tile``, and the
    gaps stay zero."""
    raw = np.random.default_rng(width * count + rows).integers(1, 256, rows * width, np.uint8)
    item = np.dtype(f"V{width}")
    source, source_map, _ = _guarded(rows * width)
    source[...] = raw
    x = source.view(item).reshape(rows, 1)
    result, out_map, _ = _guarded(rows * (count + gap) * width)
    whole = result.view(item).reshape(rows, count + gap)
    out = whole[:, :count]
    plan = _engine.describe(*_engine.tile_copy_axes(x, out, (1, count)), width, dst_array=out)
    if rows > 1:
        assert plan["kernel"] == "block" and plan["row_items"] == count, plan
    for num_threads in (1, 3):
        result[...] = 0
        with _engine.tune(**(KERNELS[kernels] if isinstance(kernels, str) else kernels)):
            assert fb.tile(x, (1, count), out=out, num_threads=num_threads) is out
        assert out.tobytes() == np.tile(x, (1, count)).tobytes()
        assert not whole[:, count:].tobytes().strip(b"\0")
    del source_map, out_map


@drawn(160, width=[3, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 17, 24, 33, 40, 63, 64, 65],
       count=[2, 3, 4, 5, 7, 8, 15, 40, 64, 65], rows=[1, 2, 3, 50, 1000], gap=[0, 3],
       kernels=list(KERNELS),
       cover=[("width", "kernels"), ("count", "kernels"), ("rows", "gap"), ("gap", "kernels")],
       path=lambda width, count, rows, gap, kernels: (
           _packed_repeats_kernel(width, count, kernels) if not gap and rows > 1 else None, kernels))
def test_short_repeats_of_other_widths(width, count, rows, gap, kernels):
    # Items of widths that are no register's. Packed (no `gap`) with
    # AVX-512 VBMI, up to 64 bytes repeated up to 64 times, by 64-byte
    # permutes (fb_repeat_packed_items_wide): rounds of the items that fit
    # in 64 bytes, whose last register overlaps the one before it, then
    # the last items under byte masks; packed items under 16 bytes
    # otherwise by shuffles (fb_repeat_packed_items, with 16-byte kernels). Rows
    # apart (`gap` items between them), and packed rows over 64 bytes
    # under the 16-byte setting, from 3 copies each row by the registers
    # of its period's start (fb_repeat_short_rows; from 16 copies
    # fb_repeat_rows): rows packed one after another written past their
    # end over the rows after them, never past the block's last row (here
    # the last readable byte); rows apart end with a register that ends at
    # the row's end, or a copy under 16 bytes, and leave the gap alone.
    # Two copies of rows apart, wider items, and every width without SIMD,
    # item by item.
    _check_repeated_rows(width, count, rows, gap, kernels)


@drawn(90, width=[17, 18, 23, 24, 25, 31, 32, 33, 40, 47, 48, 63, 64],
       count=[2, 3, 4, 7, 15, 16, 20],
       gap=[0, 5], kernels=[*KERNELS, "registers off"],
       cover=[("width", "kernels"), ("count", "kernels"), ("gap", "kernels")],
       path=lambda width, count, gap, kernels: (_register_repeats(width, count, kernels), gap))
def test_items_repeated_from_registers(width, count, gap, kernels):
    # Items of 17 to 64 bytes repeated 2 to 15 times (2 to 4 with the
    # stores written out), or in rows under 512 bytes, packed rows or rows
    # apart: each copy stored from two registers of the item, the second
    # ending at the item's end over the first (fb_repeat_item_rows; 16-byte
    # registers under 32 bytes, 32-byte ones with AVX from 32), unless
    # 64-byte permutes take packed rows (VBMI). Longer rows keep memcpy
    # doubling, and "registers off" (and no SIMD) item by item.
    settings = {"register_repeats": False} if kernels == "registers off" else KERNELS[kernels]
    rows = 40
    x = np.zeros((rows, 1), f"V{width}")
    out = np.zeros((rows, count + gap), f"V{width}")[:, :count]
    with _engine.tune(**settings):
        plan = _engine.describe(*_engine.tile_copy_axes(x, out, (1, count)), width, dst_array=out)
    if plan["repeats"] != "permutes":
        assert plan["repeats"] == _register_repeats(width, count, kernels), plan
    _check_repeated_rows(width, count, rows, gap, settings)


@drawn(100, width=[16, 20, 24, 28, 40, 48, 52], count=[15, 16, 17, 20, 23, 25, 32, 33, 65],
       rows=[1, 2, 37], gap=[0, 5], kernels=[*KERNELS, "periods off"],
       cover=[("width", "count"), ("kernels", "gap"), ("rows", "gap")],
       path=lambda width, count, rows, gap, kernels: (
           kernels not in ("portable", "periods off") and _by_periods(width, count), gap, rows > 1))
def test_items_repeated_by_periods(width, count, rows, gap, kernels):
    # Items of 20, 24, 40 or 48 bytes repeated 16 times or more, with
    # AVX2: each row the 3 (24, 48) or 5 (20, 40) 32-byte registers of its
    # period, lcm(width, 32) bytes, each a dword permute of the item read
    # under dword masks (the source's last item ends at the last readable
    # byte, so the mask of its second register must hold); whole periods,
    # then the period's first registers while 32 bytes are left, then one
    # register that ends at the row's end (counts that leave 8 to 24
    # bytes). Rows packed or apart (the gap left alone), unless 64-byte
    # permutes take packed rows (VBMI). The neighbouring widths, fewer
    # copies, "periods off" and no SIMD take other kernels.
    settings = {"period_repeats": False} if kernels == "periods off" else KERNELS[kernels]
    x = np.zeros((rows, 1), f"V{width}")
    out = np.zeros((rows, count + gap), f"V{width}")[:, :count]
    with _engine.tune(**settings):
        plan = _engine.describe(*_engine.tile_copy_axes(x, out, (1, count)), width, dst_array=out)
    periods = kernels not in ("portable", "periods off") and _by_periods(width, count)
    if plan["repeats"] != "permutes" and rows > 1:
        assert (plan["repeats"] == "periods") == periods, plan
    _check_repeated_rows(width, count, rows, gap, settings)


@drawn(150, width=range(1, 16), count=[16, 17, 21, 32, 33, 40, 64, 65], rows=[1, 3, 50],
       gap=[0, 3], kernels=list(KERNELS),
       cover=[("width", "kernels"), ("count", "kernels"), ("rows", "gap"), ("gap", "kernels")],
       path=lambda width, count, rows, gap, kernels: (
           _packed_repeats_kernel(width, count, kernels) if not gap and rows > 1 else None, kernels))
def test_long_repeats_by_registers(width, count, rows, gap, kernels):
    # Items of 1 to 15 bytes repeated 16 or more times: packed rows of up
    # to 64 copies by 64-byte permutes (with VBMI) or by shuffles
    # (fb_repeat_packed_items: with AVX2, or in rows of up to 64 bytes);
    # else, with 16-byte kernels, by the registers of the row's period
    # (fb_repeat_rows): whole periods,
    # then the period's first registers while 16 bytes are left, then,
    # unless the row is whole registers, one register that ends at the
    # row's end (its own shuffle of the item). Rows packed or apart (`gap`
    # items between them, left alone); without SIMD, by memcpy doubling.
    _check_repeated_rows(width, count, rows, gap, kernels)


@pytest.mark.parametrize("kernels", KERNELS)
@pytest.mark.parametrize("side", [1, 5, 64, 128])
@pytest.mark.parametrize("dtype, channels", [(np.uint8, 3), (np.uint8, 5), (np.float32, 3)])
def test_small_upsampling_keeps_the_block_kernel(dtype, channels, side, kernels):
    # Nearest-neighbour upsampling of channels-last pixels, ``(h 2) (w 2)``:
    # blocks of one image row, each pixel twice. Such a block, however
    # small, goes by 64-byte permutes (repeats_by_permutes, with VBMI) or
    # by shuffles (repeats_by_shuffles), not gathered as a tiny block
    # would be; the result starts and ends at the
    # edges of readable memory, and every byte is compared with np.repeat.
    shape = (side, side, channels)
    values = np.random.default_rng(side).integers(0, 250, shape).astype(dtype)
    x, source_map = _placed(shape, dtype, values)
    out, out_map = _placed((2 * side, 2 * side, channels), dtype, 0)
    view = np.broadcast_to(x[:, None, :, None, :], (side, 2, side, 2, channels))
    with _engine.tune(**KERNELS[kernels]):
        plan = _engine.describe(view.shape, view.strides, out.reshape(view.shape).strides,
                                x.itemsize, dst_array=out)
        got = fb.repeat(x, "h w c -> (h 2) (w 2) c", out=out, num_threads=2)
    if side >= 64 and dtype == np.uint8 and channels == 3:
        repeats = _packed_repeats_kernel(3, 2, kernels)
        assert plan["repeats"] == repeats, plan
        assert plan["kernel"] == ("block" if repeats else "gather"), plan
    assert got is out
    expected = np.repeat(np.repeat(values, 2, axis=0), 2, axis=1)
    assert out.tobytes() == expected.tobytes()
    del source_map, out_map
