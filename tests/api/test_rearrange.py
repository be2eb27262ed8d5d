"""fb.rearrange / fb.repeat against einops itself (its own pattern lists and
the logic of its NumPy tests), against fastblock's operators written as
patterns, and the errors: each rejected by fastblock and by einops."""
import os

import numpy as np
import pytest

import fastblock as fb

os.environ.setdefault("EINOPS_TEST_BACKENDS", "numpy")
einops = pytest.importorskip("einops")
einops_tests = pytest.importorskip("einops.tests.test_ops")


def assert_same(result, expected):
    """``result`` is a C-contiguous ndarray with ``expected``'s dtype, shape
    and items (bytes for plain data, items where they hold references)."""
    assert isinstance(result, np.ndarray)
    assert result.dtype == expected.dtype
    assert result.shape == expected.shape
    assert result.flags.c_contiguous
    if expected.dtype.hasobject:
        assert result.tolist() == expected.tolist()
    else:
        assert result.tobytes() == np.ascontiguousarray(expected).tobytes()


# ---------------------------------------------------------------------------
# einops' own pattern lists (einops.tests.test_ops), einops as the oracle

X5 = np.arange(2 * 3 * 4 * 5 * 6).reshape(2, 3, 4, 5, 6)
X3 = np.arange(2 * 3 * 5).reshape(2, 3, 5)
X4 = np.arange(1 * 2 * 4 * 6).reshape(1, 2, 4, 6)
REARRANGE_PATTERNS = [*einops_tests.identity_patterns,
                      *(p for pair in einops_tests.equivalent_rearrange_patterns for p in pair)]


@pytest.mark.parametrize("pattern", REARRANGE_PATTERNS)
def test_einops_rearrange_patterns(pattern):
    assert_same(fb.rearrange(X5, pattern), einops.rearrange(X5, pattern))


def test_ellipsis_ops():
    # einops' test_ellipsis_ops_numpy
    for pattern in einops_tests.identity_patterns:
        assert_same(fb.rearrange(X5, pattern), X5)
    for pattern1, pattern2 in einops_tests.equivalent_rearrange_patterns:
        assert_same(fb.rearrange(X5, pattern1), fb.rearrange(X5, pattern2))


def test_collapsed_ellipsis_errors_out():
    x = np.zeros([1, 1, 1, 1, 1])
    assert fb.rearrange(x, "a b c d ... ->  a b c ... d").shape == (1, 1, 1, 1, 1)
    with pytest.raises(ValueError, match="parentheses"):
        fb.rearrange(x, "a b c d (...) ->  a b c ... d")
    assert fb.rearrange(x, "... ->  (...)").shape == (1,)
    with pytest.raises(ValueError, match="parentheses"):
        fb.rearrange(x, "(...) -> (...)")


def test_rearrange_consistency():
    # einops' test_rearrange_consistency_numpy
    shape = [1, 2, 3, 5, 7, 11]
    x = np.arange(np.prod(shape)).reshape(shape)
    for pattern in ["a b c d e f -> a b c d e f", "b a c d e f -> a b d e f c",
                    "a b c d e f -> f e d c b a", "a b c d e f -> (f e) d (c b a)",
                    "a b c d e f -> (f e d c b a)"]:
        result = fb.rearrange(x, pattern)
        assert len(np.setdiff1d(x, result)) == 0
        assert_same(result, einops.rearrange(x, pattern))
    assert np.array_equal(x.flatten(), fb.rearrange(x, "a b c d e f -> a (b) (c d e) f").flatten())
    assert_same(fb.rearrange(x, "a aa aa1 a1a1 aaaa a11 -> a aa aa1 a1a1 aaaa a11"), x)
    assert_same(fb.rearrange(x, "a b c d e f -> f e d c b a"),
                fb.rearrange(x, "f e d c b a -> a b c d e f"))
    grouped = fb.rearrange(x, "a b c d e f -> (f d) c (e b) a")
    assert_same(fb.rearrange(grouped, "(f d) c (e b) a -> a b c d e f", b=2, d=5), x)
    sizes = dict(zip("abcdef", shape))
    grouped = fb.rearrange(x, "a b c d e f -> (f d) c (e b) a", **sizes)
    assert_same(fb.rearrange(grouped, "(f d) c (e b) a -> a b c d e f", **sizes), x)
    x2 = np.arange(2 * 3 * 4).reshape([2, 3, 4])
    result = fb.rearrange(x2, "a b c -> b c a")
    assert x2[1, 2, 3] == result[2, 3, 1] and x2[0, 1, 2] == result[1, 2, 0]


