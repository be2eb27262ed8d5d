"""fastblock.dask on a ``LocalCluster`` against Dask's own way (issue 67).

A cluster as a new user starts one: ``LocalCluster(n_workers=2,
threads_per_worker=1, processes=True)``, no other setting. Each case's
input is persisted, its blocks made on the workers in turn (as many on
each); each way builds its lazy result from it and is timed from the build
to ``client.persist(y)`` + ``wait``, the result then released (and its
release waited for, on the scheduler and the workers) before the next.
After one warm-up of every way, the ways take turns for ``rounds`` rounds,
in orders where each way follows each other way as often (``round_order``:
timed right after Dask's own chain, a way was 10-20 % slower); the figures
are medians, and a ratio of two ways the median of the rounds' ratios. The
ways:

- ``dask``: Dask's own way (below, per case);
- ``fastblock.dask``: the ``fastblock.dask`` function;
- ``map_blocks``: ``x.map_blocks`` of the same fastblock call on each block
  (``functools.partial`` of it; fastblock's default threads, which is one
  in a Dask worker: the nanny sets ``OMP_NUM_THREADS=1``);
- ``floor``: ``x.map_blocks`` of a function that only allocates the block's
  result (``np.empty``, no page touched): what Dask costs for the same
  tasks, no work done.

The cases (``CASES``; ``shrink`` makes small ones for the tests):

- ``space_to_depth``: NCHW float32 ``[32, 64, 256, 256]`` (512 MiB), bs 2,
  blocks_first, chunks of 2 samples (32 MiB). Dask: ONNX's formula, reshape
  to ``[N, C, H/2, 2, W/2, 2]``, transpose ``(0, 3, 5, 1, 2, 4)``, reshape.
- ``nhwc``: the same input, NCHW -> NHWC. fastblock:
  ``rearrange(x, "b c h w -> b h w c")``. Dask:
  ``x.transpose(0, 2, 3, 1).map_blocks(np.ascontiguousarray)`` (Dask's
  transpose alone hands on each block's view, moving nothing).
- ``preprocess``: 256 images of 224x224x3 uint8, chunks of 16, to float32
  NCHW with ImageNet's mean and std folded into a per-channel scale and
  offset. fastblock: ``rearrange(img, "b h w c -> b c h w", dtype=np.float32,
  scale=s, offset=o)``. Dask: ``img.transpose(0, 3, 1, 2).astype(np.float32)
  * s + o`` with ``s``, ``o`` float32 (a multiply, then an add, each
  rounded: fastblock's result bit for bit; its blocks keep the HWC memory
  order of the transposed view, as ``astype`` does).
- ``tile``: NCHW float32 ``[256, 3, 112, 112]``, chunks of 16, tiled
  ``(1, 1, 2, 2)`` into 224x224 blocks. Dask: ``da.tile(x, reps)`` rechunked
  to the same 224x224 blocks (``da.tile`` alone makes each result block a
  reference to an input block: nothing is written).

Before anything is timed every way's result is checked against Dask's own,
bit for bit, on the cluster. Then, per case, where the time beyond the
kernel goes (``breakdown``): the kernel alone on each worker's own blocks,
in a task there, into preallocated results and into new ones (the second
pays for the results' fresh pages); the floor (Dask's cost of the tasks);
the graph (tasks, pickled bytes, seconds to build); and, from the task
stream of a round, the seconds inside the tasks and the transfers between
workers. ``python -m speed_reports --dask`` prints both tables (about 2
minutes on 2 cores); ``--rounds N``, ``--quick`` (3 rounds) and
``--dask-cases`` choose. ``asv_bench/benchmarks/bench_dask.py`` tracks the
preprocessing case's ratios.
"""
from __future__ import annotations

import argparse
import functools
import gc
import os
import pickle
import time
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

# Dask, distributed and fastblock are imported inside the functions that use
# them, so that ``python -m speed_reports --help`` works without them.

