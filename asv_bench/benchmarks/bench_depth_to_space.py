"""DepthToSpace: fastblock against the copy ceiling and against NumPy's own way.

Classes (see ``common`` for what each figure means):

- ``DepthToSpace``            the grid: mode x layout x rank x block size x
                              dtype x size x threads (default: float32 at
                              64 MiB; FASTBLOCK_ASV_FULL=1: the full product).
- ``DepthToSpaceDtypes``      every item size at every size, both thread counts.
- ``DepthToSpaceNumPy``, ``DepthToSpaceDtypesNumPy``  the same cases, NumPy's way.
- ``DepthToSpaceMemory``      peak memory and allocations per call, at 64 MiB.
"""
from . import common
from .common import (BLOCK_SIZES, DTYPES, LAYOUTS, MODES, RANKS, SIZES, THREADS,
                     block_case, grid)

OP = "depth_to_space"
GRID_NAMES = ["mode", "layout", "rank", "block_size", "dtype", "size", "threads"]
GRID = [
    MODES,
    LAYOUTS,
    RANKS,
    BLOCK_SIZES,
    grid(["float32"], DTYPES),
    grid(["64MiB"], SIZES),
    THREADS,
]
DTYPE_NAMES = ["dtype", "size", "threads"]
DTYPE_GRID = [DTYPES, SIZES, THREADS]
# The fixed arguments of the dtype sweep: ONNX's default layout and mode.
DTYPE_FIXED = dict(mode="blocks_first", layout="channels_first", rank=4, block_size=2)


class DepthToSpace(common._FastblockBench):
    param_names = GRID_NAMES
    params = GRID

    def make_case(self, mode, layout, rank, block_size, dtype, size, threads):
        return block_case(OP, mode, layout, rank, block_size, dtype, size, threads)


class DepthToSpaceNumPy(common._NumpyBench):
    param_names = GRID_NAMES[:-1]
    params = GRID[:-1]

    def make_case(self, mode, layout, rank, block_size, dtype, size):
        return block_case(OP, mode, layout, rank, block_size, dtype, size, 1)


class DepthToSpaceDtypes(common._FastblockBench):
    param_names = DTYPE_NAMES
    params = DTYPE_GRID

    def make_case(self, dtype, size, threads):
        return block_case(OP, dtype=dtype, size=size, threads=threads, **DTYPE_FIXED)


class DepthToSpaceDtypesNumPy(common._NumpyBench):
    param_names = DTYPE_NAMES[:-1]
    params = DTYPE_GRID[:-1]

    def make_case(self, dtype, size):
        return block_case(OP, dtype=dtype, size=size, threads=1, **DTYPE_FIXED)


class DepthToSpaceMemory(common._MemoryBench):
    param_names = ["mode", "layout", "rank", "block_size", "dtype"]
    params = [
        grid(["blocks_first"], MODES),
        LAYOUTS,
        grid([4], RANKS),
        grid([2], BLOCK_SIZES),
        grid(["uint8", "float32", "U5", "object"], DTYPES),
    ]

    def make_case(self, mode, layout, rank, block_size, dtype):
        return block_case(OP, mode, layout, rank, block_size, dtype, "64MiB", 1)
