"""Line and branch coverage of the compiled engine, by source file of origin.

Run by ci/coverage.sh after the tests, in the instrumented scratch tree:

    python ci/coverage_report.py --tree TREE --gcno TREE/build/.../core.gcno --out DIR

It reads `gcov --json-format` for the engine's objects:

* fastblock/_engine/core.c, the C that Cython translated from _engine/core.pyx and its
  .pxi files: each line follows a comment `/* "fastblock/_engine/kernels/shuffle.pxi":123`
  naming the source line; the C lines up to the next such comment belong to
  that source line.
* The engine's C in fastblock/_engine/src, reported as itself: each .c file's own
  counters (its .gcda beside core's), and the headers' lines wherever
  they were compiled (the inline functions in core.c and in the .c
  files). A line of a header compiled into several objects counts once:
  reached if any object ran it, a branch taken if any object took it.

The engine figures count the lines of fastblock's own sources. Left out of
core.c's lines, as Cython boilerplate:
any C outside a function of fastblock's own (Cython's utility code, type
imports, module init), the argument-unpacking wrappers of def functions
(__pyx_pw_*) and their __defaults__, code mapped to View.MemoryView or to
numpy's .pxd, function entry and exit code, the error paths (from a
__pyx_L*_error label to the next source comment or the exit label), refnanny
lines, and the branches of the error checks themselves (a line holding
__PYX_ERR or `goto __pyx_L*_error`: the line counts, its branches do not).

Source-line figures count a .pyx/.pxi line as reached when any C line mapped
to it ran (the fused kernels have one C copy per item type); the C figures
count every copy. For the _engine/src files, source lines and C lines are the same.
"""
import argparse
import collections
import glob
import gzip
import json
import os
import re
import subprocess
import sys

MARKER = re.compile(r'^\s*/\* "([^"]+)":(\d+)\s*$')
ERROR_LABEL = re.compile(r"^\s*__pyx_L\d+_\w*error:")
EXIT_LABEL = re.compile(r"^\s*__pyx_L0:")
EXIT_CODE = "/* function exit code */"
ERROR_CHECK = re.compile(r"__PYX_ERR\(|goto __pyx_L\d+_\w*error\b")
REFNANNY = re.compile(r"^\s*(?:__Pyx_(?:RefNanny\w*|X?GOTREF|X?GIVEREF)\b[^;]*;\s*)+$")
# C functions in core.c that are Cython boilerplate even where a source
# comment maps their code to a fastblock line.
BOILERPLATE_FUNCTION = re.compile(
    r"^__pyx_pymod_|^__pyx_pw_|__defaults__|^__pyx_tp_|^__Pyx_|View_dot_MemoryView"
    r"|^__pyx_(?:array|memoryview|MemviewEnum)")
CYTHON_DEF = re.compile(r"^(?:cpdef|cdef|def)\b[^=(]*?\b(\w+)\s*\(")
INCLUDE = re.compile(r'^include\s+"([^"]+)"')
PACKAGE = "fastblock"
# Under PACKAGE: the engine's module (its .pyx, and the C Cython makes of
# it), and the folder of its hand-written C.
ENGINE = "_engine/core"
C_SOURCES = "_engine/src"


# --- sources -----------------------------------------------------------------

def source_order(tree):
    """The engine's source files in the order Cython reads them (includes
    expanded where they stand), as (path under PACKAGE, text lines) pairs."""
    seen, order = set(), []

    def visit(name):
        if name in seen:
            return
        seen.add(name)
        with open(os.path.join(tree, PACKAGE, name)) as f:
            lines = f.read().split("\n")
        order.append((name, lines))
        for line in lines:
            m = INCLUDE.match(line)
            if m:
                # An include names a file beside the one that includes it.
                visit(os.path.normpath(os.path.join(os.path.dirname(name), m.group(1))))

    visit(ENGINE + ".pyx")
    return order


def cython_functions(lines):
    """Function name of each Cython line (None at module level), 1-based."""
    names, current = [None] * (len(lines) + 1), None
    for n, line in enumerate(lines, 1):
        if line.strip() and not line[0].isspace() and not line.startswith("#"):
            m = CYTHON_DEF.match(line)
            current = m.group(1) if m else None
        names[n] = current
    return names


# --- gcov and the generated C ------------------------------------------------