DASK, FASTBLOCK_DASK, MAP_BLOCKS, FLOOR = "dask", "fastblock.dask", "map_blocks", "floor"
WAYS = (DASK, FASTBLOCK_DASK, MAP_BLOCKS, FLOOR)
ROUNDS = 5

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
PREPROCESS_PATTERN = "b h w c -> b c h w"
NHWC_PATTERN = "b c h w -> b h w c"


class DaskCase(NamedTuple):
    """One case: an input of ``shape`` and ``dtype`` in chunks of ``batch``
    along axis 0 (every other axis whole), and what is done to it."""
    name: str
    label: str
    shape: Tuple[int, ...]
    dtype: str
    batch: int


CASES = (
    DaskCase("space_to_depth", "SpaceToDepth bs 2, NCHW f32 [32,64,256,256] 512 MiB, chunks 2",
             (32, 64, 256, 256), "float32", 2),
    DaskCase("nhwc", "NCHW -> NHWC, f32 [32,64,256,256] 512 MiB, chunks 2",
             (32, 64, 256, 256), "float32", 2),
    DaskCase("preprocess", "256 x 224x224x3 u8 -> f32 NCHW, ImageNet mean/std, chunks 16",
             (256, 224, 224, 3), "uint8", 16),
    DaskCase("tile", "Tile (1,1,2,2), NCHW f32 [256,3,112,112], chunks 16",
             (256, 3, 112, 112), "float32", 16),
)
CASE_BY_NAME = {case.name: case for case in CASES}
TILE_REPS = (1, 1, 2, 2)


def shrink(case: DaskCase) -> DaskCase:
    """``case`` on a small input (tests): 4 samples in chunks of 2, spatial
    sides of 8 (channels kept)."""
    shape = list(case.shape)
    shape[0] = 4
    spatial = (1, 2) if case.name == "preprocess" else (2, 3)
    for axis in spatial:
        shape[axis] = 8
    return case._replace(shape=tuple(shape), batch=2)


# ---------------------------------------------------------------------------
# The ways

def scale_offset() -> Tuple[np.ndarray, np.ndarray]:
    """ImageNet's mean and std folded into a per-channel (3, 1, 1) scale and
    offset of uint8 pixels, float32 (the compute type: Dask's chain computes
    in it too)."""
    mean = np.asarray(IMAGENET_MEAN).reshape(3, 1, 1)
    std = np.asarray(IMAGENET_STD).reshape(3, 1, 1)
    return (1 / (255 * std)).astype(np.float32), (-mean / std).astype(np.float32)


def result_block_shape(case: DaskCase, block_shape: Tuple[int, ...]) -> Tuple[int, ...]:
    """The shape of the result block made from an input block."""
    if case.name == "space_to_depth":
        n, c, h, w = block_shape
        return n, c * 4, h // 2, w // 2
    if case.name == "nhwc":
        n, c, h, w = block_shape
        return n, h, w, c
    if case.name == "preprocess":
        n, h, w, c = block_shape
        return n, c, h, w
    return tuple(e * r for e, r in zip(block_shape, TILE_REPS))


def result_dtype(case: DaskCase) -> np.dtype:
    return np.dtype(np.float32)


def fastblock_call(case: DaskCase) -> Callable[[np.ndarray], np.ndarray]:
    """The fastblock call on one block (a picklable partial), as a user
    writes it: fastblock's default threads (one in a Dask worker, which sets
    OMP_NUM_THREADS=1)."""
    import fastblock as fb
    if case.name == "space_to_depth":
        return functools.partial(fb.space_to_depth, block_size=2)
    if case.name == "nhwc":
        return functools.partial(fb.rearrange, pattern=NHWC_PATTERN)
    if case.name == "preprocess":
        scale, offset = scale_offset()
        return functools.partial(fb.rearrange, pattern=PREPROCESS_PATTERN, dtype=np.float32,
                                 scale=scale, offset=offset)
    return functools.partial(fb.tile, repeats=TILE_REPS)


