"""The C heap of this process as glibc's malloc sees it, for the soak's
samples (tests/support/soak.py): resident memory alone cannot tell a leak (bytes
still allocated) from memory the allocator keeps after it was freed
(fragmentation, a new per-thread arena).

``heap()`` is None where the C library is not glibc (musl, macOS) or
malloc is not glibc's (AddressSanitizer's).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses


class _Mallinfo2(ctypes.Structure):
    # glibc >= 2.33, <malloc.h>: every field a size_t.
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


@dataclasses.dataclass
class Heap:
    in_use_mib: float  # allocated and not freed: what grows with a leak
    held_mib: float  # taken from the system by malloc (in use + free kept in its arenas)
    arenas: int  # the main arena plus one per group of threads that allocated at once


def _libc():
    name = ctypes.util.find_library("c")
    if name is None or hasattr(ctypes.CDLL(None), "__asan_init"):
        # Under AddressSanitizer malloc is ASan's: glibc's statistics do not
        # describe it, and freeing malloc_info's buffer (glibc's) through it aborts.
        return None
    libc = ctypes.CDLL(name)
    if not hasattr(libc, "mallinfo2") or not hasattr(libc, "malloc_info"):
        return None
    libc.mallinfo2.restype = _Mallinfo2
    libc.open_memstream.restype = ctypes.c_void_p
    libc.open_memstream.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_size_t)]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.malloc_trim.argtypes = [ctypes.c_size_t]
    return libc


_LIBC = _libc()


def _arena_count() -> int:
    """malloc_info's XML has one <heap nr="N"> per arena."""
    buffer, size = ctypes.c_char_p(), ctypes.c_size_t()
    stream = _LIBC.open_memstream(ctypes.byref(buffer), ctypes.byref(size))
    if not stream:
        return 0
    _LIBC.malloc_info(0, stream)
    _LIBC.fclose(stream)  # sets buffer and size
    try:
        return ctypes.string_at(buffer, size.value).count(b"<heap nr=")
    finally:
        _LIBC.free(ctypes.cast(buffer, ctypes.c_void_p))


def heap() -> Heap | None:
    if _LIBC is None:
        return None
    info = _LIBC.mallinfo2()  # summed over every arena
    mib = 1024.0 * 1024.0
    return Heap((info.uordblks + info.hblkhd) / mib, (info.arena + info.hblkhd) / mib, _arena_count())


def trim() -> bool:
    """glibc's malloc_trim(0): every arena gives its free pages back to the
    system. Resident memory that this releases was kept by the allocator,
    not leaked. False where heap() is None."""
    if _LIBC is None:
        return False
    _LIBC.malloc_trim(0)
    return True
