"""Build script: compiles the Cython copy engine, with OpenMP where the compiler has it.

The package must build everywhere. If the C compiler cannot build and link a
small OpenMP program, the extension is compiled without ``-fopenmp``: Cython's
``prange`` then runs serially and ``fastblock`` reports one usable thread.
Set ``FASTBLOCK_NO_OPENMP=1`` to force that path, and ``FASTBLOCK_SANITIZE``
(for example ``address,undefined``) to build with sanitizers.
``FASTBLOCK_COVERAGE=1`` builds the engine for gcov (``-O0 --coverage`` in
place of ``-O3``, ``--coverage`` when linking; see ci/coverage.sh). Both
apply to the engine's C sources in fastblock/_engine/src as well.
"""
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

OPENMP_PROBE = r"""
#include <omp.h>
int main(void) {
    int n = 0;
    #pragma omp parallel reduction(+:n)
    n += 1;
    return n > 0 ? 0 : 1;
}
"""


def openmp_flags():
    """Return (compile_args, link_args) for OpenMP, or None if unavailable."""
    if os.environ.get("FASTBLOCK_NO_OPENMP"):
        return None
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    cc = cc.split()
    if sys.platform == "darwin":
        candidates = [(["-Xpreprocessor", "-fopenmp"], ["-lomp"])]
    else:
        candidates = [(["-fopenmp"], ["-fopenmp"])]
    tmp = tempfile.mkdtemp()
    try:
        src = os.path.join(tmp, "probe.c")
        with open(src, "w") as f:
            f.write(OPENMP_PROBE)
        for cflags, lflags in candidates:
            exe = os.path.join(tmp, "probe")
            cmd = cc + cflags + [src, "-o", exe] + lflags
            try:
                ok = subprocess.run(cmd, capture_output=True).returncode == 0
            except OSError:
                ok = False
            if ok:
                return cflags, lflags
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return None


# The engine's hand-written C (declared to Cython in fastblock/_engine/kernels_c.pxd):
# compiled with the engine's flags, and warned about as C (BuildExt).
ENGINE_C_DIR = os.path.join("fastblock", "_engine", "src")
ENGINE_C_SOURCES = sorted(
    os.path.join(ENGINE_C_DIR, name) for name in os.listdir(ENGINE_C_DIR) if name.endswith(".c"))
ENGINE_C_WARNINGS = ["-Wall", "-Wextra"]


# Compile the extensions side by side, one per core: the engine is most of
# the work (its C is one translation unit), the eleven others go beside it.
BUILD_JOBS = os.cpu_count() or 1


class BuildExt(build_ext):
    """build_ext that adds ENGINE_C_WARNINGS to the engine's own C files
    only (the C that Cython generates is not written to be -Wextra clean),
    and builds BUILD_JOBS extensions at a time unless told (``-j``)."""

    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:
            self.parallel = BUILD_JOBS

    def build_extensions(self):
        compile_one = getattr(self.compiler, "_compile", None)
        if self.compiler.compiler_type == "unix" and compile_one is not None:
            def compile_with_warnings(obj, src, ext, cc_args, extra_postargs, pp_opts):
                if os.path.normpath(src).startswith(ENGINE_C_DIR + os.sep):
                    extra_postargs = list(extra_postargs) + ENGINE_C_WARNINGS
                compile_one(obj, src, ext, cc_args, extra_postargs, pp_opts)
            self.compiler._compile = compile_with_warnings
        super().build_extensions()


def extensions():
    # -O3 lets the compiler vectorise the fixed-step (de-)interleave loops.
    # -falign-loops=64: the engine's tight item loops are a few instructions
    # long, and one that straddled a 64-byte code line ran up to 1.7 times
    # slower; any edit elsewhere in the engine can move a loop there.
    compile_args = ["-O3", "-falign-loops=64"]
    link_args = []
    omp = openmp_flags()
    if omp is None:
        print("fastblock: no OpenMP in this compiler; building single-threaded kernels", file=sys.stderr)
    else:
        compile_args += omp[0]
        link_args += omp[1]
    sanitize = os.environ.get("FASTBLOCK_SANITIZE")
    if sanitize:
        compile_args += [f"-fsanitize={sanitize}", "-fno-omit-frame-pointer", "-g", "-O1"]
        link_args += [f"-fsanitize={sanitize}"]
    if os.environ.get("FASTBLOCK_COVERAGE"):
        compile_args = ["-O0" if a == "-O3" else a for a in compile_args] + ["--coverage"]
        link_args += ["--coverage"]
    # The engine's layers are included into one module (fastblock/_engine/core.pyx).
    engine = Extension(
        "fastblock._engine.core",
        ["fastblock/_engine/core.pyx", *ENGINE_C_SOURCES],
        # fastblock/_engine/, so that kernels_c.pxd names the headers
        # "src/....h" (no generic name such as cpu.h on the search path).
        include_dirs=[numpy.get_include(), os.path.join("fastblock", "_engine")],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=compile_args,
        extra_link_args=link_args,
    )
    # The front doors are plain Python, compiled by Cython as well: a call on
    # a tiny array is mostly argument checking, and compiled it costs a
    # fraction of the interpreted time. The .py files stay the source.
    front_doors = [
        Extension(f"fastblock.{name}", [f"fastblock/{name}.py"], extra_compile_args=["-O2"])
        for name in ("_api", "_validate", "_strided_copy", "_layouts", "_execute", "_threads", "_interop",
                     "_rearrange", "_permute")
    ]
    # What the front doors read from the array structs: memory facts for the
    # out= checks, and every front door's repeated call run from a cache (the
    # fast path, which cimports the engine's stored programs).
    array_helpers = [
        Extension(f"fastblock.{name}", [f"fastblock/{name}.pyx"],
                  include_dirs=[numpy.get_include(), "fastblock"],
                  define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                  extra_compile_args=["-O2"])
        for name in ("_memory", "_fastpath")
    ]
    return cythonize(
        [engine, *front_doors, *array_helpers],
        nthreads=BUILD_JOBS,
        # Safe directives for every module: the compiled .py modules keep
        # Python semantics exactly (type hints are hints, not C types). The
        # engine turns off bounds checks, negative indexing and Python
        # division in its own header.
        compiler_directives={"language_level": 3, "embedsignature": True,
                             "annotation_typing": False},
    )


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildExt})