def _allocate(block: np.ndarray, case: DaskCase) -> np.ndarray:
    """The floor's task: the block's result allocated, nothing written."""
    return np.empty(result_block_shape(case, block.shape), result_dtype(case))


def _result_chunks(case: DaskCase, x) -> tuple:
    """The result's chunks: the input's along the batch axis (which every
    case keeps), one chunk along every other axis."""
    first = result_block_shape(case, tuple(c[0] for c in x.chunks))
    return (x.chunks[0],) + tuple((n,) for n in first[1:])


def dask_way(case: DaskCase, x):
    """Dask's own way (see the module's docstring)."""
    import dask.array as da
    if case.name == "space_to_depth":
        n, c, h, w = x.shape
        return (x.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 3, 5, 1, 2, 4)
                .reshape(n, c * 4, h // 2, w // 2))
    if case.name == "nhwc":
        return x.transpose(0, 2, 3, 1).map_blocks(np.ascontiguousarray)
    if case.name == "preprocess":
        scale, offset = scale_offset()
        return x.transpose(0, 3, 1, 2).astype(np.float32) * scale + offset
    return da.tile(x, TILE_REPS).rechunk(_result_chunks(case, x))


def fastblock_dask_way(case: DaskCase, x):
    import fastblock.dask as fbd
    if case.name == "space_to_depth":
        return fbd.space_to_depth(x, 2)
    if case.name == "nhwc":
        return fbd.rearrange(x, NHWC_PATTERN)
    if case.name == "preprocess":
        scale, offset = scale_offset()
        return fbd.rearrange(x, PREPROCESS_PATTERN, dtype=np.float32, scale=scale,
                             offset=offset)
    return fbd.tile(x, TILE_REPS)


def _meta(case: DaskCase, ndim: int) -> np.ndarray:
    return np.empty((0,) * ndim, result_dtype(case))


def map_blocks_way(case: DaskCase, x):
    return x.map_blocks(fastblock_call(case), chunks=_result_chunks(case, x),
                        dtype=result_dtype(case), meta=_meta(case, x.ndim))


def floor_way(case: DaskCase, x):
    return x.map_blocks(_allocate, case, chunks=_result_chunks(case, x),
                        dtype=result_dtype(case), meta=_meta(case, x.ndim))


BUILDERS = {DASK: dask_way, FASTBLOCK_DASK: fastblock_dask_way, MAP_BLOCKS: map_blocks_way,
            FLOOR: floor_way}


def _random_block(case: DaskCase, index: int, seed: int) -> np.ndarray:
    """Input block ``index``: random uint8 pixels, or float32 in [0, 1)."""
    rng = np.random.default_rng((seed, index))
    shape = (case.batch,) + case.shape[1:]
    if case.dtype == "uint8":
        return rng.integers(0, 256, shape, dtype=np.uint8)
    return rng.random(shape, dtype=np.float32)


def local_input(case: DaskCase, seed: int = 0):
    """The same input as ``make_input``, in this process (``da.from_array``)."""
    import dask.array as da
    count = case.shape[0] // case.batch
    values = np.concatenate([_random_block(case, i, seed) for i in range(count)])
    return da.from_array(values, chunks=(case.batch,) + case.shape[1:])


def make_input(client, case: DaskCase, seed: int = 0):
    """The case's input, persisted: each block made on a worker, the workers
    taking turns (the same number of blocks on each, whatever the timing),
    returned with the number of tasks the scheduler then holds."""
    import dask.array as da
    workers = sorted(client.scheduler_info()["workers"])
    count = case.shape[0] // case.batch
    futures = [client.submit(_random_block, case, i, seed, pure=False,
                             workers=[workers[i % len(workers)]]) for i in range(count)]
    shape = (case.batch,) + case.shape[1:]
    x = da.concatenate([da.from_delayed(f, shape, np.dtype(case.dtype)) for f in futures])
    x = client.persist(x)
    _wait(client, x)
    del futures
    held = len(x.chunks[0])
    _settle(client, held)
    return x, held


# ---------------------------------------------------------------------------
# Checks

def _bits(y):
    """``y``'s items as unsigned integers of their size (a view, lazily)."""
    return y.view(np.dtype(f"u{y.dtype.itemsize}"))


def check(case: DaskCase, x, compute: Callable[[list], list],
          ways: Sequence[str] = WAYS) -> None:
    """Raise AssertionError unless every way but the floor gives Dask's own
    result bit for bit: shape, dtype, chunks and every item, computed by
    ``compute`` (a list of lazy values to their values)."""
    want = dask_way(case, x)
    checks = {}
    for way in ways:
        if way in (DASK, FLOOR):
            continue
        got = BUILDERS[way](case, x)
        if got.shape != want.shape or got.dtype != want.dtype:
            raise AssertionError(f"{case.name}: {way}: {got.shape} {got.dtype}, not "
                                 f"{want.shape} {want.dtype}")
        if got.chunks != _result_chunks(case, x):
            raise AssertionError(f"{case.name}: {way}: chunks {got.chunks}")
        checks[way] = (_bits(got) == _bits(want)).all()
    wrong = [way for way, same in zip(checks, compute(list(checks.values()))) if not same]
    if wrong:
        raise AssertionError(f"{case.name}: {', '.join(wrong)} differ from Dask's own result")


def on_cluster(client) -> Callable[[list], list]:
    """``check``'s ``compute`` on ``client``'s cluster."""
    return lambda values: client.gather(client.compute(values))


# ---------------------------------------------------------------------------
# Measuring

def graph_figures(y, x) -> Tuple[int, int]:
    """(tasks, pickled bytes) of ``y``'s graph past its input ``x``'s."""
    import cloudpickle
    inputs = set(dict(x.__dask_graph__()))
    graph = {key: task for key, task in dict(y.__dask_graph__()).items() if key not in inputs}
    return len(graph), len(cloudpickle.dumps(graph, protocol=pickle.HIGHEST_PROTOCOL))


def _wait(client, y) -> None:
    """Wait for every block of the persisted ``y``."""
    from distributed import futures_of, wait
    with client.as_current():
        wait(futures_of(y))


def persist_seconds(client, build: Callable[[], object], held: int = 0) -> float:
    """Seconds to build a lazy result, persist it and wait for it; the
    result is released before returning, and its release waited for
    (``held``: the tasks the scheduler keeps, the input's)."""
    start = time.perf_counter()
    y = client.persist(build())
    _wait(client, y)
    seconds = time.perf_counter() - start
    del y
    _settle(client, held)
    return seconds


def _live_tasks(dask_scheduler=None) -> int:
    """Tasks the scheduler holds in memory or still to run."""
    return sum(ts.state not in ("released", "forgotten", "erred")
               for ts in dask_scheduler.tasks.values())


def _worker_keys(dask_worker=None) -> int:
    return len(dask_worker.data)


def _settle(client, held: int, timeout: float = 10.0) -> None:
    """Wait until the scheduler holds no more than ``held`` live tasks and
    the workers no more than ``held`` values, then collect this process's
    garbage (the scheduler's too: a LocalCluster's runs here): a released
    result's blocks and graph freed before the next timing, whichever way
    made them (the next way would otherwise share the cores with that)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if client.run_on_scheduler(_live_tasks) <= held and \
                sum(client.run(_worker_keys).values()) <= held:
            break
        time.sleep(0.002)
    gc.collect()


def round_order(count: int, r: int) -> List[int]:
    """The order of ``count`` ways in round ``r``: rows of a Williams
    square (r, r + 1, r - 1, r + 2, ...), in which, for an even count, each
    way comes right after each other way once every ``count`` rounds, so
    that none is timed after the same one (Dask's chain, say) round after
    round."""
    order, step = [r % count], 1
    while len(order) < count:
        order.append((r + step) % count)
        if len(order) < count:
            order.append((r - step) % count)
        step += 1
    return order


def interleaved(client, builds: Dict[str, Callable[[], object]], rounds: int = ROUNDS,
                held: int = 0) -> Dict[str, List[float]]:
    """Seconds of every persist, by way: one warm-up each, then ``rounds``
    rounds taking turns (``round_order``)."""
    for build in builds.values():
        persist_seconds(client, build, held)
    names = list(builds)
    samples: Dict[str, List[float]] = {name: [] for name in names}
    for r in range(rounds):
        for index in round_order(len(names), r):
            samples[names[index]].append(persist_seconds(client, builds[names[index]], held))
    return samples


def _kernel_sweep(keys: list, call, rounds: int = 5) -> Dict[str, float]:
    """A task on one worker: ``call`` on every block of ``keys`` this worker
    holds, in turn, into preallocated results (``out``) and into new ones
    kept until the sweep ends, as persist keeps them (``new``: the results'
    fresh pages too; freed after the timing); medians of ``rounds``
    interleaved sweeps, seconds per sweep, and ``blocks``."""
    from distributed import get_worker
    data = get_worker().data
    blocks = [data[key] for key in keys if key in data]
    outs = [call(block) for block in blocks]
    for out in outs:
        out.fill(0)

    def new():
        return [call(block) for block in blocks]

    def into_out():
        for block, out in zip(blocks, outs):
            call(block, out=out)

    sweeps = {"new": new, "out": into_out}
    samples: Dict[str, List[float]] = {name: [] for name in sweeps}
    for _ in range(rounds):
        for name, sweep in sweeps.items():
            start = time.perf_counter()
            kept = sweep()
            samples[name].append(time.perf_counter() - start)
            del kept  # freed outside the timing, as a released result is
    result = {name: float(np.median(s)) for name, s in samples.items()}
    result["blocks"] = len(blocks)
    return result


class Breakdown(NamedTuple):
    """Where a case's time goes: seconds, by way where named."""
    kernel_out: float          # a worker's blocks into preallocated results (the slower worker)
    kernel_new: float          # the same into new results (fresh pages)
    blocks: Dict[str, int]     # blocks by worker
    tasks: Dict[str, int]      # graph tasks past the input's, by way
    graph_bytes: Dict[str, int]
    build: Dict[str, float]    # seconds to build the lazy result, by way
    transfers: Dict[str, int]  # dependencies moved between workers in one round, by way
    compute: Dict[str, float]  # seconds in the tasks' own code, summed over the tasks, by way


def breakdown(client, case: DaskCase, x, ways: Sequence[str] = WAYS, held: int = 0
              ) -> Breakdown:
    """The kernel alone on each worker's blocks, each way's graph, and a
    round's transfers and task time from the task stream (a round of its
    own, outside the medians)."""
    from dask.core import flatten
    from distributed import get_task_stream
    call = fastblock_call(case)
    keys = list(flatten(x.__dask_keys__()))
    workers = list(client.scheduler_info()["workers"])
    futures = [client.submit(_kernel_sweep, keys, call, pure=False, workers=[w],
                             allow_other_workers=False) for w in workers]
    sweeps = dict(zip(workers, client.gather(futures)))
    del futures
    out = max(s["out"] for s in sweeps.values())
    new = max(s["new"] for s in sweeps.values())
    blocks = {w: s["blocks"] for w, s in sweeps.items()}
    tasks, nbytes, build, transfers, compute = {}, {}, {}, {}, {}
    for way in ways:
        start = time.perf_counter()
        y = BUILDERS[way](case, x)
        build[way] = time.perf_counter() - start
        tasks[way], nbytes[way] = graph_figures(y, x)
        with get_task_stream(client) as stream:
            y = client.persist(y)
            _wait(client, y)
        del y
        _settle(client, held)
        moved, busy = 0, 0.0
        for task in stream.data:
            for part in task.get("startstops", ()):
                if part["action"] == "transfer":
                    moved += 1
                elif part["action"] == "compute":
                    busy += part["stop"] - part["start"]
        transfers[way] = moved
        compute[way] = busy
    return Breakdown(out, new, blocks, tasks, nbytes, build, transfers, compute)


def start_cluster(n_workers: int = 2, threads_per_worker: int = 1, memory_limit="auto"):
    """(cluster, client): a LocalCluster of worker processes, no dashboard."""
    import distributed
    cluster = distributed.LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker,
                                       processes=True, memory_limit=memory_limit,
                                       dashboard_address=None)
    return cluster, distributed.Client(cluster, set_as_default=False)


Results = Dict[str, Dict[str, List[float]]]


def run(client, cases: Sequence[DaskCase] = CASES, rounds: int = ROUNDS,
        ways: Sequence[str] = WAYS, details: bool = True, progress: bool = False
        ) -> Tuple[Results, Dict[str, Breakdown]]:
    """Every case: ({case: {way: seconds of each round}}, {case: Breakdown}),
    each way's result checked first."""
    results: Results = {}
    details_by_case: Dict[str, Breakdown] = {}
    for case in cases:
        if progress:
            print(f"  {case.name} ...", flush=True)
        x, held = make_input(client, case)
        check(case, x, on_cluster(client), ways)
        _settle(client, held)
        builds = {way: functools.partial(BUILDERS[way], case, x) for way in ways}
        results[case.name] = interleaved(client, builds, rounds, held)
        if details:
            details_by_case[case.name] = breakdown(client, case, x, ways, held)
        del x
        _settle(client, 0)
    return results, details_by_case


def measure(names: Sequence[str], rounds: int = ROUNDS, ways: Sequence[str] = WAYS,
            images: Optional[int] = None) -> Dict[str, Dict[str, float]]:
    """{case: {way: median seconds, and "fastblock.dask/way": the median of
    the rounds' ratios}} of the cases ``names`` on a cluster of its own, no
    breakdown (the asv suite runs it in a fresh process); ``images``: that
    many samples instead of the case's."""
    cluster, client = start_cluster()
    try:
        cases = [CASE_BY_NAME[name] for name in names]
        if images:
            cases = [case._replace(shape=(images,) + case.shape[1:]) for case in cases]
        results, _ = run(client, cases, rounds, ways, details=False)
    finally:
        client.close()
        cluster.close()
    figures = {}
    for name, samples in results.items():
        figures[name] = medians(samples)
        for other in (DASK, MAP_BLOCKS, FLOOR):
            ratio = paired_ratio(samples, FASTBLOCK_DASK, other)
            if ratio is not None and other != FASTBLOCK_DASK:
                figures[name][f"{FASTBLOCK_DASK}/{other}"] = ratio
    return figures


def medians(samples: Dict[str, List[float]]) -> Dict[str, float]:
    return {way: float(np.median(s)) for way, s in samples.items()}


def paired_ratio(samples: Dict[str, List[float]], way: str, other: str) -> Optional[float]:
    """The median over the rounds of ``way``'s time over ``other``'s in the
    same round (None where either is missing): the ways of a round run
    within a second of each other, so a load that comes and goes moves both
    alike."""
    if way not in samples or other not in samples:
        return None
    return float(np.median([a / b for a, b in zip(samples[way], samples[other])]))


# ---------------------------------------------------------------------------
# Tables

# Issue 67's bars: fastblock.dask within 10 % of map_blocks of the same
# call, and the preprocessing case 2.5 times as fast as Dask's own way.
WITHIN_MAP_BLOCKS = 1.10
PREPROCESS_VS_DASK = 2.5


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.0f}" if seconds >= 0.0995 else f"{seconds * 1e3:.1f}"


