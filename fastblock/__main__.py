"""``python -m fastblock``: a short self-check and speed report for this machine.

1. Self-check: each operator, mode and layout, and rearrange/repeat
   patterns, on random inputs of several dtypes and memory layouts, compared
   with NumPy's own way.
2. Speed: a few representative cases, fastblock against NumPy's way and
   against the copy ceiling (``np.copyto`` of the same bytes between
   preallocated arrays), as GB/s and ratios.

Runs in well under a minute on 2 cores; ``--quick`` skips the 64 MiB cases.
The full reports (every speed target, the transpose comparison, and ONNX
Runtime, OpenVINO, PyTorch and TensorFlow on the same cases) are not part of
the installed package: they live in the source repository, as
``python -m speed_reports --targets|--transpose|--peers`` (run from its root).
"""
from __future__ import annotations

import argparse
import sys
from typing import Callable, List, NamedTuple

import numpy as np

import fastblock as fb
from fastblock._reference import converted_ref, depth_to_space_ref, space_to_depth_ref
from fastblock._timing import copy_ceiling, gigabytes_per_second, interleaved_medians


def _progress(step: int, total: int, label: str) -> None:
    """A progress bar on a terminal; a dot per step elsewhere (logs, CI)."""
    if sys.stdout.isatty():
        width = 24
        filled = width * step // total
        sys.stdout.write(f"\r  [{'#' * filled}{'.' * (width - filled)}] {step}/{total} {label:<44}")
    else:
        sys.stdout.write("." if step < total else ".\n")
    sys.stdout.flush()


def _end_progress() -> None:
    if sys.stdout.isatty():
        sys.stdout.write("\r" + " " * 100 + "\r")
        sys.stdout.flush()


def _random_input(rng, shape, dtype):
    values = rng.integers(0, 120, size=shape)
    return values.astype(dtype)


def _views(x):
    yield "C order", x
    yield "Fortran order", np.asfortranarray(x)
    yield "reversed last axis", x[..., ::-1]


def self_check(seed: int = 0) -> int:
    """Compare every operator with NumPy on random inputs; return the number of mismatches."""
    rng = np.random.default_rng(seed)
    cases = []
    for data_format, rank in [("channels_first", 3), ("channels_first", 4), ("channels_first", 5),
                              ("channels_last", 4), ("channels_last", 5), ("NCHW_VECT_C", 5)]:
        for mode in ("blocks_first", "depth_first"):
            for block_size in (1, 2, 3):
                for dtype in (np.uint8, np.float32, np.complex128, "U5"):
                    cases.append((data_format, rank, mode, block_size, dtype))
    failures = 0
    total = len(cases) + 1
    for step, (data_format, rank, mode, bs, dtype) in enumerate(cases, 1):
        _progress(step, total, f"{data_format} rank {rank} {mode} bs={bs} {np.dtype(dtype)}")
        n_spatial = 2 if data_format == "NCHW_VECT_C" else rank - 2
        spatial = [bs * int(rng.integers(1, 4)) for _ in range(n_spatial)]
        if data_format == "NCHW_VECT_C":
            shape = [2, int(rng.integers(1, 3)) * bs * bs, *spatial, 4]
        elif data_format == "channels_last":
            shape = [2, *spatial, int(rng.integers(1, 4)) * bs ** (rank - 2)]
        else:
            shape = [2, int(rng.integers(1, 4)) * bs ** (rank - 2), *spatial]
        x = _random_input(rng, shape, dtype)
        for _, view in _views(x):
            got = fb.space_to_depth(view, bs, mode, data_format)
            failures += not np.array_equal(got, space_to_depth_ref(view, bs, mode, data_format))
            got = fb.depth_to_space(view, bs, mode, data_format)
            failures += not np.array_equal(got, depth_to_space_ref(view, bs, mode, data_format))
    _progress(total, total, "tile, rearrange, repeat")
    for shape, repeats in [((), 3), ((5,), (2, 3)), ((3, 4), (2, 1, 3)), ((2, 3, 4), (1, 0, 2))]:
        x = _random_input(rng, shape, np.int16)
        failures += not np.array_equal(fb.tile(x, repeats), np.tile(x, repeats))
    for dtype in (np.uint8, np.float32, "U5"):
        for _, x in _views(_random_input(rng, (2, 12, 6, 4), dtype)):
            for got, expected in _pattern_checks(x):
                failures += got.shape != expected.shape or not np.array_equal(got, expected)
    failures += _conversion_failures(rng)
    _end_progress()
    return failures


