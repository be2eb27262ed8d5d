"""DepthToSpace: fastblock against the copy ceiling and against NumPy's own way.

Classes (see ``common`` for what each figure means):

- ``DepthToSpace``            the grid: mode x layout x rank x block size x
                              dtype x size x threads (default: float32 at
                              64 MiB; FASTBLOCK_ASV_FULL=1: the full product).
- ``DepthToSpaceDtypes``      every item size at every size, both thread counts.
- ``DepthToSpaceInCache``     1 MiB square power-of-two images (bs 2 and 4, uint8
                              and float32, channels first), both thread counts.
- ``DepthToSpaceNumPy``, ``DepthToSpaceDtypesNumPy``  the same cases, NumPy's way.
- ``DepthToSpaceMemory``      peak memory and allocations per call, at 64 MiB.
"""
from . import common

OP = "depth_to_space"


class DepthToSpace(common._BlockGrid):
    op = OP


class DepthToSpaceNumPy(common._BlockGridNumPy):
    op = OP


class DepthToSpaceDtypes(common._BlockDtypes):
    op = OP


class DepthToSpaceInCache(common._BlockInCache):
    op = OP


class DepthToSpaceDtypesNumPy(common._BlockDtypesNumPy):
    op = OP


class DepthToSpaceMemory(common._BlockMemory):
    op = OP
