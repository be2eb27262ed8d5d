"""SpaceToDepth and DepthToSpace of strided inputs: the same case (ONNX's
default: blocks_first, NCHW, block size 2) read from a Fortran-order array,
an NHWC array viewed as NCHW, or views with steps (``common.INPUT_ORDERS``),
against the contiguous input. Speed target 5: within 1.3 x the contiguous
case (a step on the innermost axis reads twice the bytes, so 1.5 x is its
floor).
"""
from . import common

PARAM_NAMES = ["input_order", "dtype", "size", "threads"]
PARAMS = common.speed_params(common.INPUT_ORDERS)


class SpaceToDepthStrided(common._FastblockBench):
    param_names = PARAM_NAMES
    params = PARAMS

    def make_case(self, input_order, dtype, size, threads):
        return common.strided_block_case("space_to_depth", input_order, dtype, size, threads)


class DepthToSpaceStrided(common._FastblockBench):
    param_names = PARAM_NAMES
    params = PARAMS

    def make_case(self, input_order, dtype, size, threads):
        return common.strided_block_case("depth_to_space", input_order, dtype, size, threads)
