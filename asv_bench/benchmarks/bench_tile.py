"""Tile: fastblock against the copy ceiling and against ``np.tile``.

The size of a Tile case is its result's size; the input is that divided by
the repeats. Classes (see ``common`` for what each figure means):

- ``Tile``             the grid: rank x repeat pattern x factor x dtype x
                       size x threads (default: float32 at 64 MiB;
                       FASTBLOCK_ASV_FULL=1: the full product).
- ``TileDtypes``       every item size at every size, both thread counts.
- ``TileNumPy``, ``TileDtypesNumPy``  the same cases, ``np.tile``.
- ``TilePixels``       channels-last pixels repeated along the last axis
                       ([H, W, C] by (1, 1, r), r 2, 8 and 40): pixels of 1
                       to 12 bytes, the gathered byte shuffles, the short-
                       and long-repeat kernels (FASTBLOCK_ASV_FULL=1: 64 MiB
                       too).
- ``TileMemory``       peak memory and allocations per call, at 64 MiB.
"""
from . import common
from .common import (DTYPE_GRID, DTYPE_NAMES, DTYPES, RANKS, SIZES, THREADS, TILE_FACTORS,
                     TILE_PATTERNS, grid, pixel_tile_case, tile_case)

GRID_NAMES = ["rank", "pattern", "factor", "dtype", "size", "threads"]
GRID = [
    RANKS,
    TILE_PATTERNS,
    TILE_FACTORS,
    grid(["float32"], DTYPES),
    grid(["64MiB"], SIZES),
    THREADS,
]
# The dtype sweep repeats the last axis: short runs, the harder case.
DTYPE_FIXED = dict(rank=4, pattern="inner", factor=2)


class Tile(common._FastblockBench):
    param_names = GRID_NAMES
    params = GRID

    def make_case(self, rank, pattern, factor, dtype, size, threads):
        return tile_case(rank, pattern, factor, dtype, size, threads)


class TileNumPy(common._NumpyBench):
    param_names = GRID_NAMES[:-1]
    params = GRID[:-1]

    def make_case(self, rank, pattern, factor, dtype, size):
        return tile_case(rank, pattern, factor, dtype, size, 1)


class TileDtypes(common._FastblockBench):
    param_names = DTYPE_NAMES
    params = DTYPE_GRID

    def make_case(self, dtype, size, threads):
        return tile_case(dtype=dtype, size=size, threads=threads, **DTYPE_FIXED)


class TileDtypesNumPy(common._NumpyBench):
    param_names = DTYPE_NAMES[:-1]
    params = DTYPE_GRID[:-1]

    def make_case(self, dtype, size):
        return tile_case(dtype=dtype, size=size, threads=1, **DTYPE_FIXED)


class TilePixels(common._FastblockBench):
    param_names = ["pixel", "repeats", "size", "threads"]
    params = [
        ["uint8x1", "uint8x3", "uint8x5", "uint8x7", "uint16x3", "uint16x5", "float32x1",
         "float32x3", "float32x6"],
        [2, 8, 16, 40],
        grid(["512KiB"], ["512KiB", "64MiB"]),
        THREADS,
    ]

    def make_case(self, pixel, repeats, size, threads):
        return pixel_tile_case(pixel, repeats, size, threads)


class TileMemory(common._MemoryBench):
    param_names = ["rank", "pattern", "factor", "dtype"]
    params = [
        grid([4], RANKS),
        TILE_PATTERNS,
        grid([2], TILE_FACTORS),
        grid(["uint8", "float32", "U5", "object"], DTYPES),
    ]

    def make_case(self, rank, pattern, factor, dtype):
        return tile_case(rank, pattern, factor, dtype, "64MiB", 1)
