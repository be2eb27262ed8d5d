"""Random valid einops patterns, written the way users write them, and
their NumPy reference (what einops does on NumPy: reshape into the
elementary axes, transpose, broadcast the new axes, reshape, copy); the
stress harness's self-tests check it against einops itself.

The stress harness draws the axis lengths (around the engine's switch
points); this module draws the rest of the pattern from them: how the
input's axes group (decompositions), the result's order and groups
(compositions), ``...``, anonymous ``1`` / ``()``, which lengths are given
as keywords (at most one unknown a group), and for ``repeat`` where the
new axes go, named or as numbers, bare or inside groups.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

ELLIPSIS = "..."
INPUT_NAMES = "bchwdpqxyz"
NEW_NAMES = "rstuv"


@dataclass(frozen=True)
class Anonymous:
    """A number written in the pattern: ``1`` (no axis) or, on repeat's
    right side, a new axis of that length."""

    length: int
    serial: int

    def __str__(self) -> str:
        return str(self.length)


@dataclass
class Pattern:
    """A drawn pattern: its text, its groups (tuples of tokens, or
    ``ELLIPSIS``), every named axis's length, the names ``...`` stands for
    (its axes' lengths are in ``lengths`` too), the keyword lengths."""

    operation: str
    text: str
    left: list
    right: list
    lengths: dict
    ellipsis: tuple
    given: dict

    def _elementary(self, groups) -> list:
        """Each group as its axes (``...`` expanded, anonymous 1s dropped)."""
        expanded = []
        for group in groups:
            if group == ELLIPSIS:
                expanded += [(name,) for name in self.ellipsis]
                continue
            axes = []
            for token in group:
                if token == ELLIPSIS:
                    axes += self.ellipsis
                elif not (isinstance(token, Anonymous) and token.length == 1):
                    axes.append(token)
            expanded.append(tuple(axes))
        return expanded

    def _length(self, token) -> int:
        return token.length if isinstance(token, Anonymous) else self.lengths[token]

    def _shape(self, groups) -> tuple:
        return tuple(math.prod(self._length(t) for t in group) for group in self._elementary(groups))

    @property
    def input_shape(self) -> tuple:
        return self._shape(self.left)

    @property
    def result_shape(self) -> tuple:
        return self._shape(self.right)

    def reference(self, x: np.ndarray) -> np.ndarray:
        assert x.shape == self.input_shape, (x.shape, self.input_shape)
        left = [t for group in self._elementary(self.left) for t in group]
        right = [t for group in self._elementary(self.right) for t in group]
        y = x.reshape([self._length(t) for t in left])
        y = y.transpose([left.index(t) for t in right if t in left])
        y = y.reshape([self._length(t) if t in left else 1 for t in right])
        y = np.broadcast_to(y, [self._length(t) for t in right])
        # A copy, not np.ascontiguousarray: that makes a 0-d result 1-d.
        return y.reshape(self.result_shape).copy(order="C")

    def describe(self) -> str:
        given = "".join(f", {name}={length}" for name, length in self.given.items())
        lengths = " ".join(f"{name}={length}" for name, length in self.lengths.items())
        return f"fb.{self.operation}(x, {self.text!r}{given}) [{lengths}]"


def _group_text(rng, group) -> str:
    if group == ELLIPSIS:
        return ELLIPSIS
    if not group:
        return str(rng.choice(["1", "()"]))
    if len(group) == 1 and group[0] != ELLIPSIS and rng.random() < 0.7:
        return str(group[0])
    return "(" + " ".join(map(str, group)) + ")"


def _groups(rng, tokens: list, ellipsis_inside: bool, serials) -> list:
    """``tokens`` in order, cut into groups of 1 to 3; ``...`` alone unless
    ``ellipsis_inside``; anonymous 1s (``1`` or ``()`` alone, or ``1``
    inside a group) now and then."""
    groups, group = [], []
    limit = int(rng.integers(1, 4))
    for token in tokens:
        if token == ELLIPSIS and not ellipsis_inside:
            if group:
                groups.append(tuple(group))
            groups.append(ELLIPSIS)
            group, limit = [], int(rng.integers(1, 4))
            continue
        group.append(token)
        if rng.random() < 0.05:
            group.insert(int(rng.integers(0, len(group) + 1)), Anonymous(1, next(serials)))
        if len(group) >= limit:
            groups.append(tuple(group))
            group, limit = [], int(rng.integers(1, 4))
    if group:
        groups.append(tuple(group))
    while rng.random() < 0.15:
        groups.insert(int(rng.integers(0, len(groups) + 1)), ())
    return groups


def draw_pattern(rng, operation: str, input_lengths: list, new_lengths: list) -> Pattern:
    """A pattern on an input whose elementary axes, in memory order, have
    ``input_lengths``; ``repeat`` adds axes of ``new_lengths``."""
    serials = iter(range(1 << 30))
    n = len(input_lengths)
    names = list(INPUT_NAMES[:n])
    lengths = dict(zip(names, input_lengths))
    # ``...`` stands for a run of the input's axes, each a group of its own.
    ellipsis = ()
    if n and rng.random() < 0.25:
        size = int(rng.integers(0, min(3, n) + 1))
        start = int(rng.integers(0, n - size + 1))
        ellipsis = tuple(names[start:start + size])
        names = names[:start] + [ELLIPSIS] + names[start + size:]
    left = _groups(rng, names, False, serials)

    # The input's order kept (as in "b c h w -> b c (h 2) (w 2)") or any.
    order = range(len(names)) if rng.random() < 0.3 else rng.permutation(len(names))
    right_tokens = [names[i] for i in order]
    given = {}
    for k, length in enumerate(new_lengths):
        if length > 1 and rng.random() < 0.4:
            token = Anonymous(length, next(serials))
        else:
            token = NEW_NAMES[k]
            lengths[token] = given[token] = length
        # Innermost (the engine's short repeats: "h w -> h (w 2)") or anywhere.
        at = len(right_tokens) if rng.random() < 0.25 else int(rng.integers(0, len(right_tokens) + 1))
        right_tokens.insert(at, token)
    right = _groups(rng, right_tokens, True, serials)

    # Keywords: in a group of several axes all but at most one (never one
    # whose partners multiply to 0: that cannot be inferred).
    for group in left:
        if group == ELLIPSIS:
            continue
        axes = [t for t in group if not isinstance(t, Anonymous)]
        unknown = None
        if axes and (len(axes) > 1 or rng.random() < 0.7):
            candidate = axes[int(rng.integers(0, len(axes)))]
            if math.prod(lengths[a] for a in axes if a != candidate):
                unknown = candidate
        for axis in axes:
            if axis != unknown and (len(axes) > 1 or unknown is None):
                given[axis] = lengths[axis]
    for axis in ellipsis:
        lengths[f"...{axis}"] = lengths.pop(axis)
    ellipsis = tuple(f"...{axis}" for axis in ellipsis)
    text = " ".join(_group_text(rng, g) for g in left) + " -> " + " ".join(_group_text(rng, g) for g in right)
    return Pattern(operation, text.strip(), left, right, lengths, ellipsis, dict(sorted(given.items())))