def _conversion_failures(rng) -> int:
    """dtype=, scale=, offset= (docs/convert.md) against the rule in NumPy:
    an image to model input and back, float16 and bfloat16 results."""
    failures = 0
    std = np.array([0.229, 0.224, 0.225])
    scale = (1 / (255 * std)).reshape(3, 1, 1)
    offset = (-np.array([0.485, 0.456, 0.406]) / std).reshape(3, 1, 1)
    for shape in ((7, 9, 3), (40, 33, 3)):
        img = _random_input(rng, shape, np.uint8)
        for view in (img, img[..., ::-1]):
            chw = np.transpose(view, (2, 0, 1))
            for dtype in _conversion_results():
                got = fb.transpose(view, (2, 0, 1), dtype=dtype, scale=scale, offset=offset)
                want = converted_ref(chw, dtype, scale, offset)
                failures += not np.array_equal(got.view(np.uint8),
                                               np.ascontiguousarray(want).view(np.uint8))
            model = converted_ref(chw, np.float32, 1 / 255)
            back = fb.transpose(model, (1, 2, 0), dtype=np.uint8, scale=255)
            failures += not np.array_equal(back, converted_ref(np.transpose(model, (1, 2, 0)),
                                                               np.uint8, 255))
    return failures


def _conversion_results() -> list:
    """The result dtypes the self-check converts to (bfloat16 where ml_dtypes is)."""
    results = [np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.uint8)]
    try:
        import ml_dtypes
    except ImportError:
        return results
    return results + [np.dtype(ml_dtypes.bfloat16)]