@pytest.mark.parametrize("n_axes", range(1, 10))
def test_rearrange_permutations(n_axes):
    # einops' test_rearrange_permutations_numpy
    rng = np.random.default_rng(n_axes)
    x = np.arange(2 ** n_axes).reshape([2] * n_axes)
    permutation = rng.permutation(n_axes)
    left = " ".join(f"i{axis}" for axis in range(n_axes))
    right = " ".join(f"i{axis}" for axis in permutation)
    result = fb.rearrange(x, f"{left} -> {right}")
    for pick in rng.integers(0, 2, [10, n_axes]):
        assert x[tuple(pick)] == result[tuple(pick[permutation])]
    left = " ".join(f"i{axis}" for axis in range(n_axes)[::-1])
    right = " ".join(f"i{axis}" for axis in permutation[::-1])
    result = fb.rearrange(x, f"{left} -> {right}")
    expected = np.zeros_like(x)
    for original_axis, result_axis in enumerate(permutation):
        expected |= ((x >> original_axis) & 1) << result_axis
    assert_same(result, expected)


def _check_reversion(x, pattern, **sizes):
    """einops' check_reversion: min and max reductions undo the repeat."""
    left, right = pattern.split("->")
    repeated = fb.repeat(x, pattern, **sizes)
    assert_same(repeated, einops.repeat(x, pattern, **sizes))
    for reduction in ("min", "max"):
        assert np.array_equal(einops.reduce(repeated, right + "->" + left, reduction, **sizes), x)


@pytest.mark.parametrize("pattern,sizes", einops_tests.repeat_test_cases)
def test_repeat(pattern, sizes):
    # einops' test_repeat_numpy
    assert_same(fb.repeat(X3, "a b c -> copy a b c ", copy=1), X3[None])
    _check_reversion(X3, pattern, **sizes)


@pytest.mark.parametrize("pattern,sizes", einops_tests.test_cases_repeat_anonymous)
def test_anonymous_axes(pattern, sizes):
    _check_reversion(X4, pattern, **sizes)


def test_list_inputs():
    assert_same(fb.rearrange(list(X5), "... -> (...)"), fb.rearrange(X5, "... -> (...)"))
    assert_same(fb.repeat(list(X5), "...  -> b (...)", b=3),
                einops.repeat(X5, "...  -> b (...)", b=3))


# ---------------------------------------------------------------------------
# fastblock's operators as patterns

@pytest.mark.parametrize("bs", [1, 2, 3])
def test_block_operators_as_patterns(bs):
    x = np.random.default_rng(bs).integers(0, 1000, (2, 3 * bs * bs, 4 * bs, 5 * bs))
    s2d = {"blocks_first": "b c (h h2) (w w2) -> b (h2 w2 c) h w",
           "depth_first": "b c (h h2) (w w2) -> b (c h2 w2) h w"}
    d2s = {"blocks_first": "b (h2 w2 c) h w -> b c (h h2) (w w2)",
           "depth_first": "b (c h2 w2) h w -> b c (h h2) (w w2)"}
    for mode in ("blocks_first", "depth_first"):
        assert_same(fb.rearrange(x, s2d[mode], h2=bs, w2=bs), fb.space_to_depth(x, bs, mode))
        assert_same(fb.rearrange(x, d2s[mode], h2=bs, w2=bs), fb.depth_to_space(x, bs, mode))
    assert_same(fb.rearrange(x, "b (c h2 w2) h w -> b c (h h2) (w w2)", h2=bs, w2=bs),
                fb.pixel_shuffle(x, bs))
    assert_same(fb.rearrange(x, "b c (h h2) (w w2) -> b (c h2 w2) h w", h2=bs, w2=bs),
                fb.pixel_unshuffle(x, bs))


def test_transpose_and_tile_as_patterns():
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    assert_same(fb.rearrange(x, "n c h w -> n h w c"), fb.transpose(x, (0, 2, 3, 1)))
    assert_same(fb.rearrange(x, "n h w c -> n c h w"), fb.transpose(x, (0, 3, 1, 2)))
    y = x[0, 0]
    assert_same(fb.repeat(y, "h w -> (r1 h) (r2 w)", r1=3, r2=2), fb.tile(y, (3, 2)))
    assert_same(fb.repeat(x, "... -> (2 ...)"), einops.repeat(x, "... -> (2 ...)"))


# ---------------------------------------------------------------------------
# Layouts, out=, threads, sizes that reach the engine's other paths

