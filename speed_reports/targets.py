"""The speed targets, measured: ``python -m speed_reports --targets``.

Each figure is a ratio to a reference timed in the same process and
interleaved with the case (medians), so that machine noise hits both:

1. large (64 MiB result) into a preallocated ``out=``, default threads:
   time / ``np.copyto`` of the same bytes (target <= 0.65);
2. large, new result: time / ``src.copy()`` of the same bytes (target <= 1.0);
3. cache-resident (about 1 MiB) into ``out=``: time / ``np.copyto`` (target <= 1.5);
4. per call on a tiny ``[1, 8, 4, 4]`` float32 input (target <= 2 us and below
   NumPy's reshape/transpose/copy);
5. strided input (a stepped view, Fortran order) / the same contiguous input
   (target <= 1.3);
6. peak memory of a call / the result's size (``tracemalloc``; target 1.0).

Target 1 is stated as "<= 0.65 (that is >= 85 % of a two-thread copy)": the
two agree where a two-thread copy takes 0.55 of a one-thread one, as on the
Xeon the targets were set on. On other machines they differ (the 2-core AMD
EPYC CI machine of 2026-11: 0.66 to 0.89), so the report first measures this
machine's floors (:func:`.machine.machine_floors`) and gives target 1 both ways.
"""
from __future__ import annotations

import itertools
import sys
import tracemalloc
from typing import Callable, Iterable, Iterator, List, NamedTuple

import numpy as np

import fastblock as fb

from .machine import LARGE, cpu_name, huge_page_share, machine_floors
from .source import reference, timing

CACHED = 1 << 20


class Case(NamedTuple):
    label: str
    x: np.ndarray
    run: Callable[..., np.ndarray]


