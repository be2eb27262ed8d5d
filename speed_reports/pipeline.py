"""fastblock in a multi-process pipeline, and beside a busy core.

Users call fastblock inside preprocessing pipelines: one worker process per
core, each transforming a stream of samples. This report reproduces that:

- **pipeline**: K worker processes (K = the usable cores unless given),
  started with ``fork`` and with ``forkserver`` (``spawn`` where neither
  exists), from a parent that has imported fastblock and made no threaded
  call, as a user's script would be. All K workers run the same case at the
  same time: they meet at a barrier, warm up for a short time (a
  long-running pipeline is warm), then count calls for a fixed time; a
  case's variants take turns, three rounds by default, and each shows its
  median round (a machine that drifts meets every variant alike). A case
  is one front door on one per-sample input, called one of four ways:

  - ``fastblock``: default settings;
  - ``fastblock 1 thread``: ``num_threads=1``;
  - ``numpy``: NumPy's own way (a view chain and one copy, ``np.tile``,
    ``np.repeat``);
  - ``torch``: PyTorch's operator with its default threads (its view chain
    and ``.contiguous()`` where it has no operator), where torch is
    installed.

  Each size also times ``copy``, ``np.copyto`` of the input's bytes between
  two preallocated arrays in every worker at once, as a reference rate.
  ``--methods threads`` runs the same K workers as threads of one process
  instead (a loader with threads shares memory and forks nothing; on a
  free-threaded Python they run in parallel).
- **busy core**: one process calling while another process spins on a core;
  the median call of every case with default settings and with
  ``num_threads=1``.

``python -m speed_reports --pipeline`` prints the tables and draws a PNG
of throughput per operator (matplotlib). The machinery is importable:
:func:`run_pipeline` and :func:`busy_core` take the cases, durations, worker
count and start method, for the asv benchmark (``bench_pipeline.py``), the
tests and runs of a subset.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from .source import timing


class Size(NamedTuple):
    name: str                    # the key that --samples takes
    label: str
    shape: Tuple[int, ...]       # the space-side input: [N, C, H, W], or [N, H, W, C]
    dtype: str
    channels_last: bool


SIZES = (
    Size("224", "1x3x224x224 float32", (1, 3, 224, 224), "float32", False),
    Size("512", "1x3x512x512 float32", (1, 3, 512, 512), "float32", False),
    Size("1024", "1x3x1024x1024 float32", (1, 3, 1024, 1024), "float32", False),
    Size("nhwc", "1x224x224x3 uint8 NHWC", (1, 224, 224, 3), "uint8", True),
)
SIZE_BY_NAME = {size.name: size for size in SIZES}

OPERATORS = ("space_to_depth", "depth_to_space", "transpose", "pixel_shuffle",
             "pixel_unshuffle", "tile", "rearrange", "repeat", "space_to_batch",
             "batch_to_space")
FASTBLOCK, ONE_THREAD, NUMPY, TORCH = "fastblock", "fastblock 1 thread", "numpy", "torch"
VARIANTS = (FASTBLOCK, ONE_THREAD, NUMPY, TORCH)
# The reference row of each size: np.copyto of the input's bytes.
COPY = "copy"

# the ImageNet case. Not one of OPERATORS (the default cases,
# each an operator alone): the layout move of ``transpose`` into float32 with
# ImageNet's mean and std per channel, in one pass (``fb.transpose(x, axes,
# dtype=np.float32, scale=1 / (255 * std), offset=-mean / std)``); on the
# ``nhwc`` sample it is the 224x224 uint8 HWC -> float32 CHW model input.
# ``--ops imagenet --samples nhwc`` runs it; bench_pipeline.py does.
IMAGENET = "imagenet"
CONVERTING = (IMAGENET,)
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

# Operators whose input is the result of another one on the space-side array.
INPUT_FROM = {"depth_to_space": "space_to_depth", "pixel_shuffle": "pixel_unshuffle",
              "batch_to_space": "space_to_batch"}
BLOCK = 2
PATCH = 16   # rearrange: 16x16 patches, as a vision transformer cuts them
# Flag thresholds of the tables, from issue 34's targets.
MIN_VS_ONE_THREAD = 0.9
MIN_VS_NUMPY = 1.0
MAX_BUSY_RATIO = 1.5

# A process that keeps one core busy for at most argv[1] seconds (so that it
# ends by itself even if whoever started it does not get to stop it).
SPIN_SOURCE = ("import sys, time\n"
               "end = time.monotonic() + float(sys.argv[1])\n"
               "while time.monotonic() < end:\n"
               "    pass\n")


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# Not a start method: the K workers as threads of the fresh process.
THREADS = "threads"


def start_methods() -> Tuple[str, ...]:
    """``fork`` and ``forkserver`` where this platform has them, else ``spawn``."""
    available = mp.get_all_start_methods()
    return tuple(m for m in ("fork", "forkserver") if m in available) or ("spawn",)


def worker_kinds() -> Tuple[str, ...]:
    """What ``--methods`` takes: the start methods, and THREADS."""
    return (*mp.get_all_start_methods(), THREADS)


def torch_installed() -> bool:
    """Whether torch can be imported, found without importing it (the parent
    of the pipeline stays a process that imported fastblock and NumPy only)."""
    import importlib.util
    return importlib.util.find_spec("torch") is not None


# ---------------------------------------------------------------------------
# The cases: one front door on one input, four ways

def _dims(size: Size) -> Tuple[int, int, int, int]:
    """n, c, h, w of the space-side input."""
    if size.channels_last:
        n, h, w, c = size.shape
    else:
        n, c, h, w = size.shape
    return n, c, h, w


def view_chain(operator: str, size: Size) -> Optional[Tuple[tuple, tuple, tuple]]:
    """NumPy's way of ``operator`` as (shape to view the input as, axes to
    transpose it by, result shape), or None where it is not a view chain."""
    n, c, h, w = _dims(size)
    h2, w2, hp, wp = h // BLOCK, w // BLOCK, h // PATCH, w // PATCH
    if size.channels_last:
        chains = {
            # blocks_first: result channel (i * 2 + j) * C + c
            "space_to_depth": ((n, h2, 2, w2, 2, c), (0, 1, 3, 2, 4, 5), (n, h2, w2, 4 * c)),
            "depth_to_space": ((n, h2, w2, 2, 2, c), (0, 1, 3, 2, 4, 5), (n, h, w, c)),
            # depth_first: result channel c * 4 + i * 2 + j
            "pixel_unshuffle": ((n, h2, 2, w2, 2, c), (0, 1, 3, 5, 2, 4), (n, h2, w2, 4 * c)),
            "pixel_shuffle": ((n, h2, w2, c, 2, 2), (0, 1, 4, 2, 5, 3), (n, h, w, c)),
            "transpose": ((n, h, w, c), (0, 3, 1, 2), (n, c, h, w)),
            "rearrange": ((n, hp, PATCH, wp, PATCH, c), (0, 1, 3, 2, 4, 5),
                          (n, hp * wp, PATCH * PATCH * c)),
            # OpenVINO's SpaceToBatch: batch index (i * 2 + j) * N + n
            "space_to_batch": ((n, h2, 2, w2, 2, c), (2, 4, 0, 1, 3, 5), (4 * n, h2, w2, c)),
            "batch_to_space": ((2, 2, n, h2, w2, c), (2, 3, 0, 4, 1, 5), (n, h, w, c)),
        }
    else:
        chains = {
            "space_to_depth": ((n, c, h2, 2, w2, 2), (0, 3, 5, 1, 2, 4), (n, 4 * c, h2, w2)),
            "depth_to_space": ((n, 2, 2, c, h2, w2), (0, 3, 4, 1, 5, 2), (n, c, h, w)),
            "pixel_unshuffle": ((n, c, h2, 2, w2, 2), (0, 1, 3, 5, 2, 4), (n, 4 * c, h2, w2)),
            "pixel_shuffle": ((n, c, 2, 2, h2, w2), (0, 1, 4, 2, 5, 3), (n, c, h, w)),
            "transpose": ((n, c, h, w), (0, 2, 3, 1), (n, h, w, c)),
            "rearrange": ((n, c, hp, PATCH, wp, PATCH), (0, 2, 4, 3, 5, 1),
                          (n, hp * wp, PATCH * PATCH * c)),
            "space_to_batch": ((n, c, h2, 2, w2, 2), (3, 5, 0, 1, 2, 4), (4 * n, c, h2, w2)),
            "batch_to_space": ((2, 2, n, c, h2, w2), (2, 3, 4, 0, 5, 1), (n, c, h, w)),
        }
    return chains.get(operator)


def _spatial_axes(size: Size) -> Tuple[int, int]:
    return (1, 2) if size.channels_last else (2, 3)


def _tile_repeats(size: Size) -> Tuple[int, ...]:
    return (1, 2, 2, 1) if size.channels_last else (1, 1, 2, 2)


def _numpy_chain(x: np.ndarray, chain) -> np.ndarray:
    view_shape, axes, result_shape = chain
    return np.ascontiguousarray(x.reshape(view_shape).transpose(axes)).reshape(result_shape)


def make_input(operator: str, size: Size) -> np.ndarray:
    """The per-sample input of ``operator``: the space-side array, or the
    result of the inverse operator on it."""
    values = np.random.default_rng(0).integers(0, 251, size=size.shape, dtype=np.uint8)
    x = values.astype(size.dtype)
    if operator in INPUT_FROM:
        x = _numpy_chain(x, view_chain(INPUT_FROM[operator], size))
    return x


def imagenet_scale_offset(size: Size) -> Tuple[np.ndarray, np.ndarray]:
    """Issue 50: (scale, offset) of the IMAGENET case, float64, per channel of
    the moved result: shape (3, 1, 1) for NCHW (the ``nhwc`` sample), (3,) for NHWC."""
    shape = (3,) if not size.channels_last else (3, 1, 1)
    mean = np.asarray(IMAGENET_MEAN).reshape(shape)
    std = np.asarray(IMAGENET_STD).reshape(shape)
    return 1.0 / (255.0 * std), -mean / std


def fastblock_call(operator: str, size: Size, x: np.ndarray, **options) -> Callable[[], object]:
    """``operator``'s fastblock front door on ``x`` (``options``: num_threads)."""
    import fastblock as fb
    data_format = "channels_last" if size.channels_last else "channels_first"
    blocks = (1, 2, 2, 1) if size.channels_last else (1, 1, 2, 2)
    zeros = (0, 0, 0, 0)
    if size.channels_last:
        patchify = "b (h p1) (w p2) c -> b (h w) (p1 p2 c)"
        upsample = "b h w c -> b (h 2) (w 2) c"
    else:
        patchify = "b c (h p1) (w p2) -> b (h w) (p1 p2 c)"
        upsample = "b c h w -> b c (h 2) (w 2)"
    axes = view_chain("transpose", size)[1]
    scale, offset = imagenet_scale_offset(size)
    calls = {
        "space_to_depth": lambda: fb.space_to_depth(x, BLOCK, data_format=data_format, **options),
        "depth_to_space": lambda: fb.depth_to_space(x, BLOCK, data_format=data_format, **options),
        "transpose": lambda: fb.transpose(x, axes, **options),
        "pixel_shuffle": lambda: fb.pixel_shuffle(x, BLOCK, data_format, **options),
        "pixel_unshuffle": lambda: fb.pixel_unshuffle(x, BLOCK, data_format, **options),
        "tile": lambda: fb.tile(x, _tile_repeats(size), **options),
        "rearrange": lambda: fb.rearrange(x, patchify, p1=PATCH, p2=PATCH, **options),
        "repeat": lambda: fb.repeat(x, upsample, **options),
        "space_to_batch": lambda: fb.space_to_batch(x, blocks, zeros, zeros, **options),
        "batch_to_space": lambda: fb.batch_to_space(x, blocks, zeros, zeros, **options),
        IMAGENET: lambda: fb.transpose(x, axes, dtype=np.float32, scale=scale, offset=offset,
                                       **options),
    }
    return calls[operator]