def bars_met(name: str, vs_map_blocks: Optional[float], dask_over: Optional[float]
             ) -> Optional[bool]:
    """Whether a case meets issue 67's bars, from fastblock.dask's time over
    map_blocks' and Dask's own over fastblock.dask's (None: one missing)."""
    if vs_map_blocks is None:
        return None
    met = vs_map_blocks <= WITHIN_MAP_BLOCKS
    if name == "preprocess":
        if dask_over is None:
            return None
        met = met and dask_over >= PREPROCESS_VS_DASK
    return met


def table(results: Results, ways: Sequence[str] = WAYS) -> Tuple[List[str], List[List[str]]]:
    """(heads, rows): per case the median ms of every way, the spread of
    fastblock.dask's rounds ((max - min) / median), fastblock.dask's time
    over map_blocks' and Dask's own time over fastblock.dask's (medians of
    the rounds' ratios), and whether issue 67's bars are met."""
    head = ["case"] + [f"{way} ms" for way in ways] + ["fbd spread", "fbd/mb", "dask/fbd",
                                                       "bars"]
    rows = []
    for name, samples in results.items():
        m = medians(samples)
        cells = [name] + [_ms(m[way]) if way in m else "-" for way in ways]
        fbd = m.get(FASTBLOCK_DASK)
        spread = (max(samples[FASTBLOCK_DASK]) - min(samples[FASTBLOCK_DASK])) / fbd \
            if fbd else None
        vs_map_blocks = paired_ratio(samples, FASTBLOCK_DASK, MAP_BLOCKS)
        dask_over = paired_ratio(samples, DASK, FASTBLOCK_DASK)
        cells.append(f"{spread:.0%}" if spread is not None else "-")
        cells.append(f"{vs_map_blocks:.2f}" if vs_map_blocks is not None else "-")
        cells.append(f"{dask_over:.2f}x" if dask_over is not None else "-")
        met = bars_met(name, vs_map_blocks, dask_over)
        cells.append("-" if met is None else "met" if met else "NOT met")
        rows.append(cells)
    return head, rows


