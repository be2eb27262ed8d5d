"""Coverage-guided fuzzing of the public API with atheris (libFuzzer).

Not a pytest module (pytest does not collect this file); run it by hand::

    pip install atheris
    python tests/stress/fuzz_atheris.py -max_total_time=300          # five minutes
    python tests/stress/fuzz_atheris.py -atheris_runs=100000 corpus/  # keep a corpus

It draws the same kinds of calls as ``tests/stress/test_fuzz.py`` (ranks 0-7, every
dtype, strided and negative-step views, overlapping outs, wrong and huge
arguments) from libFuzzer's bytes, and checks each with the same oracle
(``tests/stress/fuzz_oracle.py``): the reference result or the documented exception,
no stray writes, no half-written ``out``. Any failed check is reported as a
crash with the input that caused it, which replays with
``python tests/stress/fuzz_atheris.py CRASH_FILE``. Under the sanitizer build
(``ci/sanitize.sh`` builds one; run this file with the same LD_PRELOAD and
ASAN_OPTIONS) memory errors in the kernels are caught as well.
"""
import atexit
import os
import sys

import atheris

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]  # test_fuzz beside it, reference in tests/

with atheris.instrument_imports(include=["fastblock", "fuzz_oracle"]):
    import numpy as np

    import fastblock  # noqa: F401
    import fuzz_oracle
    from fuzz_oracle import Case, check, fill

from test_fuzz import (  # noqa: E402  (the shared value lists and builders)
    BAD_BLOCK_SIZES,
    BAD_FORMATS,
    BAD_MODES,
    BAD_REPEAT_ENTRIES,
    BAD_THREADS,
    DTYPES,
    VALID_BLOCK_SIZES,
    VALID_FORMATS,
    VALID_MODES,
    VALID_REPEAT_ENTRIES,
    VALID_THREADS,
    _build,
)


def pick(fdp, values):
    return values[fdp.ConsumeIntInRange(0, len(values) - 1)]


def pick_mostly(fdp, good, bad):
    return pick(fdp, bad) if fdp.ConsumeIntInRange(0, 3) == 0 else pick(fdp, good)


def layout(fdp, shape, allow_broadcast):
    rank = len(shape)
    perm = list(range(rank))
    for i in range(rank - 1, 0, -1):  # Fisher-Yates from the fuzzer's bytes
        j = fdp.ConsumeIntInRange(0, i)
        perm[i], perm[j] = perm[j], perm[i]
    steps = tuple(pick(fdp, [1, 2, -1, -2, 3]) for _ in range(rank))
    offsets = tuple(fdp.ConsumeIntInRange(0, 1) for _ in range(rank))
    bcast = tuple(allow_broadcast and n != 1 and fdp.ConsumeIntInRange(0, 7) == 0 for n in shape)
    return tuple(perm), steps, offsets, bcast


def make_case(fdp):
    rng = np.random.default_rng(fdp.ConsumeIntInRange(0, 2**32 - 1))
    op = pick(fdp, ["space_to_depth", "depth_to_space", "tile"])
    dtype = pick(fdp, DTYPES)
    rank = fdp.ConsumeIntInRange(0, 7)
    shape = [pick(fdp, [0, 1, 1, 2, 2, 3, 4, 6, 8]) for _ in range(rank)]
    while np.prod(shape) > 4096:
        shape[shape.index(max(shape))] = 1
    shape = tuple(shape)
    if op == "tile":
        kind = fdp.ConsumeIntInRange(0, 3)
        if kind == 0:
            repeats = pick_mostly(fdp, VALID_REPEAT_ENTRIES, BAD_REPEAT_ENTRIES)
        elif kind == 1:
            repeats = [pick_mostly(fdp, VALID_REPEAT_ENTRIES, BAD_REPEAT_ENTRIES)
                       for _ in range(fdp.ConsumeIntInRange(0, 6))]
        elif kind == 2:
            repeats = np.array([fdp.ConsumeIntInRange(0, 3)
                                for _ in range(fdp.ConsumeIntInRange(0, 5))],
                               dtype=pick(fdp, ["i1", "u2", "i8", "u8", "f4", "?"]))
        else:
            repeats = pick(fdp, [2.0, None, True, "12", b"\x02", [[1, 2]]])
        args = (repeats,)
    else:
        args = (pick_mostly(fdp, VALID_BLOCK_SIZES, BAD_BLOCK_SIZES),
                pick_mostly(fdp, VALID_MODES, BAD_MODES),
                pick_mostly(fdp, VALID_FORMATS, BAD_FORMATS))
    case = Case(op, None, args, num_threads=pick_mostly(fdp, VALID_THREADS, BAD_THREADS))
    x, buffer, _ = _build(shape, dtype, layout(fdp, shape, True), rng)
    case.x = x
    case.buffers.append(buffer)

    out_mode = fdp.ConsumeIntInRange(0, 5)
    result_shape = case.expect().result_shape
    if out_mode >= 3 or result_shape is None or np.prod(result_shape) > 4096:
        return case
    if out_mode == 0:  # a strided view of a larger buffer
        out, out_buffer, view_of = _build(result_shape, dtype,
                                          layout(fdp, result_shape, False), rng)
        case.out, case.out_buffer, case.out_view = out, out_buffer, view_of
        case.buffers.append(out_buffer)
    elif out_mode == 1 and x.size <= 4096 and not any(layout_step == 0 for layout_step in
                                                          x.strides):
        # x and out in one flat buffer: overlapping, interleaved or apart
        x_step, out_step = pick(fdp, [1, 2, -1, -2]), pick(fdp, [1, 2, -1, -2])
        x_off, out_off = fdp.ConsumeIntInRange(0, 3), fdp.ConsumeIntInRange(0, 2 * x.size + 2)
        case.share_one_buffer(result_shape, x_off, x_step, out_off, out_step, rng)
    else:  # the right shape, maybe read-only
        out_buffer = np.empty(result_shape, dtype=dtype)
        fill(out_buffer, rng)
        out_buffer.flags.writeable = bool(fdp.ConsumeIntInRange(0, 3))
        case.out, case.out_buffer, case.out_view = out_buffer, out_buffer, lambda b: b
        case.buffers.append(out_buffer)
    return case


_runs = [0]


def test_one_input(data):
    _runs[0] += 1
    if _runs[0] % 20000 == 0:  # (libFuzzer leaves without running atexit hooks)
        _report()
    fdp = atheris.FuzzedDataProvider(data)
    try:
        case = make_case(fdp)
    except (ValueError, MemoryError):
        return  # shapes NumPy cannot build: nothing to call
    check(case)


def _report():
    outcomes = {f"{op} {outcome}": n for (op, outcome), n in sorted(fuzz_oracle.COUNTS.items())}
    print(f"fuzz_atheris: {sum(outcomes.values())} calls checked, "
          f"{len(fuzz_oracle.ERROR_PATHS)} distinct error paths: {outcomes}", file=sys.stderr)


def main():
    atexit.register(_report)
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
