"""fastblock: SpaceToDepth, DepthToSpace and Tile at memory speed.

Multithreaded Cython kernels for the block data-movement operators of ONNX,
OpenVINO and TensorFlow, for every NumPy dtype, mode, layout and rank, and
einops' rearrange and repeat, each call one pass of the same copy engine.
"""
# The compiled-only extensions first: in a source tree where they are not
# built, the import fails here with a message that says how to build them.
try:
    from ._call import fastpath as _fastpath, memory as _memory  # noqa: F401
    from ._engine import core as _core  # noqa: F401
except ImportError:
    from ._unbuilt import raise_if_unbuilt
    raise_if_unbuilt(__path__[0])
    raise

from . import _engine
from ._call.threads import get_num_threads, set_num_threads
from ._ops.batch import batch_to_space, space_to_batch
from ._ops.blocks import depth_to_space, space_to_depth, tile
from ._ops.collate import collate
from ._ops.patterns import PatternError, rearrange, repeat
from ._ops.permute import pixel_shuffle, pixel_unshuffle, transpose
from ._version import __version__

#: Whether this build runs its copies on several threads: False where the
#: compiler had no OpenMP (on macOS, Apple's clang without libomp from
#: Homebrew or conda; docs/platforms.md). Such a build is correct, on one
#: thread, and get_num_threads() says 1.
HAVE_OPENMP = _engine.HAVE_OPENMP

__all__ = [
    "space_to_depth",
    "depth_to_space",
    "tile",
    "transpose",
    "pixel_shuffle",
    "pixel_unshuffle",
    "space_to_batch",
    "batch_to_space",
    "rearrange",
    "repeat",
    "collate",
    "PatternError",
    "get_num_threads",
    "set_num_threads",
    "HAVE_OPENMP",
    "__version__",
]
