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
writable, contiguous ndarray of the result's shape and of the result's
dtype object whose bytes lie apart from ``x``'s. Converting calls
(``dtype=``, ``scale=``, ``offset=``) are keyed by their result dtype (a
torch dtype as NumPy's) and the compact shapes (axes of step 0 cut to one
value) of a scale and an offset given as Python floats or ints or NumPy
arrays or scalars of a bool, integer or float dtype; their values are
converted to the compute type at each call and read by a stored
``_engine.ConvertProgram``. Every other call, each error and each empty
result included, gets None and takes the general path, which decides (and
words every message) alone.
:func:`enabled` switches this path off and on (tests and the stress
harness compare the two).
"""

cimport numpy as cnp
from cpython.dict cimport PyDict_Next, PyDict_Size
from cpython.object cimport Py_EQ, PyObject, PyObject_Hash, PyObject_RichCompareBool, PyTypeObject
from cpython.sequence cimport PySequence_Fast_GET_ITEM, PySequence_Fast_GET_SIZE
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE

from ._engine.core cimport ConvertProgram, CopyProgram
from ._engine.shared_state cimport FB_SHARED_ADD, FB_SHARED_LOAD, FB_SHARED_STORE
from ._memory cimport is_clear_destination

import numpy as np

from . import _engine, _threads

cnp.import_array()

ctypedef cnp.npy_intp intp

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
cdef object stored_plan_count = _engine.stored_plan_count
cdef Py_ssize_t STORED_PLANS_LIMIT = _engine.STORED_PLANS_LIMIT
cdef object openmp_max_threads = _engine.openmp_max_threads
# _threads._effective's cap on a call's threads (a constant of the process).
cdef long max_threads = _threads._MAX_THREADS

# Shared by every calling thread (_engine/shared_state.h: atomics where
# there is no GIL). A slot holds an Entry or None; an Entry does not change
# once it is in a slot (but its ``used``), and a thread that finds one
# keeps it alive by its own reference while it runs it.
cdef Py_ssize_t on = 1
cdef list slots = [None] * SLOTS
# Ticks once per call run from here or stored: an entry's ``used`` is the
# tick of its last call, and the hits are the ticks less the stores.
cdef Py_ssize_t clock = 0, n_stored = 0


cdef class Entry:
    """One prepared call: its key, the result's shape and the stored copy."""
    cdef int op, ndim, result_ndim, out_ndim
    cdef tuple args                 # stored_key of the arguments
    cdef object descr               # held, so that no other dtype takes its address
    cdef Py_hash_t hash
    cdef intp src_align, out_align
    cdef bint has_out
    cdef intp dims[MAX_DIMS]
    cdef intp strides[MAX_DIMS]
    cdef intp out_strides[MAX_DIMS]
    cdef intp result_dims[MAX_DIMS]
    cdef CopyProgram program        # a move's
    cdef ConvertProgram converting  # a converting call's (then program is None)
    cdef object result_descr        # held: the converting call's result dtype
    cdef int scale_ndim, offset_ndim    # -1: not given
    cdef intp scale_dims[MAX_DIMS]
    cdef intp offset_dims[MAX_DIMS]
    cdef Py_ssize_t used


# Marks a keyword dict in a stored key: (KEYWORDS, count, name, length, ...).
cdef object KEYWORDS = object()