def numpy_call(operator: str, size: Size, x: np.ndarray) -> Callable[[], object]:
    """NumPy's own way: a view chain and one copy, ``np.tile``, ``np.repeat``."""
    h_axis, w_axis = _spatial_axes(size)
    if operator == IMAGENET:  # NumPy's chain, astype (order C), *=, +=
        axes = view_chain("transpose", size)[1]
        scale, offset = (v.astype(np.float32) for v in imagenet_scale_offset(size))

        def chain():
            v = x.transpose(axes).astype(np.float32, order="C")
            v *= scale
            v += offset
            return v
        return chain
    if operator == "tile":
        repeats = _tile_repeats(size)
        return lambda: np.tile(x, repeats)
    if operator == "repeat":
        return lambda: x.repeat(2, axis=h_axis).repeat(2, axis=w_axis)
    chain = view_chain(operator, size)
    return lambda: _numpy_chain(x, chain)


def torch_call(operator: str, size: Size, x: np.ndarray, torch) -> Callable[[], object]:
    """PyTorch's operator on a tensor sharing ``x``'s memory, with its default
    threads: pixel_(un)shuffle, ``repeat``, ``repeat_interleave``, else its
    view chain (``reshape``, ``permute``, ``.contiguous()``)."""
    t = torch.from_numpy(x)
    functional = torch.nn.functional
    h_axis, w_axis = _spatial_axes(size)
    if operator == IMAGENET:  # a multiply and an add, as the contract's
        axes = view_chain("transpose", size)[1]
        scale, offset = (torch.from_numpy(np.asarray(v, np.float32))
                         for v in imagenet_scale_offset(size))
        return lambda: (t.permute(axes).to(torch.float32, memory_format=torch.contiguous_format)
                        .mul_(scale).add_(offset))
    if operator == "pixel_shuffle" and not size.channels_last:
        return lambda: functional.pixel_shuffle(t, BLOCK)
    if operator == "pixel_unshuffle" and not size.channels_last:
        return lambda: functional.pixel_unshuffle(t, BLOCK)
    if operator == "tile":
        repeats = _tile_repeats(size)
        return lambda: t.repeat(*repeats)
    if operator == "repeat":
        return lambda: t.repeat_interleave(2, dim=h_axis).repeat_interleave(2, dim=w_axis)
    view_shape, axes, result_shape = view_chain(operator, size)
    return lambda: t.reshape(view_shape).permute(axes).contiguous().view(result_shape)


