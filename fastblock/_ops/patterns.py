"""einops' ``rearrange`` and ``repeat`` on the copy engine.

A pattern such as ``"b c (h h2) (w w2) -> b (h2 w2 c) h w"`` names the
elementary axes of the input (each input axis is a group of them, outer
first) and orders and groups them for the result. Splitting a strided axis
into its elementary axes is a view: the inner part keeps the axis's byte
step, the outer part steps by that times the inner length. So a pattern is
one strided copy, a single ``_engine.copy`` call (what a
:class:`~fastblock._call.strided_copy.StridedCopy` runs, called directly to spare a
tiny call the StridedCopy object): the result's elementary axes in order, the
source's byte steps along them, and the destination's steps split the
same way. A ``repeat`` axis
that the input does not have is read with step 0, as Tile reads its
repeats. Nothing is reshaped, transposed or copied through NumPy first.

Two caches keep the general path's call cheap: the parsed pattern (checked
once per pattern string and operation) and the per-shape recipe (elementary
lengths, extents, result shape) keyed on the pattern, operation, input
shape and the given lengths. A call that repeats one before (the same
pattern, lengths and input geometry) is run by the fast path
(``fastpath``) from its own cache.
"""
from __future__ import annotations

import functools
from typing import Optional

import numpy as np
from numpy.typing import ArrayLike

from .. import _engine
from .._call.fastpath import operate
from .._call.operation import Operator
from .._call.strided_copy import Prepared, StridedCopy
from .._call.validate import check_integer, check_shape_fits
from .docs import fill_doc

_ELLIPSIS = "..."
# Per-shape recipes kept; einops keeps 1024 too.
_RECIPES_KEPT = 1024


class PatternError(ValueError):
    """A malformed einops pattern, or axis lengths that do not fit it."""


def _fail(operation: str, pattern: str, detail: str):
    return PatternError(f"fastblock.{operation}({pattern!r}): {detail}")


# --------------------------------------------------------------------------
# Parsing: one side of the arrow
# --------------------------------------------------------------------------

def _axis_name_problem(name: str) -> Optional[str]:
    """Why ``name`` is not an axis name (einops' rule), or None."""
    if not name.isidentifier():
        return "is not a Python identifier"
    if name[0] == "_" or name[-1] == "_":
        return "starts or ends with '_'"
    return None


def _parse_side(side: str, fail) -> tuple:
    """The groups of one side, outer to inner: a bare ``...`` is the string
    ``_ELLIPSIS``; every other group is a tuple of axis tokens (names,
    ``_ELLIPSIS`` inside parentheses, ints for anonymous lengths > 1).
    A bare ``1`` or ``()`` is the empty group; a ``1`` inside parentheses
    is dropped."""
    if "." in side:
        if side.count("...") != 1 or side.count(".") != 3:
            raise fail(f"{side.strip()!r} may hold dots only as one '...'")
        # One character, as einops does: "a...b" stays one (bad) token.
        side = side.replace("...", "\u2026")
    groups = []
    group = None
    seen = set()
    # Only spaces separate axes (einops refuses tabs and newlines).
    for token in side.replace("(", " ( ").replace(")", " ) ").split(" "):
        if not token:
            continue
        if token == "(":
            if group is not None:
                raise fail("parentheses do not nest (one level of composition)")
            group = []
            continue
        if token == ")":
            if group is None:
                raise fail("')' closes no '('")
            groups.append(tuple(group))
            group = None
            continue
        if token == "\u2026":
            token = _ELLIPSIS
        elif token.isdecimal():
            token = int(token)
            if token == 0:
                raise fail("an anonymous axis has length 0; lengths are >= 1")
            if token == 1:
                if group is None:
                    groups.append(())
                continue
        else:
            for char in token:
                if not (char.isalnum() or char == "_"):
                    raise fail(f"unknown character {char!r}")
            problem = _axis_name_problem(token)
            if problem:
                raise fail(f"axis name {token!r} {problem}")
        if type(token) is str:
            if token in seen:
                raise fail(f"axis {token!r} appears twice on one side")
            seen.add(token)
        if group is None:
            groups.append(token if token == _ELLIPSIS else (token,))
        else:
            group.append(token)
    if group is not None:
        raise fail("a '(' is not closed")
    return tuple(groups)


def _names(groups: tuple) -> set:
    """Every axis token of ``groups`` (anonymous ints included)."""
    names = set()
    for group in groups:
        if group == _ELLIPSIS:
            names.add(_ELLIPSIS)
        else:
            names.update(group)
    return names


