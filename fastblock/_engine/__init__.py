"""The copy engine behind every operator: one strided N-D copy, planned,
scheduled over OpenMP threads and run by SIMD kernels (docs/engine.md).

Its layers are compiled into one extension module, ``core`` (core.pyx
includes them): ``operators/`` (the operators as copies), ``plan/`` (a
copy's axes into a plan), ``run/`` (the plan's blocks over the threads, and
stored programs), ``kernels/`` (the Cython loops) and ``src/`` (their C).
This package is core's Python face: :func:`copy`, :func:`describe`,
:func:`tune` and the rest."""
from .core import *  # noqa: F401,F403