cdef bint keyed_hash(tuple args, Py_hash_t* h) except -1:
    """Whether every argument is of a keyed type: an ``int``, a ``str``,
    None, a tuple or list of ``int``, or a dict of ``str`` to ``int`` (the
    keyword lengths); then ``h`` gets their hash, the same for a list and
    a tuple of the same entries, as their keys are. Equal values of these
    types make the same call; ``True``, ``2.0`` or ``np.int64(2)`` never
    equal a key."""
    cdef Py_hash_t hash = PyTuple_GET_SIZE(args)
    cdef Py_ssize_t i, n, position
    cdef PyObject* name
    cdef PyObject* length
    cdef PyObject* item
    cdef PyTypeObject* kind
    for i in range(PyTuple_GET_SIZE(args)):
        value = <object>PyTuple_GET_ITEM(args, i)
        kind = Py_TYPE(value)
        if kind == &PyLong_Type or kind == &PyUnicode_Type:
            hash = mix(hash, PyObject_Hash(value))
        elif value is None:
            hash = mix(hash, 0x4e4f)
        elif kind == &PyTuple_Type or kind == &PyList_Type:
            n = PySequence_Fast_GET_SIZE(value)
            hash = mix(hash, n + 0x7e57)
            for position in range(n):
                item = PySequence_Fast_GET_ITEM(value, position)
                if Py_TYPE(<object>item) != &PyLong_Type:
                    return False
                hash = mix(hash, PyObject_Hash(<object>item))
        elif kind == &PyDict_Type:
            hash = mix(hash, PyDict_Size(value) + 0x2a2a)
            position = 0
            while PyDict_Next(value, &position, &name, &length):
                if Py_TYPE(<object>name) != &PyUnicode_Type or Py_TYPE(<object>length) != &PyLong_Type:
                    return False
                hash = mix(mix(hash, PyObject_Hash(<object>name)), PyObject_Hash(<object>length))
        else:
            return False
    h[0] = hash
    return True


cdef tuple stored_key(tuple args):
    """Exact-typed ``args`` as a stored key: lists as tuples, a keyword
    dict inline as KEYWORDS, its size, then its names and lengths."""
    cdef list key = []
    for value in args:
        kind = type(value)
        if kind is list:
            key.append(tuple(<list>value))
        elif kind is dict:
            key.append(KEYWORDS)
            key.append(len(<dict>value))
            for name, length in (<dict>value).items():
                key.append(name)
                key.append(length)
        else:
            key.append(value)
    return tuple(key)


cdef bint same_entries(object stored, object value) except -1:
    """Two ints, strs or Nones, or a stored tuple and a tuple or list of
    ints, alike in type and value."""
    cdef Py_ssize_t i, n
    if stored is value:
        return True
    kind = Py_TYPE(value)
    if kind == &PyList_Type or kind == &PyTuple_Type:
        if Py_TYPE(stored) != &PyTuple_Type:
            return False
        n = PyTuple_GET_SIZE(stored)
        if n != PySequence_Fast_GET_SIZE(value):
            return False
        for i in range(n):
            if PyObject_RichCompareBool(<object>PyTuple_GET_ITEM(stored, i),
                                        <object>PySequence_Fast_GET_ITEM(value, i), Py_EQ) != 1:
                return False
        return True
    return Py_TYPE(stored) == kind and PyObject_RichCompareBool(stored, value, Py_EQ) == 1


cdef bint key_matches(tuple stored, tuple args) except -1:
    """Whether keyed ``args`` make the ``stored`` key (no allocation)."""
    cdef Py_ssize_t i, k = 0, n = PyTuple_GET_SIZE(stored), position
    cdef PyObject* name
    cdef PyObject* length
    for i in range(PyTuple_GET_SIZE(args)):
        value = <object>PyTuple_GET_ITEM(args, i)
        if k >= n:
            return False
        if Py_TYPE(value) == &PyDict_Type:
            if (k + 1 >= n or <object>PyTuple_GET_ITEM(stored, k) is not KEYWORDS
                    or <object>PyTuple_GET_ITEM(stored, k + 1) != PyDict_Size(value)):
                return False
            k += 2
            position = 0
            while PyDict_Next(value, &position, &name, &length):
                if (k + 1 >= n
                        or PyObject_RichCompareBool(<object>PyTuple_GET_ITEM(stored, k), <object>name,
                                                    Py_EQ) != 1
                        or PyObject_RichCompareBool(<object>PyTuple_GET_ITEM(stored, k + 1),
                                                    <object>length, Py_EQ) != 1):
                    return False
                k += 2
        else:
            if not same_entries(<object>PyTuple_GET_ITEM(stored, k), value):
                return False
            k += 1
    return k == n


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


