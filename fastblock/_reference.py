"""NumPy's own way: the documented reshape/transpose formulas (docs/semantics.md) in plain NumPy.

Independent of the copy engine, this is the reference that the self-check
(``python -m fastblock``), the tests and the benchmarks compare fastblock
with, and the NumPy baseline of the speed reports. It imports only NumPy:
``asv_bench/`` loads this file from the source tree, to check any build."""
import numpy as np


def _to_channels_first(x, data_format):
    if data_format == "channels_last":
        return np.moveaxis(x, -1, 1)
    if data_format == "NCHW_VECT_C":
        n, groups, h, w, lanes = x.shape
        return np.moveaxis(x, 4, 2).reshape(n, groups * lanes, h, w)
    return x


def _from_channels_first(y, data_format):
    if data_format == "channels_last":
        return np.moveaxis(y, 1, -1)
    if data_format == "NCHW_VECT_C":
        n, c, h, w = y.shape
        return np.moveaxis(y.reshape(n, c // 4, 4, h, w), 2, 4)
    return y


def space_to_depth_ref(x, bs, mode="blocks_first", data_format="channels_first"):
    x = _to_channels_first(np.asarray(x), data_format)
    n, c, *spatial = x.shape
    k = len(spatial)
    split = [n, c]
    for d in spatial:
        split += [d // bs, bs]
    xr = x.reshape(split)
    offsets = [3 + 2 * i for i in range(k)]
    positions = [2 + 2 * i for i in range(k)]
    if mode in ("blocks_first", "DCR", "dcr"):
        order = [0] + offsets + [1] + positions
    else:
        order = [0, 1] + offsets + positions
    y = xr.transpose(order).reshape([n, c * bs ** k] + [d // bs for d in spatial])
    return np.ascontiguousarray(_from_channels_first(y, data_format))


def depth_to_space_ref(x, bs, mode="blocks_first", data_format="channels_first"):
    x = _to_channels_first(np.asarray(x), data_format)
    n, c, *spatial = x.shape
    k = len(spatial)
    cout = c // bs ** k
    if mode in ("blocks_first", "DCR", "dcr"):
        xr = x.reshape([n] + [bs] * k + [cout] + spatial)
        order = [0, k + 1]
        for i in range(k):
            order += [k + 2 + i, 1 + i]
    else:
        xr = x.reshape([n, cout] + [bs] * k + spatial)
        order = [0, 1]
        for i in range(k):
            order += [k + 2 + i, 2 + i]
    y = xr.transpose(order).reshape([n, cout] + [d * bs for d in spatial])
    return np.ascontiguousarray(_from_channels_first(y, data_format))


def converted_ref(r, dtype, scale=None, offset=None):
    """The conversion's contract (docs/convert.md) in NumPy: ``r`` (the
    operator's result) converted to ``dtype``, times ``scale`` and plus
    ``offset`` where given, each operation rounded in the compute type
    (float64 for a float64 result, else float32)."""
    r = np.asarray(r)
    dtype = np.dtype(dtype)
    integer = dtype.kind in "iu"
    # NumPy warns of overflow and NaN in casts and arithmetic; the rule does
    # not. np.errstate is the calling thread's own (warnings.catch_warnings
    # is not: another Python thread may undo it).
    with np.errstate(all="ignore"):
        if scale is None and offset is None and not integer:
            return r.astype(dtype)
        compute = np.float64 if dtype == np.float64 else np.float32
        v = r.astype(compute)
        if scale is not None:
            v = v * np.asarray(scale).astype(compute)
        if offset is not None:
            v = v + np.asarray(offset).astype(compute)
        v = np.asarray(v, dtype=compute)
        if not integer:
            return v.astype(dtype)
        info = np.iinfo(dtype)
        return np.where(np.isnan(v), 0, np.clip(np.rint(v), info.min, info.max)).astype(dtype)
