"""Property tests (hypothesis): random valid einops patterns and shapes,
every dtype family, strided inputs and out=, with einops as the oracle."""
import numpy as np
import pytest

import fastblock as fb

hypothesis = pytest.importorskip("hypothesis")
einops = pytest.importorskip("einops")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True)

STRUCTURED = np.dtype([("a", "u1"), ("b", "<f8"), ("c", "S3")])
DTYPES = [np.dtype(bool), np.dtype(np.int8), np.dtype(np.int64), np.dtype(np.uint16),
          np.dtype(np.uint32), np.dtype(np.float16), np.dtype(np.float32), np.dtype(">f8"),
          np.dtype(np.complex128), np.dtype("M8[s]"), np.dtype("S5"), np.dtype("U3"),
          STRUCTURED, np.dtype(object), np.dtypes.StringDType()]
LAYOUTS = ["c", "reversed", "fortran", "step"]


def _values(dtype: np.dtype, count: int) -> np.ndarray:
    """``count`` distinct-ish items of ``dtype``, 1-D."""
    numbers = np.arange(count)
    if dtype.kind in "biufcM":
        return (numbers % 2 if dtype.kind == "b" else numbers).astype(dtype)
    if dtype.names:
        items = np.zeros(count, dtype)
        items["a"], items["b"] = numbers % 256, numbers / 2
        items["c"] = [b"x%d" % (n % 99) for n in numbers]
        return items
    if dtype == object:
        return np.array([str(n) if n % 2 else n for n in numbers] + [None], dtype=object)[:count]
    return np.array([str(n % 1000) for n in numbers], dtype=dtype)


def _laid_out(base: np.ndarray, layout: str) -> np.ndarray:
    """``base``'s items in another memory layout."""
    if base.ndim == 0 or layout == "c":
        return base
    if layout == "reversed":
        return np.ascontiguousarray(base[::-1])[::-1]
    if layout == "fortran":
        return np.asfortranarray(base)
    return np.repeat(base, 2, axis=-1)[..., ::2]


@st.composite
def _side(draw, tokens, ellipsis, allow_ellipsis_in_group):
    """One side of a pattern: ``tokens`` in groups (bare or parenthesised),
    with the ellipsis and anonymous 1 / () groups placed at random."""
    items = list(tokens)
    if ellipsis:
        items.insert(draw(st.integers(0, len(items))), "...")
    groups, i = [], 0
    while i < len(items):
        size = draw(st.integers(1, 3))
        group = items[i:i + size]
        i += size
        if "..." in group and not allow_ellipsis_in_group:
            at = group.index("...")
            groups += [f"({' '.join(group[:at])})"] if at else []
            groups.append("...")
            rest = group[at + 1:]
            groups += [f"({' '.join(rest)})"] if rest else []
        elif len(group) == 1 and draw(st.booleans()):
            groups.append(group[0])
        else:
            groups.append(f"({' '.join(group)})")
    for _ in range(draw(st.integers(0, 1))):
        groups.insert(draw(st.integers(0, len(groups))), draw(st.sampled_from(["1", "()"])))
    return " ".join(groups)


@st.composite
def cases(draw, operation):
    """(input array, pattern, lengths, out or None, expected)."""
    n_axes = draw(st.integers(0, 5))
    names = [f"a{i}" for i in range(n_axes)]
    lengths = {name: draw(st.integers(1, 4)) for name in names}
    ellipsis = draw(st.booleans())
    ellipsis_shape = tuple(draw(st.lists(st.integers(1, 3), max_size=2))) if ellipsis else ()
    left_order = draw(st.permutations(names))
    left = draw(_side(left_order, ellipsis, False))
    right_tokens = list(draw(st.permutations(names)))
    given = {}
    if operation == "repeat":
        for k in range(draw(st.integers(0, 2))):
            if draw(st.booleans()):
                name = f"r{k}"
                given[name] = draw(st.integers(1, 3))
            else:
                name = str(draw(st.integers(2, 3)))
            right_tokens.insert(draw(st.integers(0, len(right_tokens))), name)
    right = draw(_side(right_tokens, ellipsis, True))
    pattern = f"{left} -> {right}"

    # The input's shape from the left side; at most one unknown length a group.
    shape = []
    for group in _groups(left):
        if group == ["..."]:
            shape += ellipsis_shape
            continue
        group = [name for name in group if name != "1"]
        unknown = draw(st.sampled_from(group)) if group and draw(st.booleans()) else None
        for name in group:
            if name != unknown and (len(group) > 1 or draw(st.booleans())):
                given[name] = lengths[name]
        shape.append(int(np.prod([lengths[name] for name in group])))
    dtype = draw(st.sampled_from(DTYPES))
    base = _values(dtype, int(np.prod(shape))).reshape(shape)
    x = _laid_out(base, draw(st.sampled_from(LAYOUTS)))
    expected = getattr(einops, operation)(x, pattern, **given)
    out = None
    choice = draw(st.sampled_from(["none", "c", "strided"]))
    if choice == "c":
        out = np.empty(expected.shape, dtype)
    elif choice == "strided" and expected.ndim:
        out = np.empty(expected.shape[:-1] + (2 * expected.shape[-1],), dtype)[..., ::2]
    return x, pattern, given, out, expected


def _groups(side: str) -> list:
    """The names of each group of one side ("1" for an anonymous 1)."""
    groups, current = [], None
    for token in side.replace("(", " ( ").replace(")", " ) ").split():
        if token == "(":
            current = []
        elif token == ")":
            groups.append(current)
            current = None
        elif current is None:
            groups.append([token])
        else:
            current.append(token)
    return groups


def _check(operation, case):
    x, pattern, given, out, expected = case
    result = getattr(fb, operation)(x, pattern, out=out, **given)
    if out is not None:
        assert result is out
    else:
        assert result.flags.c_contiguous
    assert result.dtype == expected.dtype
    assert result.shape == expected.shape
    assert result.tolist() == expected.tolist()


@SETTINGS
@given(case=cases("rearrange"))
def test_rearrange_matches_einops(case):
    _check("rearrange", case)


@SETTINGS
@given(case=cases("repeat"))
def test_repeat_matches_einops(case):
    _check("repeat", case)