def run_gcov(gcov, gcda, tree):
    """gcov's JSON record of one object's counters."""
    res = subprocess.run([gcov, "--json-format", "--stdout", "--branch-probabilities",
                          "--branch-counts", gcda], cwd=tree, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"gcov failed on {gcda}:\n{res.stderr}")
    return res.stdout


def read_gcov(gcov, gcno, tree, out):
    """The record of fastblock/_engine/core.c, and the records of the files in
    fastblock/_engine/src from every engine object (_engine and the _engine/src .c files),
    as a list of (name in _engine/src, record)."""
    gcda = gcno[:-len(".gcno")] + ".gcda"
    if not os.path.exists(gcda):
        sys.exit(f"no counters ({gcda}): did the tests load the instrumented engine?")
    # The objects' counters mirror the source tree under the build folder.
    build_package = gcda[:-len(ENGINE + ".gcda")]
    objects = [gcda] + sorted(glob.glob(os.path.join(build_package, C_SOURCES, "*.gcda")))
    texts = [run_gcov(gcov, path, tree) for path in objects]
    with gzip.open(os.path.join(out, "engine.gcov.json.gz"), "wt") as f:
        f.write("\n".join(texts))
    engine, c_records = None, []
    for text in texts:
        for entry in json.loads(text)["files"]:
            path = entry["file"].replace("\\", "/")
            if path.endswith(f"{PACKAGE}/{ENGINE}.c"):
                engine = entry
            elif f"{PACKAGE}/{C_SOURCES}/" in path:
                c_records.append((f"{C_SOURCES}/{path.rsplit('/', 1)[1]}", entry))
    if engine is None:
        sys.exit(f"gcov has no record of {PACKAGE}/{ENGINE}.c")
    return engine, c_records


def merge_c_records(c_records):
    """Per _engine/src file: {line: (count, branches taken, branches)} over every
    object that compiled it, and {line: function name}."""
    counts = collections.defaultdict(lambda: collections.defaultdict(list))
    functions = collections.defaultdict(dict)
    for name, entry in c_records:
        for rec in entry["lines"]:
            branches = [b["count"] > 0 for b in rec["branches"] if not b.get("throw")]
            counts[name][rec["line_number"]].append((rec["count"], branches))
        for fn in entry["functions"]:
            for k in range(fn["start_line"], fn["end_line"] + 1):
                functions[name][k] = fn.get("demangled_name", fn["name"])
    merged = {}
    for name, lines in counts.items():
        merged[name] = {}
        for k, copies in lines.items():
            count = sum(c for c, _ in copies)
            widths = {len(b) for _, b in copies}
            if len(widths) == 1:
                taken = [any(b[i] for _, b in copies) for i in range(widths.pop())]
            else:
                taken = max((b for _, b in copies), key=sum)
            merged[name][k] = (count, sum(taken), len(taken))
    return merged, functions


def attribute(c_lines, functions):
    """Map each C line (1-based) to ('src', file, line) or the name of what
    it is boilerplate for."""
    n = len(c_lines)
    func_of = [None] * (n + 2)
    for fn in sorted(functions, key=lambda f: f["start_line"] - f["end_line"]):
        for k in range(fn["start_line"], min(fn["end_line"], n) + 1):
            func_of[k] = fn["name"]
    where = [None] * (n + 2)
    state, prev_func = "outside", None
    k = 1
    while k <= n:
        text = c_lines[k - 1]
        func = func_of[k]
        if func != prev_func:
            state = "entry" if func else "outside"
            prev_func = func
        m = MARKER.match(text)
        if m:
            state = ("src", m.group(1), int(m.group(2)))
            while k <= n and "*/" not in c_lines[k - 1]:
                k += 1
            k += 1
            continue
        if EXIT_CODE in text or EXIT_LABEL.match(text):
            state = "exit"
        elif ERROR_LABEL.match(text):
            state = "error"
        where[k] = state if func else "outside"
        k += 1
    return where, func_of


# --- report --------------------------------------------------------------------

def pct(hit, total):
    return f"{100.0 * hit / total:5.1f}%" if total else "   -  "


