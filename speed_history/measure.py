"""The regression check's figures, measured in this process against the
fastblock that ``import fastblock`` finds (the check sets PYTHONPATH to
one build, then the other). Run by path, not imported, so that a build's
tree on the path cannot bring in its own copy of this file:

    python speed_history/measure.py times             # JSON {figure: ratio}
    python speed_history/measure.py count CASE CALLS  # CALLS calls of a CASE (under callgrind)
    python speed_history/measure.py count none 0      # the set-up alone: the count's baseline

Every time figure is a ratio measured in one process, its two sides
interleaved (fastblock/_timing.py of this tree): the call over a
one-thread ``np.copyto`` of the result's bytes, or the default thread
and, not a time, 1 over the threads a default SpaceToDepth asks for
(on a shared machine the wall-time gain of a second thread comes and goes
with the other processes' load). Machine noise hits both sides of a ratio
alike.
"""
import contextlib
import importlib.util
import json
import pathlib
import sys
import time

import numpy as np

import fastblock as fb

def load_timing():
    """This tree's fastblock/_timing.py (NumPy only), whichever build runs."""
    path = pathlib.Path(__file__).resolve().parents[1] / "fastblock" / "_timing.py"
    spec = importlib.util.spec_from_file_location("speed_history_timing", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def calls(batch: int, channels: int, side: int):
    """name -> (call, result bytes): SpaceToDepth bs 2 and NCHW -> NHWC of a
    float32 batch x channels x 128 x 128 (streamed stores past 8 MiB), and
    the uint8 pixel split side x side x 3 -> 3 x side x side (SIMD lanes)."""
    x = np.ones((batch, channels, 128, 128), np.float32)
    s2d = np.empty((batch, channels * 4, 64, 64), np.float32)
    nhwc = np.empty((batch, 128, 128, channels), np.float32)
    hwc = np.ones((side, side, 3), np.uint8)
    chw = np.empty((3, side, side), np.uint8)
    return {
        "s2d": (lambda: fb.space_to_depth(x, 2, out=s2d), s2d.nbytes),
        "s2d 1 thread": (lambda: fb.space_to_depth(x, 2, out=s2d, num_threads=1), s2d.nbytes),
        "nhwc": (lambda: fb.transpose(x, (0, 2, 3, 1), out=nhwc), nhwc.nbytes),
        "pixels 1 thread": (lambda: fb.transpose(hwc, (2, 0, 1), out=chw, num_threads=1), chw.nbytes),
    }


def times(rounds: int = 7) -> dict:
    """Each case's time over a one-thread copy of its result's bytes (64 MiB
    float32 results, 12 MiB of pixels), and the team SpaceToDepth asks for."""
    timing = load_timing()
    time.sleep(0.2)  # NumPy's OpenBLAS threads spin for ~0.1 s after import
    table = calls(16, 64, 2048)
    figures = {}
    for name, (call, nbytes) in table.items():
        medians = timing.interleaved_medians({"call": call, "copy": timing.copy_ceiling(nbytes)},
                                             rounds, 2e-3)
        figures[f"{name} / copy"] = medians["call"] / medians["copy"]
    figures["s2d 1 / threads asked"] = team_share(table["s2d"][0])
    return figures


def team_share(call) -> float:
    """1 over the threads ``call`` asks for (0.5 for a team of two, 1 with no
    team), read from the engine's thread policy with its adaptive teams off:
    a busy machine shrinks teams and hides a second thread's gain from wall
    times, but not the team a call asks for. 1 where the build has no
    policy to ask."""
    engine = fb._engine
    if not hasattr(engine, "team_policy"):
        return 1.0
    settings = {s.name for s in getattr(engine, "SETTINGS", ())}
    fixed = engine.tune(adaptive_teams=False) if "adaptive_teams" in settings else contextlib.nullcontext()
    with fixed:
        runs = engine.team_policy()["runs"]
        call()
        state = engine.team_policy()
    return 1.0 / state["last_team"] if state["runs"] > runs and state["last_team"] > 1 else 1.0


def count(case: str, repeat: int) -> None:
    """Set up every case (1 MiB of float32, 768 KiB of pixels), call each
    once, then ``case`` ``repeat`` times: the instructions of two runs
    differ by the repeated calls only."""
    table = calls(1, 16, 512)
    for call, _ in table.values():
        call()
    if case != "none":
        call = table[case][0]
        for _ in range(repeat):
            call()


if __name__ == "__main__":
    if sys.argv[1] == "times":
        print(json.dumps(times()))
    else:
        count(sys.argv[2], int(sys.argv[3]))
