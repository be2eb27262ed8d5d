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


# The float formats by dtype name: (exponent bits, fraction bits).
_FLOATS = {"float16": (5, 10), "bfloat16": (8, 7), "float32": (8, 23), "float64": (11, 52)}


def _bit_length(m):
    """The bit length of each uint64 item of ``m`` (0 for 0)."""
    n = np.zeros(m.shape, np.uint64)
    for k in (32, 16, 8, 4, 2, 1):
        big = (m >> np.uint64(n + k)) != 0
        n = np.where(big, n + np.uint64(k), n)
    return np.where(m != 0, n + np.uint64(1), np.uint64(0)).astype(np.int64)


def _exact_parts(x):
    """Each item of ``x`` (bool, integers, or a float of _FLOATS) as its sign,
    an integer m and an exponent e with |x| = m * 2**e exactly, and for floats
    the masks of its NaNs and infinities and its fraction bits."""
    name = x.dtype.name
    if name not in _FLOATS:
        wide = x.astype(np.uint64) if x.dtype.kind in "ub" else x.astype(np.int64)
        sign = np.asarray(wide < 0) if wide.dtype == np.int64 else np.zeros(x.shape, bool)
        m = np.where(sign, np.uint64(0) - wide.view(np.uint64), wide.view(np.uint64))
        no = np.zeros(x.shape, bool)
        return sign, m, np.zeros(x.shape, np.int64), no, no, np.zeros(x.shape, np.uint64), 0
    ebits, fbits = _FLOATS[name]
    width = 1 + ebits + fbits
    bits = np.ascontiguousarray(x).view(f"u{width // 8}").astype(np.uint64)
    sign = (bits >> np.uint64(width - 1)) != 0
    biased = ((bits >> np.uint64(fbits)) & np.uint64((1 << ebits) - 1)).astype(np.int64)
    fraction = bits & np.uint64((1 << fbits) - 1)
    special = biased == (1 << ebits) - 1
    m = np.where(special, np.uint64(0), fraction | np.where(biased > 0, np.uint64(1 << fbits), 0))
    e = np.maximum(biased, 1) - ((1 << (ebits - 1)) - 1) - fbits
    return sign, m, e, special & (fraction != 0), special & (fraction == 0), fraction, fbits


def cast_float(x, dtype):
    """``x`` converted to the float ``dtype`` (float16, bfloat16, float32,
    float64) by fastblock's rule, in integer arithmetic on the bits:
    each value rounded once from its exact value to the nearest, ties to
    even, past the largest finite value to an infinity; a NaN keeps its
    sign and the top of its payload (zeros below where the result's is
    wider), and its quiet bit is set. To its own dtype, ``x`` is copied.
    ``x``: bool, integers or those floats."""
    x = np.asarray(x)
    dtype = np.dtype(dtype)
    if x.dtype == dtype:
        return x.copy()
    ebits, fbits = _FLOATS[dtype.name]
    width = 1 + ebits + fbits
    sign, m, e, nan, inf, payload, src_fbits = _exact_parts(x)
    # The quantum of each result: 2**q, q = max(p - fbits, qmin), where
    # 2**p <= |x| < 2**(p + 1) and 2**qmin is the smallest subnormal.
    qmin = 2 - (1 << (ebits - 1)) - fbits
    p = _bit_length(m) - 1 + e
    q = np.maximum(p - fbits, qmin)
    shift = np.clip(q - e, 0, 63).astype(np.uint64)  # |x| < 2**62 where clipped
    kept, rest = m >> shift, m & ((np.uint64(1) << shift) - np.uint64(1))
    half = np.where(shift > 0, np.uint64(1) << (np.maximum(shift, 1) - np.uint64(1)), 0)
    up = (rest > half) | ((rest == half) & (half > 0) & ((kept & np.uint64(1)) == 1))
    kept = kept + up.astype(np.uint64)
    # kept * 2**q is the result; its bits are (q - qmin) << fbits plus kept
    # (a subnormal's q is qmin; a carry moves into the exponent).
    exact = np.where(q - e < 0, m << np.clip(e - q, 0, 63).astype(np.uint64), kept)
    inf_bits = np.uint64(((1 << ebits) - 1) << fbits)
    value = np.where(m == 0, np.uint64(0),
                     (np.maximum(q - qmin, 0).astype(np.uint64) << np.uint64(fbits)) + exact)
    out = np.minimum(value, inf_bits)
    moved = (payload >> np.uint64(max(src_fbits - fbits, 0))) << np.uint64(max(fbits - src_fbits, 0))
    out = np.where(nan, inf_bits | np.uint64(1 << (fbits - 1)) | moved, out)
    out = np.where(inf, inf_bits, out)
    out = out | (sign.astype(np.uint64) << np.uint64(width - 1))
    return out.astype(f"u{width // 8}").view(dtype)


def converted_ref(r, dtype, scale=None, offset=None):
    """The conversion's contract (docs/convert.md) in NumPy: ``r`` (the
    operator's result) converted to ``dtype``, times ``scale`` and plus
    ``offset`` where given, each operation rounded in the compute type
    (float64 for a float64 result, else float32). The conversions between
    types are :func:`cast_float`'s; the arithmetic is NumPy's."""
    r = np.asarray(r)
    dtype = np.dtype(dtype)
    integer = dtype.kind in "iu"
    # NumPy warns of overflow and NaN in casts and arithmetic; the rule does
    # not. np.errstate is the calling thread's own (warnings.catch_warnings
    # is not: another Python thread may undo it).
    with np.errstate(all="ignore"):
        if scale is None and offset is None and not integer:
            return cast_float(r, dtype)
        compute = np.float64 if dtype == np.float64 else np.float32
        v = cast_float(r, compute)
        if scale is not None:
            v = v * np.asarray(scale).astype(compute)
        if offset is not None:
            v = v + np.asarray(offset).astype(compute)
        v = np.asarray(v, dtype=compute)
        if not integer:
            return cast_float(v, dtype)
        info = np.iinfo(dtype)
        return np.where(np.isnan(v), 0, np.clip(np.rint(v), info.min, info.max)).astype(dtype)