def case_calls(operator: str, size: Size, variants: Sequence[str] = VARIANTS,
               torch=None) -> Dict[str, Callable[[], object]]:
    """The calls of one case by variant (torch's only when ``torch`` is given),
    each checked to give fastblock's one-thread result."""
    x = make_input(operator, size)
    calls = {}
    for variant in variants:
        if variant == FASTBLOCK:
            calls[variant] = fastblock_call(operator, size, x)
        elif variant == ONE_THREAD:
            calls[variant] = fastblock_call(operator, size, x, num_threads=1)
        elif variant == NUMPY:
            calls[variant] = numpy_call(operator, size, x)
        elif variant == TORCH and torch is not None:
            calls[variant] = torch_call(operator, size, x, torch)
    expected = fastblock_call(operator, size, x, num_threads=1)()
    for variant, call in calls.items():
        got = call()
        got = got.numpy() if hasattr(got, "numpy") else np.asarray(got)
        if got.shape != expected.shape or not np.array_equal(got, expected):
            raise AssertionError(f"{operator} on {size.label}: {variant} differs from "
                                 f"fastblock's result (shape {got.shape}, {expected.shape})")
    return calls


def copy_call(size: Size) -> Callable[[], object]:
    """np.copyto of the input's bytes between two preallocated, touched arrays."""
    return timing.copy_ceiling(int(np.prod(size.shape)) * np.dtype(size.dtype).itemsize)