cdef bint same_geometry(Entry entry, int op, tuple args, Py_hash_t h, cnp.ndarray src,
                        cnp.ndarray dst, intp src_align, intp out_align, object result_descr,
                        cnp.ndarray scale, cnp.ndarray offset) noexcept:
    cdef int k
    cdef intp* dims = cnp.PyArray_DIMS(src)
    cdef intp* strides = cnp.PyArray_STRIDES(src)
    if (entry.hash != h or entry.op != op or entry.ndim != cnp.PyArray_NDIM(src)
            or <void*>entry.descr != <void*>cnp.PyArray_DESCR(src) or entry.src_align != src_align
            or entry.has_out != (dst is not None) or entry.result_descr is not result_descr
            or not same_dims(entry.scale_ndim, entry.scale_dims, scale)
            or not same_dims(entry.offset_ndim, entry.offset_dims, offset)):
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
    try:
        return key_matches(entry.args, args)
    except Exception:
        return False


cdef inline bint same_dims(int ndim, const intp* dims, cnp.ndarray values) noexcept:
    """Whether ``values`` (None: not given) has the stored shape (ndim -1: none)."""
    cdef int k
    if values is None:
        return ndim == -1
    if ndim != cnp.PyArray_NDIM(values):
        return False
    for k in range(ndim):
        if dims[k] != cnp.PyArray_DIMS(values)[k]:
            return False
    return True


cdef inline Py_hash_t mix_dims(Py_hash_t h, cnp.ndarray values) noexcept:
    cdef int k
    if values is None:
        return mix(h, 0x6e6f6e65)
    h = mix(h, cnp.PyArray_NDIM(values))
    for k in range(cnp.PyArray_NDIM(values)):
        h = mix(h, cnp.PyArray_DIMS(values)[k])
    return h


cdef enum:
    # A scale's or offset's values as the convert stage reads them: the
    # compute type, C-contiguous (so their layout follows from their shape,
    # which keys the call), aligned; cast as np.asarray(values, dtype) casts.
    VALUES_FLAGS = cnp.NPY_ARRAY_C_CONTIGUOUS | cnp.NPY_ARRAY_ALIGNED | cnp.NPY_ARRAY_FORCECAST


def compute_values(values, compute):
    """A scale's or offset's values in the compute type ``compute``
    (numpy.float32 or numpy.float64), in their compact form (``compact``),
    C-contiguous and aligned: the layout a converting call's program reads
    (the general path's, _convert, and the cached calls')."""
    return values_in(values, cnp.NPY_FLOAT64 if compute is np.float64 else cnp.NPY_FLOAT32)


cdef inline cnp.ndarray values_in(object values, int compute):
    return cnp.PyArray_FROMANY(compact(values), compute, 0, 0, VALUES_FLAGS)


cdef object compact(object values):
    """``values`` read by its strides, not its shape: an axis of step 0
    holds one value (a broadcast view, ``np.broadcast_to``), so it is cut
    to that one, and leading axes of one value are dropped. The same
    values broadcast alike, and a broadcast view plans as its compact form
    (a (16, 3, 224, 224) view of a (3, 1, 1) scale: 3 values to convert,
    not 2.4 million, and one value a row, not lines)."""
    cdef cnp.ndarray a, view
    cdef int k, n = 0, ndim
    cdef bint cut = False
    cdef intp dims[MAX_DIMS]
    cdef intp strides[MAX_DIMS]
    if type(values) is not cnp.ndarray:
        return values
    a = <cnp.ndarray>values
    ndim = cnp.PyArray_NDIM(a)
    if ndim > MAX_DIMS:
        return values
    for k in range(ndim):
        dims[n] = cnp.PyArray_DIMS(a)[k]
        strides[n] = cnp.PyArray_STRIDES(a)[k]
        if strides[n] == 0 and dims[n] > 1:
            dims[n] = 1
            cut = True
        if n > 0 or dims[n] != 1:
            n += 1
    if n == ndim and not cut:
        return values
    FB_INCREF_DESCR(cnp.PyArray_DESCR(a))
    view = PyArray_NewFromDescr(&PyArray_Type, cnp.PyArray_DESCR(a), n, dims, strides,
                                cnp.PyArray_DATA(a), 0, NULL)
    cnp.set_array_base(view, a)
    return view


cdef bint broadcasts(object given, Entry entry) noexcept:
    """Whether ``given`` (a scale or offset as the call passed it)
    broadcasts to the entry's result: the key holds its compact shape
    (``compact``), which a wrong one may share."""
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
    """Whether a scale or offset is of a kind the cache takes: a Python
    float or int, or a NumPy array or scalar of a bool, integer or float
    dtype (the general path judges, and words the errors for, the rest)."""
    kind = type(values)
    if kind is float or kind is int:
        return True
    if kind is cnp.ndarray or isinstance(values, np.generic):
        return values.dtype.kind in "biuf"
    return False