@functools.lru_cache(maxsize=256)
def _parse(pattern: str, operation: str) -> tuple:
    """``(left groups, right groups)`` of a checked pattern; on the right,
    anonymous lengths become ``(length, number)`` tokens, each an axis of
    its own."""
    def fail(detail):
        return _fail(operation, pattern, detail)

    sides = pattern.split("->")
    if len(sides) != 2:
        raise fail("a pattern has one '->' between the input's and the result's axes")
    left = _parse_side(sides[0], fail)
    right = _parse_side(sides[1], fail)
    left_names, right_names = _names(left), _names(right)
    if _ELLIPSIS in right_names and _ELLIPSIS not in left_names:
        raise fail("'...' on the right needs '...' on the left")
    if _ELLIPSIS in left_names and _ELLIPSIS not in left:
        raise fail("'...' on the left may not be inside parentheses")
    for name in left_names:
        if type(name) is int:
            raise fail(f"anonymous axis {name} on the left: only 1 (or ()) may be unnamed there")
    if operation == "rearrange":
        for name in right_names:
            if type(name) is int:
                raise fail(f"anonymous axis {name}: rearrange allows only 1 (or ()); "
                           f"use repeat to add axes")
        for name in sorted(left_names ^ right_names):
            side = "left" if name in left_names else "right"
            raise fail(f"axis {name!r} is only on the {side}: rearrange needs the same axes "
                       f"on both sides")
    else:
        for name in sorted(left_names - right_names):
            raise fail(f"axis {name!r} of the input is missing on the right: repeat keeps "
                       f"every input axis")
        count = 0
        numbered = []
        for group in right:
            if group != _ELLIPSIS:
                tokens = []
                for token in group:
                    if type(token) is int:
                        token = (token, count)
                        count += 1
                    tokens.append(token)
                group = tuple(tokens)
            numbered.append(group)
        right = tuple(numbered)
    return left, right


# --------------------------------------------------------------------------
# The per-shape recipe
# --------------------------------------------------------------------------

class _Recipe:
    """One pattern on one input shape: the result's shape, and the copy as
    the result's elementary axes (length > 1 only) with, for each, the input
    axis and the output axis it lies in and its factor there (the product
    of the lengths inside it in its group). Repeated axes read input axis
    ``ndim``, whose step is 0.

    ``last_steps`` keeps the byte steps of the last pair of array strides
    (one tuple, replaced whole, so threads sharing a recipe never see half
    of one): a repeated call skips recomputing them (0.4 of the 3.5
    microseconds of a tiny call)."""

    __slots__ = ("result_shape", "extents", "src_axes", "dst_axes", "last_steps")

    def __init__(self, result_shape, extents, src_axes, dst_axes):
        self.result_shape = result_shape
        self.extents = extents
        self.src_axes = src_axes
        self.dst_axes = dst_axes
        self.last_steps = (None, None, None)

    def steps(self, src: np.ndarray, dst: np.ndarray) -> tuple:
        """``(src_steps, dst_steps)`` of the copy between these arrays."""
        strides = (src.strides, dst.strides)
        last_strides, src_steps, dst_steps = self.last_steps
        if strides != last_strides:
            src_strides = src.strides + (0,)
            src_steps = tuple([src_strides[axis] * factor for axis, factor in self.src_axes])
            dst_steps = tuple([dst.strides[axis] * factor for axis, factor in self.dst_axes])
            self.last_steps = (strides, src_steps, dst_steps)
        return src_steps, dst_steps

    def copy(self, src: np.ndarray, dst: np.ndarray, n_threads: int) -> None:
        src_steps, dst_steps = self.steps(src, dst)
        _engine.copy(src, dst, self.extents, src_steps, dst_steps, ((0, 0),), n_threads)

    def copies(self, src: np.ndarray, dst: np.ndarray) -> list:
        return [StridedCopy(self.extents, *self.steps(src, dst))]


def _expand_ellipsis(groups: tuple, names: tuple) -> list:
    """``groups`` with a bare ``...`` as one group per name and a ``...``
    inside parentheses as the names in its place."""
    expanded = []
    for group in groups:
        if group == _ELLIPSIS:
            expanded.extend((name,) for name in names)
        elif _ELLIPSIS in group:
            at = group.index(_ELLIPSIS)
            expanded.append(group[:at] + names + group[at + 1:])
        else:
            expanded.append(group)
    return expanded


def pattern_axes(pattern: str, operation: str, ndim: int) -> tuple:
    """The checked pattern's ``(left, right)`` groups for an input of
    ``ndim`` axes (at least the pattern's named ones), with ``...`` expanded
    into one name per axis it stands for."""
    left, right = _parse(pattern, operation)
    if _ELLIPSIS in left:
        # Names that no pattern can spell (not identifiers).
        names = tuple(f"...{i}" for i in range(ndim - (len(left) - 1)))
        left = _expand_ellipsis(left, names)
        right = _expand_ellipsis(right, names)
    return tuple(left), tuple(right)