# ---------------------------------------------------------------------------
# The pipeline: K workers on the same case at the same time

class Rate(NamedTuple):
    """Calls per second of one case in each worker (empty with an error)."""
    per_worker: Tuple[float, ...]
    error: str = ""

    @property
    def total(self) -> float:
        return float(sum(self.per_worker))

    @property
    def lowest(self) -> float:
        return float(min(self.per_worker))

    @property
    def highest(self) -> float:
        return float(max(self.per_worker))


class Config(NamedTuple):
    operators: Tuple[str, ...] = OPERATORS
    sizes: Tuple[str, ...] = tuple(size.name for size in SIZES)
    variants: Tuple[str, ...] = VARIANTS
    workers: Optional[int] = None    # None: the usable cores
    seconds: float = 0.2             # counted, per case, variant and round
    warmup: float = 0.05             # before counting, per case, variant and round
    copy: bool = True                # the copy row of each size
    rounds: int = 3                  # each case's variants in turn, this many times (medians)


# (operator, size name, variant); the copy row is (COPY, size name, COPY).
Key = Tuple[str, str, str]

# Set in each worker by the pool's initializer.
_barrier = None
# Seconds a worker waits at the barrier for the others before giving up.
BARRIER_SECONDS = 30.0


def make_plan(config: Config, with_torch: bool) -> List[Key]:
    """The cases in the order the workers run them: per size the copy row,
    then per operator its variants in turn, ``config.rounds`` times over (so
    a machine that drifts meets every variant alike)."""
    variants = [v for v in config.variants if v != TORCH or with_torch]
    plan: List[Key] = []
    for size_name in config.sizes:
        if config.copy:
            plan += [(COPY, size_name, COPY)] * config.rounds
        for operator in config.operators:
            plan += [(operator, size_name, variant) for variant in variants] * config.rounds
    return plan


def count_calls(call: Callable[[], object], warmup: float, seconds: float) -> float:
    """Calls per second of ``call`` over ``seconds``, after ``warmup`` seconds of calls."""
    start = time.perf_counter()
    while time.perf_counter() - start < warmup:
        call()
    begin = time.perf_counter()
    end = begin + seconds
    calls = 0
    while True:
        call()
        calls += 1
        now = time.perf_counter()
        if now >= end:
            return calls / (now - begin)


def _init_worker(barrier, with_torch: bool) -> None:
    global _barrier
    _barrier = barrier
    if with_torch:
        try:
            import torch  # noqa: F401  (imported once here, not inside a timed case)
        except ImportError:
            pass


def _run_worker(job) -> List[Tuple[float, str]]:
    """One worker's share: every case of the plan in turn, each started
    together with the other workers; (calls/s, error) per case."""
    plan, warmup, seconds = job
    torch = sys.modules.get("torch")
    variants_of: Dict[Tuple[str, str], List[str]] = {}
    for operator, size_name, variant in plan:
        variants_of.setdefault((operator, size_name), []).append(variant)
    results = []
    prepared_case, calls, case_error = None, {}, ""
    for operator, size_name, variant in plan:
        size = SIZE_BY_NAME[size_name]
        call, error = None, ""
        if operator == COPY:
            call = copy_call(size)
        else:
            if prepared_case != (operator, size_name):
                # a new case: the last one's inputs are freed
                prepared_case, calls, case_error = (operator, size_name), {}, ""
                try:
                    calls = case_calls(operator, size, variants_of[prepared_case], torch)
                except Exception as exc:  # a broken case is reported, the others still run
                    case_error = f"{type(exc).__name__}: {exc}"
            call = calls.get(variant)
            error = case_error or ("" if call else f"no {variant} call here")
        _barrier.wait(BARRIER_SECONDS)
        results.append((count_calls(call, warmup, seconds), "") if call else (0.0, error))
    return results


