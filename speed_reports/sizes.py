"""Every front door against NumPy's own way, from 64 B to 64 MiB.

For each operator, each size (result bytes, powers of 4 from 64 B to
64 MiB), float32 and uint8, fastblock's call into a new result is timed
against NumPy's own way of the same result (a view chain and one copy,
``np.tile``, ``x.repeat``), with one thread and with fastblock's default
thread count, and against the copy ceiling (``np.copyto`` of the result's
bytes between preallocated, already-written arrays), all interleaved in one
process (``fastblock/_timing.py``). Every fastblock result is checked equal
to NumPy's first.

``report()`` prints the ratio table (fastblock time over NumPy's: 1.00 is
as fast, lower is faster; the worst per row last) and draws the ratios
against size, one line per operator, into a PNG (``FASTBLOCK_SIZES_PNG``,
default ``sizes.png`` in the current directory) with matplotlib, where it
is installed; ``python -m speed_reports --sizes`` calls it.
"""
from __future__ import annotations

import os
from typing import Callable, Dict, List, NamedTuple, Optional, Tuple

import numpy as np

import fastblock as fb

from .source import timing

# Result bytes: 64 B to 64 MiB in steps of 4.
SIZES = [64 << (2 * i) for i in range(11)]
DTYPES = ["float32", "uint8"]
# The bound: at most this much slower than NumPy, up to LIMIT_BYTES.
TARGET_RATIO = 1.1
LIMIT_BYTES = 16 << 20


class Operator(NamedTuple):
    """An operator's input for a result of a given size, and its two ways.

    ``shape(items)``: the input's shape for a result of ``items`` items
    (a power of 2); ``fastblock(x, threads)`` and ``numpy(x)`` give the
    result."""

    name: str
    shape: Callable[[int], Tuple[int, ...]]
    fastblock: Callable[[np.ndarray, Optional[int]], np.ndarray]
    numpy: Callable[[np.ndarray], np.ndarray]


def _grow(items: int, start: List[int], growing: List[int]) -> Tuple[int, ...]:
    """``start`` with the axes ``growing`` doubled in turn (the last first)
    until the shape holds ``items`` items (``items`` / prod(start) a power
    of 2)."""
    shape = list(start)
    turn = 0
    while int(np.prod(shape)) < items:
        shape[growing[-1 - turn % len(growing)]] *= 2
        turn += 1
    return tuple(shape)


