"""Memory between inaccessible pages, for tests of kernels that must not
read or write a byte past their arrays (Linux: mprotect through ctypes)."""
import ctypes
import mmap

import numpy as np
import pytest


class Guarded:
    """``nbytes`` readable bytes between two inaccessible pages, placed at
    the start of the readable memory or at its end."""

    def __init__(self, nbytes: int, at_end: bool):
        page = mmap.PAGESIZE
        size = -(-nbytes // page) * page
        self.mapping = mmap.mmap(-1, size + 2 * page,
                                 flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        whole = np.frombuffer(self.mapping, np.uint8)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        for start in (whole.ctypes.data, whole.ctypes.data + page + size):
            if libc.mprotect(start, page, 0) != 0:
                pytest.skip(f"mprotect failed: errno {ctypes.get_errno()}")
        first = page + (size - nbytes if at_end else 0)
        self.bytes = whole[first:first + nbytes]

    def array(self, shape, dtype) -> np.ndarray:
        return self.bytes.view(dtype).reshape(shape)
