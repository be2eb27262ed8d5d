"""Build script: compiles the Cython copy engine, with OpenMP where the compiler has it.

The package must build everywhere. If the C compiler cannot build and link a
small OpenMP program, the extension is compiled without ``-fopenmp``: Cython's
``prange`` then runs serially and ``fastblock`` reports one usable thread.
Set ``FASTBLOCK_NO_OPENMP=1`` to force that path, and ``FASTBLOCK_SANITIZE``
(for example ``address,undefined``) to build with sanitizers.
``FASTBLOCK_WERROR=1`` makes the engine C's warnings errors (ci/clang.sh).
``FASTBLOCK_COVERAGE=1`` builds the engine for gcov (``-O0 --coverage`` in
place of ``-O3``, ``--coverage`` when linking; see ci/coverage.sh). Both
apply to the engine's C sources in fastblock/_engine/src as well.
"""
import concurrent.futures
import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading

import numpy
from Cython import __version__ as cython_version
from Cython.Build import cythonize
from Cython.Build.Dependencies import create_dependency_tree
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


# Where macOS keeps libomp: Apple's clang has OpenMP's front end
# (-Xpreprocessor -fopenmp) but no run time. Homebrew's libomp is keg-only
# (not on the compiler's paths); conda's lies in the environment.
# FASTBLOCK_LIBOMP_PREFIX names another.
LIBOMP_PREFIXES = ("/opt/homebrew/opt/libomp", "/usr/local/opt/libomp")


def darwin_openmp_candidates():
    """(compile_args, link_args) to try on macOS: each libomp found, then
    the compiler's own paths."""
    prefixes = [os.environ.get("FASTBLOCK_LIBOMP_PREFIX"), os.environ.get("CONDA_PREFIX"),
                *LIBOMP_PREFIXES]
    candidates = [
        (["-Xpreprocessor", "-fopenmp", f"-I{prefix}/include"],
         [f"-L{prefix}/lib", "-lomp", f"-Wl,-rpath,{prefix}/lib"])
        for prefix in prefixes
        if prefix and os.path.isfile(os.path.join(prefix, "include", "omp.h"))]
    return candidates + [(["-Xpreprocessor", "-fopenmp"], ["-lomp"])]


def openmp_flags():
    """Return (compile_args, link_args) for OpenMP, or None if unavailable."""
    if os.environ.get("FASTBLOCK_NO_OPENMP"):
        return None
    if sys.platform == "win32" and not os.environ.get("CC"):
        # MSVC, setuptools' compiler on Windows, has OpenMP: -fopenmp
        # becomes /openmp:llvm there (msvc_args). Not probed: the probe
        # runs a Unix compiler's command line.
        return ["-fopenmp"], ["-fopenmp"]
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    cc = cc.split()
    if sys.platform == "darwin":
        candidates = darwin_openmp_candidates()
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
ENGINE_C_SOURCES, ENGINE_C_HEADERS = (
    sorted(os.path.join(ENGINE_C_DIR, name) for name in os.listdir(ENGINE_C_DIR) if name.endswith(suffix))
    for suffix in (".c", ".h"))
ENGINE_C_WARNINGS = ["-Wall", "-Wextra"] + (["-Werror"] if os.environ.get("FASTBLOCK_WERROR") else [])
# The counters that Python threads share (the engine and the fast path).
SHARED_STATE_HEADER = os.path.join("fastblock", "_engine", "shared_state.h")

# The modules of fastblock/_ops and fastblock/_call that stay interpreted:
# the packages' own, and two that run once, at import or per Dask graph
# (the docstrings' shared sections; fastblock.dask's chunk plans).
PLAIN_PYTHON = {"__init__", "docs", "chunks"}

# No debug information: Python's CFLAGS carry -g, which makes the build about
# 1.4 times slower (src/lanes.c: 70 s against 51 s) and the module larger,
# for the same machine code (.text identical with and without). The
# sanitizer build adds -g back after it.
NO_DEBUG_INFO = ["-g0"]


# Compile side by side, one compiler per core: the extensions, and within the
# engine its C files (src/lanes.c alone is about 50 s at -O3, the C Cython
# generates for core.pyx about 20 s, on the 2-core CI machine).
BUILD_JOBS = os.cpu_count() or 1
COMPILER_SLOTS = threading.BoundedSemaphore(BUILD_JOBS)

# Where an in-place or editable build notes what it built (build/ is ignored
# by git): one JSON file per extension, see BuildExt.reuse_inplace.
BUILD_NOTES_DIR = os.path.join("build", "fastblock-built")


