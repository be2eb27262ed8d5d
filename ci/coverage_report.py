"""Line and branch coverage of the compiled engine, by source file of origin.

Run by ci/coverage.sh after the tests, in the instrumented scratch tree:

    python ci/coverage_report.py --tree TREE --gcno TREE/build/.../_engine.gcno --out DIR

It reads `gcov --json-format` for fastblock/_engine.c and maps each generated
C line back to where it came from:

* C that Cython translated from _engine.pyx and its .pxi files follows a
  comment `/* "fastblock/_shuffle.pxi":123` naming the source line; the C
  lines up to the next such comment belong to that source line.
* The C embedded in the `cdef extern from *:` strings is copied into
  _engine.c verbatim: each string's lines are found there by their text and
  map one to one.

The engine figures count only those lines. Left out, as Cython boilerplate:
any C outside a function of fastblock's own (Cython's utility code, type
imports, module init), the argument-unpacking wrappers of def functions
(__pyx_pw_*) and their __defaults__, code mapped to View.MemoryView or to
numpy's .pxd, function entry and exit code, the error paths (from a
__pyx_L*_error label to the next source comment or the exit label), refnanny
lines, and the branches of the error checks themselves (a line holding
__PYX_ERR or `goto __pyx_L*_error`: the line counts, its branches do not).

Source-line figures count a .pyx/.pxi line as reached when any C line mapped
to it ran (the fused kernels have one C copy per item type); the C figures
count every copy.
"""
import argparse
import collections
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
# C functions in _engine.c that are Cython boilerplate even where a source
# comment maps their code to a fastblock line.
BOILERPLATE_FUNCTION = re.compile(
    r"^__pyx_pymod_|^__pyx_pw_|__defaults__|^__pyx_tp_|^__Pyx_|View_dot_MemoryView"
    r"|^__pyx_(?:array|memoryview|MemviewEnum)")
CYTHON_DEF = re.compile(r"^(?:cpdef|cdef|def)\b[^=(]*?\b(\w+)\s*\(")
INCLUDE = re.compile(r'^include\s+"([^"]+)"')
PACKAGE = "fastblock"


# --- sources -----------------------------------------------------------------

def source_order(tree):
    """The engine's source files in the order Cython reads them (includes
    expanded where they stand), as (name, text lines) pairs."""
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
                visit(m.group(1))

    visit("_engine.pyx")
    return order


def embedded_blocks(lines):
    """(first line number, text lines) of each `cdef extern from *` string."""
    blocks, i = [], 0
    while i < len(lines):
        if re.match(r"^\s*cdef extern from \*\s*:", lines[i]):
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j < len(lines) and lines[j].strip().startswith('"""'):
                first = lines[j].strip()[3:]
                body, k = [], j + 1
                if first.strip():
                    body.append(first)
                    start = j + 1
                else:
                    start = j + 2
                while k < len(lines) and '"""' not in lines[k]:
                    body.append(lines[k])
                    k += 1
                tail = lines[k].split('"""')[0] if k < len(lines) else ""
                if tail.strip():
                    body.append(tail)
                blocks.append((start, body))
                i = k
        i += 1
    return blocks


def strip_c_comments(lines):
    """The lines with comments, strings and character literals blanked."""
    out, in_comment = [], False
    for line in lines:
        res, i = [], 0
        while i < len(line):
            if in_comment:
                end = line.find("*/", i)
                if end < 0:
                    i = len(line)
                else:
                    in_comment, i = False, end + 2
                continue
            c = line[i]
            if line.startswith("/*", i):
                in_comment, i = True, i + 2
            elif line.startswith("//", i):
                break
            elif c in "\"'":
                j = i + 1
                while j < len(line) and line[j] != c:
                    j += 2 if line[j] == "\\" else 1
                res.append(c + c)
                i = j + 1
            else:
                res.append(c)
                i += 1
        out.append("".join(res))
    return out


def c_functions(body):
    """Function name of each line of an embedded C block (None outside)."""
    code = strip_c_comments(body)
    names = [None] * len(body)
    depth, header, owner, first, directive = 0, [], None, 0, False
    for n, line in enumerate(code):
        # Preprocessor lines (and their continuations) are skipped: a macro's
        # braces are not the code's.
        if directive or line.lstrip().startswith("#"):
            directive = line.rstrip().endswith("\\")
            if depth == 0:
                header = []
            continue
        for c in line + "\n":
            if depth == 0:
                if c == "{":
                    text = "".join(ch for _, ch in header)
                    text = re.sub(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)", " ", text)
                    m = re.search(r"(\w+)\s*\(", text)
                    owner = None
                    if m and not re.match(r"\s*(typedef|struct|union|enum)\b", text) \
                            and "=" not in text[:m.start()]:
                        owner = m.group(1)
                    first = next((ln for ln, ch in header if not ch.isspace()), n)
                    depth, header = 1, []
                elif c in ";}":
                    header = []
                else:
                    header.append((n, c))
            elif c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0 and owner:
                    for k in range(first, n + 1):
                        names[k] = owner
    return names


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

