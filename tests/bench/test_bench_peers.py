"""The peer comparison (``python -m speed_reports --peers``): each installed peer builds
every case on a tiny input and gives exactly fastblock's result, or says n/a.
Only the construction and the equality checks run here, not the timing."""
import numpy as np
import pytest

from speed_reports import peers as bp

# Tiny versions of the report's cases, plus a few that some peers cannot express.
TINY_CASES = [
    bp.PeerCase("depth_to_space", (2, 8, 3, 5), "float32", 2, "blocks_first"),
    bp.PeerCase("depth_to_space", (2, 8, 3, 5), "float32", 2, "depth_first"),
    bp.PeerCase("space_to_depth", (2, 3, 4, 6), "float32", 2, "blocks_first"),
    bp.PeerCase("space_to_depth", (2, 3, 4, 6), "float32", 2, "depth_first"),
    bp.PeerCase("space_to_depth", (3, 4, 6, 3), "uint8", 2, "blocks_first", "NHWC"),
    bp.PeerCase("depth_to_space", (3, 2, 3, 12), "uint8", 2, "blocks_first", "NHWC"),
    bp.PeerCase("depth_to_space", (3, 2, 3, 12), "uint8", 2, "depth_first", "NHWC"),
    bp.PeerCase("space_to_depth", (1, 2, 6, 3, 9), "float32", 3, "depth_first"),
    bp.PeerCase("tile", (7, 3), "uint8", repeats=(1, 5)),
    bp.PeerCase("tile", (4, 6), "float32", repeats=(2, 3)),
]

# The cases each peer has an operator for; the others must be reported as n/a.
SUPPORTS = {
    "onnxruntime": lambda c: c.op == "tile" or (
        c.layout == "NCHW" and len(c.shape) == 4
        and (c.op == "depth_to_space" or c.mode == "blocks_first")),
    "openvino": lambda c: c.op == "tile" or c.layout == "NCHW",
    "torch": lambda c: True,
    "tensorflow": lambda c: c.op == "tile" or (
        c.layout == "NHWC" and len(c.shape) == 4 and c.mode == "blocks_first"),
}


@pytest.fixture(scope="module", params=bp.PEERS, ids=[p.name for p in bp.PEERS])
def loaded_peer(request):
    """Each peer, loaded with 2 threads; skipped when it is not installed."""
    peer = request.param
    pytest.importorskip(peer.name)
    try:
        state, description = peer.load(2)
    except ImportError as exc:  # a package the peer needs besides itself (onnx for onnxruntime)
        pytest.skip(f"{peer.name} cannot be loaded: {exc}")
    assert description.startswith(peer.name)
    return peer, state


@pytest.mark.parametrize("case", TINY_CASES, ids=lambda c: bp.case_label(c, 0).split(" ->")[0])
def test_installed_peer_gives_fastblocks_result(loaded_peer, case):
    peer, state = loaded_peer
    x = bp.make_input(case)
    expected = bp.run_fastblock(case, x, num_threads=2)
    np.testing.assert_array_equal(expected, bp.run_numpy(case, x))
    runs, notes = bp.check_peer(peer, state, case, x, expected, threads=2)
    if SUPPORTS[peer.name](case):
        assert runs and not notes, notes
    else:
        assert not runs
        assert len(notes) == 1 and notes[0].startswith(f"{peer.name}: n/a: "), notes


def test_wrong_output_is_caught_and_not_timed():
    case = TINY_CASES[0]
    x = bp.make_input(case)
    expected = bp.run_fastblock(case, x)
    wrong = bp.PeerRun("swapped", False, lambda: bp.run_fastblock(case._replace(mode="depth_first"), x))
    broken = bp.PeerRun("raises", True, lambda: 1 / 0)
    peer = bp.Peer("fake", lambda threads: (None, "fake"), lambda *args: [wrong, broken])
    runs, notes = bp.check_peer(peer, None, case, x, expected, threads=1)
    assert runs == []
    assert notes[0].startswith("swapped: WRONG OUTPUT: ") and "elements differ" in notes[0]
    assert notes[1].startswith("raises: failed to run: ZeroDivisionError")
    assert bp.difference(expected.astype(np.float64), expected).startswith("dtype")


def test_peer_that_fails_to_load_or_build_is_skipped(monkeypatch):
    def no_such_module(threads):
        raise ImportError("No module named 'nope'")

    def broken_install(threads):
        raise OSError("libfoo.so: cannot open shared object file")

    def fails_to_build(state, case, x, out_shape, threads):
        raise RuntimeError("no kernel\nsecond line")

    monkeypatch.setattr(bp, "PEERS", [bp.Peer("nope", no_such_module, fails_to_build),
                                      bp.Peer("broken", broken_install, fails_to_build),
                                      bp.Peer("builds_not", lambda threads: (None, "builds_not 1.0"),
                                              fails_to_build)])
    loaded, lines = bp.load_peers(1)
    assert [peer.name for peer, _ in loaded] == ["builds_not"]
    assert lines[0] == "nope: not installed (No module named 'nope')"
    assert lines[1].startswith("broken: skipped, failed to load (OSError: ")
    case = TINY_CASES[-1]
    x = bp.make_input(case)
    runs, notes = bp.check_peer(loaded[0][0], None, case, x, np.tile(x, case.repeats), threads=1)
    assert runs == [] and notes == ["builds_not: failed to build: RuntimeError: no kernel"]


def test_report_runs_on_a_tiny_case(capsys, monkeypatch):
    # The report's own rows only: each real peer is checked above, under its
    # own test id (the sanitizer job leaves OpenVINO's out by that id).
    monkeypatch.setattr(bp, "PEERS", [])
    case = TINY_CASES[2]
    (result,) = bp.report(threads=1, cases=[case])
    assert {"fastblock out=", "fastblock new", "numpy reshape/transpose/copy", "copy"} <= set(result.seconds)
    printed = capsys.readouterr().out
    assert result.label in printed and "copy ceiling" in printed
