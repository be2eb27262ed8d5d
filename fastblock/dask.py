"""fastblock on Dask arrays: ``space_to_depth``, ``depth_to_space``, ``tile``,
``rearrange`` and ``repeat``.

Install with ``pip install fastblock[dask]``. Importing :mod:`fastblock` never
imports Dask; this module does.

Each function takes a :class:`dask.array.Array` (anything else goes through
:func:`dask.array.asarray`) and returns a lazy :class:`dask.array.Array` whose
blocks are computed by fastblock's kernels, with the same arguments, errors
(raised when the graph is built) and results as the NumPy functions of the
same name. The output's chunks are derived from the input's, and the input is
rechunked only along the axes where a block could not otherwise be computed
on its own:

==================  ======================  ==========================================
axis                space_to_depth          depth_to_space
==================  ======================  ==========================================
batch (N)           any chunks, kept        any chunks, kept
spatial (D1..DK)    multiples of bs;        any chunks; output chunk = chunk * bs
                    output chunk = chunk/bs
channel, DCR /      one chunk (the whole    one chunk (the whole axis)
blocks_first        axis)
channel, CRD /      any chunks;             multiples of M = bs**K;
depth_first         output chunk = chunk*M  output chunk = chunk / M
NCHW_VECT_C lane    one chunk (size 4)      one chunk (size 4)
==================  ======================  ==========================================

For ``"NCHW_VECT_C"`` (``[N, C/4, H, W, 4]``) the channel rows apply to the
group axis (axis 1) counted in groups of 4 channels. With ``block_size == 1``
every chunking is kept. An axis that breaks its rule is rechunked to the
nearest aligned boundaries (each chunk boundary rounded to the nearest allowed
multiple), a blocks_first channel axis to a single chunk; an axis that already
follows its rule is left alone, so aligned input gives a graph with no
rechunk step at all.

``dtype=``, ``scale=`` and ``offset=`` convert each block in the same pass,
as the NumPy functions do; the scale and offset broadcast against the whole
result, and each block reads its own part of them: the compact form (a
``(3, 1, 1)`` per-channel scale is 3 values, whatever the chunks), cut to
the block's range along an axis where it varies and the result has
several chunks.

Each block runs with ``num_threads=1`` unless the caller passes
``num_threads``: Dask already runs one block per worker thread, and OpenMP
threads inside every block would oversubscribe the cores.
"""
from __future__ import annotations

import functools
import math
from typing import Optional

import dask
import dask.array as da
import numpy as np
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph
from dask.utils import parse_bytes

from ._call.convert import Conversion, check_conversion, converting
from ._call.layouts import LayoutAxes, depth_to_space_shape, space_to_depth_shape, tile_shapes
from ._call.validate import (
    check_block_arguments,
    check_repeats,
    check_result_size,
    check_thread_count,
)
from ._ops.chunks import (
    chunk_arguments,
    depth_to_space_plan,
    known,
    space_to_depth_plan,
    tile_axis_plan,
)
from ._ops.docs import fill_doc
from ._ops.patterns import checked_recipe, pattern_axes
from ._ops.table import OPERATORS

__all__ = ["space_to_depth", "depth_to_space", "tile", "rearrange", "repeat",
           "space_to_depth_chunks", "depth_to_space_chunks"]

# Threads per block inside Dask unless the caller says otherwise.
DEFAULT_BLOCK_THREADS = 1

# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------

def _as_dask(x) -> da.Array:
    return x if isinstance(x, da.Array) else da.asarray(x)


def _check_no_out(out) -> None:
    if out is not None:
        raise TypeError("out is not supported for Dask arrays (the result is lazy); "
                        "compute the result or use dask.array.store to write it somewhere")


def _block_threads(num_threads) -> int:
    if num_threads is None:
        return DEFAULT_BLOCK_THREADS
    return check_thread_count(num_threads, "num_threads")


def _meta(ndim: int, dtype: np.dtype) -> np.ndarray:
    return np.empty((0,) * ndim, dtype=dtype)