def run_pipeline(method: str, config: Config = Config()) -> Dict[Key, Rate]:
    """Every case of ``config`` in K worker processes started with ``method``
    (K threads of this process for THREADS), from this process; calls/s per
    case and worker.

    This process imports fastblock first, as a user's would, and makes no
    fastblock call itself; run it in a fresh process (:func:`in_fresh_process`)
    to be sure that nothing before made a threaded call."""
    import fastblock  # noqa: F401
    workers = config.workers or usable_cores()
    with_torch = TORCH in config.variants and torch_installed()
    plan = make_plan(config, with_torch)
    timeout = pipeline_timeout(config, len(plan))
    job = (plan, config.warmup, config.seconds)
    if method == THREADS:
        per_worker = _run_threads(workers, job, with_torch, timeout)
    else:
        context = mp.get_context(method)
        barrier = context.Barrier(workers)
        with context.Pool(workers, initializer=_init_worker,
                          initargs=(barrier, with_torch)) as pool:
            # One job per worker: each blocks at the barrier of its first
            # case, so no worker can take a second job.
            pending = pool.map_async(_run_worker, [job] * workers, chunksize=1)
            try:
                per_worker = pending.get(timeout)
            except mp.TimeoutError:
                raise TimeoutError(f"{method} pipeline: no result within {timeout:.0f} s") from None
    rounds: Dict[Key, List[Rate]] = {}
    for index, key in enumerate(plan):
        cells = [worker[index] for worker in per_worker]
        errors = sorted({error for _, error in cells if error})
        rounds.setdefault(key, []).append(
            Rate(() if errors else tuple(rate for rate, _ in cells), "; ".join(errors)))
    return {key: median_round(rates) for key, rates in rounds.items()}


def _run_threads(workers: int, job, with_torch: bool, timeout: float) -> List[list]:
    """_run_worker's share in each of ``workers`` threads of this process."""
    _init_worker(threading.Barrier(workers), with_torch)
    per_worker: List[list] = [[] for _ in range(workers)]
    failures: List[str] = []

    def work(index: int) -> None:
        try:
            per_worker[index] = _run_worker(job)
        except BaseException:  # reported below, with the others' results
            failures.append(traceback.format_exc())

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(workers)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    if any(thread.is_alive() for thread in threads):
        raise TimeoutError(f"{THREADS} pipeline: no result within {timeout:.0f} s")
    if failures:
        raise RuntimeError(failures[0])
    return per_worker


