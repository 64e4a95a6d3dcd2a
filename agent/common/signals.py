"""Waiting in the main thread until a signal handler has run.

CPython runs a Python signal handler in the main thread only, between bytecodes. The kernel
hands a process-directed SIGTERM to any thread that does not block it; when it picks another
thread (the agent runs a dozen: watches, the scheduler, the HTTP servers), a main thread blocked
in a lock with no timeout (``threading.Event.wait()``) is never woken, so the handler never runs
and the process ignores SIGTERM. This was seen as ``run`` still alive 60 s after SIGTERM, once in
a few hundred stops on a loaded machine. Waiting in slices makes the main thread run a pending
handler within ``SLICE`` seconds, whichever thread the signal was delivered to.
"""

from __future__ import annotations

import threading

SLICE = 0.2  # seconds: the longest a pending SIGTERM or SIGINT handler waits to run


def wait(event: threading.Event) -> None:
    """Return once ``event`` is set (by a signal handler or any thread), checking for pending
    signal handlers every ``SLICE`` seconds."""
    while not event.wait(SLICE):
        pass
