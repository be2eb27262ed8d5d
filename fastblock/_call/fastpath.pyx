# cython: boundscheck=False, wraparound=False
"""Every front door's call: run from a cache of prepared calls, else by the
general path (``general``).

On a tiny input the general path's argument handling (Python objects,
names looked up in any case, shape rules, plans) costs more than the copy.
A call here is keyed by its operator, its arguments, the input's shape,
strides, dtype and alignment and the layout of ``out=``; the first call of
a key is prepared by the operator's own checks (its ``Operator.prepare``:
shapes from ``layouts``, the copy as the operator describes it), its copy is planned
by the engine once and stored (``_engine.CopyProgram``), and later calls of
the key do only the lookup, the result's allocation (or ``out=``'s checks)
and the engine run.

Taken here: ``x`` an ndarray of a plain-data dtype with items, every
argument an ``int``, a ``str``, None, or a tuple, list or keyword dict of
``int`` (exact types: ``True``, ``2.0`` or ``np.int64(2)`` never equal a
key), ``num_threads`` None or a positive ``int``, and ``out`` None or a
writable, contiguous ndarray of the result's shape and of the result's
dtype object whose bytes lie apart from ``x``'s. Converting calls
(``dtype=``, ``scale=``, ``offset=``) are keyed by their result dtype (a
torch dtype as NumPy's) and the compact shapes (axes of step 0 cut to one
value) of a scale and an offset given as Python floats or ints or NumPy
arrays or scalars of a bool, integer or float dtype; their values are
converted to the compute type at each call and read by a stored
``_engine.ConvertProgram`` in the compute type the first call's
``convert.Conversion`` took from the engine. Every other call, each error
and each empty result included, takes the general path, which decides
(and words every message) alone.
:func:`enabled` switches this path off and on (tests and the stress
harness compare the two).
"""

cimport numpy as cnp
from cpython.dict cimport PyDict_Next, PyDict_Size
from cpython.object cimport Py_EQ, PyObject, PyObject_Hash, PyObject_RichCompareBool, PyTypeObject
from cpython.sequence cimport PySequence_Fast_GET_ITEM, PySequence_Fast_GET_SIZE
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE

from .._engine.core cimport ConvertProgram, CopyProgram
from .._engine.shared_state cimport FB_SHARED_ADD, FB_SHARED_LOAD, FB_SHARED_STORE
from .memory cimport MAX_DIMS, compact_shape, intp, is_clear_destination, values_in

import numpy as np

from .. import _engine
from . import threads
from .convert import Convert, check_conversion, converting_copies, is_plain_move, result_dtype
from .general import general

cnp.import_array()

cdef extern from "numpy/arrayobject.h":
    # Steals a reference to descr.
    object PyArray_Empty(int nd, intp* dims, cnp.PyArray_Descr* descr, int fortran)
    # Steals a reference to descr.
    object PyArray_NewFromDescr(PyTypeObject* subtype, cnp.PyArray_Descr* descr, int nd,
                                intp* dims, intp* strides, void* data, int flags, PyObject* obj)
    PyTypeObject PyArray_Type
    bint PyDataType_FLAGCHK(cnp.PyArray_Descr* descr, int flags)
    enum:
        NPY_ITEM_HASOBJECT

cdef extern from *:
    """
    #define FB_INCREF_DESCR(d) Py_INCREF((PyObject*)(d))
    """
    void FB_INCREF_DESCR(cnp.PyArray_Descr* descr)

cdef extern from "Python.h":
    PyTypeObject PyLong_Type, PyUnicode_Type, PyTuple_Type, PyList_Type, PyDict_Type
    PyTypeObject* Py_TYPE(object o)

cdef enum:
    # Entries, two ways to a hash; a power of two. (Ranks kept in a key,
    # of the input, the result, a scale and an offset: MAX_DIMS; higher
    # ones take the general path.)
    SLOTS = 512

cdef object resolve_num_threads = threads.resolve_num_threads
cdef object stored_plan_count = _engine.stored_plan_count
cdef Py_ssize_t STORED_PLANS_LIMIT = _engine.STORED_PLANS_LIMIT
cdef object openmp_max_threads = _engine.openmp_max_threads
# threads._effective's cap on a call's threads (a constant of the process).
cdef long max_threads = threads._MAX_THREADS

# Shared by every calling thread (_engine/shared_state.h: atomics where
# there is no GIL). A slot holds an Entry or None; an Entry does not change
# once it is in a slot (but its ``used``), and a thread that finds one
# keeps it alive by its own reference while it runs it.
cdef Py_ssize_t on = 1
cdef list slots = [None] * SLOTS
# Ticks once per call run from here or stored: an entry's ``used`` is the
# tick of its last call, and the hits are the ticks less the stores.
cdef Py_ssize_t clock = 0, n_stored = 0