def median_round(rates: Sequence[Rate]) -> Rate:
    """Of one case's rounds, the one whose total is the median (the lower
    middle one of an even count); a round with an error wins, so that it is
    reported."""
    failed = [rate for rate in rates if rate.error]
    if failed:
        return failed[0]
    ordered = sorted(rates, key=lambda rate: rate.total)
    return ordered[(len(ordered) - 1) // 2]


def pipeline_seconds(config: Config, n_cases: Optional[int] = None) -> float:
    """About how long :func:`run_pipeline` counts and warms up, in seconds."""
    if n_cases is None:
        n_cases = len(make_plan(config, TORCH in config.variants and torch_installed()))
    return n_cases * (config.warmup + config.seconds + 0.05)


def pipeline_timeout(config: Config, n_cases: Optional[int] = None) -> float:
    """Seconds after which :func:`run_pipeline` gives up: room for a loaded
    machine, the workers' start and a broken barrier."""
    return 1.5 * pipeline_seconds(config, n_cases) + 2 * BARRIER_SECONDS


# ---------------------------------------------------------------------------
# Ratios and flags

def ratios(totals: Dict[str, float]) -> Dict[str, float]:
    """Default fastblock's calls/s over one thread's and over NumPy's, from
    one case's total calls/s by variant (a ratio is left out where a variant is)."""
    result = {}
    default = totals.get(FASTBLOCK)
    if default is not None:
        for name, variant in (("vs 1 thread", ONE_THREAD), ("vs numpy", NUMPY)):
            if totals.get(variant):
                result[name] = default / totals[variant]
    return result


def flags(case_ratios: Dict[str, float]) -> List[str]:
    """The targets a case misses: default below 0.9x one thread, or below NumPy."""
    missed = []
    if case_ratios.get("vs 1 thread", MIN_VS_ONE_THREAD) < MIN_VS_ONE_THREAD:
        missed.append(f"< {MIN_VS_ONE_THREAD}x 1 thread")
    if case_ratios.get("vs numpy", MIN_VS_NUMPY) < MIN_VS_NUMPY:
        missed.append("< numpy")
    return missed


def totals_by_case(rates: Dict[Key, Rate]) -> Dict[Tuple[str, str], Dict[str, float]]:
    """{(operator, size name): {variant: total calls/s}}, cases without error."""
    table: Dict[Tuple[str, str], Dict[str, float]] = {}
    for (operator, size_name, variant), rate in rates.items():
        if not rate.error:
            table.setdefault((operator, size_name), {})[variant] = rate.total
    return table


# ---------------------------------------------------------------------------
# One process beside a busy core

def start_spinner(limit_seconds: float, pin: bool = False) -> subprocess.Popen:
    """A process that spins for at most ``limit_seconds``, on the last usable
    core where ``pin``."""
    process = subprocess.Popen([sys.executable, "-c", SPIN_SOURCE, f"{limit_seconds:.1f}"])
    if pin and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(process.pid, {max(os.sched_getaffinity(0))})
    return process


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


def median_call_seconds(calls: Dict[str, Callable[[], object]], seconds: float,
                        warmup: float, rounds: int = 5) -> Dict[str, float]:
    """Median seconds of one call of each function, the functions taking
    turns in ``rounds`` stretches of ``seconds / rounds`` each."""
    for call in calls.values():
        count_calls(call, warmup, 0.0)
    samples: Dict[str, List[float]] = {name: [] for name in calls}
    stretch = seconds / rounds
    for _ in range(rounds):
        for name, call in calls.items():
            start = time.perf_counter()
            now = start
            while now - start < stretch or not samples[name]:
                before = now
                call()
                now = time.perf_counter()
                samples[name].append(now - before)
    return {name: float(np.median(times)) for name, times in samples.items()}


def busy_core(config: Config = Config(seconds=0.2, warmup=0.05), pin: bool = False
              ) -> Dict[Tuple[str, str], Dict[str, float]]:
    """Median call seconds of every case, default and ``num_threads=1``,
    in this process while another spins on a core;
    {(operator, size name): {variant: seconds}}."""
    cases = [(operator, size_name) for size_name in config.sizes for operator in config.operators]
    limit = busy_seconds(config) * 3 + 30
    spinner = start_spinner(limit, pin)
    try:
        time.sleep(0.1)  # the spinner is running before the first call
        results = {}
        for operator, size_name in cases:
            calls = case_calls(operator, SIZE_BY_NAME[size_name], (FASTBLOCK, ONE_THREAD))
            results[(operator, size_name)] = median_call_seconds(calls, 2 * config.seconds,
                                                                 config.warmup)
        return results
    finally:
        stop(spinner)


def busy_seconds(config: Config) -> float:
    return len(config.sizes) * len(config.operators) * 2 * (config.seconds + config.warmup + 0.02)


# ---------------------------------------------------------------------------
# A fresh parent

def _fresh_main(function, args, connection) -> None:
    if hasattr(os, "setpgid"):
        os.setpgid(0, 0)  # a process group of its own: its workers and spinner end with it
    try:
        connection.send((True, function(*args)))
    except BaseException:
        connection.send((False, traceback.format_exc()))
    finally:
        connection.close()


def in_fresh_process(function, args: tuple, timeout: float):
    """``function(*args)`` in a new interpreter (spawn): a parent that has
    made no fastblock call yet, whatever this process has done."""
    context = mp.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_fresh_main, args=(function, args, sender))
    process.start()
    sender.close()
    answered = False
    try:
        if not receiver.poll(timeout):
            raise TimeoutError(f"{function.__name__}: no result within {timeout:.0f} s")
        ok, value = receiver.recv()
        answered = True
    except EOFError:
        raise RuntimeError(f"{function.__name__}: the process ended without a result "
                           f"(exit code {process.exitcode})") from None
    finally:
        process.join(5 if answered else 0.1)
        if process.is_alive():
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except (AttributeError, OSError):  # no process groups, or not its own yet
                process.terminate()
            process.join(5)
    if not ok:
        raise RuntimeError(f"{function.__name__} failed in its process:\n{value}")
    return value


# ---------------------------------------------------------------------------
# Tables and plot

def _rate_text(value: Optional[float]) -> str:
    return f"{value:,.0f}" if value is not None else "-"