def _known_sizes(shape) -> tuple:
    """``shape`` without the axes of unknown (NaN) length."""
    return tuple(int(s) for s in shape if not math.isnan(s))


def _rechunk_where_needed(x: da.Array, wanted: dict) -> da.Array:
    changes = {axis: chunks for axis, chunks in wanted.items() if tuple(chunks) != x.chunks[axis]}
    return x.rechunk(changes) if changes else x


def _conversion(x: da.Array, result_shape, dtype, scale, offset):
    """``(conversion or None, result dtype)``: the call's dtype, scale and
    offset checked against the whole result now, as the NumPy function
    checks them (errors when the graph is built)."""
    convert = converting(dtype, scale, offset)
    if convert is None:
        return None, x.dtype
    conversion = check_conversion(x.dtype, _known_sizes(result_shape), convert)
    return conversion, conversion.dtype


def _conversion_plan(conversion: Optional[Conversion], chunks: tuple) -> tuple:
    """``(keywords, cuts)`` of the blocks of a result of ``chunks``.

    ``keywords``: what every block passes on as it is (the dtype, and each
    compact scale or offset that is the same for every block). ``cuts``:
    None, or ``{name: (values, ((axis of values, result axis, chunk starts
    along it), ...))}`` for a scale or offset that varies along an axis the
    result has in several chunks; each block cuts its own range of those
    axes (:func:`_block_keywords`). A per-channel scale of an axis held in
    one chunk is 3 values in every task, with no cut."""
    if conversion is None:
        return {}, None
    keywords = {"dtype": conversion.dtype}
    cuts = {}
    for name, values in (("scale", conversion.scale), ("offset", conversion.offset)):
        if values is None:
            continue
        lead = len(chunks) - values.ndim
        axes = []
        for k, n in enumerate(values.shape):
            along = chunks[lead + k]
            if n > 1 and len(along) > 1:
                known(along, f"{name} that varies along a chunked axis")
                axes.append((k, lead + k, tuple(np.cumsum((0,) + tuple(along)).tolist())))
        if axes:
            cuts[name] = (values, tuple(axes))
        else:
            keywords[name] = values
    return keywords, (cuts or None)


def _block_keywords(keywords: dict, cuts, block_id) -> dict:
    """A block's dtype, scale and offset keywords: ``keywords``, and its own
    range of each value in ``cuts`` (a view of the compact values)."""
    if cuts is None:
        return keywords
    keywords = dict(keywords)
    for name, (values, axes) in cuts.items():
        index = [slice(None)] * values.ndim
        for k, axis, starts in axes:
            i = block_id[axis]
            index[k] = slice(starts[i], starts[i + 1])
        keywords[name] = values[tuple(index)]
    return keywords


def _block_call(function, keywords: dict, cuts, pad: int = 0):
    """What map_blocks runs on each block: ``function`` (a fastblock call on
    one array) with ``keywords``, the same call a map_blocks of it makes,
    where every block reads the same scale and offset; else by way of
    :func:`_cut_block`, which takes the block's index."""
    if cuts is None and not pad:
        return functools.partial(function, **keywords)
    return functools.partial(_cut_block, function, keywords, cuts, pad)


def _cut_block(function, keywords, cuts, pad, block, block_id=None):
    result = function(block, **_block_keywords(keywords, cuts, block_id))
    # ``pad`` trailing axes of 1 where the result has fewer axes than the
    # block (a view; cut off again by a getitem).
    return result.reshape(result.shape + (1,) * pad) if pad else result


def _tile_block(block, counts, num_threads, keywords, cuts, block_id=None):
    reps = tuple(per_axis[i] for per_axis, i in zip(counts, block_id))
    return OPERATORS["tile"].door(block, reps, num_threads=num_threads,
                                  **_block_keywords(keywords, cuts, block_id))


# --------------------------------------------------------------------------
# chunk plans (public so that callers can see what a call will do)
# --------------------------------------------------------------------------