def ranges(numbers, executable):
    """Group sorted unreached line numbers into ranges that no executable
    line outside the set interrupts; returns (first, last, count) triples."""
    out = []
    for n in numbers:
        if out:
            first, last, count = out[-1]
            if not any(k in executable for k in range(last + 1, n)):
                out[-1] = (first, n, count + 1)
                continue
        out.append((n, n, 1))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", required=True)
    ap.add_argument("--gcno", required=True)
    ap.add_argument("--gcov", default="gcov")
    ap.add_argument("--out", required=True)
    ap.add_argument("--top", type=int, default=25, help="unreached regions printed")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    record, c_records = read_gcov(args.gcov, os.path.abspath(args.gcno), args.tree, args.out)
    with open(os.path.join(args.tree, PACKAGE, ENGINE + ".c")) as f:
        c_lines = f.read().split("\n")
    sources = source_order(args.tree)
    files = [name for name, _ in sources]
    src_text = dict(sources)
    where, func_of = attribute(c_lines, record["functions"])

    total = collections.Counter()            # (file, kind) -> C lines / branches
    hit = collections.Counter()
    src_exec, src_hit = collections.defaultdict(set), collections.defaultdict(set)
    excluded = collections.Counter()
    excluded_branches = collections.Counter()
    # The C functions that hold code of fastblock's own.
    own_functions = {func_of[k] for k, w in enumerate(where)
                     if isinstance(w, tuple) and w[1].startswith(PACKAGE + "/")
                     and func_of[k] and not BOILERPLATE_FUNCTION.search(func_of[k])}
    for rec in record["lines"]:
        k = rec["line_number"]
        text = c_lines[k - 1] if k <= len(c_lines) else ""
        count = rec["count"]
        branches = [b for b in rec["branches"] if not b.get("throw")]
        w = where[k] if k < len(where) else None
        func = func_of[k] if k < len(func_of) else None
        if isinstance(w, tuple):
            kind, path, src_line = w
            name = path[len(PACKAGE) + 1:]
            if kind == "src" and (not path.startswith(PACKAGE + "/") or name not in src_text):
                excluded["View.MemoryView, numpy .pxd and other non-fastblock code"] += 1
                excluded_branches["View.MemoryView, numpy .pxd and other non-fastblock code"] += len(branches)
                continue
            if kind == "src" and func and BOILERPLATE_FUNCTION.search(func):
                label = ("module init" if func.startswith("__pyx_pymod_")
                         else "def argument-unpacking wrappers (__pyx_pw_*, __defaults__)")
                excluded[label] += 1
                excluded_branches[label] += len(branches)
                continue
            if kind == "src" and REFNANNY.match(text):
                excluded["refnanny lines"] += 1
                continue
            if kind == "src" and ERROR_CHECK.search(text):
                excluded_branches["error checks (__PYX_ERR / goto error) on counted lines"] += len(branches)
                branches = []
            total[name, "lines"] += 1
            total[name, kind] += 1
            hit[name, "lines"] += count > 0
            hit[name, kind] += count > 0
            total[name, "branches"] += len(branches)
            hit[name, "branches"] += sum(1 for b in branches if b["count"] > 0)
            src_exec[name].add(src_line)
            if count > 0:
                src_hit[name].add(src_line)
        else:
            label = {
                "outside": "Cython utility code, type imports (outside fastblock functions)",
                "entry": "function entry code (declarations, refnanny setup)",
                "exit": "function exit code",
                "error": "error paths (__pyx_L*_error: to exit)",
                None: "Cython utility code, type imports (outside fastblock functions)",
            }[w]
            if func and func.startswith("__pyx_pymod_"):
                label = "module init"
            elif func and func.startswith("__pyx_pw_"):
                label = "def argument-unpacking wrappers (__pyx_pw_*, __defaults__)"
            elif func not in own_functions:
                label = "Cython utility code, type imports (outside fastblock functions)"
            excluded[label] += 1
            excluded_branches[label] += len(branches)

    # The _engine/src files: their lines are the C lines.
    merged, c_function_names = merge_c_records(c_records)
    for name in sorted(merged):
        for k, (count, taken, n_branches) in merged[name].items():
            total[name, "lines"] += 1
            hit[name, "lines"] += count > 0
            total[name, "branches"] += n_branches
            hit[name, "branches"] += taken
            src_exec[name].add(k)
            if count > 0:
                src_hit[name].add(k)
        with open(os.path.join(args.tree, PACKAGE, name)) as fh:
            src_text[name] = fh.read().split("\n")
        files.append(name)

    lines_t = sum(total[f, "lines"] for f in files)
    lines_h = sum(hit[f, "lines"] for f in files)
    br_t = sum(total[f, "branches"] for f in files)
    br_h = sum(hit[f, "branches"] for f in files)
    s_t = sum(len(src_exec[f]) for f in files)
    s_h = sum(len(src_hit[f]) for f in files)
    headline = (f"engine C coverage: lines {pct(lines_h, lines_t).strip()} ({lines_h}/{lines_t}), "
                f"branches {pct(br_h, br_t).strip()} ({br_h}/{br_t})")

    out = []
    out.append(headline)
    out.append(f"engine source lines (.pyx/.pxi lines with code, any C copy run; _engine/src lines): "
               f"{pct(s_h, s_t).strip()} ({s_h}/{s_t})")
    out.append("")
    out.append(f"{'source file':<34} {'C lines':>20} {'C branches':>20} {'source lines':>20}")
    for f in files:
        out.append(
            f"{f:<34} {pct(hit[f, 'lines'], total[f, 'lines'])} {hit[f, 'lines']:>6}/{total[f, 'lines']:<6}"
            f" {pct(hit[f, 'branches'], total[f, 'branches'])} {hit[f, 'branches']:>6}/{total[f, 'branches']:<6}"
            f" {pct(len(src_hit[f]), len(src_exec[f]))} {len(src_hit[f]):>6}/{len(src_exec[f]):<6}")
    out.append(f"{'all':<34} {pct(lines_h, lines_t)} {lines_h:>6}/{lines_t:<6}"
               f" {pct(br_h, br_t)} {br_h:>6}/{br_t:<6} {pct(s_h, s_t)} {s_h:>6}/{s_t:<6}")
    out.append("(C lines and branches: for .pyx/.pxi files, core.c lines mapped to the file, a fused"
               " kernel once per item type; for the _engine/src files (fastblock/_engine/src), their own lines, counted"
               " once over every object that compiled them. A branch counts when taken at least once."
               " Source lines: lines with code, reached when any of their C ran.)")
    out.append("")
    out.append("Left out of the engine figures (executable C lines in core.c / their branches):")
    for label in sorted(set(excluded) | set(excluded_branches), key=lambda l: -excluded[l]):
        out.append(f"  {excluded[label]:>6} lines {excluded_branches[label]:>6} branches  {label}")

    # Unreached source lines, by file and function.
    details, regions = [], []
    for f in files:
        lines = src_text[f]
        if f in merged:
            fn_names = [c_function_names[f].get(n) for n in range(len(lines) + 1)]
        else:
            fn_names = cython_functions(lines)
        unreached = sorted(src_exec[f] - src_hit[f])
        if not unreached:
            continue
        by_fn = collections.defaultdict(list)
        for n in unreached:
            by_fn[fn_names[n] if n < len(fn_names) and fn_names[n] else "(module level)"].append(n)
        details.append(f"{f}: {len(unreached)} of {len(src_exec[f])} source lines unreached")
        for fn, nums in sorted(by_fn.items(), key=lambda kv: kv[1][0]):
            exec_in_fn = sum(1 for n in src_exec[f] if n < len(fn_names) and fn_names[n] == fn)
            rs = ranges(nums, src_exec[f])
            spans = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b, _ in rs)
            details.append(f"  {fn} ({len(nums)} of {exec_in_fn}): {spans}")
            for a, b, count in rs:
                regions.append((count, f, a, b, fn, lines[a - 1].strip()))
    regions.sort(key=lambda r: (-r[0], r[1], r[2]))

    top = [f"Largest unreached regions (source lines with code, of {len(regions)} regions):"]
    for count, f, a, b, fn, text in regions[:args.top]:
        span = f"{f}:{a}" if a == b else f"{f}:{a}-{b}"
        top.append(f"  {count:>3}  {span:<24} {fn:<28} {text[:60]}")

    report = out + [""] + top + ["", "Unreached source lines by file and function "
                                 "(unreached of lines with code):"] + details
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "report.txt"), "w") as fh:
        fh.write("\n".join(report) + "\n")
    print("\n".join(out + [""] + top))
    print(f"\n(full list of unreached lines by function: {os.path.join(args.out, 'report.txt')})")
    print(headline)


if __name__ == "__main__":
    main()
