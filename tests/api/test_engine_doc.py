"""docs/engine.md stays true to the code: every file it names exists, and
every function, class or setting it names in code spans is defined in
fastblock's sources (Python, Cython or C)."""
import os
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "engine.md"
SOURCE_SUFFIXES = (".py", ".pyx", ".pxi", ".pxd", ".pyi", ".c", ".h")

FILE = re.compile(r"(?<![\w.])[\w*][\w/.*-]*\.(?:py|pyx|pxi|pxd|pyi|c|h|sh|md)\b")
# A name in a code span: an identifier, maybe dotted, maybe called.
NAME = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:\(.*\))?$")


_FILES = None


def _doc_text():
    return DOC.read_text()


def _code_spans(text):
    return re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))


def _repo_files():
    global _FILES
    if _FILES is None:
        _FILES = _list_repo_files()
    return _FILES


def _list_repo_files():
    skipped = {".git", "build", "__pycache__", "results", "env", "html"}
    files = []
    for folder, subfolders, names in os.walk(ROOT):
        subfolders[:] = [d for d in subfolders if d not in skipped and not d.startswith(".venv")]
        base = pathlib.Path(folder).relative_to(ROOT)
        files.extend((base / name).as_posix() for name in names)
    return files


def named_files():
    return sorted(set(FILE.findall(_doc_text())))


def named_functions():
    """The code spans that name code: an identifier with an underscore, a
    dot or a call, or a CamelCase one (not an instruction, a dtype or a
    number)."""
    names = set()
    for span in _code_spans(_doc_text()):
        span = span.strip()
        if not NAME.match(span) or FILE.fullmatch(span.split("(")[0]):
            continue
        name = span.split("(")[0]
        if name.startswith(("np.", "numpy.")):
            continue
        if "_" in name or "." in name or "(" in span or re.fullmatch(r"[A-Z][a-z]+[A-Z]\w*", name):
            names.add(name)
    return sorted(names)


_SOURCE_LINES = None


def _sources() -> list:
    """fastblock's Python, Cython and C sources; not the C that Cython
    generates from a .pyx beside it (380,000 lines of a build's output,
    naming every Cython definition again)."""
    return [path for path in sorted((ROOT / "fastblock").rglob("*"))
            if path.suffix in SOURCE_SUFFIXES
            and not (path.suffix == ".c" and path.with_suffix(".pyx").exists())]


def _source_lines() -> list:
    """Every line of fastblock's sources."""
    global _SOURCE_LINES
    if _SOURCE_LINES is None:
        _SOURCE_LINES = [line for path in _sources()
                         for line in path.read_text(errors="replace").splitlines()]
    return _SOURCE_LINES


def _defined(name: str) -> bool:
    n = re.escape(name)
    patterns = [
        rf"\b(?:def|cdef|cpdef|class|struct|enum|ctypedef)\b[^\n(=:]*\b{n}\b",   # Python, Cython
        rf"^[A-Za-z_][\w \t*]*\b{n}\s*\(",                                      # a C function
        rf"#\s*define\s+{n}\b",                                                # a C macro
        rf"^\s*[A-Za-z_][\w \t*]*\b{n}\s*(?:\[[^\]]*\])?\s*;",                   # a C field
        rf"^\s*[A-Za-z_][\w.]*[ \t*]+{n}\s*(?:\[[^\]]*\])?\s*(?:#.*)?$",            # a Cython field
        rf"^\s*{n}\s*[:=]",                                                    # a name bound
        rf"\(\s*\"{n}\"",                                                      # a SETTINGS row
    ]
    lines = [line for line in _source_lines() if name in line]
    return any(re.search(p, line) for p in patterns for line in lines)


@pytest.mark.parametrize("name", named_files())
def test_every_named_file_exists(name):
    files = _repo_files()
    if "*" in name:
        pattern = re.compile(r"(^|/)" + re.escape(name).replace(r"\*", r"[^/]*") + "$")
        assert any(pattern.search(f) for f in files), name
    else:
        assert any(f == name or f.endswith("/" + name) for f in files), name


@pytest.mark.parametrize("name", named_functions())
def test_every_named_function_is_defined(name):
    qualifier, _, last = name.rpartition(".")
    if (ROOT / (name.replace(".", "/") + ".py")).exists():
        return      # a module (fastblock.dask)
    assert _defined(last), f"docs/engine.md names {name}; fastblock defines no {last}"
    if qualifier:
        module = qualifier.split(".")[-1].lstrip("_")
        modules = {p.stem.lstrip("_") for p in _sources()} | {"engine", "fb", "fastblock"}
        assert module in modules or _defined(module), f"{name}: no module or class {qualifier}"


def test_the_doc_names_what_it_should():
    """The names read from the doc include the call's steps (so the two
    tests above check them)."""
    functions = set(named_functions())
    assert {"fastpath.operate", "read_key", "first_call", "store_program", "run_plan",
            "copy_parts", "build_plan", "CopyProgram.run"} <= functions
    assert {"_call/key.pxi", "run/program.pxi", "_ops/blocks.py"} <= set(named_files())
