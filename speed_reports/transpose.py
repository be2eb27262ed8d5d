"""Speed of :func:`fastblock.transpose` on common permutations.

Each case is timed against the copy ceiling (``np.copyto`` of the result's
bytes between two preallocated, already-written arrays, in this process,
interleaved with the case: see ``fastblock/_timing.py``), against NumPy
(``np.copyto(out, x.transpose(axes))`` into a preallocated array, and
``np.ascontiguousarray(x.transpose(axes))``, a fresh array), and against
PyTorch's ``permute`` where ``torch`` can be imported
(``out.copy_(t.permute(axes))`` and ``t.permute(axes).contiguous()``).

``report()`` prints the table; ``python -m speed_reports --transpose`` calls it.
"""
from __future__ import annotations

from typing import Callable, Dict, List, NamedTuple, Optional, Tuple

import numpy as np

import fastblock as fb

from .source import timing


class TransposeCase(NamedTuple):
    label: str
    shape: Tuple[int, ...]
    dtype: str
    axes: Tuple[int, ...]
    rounds: int = 7


CASES = [
    TransposeCase("NCHW->NHWC f32 [16,64,128,128] 64 MiB", (16, 64, 128, 128), "float32",
                  (0, 2, 3, 1)),
    TransposeCase("NCHW->NHWC u8 [16,64,256,256] 64 MiB", (16, 64, 256, 256), "uint8",
                  (0, 2, 3, 1)),
    TransposeCase("NCHW->NHWC u8 [85,3,512,512] 64 MiB", (85, 3, 512, 512), "uint8",
                  (0, 2, 3, 1)),
    TransposeCase("NHWC->NCHW f32 [16,128,128,64] 64 MiB", (16, 128, 128, 64), "float32",
                  (0, 3, 1, 2)),
    TransposeCase("2-D f32 [8192,8192] 256 MiB", (8192, 8192), "float32", (1, 0), rounds=5),
    TransposeCase("5-D NCDHW->NDHWC f32 [8,32,16,64,64] 64 MiB", (8, 32, 16, 64, 64), "float32",
                  (0, 2, 3, 4, 1)),
]


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _functions(case: TransposeCase, x: np.ndarray, out: np.ndarray,
               torch) -> Dict[str, Callable[[], object]]:
    axes = case.axes
    functions = {
        "copy": timing.copy_ceiling(out.nbytes),
        "fastblock out=": lambda: fb.transpose(x, axes, out=out),
        "fastblock new": lambda: fb.transpose(x, axes),
        "numpy copyto": lambda: np.copyto(out, x.transpose(axes)),
        "numpy new": lambda: np.ascontiguousarray(x.transpose(axes)),
    }
    if torch is not None:
        t = torch.from_numpy(x)
        t_out = torch.from_numpy(np.empty_like(out))
        t_out.copy_(t.permute(axes))
        functions["torch copy_"] = lambda: t_out.copy_(t.permute(axes))
        functions["torch new"] = lambda: t.permute(axes).contiguous()
    return functions


def measure(case: TransposeCase, torch=None) -> Tuple[int, Dict[str, float]]:
    """Median seconds per call of every implementation for one case."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 250, size=case.shape, dtype=np.uint8).astype(case.dtype)
    out = np.empty(tuple(case.shape[a] for a in case.axes), dtype=x.dtype)
    out.fill(0)
    expected = np.ascontiguousarray(x.transpose(case.axes))
    if not np.array_equal(fb.transpose(x, case.axes), expected):
        raise AssertionError(f"fb.transpose differs from NumPy on {case.label}")
    del expected
    times = timing.interleaved_medians(_functions(case, x, out, torch), rounds=case.rounds)
    return out.nbytes, times


def report(cases: Optional[List[TransposeCase]] = None) -> Dict[str, Dict[str, float]]:
    """Print GB/s and ratios for each case; return the medians (seconds)."""
    torch = _torch()
    cases = CASES if cases is None else cases
    print(f"fb.transpose: {fb.get_num_threads()} threads"
          + (f"; torch {torch.__version__}, {torch.get_num_threads()} threads" if torch else
             "; torch not installed"))
    print(f"{'case / implementation':46} {'time':>9} {'GB/s':>6} {'/copy':>6} {'fb speed-up':>11}")
    results = {}
    for case in cases:
        nbytes, t = measure(case, torch)
        results[case.label] = t
        print(case.label)
        for name, seconds in t.items():
            if name == "copy":
                continue
            speed_up = "" if name.startswith("fastblock") else \
                f"{seconds / t['fastblock out=' if 'new' not in name else 'fastblock new']:10.2f}x"
            print(f"  {name:44} {seconds * 1e3:7.2f}ms {timing.gigabytes_per_second(nbytes, seconds):6.2f} "
                  f"{seconds / t['copy']:6.2f} {speed_up:>11}")
        print(f"  {'copy ceiling (np.copyto, 1 thread)':44} {t['copy'] * 1e3:7.2f}ms "
              f"{timing.gigabytes_per_second(nbytes, t['copy']):6.2f} {1.0:6.2f}")
    print("GB/s: result bytes per second. /copy: time over np.copyto of the same bytes between\n"
          "preallocated, touched arrays (1.00 = a one-thread memory copy; lower is faster).\n"
          "fb speed-up: that row's time over fastblock's (out= rows against fastblock out=,\n"
          "new rows against fastblock new). Medians of interleaved rounds.")
    return results


if __name__ == "__main__":
    report()