def space_to_depth_chunks(chunks, block_size, mode="blocks_first",
                          data_format="channels_first"):
    """The ``(input_chunks, output_chunks)`` :func:`space_to_depth` uses for
    an input of chunks ``chunks``; ``input_chunks == chunks`` when no rechunk
    is needed."""
    return space_to_depth_plan(*chunk_arguments(chunks, block_size, mode, data_format))


def depth_to_space_chunks(chunks, block_size, mode="blocks_first",
                          data_format="channels_first"):
    """The ``(input_chunks, output_chunks)`` :func:`depth_to_space` uses for
    an input of chunks ``chunks``; ``input_chunks == chunks`` when no rechunk
    is needed."""
    return depth_to_space_plan(*chunk_arguments(chunks, block_size, mode, data_format))


# --------------------------------------------------------------------------
# the operators
# --------------------------------------------------------------------------

@fill_doc
def space_to_depth(x, block_size: int, mode: str = "blocks_first",
                   data_format: str = "channels_first", *, out=None,
                   num_threads: Optional[int] = None, dtype=None, scale=None,
                   offset=None) -> da.Array:
    """:func:`fastblock.space_to_depth` on a Dask array, block by block.

    %(dask_result)s

    Chunks (bs = ``block_size``, K spatial axes, M = bs**K):

    - batch axis: kept as it is.
    - spatial axes: each chunk must be a multiple of bs; an axis where one is
      not is rechunked to the nearest multiples of bs. Output chunk =
      chunk / bs.
    - channel axis, ``"depth_first"`` (CRD): any chunking, kept; output chunk
      = chunk * M (channel ``c`` goes to ``c*M .. c*M + M-1``).
    - channel axis, ``"blocks_first"`` (DCR, the default): result channel
      ``B*C + c`` mixes every input channel into every block offset, so **the
      channel axis is rechunked to a single chunk** (unless bs == 1); output
      chunk = C * M.
    - ``"NCHW_VECT_C"``: the same rules on the group axis (axis 1, in groups
      of 4 channels); the lane axis (size 4) is kept whole.

    %(dask_block_parameters)s

    Examples
    --------
    >>> import dask.array as da, fastblock.dask as fbd
    >>> x = da.arange(2 * 3 * 8 * 8).reshape(2, 3, 8, 8).rechunk((1, 1, 4, 4))
    >>> y = fbd.space_to_depth(x, 2, mode="depth_first")
    >>> y.chunks
    ((1, 1), (4, 4, 4), (2, 2), (2, 2))
    """
    return _block_op(True, x, block_size, mode, data_format, out, num_threads, dtype, scale,
                     offset)


@fill_doc
def depth_to_space(x, block_size: int, mode: str = "blocks_first",
                   data_format: str = "channels_first", *, out=None,
                   num_threads: Optional[int] = None, dtype=None, scale=None,
                   offset=None) -> da.Array:
    """The inverse of :func:`space_to_depth`: :func:`fastblock.depth_to_space`
    on a Dask array, block by block.

    %(dask_result)s

    Chunks (bs = ``block_size``, K spatial axes, M = bs**K):

    - batch axis: kept as it is.
    - spatial axes: any chunking, kept; output chunk = chunk * bs.
    - channel axis, ``"depth_first"`` (CRD): each chunk must be a multiple of
      M (channels ``c*M .. c*M + M-1`` make result channel ``c``); an axis
      where one is not is rechunked to the nearest multiples of M. Output
      chunk = chunk / M.
    - channel axis, ``"blocks_first"`` (DCR, the default): **the channel
      axis is rechunked to a single chunk** (unless bs == 1); output chunk =
      C / M.
    - ``"NCHW_VECT_C"``: the same rules on the group axis (axis 1, counted in
      groups of 4): depth_first group chunks must be multiples of M so that
      each maps to whole result groups; the lane axis (size 4) is kept whole.

    %(dask_block_parameters)s

    Examples
    --------
    >>> import dask.array as da, fastblock.dask as fbd
    >>> x = da.zeros((2, 8, 4, 4), chunks=(1, 4, 2, 4))
    >>> fbd.depth_to_space(x, 2, mode="depth_first").chunks
    ((1, 1), (1, 1), (4, 4), (8,))
    """
    return _block_op(False, x, block_size, mode, data_format, out, num_threads, dtype, scale,
                     offset)