def file_sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class BuildExt(build_ext):
    """build_ext that
    * adds ENGINE_C_WARNINGS to the engine's own C files only (the C that
      Cython generates is not written to be -Wextra clean);
    * builds BUILD_JOBS extensions at a time unless told (``-j``), compiles
      an extension's C files side by side, and runs at most BUILD_JOBS
      compilers at once;
    * in an in-place or editable build (``pip install -e .``, which builds
      into a fresh temporary directory every time), reuses the module
      already in the source tree when it is the one this build would make:
      the same bytes as the last build noted, made from files with the same
      contents, by the same compiler and flags, for the same Python, NumPy
      and Cython (build_facts). Any change rebuilds."""

    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:
            self.parallel = BUILD_JOBS

    def build_extensions(self):
        if self.compiler.compiler_type == "msvc":
            for ext in self.extensions:
                ext.extra_compile_args = msvc_args(ext.extra_compile_args or [])
                ext.extra_link_args = [a for a in ext.extra_link_args or [] if a != "-fopenmp"]
        compile_one = getattr(self.compiler, "_compile", None)
        if self.compiler.compiler_type == "unix" and compile_one is not None:
            def compile_with_warnings(obj, src, ext, cc_args, extra_postargs, pp_opts):
                if os.path.normpath(src).startswith(ENGINE_C_DIR + os.sep):
                    extra_postargs = list(extra_postargs) + ENGINE_C_WARNINGS
                with COMPILER_SLOTS:
                    compile_one(obj, src, ext, cc_args, extra_postargs, pp_opts)
            self.compiler._compile = compile_with_warnings
            self.compiler.compile = self.compile_side_by_side
        super().build_extensions()

    def compile_side_by_side(self, sources, output_dir=None, macros=None, include_dirs=None,
                             debug=False, extra_preargs=None, extra_postargs=None, depends=None):
        """CCompiler.compile with its files compiled on BUILD_JOBS threads
        (each waits for a free COMPILER_SLOTS slot)."""
        compiler = self.compiler
        macros, objects, extra_postargs, pp_opts, build = compiler._setup_compile(
            output_dir, macros, include_dirs, sources, depends, extra_postargs)
        cc_args = compiler._get_cc_args(pp_opts, debug, extra_preargs)

        def compile_object(obj):
            src, ext = build[obj]
            compiler._compile(obj, src, ext, cc_args, extra_postargs, pp_opts)

        with concurrent.futures.ThreadPoolExecutor(BUILD_JOBS) as pool:
            list(pool.map(compile_object, [obj for obj in objects if obj in build]))
        return objects

    def run(self):
        # setuptools' run clears self.inplace while it builds into build_lib,
        # then copies the modules into the source tree.
        self.into_tree = bool(self.inplace)
        super().run()

    def build_extension(self, ext):
        if self.into_tree and self.reuse_inplace(ext):
            return
        super().build_extension(ext)
        if self.into_tree:
            self.note_built(ext)

    def paths(self, ext):
        """(module in the source tree, module in build_lib, build note)."""
        filename = self.get_ext_filename(self.get_ext_fullname(ext.name))
        return (filename, os.path.join(self.build_lib, filename),
                os.path.join(BUILD_NOTES_DIR, ext.name + ".json"))

    def build_facts(self, ext):
        """What the module's bytes depend on: the contents of the project
        files it is made from (its Cython source and what that cimports or
        includes, by Cython's own dependency tree; its C files and headers),
        the versions of Python, NumPy and Cython, the compiler and flags."""
        cython_source = ext.cython_source
        generated_c = os.path.splitext(cython_source)[0] + ".c"
        inputs = {"setup.py", cython_source, *(ext.depends or []),
                  *(path for path in ext.sources if path != generated_c),
                  *create_dependency_tree().all_dependencies(cython_source)}
        # Files outside the project (NumPy's headers, Cython's and NumPy's
        # .pxd files; cythonize lists them in depends) go with their versions.
        inputs = sorted(path for path in inputs if not os.path.isabs(path))
        numpy_include = numpy.get_include()
        return {
            "python": sys.version,
            "numpy": numpy.__version__,
            "cython": cython_version,
            "compiler": list(self.compiler.compiler_so),
            "linker": list(self.compiler.linker_so),
            "compile_args": list(ext.extra_compile_args or []),
            "link_args": list(ext.extra_link_args or []),
            "macros": [list(m) for m in ext.define_macros or []],
            "include_dirs": ["<numpy>" if d == numpy_include else d for d in ext.include_dirs or []],
            "inputs": {path: file_sha256(path) for path in inputs},
        }

    def reuse_inplace(self, ext):
        inplace, built, note = self.paths(ext)
        try:
            with open(note) as f:
                noted = json.load(f)
            current = noted["facts"] == self.build_facts(ext) and noted["sha256"] == file_sha256(inplace)
        except (OSError, ValueError, KeyError):
            current = False
        if current:
            print(f"fastblock: {inplace} is up to date (its inputs and flags are those noted in {note})")
            self.mkpath(os.path.dirname(built))
            shutil.copy2(inplace, built)
        return current

    def note_built(self, ext):
        _, built, note = self.paths(ext)
        os.makedirs(BUILD_NOTES_DIR, exist_ok=True)
        with open(note, "w") as f:
            json.dump({"facts": self.build_facts(ext), "sha256": file_sha256(built)}, f, indent=1)


