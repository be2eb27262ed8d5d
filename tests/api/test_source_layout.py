"""The Python side's layout: its import graph, Cython's imports and cimports
included, runs down the layers and has no cycle; no file is over 600 lines
and no function over 80.

The layers, top to bottom: the public modules at the top of fastblock/,
the operators (fastblock/_ops: front doors, prepare, the table, collate),
the call machinery (fastblock/_call: the fast path, the general path,
convert, checks, threads) and the engine (fastblock/_engine). A module may
import its own layer and those below it, never one above.
"""
import ast
import pathlib
import re

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "fastblock"
SOURCES = (".py", ".pyx", ".pxd", ".pxi")
# Layer by module prefix, top (0) to bottom; the rest of fastblock is the top.
LAYERS = {"fastblock._ops": 1, "fastblock._call": 2, "fastblock._engine": 3}
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80


def _source_files():
    return sorted(path for path in PACKAGE.rglob("*") if path.suffix in SOURCES
                  and "build" not in path.parts)


def _module_of(path: pathlib.Path) -> str:
    """The dotted module a source file belongs to (a .pxi: the module of its
    folder's package, where the including .pyx lies)."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    if path.suffix == ".pxi" or parts[-1] == "__init__":
        parts = parts[:-1]
        while path.suffix == ".pxi" and not (PACKAGE.parent.joinpath(*parts) / "__init__.py").exists():
            parts = parts[:-1]
    return ".".join(parts)


def _package_of(path: pathlib.Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).parent.parts)


def _is_module(name: str) -> bool:
    base = PACKAGE.parent.joinpath(*name.split("."))
    return base.is_dir() or any(base.with_suffix(s).exists() for s in (".py", ".pyx", ".pxd"))


def _resolve(package: str, level: int, module: str, names) -> list:
    """The fastblock modules that ``from <level dots><module> import names``
    (or ``import module`` for level 0) imports."""
    if level:
        base = package.split(".")[:len(package.split(".")) - level + 1]
        target = ".".join(base + ([module] if module else []))
    else:
        target = module
    if not target.startswith("fastblock"):
        return []
    found = [f"{target}.{name}" for name in names if _is_module(f"{target}.{name}")]
    return found if len(found) == len(names) and names else [target] + found


CYTHON_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+c?import[ \t]+([^#\n]*)"
                           r"|c?import[ \t]+([\w., \t]+))", re.M)


def _imports(path: pathlib.Path) -> set:
    """Every fastblock module ``path`` imports or cimports, anywhere in it."""
    package = _package_of(path)
    found = set()
    text = path.read_text()
    if path.suffix == ".py":
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom):
                found.update(_resolve(package, node.level, node.module or "",
                                      [a.name for a in node.names]))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    found.update(_resolve(package, 0, alias.name, []))
        return found
    for match in CYTHON_IMPORT.finditer(text):
        dots, module, names, plain = match.groups()
        if plain is not None:
            for name in plain.split(","):
                found.update(_resolve(package, 0, name.split(" as ")[0].strip(), []))
            continue
        if names.startswith("("):
            names = text[match.start(3):text.index(")", match.start(3))]
        names = [n.split(" as ")[0].strip(" ()\n") for n in names.split(",")]
        found.update(_resolve(package, len(dots), module, [n for n in names if n]))
    return found


def _layer(module: str) -> int:
    return max((layer for prefix, layer in LAYERS.items()
                if module == prefix or module.startswith(prefix + ".")), default=0)


def import_graph() -> dict:
    graph = {}
    for path in _source_files():
        module = _module_of(path)
        graph.setdefault(module, set()).update(_imports(path) - {module})
    return graph


def test_the_graph_sees_python_and_cython_imports():
    graph = import_graph()
    # A .py import, a .pyx import and cimport, a .pxi cimport.
    assert "fastblock._call.general" in graph["fastblock._call.fastpath"]
    assert "fastblock._call.memory" in graph["fastblock._call.fastpath"]
    assert "fastblock._engine.core" in graph["fastblock._call.fastpath"]
    assert "fastblock._engine.types" in graph["fastblock._engine"]
    assert "fastblock._call.fastpath" in graph["fastblock._ops.blocks"]


def test_no_import_goes_up_a_layer():
    upward = [f"{module} (layer {_layer(module)}) imports {target} (layer {_layer(target)})"
              for module, targets in import_graph().items() for target in sorted(targets)
              if _layer(target) < _layer(module)]
    assert not upward, "\n".join(upward)


def test_no_import_cycle():
    graph = import_graph()
    done, on_path = set(), []

    def visit(module):
        if module in on_path:
            cycle = on_path[on_path.index(module):] + [module]
            raise AssertionError("import cycle: " + " -> ".join(cycle))
        if module in done:
            return
        on_path.append(module)
        for target in sorted(graph.get(module, ())):
            visit(target)
        on_path.pop()
        done.add(module)

    for module in sorted(graph):
        visit(module)


CYTHON_DEF = re.compile(r"^(\s*)(?:async\s+def|def|cdef|cpdef)\s+[^=]*?(\w+)\s*\(")


def _cython_functions(lines):
    """``(name, first line, length)`` of each function of Cython source
    ``lines``: from its ``def`` to its last indented line (declarations
    without a body are none)."""
    for i, line in enumerate(lines):
        match = CYTHON_DEF.match(line)
        if not match or "class " in line.split("(")[0]:
            continue
        end = i
        while end < len(lines) and not lines[end].split("#")[0].rstrip().endswith(":"):
            if lines[end].split("#")[0].rstrip().endswith(")") and end > i or (
                    end == i and lines[end].rstrip().endswith((")", "noexcept", "nogil"))):
                break
            end += 1
        if end >= len(lines) or not lines[end].split("#")[0].rstrip().endswith(":"):
            continue
        indent, last = len(match.group(1)), end
        for k in range(end + 1, len(lines)):
            text = lines[k]
            if text.strip() and not text.lstrip().startswith("#"):
                if len(text) - len(text.lstrip()) <= indent:
                    break
                last = k
        yield match.group(2), i + 1, last - i + 1


def _functions(path: pathlib.Path):
    text = path.read_text()
    if path.suffix == ".py":
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield node.name, node.lineno, node.end_lineno - node.lineno + 1
    else:
        yield from _cython_functions(text.splitlines())


def test_no_file_over_600_lines():
    long = [f"{path.relative_to(PACKAGE.parent)}: {n} lines" for path in _source_files()
            for n in [len(path.read_text().splitlines())] if n > MAX_FILE_LINES]
    assert not long, "\n".join(long)


def test_no_function_over_80_lines():
    long = [f"{path.relative_to(PACKAGE.parent)}:{line} {name}: {n} lines"
            for path in _source_files() for name, line, n in _functions(path)
            if n > MAX_FUNCTION_LINES]
    assert not long, "\n".join(long)


def test_the_function_count_sees_cython():
    lengths = {name: n for name, _, n in _functions(PACKAGE / "_call" / "fastpath.pyx")}
    assert {"fast_call", "first_call", "operate", "run_stored"} <= set(lengths)
    assert 30 < lengths["fast_call"] <= MAX_FUNCTION_LINES and lengths["used"] == 2