def _block_op(to_depth: bool, x, block_size, mode, data_format, out, num_threads, dtype, scale,
              offset) -> da.Array:
    """:func:`space_to_depth` (``to_depth``) or :func:`depth_to_space`."""
    _check_no_out(out)
    x = _as_dask(x)
    bs, mode, layout = check_block_arguments(x.shape, block_size, mode, data_format)
    threads = _block_threads(num_threads)
    axes = LayoutAxes(layout, x.ndim)
    if to_depth:
        name, shape_rule, chunk_plan = "space_to_depth", space_to_depth_shape, space_to_depth_plan
    else:
        known(x.chunks[axes.channel], "channel axis")
        name, shape_rule, chunk_plan = "depth_to_space", depth_to_space_shape, depth_to_space_plan
    result_shape = shape_rule(x.shape, bs, layout)
    src, dst = chunk_plan(x.chunks, bs, mode, axes)
    conversion, result_dtype = _conversion(x, result_shape, dtype, scale, offset)
    check_result_size(_known_sizes(result_shape), result_dtype)
    x = _rechunk_where_needed(x, dict(enumerate(src)))
    token = f"{name}-" + tokenize(x, bs, mode, layout, threads, conversion)
    keywords, cuts = _conversion_plan(conversion, dst)
    call = functools.partial(OPERATORS[name].door, block_size=bs, mode=mode,
                             data_format=data_format, num_threads=threads)
    return x.map_blocks(_block_call(call, keywords, cuts), name=token, chunks=dst,
                        dtype=result_dtype, meta=_meta(x.ndim, result_dtype))


@fill_doc
def tile(x, repeats, *, out=None, num_threads: Optional[int] = None, dtype=None, scale=None,
         offset=None) -> da.Array:
    """:func:`fastblock.tile` (``numpy.tile``) on a Dask array, by blocks.

    %(dask_result)s

    The plan works on whole blocks, axis by axis:

    - an axis repeated once keeps its chunks;
    - an axis of several chunks repeated r times has those chunks r times
      over, each output block a reference to an input block (no copy);
    - an axis held in one chunk has its repeats folded into blocks by
      fastblock's ``tile`` kernel, as many repeats per block as keep a block
      within Dask's ``array.chunk-size`` (the last block takes the
      remainder);
    - a repeat of 0 gives an empty axis, a longer ``repeats`` new leading
      axes of size 1 (as in ``numpy.tile``).

    Parameters
    ----------
    x : dask.array.Array
        Any rank (array-likes go through :func:`dask.array.asarray`).
    repeats : int, sequence of int, or 1-D integer array
        As for :func:`fastblock.tile`.
    out : None
        Not supported on Dask arrays (TypeError); present for the signature.
    num_threads : int, optional
        fastblock threads per block (default 1).

    Examples
    --------
    >>> import dask.array as da, fastblock.dask as fbd
    >>> x = da.arange(6, chunks=3).reshape(2, 3)
    >>> fbd.tile(x, (1, 2)).compute()
    array([[0, 1, 2, 0, 1, 2],
           [3, 4, 5, 3, 4, 5]])
    """
    _check_no_out(out)
    x = _as_dask(x)
    reps = check_repeats(repeats)
    threads = _block_threads(num_threads)
    reps, _, out_shape = tile_shapes(x.shape, reps)
    lead = len(reps) - x.ndim
    if lead:
        x = x[(None,) * lead + (Ellipsis,)]
    conversion, result_dtype = _conversion(x, out_shape, dtype, scale, offset)
    check_result_size(_known_sizes(out_shape), result_dtype)
    if 0 in reps:
        x = x[tuple(slice(0, 0) if r == 0 else slice(None) for r in reps)]
        reps = tuple(max(r, 1) for r in reps)

    x, counts = _tile_blocks(x, reps)
    if conversion is None and all(k == 1 for per_axis in counts for k in per_axis):
        return x
    out_chunks = tuple(tuple(c * k for c, k in zip(x.chunks[a], counts[a])) for a in range(x.ndim))
    name = "tile-" + tokenize(x, counts, threads, conversion)
    keywords, cuts = _conversion_plan(conversion, out_chunks)
    if all(len(set(per_axis)) <= 1 for per_axis in counts):
        # The same repeats in every block: the same call on each.
        reps = tuple(per_axis[0] if per_axis else 1 for per_axis in counts)
        call = functools.partial(OPERATORS["tile"].door, repeats=reps, num_threads=threads)
        return x.map_blocks(_block_call(call, keywords, cuts), name=name, chunks=out_chunks,
                            dtype=result_dtype, meta=_meta(x.ndim, result_dtype))
    return x.map_blocks(_tile_block, counts, threads, keywords, cuts, name=name,
                        chunks=out_chunks, dtype=result_dtype, meta=_meta(x.ndim, result_dtype))