def msvc_args(args):
    """The GCC/clang compile flags as MSVC's (untested: docs/platforms.md).
    OpenMP by LLVM's run time (/openmp:llvm, Visual Studio 2019 16.9 and
    later: OpenMP 3.1 and unsigned loop indices, which Cython's prange
    needs); -O3 as /O2; MSVC contracts no multiply and add unless told
    (/fp:contract), as -ffp-contract=off asks. Flags MSVC has no
    counterpart for are dropped (-falign-loops, -g0)."""
    mapped = {"-O3": "/O2", "-O2": "/O2", "-fopenmp": "/openmp:llvm"}
    return [mapped[a] for a in args if a in mapped]


def extensions():
    # -O3 lets the compiler vectorise the fixed-step (de-)interleave loops.
    # -falign-loops=64: the engine's tight item loops are a few instructions
    # long, and one that straddled a 64-byte code line ran up to 1.7 times
    # slower; any edit elsewhere in the engine can move a loop there.
    # -ffp-contract=off: the convert stage's multiply and add are rounded
    # each on its own (src/convert.h), never fused.
    compile_args = ["-O3", "-falign-loops=64", "-ffp-contract=off", *NO_DEBUG_INFO]
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
        # The C files include these headers; Cython tracks its own .pxd/.pxi.
        depends=[*ENGINE_C_HEADERS, SHARED_STATE_HEADER],
    )
    # The operators and the call machinery are plain Python, compiled by
    # Cython as well: a call on a tiny array is mostly argument checking, and
    # compiled it costs a fraction of the interpreted time. The .py files
    # stay the source. Every module of the two folders is compiled (a new
    # operator's file too) but PLAIN_PYTHON's.
    python_modules = [
        Extension(f"fastblock.{folder}.{name[:-3]}", [f"fastblock/{folder}/{name}"],
                  extra_compile_args=["-O2", *NO_DEBUG_INFO])
        for folder in ("_ops", "_call")
        for name in sorted(os.listdir(os.path.join("fastblock", folder)))
        if name.endswith(".py") and name[:-3] not in PLAIN_PYTHON
    ]
    # What the call machinery reads from the array structs: memory facts for
    # the out= checks and a scale's compact values, and every front door's
    # repeated call run from a cache (the fast path, which cimports the
    # engine's stored programs).
    array_helpers = [
        Extension(f"fastblock._call.{name}", [f"fastblock/_call/{name}.pyx"],
                  include_dirs=[numpy.get_include(), "fastblock", os.path.join("fastblock", "_engine")],
                  define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                  extra_compile_args=["-O2", *NO_DEBUG_INFO], depends=[SHARED_STATE_HEADER])
        for name in ("memory", "fastpath")
    ]
    sources = {ext.name: ext.sources[0] for ext in [engine, *python_modules, *array_helpers]}
    built = cythonize(
        [engine, *python_modules, *array_helpers],
        nthreads=BUILD_JOBS,
        # Safe directives for every module: the compiled .py modules keep
        # Python semantics exactly (type hints are hints, not C types). The
        # engine turns off bounds checks, negative indexing and Python
        # division in its own header. Every module is declared safe without
        # the GIL (free-threaded CPython): what Python threads share is
        # guarded (docs/threads.md), and importing fastblock leaves the GIL off.
        compiler_directives={"language_level": 3, "embedsignature": True,
                             "annotation_typing": False, "freethreading_compatible": True},
    )
    for ext in built:
        ext.cython_source = sources[ext.name]
    return built


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildExt})