STRIDED = {
    "reversed": lambda a: a[::-1, :, ::-1],
    "fortran": np.asfortranarray,
    "sliced": lambda a: np.pad(a, ((0, 0), (1, 2), (0, 3)))[:, 1:-2, :-3],
    "step": lambda a: np.repeat(a, 2, axis=2)[:, :, ::2],
}
CASES = [("rearrange", "a (b b2) c -> (c b2) a b", dict(b2=2)),
         ("rearrange", "a b c -> c (a b)", {}),
         ("repeat", "a b c -> (c r) a b 2", dict(r=3)),
         ("repeat", "a ... -> ... r a", dict(r=2))]


def _both(operation, x, pattern, sizes, **keywords):
    return (getattr(fb, operation)(x, pattern, **sizes, **keywords),
            getattr(einops, operation)(x, pattern, **sizes))


@pytest.mark.parametrize("layout", STRIDED)
@pytest.mark.parametrize("operation,pattern,sizes", CASES)
def test_strided_inputs_read_in_place(layout, operation, pattern, sizes):
    x = STRIDED[layout](np.arange(3 * 4 * 5, dtype=np.int16).reshape(3, 4, 5))
    assert_same(*_both(operation, x, pattern, sizes))


@pytest.mark.parametrize("strided_out", [False, True])
@pytest.mark.parametrize("operation,pattern,sizes", CASES)
def test_out(strided_out, operation, pattern, sizes):
    x = np.arange(3 * 4 * 5, dtype=np.float64).reshape(3, 4, 5)
    expected = getattr(einops, operation)(x, pattern, **sizes)
    out = np.full(expected.shape, -1.0)
    if strided_out:
        out = np.full(expected.shape[:-1] + (2 * expected.shape[-1],), -1.0)[..., ::-2]
    assert getattr(fb, operation)(x, pattern, out=out, **sizes) is out
    assert np.array_equal(out, expected)
    with pytest.raises(ValueError, match="out must have shape"):
        getattr(fb, operation)(x, pattern, out=np.empty(expected.size), **sizes)
    with pytest.raises(TypeError, match="dtype"):
        getattr(fb, operation)(x, pattern, out=np.empty(expected.shape, np.float32), **sizes)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("operation,pattern,shape,sizes", [
    ("rearrange", "b c (h p1) (w p2) -> b (h w) (p1 p2 c)", (2, 3, 512, 512), dict(p1=16, p2=16)),
    ("rearrange", "b c (h h2) (w w2) -> b (h2 w2 c) h w", (4, 8, 128, 128), dict(h2=2, w2=2)),
    ("rearrange", "b c h w -> b h w c", (2, 64, 96, 96), {}),
    ("repeat", "h w -> (r1 h) (w r2)", (512, 700), dict(r1=3, r2=2)),
])
def test_megabyte_sizes(threads, operation, pattern, shape, sizes):
    x = np.random.default_rng(0).integers(0, 255, shape, dtype=np.uint8)
    assert_same(*_both(operation, x, pattern, sizes, num_threads=threads))


def test_other_libraries_arrays_come_back_as_theirs():
    torch = pytest.importorskip("torch")
    x = torch.arange(24).reshape(2, 3, 4)
    result = fb.rearrange(x, "a b (c c2) -> (c2 a) b c", c2=2)
    assert isinstance(result, torch.Tensor)
    assert torch.equal(result, einops.rearrange(x, "a b (c c2) -> (c2 a) b c", c2=2))
    out = torch.empty(2, 3, 4, dtype=torch.int64)
    assert fb.repeat(x[0], "b c -> r b c", r=2, out=out) is out
    assert torch.equal(out, einops.repeat(x[0], "b c -> r b c", r=2))


@pytest.mark.parametrize("operation,pattern,shape,sizes", [
    ("rearrange", "a (b c) -> c a b", (0, 6), dict(c=3)),
    ("rearrange", "a (b c) -> c a b", (2, 0), dict(c=3)),
    ("repeat", "a b -> a r b", (2, 3), dict(r=0)),
    ("repeat", "a b -> a r b", (0, 3), dict(r=4)),
    ("rearrange", " -> ", (), {}),
    ("repeat", " -> r 1", (), dict(r=3)),
])
def test_empty_and_zero_dimensional(operation, pattern, shape, sizes):
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    assert_same(*_both(operation, x, pattern, sizes))


# ---------------------------------------------------------------------------
# Errors: each rejected by fastblock (a ValueError naming the pattern) and
# by einops, so that the list stays honest.

