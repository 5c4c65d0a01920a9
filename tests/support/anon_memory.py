"""This process's anonymous resident memory split by what holds it, for the
soak's samples (tests/support/soak.py): a growth of anonymous memory while the C
heap's bytes in use stay flat could be thread stacks, malloc arenas keeping
freed memory, or large allocations that malloc maps on their own.

``split()`` reads /proc/self/smaps (Linux; None elsewhere) and sorts each
mapping's ``Anonymous:`` pages by its shape:

* ``heap``: the main arena (``[heap]``);
* ``arenas``: the other malloc arenas, each a 64 MiB-aligned reservation
  whose used part is read-write and the rest ``---p``;
* ``stacks``: thread stacks (read-write after a one-page ``---p`` guard, as
  glibc maps them) and the main thread's ``[stack]``;
* ``other``: everything else anonymous: malloc's large blocks (mapped on
  their own), pymalloc's arenas, the KV cache, buffers of extensions.

``pymalloc_mib`` is the size of the arenas CPython's small-object allocator
holds now (``sys._debugmallocstats``), part of ``other``: an arena stays
while any object in it lives, so a few long-lived objects can keep one.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import tempfile
from typing import Optional

SMAPS = "/proc/self/smaps"
_ARENA_ALIGNMENT = 64 << 20  # glibc's HEAP_MAX_SIZE on 64-bit
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclasses.dataclass
class AnonymousSplit:
    heap_mib: float
    arenas_mib: float
    stacks_mib: float
    other_mib: float
    pymalloc_mib: Optional[float]  # of other; None where CPython does not say


@dataclasses.dataclass
class _Mapping:
    start: int
    end: int
    perms: str
    path: str
    anonymous_kib: int = 0


def _mappings():
    mappings = []
    with open(SMAPS, encoding="ascii", errors="replace") as f:
        for line in f:
            head = line.split(None, 5)
            if "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                start, _, end = head[0].partition("-")
                path = head[5].strip() if len(head) > 5 else ""
                mappings.append(_Mapping(int(start, 16), int(end, 16), head[1], path))
            elif head[0] == "Anonymous:" and mappings:
                mappings[-1].anonymous_kib = int(head[1])
    return mappings


def _kind(mappings, i: int) -> str:
    m = mappings[i]
    if m.path == "[heap]":
        return "heap"
    if m.path == "[stack]":
        return "stacks"
    if m.path:
        return "other"
    before = mappings[i - 1] if i > 0 else None
    after = mappings[i + 1] if i + 1 < len(mappings) else None
    if m.start % _ARENA_ALIGNMENT == 0 and (m.end - m.start == _ARENA_ALIGNMENT or (
            after is not None and after.start == m.end and after.perms == "---p"
            and after.end - m.start == _ARENA_ALIGNMENT)):
        return "arenas"
    if before is not None and before.end == m.start and before.perms == "---p" and before.end - before.start == _PAGE:
        return "stacks"
    return "other"


def pymalloc_mib() -> Optional[float]:
    """The size of pymalloc's arenas now, from the "N arenas * S bytes/arena"
    line that sys._debugmallocstats writes to the C stderr (captured)."""
    if not hasattr(sys, "_debugmallocstats"):
        return None
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as out:
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read().decode("ascii", "replace")
    m = re.search(r"^(\d+) arenas \* (\d+) bytes/arena", text, re.MULTILINE)
    return int(m.group(1)) * int(m.group(2)) / (1 << 20) if m else None


def split() -> Optional[AnonymousSplit]:
    """The split now, or None where /proc/self/smaps cannot be read."""
    try:
        mappings = _mappings()
    except OSError:
        return None
    kib = {"heap": 0, "arenas": 0, "stacks": 0, "other": 0}
    for i, m in enumerate(mappings):
        kib[_kind(mappings, i)] += m.anonymous_kib
    return AnonymousSplit(*(kib[k] / 1024.0 for k in ("heap", "arenas", "stacks", "other")), pymalloc_mib())
