"""What plain copies cost on this machine, and what it is: the floors the
speed targets are read against (``targets``), and the share of an array in
transparent huge pages (target 2 depends on it)."""
from __future__ import annotations

import platform
import threading
from typing import Dict, Optional

import numpy as np

import fastblock as fb

from .source import timing

# The large speed cases' result size (targets 1 and 2), and the floors' copy size.
LARGE = 64 << 20


def cpu_name() -> str:
    """The processor's model name (``/proc/cpuinfo`` where there is one)."""
    try:
        with open("/proc/cpuinfo") as info:
            fields = dict(line.split(":", 1) for line in info if ":" in line)
    except OSError:
        fields = {}
    name = fields.get("model name\t", "").strip()
    family = fields.get("cpu family\t", "").strip()
    model = fields.get("model\t\t", "").strip()
    if name and family:
        name += f" (family {family}, model {model})"
    return name or platform.processor() or platform.machine() or "unknown"


def two_thread_copy(dst: np.ndarray, src: np.ndarray) -> None:
    """``np.copyto(dst, src)`` of two 1-D byte arrays, each half by its own
    thread (NumPy releases the GIL while it copies)."""
    half = src.size // 2
    helper = threading.Thread(target=np.copyto, args=(dst[:half], src[:half]))
    helper.start()
    np.copyto(dst[half:], src[half:])
    helper.join()


def machine_floors(nbytes: int = LARGE, rounds: int = 7) -> Dict[str, float]:
    """What plain copies of ``nbytes`` cost on this machine, each over a
    one-thread ``np.copyto`` between preallocated, touched arrays (medians
    of interleaved runs): ``two_thread_copy``, ``fastblock_copy`` (the
    engine's own contiguous copy, default threads: streamed when large) and
    ``fresh_copy`` (``x.copy()``, the reference of target 2)."""
    src = np.ones(nbytes, np.uint8)
    dst = np.zeros(nbytes, np.uint8)
    t = timing.interleaved_medians({
        "copy": lambda: np.copyto(dst, src),
        "two_thread_copy": lambda: two_thread_copy(dst, src),
        "fastblock_copy": lambda: fb.transpose(src, (0,), out=dst),
        "fresh_copy": lambda: src.copy(),
    }, rounds=rounds)
    return {name: seconds / t["copy"] for name, seconds in t.items() if name != "copy"}


def huge_page_share(arr: np.ndarray, smaps: Optional[str] = None) -> Optional[float]:
    """The share of ``arr``'s bytes the kernel holds in transparent huge
    pages, from the ``AnonHugePages`` of the mappings that hold it in
    ``/proc/self/smaps`` (or in the text ``smaps``); None where that cannot
    be read. Exact for large arrays, which NumPy maps on their own; a small
    array shares its mapping, whose huge pages all count (at most its size).

    Target 2 depends on it: a new result's fresh pages cost one fault and one
    2 MiB zeroing each when huge, 512 faults when not.
    """
    low = arr.__array_interface__["data"][0]
    high = low + arr.nbytes
    if smaps is None:
        try:
            with open("/proc/self/smaps") as f:
                smaps = f.read()
        except OSError:
            return None
    huge_kib = 0
    holds = False
    for line in smaps.splitlines():
        fields = line.split()
        if not fields:
            continue
        if "-" in fields[0] and not fields[0].endswith(":"):
            start, end = (int(v, 16) for v in fields[0].split("-"))
            holds = start < high and low < end
        elif holds and fields[0] == "AnonHugePages:":
            huge_kib += int(fields[1])
    return min(huge_kib * 1024, arr.nbytes) / arr.nbytes if arr.nbytes else 0.0
