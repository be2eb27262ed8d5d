"""Executed arm64 instructions per byte moved, NEON kernels against the
portable path, counted under qemu user mode (a proxy for speed where no
ARM machine is at hand: wall time under emulation means nothing).

    python speed_reports/arm64_instructions.py ROOT PLUGIN [--calls N] [--cases NAME ...]

ROOT: an arm64 root file system with NumPy in ROOT/venv and two builds of
fastblock: ROOT/fastblock, and ROOT/fastblock-portable built with
-DFB_NEON=0 (the portable path of every kernel; ci/arm64.sh makes the
root and both builds, its header says how). PLUGIN: qemu's instruction
counter, tests/plugin/insn.c of qemu's source built as a shared library
(docs/engine.md, "Architectures").

Each case runs in its own qemu processes: once with no call (the
process's own instructions: Python, NumPy, the set-up and the plan), then
N calls, with the NEON build and with the portable one (there the
register tiles of transposes are portable too: ``simd=False`` leaves
them on). The difference over the no-call run, over N calls and the
result's bytes, is the figure. Results of 0.9 to 4.7 MB, so that a
call's Python (some tens of thousands of instructions) is a few per cent
of it. One thread, so the count is the kernel's and the engine's. The
case's plan (describe()) is checked first, so a row names the kernel it
counted. qemu's count of a run is the same on every run.
"""
import argparse
import os
import re
import subprocess
import sys

# name: (operation, its kernel as describe() gives it with the SIMD kernels on).
CASES = {
    "lane split: HWC uint8 RGB -> planes": ("transpose_u8_hwc", {"kernel": "lanes", "lanes": 3}),
    "lane interleave: planes -> HWC uint8 RGB": ("transpose_u8_chw", {"kernel": "lanes", "lanes": 3}),
    "lane split: SpaceToDepth bs 2 float32 NCHW": ("s2d_f32_nchw", {"kernel": "lanes", "lanes": 2}),
    "lane interleave: DepthToSpace bs 2 uint16 NCHW": ("d2s_u16_nchw", {"kernel": "lanes", "lanes": 2}),
    "byte shuffles: gathered 1-byte runs": ("gather_u8", {"kernel": "gather", "shuffle_period": 0}),
    "byte shuffles: periodic runs": ("gather_u8_periodic", {"kernel": "gather", "shuffle_period": 3}),
    "register transpose: uint8 2048 x 2048": ("transpose_u8_2d", {"kernel": "transpose"}),
    "register transpose: float32 1024 x 1024": ("transpose_f32_2d", {"kernel": "transpose"}),
    "repeats: Tile of 3-byte items x 20": ("tile_3b", {"repeats": "shuffles"}),
    "repeats: Tile of 24-byte items x 3": ("tile_24b", {"repeats": "registers"}),
    # The convert stage (dtype=, scale=, offset=): the preprocess cases.
    "convert lanes: HWC u8 -> CHW f32, mean/std": ("convert_imagenet", {"lanes_direct": 3}),
    "convert lanes: HWC u8 -> CHW f16": ("convert_video", {"lanes_direct": 3}),
    "convert lanes: HWC u8 RGBA -> CHW bf16, x/255": ("convert_rgba_bf16", {"lanes_direct": 4}),
    "convert stage: HWC u16 x13 -> CHW f32, mean/std": ("convert_bands", {"simd": True}),
    "convert lanes: CHW f32 -> HWC u8, x255": ("convert_back", {"lanes_direct": 3}),
    "convert: f32 -> f16": ("convert_f16", {"simd": True}),
}


