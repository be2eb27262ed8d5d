"""fb.transpose at memory speed: a square 2-D matrix, NCHW <-> NHWC, RGB
pixels to planes and back, and a Fortran-order array into C order
(``common.TRANSPOSE_PATTERNS``); and, in cache, channels-last pixels of
16 and 64 channels split into planes of power-of-two images
(``TransposeInCache``). These run
the staged transpose kernel (``fastblock/_engine/kernels/transpose.pxi``) or the lane
transposes; ``track_vs_copy`` is the figure to watch (a copy of the same
bytes is the floor).
"""
from . import common

PARAM_NAMES = ["pattern", "dtype", "size", "threads"]
PARAMS = common.speed_params(common.TRANSPOSE_PATTERNS)


class Transpose(common._FastblockBench):
    param_names = PARAM_NAMES
    params = PARAMS

    def make_case(self, pattern, dtype, size, threads):
        return common.transpose_case(pattern, dtype, size, threads)


class TransposeNumPy(common._NumpyBench):
    param_names = PARAM_NAMES[:3]
    params = PARAMS[:3]

    def make_case(self, pattern, dtype, size):
        return common.transpose_case(pattern, dtype, size, 1)


class TransposeInCache(common._FastblockBench):
    param_names = ["side", "channels", "dtype", "threads"]
    params = [[64, 128], [16, 64], ["uint8", "uint16"], common.THREADS]

    def make_case(self, side, channels, dtype, threads):
        return common.planes_case(side, channels, dtype, threads)