def _product_text(group: tuple, lengths: dict) -> str:
    """``"h=2 * w=3 = 6"``, ``"h=2"``, or ``"1 (or ())"`` for an empty group."""
    if not group:
        return "1 (or ())"
    text = " * ".join(f"{name}={lengths[name]}" for name in group)
    if len(group) == 1:
        return text
    product = 1
    for name in group:
        product *= lengths[name]
    return f"{text} = {product}"


@functools.lru_cache(maxsize=_RECIPES_KEPT)
def _recipe(pattern: str, operation: str, shape: tuple, given: tuple) -> _Recipe:
    """The recipe of ``pattern`` on an input of ``shape`` with the lengths
    ``given`` (sorted ``(name, length)`` pairs)."""
    def fail(detail):
        return _fail(operation, pattern, detail)

    left, _ = _parse(pattern, operation)
    ndim = len(shape)
    if _ELLIPSIS in left:
        if ndim < len(left) - 1:
            raise fail(f"the input has {ndim} axes; the pattern needs at least {len(left) - 1}")
    elif ndim != len(left):
        raise fail(f"the input has {ndim} axes; the pattern has {len(left)}")
    left, right = pattern_axes(pattern, operation, ndim)

    lengths = {}
    for name, length in given:
        problem = _axis_name_problem(name)
        if problem:
            raise fail(f"length given for {name!r}, which {problem}")
        length = check_integer(length, f"length {name}")
        if length < 0:
            raise fail(f"length {name}={length} is negative")
        lengths[name] = length
    left_names = {name for group in left for name in group}
    right_names = {name for group in right for name in group}
    for name in lengths:
        if name not in left_names and name not in right_names:
            raise fail(f"length given for {name!r}, which the pattern does not use")

    for axis, group in enumerate(left):
        unknown = [name for name in group if name not in lengths]
        if len(unknown) > 1:
            raise fail(f"axes {', '.join(repr(n) for n in unknown)} of input axis {axis} have no "
                       f"length: give {unknown[1]}=... (one unknown length per group)")
        known_product = 1
        for name in group:
            if name not in unknown:
                known_product *= lengths[name]
        if not unknown:
            if known_product != shape[axis]:
                raise fail(f"input axis {axis} has length {shape[axis]}, but the pattern "
                           f"gives it {_product_text(group, lengths)}")
        elif known_product == 0:
            raise fail(f"cannot infer {unknown[0]!r} of input axis {axis} "
                       f"(length {shape[axis]}): the other lengths of its group multiply to 0")
        elif shape[axis] % known_product:
            known = tuple(name for name in group if name in lengths)
            raise fail(f"input axis {axis} has length {shape[axis]}, which "
                       f"{_product_text(known, lengths)} does not divide (axis {unknown[0]!r})")
        else:
            lengths[unknown[0]] = shape[axis] // known_product

    for name in right_names - left_names:
        if type(name) is tuple:
            lengths[name] = name[0]
        elif name not in lengths:
            raise fail(f"new axis {name!r} has no length: give {name}=...")

    src_axis = {}
    for axis, group in enumerate(left):
        factor = 1
        for name in reversed(group):
            src_axis[name] = (axis, factor)
            factor *= lengths[name]
    result_shape = []
    extents, src_axes, dst_axes = [], [], []
    for axis, group in enumerate(right):
        factor = 1
        placed = []
        for name in reversed(group):
            if lengths[name] != 1:
                placed.append((name, factor))
            factor *= lengths[name]
        result_shape.append(factor)
        for name, dst_factor in reversed(placed):
            extents.append(lengths[name])
            src_axes.append(src_axis.get(name, (ndim, 0)))
            dst_axes.append((axis, dst_factor))
    return _Recipe(tuple(result_shape), tuple(extents), tuple(src_axes), tuple(dst_axes))


def _lengths_key(axes_lengths: dict) -> tuple:
    """The given lengths as a hashable, order-free key (checked later)."""
    for name, length in axes_lengths.items():
        if type(length) is not int and not isinstance(length, np.integer):
            check_integer(length, f"length {name}")
    return tuple(sorted(axes_lengths.items()))


def checked_recipe(operation: str, shape: tuple, dtype: np.dtype, pattern,
                   axes_lengths: dict) -> _Recipe:
    """The recipe of a call on an input of ``shape`` and ``dtype``, after
    every check of its arguments but ``out`` (the Dask wrappers use it too)."""
    if type(pattern) is not str:
        raise TypeError(f"pattern must be a str such as 'b c h w -> b h w c', "
                        f"got {type(pattern).__name__}")
    recipe = _recipe(pattern, operation, shape,
                     _lengths_key(axes_lengths) if axes_lengths else ())
    if operation == "repeat":
        check_shape_fits(recipe.result_shape, dtype)
    return recipe