def _tile_blocks(x: da.Array, reps: tuple):
    """``(blocks, counts)``: ``x``'s blocks as the tile's result takes them
    (each input block referenced once per repeat it is not folded into),
    and the repeats folded into each of them, per axis."""
    # Fold repeats into blocks up to the chunk-size budget, innermost axis first.
    budget = parse_bytes(dask.config.get("array.chunk-size"))
    block_bytes = max(x.dtype.itemsize, 1)
    for chunks in x.chunks:
        block_bytes *= max((c for c in chunks if not math.isnan(c)), default=1)
    plans = [None] * x.ndim
    for axis in reversed(range(x.ndim)):
        chunks = x.chunks[axis]
        if any(math.isnan(c) for c in chunks):
            fold = 1
        elif block_bytes == 0:
            fold = reps[axis]
        else:
            fold = max(1, min(reps[axis], budget // block_bytes))
        plans[axis] = tile_axis_plan(chunks, reps[axis], fold)
        if len(chunks) == 1:
            block_bytes *= max(p[1] for p in plans[axis])

    # One layer of block references, then the kernel where repeats were folded.
    sources = [[j for j, _ in plan] for plan in plans]
    if any(src != list(range(n)) for src, n in zip(sources, x.numblocks)):
        name = "tile-blocks-" + tokenize(x, sources)
        graph = {}
        for index in np.ndindex(*(len(s) for s in sources)):
            graph[(name,) + index] = (x.name,) + tuple(s[i] for s, i in zip(sources, index))
        chunks = tuple(tuple(x.chunks[a][j] for j in src) for a, src in enumerate(sources))
        layer = HighLevelGraph.from_collections(name, graph, dependencies=[x])
        x = da.Array(layer, name, chunks, meta=x)
    return x, tuple(tuple(k for _, k in plan) for plan in plans)


# --------------------------------------------------------------------------
# einops patterns
# --------------------------------------------------------------------------

def _batch_axes(operation: str, pattern: str, ndim: int) -> int:
    """How many leading axes ``pattern`` keeps as they are: the same single
    axis, in the same place, on both sides (``...`` counts as its axes)."""
    left, right = pattern_axes(pattern, operation, ndim)
    count = 0
    for left_group, right_group in zip(left, right):
        if len(left_group) != 1 or left_group != right_group:
            break
        count += 1
    return count


def _pattern_op(operation: str, x, pattern, out, num_threads, axes_lengths,
                dtype=None, scale=None, offset=None) -> da.Array:
    _check_no_out(out)
    x = _as_dask(x)
    known(x.shape, f"{operation} of a Dask array")
    threads = _block_threads(num_threads)
    # Every check of the NumPy function, on the whole array's shape.
    result_shape = checked_recipe(operation, x.shape, x.dtype, pattern, axes_lengths).result_shape
    conversion, result_dtype = _conversion(x, result_shape, dtype, scale, offset)
    check_result_size(result_shape, result_dtype)
    batch = _batch_axes(operation, pattern, x.ndim)
    if batch == 0:
        raise ValueError(
            f"fastblock.dask.{operation}({pattern!r}): the pattern moves, splits or merges the "
            f"first axis, so no block of the input makes a block of the result; keep the "
            f"leading (batch) axes in place on both sides, or use fastblock.{operation} on a "
            f"NumPy array")
    # The batch axes keep their chunks; every other axis is one chunk.
    x = _rechunk_where_needed(x, {axis: (x.shape[axis],) for axis in range(batch, x.ndim)})
    chunks = x.chunks[:batch] + tuple((n,) for n in result_shape[batch:])
    # A block's batch axes are shorter than the whole array's: lengths given
    # for them were checked above and are not passed on.
    left, _ = pattern_axes(pattern, operation, x.ndim)
    batch_names = {left[axis][0] for axis in range(batch)}
    lengths = {name: n for name, n in axes_lengths.items() if name not in batch_names}
    name = f"{operation}-" + tokenize(x, pattern, sorted(lengths.items()), threads, conversion)
    keywords, cuts = _conversion_plan(conversion, chunks)
    # Each block maps to one block of the result, axis for axis: the axes
    # after the batch ones are one chunk on both sides. Dask's drop_axis
    # would hand each block over as a copy (it concatenates along the axes
    # it drops, one block or not), so the result keeps the block's rank
    # where it has fewer axes (``pad`` axes of 1, cut off by a getitem,
    # views both) and gains new axes where it has more.
    rank = len(result_shape)
    pad = max(0, x.ndim - rank)
    call = functools.partial(OPERATORS[operation].door, pattern=pattern,
                             num_threads=threads, **lengths)
    y = x.map_blocks(_block_call(call, keywords, cuts, pad), name=name,
                     chunks=chunks + ((1,),) * pad, dtype=result_dtype,
                     meta=_meta(rank + pad, result_dtype),
                     new_axis=list(range(x.ndim, rank)) or None)
    return y[(slice(None),) * rank + (0,) * pad] if pad else y


@fill_doc
def rearrange(x, pattern: str, *, out=None, num_threads: Optional[int] = None, dtype=None,
              scale=None, offset=None, **axes_lengths) -> da.Array:
    """:func:`fastblock.rearrange` (einops' ``rearrange``) on a Dask array,
    block by block.

    %(dask_result)s

    Chunks: the leading axes that the pattern keeps in place (the same axis
    name alone, at the same position, on both sides, such as ``b`` in
    ``"b c h w -> b h w c"``; ``...`` at the front counts as its axes) keep
    their chunks; every other axis is rechunked to one chunk, and each
    block is rearranged by fastblock. A pattern that keeps no leading axis
    in place raises ValueError.

    %(dask_pattern_parameters)s

    Examples
    --------
    >>> import dask.array as da, fastblock.dask as fbd
    >>> x = da.zeros((8, 3, 32, 32), chunks=(2, 3, 16, 16))
    >>> fbd.rearrange(x, "b c (h p) (w q) -> b (h w) (p q c)", p=8, q=8).chunks
    ((2, 2, 2, 2), (16,), (192,))
    """
    return _pattern_op("rearrange", x, pattern, out, num_threads, axes_lengths, dtype, scale,
                       offset)


@fill_doc
def repeat(x, pattern: str, *, out=None, num_threads: Optional[int] = None, dtype=None,
           scale=None, offset=None, **axes_lengths) -> da.Array:
    """:func:`fastblock.repeat` (einops' ``repeat``) on a Dask array, block
    by block, with the chunk rules of :func:`rearrange`.

    %(dask_result)s

    %(dask_pattern_parameters)s

    Examples
    --------
    >>> import dask.array as da, fastblock.dask as fbd
    >>> x = da.zeros((8, 3, 16, 16), chunks=(4, 3, 8, 8))
    >>> fbd.repeat(x, "b c h w -> b c (h 2) (w 2)").chunks
    ((4, 4), (3,), (32,), (32,))
    """
    return _pattern_op("repeat", x, pattern, out, num_threads, axes_lengths, dtype, scale,
                       offset)
