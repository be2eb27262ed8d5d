"""fastblock._reused.ReusedResults, the result arrays that fastblock.torch
and fastblock.pipelines write again: an array anyone holds (itself, a view,
a tensor, a buffer export) is never handed out again; a dropped one is; the
pool keeps no more than it is told; threads taking at once never share an
array. And RayImages, which takes its results from one: results kept are
never overwritten, results dropped are reused."""
import threading

import numpy as np
import pytest

from fastblock._reused import ReusedResults
from fastblock.pipelines import RayImages
from reference import converted_ref

MEAN = np.array([0.485, 0.456, 0.406])
STD = np.array([0.229, 0.224, 0.225])


def holders():
    """Ways to hold an array, each a function of it returning the holder."""
    ways = {"array": lambda a: a, "view": lambda a: a[1:, ::2],
            "transposed": lambda a: a.T, "memoryview": memoryview,
            "frombuffer": lambda a: np.frombuffer(a, np.uint8)}
    try:
        import torch
        ways["torch"] = torch.from_numpy
    except ImportError:
        pass
    try:
        import pyarrow as pa
        ways["arrow"] = pa.py_buffer
    except ImportError:
        pass
    return ways


@pytest.mark.parametrize("way", sorted(holders()))
def test_an_array_held_is_not_taken_again(way):
    pool = ReusedResults(kept=2)
    first = pool.take((4, 6), np.float32)
    address = first.ctypes.data
    holder = holders()[way](first)
    del first
    second = pool.take((4, 6), np.float32)
    assert second.ctypes.data != address
    del holder, second
    assert pool.take((4, 6), np.float32).ctypes.data == address


def test_a_dropped_array_of_its_shape_and_dtype_is_taken_again():
    pool = ReusedResults(kept=3)
    a = pool.take((3, 5), np.float32)
    address = a.ctypes.data
    del a
    assert pool.take((3, 5), np.float16).ctypes.data != address     # another dtype
    assert pool.take((5, 3), np.float32).ctypes.data != address     # another shape
    assert pool.take([3, 5], "float32").ctypes.data == address      # the same, however named


def test_the_pool_keeps_at_most_kept_arrays():
    """Past ``kept``, a new array pushes out a free one (so it is freed),
    else the oldest (its holder keeps it, the pool does not)."""
    pool = ReusedResults(kept=2)
    held = [pool.take((8,), np.float64) for _ in range(5)]
    assert len({a.ctypes.data for a in held}) == 5
    assert [id(a) for a in pool._arrays] == [id(held[3]), id(held[4])]
    fourth = id(held[3])
    del held[3:]            # the two the pool keeps are free now
    again = pool.take((8,), np.float64)
    assert id(again) == fourth
    other_shape = pool.take((2,), np.float64)   # pushes out the free one
    assert [id(a) for a in pool._arrays] == [id(again), id(other_shape)]
    assert all(a is not b for a in held for b in pool._arrays)


def test_threads_taking_at_once_never_share_an_array():
    """Each thread fills the array it took with its own number and checks
    it after a pause: no other thread had it meanwhile."""
    pool = ReusedResults(kept=3)
    errors = []
    start = threading.Barrier(6)

    def work(number):
        start.wait()
        for _ in range(300):
            a = pool.take((64,), np.int64)
            a[:] = number
            threading.Event().wait(0.0001)
            if not (a == number).all():
                errors.append(number)
            del a

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(pool._arrays) <= 3


def expected(x):
    return converted_ref(x.transpose(0, 3, 1, 2), np.float32, (1 / (255 * STD)).reshape(3, 1, 1),
                         (-MEAN / STD).reshape(3, 1, 1))


def test_ray_results_kept_are_never_overwritten():
    """RayImages' results (from one pool for the process): batches kept,
    whole or as views, stay as they were through later batches; a dropped
    one is written again."""
    fn = RayImages("image", np.float32, MEAN, STD)
    xs = [np.random.default_rng(seed).integers(0, 256, (4, 5, 7, 3), dtype=np.uint8)
          for seed in range(6)]
    kept = [fn({"image": xs[0]})["image"], fn({"image": xs[1]})["image"][1:3]]
    dropped = fn({"image": xs[2]})["image"]
    address = dropped.ctypes.data
    del dropped
    later = [fn({"image": x})["image"] for x in xs[3:]]
    assert np.array_equal(kept[0].view(np.uint32), expected(xs[0]).view(np.uint32))
    assert np.array_equal(kept[1].view(np.uint32), expected(xs[1])[1:3].view(np.uint32))
    for x, got in zip(xs[3:], later):
        assert np.array_equal(got.view(np.uint32), expected(x).view(np.uint32))
    assert address in {got.ctypes.data for got in later}