def call(int op, tuple args, x, out, num_threads, prepare, convert=None):
    """``op``'s call on ``x`` with ``args`` (its arguments but ``x``,
    ``out`` and ``num_threads``), or None: the call needs the general path.
    ``prepare(x, *args)``: the operator's checked call (a
    ``_strided_copy.Prepared``), asked on the first call of a key.
    ``convert``: the call's ``_convert.Convert`` (dtype, scale, offset), or
    None for a move; its result dtype and the compact shapes of its scale
    and offset are part of the key, and their values are read at each
    call."""
    cdef cnp.ndarray src, dst = None, scale = None, offset = None
    cdef object scale_given = None, offset_given = None
    cdef cnp.PyArray_Descr* descr
    cdef Entry entry
    cdef int ndim, k, slot, compute
    cdef long n_threads
    cdef intp src_align, out_align = 0
    cdef Py_hash_t h
    if not FB_SHARED_LOAD(&on) or type(x) is not cnp.ndarray:
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
    if not keyed_hash(args, &h):
        return None
    result_descr = None
    if convert is not None:
        dtype, scale_given, offset_given = convert
        if dtype is None:
            result_descr = <object>descr
        elif type(dtype) is np.dtype:
            result_descr = dtype
        else:
            try:
                result_descr = np.dtype(dtype)
            except Exception:
                # A torch dtype as NumPy's (_convert.result_dtype); the
                # general path words any error.
                try:
                    result_descr = converts().result_dtype(dtype)
                except Exception:
                    return None
        if scale_given is not None or offset_given is not None:
            # The compute type with a scale or an offset (convert.h).
            compute = (cnp.NPY_FLOAT64 if (<cnp.dtype>result_descr).type_num == cnp.NPY_FLOAT64
                       else cnp.NPY_FLOAT32)
            try:
                if scale_given is not None:
                    if not real_values(scale_given):
                        return None
                    scale = values_in(scale_given, compute)
                if offset_given is not None:
                    if not real_values(offset_given):
                        return None
                    offset = values_in(offset_given, compute)
            except Exception:
                return None
            if ((scale is not None and cnp.PyArray_NDIM(scale) > MAX_DIMS)
                    or (offset is not None and cnp.PyArray_NDIM(offset) > MAX_DIMS)):
                return None
        elif result_descr is <object>descr:
            # The source's own dtype, no scale, no offset: a move.
            convert = result_descr = None
    if out is not None:
        if type(out) is not cnp.ndarray:
            return None
        dst = <cnp.ndarray>out
        if (<void*>cnp.PyArray_DESCR(dst) != (<void*>descr if convert is None
                                               else <void*>result_descr)
                or cnp.PyArray_NDIM(dst) > MAX_DIMS):
            return None
        out_align = <intp>(<size_t>cnp.PyArray_DATA(dst) & 15)
    src_align = <intp>(<size_t>cnp.PyArray_DATA(src) & 15)

    h = mix(h, op)
    h = mix(h, <intp><void*>descr)
    h = mix(h, ndim * 32 + src_align)
    for k in range(ndim):
        h = mix(mix(h, cnp.PyArray_DIMS(src)[k]), cnp.PyArray_STRIDES(src)[k])
    if dst is not None:
        h = mix(h, 1 + out_align)
        for k in range(cnp.PyArray_NDIM(dst)):
            h = mix(h, cnp.PyArray_STRIDES(dst)[k])
    if convert is not None:
        h = mix_dims(mix_dims(mix(h, <intp><void*>result_descr), scale), offset)

    slot = <int>(<size_t>h & (SLOTS - 1))
    for k in (slot, slot ^ 1):
        found = slots[k]
        if found is None:
            continue
        entry = <Entry>found
        if not same_geometry(entry, op, args, h, src, dst, src_align, out_align, result_descr,
                             scale, offset):
            continue
        if not (entry.converting.is_current() if convert is not None
                else entry.program.is_current()):
            # Planned under other engine settings (tune).
            slots[k] = None
            break
        if convert is not None and not (broadcasts(scale_given, entry)
                                        and broadcasts(offset_given, entry)):
            return None
        if dst is None:
            result_type = <cnp.PyArray_Descr*>result_descr if convert is not None else descr
            FB_INCREF_DESCR(result_type)
            result = PyArray_Empty(entry.result_ndim, entry.result_dims, result_type, 0)
        else:
            for k in range(entry.result_ndim):
                if cnp.PyArray_DIMS(dst)[k] != entry.result_dims[k]:
                    return None
            if not is_clear_destination(dst, src):
                return None
            result = out
        FB_SHARED_STORE(&entry.used, FB_SHARED_ADD(&clock, 1) + 1)
        run_entry(entry, src, <cnp.ndarray>result, scale, offset, n_threads)
        return result
    return first_call(op, h, args, src, dst, n_threads, prepare, src_align, out_align, convert,
                      result_descr, scale, offset)


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