def _s2d_numpy(x):
    n, c, h, w = x.shape
    view = x.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 3, 5, 1, 2, 4)
    return np.ascontiguousarray(view).reshape(n, 4 * c, h // 2, w // 2)


def _d2s_numpy(x):
    n, c, h, w = x.shape
    view = x.reshape(n, 2, 2, c // 4, h, w).transpose(0, 3, 4, 1, 5, 2)
    return np.ascontiguousarray(view).reshape(n, c // 4, 2 * h, 2 * w)


def _shuffle_numpy(x):
    n, c, h, w = x.shape
    view = x.reshape(n, c // 4, 2, 2, h, w).transpose(0, 1, 4, 2, 5, 3)
    return np.ascontiguousarray(view).reshape(n, c // 4, 2 * h, 2 * w)


def _unshuffle_numpy(x):
    n, c, h, w = x.shape
    view = x.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 1, 3, 5, 2, 4)
    return np.ascontiguousarray(view).reshape(n, 4 * c, h // 2, w // 2)


def _s2b_numpy(x):
    n, h, w = x.shape
    view = x.reshape(n, h // 2, 2, w // 2, 2).transpose(2, 4, 0, 1, 3)
    return np.ascontiguousarray(view).reshape(4 * n, h // 2, w // 2)


def _b2s_numpy(x):
    n, h, w = x.shape
    view = x.reshape(2, 2, n // 4, h, w).transpose(2, 3, 0, 4, 1)
    return np.ascontiguousarray(view).reshape(n // 4, 2 * h, 2 * w)


def _patches_numpy(x):
    b, h, w, c = x.shape
    view = x.reshape(b, h // 4, 4, w // 4, 4, c).transpose(0, 1, 3, 2, 4, 5)
    return np.ascontiguousarray(view).reshape(b, (h // 4) * (w // 4), 16 * c)


OPERATORS = [
    Operator("space_to_depth", lambda n: _grow(n, [1, 4, 2, 2], [0, 2, 3]),
             lambda x, t: fb.space_to_depth(x, 2, num_threads=t), _s2d_numpy),
    Operator("depth_to_space", lambda n: _grow(n, [1, 4, 1, 1], [0, 2, 3]),
             lambda x, t: fb.depth_to_space(x, 2, num_threads=t), _d2s_numpy),
    Operator("transpose", lambda n: _grow(n, [1, 4, 2, 2], [0, 1, 2, 3]),
             lambda x, t: fb.transpose(x, (0, 2, 3, 1), num_threads=t),
             lambda x: np.ascontiguousarray(x.transpose(0, 2, 3, 1))),
    Operator("pixel_shuffle", lambda n: _grow(n, [1, 4, 1, 1], [0, 2, 3]),
             lambda x, t: fb.pixel_shuffle(x, 2, num_threads=t), _shuffle_numpy),
    Operator("pixel_unshuffle", lambda n: _grow(n, [1, 4, 2, 2], [0, 2, 3]),
             lambda x, t: fb.pixel_unshuffle(x, 2, num_threads=t), _unshuffle_numpy),
    Operator("space_to_batch", lambda n: _grow(n, [1, 2, 2], [0, 1, 2]),
             lambda x, t: fb.space_to_batch(x, (1, 2, 2), (0, 0, 0), (0, 0, 0), num_threads=t),
             _s2b_numpy),
    Operator("batch_to_space", lambda n: _grow(n, [4, 1, 1], [0, 1, 2]),
             lambda x, t: fb.batch_to_space(x, (1, 2, 2), (0, 0, 0), (0, 0, 0), num_threads=t),
             _b2s_numpy),
    Operator("tile", lambda n: _grow(n // 4, [1, 1, 4], [0, 1, 2]),
             lambda x, t: fb.tile(x, (1, 2, 2), num_threads=t), lambda x: np.tile(x, (1, 2, 2))),
    Operator("rearrange", lambda n: _grow(n, [1, 4, 4, 1], [0, 1, 2, 3]),
             lambda x, t: fb.rearrange(x, "b (h p1) (w p2) c -> b (h w) (p1 p2 c)", p1=4, p2=4,
                                       num_threads=t), _patches_numpy),
    Operator("repeat", lambda n: _grow(n // 2, [1, 8], [0, 1]),
             lambda x, t: fb.repeat(x, "h w -> h (w r)", r=2, num_threads=t),
             lambda x: x.repeat(2, axis=-1)),
]


def measure(op: Operator, dtype: str, nbytes: int, threads: Optional[int]) -> Dict[str, float]:
    """Median seconds of ``fastblock``, ``numpy`` and ``copy`` for one case."""
    items = nbytes // np.dtype(dtype).itemsize
    x = np.arange(int(np.prod(op.shape(items))), dtype=np.uint32).astype(dtype)
    x = x.reshape(op.shape(items))
    expected = op.numpy(x)
    got = op.fastblock(x, threads)
    if expected.nbytes != nbytes or not np.array_equal(got, expected) or got.shape != expected.shape:
        raise AssertionError(f"{op.name} {dtype} {nbytes} B: fastblock differs from NumPy "
                             f"({got.shape} against {expected.shape})")
    del expected, got
    rounds = 5 if nbytes >= 16 << 20 else 9
    return timing.interleaved_medians({
        "fastblock": lambda: op.fastblock(x, threads),
        "numpy": lambda: op.numpy(x),
        "copy": timing.copy_ceiling(nbytes),
    }, rounds=rounds, min_seconds=0.005)


def _size_label(nbytes: int) -> str:
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes >> shift}{unit}"
    return f"{nbytes}B"


def sweep(threads_settings=(1, None), operators: Optional[List[Operator]] = None,
          sizes: Optional[List[int]] = None) -> Dict[tuple, Dict[str, float]]:
    """``{(operator, dtype, threads, nbytes): medians}`` for every case."""
    results = {}
    for threads in threads_settings:
        for dtype in DTYPES:
            for op in operators or OPERATORS:
                for nbytes in sizes or SIZES:
                    results[(op.name, dtype, threads, nbytes)] = measure(op, dtype, nbytes, threads)
    return results


def print_table(results: Dict[tuple, Dict[str, float]]) -> int:
    """Print fastblock / NumPy (and fastblock / copy) per case; return how
    many cases up to LIMIT_BYTES exceed TARGET_RATIO."""
    sizes = sorted({key[3] for key in results})
    over = 0
    for threads in sorted({key[2] for key in results}, key=lambda t: t or 0):
        for dtype in DTYPES:
            names = [op.name for op in OPERATORS if (op.name, dtype, threads, sizes[0]) in results]
            if not names:
                continue
            label = f"{fb.get_num_threads()} (default)" if threads is None else str(threads)
            print(f"\nfastblock / NumPy, {dtype}, threads {label} (new results; lower is faster)")
            print(f"{'operator':16}" + "".join(f"{_size_label(n):>8}" for n in sizes)
                  + f"{'worst':>8}")
            for name in names:
                ratios = [results[(name, dtype, threads, n)]["fastblock"]
                          / results[(name, dtype, threads, n)]["numpy"] for n in sizes]
                worst = max(r for r, n in zip(ratios, sizes) if n <= LIMIT_BYTES)
                over += sum(r > TARGET_RATIO for r, n in zip(ratios, sizes) if n <= LIMIT_BYTES)
                print(f"{name:16}" + "".join(f"{r:8.2f}" for r in ratios) + f"{worst:8.2f}")
            print(f"{'copy / NumPy':16}" + "".join(
                f"{np.median([results[(m, dtype, threads, n)]['copy'] / results[(m, dtype, threads, n)]['numpy'] for m in names]):8.2f}"
                for n in sizes))
            print(f"{'copy us':16}" + "".join(
                f"{np.median([results[(m, dtype, threads, n)]['copy'] for m in names]) * 1e6:8.1f}"
                for n in sizes))
    return over


def plot(results: Dict[tuple, Dict[str, float]], path: str) -> Optional[str]:
    """Draw fastblock / NumPy against size, one line per operator, one
    panel per dtype and thread setting; the path written, or None without
    matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    settings = sorted({(key[1], key[2]) for key in results}, key=lambda s: (s[1] or 0, s[0]))
    fig, axes = plt.subplots(1, len(settings), figsize=(5 * len(settings), 4.5), sharey=True,
                             squeeze=False)
    sizes = sorted({key[3] for key in results})
    for panel, (dtype, threads) in zip(axes[0], settings):
        for op in OPERATORS:
            if (op.name, dtype, threads, sizes[0]) not in results:
                continue
            ratios = [results[(op.name, dtype, threads, n)]["fastblock"]
                      / results[(op.name, dtype, threads, n)]["numpy"] for n in sizes]
            panel.plot(sizes, ratios, marker="o", markersize=3, label=op.name)
        panel.axhline(1.0, color="black", linewidth=0.8)
        panel.axhline(TARGET_RATIO, color="red", linewidth=0.8, linestyle="--")
        panel.set_xscale("log", base=2)
        panel.set_yscale("log")
        panel.set_xticks(sizes, [_size_label(n) for n in sizes], rotation=60, fontsize=7)
        panel.set_title(f"{dtype}, threads {'default' if threads is None else threads}")
        panel.set_xlabel("result bytes")
    axes[0][0].set_ylabel("fastblock time / NumPy time")
    axes[0][-1].legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def report(threads_settings=(1, None)) -> Dict[tuple, Dict[str, float]]:
    """Run the sweep, print the table, draw the plot; return the medians."""
    print(f"fastblock against NumPy's own way, 64 B to 64 MiB: {fb.get_num_threads()} default "
          f"threads; numpy {np.__version__}")
    results = sweep(threads_settings)
    over = print_table(results)
    print(f"\n{over} case(s) up to {_size_label(LIMIT_BYTES)} above {TARGET_RATIO} x NumPy. "
          f"copy / NumPy: np.copyto of the result's bytes between preallocated arrays, "
          f"over NumPy's time (the floor)")
    path = plot(results, os.environ.get("FASTBLOCK_SIZES_PNG", "sizes.png"))
    if path is None:
        print("matplotlib is not installed: no plot (pip install matplotlib, or the bench extra)")
    else:
        print(f"plot: {os.path.abspath(path)}")
    return results


if __name__ == "__main__":
    report()
