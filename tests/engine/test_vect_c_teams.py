"""The NCHW_VECT_C depth_first runners (``fastblock/_engine/operators/vect_c.pxi``:
tables, register permutes, planes) on the common schedule: whether their
blocks of rows run on a thread team follows the engine's
``parallel_min_bytes`` setting and the call's thread count, as a copy
plan's chunks do, both ways; on one thread and on a team the result
equals the documented formulas in NumPy. The thread policy's count of team
runs shows whether a team ran."""
from __future__ import annotations

import numpy as np
import pytest

import fastblock as fb
from fastblock import _engine
from reference import assert_same_array, depth_to_space_ref, space_to_depth_ref

# Blocks of rows (the units): 2 batch items x 2 groups, one row block each.
# "small": far under the default parallel_min_bytes; "large": over it.
SHAPES = {"small": (2, 2, 4, 5), "large": (2, 2, 36, 64)}
OPS = {"space_to_depth": (fb.space_to_depth, space_to_depth_ref),
       "depth_to_space": (fb.depth_to_space, depth_to_space_ref)}
DEFAULT = _engine.current_tuning()["parallel_min_bytes"]


def _case(op_name, bs, size, dtype):
    """(input, space array, depth array) of an NCHW_VECT_C depth_first copy."""
    n, groups, h, w = SHAPES[size]
    shape = (n, groups, h * bs, w * bs, 4)
    itemsize = np.dtype(dtype).itemsize
    raw = np.random.default_rng(bs).integers(0, 256, (*shape, itemsize), np.uint8)
    space = raw.view(np.dtype(dtype)).reshape(shape)
    depth = space_to_depth_ref(space, bs, "depth_first", "NCHW_VECT_C")
    return (space if op_name == "space_to_depth" else depth), space, depth


@pytest.mark.parametrize("size, parallel_min_bytes, num_threads, team", [
    ("small", 0, 2, True),
    ("small", 0, 1, False),
    ("small", DEFAULT, 2, False),
    ("large", DEFAULT, 2, True),
    ("large", 1 << 62, 2, False),
])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
@pytest.mark.parametrize("bs", [3, 5])
@pytest.mark.parametrize("op_name", list(OPS))
def test_team_follows_parallel_min_bytes(op_name, bs, dtype, size, parallel_min_bytes, num_threads,
                                         team, vect_c_path):
    x, space, depth = _case(op_name, bs, size, dtype)
    to_depth = op_name == "space_to_depth"
    # The register permutes take bs 3 only: other block sizes go through planes.
    path = {"pixels": "pixels" if bs == 3 else "planes", "planes": "planes",
            "tables": "planes" if to_depth else "rows"}
    op, ref = OPS[op_name]
    runs = _engine.team_policy()["runs"]
    with _engine.tune(parallel_min_bytes=parallel_min_bytes):
        assert _engine.vect_c_path(space, depth, bs, to_depth) == path[vect_c_path]
        result = op(x, bs, "depth_first", "NCHW_VECT_C", num_threads=num_threads)
    assert_same_array(result, ref(x, bs, "depth_first", "NCHW_VECT_C"))
    ran = team and _engine.HAVE_OPENMP
    assert _engine.team_policy()["runs"] - runs == (1 if ran else 0)
    if ran:
        assert _engine.team_policy()["last_team"] == 2