cdef object first_call(int op, Py_hash_t h, tuple args, cnp.ndarray src,
                       cnp.ndarray dst, long n_threads, object prepare, intp src_align,
                       intp out_align, object convert, object result_descr, cnp.ndarray scale,
                       cnp.ndarray offset):
    """A key's first call: prepared, stored and run, or None (the general
    path decides, and words any error)."""
    cdef cnp.PyArray_Descr* descr = cnp.PyArray_DESCR(src)
    cdef cnp.PyArray_Descr* result_type = descr
    cdef Entry entry = Entry.__new__(Entry)
    cdef int k, slot
    conversion = None
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
        if convert is not None:
            conversion = converts().check_conversion(src.dtype, result_shape, convert)
            if (converts().is_plain_move(src.dtype, convert)
                    or conversion.dtype is not result_descr):
                return None
            result_type = <cnp.PyArray_Descr*>result_descr
    except Exception:
        # An error, or extents past an intp: the general path words it.
        return None
    if dst is None:
        FB_INCREF_DESCR(result_type)
        try:
            result = PyArray_Empty(entry.result_ndim, entry.result_dims, result_type, 0)
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
    if stored_plan_count() >= STORED_PLANS_LIMIT:
        make_room()
    if convert is None:
        copies = prepared.copies(src, result)
        if copies is None:
            return None
        entry.program = CopyProgram(copies, src, result)
        entry.scale_ndim = entry.offset_ndim = -1
    else:
        program = converts().converting_copies(src, result, prepared.copies, conversion)
        if program is None:
            return None
        entry.converting = ConvertProgram(program, src.itemsize, result.itemsize,
                                          conversion.src_code, conversion.dst_code,
                                          scale is not None, offset is not None)
        entry.result_descr = result_descr
        store_dims(scale, &entry.scale_ndim, entry.scale_dims)
        store_dims(offset, &entry.offset_ndim, entry.offset_dims)
    entry.op = op
    entry.args = stored_key(args)
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
    entry.used = FB_SHARED_ADD(&clock, 1) + 1
    # The way not used longest gives way.
    slot = <int>(<size_t>h & (SLOTS - 1))
    first, second = slots[slot], slots[slot ^ 1]
    if first is not None and (second is None or used(second) < used(first)):
        slot ^= 1
    slots[slot] = entry
    FB_SHARED_ADD(&n_stored, 1)
    run_entry(entry, src, <cnp.ndarray>result, scale, offset, n_threads)
    return result


cdef inline void store_dims(cnp.ndarray values, int* ndim, intp* dims) noexcept:
    cdef int k
    ndim[0] = -1 if values is None else cnp.PyArray_NDIM(values)
    for k in range(ndim[0]):
        dims[k] = cnp.PyArray_DIMS(values)[k]


cdef object converting_module = None


cdef object converts():
    """fastblock._convert (imported at the first converting call: it
    imports this module)."""
    global converting_module
    if converting_module is None:
        from . import _convert
        converting_module = _convert
    return converting_module


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


def is_on():
    """Whether front-door calls may take this path now (``enabled``'s
    answer, cheaply: the converting calls' cache, _convert.fast_call, asks
    on every call)."""
    return bool(FB_SHARED_LOAD(&on))


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
