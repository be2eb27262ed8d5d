"""The copy ceiling itself: ``np.copyto`` between preallocated, already-written
arrays, on one thread and split over every core (NumPy releases the GIL), so
the dashboard shows what this machine's memory can do at each size."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .common import SIZE_BYTES, interleaved_medians, thread_count


class CopyCeiling:
    param_names = ["size", "threads"]
    params = [list(SIZE_BYTES), [1, "all"]]
    timeout = 120.0

    def setup(self, size, threads):
        nbytes = SIZE_BYTES[size]
        self.nbytes = nbytes
        self.src = np.ones(nbytes, dtype=np.uint8)
        self.dst = np.ones(nbytes, dtype=np.uint8)  # written: pages mapped
        n = thread_count(threads)
        if n == 1:
            self.copy = lambda: np.copyto(self.dst, self.src)
            self.pool = None
        else:
            self.pool = ThreadPoolExecutor(n)
            bounds = [nbytes * i // n // 64 * 64 for i in range(n)] + [nbytes]
            chunks = [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:])]
            self.copy = lambda: list(self.pool.map(
                lambda s: np.copyto(self.dst[s], self.src[s]), chunks))

    def teardown(self, size, threads):
        if self.pool is not None:
            self.pool.shutdown()

    def time_copy(self, size, threads):
        self.copy()

    def track_gbps(self, size, threads):
        seconds = interleaved_medians({"copy": self.copy})["copy"]
        return self.nbytes / seconds / 1e9

    track_gbps.unit = "GB/s"
