"""At most two glibc malloc arenas for the agent's threads, however it is started; and the heap's
free memory handed back to the system after a pass (``trim``).

Why: glibc gives threads that contend for ``malloc`` arenas of their own (up to 8 per core), and
memory freed into one arena is not reused by another. ``run``'s watches, write pool and HTTP
server are many threads; the image has always set ``MALLOC_ARENA_MAX=2`` (about 20 MiB less at
10,000 Applications), and this applies the same limit to ``python -m agent`` started any other
way (issue 33). An explicit ``MALLOC_ARENA_MAX`` is the user's and is left to glibc; other C
libraries (musl, macOS) are left alone.
"""

from __future__ import annotations

import ctypes
import os

M_ARENA_MAX = -8
"""``mallopt``'s parameter for the arena limit (glibc's ``malloc.h``)."""
ARENAS = 2


def limit(arenas: int = ARENAS) -> bool:
    """Ask glibc for at most ``arenas`` malloc arenas; True when it agreed. A no-op (False) when
    ``MALLOC_ARENA_MAX`` is set or the C library is not glibc. Call it before threads start:
    arenas made before stay."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    try:
        return _libc().mallopt(ctypes.c_int(M_ARENA_MAX), ctypes.c_int(arenas)) == 1
    except (OSError, AttributeError):
        return False


def trim() -> bool:
    """Hand the glibc heap's free memory back to the system (``malloc_trim(0)``); True when some
    was. Why: a status sweep of ``run`` frees tens of thousands of objects between long-lived
    ones, and glibc keeps those pages (27 of the 52 MiB of heap at 10,000 Applications, issue
    48); the next sweep's peak then starts from there. A few milliseconds; call it between
    passes. A no-op (False) where the C library is not glibc."""
    try:
        return bool(_libc().malloc_trim(ctypes.c_size_t(0)))
    except (OSError, AttributeError):
        return False


def _libc():
    libc = ctypes.CDLL(None)
    libc.gnu_get_libc_version  # glibc only: AttributeError elsewhere
    return libc