def _operation(name):
    """(call, describe's arguments) of a case: the arrays made the same way
    in every run of the case."""
    import numpy as np

    import fastblock as fb
    from fastblock import _engine

    rng = np.random.default_rng(0)

    def values(shape, width):
        raw = rng.integers(0, 256, (*shape, width), dtype=np.uint8)
        return raw.view(np.dtype(f"V{width}") if width not in (1, 2, 4, 8)
                        else np.dtype(f"u{width}")).reshape(shape)

    def transpose(shape, axes, width, **settings):
        x = values(shape, width)
        out = np.empty(np.transpose(x, axes).shape, x.dtype)
        view = np.transpose(x, axes)

        return (lambda: fb.transpose(x, axes, out=out, num_threads=1),
                (view.shape, view.strides, out.strides, width, out), settings)

    def convert(shape, axes, source, dtype, scale=None, offset=None):
        from fastblock._call.convert import type_code
        if np.dtype(source).kind == "f":
            x = rng.standard_normal(shape).astype(source)
        else:
            x = rng.integers(0, np.iinfo(source).max, shape, dtype=source)
        view = np.transpose(x, axes)
        out = np.empty(view.shape, dtype)
        lanes = (1,) * (out.ndim - 1)
        scale_steps = offset_steps = (0,) * out.ndim
        if scale is not None:
            scale = np.asarray(scale, np.float32).reshape(-1, *lanes)
            scale_steps = np.broadcast_to(scale, out.shape).strides
        if offset is not None:
            offset = np.asarray(offset, np.float32).reshape(-1, *lanes)
            offset_steps = np.broadcast_to(offset, out.shape).strides
        describe = ("convert", out.shape, (view.strides, out.strides, scale_steps, offset_steps),
                    x.itemsize, out.itemsize, type_code(x.dtype), type_code(out.dtype),
                    scale is not None, offset is not None)
        return (lambda: fb.transpose(x, axes, out=out, dtype=dtype, scale=scale, offset=offset,
                                     num_threads=1), describe + (out,), {})

    def tile(n, width, count):
        x = values((n, 1), width)
        out = np.empty((n, count), x.dtype)
        return (lambda: fb.tile(x, (1, count), out=out, num_threads=1),
                (*_engine.tile_copy_axes(x, out, (1, count)), width, out), {})

    if name == "transpose_u8_hwc":
        return transpose((1024, 1366, 3), (2, 0, 1), 1)
    if name == "transpose_u8_chw":
        return transpose((3, 1024, 1366), (1, 2, 0), 1)
    if name == "s2d_f32_nchw":
        # SpaceToDepth bs 2 of (1, 4, 512, 512) float32 NCHW: (C, H, b1, W,
        # b2) to (b1, b2, C, H, W).
        return transpose((4, 256, 2, 256, 2), (2, 4, 0, 1, 3), 4)
    if name == "d2s_u16_nchw":
        # DepthToSpace bs 2 of (1, 32, 256, 256) uint16 NCHW: (b1, b2, C, H, W)
        # to (C, H, b1, W, b2).
        return transpose((2, 2, 8, 256, 256), (2, 3, 0, 4, 1), 2)
    if name == "gather_u8":
        return transpose((8192, 3, 5, 7), (0, 3, 2, 1), 1, shuffle_min_bytes=0)
    if name == "gather_u8_periodic":
        return transpose((512, 2, 200, 2, 3), (0, 2, 4, 1, 3), 1, shuffle_min_bytes=0)
    if name == "transpose_u8_2d":
        return transpose((2048, 2048), (1, 0), 1)
    if name == "transpose_f32_2d":
        return transpose((1024, 1024), (1, 0), 4)
    if name == "convert_imagenet":
        return convert((448, 448, 3), (2, 0, 1), "u1", "f4", [1 / 255 / 0.229] * 3, [-2.1] * 3)
    if name == "convert_video":
        return convert((540, 960, 3), (2, 0, 1), "u1", "f2")
    if name == "convert_rgba_bf16":
        import ml_dtypes
        return convert((512, 512, 4), (2, 0, 1), "u1", ml_dtypes.bfloat16, [1 / 255] * 4)
    if name == "convert_bands":
        return convert((256, 256, 13), (2, 0, 1), "u2", "f4", [1e-3] * 13, [-0.5] * 13)
    if name == "convert_back":
        return convert((3, 768, 768), (1, 2, 0), "f4", "u1", [255.0])
    if name == "convert_f16":
        return convert((1024, 1024), (0, 1), "f4", "f2")
    if name == "tile_3b":
        return tile(65536, 3, 20)
    if name == "tile_24b":
        return tile(65536, 24, 3)
    raise ValueError(name)


def target(name, mode, calls):
    """In the arm64 process: set up the case, check its plan, make the calls."""
    from fastblock import _engine
    call, plan_args, settings = _operation(name)
    portable = not _engine.cpu_features()["neon"]
    expected = {} if portable else dict(CASES_BY_OP[name])
    with _engine.tune(**settings):
        if plan_args[0] == "convert":
            plan = _engine.describe_convert(*plan_args[1:-1])
            lanes = {shape["lanes_direct"] for shape in plan["shapes"]}
            plan["lanes_direct"] = lanes.pop() if len(lanes) == 1 else lanes
            simd_ok = plan["simd"] != portable
        else:
            plan = _engine.describe(*plan_args[:4], dst_array=plan_args[4])
            simd_ok = plan["simd128"] == (None if portable else "neon")
    got = {key: plan[key] for key in expected}
    if got != expected or not simd_ok:
        raise SystemExit(f"{name} ({mode}): plan {plan}, expected {expected}")
    with _engine.tune(**settings):
        for _ in range(calls if mode != "none" else 0):
            call()
    print("result bytes", plan_args[-1].nbytes)


CASES_BY_OP = {op: facts for op, facts in CASES.values()}


def count(root, plugin, op, tree, mode, calls):
    """Guest instructions of one qemu process running `op` with the build
    in ROOT/tree."""
    env = dict(os.environ, QEMU_CPU="max,pauth=off", PYTHONHASHSEED="0", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=f"{root}/{tree}:{root}/venv/lib/python3.11/site-packages")
    done = subprocess.run(
        ["qemu-aarch64", "-L", root, "-plugin", plugin, "-d", "plugin", f"{root}/usr/bin/python3.11",
         f"{root}/{tree}/speed_reports/arm64_instructions.py", "--target", op, mode, str(calls)],
        env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{op} {mode}: exit {done.returncode}\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    total = int(re.search(r"total insns: (\d+)", done.stdout + done.stderr).group(1))
    nbytes = int(re.search(r"result bytes (\d+)", done.stdout).group(1))
    return total, nbytes


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--target":
        target(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root")
    parser.add_argument("plugin")
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--cases", nargs="*", default=list(CASES))
    parser.add_argument("--neon-tree", default="fastblock",
                        help="the NEON build's folder in ROOT (default fastblock)")
    parser.add_argument("--portable-tree", default="fastblock-portable",
                        help="the -DFB_NEON=0 build's folder in ROOT (default fastblock-portable)")
    args = parser.parse_args()
    print(f"| case | kernel | NEON instr/byte | portable instr/byte | NEON / portable |")
    print("|---|---|---:|---:|---:|")
    for name in args.cases:
        op, facts = CASES[name]
        per_byte = {}
        for mode, tree in (("simd", args.neon_tree), ("portable", args.portable_tree)):
            base, nbytes = count(args.root, args.plugin, op, tree, "none", 0)
            total, _ = count(args.root, args.plugin, op, tree, "calls", args.calls)
            per_byte[mode] = (total - base) / args.calls / nbytes
        kernel = ", ".join(f"{k} {v}" for k, v in facts.items())
        print(f"| {name} | {kernel} | {per_byte['simd']:.3f} | {per_byte['portable']:.3f} "
              f"| {per_byte['simd'] / per_byte['portable']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