def print_pipeline(method: str, workers: int, rates: Dict[Key, Rate],
                   variants: Sequence[str] = VARIANTS) -> None:
    totals = totals_by_case(rates)
    errors = [(key, rate.error) for key, rate in rates.items() if rate.error]
    size_names = list(dict.fromkeys(size for _, size, _ in rates))
    operators = list(dict.fromkeys(op for op, _, _ in rates if op != COPY))
    shown = [v for v in variants if any(v in totals.get((op, s), {})
                                        for op in operators for s in size_names)]
    kind = "threads of one process" if method == THREADS else "worker processes"
    print(f"{method}: {workers} {kind}, calls/s summed over the workers")
    head = "".join(f"{v:>20}" if v == ONE_THREAD else f"{v:>11}" for v in shown)
    for size_name in size_names:
        print(f"  {SIZE_BY_NAME[size_name].label:22}{head} {'fb min-max/worker':>19} "
              f"{'fb/1t':>6} {'fb/np':>6}")
        copy = rates.get((COPY, size_name, COPY))
        if copy is not None and not copy.error:
            print(f"    {'copy (np.copyto)':20}{_rate_text(copy.total):>11}  "
                  f"(input's bytes; min-max/worker {copy.lowest:,.0f}-{copy.highest:,.0f})")
        for operator in operators:
            case = totals.get((operator, size_name), {})
            if not case:
                continue
            cells = "".join(f"{_rate_text(case.get(v)):>20}" if v == ONE_THREAD else
                            f"{_rate_text(case.get(v)):>11}" for v in shown)
            default = rates.get((operator, size_name, FASTBLOCK))
            spread = (f"{default.lowest:,.0f}-{default.highest:,.0f}"
                      if default is not None and not default.error else "-")
            r = ratios(case)
            ratio_cells = " ".join(f"{r[name]:6.2f}" if name in r else f"{'-':>6}"
                                   for name in ("vs 1 thread", "vs numpy"))
            missed = flags(r)
            print(f"    {operator:20}{cells} {spread:>19} {ratio_cells}"
                  + (f"  << {', '.join(missed)}" if missed else ""))
    for (operator, size_name, variant), error in errors:
        print(f"  {operator} {size_name} {variant}: {error}")


def print_busy(results: Dict[Tuple[str, str], Dict[str, float]]) -> None:
    print(f"  {'case':44} {'default':>10} {'1 thread':>10} {'ratio':>6}")
    for (operator, size_name), times in results.items():
        ratio = times[FASTBLOCK] / times[ONE_THREAD]
        flag = f"  << > {MAX_BUSY_RATIO}x 1 thread" if ratio > MAX_BUSY_RATIO else ""
        print(f"  {operator + ' ' + SIZE_BY_NAME[size_name].label:44} "
              f"{times[FASTBLOCK] * 1e6:8.1f}us {times[ONE_THREAD] * 1e6:8.1f}us "
              f"{ratio:6.2f}{flag}")