X234 = np.zeros((2, 3, 4))
ERRORS = [
    ("rearrange", "a b c", {}),                        # no arrow
    ("rearrange", "a b c -> a -> b c", {}),             # two arrows
    ("rearrange", "a b c -> a b d", {}),                # name only on one side
    ("rearrange", "a b c -> a b", {}),
    ("rearrange", "a a c -> a c", {}),                  # duplicate on the left
    ("rearrange", "a b c -> a b b c", {}),              # duplicate on the right
    ("rearrange", "a b _c -> a b _c", {}),              # leading underscore
    ("rearrange", "a b c_ -> a b c_", {}),              # trailing underscore
    ("rearrange", "a b 1c -> a b 1c", {}),              # not an identifier
    ("rearrange", "a b c- -> a b c", {}),               # unknown character
    ("rearrange", "a b\tc -> a b c", {}),              # only spaces separate axes
    ("rearrange", "a b...c -> a b ...", {}),            # an ellipsis inside a name
    ("rearrange", "a b c -> a (b (c))", {}),            # nested parentheses
    ("rearrange", "a b c -> a (b c", {}),               # unbalanced
    ("rearrange", "a b c -> a b c)", {}),
    ("rearrange", "a b c -> a b c 2", {}),              # anonymous axis in rearrange
    ("rearrange", "a b (c 2) -> a b c", {}),
    ("rearrange", "a b 0 -> a b", {}),                  # anonymous length 0
    ("rearrange", "a b c -> a b c ...", {}),            # ellipsis only on the right
    ("rearrange", "a ... -> a", {}),                    # ellipsis only on the left
    ("rearrange", "a (b ...) -> a b ...", {}),          # ellipsis in parentheses on the left
    ("rearrange", "a .. -> a ..", {}),                  # dots not an ellipsis
    ("rearrange", "a ... ... -> a ...", {}),            # two ellipses
    ("rearrange", "a b -> b a", {}),                    # wrong rank
    ("rearrange", "a b c d ... -> a b c d ...", {}),   # too few axes for the named ones
    ("rearrange", "a b (c c2) -> a b c c2", {}),        # two unknowns in a group
    ("rearrange", "a b (c c2) -> a b c c2", dict(c2=3)),   # indivisible
    ("rearrange", "a b c -> a b c", dict(c=5)),         # mismatched length
    ("rearrange", "a b (c c2) -> a b c c2", dict(c=2, c2=3)),
    ("rearrange", "a b c -> a b c", dict(d=2)),         # length never used
    ("rearrange", "a b c -> a b c", dict(_d=2)),        # invalid length name
    ("rearrange", "a b (c c2) -> a b c c2", dict(c2=0)),   # unknown next to a length 0
    ("rearrange", "a b 1 -> a b", {}),                  # anonymous 1 on a length-4 axis
    ("rearrange", "a b () -> a b", {}),
    ("repeat", "a b c -> a b", {}),                     # input axis dropped
    ("repeat", "a b c -> a b c r", {}),                 # new axis without length
    ("repeat", "a b c 2 -> a b c 2", {}),               # anonymous axis on the left
    ("repeat", "a b c -> a b c ...", {}),
    ("repeat", "a ... -> a", {}),
    ("repeat", "a b c -> a b c r", dict(r=2, s=3)),
    ("repeat", "a b (c c2) -> a b c c2 r", dict(r=2)),
]


@pytest.mark.parametrize("operation,pattern,sizes", ERRORS)
def test_errors(operation, pattern, sizes):
    with pytest.raises(ValueError, match="fastblock") as raised:
        getattr(fb, operation)(X234, pattern, **sizes)
    assert isinstance(raised.value, fb.PatternError)
    assert repr(pattern) in str(raised.value)
    with pytest.raises(Exception):
        getattr(einops, operation)(X234, pattern, **sizes)


def test_error_names_the_axis():
    with pytest.raises(ValueError, match="'h2'.*give h2="):
        fb.rearrange(np.zeros((2, 8, 8)), "b (h h2) w -> b h w h2")
    with pytest.raises(ValueError, match="new axis 'r' has no length: give r="):
        fb.repeat(np.zeros(3), "w -> r w")


def test_argument_types():
    with pytest.raises(TypeError, match="pattern"):
        fb.rearrange(X234, None)
    with pytest.raises(TypeError, match="length c2"):
        fb.rearrange(X234, "a b (c c2) -> a b c c2", c2=2.0)
    with pytest.raises(TypeError, match="length c2"):
        fb.rearrange(X234, "a b (c c2) -> a b c c2", c2=[2])
    assert fb.rearrange(X234, "a b (c c2) -> a b c c2", c2=np.int8(2)).shape == (2, 3, 2, 2)


def test_huge_repeat_refused():
    with pytest.raises(ValueError, match="too large"):
        fb.repeat(np.zeros(4), "w -> r s w", r=2 ** 40, s=2 ** 40)
