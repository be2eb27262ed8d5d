# The fast path's key (included by fastpath.pyx): one structure, Key, for
# hashing a call (read_key), comparing it with a stored one (same_key) and
# storing it (store_key). Its arguments are keyed by value and exact type
# (keyed_hash, key_matches), and stored as a tuple (stored_key).

cdef struct Key:
    # One call's key, hashed (read_key), compared (same_key) and stored (an
    # Entry's) as one. Its objects are borrowed: the call's own, or those
    # its Entry holds.
    Py_hash_t hash
    PyObject* op                # the Operator
    PyObject* args              # the call's arguments, or their stored_key
    PyObject* descr             # by address: no other dtype takes it while held
    PyObject* result_descr      # a converting call's result dtype; NULL: a move
    int ndim, out_ndim          # out_ndim -1: no out=
    intp src_align, out_align   # the data pointers modulo 16
    intp dims[MAX_DIMS]
    intp strides[MAX_DIMS]
    intp out_strides[MAX_DIMS]
    int scale_ndim, offset_ndim     # their compact shapes; -1: not given
    intp scale_dims[MAX_DIMS]
    intp offset_dims[MAX_DIMS]


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


cdef inline Py_hash_t mix_dims(Py_hash_t h, int ndim, const intp* dims) noexcept:
    cdef int k
    h = mix(h, ndim)
    for k in range(ndim):
        h = mix(h, dims[k])
    return h


cdef bint read_values_shape(object values, int* ndim, intp* dims) noexcept:
    """A scale's or offset's part of a key: its compact shape
    (``memory.compact_shape``) into ``ndim`` and ``dims``, ``ndim`` -1 for
    None; False for a rank past MAX_DIMS."""
    cdef intp strides[MAX_DIMS]
    if values is None:
        ndim[0] = -1
    elif type(values) is cnp.ndarray:
        if cnp.PyArray_NDIM(<cnp.ndarray>values) > MAX_DIMS:
            return False
        ndim[0] = compact_shape(<cnp.ndarray>values, dims, strides)
    else:
        ndim[0] = 0     # a Python or NumPy scalar
    return True


cdef inline bint read_key(Key* key, object op, tuple args, cnp.ndarray src, cnp.ndarray dst,
                   object result_descr, object scale, object offset) except -1:
    """Fill ``key`` with the call's and hash it; False where the call has no
    key (arguments of other types, ranks past MAX_DIMS)."""
    cdef int k
    cdef Py_hash_t h
    if not keyed_hash(args, &h):
        return False
    key.op, key.args = <PyObject*>op, <PyObject*>args
    key.descr = <PyObject*>cnp.PyArray_DESCR(src)
    key.ndim = cnp.PyArray_NDIM(src)
    key.src_align = <intp>(<size_t>cnp.PyArray_DATA(src) & 15)
    h = mix(mix(mix(h, <intp>key.op), <intp>key.descr), key.ndim * 32 + key.src_align)
    for k in range(key.ndim):
        key.dims[k] = cnp.PyArray_DIMS(src)[k]
        key.strides[k] = cnp.PyArray_STRIDES(src)[k]
        h = mix(mix(h, key.dims[k]), key.strides[k])
    key.out_ndim = -1
    if dst is not None:
        key.out_ndim = cnp.PyArray_NDIM(dst)
        key.out_align = <intp>(<size_t>cnp.PyArray_DATA(dst) & 15)
        h = mix(h, 1 + key.out_align)
        for k in range(key.out_ndim):
            key.out_strides[k] = cnp.PyArray_STRIDES(dst)[k]
            h = mix(h, key.out_strides[k])
    key.result_descr = NULL
    key.scale_ndim = key.offset_ndim = -1
    if result_descr is not None:
        key.result_descr = <PyObject*>result_descr
        if not (read_values_shape(scale, &key.scale_ndim, key.scale_dims)
                and read_values_shape(offset, &key.offset_ndim, key.offset_dims)):
            return False
        h = mix(h, <intp>key.result_descr)
        h = mix_dims(mix_dims(h, key.scale_ndim, key.scale_dims), key.offset_ndim,
                     key.offset_dims)
    key.hash = h
    return True


cdef inline bint same_dims(int ndim, const intp* a, const intp* b) noexcept:
    cdef int k
    for k in range(ndim):
        if a[k] != b[k]:
            return False
    return True


cdef inline bint same_key(const Key* stored, const Key* key) noexcept:
    """Whether a stored key is the call's ``key``."""
    if (stored.hash != key.hash or stored.op != key.op or stored.descr != key.descr
            or stored.ndim != key.ndim or stored.src_align != key.src_align
            or stored.out_ndim != key.out_ndim or stored.result_descr != key.result_descr
            or stored.scale_ndim != key.scale_ndim or stored.offset_ndim != key.offset_ndim):
        return False
    if (not same_dims(key.ndim, stored.dims, key.dims)
            or not same_dims(key.ndim, stored.strides, key.strides)
            or not same_dims(key.scale_ndim, stored.scale_dims, key.scale_dims)
            or not same_dims(key.offset_ndim, stored.offset_dims, key.offset_dims)):
        return False
    if key.out_ndim >= 0 and (stored.out_align != key.out_align or not same_dims(
            key.out_ndim, stored.out_strides, key.out_strides)):
        return False
    try:
        return key_matches(<tuple>stored.args, <tuple>key.args)
    except Exception:
        return False


cdef tuple store_key(Key* stored, const Key* key, tuple args):
    """The call's ``key`` (of ``args``) into ``stored``; returns what the
    stored key points to, for its holder to keep alive."""
    stored_args = stored_key(args)
    stored[0] = key[0]
    stored.args = <PyObject*>stored_args
    return (<object>key.op, stored_args, <object>key.descr,
            None if key.result_descr == NULL else <object>key.result_descr)