def read_gcov(gcov, gcno, tree, out):
    gcda = gcno[:-len(".gcno")] + ".gcda"
    if not os.path.exists(gcda):
        sys.exit(f"no counters ({gcda}): did the tests load the instrumented engine?")
    res = subprocess.run([gcov, "--json-format", "--stdout", "--branch-probabilities",
                          "--branch-counts", gcda], cwd=tree, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"gcov failed:\n{res.stderr}")
    with gzip.open(os.path.join(out, "engine.gcov.json.gz"), "wt") as f:
        f.write(res.stdout)
    data = json.loads(res.stdout)
    for entry in data["files"]:
        if entry["file"].replace("\\", "/").endswith(f"{PACKAGE}/_engine.c"):
            return entry
    sys.exit("gcov has no record of fastblock/_engine.c")


def attribute(c_lines, functions, sources):
    """Map each C line (1-based) to ('src', file, line), ('embedded', file,
    line), or the name of what it is boilerplate for."""
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
    # The embedded C, found by its text, in the order Cython copied it. The
    # strings are Python strings: a backslash at the end of a line (a C macro
    # continued) joins it to the next one, so those come out as one C line,
    # mapped to the first of them.
    stripped = [normal(line) for line in c_lines]
    cursor, missing = 0, []
    for name, lines in sources:
        for start, body in embedded_blocks(lines):
            joined, origin = [], []
            for i, line in enumerate(body):
                if joined and joined_open:
                    joined[-1] += line
                else:
                    joined.append(line)
                    origin.append(start + i)
                joined_open = (len(line) - len(line.rstrip("\\"))) % 2 == 1
            want = [normal(line) for line in joined]
            while want and not want[-1]:
                want.pop()
            pos = find_block(stripped, want, cursor)
            if pos is None:
                pos = find_block(stripped, want, 0)
            if pos is None:
                missing.append(f"{name}:{start}")
                continue
            for i in range(len(want)):
                where[pos + i + 1] = ("embedded", name, origin[i])
            cursor = pos + len(want)
    return where, func_of, missing


def normal(line):
    """A line without white space and backslashes (how Cython writes a
    string's escapes is no concern here)."""
    return re.sub(r"[\s\\]", "", line)


def find_block(stripped, want, start):
    if not want:
        return None
    first = want[0]
    for pos in range(start, len(stripped) - len(want) + 1):
        if stripped[pos] == first and stripped[pos:pos + len(want)] == want:
            return pos
    return None


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

    record = read_gcov(args.gcov, os.path.abspath(args.gcno), args.tree, args.out)
    with open(os.path.join(args.tree, PACKAGE, "_engine.c")) as f:
        c_lines = f.read().split("\n")
    sources = source_order(args.tree)
    files = [name for name, _ in sources]
    src_text = dict(sources)
    where, func_of, missing = attribute(c_lines, record["functions"], sources)

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
            name = os.path.basename(path)
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
    out.append(f"engine source lines (.pyx/.pxi lines with code, any C copy run): "
               f"{pct(s_h, s_t).strip()} ({s_h}/{s_t})")
    out.append("")
    out.append(f"{'source file':<14} {'C lines':>20} {'C branches':>20} {'source lines':>20}"
               f" {'embedded C lines':>18}")
    for f in files:
        out.append(
            f"{f:<14} {pct(hit[f, 'lines'], total[f, 'lines'])} {hit[f, 'lines']:>6}/{total[f, 'lines']:<6}"
            f" {pct(hit[f, 'branches'], total[f, 'branches'])} {hit[f, 'branches']:>6}/{total[f, 'branches']:<6}"
            f" {pct(len(src_hit[f]), len(src_exec[f]))} {len(src_hit[f]):>6}/{len(src_exec[f]):<6}"
            f" {hit[f, 'embedded']:>8}/{total[f, 'embedded']:<6}")
    out.append(f"{'all':<14} {pct(lines_h, lines_t)} {lines_h:>6}/{lines_t:<6}"
               f" {pct(br_h, br_t)} {br_h:>6}/{br_t:<6} {pct(s_h, s_t)} {s_h:>6}/{s_t:<6}"
               f" {sum(hit[f, 'embedded'] for f in files):>8}/{sum(total[f, 'embedded'] for f in files):<6}")
    out.append("(C lines and branches: _engine.c lines mapped to the file, a fused kernel once per item"
               " type; a branch counts when taken at least once. Source lines: lines with code, reached"
               " when any of their C ran. Embedded C lines: the part of the C lines from `cdef extern"
               " from *` strings.)")
    out.append("")
    out.append("Left out of the engine figures (executable C lines in _engine.c / their branches):")
    for label in sorted(set(excluded) | set(excluded_branches), key=lambda l: -excluded[l]):
        out.append(f"  {excluded[label]:>6} lines {excluded_branches[label]:>6} branches  {label}")
    if missing:
        out.append(f"  embedded C strings not found in _engine.c (not counted): {', '.join(missing)}")

    # Unreached source lines, by file and function.
    details, regions = [], []
    for f in files:
        lines = src_text[f]
        fn_names = cython_functions(lines)
        for start, body in embedded_blocks(lines):
            for i, name in enumerate(c_functions(body)):
                fn_names[start + i] = name if name else "(embedded C, file scope)"
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