def prepare_rearrange(x: np.ndarray, pattern, axes_lengths=None) -> Prepared:
    recipe = checked_recipe("rearrange", x.shape, x.dtype, pattern, axes_lengths or {})
    return Prepared(recipe.result_shape, recipe.copy, recipe.copies)


def prepare_repeat(x: np.ndarray, pattern, axes_lengths=None) -> Prepared:
    recipe = checked_recipe("repeat", x.shape, x.dtype, pattern, axes_lengths or {})
    return Prepared(recipe.result_shape, recipe.copy, recipe.copies)


# --------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------

@fill_doc
def rearrange(x: ArrayLike, pattern: str, *, out: Optional[np.ndarray] = None,
              num_threads: Optional[int] = None, dtype=None, scale=None, offset=None,
              **axes_lengths: int) -> np.ndarray:
    """einops' ``rearrange``: reorder, split and merge axes by a pattern.

    The result equals ``einops.rearrange(x, pattern, **axes_lengths)`` on
    the NumPy array (values, shape, dtype), made in one multithreaded copy
    from ``x`` where it lies into a new C-contiguous array (or ``out``).
    ``"b c (h h2) (w w2) -> b (h2 w2 c) h w"`` is SpaceToDepth; the pattern
    language is in ``docs/semantics.md``.

    Parameters
    ----------
    x : array_like
        Any dtype and memory layout (read in place); a list of equal arrays
        is stacked, as einops does.
    pattern : str
        ``"left -> right"``: the input's axes and the result's, each side a
        list of axis names, ``(groups)`` of them, ``...`` and ``1`` or
        ``()``; both sides name the same axes.
    **axes_lengths : int
        Lengths of elementary axes that the input's shape does not fix (at
        most one unknown length per group).
    %(convert)s
    %(out_and_result)s

    Raises
    ------
    PatternError (a ValueError)
        A malformed pattern, an input of the wrong rank, lengths that do
        not fit the input's shape; the message names the pattern and the
        axis.
    ValueError
        A bad ``out``.
    TypeError
        A pattern that is not a str, a length that is not an integer, an
        ``out`` of another dtype.

    Examples
    --------
    >>> import numpy as np, fastblock as fb
    >>> fb.rearrange(np.arange(6).reshape(2, 3), "h w -> w h")
    array([[0, 3],
           [1, 4],
           [2, 5]])
    >>> fb.rearrange(np.zeros((2, 3, 8, 8)), "b c (h h2) (w w2) -> b (h2 w2 c) h w",
    ...              h2=2, w2=2).shape
    (2, 12, 4, 4)
    """
    return operate(REARRANGE, x, (pattern, axes_lengths) if axes_lengths else (pattern,), out,
                   num_threads, dtype, scale, offset)


@fill_doc
def repeat(x: ArrayLike, pattern: str, *, out: Optional[np.ndarray] = None,
           num_threads: Optional[int] = None, dtype=None, scale=None, offset=None,
           **axes_lengths: int) -> np.ndarray:
    """einops' ``repeat``: a rearrange that may add repeated axes.

    The result equals ``einops.repeat(x, pattern, **axes_lengths)`` on the
    NumPy array (values, shape, dtype), made in one multithreaded copy into
    a new C-contiguous array (or ``out``): the new axes read ``x`` with a
    step of 0, as :func:`fastblock.tile` does.
    ``"h w -> (r1 h) (r2 w)"`` is Tile.

    Parameters
    ----------
    x : array_like
        As for :func:`rearrange`.
    pattern : str
        As for :func:`rearrange`, and the right side may add axes: names
        with a length in ``axes_lengths``, or numbers (anonymous axes).
    **axes_lengths : int
        Lengths of the new axes, and of input axes the shape does not fix.
    %(convert)s
    %(out_and_result)s

    Raises
    ------
    PatternError, ValueError, TypeError
        As for :func:`rearrange`; also a PatternError for a new axis
        without a length and a ValueError for a result too large.

    Examples
    --------
    >>> import numpy as np, fastblock as fb
    >>> fb.repeat(np.array([1, 2]), "w -> h w", h=2)
    array([[1, 2],
           [1, 2]])
    >>> fb.repeat(np.zeros((3, 4)), "h w -> (2 h) (w r)", r=3).shape
    (6, 12)
    """
    return operate(REPEAT, x, (pattern, axes_lengths) if axes_lengths else (pattern,), out,
                   num_threads, dtype, scale, offset)


# This file's operators, declared (the table, table.py, lists them).
REARRANGE = Operator(rearrange, prepare_rearrange)
REPEAT = Operator(repeat, prepare_repeat)