def _block_case(op: str, mode: str, layout: str, channels: int, bs: int, dtype, nbytes: int,
                rank: int = 4) -> Case:
    """A SpaceToDepth or DepthToSpace case whose result has about ``nbytes`` bytes;
    ``channels`` is the space array's channel count."""
    itemsize = np.dtype(dtype).itemsize
    n_spatial = 2 if layout == "NCHW_VECT_C" else rank - 2
    if layout == "NCHW_VECT_C":
        channels = 4 * bs * bs
    # Spatial edge (of the space array) that gives the requested size.
    edge = int(round((nbytes / itemsize / channels) ** (1 / n_spatial)))
    edge = max(bs, edge - edge % (bs * 4))
    spatial = [edge] * n_spatial
    if layout == "channels_last":
        space_shape = (1, *spatial, channels)
    elif layout == "NCHW_VECT_C":
        space_shape = (1, channels // 4, *spatial, 4)
    else:
        space_shape = (1, channels, *spatial)
    space = np.ones(space_shape, dtype)
    fmt = layout
    if op == "s2d":
        return Case(f"s2d {mode[:5]} {layout} C={channels} bs={bs} {np.dtype(dtype).name} {rank}-D",
                    space, lambda x, **kw: fb.space_to_depth(x, bs, mode, fmt, **kw))
    depth = fb.space_to_depth(space, bs, mode, fmt)
    return Case(f"d2s {mode[:5]} {layout} C={channels} bs={bs} {np.dtype(dtype).name} {rank}-D",
                depth, lambda x, **kw: fb.depth_to_space(x, bs, mode, fmt, **kw))


# The target-1 grid: 4-D SpaceToDepth and DepthToSpace cases (operator x
# mode x (layout, channels) x block size x dtype), then 5-D and Tile.
_BLOCK_GRID = list(itertools.product(
    ("s2d", "d2s"), ("blocks_first", "depth_first"),
    (("channels_first", 16), ("channels_last", 3), ("channels_last", 16), ("NCHW_VECT_C", 4)),
    (2, 3), (np.uint8, np.float32)))
LARGE_CASE_COUNT = len(_BLOCK_GRID) + 5


def _large_cases() -> Iterator[Case]:
    """The target-1 cases, each built when asked for: together their inputs
    hold 4.4 GiB, which a process measuring new results (target 2) should
    not carry (a new space_to_depth result took 2.09 x np.copyto in a
    process holding them all, 1.31 in a fresh one; one run each)."""
    for op, mode, (layout, channels), bs, dtype in _BLOCK_GRID:
        yield _block_case(op, mode, layout, channels, bs, dtype, LARGE)
    yield _block_case("s2d", "blocks_first", "channels_first", 8, 2, np.float32, LARGE, rank=5)
    yield _block_case("d2s", "depth_first", "channels_first", 8, 2, np.float64, LARGE, rank=5)
    rows = np.ones((LARGE // 1024 // 8, 1024), np.uint8)
    yield Case("tile uint8 (1, 8), innermost", rows, lambda x, **kw: fb.tile(x, (1, 8), **kw))
    yield Case("tile uint8 (8, 1), outermost", rows, lambda x, **kw: fb.tile(x, (8, 1), **kw))
    pixels = np.ones((LARGE // 3 // 64, 3), np.uint8)
    yield Case("tile uint8 [n,3] (1, 64)", pixels, lambda x, **kw: fb.tile(x, (1, 64), **kw))


def _ratio_rows(cases: Iterable[Case], count: int, rounds: int,
                huge_pages: bool = False) -> List[tuple]:
    """(label, out=/copy, new/x.copy(), copy seconds, huge_page_share of a
    new result or None) for each case; the share only where ``huge_pages``."""
    rows = []
    for step, case in enumerate(cases, 1):
        sys.stdout.write(f"\r  {step}/{count} {case.label:<60}")
        sys.stdout.flush()
        result = case.run(case.x)
        out = np.empty_like(result)
        src = np.ones(result.nbytes, np.uint8)
        dst = np.zeros(result.nbytes, np.uint8)
        t = timing.interleaved_medians({
            "copy": lambda: np.copyto(dst, src),
            "fresh copy": lambda: src.copy(),
            "out": lambda: case.run(case.x, out=out),
            "new": lambda: case.run(case.x),
        }, rounds=rounds, min_seconds=2e-3)
        rows.append((case.label, t["out"] / t["copy"], t["new"] / t["fresh copy"], t["copy"],
                     huge_page_share(case.run(case.x)) if huge_pages else None))
    sys.stdout.write("\r" + " " * 90 + "\r")
    return rows


def _mark(ok: bool) -> str:
    return "met" if ok else "NOT met"


def report() -> None:
    print(f"Targets (threads: {fb.get_num_threads()}); ratios of medians, interleaved runs")
    floors = machine_floors()
    two_thread_bound = floors["two_thread_copy"] / 0.85
    print(f"\n0. This machine: {cpu_name()}, {fb.get_num_threads()} threads. Plain copies of 64 MiB "
          "/ a one-thread np.copyto:")
    print(f"  two-thread np.copyto {floors['two_thread_copy']:.2f}; fastblock's contiguous copy "
          f"{floors['fastblock_copy']:.2f}; x.copy() (new pages) {floors['fresh_copy']:.2f}")
    large = _ratio_rows(_large_cases(), LARGE_CASE_COUNT, rounds=5, huge_pages=True)
    print("\n1-2. Large (64 MiB results): out=/copy (target <= 0.65), new/x.copy() (target <= 1.0)")
    for label, out_ratio, new_ratio, _, _ in large:
        print(f"  {label:52} {out_ratio:5.2f} {_mark(out_ratio <= 0.65):8} "
              f"{new_ratio:5.2f} {_mark(new_ratio <= 1.0)}")
    worst = max(r[1] for r in large)
    print(f"  worst out=/copy {worst:.2f}; median {np.median([r[1] for r in large]):.2f}; "
          f"met {sum(r[1] <= 0.65 for r in large)}/{len(large)}")
    print(f"  at >= 85 % of this machine's two-thread copy (out=/copy <= {two_thread_bound:.2f}): "
          f"met {sum(r[1] <= two_thread_bound for r in large)}/{len(large)}")
    print(f"  new/x.copy(): worst {max(r[2] for r in large):.2f}; median "
          f"{np.median([r[2] for r in large]):.2f}; met {sum(r[2] <= 1.0 for r in large)}/{len(large)}")
    shares = [r[4] for r in large if r[4] is not None]
    if shares:
        # Where this is low, fresh pages were small ones: the kernel had no
        # free 2 MiB pages, and target 2 measures something else.
        print(f"  new results in huge pages: least {min(shares):.0%}, median {np.median(shares):.0%}")

    cached_cases = [
        _block_case("d2s", "blocks_first", "channels_first", 16, 2, np.float32, CACHED),
        _block_case("s2d", "blocks_first", "channels_first", 16, 2, np.float32, CACHED),
        _block_case("s2d", "blocks_first", "channels_last", 3, 2, np.uint8, CACHED),
        Case("tile float32 (1, 4)", np.ones((256, 256), np.float32),
             lambda x, **kw: fb.tile(x, (1, 4), **kw)),
    ]
    print("\n3. Cache-resident (1 MiB): out=/copy (target <= 1.5)")
    for label, out_ratio, _, copy_time, _ in _ratio_rows(cached_cases, len(cached_cases), rounds=9):
        print(f"  {label:52} {out_ratio:5.2f} {_mark(out_ratio <= 1.5)}")

    tiny = np.ones((1, 8, 4, 4), np.float32)
    tiny_out = fb.depth_to_space(tiny, 2)
    t = timing.interleaved_medians({
        "fastblock": lambda: fb.depth_to_space(tiny, 2),
        "fastblock out=": lambda: fb.depth_to_space(tiny, 2, out=tiny_out),
        "numpy": lambda: reference.depth_to_space_ref(tiny, 2),
    }, rounds=9, min_seconds=5e-3)
    print("\n4. Per call, [1, 8, 4, 4] float32 depth_to_space (target <= 2 us, below NumPy)")
    print(f"  fastblock {t['fastblock'] * 1e6:.2f} us, with out= {t['fastblock out='] * 1e6:.2f} us, "
          f"NumPy {t['numpy'] * 1e6:.2f} us: {_mark(t['fastblock'] <= 2e-6 and t['fastblock'] < t['numpy'])}")

    print("\n5. Strided input / contiguous input, same case (target <= 1.3)")
    base = np.ones((8, 32, 256, 256), np.float32)
    # A step on the innermost axis reads every source line for half its
    # bytes: 1.5 x the memory traffic of the contiguous case, streamed.
    stepped = np.ones((8, 32, 256, 512), np.float32)[..., ::2]
    channel_steps = np.ones((8, 64, 256, 256), np.float32)[:, ::2]
    fortran = np.asfortranarray(base)
    nhwc_view = np.ascontiguousarray(base.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    out = fb.space_to_depth(base, 2)
    for label, view in (("stepped view [..., ::2]", stepped), ("stepped view [:, ::2]", channel_steps),
                        ("Fortran order", fortran), ("NHWC array viewed as NCHW", nhwc_view)):
        t = timing.interleaved_medians({
            "contiguous": lambda: fb.space_to_depth(base, 2, out=out),
            "strided": lambda: fb.space_to_depth(view, 2, out=out),
        }, rounds=7)
        ratio = t["strided"] / t["contiguous"]
        print(f"  s2d bs=2 float32 64 MiB, {label:28} {ratio:5.2f} {_mark(ratio <= 1.3)}")

    print("\n6. Peak memory / result size (target 1.00)")
    for label, run in (("space_to_depth 64 MiB", lambda: fb.space_to_depth(base, 2)),
                       ("depth_to_space, Fortran input", lambda: fb.depth_to_space(fortran, 2)),
                       ("tile (1, 8)", lambda: fb.tile(base[:1], (1, 8)))):
        tracemalloc.start()
        result = run()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(f"  {label:40} {peak / result.nbytes:5.2f} {_mark(peak <= result.nbytes * 1.01)}")
        del result
