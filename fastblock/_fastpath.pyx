# cython: boundscheck=False, wraparound=False
"""Every front door's common call, run from a cache of prepared calls.

On a tiny input the general path's argument handling (Python objects,
names looked up in any case, shape rules, plans) costs more than the copy.
A call here is keyed by its operator, its arguments, the input's shape,
strides, dtype and alignment and the layout of ``out=``; the first call of
a key is prepared by the operator's own checks (``prepare``: shapes from
``_layouts``, the copy as the operator describes it), its copy is planned
by the engine once and stored (``_engine.CopyProgram``), and later calls of
the key do only the lookup, the result's allocation (or ``out=``'s checks)
and the engine run.

Taken here: ``x`` an ndarray of a plain-data dtype with items, every
argument an ``int``, a ``str``, None, or a tuple, list or keyword dict of
``int`` (exact types: ``True``, ``2.0`` or ``np.int64(2)`` never equal a
key), ``num_threads`` None or a positive ``int``, and ``out`` None or a
writable, contiguous ndarray of the result's shape and of ``x``'s dtype
object whose bytes lie apart from ``x``'s. Every other call, each error and
each empty result included, gets None and takes the general path, which
decides (and words every message) alone. :func:`enabled` switches this
path off and on (tests and the stress harness compare the two).
"""

cimport numpy as cnp
from cpython.object cimport PyObject_Hash
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM

from ._engine cimport CopyProgram
from ._memory cimport is_clear_destination

from . import _engine, _threads

cnp.import_array()

ctypedef cnp.npy_intp intp

cdef extern from "numpy/arrayobject.h":
    # Steals a reference to descr.
    object PyArray_Empty(int nd, intp* dims, cnp.PyArray_Descr* descr, int fortran)
    bint PyDataType_FLAGCHK(cnp.PyArray_Descr* descr, int flags)
    enum:
        NPY_ITEM_HASOBJECT

cdef extern from *:
    """
    #define FB_INCREF_DESCR(d) Py_INCREF((PyObject*)(d))
    """
    void FB_INCREF_DESCR(cnp.PyArray_Descr* descr)

cdef enum:
    # Ranks kept in a key (input and result); higher ones take the general path.
    MAX_DIMS = 32
    # Entries, two ways to a hash; a power of two.
    SLOTS = 512

# The operators, as the front doors name their calls.
SPACE_TO_DEPTH = 0
DEPTH_TO_SPACE = 1
TRANSPOSE = 2
PIXEL_SHUFFLE = 3
PIXEL_UNSHUFFLE = 4
SPACE_TO_BATCH = 5
BATCH_TO_SPACE = 6
TILE = 7
REARRANGE = 8
REPEAT = 9

cdef object resolve_num_threads = _threads.resolve_num_threads
cdef object openmp_max_threads = _engine.openmp_max_threads
# _threads._effective's cap on a call's threads (a constant of the process).
cdef long max_threads = _threads._MAX_THREADS

cdef bint on = True
cdef list slots = [None] * SLOTS
cdef unsigned long long clock = 0
cdef Py_ssize_t n_hits = 0, n_stored = 0


cdef class Entry:
    """One prepared call: its key, the result's shape and the stored copy."""
    cdef int op, ndim, result_ndim, out_ndim
    cdef object args
    cdef object descr               # held, so that no other dtype takes its address
    cdef Py_hash_t hash
    cdef intp src_align, out_align
    cdef bint has_out
    cdef intp dims[MAX_DIMS]
    cdef intp strides[MAX_DIMS]
    cdef intp out_strides[MAX_DIMS]
    cdef intp result_dims[MAX_DIMS]
    cdef CopyProgram program
    cdef unsigned long long used


cdef inline bint all_ints(tuple values) noexcept:
    cdef object value
    for value in values:
        if type(value) is not int:
            return False
    return True


cdef object exact_key(tuple args):
    """``args`` as a key whose equality means the same call (lists as
    tuples, a keyword dict as a ``"**"`` marker and its names and lengths
    in order, inline), or None where an argument is of another type."""
    cdef bint as_given = True
    cdef tuple key
    cdef Py_ssize_t size, k
    for value in args:
        kind = type(value)
        if kind is int or kind is str or value is None:
            continue
        if kind is tuple:
            if not all_ints(<tuple>value):
                return None
            continue
        if kind is list or kind is dict:
            as_given = False
            continue
        return None
    if as_given:
        return args
    size = 0
    for value in args:
        size += 1 + 2 * len(<dict>value) if type(value) is dict else 1
    key = PyTuple_New(size)
    k = 0
    for value in args:
        kind = type(value)
        if kind is list:
            value = tuple(<list>value)
            if not all_ints(<tuple>value):
                return None
        elif kind is dict:
            put(key, k, "**")
            k += 1
            for name, length in (<dict>value).items():
                if type(name) is not str or type(length) is not int or k + 2 > size:
                    return None
                put(key, k, name)
                put(key, k + 1, length)
                k += 2
            continue
        put(key, k, value)
        k += 1
    return key if k == size else None