def _pattern_checks(x):
    """(fb.rearrange or fb.repeat, NumPy's way) pairs on a [N, C, H, W] ``x``."""
    n, c, h, w = x.shape
    yield (fb.rearrange(x, "b c (h h2) (w w2) -> b (h2 w2 c) h w", h2=2, w2=2),
           space_to_depth_ref(x, 2))
    yield (fb.rearrange(x, "b (c h2 w2) h w -> b c (h h2) (w w2)", h2=2, w2=2),
           depth_to_space_ref(x, 2, "depth_first"))
    yield fb.rearrange(x, "b c h w -> b h w c"), np.transpose(x, (0, 2, 3, 1))
    yield (fb.rearrange(x, "b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=3, p2=2),
           x.reshape(n, c, h // 3, 3, w // 2, 2).transpose(0, 2, 4, 3, 5, 1)
           .reshape(n, h // 3 * (w // 2), 3 * 2 * c))
    yield fb.repeat(x, "b c h w -> (r b) c h w", r=3), np.tile(x, (3, 1, 1, 1))
    yield (fb.repeat(x, "b c h w -> b c (h h2) (w w2)", h2=2, w2=2),
           np.repeat(np.repeat(x, 2, axis=2), 2, axis=3))


# ImageNet's normalisation as one scale and offset a channel (docs/convert.md).
_SCALE = (1 / (255 * np.array([0.229, 0.224, 0.225]))).reshape(3, 1, 1)
_OFFSET = (-np.array([0.485, 0.456, 0.406]) / np.array([0.229, 0.224, 0.225])).reshape(3, 1, 1)


def _numpy_imagenet(x):
    """NumPy's way: transpose, astype, multiply and add in place."""
    y = np.transpose(x, (2, 0, 1)).astype(np.float32)
    y *= _SCALE.astype(np.float32)
    y += _OFFSET.astype(np.float32)
    return y


class SpeedCase(NamedTuple):
    label: str
    make_input: Callable[[], np.ndarray]
    fastblock: Callable[..., np.ndarray]
    numpy_way: Callable[[np.ndarray], np.ndarray]


def _speed_cases(quick: bool) -> List[SpeedCase]:
    cases = [
        SpeedCase("tiny [1,8,4,4] f32 depth_to_space",
                  lambda: np.ones((1, 8, 4, 4), np.float32),
                  lambda x, **kw: fb.depth_to_space(x, 2, **kw),
                  lambda x: depth_to_space_ref(x, 2)),
        SpeedCase("1 MiB [1,64,64,64] f32 depth_to_space",
                  lambda: np.ones((1, 64, 64, 64), np.float32),
                  lambda x, **kw: fb.depth_to_space(x, 2, **kw),
                  lambda x: depth_to_space_ref(x, 2)),
        SpeedCase("1 MiB uint8 patchify fb.rearrange",
                  lambda: np.ones((1, 3, 512, 672), np.uint8),
                  lambda x, **kw: fb.rearrange(x, "b c (h p1) (w p2) -> b (h w) (p1 p2 c)",
                                               p1=16, p2=16, **kw),
                  lambda x: np.ascontiguousarray(
                      x.reshape(1, 3, 32, 16, 42, 16).transpose(0, 2, 4, 3, 5, 1)
                      .reshape(1, 32 * 42, 16 * 16 * 3))),
        SpeedCase("uint8 image [32,224,224,3] NHWC s2d bs=2",
                  lambda: np.ones((32, 224, 224, 3), np.uint8),
                  lambda x, **kw: fb.space_to_depth(x, 2, data_format="NHWC", **kw),
                  lambda x: space_to_depth_ref(x, 2, data_format="channels_last")),
        SpeedCase("ImageNet [224,224,3] u8 -> CHW f32, scaled",
                  lambda: np.ones((224, 224, 3), np.uint8),
                  lambda x, **kw: fb.transpose(x, (2, 0, 1), dtype=np.float32, scale=_SCALE,
                                               offset=_OFFSET, **kw),
                  lambda x: _numpy_imagenet(x)),
    ]
    if not quick:
        cases += [
            SpeedCase("64 MiB [8,64,256,128] f32 s2d bs=2",
                      lambda: np.ones((8, 64, 256, 128), np.float32),
                      lambda x, **kw: fb.space_to_depth(x, 2, **kw),
                      lambda x: space_to_depth_ref(x, 2)),
            SpeedCase("64 MiB [8,256,128,64] f32 d2s CRD bs=2",
                      lambda: np.ones((8, 256, 128, 64), np.float32),
                      lambda x, **kw: fb.depth_to_space(x, 2, "CRD", **kw),
                      lambda x: depth_to_space_ref(x, 2, "depth_first")),
            SpeedCase("64 MiB [8,64,256,128] f32 rearrange s2d",
                      lambda: np.ones((8, 64, 256, 128), np.float32),
                      lambda x, **kw: fb.rearrange(x, "b c (h h2) (w w2) -> b (h2 w2 c) h w",
                                                   h2=2, w2=2, **kw),
                      lambda x: space_to_depth_ref(x, 2)),
            SpeedCase("64 MiB uint8 tile (1,16) of [4096,1024]",
                      lambda: np.ones((4096, 1024), np.uint8),
                      lambda x, **kw: fb.tile(x, (1, 16), **kw),
                      lambda x: np.tile(x, (1, 16))),
        ]
    return cases


def speed_report(quick: bool = False) -> None:
    cases = _speed_cases(quick)
    rows = []
    for step, case in enumerate(cases, 1):
        _progress(step, len(cases), case.label)
        x = case.make_input()
        result = case.fastblock(x)
        out = np.empty_like(result)
        nbytes = result.nbytes
        times = interleaved_medians({
            "copy": copy_ceiling(nbytes),
            "fastblock": lambda: case.fastblock(x, out=out),
            "fastblock_new": lambda: case.fastblock(x),
            "numpy": lambda: case.numpy_way(x),
        }, rounds=7, min_seconds=2e-3)
        rows.append((case.label, nbytes, times))
    _end_progress()
    print(f"{'case':44} {'fastblock':>10} {'GB/s':>6} {'/copy':>6} {'new/copy':>8} "
          f"{'numpy/copy':>10} {'speed-up':>8}")
    for label, nbytes, t in rows:
        print(f"{label:44} {_fmt_time(t['fastblock']):>10} "
              f"{gigabytes_per_second(nbytes, t['fastblock']):6.2f} "
              f"{t['fastblock'] / t['copy']:6.2f} {t['fastblock_new'] / t['copy']:8.2f} "
              f"{t['numpy'] / t['copy']:10.2f} {t['numpy'] / t['fastblock']:7.1f}x")
    print("fastblock: into a preallocated out=; new: fresh result; /copy: time over np.copyto of "
          "the same bytes\nbetween preallocated arrays (1.00 = one-thread memory copy); "
          "numpy: reshape/transpose/copy (einops' way), np.tile, or astype, *= and +=;\n"
          "speed-up: numpy time / fastblock time.")


def _fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    return f"{seconds * 1e3:.2f} ms"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fastblock", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="skip the 64 MiB speed cases")
    args = parser.parse_args(argv)
    from fastblock import _engine
    print(f"fastblock {fb.__version__}: numpy {np.__version__}, "
          f"{fb.get_num_threads()} threads, OpenMP {'on' if _engine.HAVE_OPENMP else 'off'}")
    print("Self-check against NumPy's reshape/transpose/copy and np.tile ...")
    failures = self_check()
    if failures:
        print(f"SELF-CHECK FAILED: {failures} results differ from NumPy")
        return 1
    print("Self-check passed: every operator, mode, layout and conversion matches NumPy.")
    print("Speed (medians of interleaved runs):")
    speed_report(quick=args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