def detail_table(results: Results, details: Dict[str, Breakdown]
                 ) -> Tuple[List[str], List[List[str]]]:
    """(heads, rows): per case the kernel alone (the slower worker's blocks
    into preallocated and into new results, and the difference: fresh
    pages), the floor, map_blocks and fastblock.dask, what fastblock.dask
    takes beyond floor + kernel, and the graphs, builds, task time and
    transfers."""
    head = ["case", "blocks", "kernel out=", "kernel new", "pages", "floor", "mb", "fbd",
            "fbd rest", "tasks fbd/mb", "graph B fbd/mb", "build ms fbd/mb",
            "task s fbd/mb", "transfers " + "/".join(WAYS)]
    rows = []
    nan = float("nan")
    for name, d in details.items():
        m = medians(results[name])
        fbd, floor = m.get(FASTBLOCK_DASK, nan), m.get(FLOOR, nan)
        rows.append([
            name, "/".join(str(n) for n in d.blocks.values()),
            _ms(d.kernel_out), _ms(d.kernel_new), _ms(d.kernel_new - d.kernel_out),
            _ms(floor), _ms(m.get(MAP_BLOCKS, nan)), _ms(fbd), _ms(fbd - floor - d.kernel_new),
            f"{d.tasks.get(FASTBLOCK_DASK, '-')}/{d.tasks.get(MAP_BLOCKS, '-')}",
            f"{d.graph_bytes.get(FASTBLOCK_DASK, '-')}/{d.graph_bytes.get(MAP_BLOCKS, '-')}",
            f"{d.build.get(FASTBLOCK_DASK, nan) * 1e3:.2f}/"
            f"{d.build.get(MAP_BLOCKS, nan) * 1e3:.2f}",
            f"{d.compute.get(FASTBLOCK_DASK, nan):.3f}/{d.compute.get(MAP_BLOCKS, nan):.3f}",
            "/".join(str(d.transfers[way]) for way in WAYS if way in d.transfers),
        ])
    return head, rows