cdef inline void put(tuple key, Py_ssize_t k, object value) noexcept:
    Py_INCREF(value)
    PyTuple_SET_ITEM(key, k, value)


cdef inline Py_hash_t mix(Py_hash_t h, intp value) noexcept:
    return <Py_hash_t>((<unsigned long long>h ^ <unsigned long long>value) * 0x100000001b3ULL)


cdef long thread_count(object num_threads) except -2:
    """The threads of a call, as ``_threads.resolve_num_threads`` gives
    them; -1 for a value the general path must judge."""
    cdef long n
    if num_threads is None:
        n = _threads._default_call_threads
        if n == 0:
            # OpenMP's default, as resolve_num_threads(None) gives it.
            n = min(<long>openmp_max_threads(), max_threads)
        return n
    if type(num_threads) is int and num_threads >= 1:
        return resolve_num_threads(num_threads)
    return -1


cdef bint same_geometry(Entry entry, int op, object key, Py_hash_t h, cnp.ndarray src,
                        cnp.ndarray dst, intp src_align, intp out_align) noexcept:
    cdef int k
    cdef intp* dims = cnp.PyArray_DIMS(src)
    cdef intp* strides = cnp.PyArray_STRIDES(src)
    if (entry.hash != h or entry.op != op or entry.ndim != cnp.PyArray_NDIM(src)
            or <void*>entry.descr != <void*>cnp.PyArray_DESCR(src) or entry.src_align != src_align
            or entry.has_out != (dst is not None)):
        return False
    for k in range(entry.ndim):
        if entry.dims[k] != dims[k] or entry.strides[k] != strides[k]:
            return False
    if dst is not None:
        if entry.out_ndim != cnp.PyArray_NDIM(dst) or entry.out_align != out_align:
            return False
        for k in range(entry.out_ndim):
            if entry.out_strides[k] != cnp.PyArray_STRIDES(dst)[k]:
                return False
    if entry.args is key:
        return True
    try:
        return entry.args == key
    except Exception:
        return False


def call(int op, tuple args, x, out, num_threads, prepare):
    """``op``'s call on ``x`` with ``args`` (its arguments but ``x``,
    ``out`` and ``num_threads``), or None: the call needs the general path.
    ``prepare(x, *args)``: the operator's checked call (a
    ``_copy_plan.Prepared``), asked on the first call of a key."""
    global clock, n_hits
    cdef cnp.ndarray src, dst = None
    cdef cnp.PyArray_Descr* descr
    cdef Entry entry
    cdef int ndim, k, slot
    cdef long n_threads
    cdef intp src_align, out_align = 0
    cdef Py_hash_t h
    if not on or type(x) is not cnp.ndarray:
        return None
    src = <cnp.ndarray>x
    ndim = cnp.PyArray_NDIM(src)
    descr = cnp.PyArray_DESCR(src)
    if (ndim > MAX_DIMS or cnp.PyArray_SIZE(src) == 0 or cnp.PyArray_ITEMSIZE(src) == 0
            or PyDataType_FLAGCHK(descr, NPY_ITEM_HASOBJECT)):
        return None
    n_threads = thread_count(num_threads)
    if n_threads < 1:
        return None
    key = exact_key(args)
    if key is None:
        return None
    if out is not None:
        if type(out) is not cnp.ndarray:
            return None
        dst = <cnp.ndarray>out
        if cnp.PyArray_DESCR(dst) != descr or cnp.PyArray_NDIM(dst) > MAX_DIMS:
            return None
        out_align = <intp>(<size_t>cnp.PyArray_DATA(dst) & 15)
    src_align = <intp>(<size_t>cnp.PyArray_DATA(src) & 15)

    h = mix(PyObject_Hash(key), op)
    h = mix(h, <intp><void*>descr)
    h = mix(h, ndim * 32 + src_align)
    for k in range(ndim):
        h = mix(mix(h, cnp.PyArray_DIMS(src)[k]), cnp.PyArray_STRIDES(src)[k])
    if dst is not None:
        h = mix(h, 1 + out_align)
        for k in range(cnp.PyArray_NDIM(dst)):
            h = mix(h, cnp.PyArray_STRIDES(dst)[k])

    slot = <int>(<size_t>h & (SLOTS - 1))
    for k in (slot, slot ^ 1):
        found = slots[k]
        if found is None:
            continue
        entry = <Entry>found
        if not same_geometry(entry, op, key, h, src, dst, src_align, out_align):
            continue
        if not entry.program.is_current():
            # Planned under other engine settings (tune).
            slots[k] = None
            break
        if dst is None:
            FB_INCREF_DESCR(descr)
            result = PyArray_Empty(entry.result_ndim, entry.result_dims, descr, 0)
        else:
            for k in range(entry.result_ndim):
                if cnp.PyArray_DIMS(dst)[k] != entry.result_dims[k]:
                    return None
            if not is_clear_destination(dst, src):
                return None
            result = out
        clock += 1
        entry.used = clock
        n_hits += 1
        entry.program.run(<char*>cnp.PyArray_DATA(src),
                          <char*>cnp.PyArray_DATA(<cnp.ndarray>result), n_threads)
        return result
    return first_call(op, key, h, args, src, dst, n_threads, prepare, src_align, out_align)