include "key.pxi"


cdef class Entry:
    """One prepared call: its key, the result's shape and the stored copy."""
    cdef Key key
    cdef tuple held                 # what the key's pointers point to, kept alive
    cdef int result_ndim
    cdef intp result_dims[MAX_DIMS]
    cdef CopyProgram program        # a move's
    cdef ConvertProgram converting  # a converting call's (then program is None)
    cdef int compute                # its scale's and offset's type number
    cdef Py_ssize_t used


cdef inline long thread_count(object num_threads) except -2:
    """The threads of a call, as ``threads.resolve_num_threads`` gives
    them; -1 for a value the general path must judge."""
    cdef long n
    if num_threads is None:
        n = threads._default_call_threads
        if n == 0:
            # OpenMP's default, as resolve_num_threads(None) gives it.
            n = min(<long>openmp_max_threads(), max_threads)
        return n
    if type(num_threads) is int and num_threads >= 1:
        return resolve_num_threads(num_threads)
    return -1


cdef bint broadcasts(object given, Entry entry) noexcept:
    """Whether ``given`` (a scale or offset as the call passed it)
    broadcasts to the entry's result: the key holds its compact shape,
    which a wrong one may share."""
    cdef cnp.ndarray a
    cdef int k, lead
    if type(given) is not cnp.ndarray:
        return True
    a = <cnp.ndarray>given
    lead = entry.result_ndim - cnp.PyArray_NDIM(a)
    if lead < 0:
        return False
    for k in range(cnp.PyArray_NDIM(a)):
        if cnp.PyArray_DIMS(a)[k] != 1 and cnp.PyArray_DIMS(a)[k] != entry.result_dims[lead + k]:
            return False
    return True


cdef bint real_values(object values) except -1:
    """Whether a scale or offset is of a kind the cache takes: None, a
    Python float or int, or a NumPy array or scalar of a bool, integer or
    float dtype (the general path judges, and words the errors for, the
    rest)."""
    kind = type(values)
    if values is None or kind is float or kind is int:
        return True
    if kind is cnp.ndarray or isinstance(values, np.generic):
        return values.dtype.kind in "biuf"
    return False


cdef object result_dtype_of(object dtype, object scale, object offset, cnp.ndarray src):
    """A converting call's result dtype; None for a plain move (the
    source's own dtype, no scale, no offset); False for a call the general
    path takes (values of another kind, a dtype to be judged)."""
    if not (real_values(scale) and real_values(offset)):
        return False
    if dtype is None:
        result = <object>cnp.PyArray_DESCR(src)
    elif type(dtype) is np.dtype:
        result = dtype
    else:
        try:
            result = np.dtype(dtype)
        except Exception:
            try:
                # A torch dtype as NumPy's.
                result = result_dtype(dtype)
            except Exception:
                return False
    if scale is None and offset is None and result is <object>cnp.PyArray_DESCR(src):
        return None
    return result


def operate(op, x, tuple args, out, num_threads, dtype, scale, offset):
    """The call of front door ``op`` (its ``Operator``) on ``x`` with
    ``args`` (its arguments but ``x``, ``out``, ``num_threads``, ``dtype``,
    ``scale`` and ``offset``): from the cache where it can, else by the
    general path."""
    if dtype is None and scale is None and offset is None:
        result = fast_call(op, args, x, out, num_threads, None)
        return general(op, x, args, out, num_threads, None) if result is None else result
    convert = Convert(dtype, scale, offset)
    result = fast_call(op, args, x, out, num_threads, convert)
    return general(op, x, args, out, num_threads, convert) if result is None else result


def call(op, tuple args, x, out, num_threads, convert=None):
    """``op``'s call from the cache, or None: the call needs the general
    path (``operate`` without the general path; for tests). ``convert``:
    the call's ``convert.Convert``, or None for a move."""
    return fast_call(op, args, x, out, num_threads, convert)