def rounds_lines(results: Results) -> List[str]:
    """Each case's rounds, ms, by way, in the order they ran."""
    lines = []
    for name, samples in results.items():
        lines.append(f"  {name}: " + "; ".join(
            f"{way} " + " ".join(_ms(t) for t in times) for way, times in samples.items()))
    return lines


def _print(head: List[str], rows: List[List[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    print("  " + "  ".join(h.ljust(widths[0]) if i == 0 else h.rjust(widths[i])
                           for i, h in enumerate(head)))
    for row in rows:
        print("  " + "  ".join(c.ljust(widths[0]) if i == 0 else c.rjust(widths[i])
                               for i, c in enumerate(row)))


# ---------------------------------------------------------------------------
# The report

def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "--dask options", "--rounds N (default here 5) and --quick (3 rounds) of the "
        "--pipeline options apply to --dask too")
    group.add_argument("--dask-cases", default=None,
                       help=f"comma-separated subset of {', '.join(CASE_BY_NAME)}")


def selected_cases(args) -> Tuple[DaskCase, ...]:
    text = getattr(args, "dask_cases", None)
    if not text:
        return CASES
    names = [item.strip() for item in text.split(",") if item.strip()]
    unknown = [name for name in names if name not in CASE_BY_NAME]
    if unknown:
        raise SystemExit(f"unknown case: {', '.join(unknown)} (known: {', '.join(CASE_BY_NAME)})")
    return tuple(CASE_BY_NAME[name] for name in names)


def report(args=None) -> Tuple[Results, Dict[str, Breakdown]]:
    """Start the cluster, run every case, print both tables; return the
    seconds and the breakdowns."""
    import dask
    import distributed

    import fastblock as fb
    rounds = getattr(args, "rounds", None) or (3 if getattr(args, "quick", False) else ROUNDS)
    cases = selected_cases(args)
    cluster, client = start_cluster()
    try:
        threads = sorted(set(client.run(fb.get_num_threads).values()))
        print(f"fastblock.dask on a LocalCluster of 2 worker processes x 1 thread: fastblock "
              f"{fb.__version__} ({'/'.join(map(str, threads))} thread(s) in a worker), dask "
              f"{dask.__version__}, distributed {distributed.__version__}. Each figure: build + "
              f"persist + wait, ms, median of {rounds} interleaved rounds after a warm-up.")
        if hasattr(os, "getloadavg"):  # other work on the cores moves every figure
            print(f"Load average before the run: {os.getloadavg()[0]:.2f} on {os.cpu_count()} "
                  f"CPUs")
        for case in cases:
            print(f"  {case.name:15} {case.label}")
        results, details = run(client, cases, rounds)
    finally:
        client.close()
        cluster.close()
    print()
    _print(*table(results))
    print(f"fbd spread: (max - min) / median of fastblock.dask's rounds; fbd/mb: fastblock.dask "
          f"over map_blocks of the same fastblock call, dask/fbd: Dask's own way over "
          f"fastblock.dask, each the median of the rounds' ratios; bars (issue 67): fbd/mb <= "
          f"{WITHIN_MAP_BLOCKS:.2f}, and for preprocess dask/fbd >= {PREPROCESS_VS_DASK}.")
    print("Rounds (ms):")
    print("\n".join(rounds_lines(results)))
    print("\nWhere the time goes (ms unless named):")
    _print(*detail_table(results, details))
    print("blocks: input blocks held by each worker; kernel: the fastblock call on each of "
          "the slower worker's blocks in turn, in a task on that worker, into preallocated "
          "results (out=) and into new ones (new); pages: new - out=, the results' fresh "
          "pages; floor, mb, fbd: the medians above; fbd rest: fbd - floor - kernel new; "
          "tasks, graph B: the graph past the input's (pickled bytes); task s: seconds in the "
          "tasks' code over one round, summed over the tasks; transfers: dependencies moved "
          "between workers in one round.")
    return results, details
