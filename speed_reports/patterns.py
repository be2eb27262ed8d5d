"""Speed of :func:`fastblock.rearrange` and :func:`fastblock.repeat` against
einops on NumPy arrays and on PyTorch CPU tensors, on common patterns.

Every figure is a time over the copy ceiling: a one-thread ``np.copyto`` of
the result's bytes between two preallocated, already-written arrays, timed in
the same process, interleaved with the calls (``fastblock/_timing.py``).
Each call makes a new C-contiguous result, as users call it:

- ``fastblock``: ``fb.rearrange(x, pattern, **lengths)`` (or ``fb.repeat``);
- ``operator``: the fastblock operator that does the same move, where one
  exists (``fb.space_to_depth``, ``fb.pixel_shuffle``, ``fb.transpose``,
  ``fb.tile``);
- ``einops numpy``: ``np.ascontiguousarray(einops.rearrange(x, ...))``
  (reshape, transpose, reshape: one single-threaded NumPy copy);
- ``einops torch``: ``einops.rearrange(t, ...).contiguous()`` on a tensor
  sharing ``x``'s memory.

``CASES`` is the one table of patterns: the asv suite
(``asv_bench/benchmarks/bench_rearrange.py``) and ``report()`` (``python
-m speed_reports --patterns``) both read it. Every result is checked
against einops on NumPy before anything is timed.
"""
from __future__ import annotations

from typing import Callable, Dict, NamedTuple, Optional, Tuple

import numpy as np

import fastblock as fb

from .source import timing


class PatternCase(NamedTuple):
    label: str
    operation: str                      # "rearrange" or "repeat"
    pattern: str
    lengths: Dict[str, int]
    dtype: str
    shapes: Dict[str, Tuple[int, ...]]  # input shape by size label
    operator: Optional[Callable[[np.ndarray], np.ndarray]]


# Input shapes whose results are about 64 MiB and 1 MiB, and a tiny call.
CASES = [
    PatternCase("space_to_depth", "rearrange", "b c (h h2) (w w2) -> b (h2 w2 c) h w",
                {"h2": 2, "w2": 2}, "float32",
                {"64MiB": (8, 64, 256, 128), "1MiB": (1, 64, 64, 64), "tiny": (1, 8, 4, 4)},
                lambda x: fb.space_to_depth(x, 2)),
    PatternCase("pixel_shuffle", "rearrange", "b (c h2 w2) h w -> b c (h h2) (w w2)",
                {"h2": 2, "w2": 2}, "float32",
                {"64MiB": (8, 256, 128, 64), "1MiB": (1, 64, 64, 64), "tiny": (1, 8, 4, 4)},
                lambda x: fb.pixel_shuffle(x, 2)),
    PatternCase("NCHW->NHWC", "rearrange", "b c h w -> b h w c", {}, "float32",
                {"64MiB": (16, 64, 128, 128), "1MiB": (1, 64, 64, 64), "tiny": (1, 8, 4, 4)},
                lambda x: fb.transpose(x, (0, 2, 3, 1))),
    PatternCase("patchify uint8", "rearrange", "b c (h p1) (w p2) -> b (h w) (p1 p2 c)",
                {"p1": 16, "p2": 16}, "uint8",
                {"64MiB": (64, 3, 512, 672), "1MiB": (1, 3, 512, 672), "tiny": (1, 3, 32, 32)},
                None),
    PatternCase("5-D space_to_depth", "rearrange",
                "b c (d d2) (h h2) (w w2) -> b (d2 h2 w2 c) d h w",
                {"d2": 2, "h2": 2, "w2": 2}, "float32",
                {"64MiB": (1, 16, 32, 128, 256), "1MiB": (1, 16, 16, 32, 32),
                 "tiny": (1, 2, 4, 4, 4)},
                lambda x: fb.space_to_depth(x, 2)),
    PatternCase("repeat: upsample x2", "repeat", "b c h w -> b c (h h2) (w w2)",
                {"h2": 2, "w2": 2}, "float32",
                {"64MiB": (4, 64, 128, 128), "1MiB": (1, 16, 64, 64), "tiny": (1, 2, 4, 4)},
                None),
    PatternCase("repeat: tile batch x4", "repeat", "b c h w -> (r b) c h w", {"r": 4}, "float32",
                {"64MiB": (1, 64, 256, 256), "1MiB": (1, 16, 64, 64), "tiny": (1, 2, 4, 4)},
                lambda x: fb.tile(x, (4, 1, 1, 1))),
]
SIZES = ("64MiB", "1MiB", "tiny")