def plot(results: Dict[str, Dict[Key, Rate]], path: str,
         variants: Sequence[str] = VARIANTS) -> Optional[str]:
    """Bars of total calls/s per operator and variant, one panel per start
    method (rows) and size (columns), log scale; written to ``path`` as PNG.
    Returns the path, or None (with a line saying so) without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib)")
        return None
    methods = list(results)
    size_names = list(dict.fromkeys(s for rates in results.values() for _, s, _ in rates))
    operators = list(dict.fromkeys(op for rates in results.values() for op, _, _ in rates))
    shown = [v for v in variants
             if any(v == variant for rates in results.values() for _, _, variant in rates)]
    figure, axes = plt.subplots(len(methods), len(size_names), squeeze=False,
                                figsize=(4.5 * len(size_names), 3.6 * len(methods)))
    width = 0.8 / max(1, len(shown))
    for row, method in enumerate(methods):
        for column, size_name in enumerate(size_names):
            panel = axes[row][column]
            copy = results[method].get((COPY, size_name, COPY))
            if copy is not None and not copy.error:
                panel.bar([operators.index(COPY)], [copy.total], 0.5, color="0.6", label=COPY)
            for index, variant in enumerate(shown):
                xs, heights = [], []
                for position, operator in enumerate(operators):
                    rate = results[method].get((operator, size_name, variant))
                    if rate is not None and not rate.error and rate.total > 0:
                        xs.append(position + (index - (len(shown) - 1) / 2) * width)
                        heights.append(rate.total)
                panel.bar(xs, heights, width, label=variant)
            panel.set_yscale("log")
            panel.set_xticks(range(len(operators)))
            panel.set_xticklabels(operators, rotation=60, ha="right", fontsize=7)
            panel.set_title(f"{method}: {SIZE_BY_NAME[size_name].label}", fontsize=9)
            if column == 0:
                panel.set_ylabel("calls/s, all workers")
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="upper center", ncol=len(labels), fontsize=8)
    figure.tight_layout(rect=(0, 0, 1, 0.95))
    figure.savefig(path, dpi=90)
    plt.close(figure)
    return path


# ---------------------------------------------------------------------------
# The report

def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("--pipeline options")
    group.add_argument("--workers", type=int, default=None,
                       help="worker processes (default: the usable cores)")
    group.add_argument("--seconds", type=float, default=None,
                       help="seconds counted per case, variant and round (default 0.2)")
    group.add_argument("--warmup", type=float, default=None,
                       help="seconds of calls before counting (default 0.05)")
    group.add_argument("--rounds", type=int, default=None,
                       help="each case's variants in turn this many times, medians "
                            "(default 3; --quick 1)")
    group.add_argument("--ops", default=None,
                       help=f"comma-separated subset of {', '.join(OPERATORS)}; or "
                            f"{', '.join(CONVERTING)} (not by default)")
    group.add_argument("--samples", default=None,
                       help=f"per-sample inputs, a comma-separated subset of {', '.join(SIZE_BY_NAME)} "
                            "(--quick: 224,nhwc)")
    group.add_argument("--variants", default=None,
                       help=f"comma-separated subset of {', '.join(VARIANTS)}")
    group.add_argument("--methods", default=None,
                       help=f"start methods, or {THREADS} for threads of one process "
                            f"(default: {', '.join(start_methods())})")
    group.add_argument("--no-busy", action="store_true", help="leave out the busy-core part")
    group.add_argument("--busy-pin", action="store_true",
                       help="pin the spinning process to the last usable core")
    group.add_argument("--plot", default="pipeline.png", metavar="PATH",
                       help="PNG of the pipeline's throughput (default pipeline.png; '' for none)")
    group.add_argument("--quick", action="store_true",
                       help="two sizes and one round (under a minute on 2 cores)")


def _subset(text: Optional[str], allowed: Sequence[str], what: str) -> Optional[Tuple[str, ...]]:
    if not text:
        return None
    chosen = tuple(item.strip() for item in text.split(",") if item.strip())
    unknown = [item for item in chosen if item not in allowed]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)} (known: {', '.join(allowed)})")
    return chosen


def config_from(args) -> Config:
    quick = getattr(args, "quick", False)
    sizes = _subset(getattr(args, "samples", None), list(SIZE_BY_NAME), "sample size")
    operators = _subset(getattr(args, "ops", None), OPERATORS + CONVERTING, "operator")
    variants = _subset(getattr(args, "variants", None), VARIANTS, "variant")
    seconds, warmup = getattr(args, "seconds", None), getattr(args, "warmup", None)
    return Config(operators=operators or OPERATORS, variants=variants or VARIANTS,
                  sizes=sizes or (("224", "nhwc") if quick else Config().sizes),
                  workers=getattr(args, "workers", None),
                  seconds=seconds if seconds is not None else Config().seconds,
                  warmup=warmup if warmup is not None else Config().warmup,
                  rounds=getattr(args, "rounds", None) or (1 if quick else Config().rounds))


def report(args=None) -> Dict[str, object]:
    """Print the pipeline tables for each start method and the busy-core
    table, draw the plot; return {"pipeline": {method: rates}, "busy": ...}."""
    if args is None:
        parser = argparse.ArgumentParser()
        add_arguments(parser)
        args = parser.parse_args([])
    config = config_from(args)
    methods = _subset(args.methods, worker_kinds(), "start method") or start_methods()
    workers = config.workers or usable_cores()
    with_torch = TORCH in config.variants and torch_installed()
    estimate = len(methods) * (pipeline_seconds(config) + 3) + \
        (0 if args.no_busy else busy_seconds(Config(config.operators, config.sizes,
                                                     seconds=config.seconds / 2,
                                                     warmup=config.warmup / 2)))
    print(f"Pipeline: {workers} worker processes per start method, all on the same case at "
          f"once; {config.warmup:g} s warm-up, {config.seconds:g} s counted per case and "
          f"variant, the variants in turn {config.rounds} time(s), the median round shown "
          f"({'with' if with_torch else 'no'} torch; about {estimate:.0f} s in all). "
          f"Each start method runs from a fresh parent that imported fastblock and made no call.")
    results: Dict[str, Dict[Key, Rate]] = {}
    for method in methods:
        try:
            results[method] = in_fresh_process(run_pipeline, (method, config),
                                               pipeline_timeout(config) + 30)
        except (TimeoutError, RuntimeError) as exc:
            print(f"{method}: {exc}")
            continue
        print()
        print_pipeline(method, workers, results[method], config.variants)
    print("fb/1t, fb/np: default fastblock's calls/s over num_threads=1's and over NumPy's; "
          f"<< marks a case below {MIN_VS_ONE_THREAD}x one thread or below NumPy.")
    busy = None
    if not args.no_busy:
        busy_config = Config(config.operators, config.sizes, seconds=config.seconds / 2,
                             warmup=config.warmup / 2)
        print()
        print(f"One process calling while another spins on a core"
              f"{' (pinned)' if args.busy_pin else ''}: median call, fastblock default and "
              f"num_threads=1 (a fresh process; ratio > {MAX_BUSY_RATIO} marked <<)")
        try:
            busy = in_fresh_process(busy_core, (busy_config, args.busy_pin),
                                    busy_seconds(busy_config) * 3 + 60)
            print_busy(busy)
        except (TimeoutError, RuntimeError) as exc:
            print(f"busy core: {exc}")
    if args.plot and results:
        written = plot(results, args.plot, config.variants)
        if written:
            print(f"plot: {os.path.abspath(written)}")
    return {"pipeline": results, "busy": busy}