cdef object fast_call(object op, tuple args, object x, object out, object num_threads,
                      object convert):
    """``op``'s call, run from its stored entry or prepared, stored and
    run; None: the general path decides. A converting call's result dtype
    and the compact shapes of its scale and offset are part of the key,
    and their values are read at each call."""
    cdef cnp.ndarray src, dst = None
    cdef cnp.PyArray_Descr* descr
    cdef long n_threads
    cdef Key key
    scale = offset = None
    if not FB_SHARED_LOAD(&on) or type(x) is not cnp.ndarray:
        return None
    src = <cnp.ndarray>x
    descr = cnp.PyArray_DESCR(src)
    if (cnp.PyArray_NDIM(src) > MAX_DIMS or cnp.PyArray_SIZE(src) == 0
            or cnp.PyArray_ITEMSIZE(src) == 0 or PyDataType_FLAGCHK(descr, NPY_ITEM_HASOBJECT)):
        return None
    n_threads = thread_count(num_threads)
    if n_threads < 1:
        return None
    result_descr = None
    if convert is not None:
        dtype, scale, offset = convert
        result_descr = result_dtype_of(dtype, scale, offset, src)
        if result_descr is False:
            return None
        if result_descr is None:
            convert = None
    if out is not None:
        if type(out) is not cnp.ndarray:
            return None
        dst = <cnp.ndarray>out
        if (<void*>cnp.PyArray_DESCR(dst) != (<void*>descr if convert is None
                                               else <void*>result_descr)
                or cnp.PyArray_NDIM(dst) > MAX_DIMS):
            return None
    if not read_key(&key, op, args, src, dst, result_descr, scale, offset):
        return None
    entry = stored_entry(&key)
    if entry is None:
        return first_call(&key, args, src, dst, n_threads, convert)
    return run_stored(<Entry>entry, src, dst, n_threads, scale, offset)


cdef inline object stored_entry(const Key* key):
    """The entry stored for ``key`` and planned under the engine's current
    settings, or None (an entry planned under others, by ``tune``, is
    dropped)."""
    cdef int way, k, slot = <int>(<size_t>key.hash & (SLOTS - 1))
    cdef Entry entry
    for way in range(2):
        k = slot ^ way
        found = slots[k]
        if found is None or not same_key(&(<Entry>found).key, key):
            continue
        entry = <Entry>found
        if not (entry.program.is_current() if entry.converting is None
                else entry.converting.is_current()):
            slots[k] = None
            return None
        return entry
    return None


cdef object run_stored(Entry entry, cnp.ndarray src, cnp.ndarray dst, long n_threads,
                       object scale_given, object offset_given):
    """A stored entry's call, with the scale and offset the call gave: the
    result (or ``out``), or None."""
    cdef cnp.ndarray scale = None, offset = None
    cdef cnp.PyArray_Descr* result_type = cnp.PyArray_DESCR(src)
    if entry.converting is not None:
        if not (broadcasts(scale_given, entry) and broadcasts(offset_given, entry)):
            return None
        try:
            if scale_given is not None:
                scale = values_in(scale_given, entry.compute)
            if offset_given is not None:
                offset = values_in(offset_given, entry.compute)
        except Exception:
            return None
        result_type = <cnp.PyArray_Descr*>entry.key.result_descr
    result = result_array(entry, src, dst, result_type)
    if result is None:
        return None
    FB_SHARED_STORE(&entry.used, FB_SHARED_ADD(&clock, 1) + 1)
    run_entry(entry, src, <cnp.ndarray>result, scale, offset, n_threads)
    return result


cdef inline object result_array(Entry entry, cnp.ndarray src, cnp.ndarray dst,
                                cnp.PyArray_Descr* result_type):
    """The call's result: a new array of the entry's shape and
    ``result_type``, or ``dst`` where it has that shape and shares no
    memory with ``src``; None where neither can be (the general path then
    raises the error or allocates)."""
    cdef int k
    if dst is None:
        FB_INCREF_DESCR(result_type)
        try:
            return PyArray_Empty(entry.result_ndim, entry.result_dims, result_type, 0)
        except (MemoryError, ValueError):
            return None
    if cnp.PyArray_NDIM(dst) != entry.result_ndim:
        return None
    for k in range(entry.result_ndim):
        if cnp.PyArray_DIMS(dst)[k] != entry.result_dims[k]:
            return None
    if not is_clear_destination(dst, src):
        return None
    return dst


cdef int run_entry(Entry entry, cnp.ndarray src, cnp.ndarray result, cnp.ndarray scale,
                   cnp.ndarray offset, long n_threads) except -1:
    if entry.converting is None:
        entry.program.run(<char*>cnp.PyArray_DATA(src), <char*>cnp.PyArray_DATA(result),
                          <int>n_threads)
    else:
        entry.converting.run(<const char*>cnp.PyArray_DATA(src), <char*>cnp.PyArray_DATA(result),
                             NULL if scale is None else <const char*>cnp.PyArray_DATA(scale),
                             NULL if offset is None else <const char*>cnp.PyArray_DATA(offset),
                             <int>n_threads)
    return 0