def _einops():
    try:
        import einops
    except ImportError:
        return None
    return einops


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def make_input(case: PatternCase, size: str) -> np.ndarray:
    shape = case.shapes[size]
    # 0, 1, ..., 250, 0, 1, ...: made in the case's dtype (an int64 ramp
    # and its remainder cost 20 times as long at 64 MiB).
    return np.resize(np.arange(251, dtype=case.dtype), int(np.prod(shape))).reshape(shape)


def calls(case: PatternCase, x: np.ndarray) -> Dict[str, Callable[[], object]]:
    """The calls to time for ``case`` on ``x``, by name, each checked first
    to give einops' result (what is not installed is left out)."""
    fb_op = getattr(fb, case.operation)
    functions: Dict[str, Callable[[], object]] = {
        "fastblock": lambda: fb_op(x, case.pattern, **case.lengths)}
    if case.operator is not None:
        functions["operator"] = lambda: case.operator(x)
    einops = _einops()
    if einops is not None:
        ein_op = getattr(einops, case.operation)
        functions["einops numpy"] = lambda: np.ascontiguousarray(
            ein_op(x, case.pattern, **case.lengths))
        torch = _torch()
        if torch is not None:
            t = torch.from_numpy(x)
            functions["einops torch"] = lambda: ein_op(t, case.pattern, **case.lengths).contiguous()
        expected = ein_op(x, case.pattern, **case.lengths)
        for name, fn in functions.items():
            got = np.asarray(fn())
            if got.shape != expected.shape or not np.array_equal(got, expected):
                raise AssertionError(f"{case.label}: {name} differs from einops")
    return functions


def ratios(case: PatternCase, size: str, rounds: int = 7,
           names: Optional[Tuple[str, ...]] = None) -> Dict[str, float]:
    """Each call's (or each of ``names``') median time over the copy
    ceiling, and the ceiling's seconds under ``"copy seconds"``."""
    x = make_input(case, size)
    functions = calls(case, x)
    nbytes = np.asarray(functions["fastblock"]()).nbytes
    if names is not None:
        functions = {name: functions[name] for name in names}
    functions["copy"] = timing.copy_ceiling(nbytes)
    times = timing.interleaved_medians(functions, rounds=rounds, min_seconds=2e-3)
    copy = times.pop("copy")
    result = {name: seconds / copy for name, seconds in times.items()}
    result["copy seconds"] = copy
    return result


def report(sizes=SIZES) -> None:
    names = ("fastblock", "operator", "einops numpy", "einops torch")
    print("fb.rearrange / fb.repeat against einops: time over a one-thread np.copyto of the "
          f"result's bytes (new results, {fb.get_num_threads()} threads)")
    print(f"{'case':26} {'size':>6} {'copy':>9} " + " ".join(f"{n:>13}" for n in names))
    for size in sizes:
        for case in CASES:
            r = ratios(case, size)
            cells = " ".join(f"{r[n]:13.2f}" if n in r else f"{'-':>13}" for n in names)
            copy = r["copy seconds"]
            copy_text = f"{copy * 1e6:.1f} us" if copy < 1e-3 else f"{copy * 1e3:.2f} ms"
            print(f"{case.label:26} {size:>6} {copy_text:>9} {cells}")
    print("operator: the fastblock operator doing the same move (- where none does).")
