"""SpaceToDepth: fastblock against the copy ceiling and against NumPy's own way.

Classes (see ``common`` for what each figure means):

- ``SpaceToDepth``            the grid: mode x layout x rank x block size x
                              dtype x size x threads (default: float32 at
                              64 MiB; FASTBLOCK_ASV_FULL=1: the full product).
- ``SpaceToDepthDtypes``      every item size at every size, both thread counts.
- ``SpaceToDepthInCache``     1 MiB square power-of-two images (bs 2 and 4, uint8
                              and float32, channels first), both thread counts.
- ``SpaceToDepthNumPy``, ``SpaceToDepthDtypesNumPy``  the same cases, NumPy's way.
- ``SpaceToDepthMemory``      peak memory and allocations per call, at 64 MiB.
"""
from . import common

OP = "space_to_depth"


class SpaceToDepth(common._BlockGrid):
    op = OP


class SpaceToDepthNumPy(common._BlockGridNumPy):
    op = OP


class SpaceToDepthDtypes(common._BlockDtypes):
    op = OP


class SpaceToDepthInCache(common._BlockInCache):
    op = OP


class SpaceToDepthDtypesNumPy(common._BlockDtypesNumPy):
    op = OP


class SpaceToDepthMemory(common._BlockMemory):
    op = OP