cdef object first_call(int op, object key, Py_hash_t h, tuple args, cnp.ndarray src,
                       cnp.ndarray dst, long n_threads, object prepare, intp src_align,
                       intp out_align):
    """A key's first call: prepared, stored and run, or None (the general
    path decides, and words any error)."""
    global clock, n_stored
    cdef cnp.PyArray_Descr* descr = cnp.PyArray_DESCR(src)
    cdef Entry entry = Entry.__new__(Entry)
    cdef int k, slot
    try:
        prepared = prepare(src, *args)
        result_shape = prepared.result_shape
        if len(result_shape) > MAX_DIMS:
            return None
        entry.result_ndim = len(result_shape)
        for k in range(entry.result_ndim):
            entry.result_dims[k] = result_shape[k]
            if entry.result_dims[k] == 0:
                return None
    except Exception:
        # An error, or extents past an intp: the general path words it.
        return None
    if dst is None:
        FB_INCREF_DESCR(descr)
        try:
            result = PyArray_Empty(entry.result_ndim, entry.result_dims, descr, 0)
        except (MemoryError, ValueError):
            return None
    else:
        if cnp.PyArray_NDIM(dst) != entry.result_ndim:
            return None
        for k in range(entry.result_ndim):
            if cnp.PyArray_DIMS(dst)[k] != entry.result_dims[k]:
                return None
        if not is_clear_destination(dst, src):
            return None
        result = dst
    plans = prepared.plans(src, result)
    if plans is None:
        return None
    entry.program = CopyProgram(plans, src, result)
    entry.op = op
    entry.args = key
    entry.hash = h
    entry.descr = <object>descr
    entry.ndim = cnp.PyArray_NDIM(src)
    entry.src_align = src_align
    for k in range(entry.ndim):
        entry.dims[k] = cnp.PyArray_DIMS(src)[k]
        entry.strides[k] = cnp.PyArray_STRIDES(src)[k]
    entry.has_out = dst is not None
    entry.out_align = out_align
    if dst is not None:
        entry.out_ndim = cnp.PyArray_NDIM(dst)
        for k in range(entry.out_ndim):
            entry.out_strides[k] = cnp.PyArray_STRIDES(dst)[k]
    clock += 1
    entry.used = clock
    # The way not used longest gives way.
    slot = <int>(<size_t>h & (SLOTS - 1))
    if slots[slot] is not None and (slots[slot ^ 1] is None
                                    or (<Entry>slots[slot ^ 1]).used < (<Entry>slots[slot]).used):
        slot ^= 1
    slots[slot] = entry
    n_stored += 1
    entry.program.run(<char*>cnp.PyArray_DATA(src),
                      <char*>cnp.PyArray_DATA(<cnp.ndarray>result), <int>n_threads)
    return result


class enabled:
    """Whether front-door calls may take this path: ``enabled()`` says,
    ``enabled(False)`` switches it off (process-wide) and ``with
    enabled(False): ...`` puts the setting back afterwards. For tests,
    the stress harness and benchmarks."""

    def __init__(self, setting=None):
        global on
        self.before = on
        if setting is not None:
            on = bool(setting)

    def __bool__(self):
        return bool(on)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        global on
        on = self.before
        return False


def clear():
    """Forget every stored call."""
    cdef int k
    for k in range(SLOTS):
        slots[k] = None


def stats():
    """``{"hits": ..., "stored": ..., "entries": ...}``: calls run from the
    cache, calls prepared and stored, entries held now (for tests)."""
    return {"hits": n_hits, "stored": n_stored,
            "entries": sum([entry is not None for entry in slots])}