cdef object prepared_entry(const Key* key, tuple args, cnp.ndarray src, object convert):
    """``(entry, prepared call, conversion)`` of a key's first call, the
    entry with its key and result shape; None for a call the general path
    takes (an error, extents past an intp, an empty result)."""
    cdef Entry entry = Entry.__new__(Entry)
    cdef int k
    conversion = None
    try:
        prepared = (<object>key.op).prepare(src, *args)
        result_shape = prepared.result_shape
        if len(result_shape) > MAX_DIMS:
            return None
        entry.result_ndim = len(result_shape)
        for k in range(entry.result_ndim):
            entry.result_dims[k] = result_shape[k]
            if entry.result_dims[k] == 0:
                return None
        if convert is not None:
            conversion = check_conversion(src.dtype, result_shape, convert)
            if (is_plain_move(src.dtype, convert)
                    or <PyObject*>conversion.dtype != key.result_descr):
                return None
            entry.compute = conversion.compute.num
    except Exception:
        return None
    entry.held = store_key(&entry.key, key, args)
    return entry, prepared, conversion


cdef object first_call(const Key* key, tuple args, cnp.ndarray src, cnp.ndarray dst,
                       long n_threads, object convert):
    """A key's first call: prepared, stored and run, or None (the general
    path decides, and words any error)."""
    cdef Entry entry
    cdef cnp.PyArray_Descr* result_type = cnp.PyArray_DESCR(src)
    cdef int slot
    found = prepared_entry(key, args, src, convert)
    if found is None:
        return None
    entry, prepared, conversion = found
    if key.result_descr != NULL:
        result_type = <cnp.PyArray_Descr*>key.result_descr
    result = result_array(entry, src, dst, result_type)
    if result is None:
        return None
    if stored_plan_count() >= STORED_PLANS_LIMIT:
        make_room()
    if not store_program(entry, prepared, conversion, src, <cnp.ndarray>result):
        return None
    entry.used = FB_SHARED_ADD(&clock, 1) + 1
    # The way not used longest gives way.
    slot = <int>(<size_t>key.hash & (SLOTS - 1))
    first, second = slots[slot], slots[slot ^ 1]
    if first is not None and (second is None or used(second) < used(first)):
        slot ^= 1
    slots[slot] = entry
    FB_SHARED_ADD(&n_stored, 1)
    run_entry(entry, src, <cnp.ndarray>result,
              None if conversion is None else conversion.scale,
              None if conversion is None else conversion.offset, n_threads)
    return result


cdef bint store_program(Entry entry, object prepared, object conversion, cnp.ndarray src,
                        cnp.ndarray result) except -1:
    """The entry's copy planned between ``src`` and ``result``; False where
    no axes describe it (NCHW_VECT_C's own copies)."""
    if conversion is None:
        copies = prepared.copies(src, result)
        if copies is None:
            return False
        entry.program = CopyProgram(copies, src, result)
        return True
    program = converting_copies(src, result, prepared.copies, conversion)
    if program is None:
        return False
    entry.converting = ConvertProgram(program, src.itemsize, result.itemsize,
                                      conversion.src_code, conversion.dst_code,
                                      conversion.scale is not None, conversion.offset is not None)
    return True


cdef void make_room():
    """Forget the quarter of the entries used longest ago: their stored
    plans go with them, and newer calls get theirs (the engine stores a
    bounded number)."""
    cdef list ticks = sorted([used(entry) for entry in slots if entry is not None])
    cdef Py_ssize_t cutoff
    cdef int k
    if not ticks:
        return
    cutoff = ticks[len(ticks) // 4]
    for k in range(SLOTS):
        entry = slots[k]
        if entry is not None and used(entry) <= cutoff:
            slots[k] = None


cdef inline Py_ssize_t used(object entry) noexcept:
    return FB_SHARED_LOAD(&(<Entry>entry).used)


class enabled:
    """Whether front-door calls may take this path: ``enabled()`` says,
    ``enabled(False)`` switches it off (process-wide) and ``with
    enabled(False): ...`` puts the setting back afterwards. For tests,
    the stress harness and benchmarks."""

    def __init__(self, setting=None):
        self.before = FB_SHARED_LOAD(&on)
        if setting is not None:
            FB_SHARED_STORE(&on, bool(setting))

    def __bool__(self):
        return bool(FB_SHARED_LOAD(&on))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        FB_SHARED_STORE(&on, self.before)
        return False


def clear():
    """Forget every stored call."""
    cdef int k
    for k in range(SLOTS):
        slots[k] = None


def stats():
    """``{"hits": ..., "stored": ..., "entries": ...}``: calls run from the
    cache, calls prepared and stored, entries held now (for tests)."""
    cdef Py_ssize_t stored = FB_SHARED_LOAD(&n_stored)
    return {"hits": FB_SHARED_LOAD(&clock) - stored, "stored": stored,
            "entries": sum([entry is not None for entry in slots])}
