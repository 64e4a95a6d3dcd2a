"""The cache directory (``--cache-dir``): where each bare mirror lives, and the lock that lets
several processes share one directory.

Why a module of its own: where a mirror lives decides who may read it without a fetch, and
every process sharing the directory must agree on it; ``source`` only fetches and reads.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import time
from pathlib import Path

from . import gitproc

LOCK_POLL = 0.1  # seconds between tries of the cache's lock


def mirror_path(cache_dir: str | os.PathLike, url: str) -> Path:
    """Directory of the bare mirror of ``url`` (already normalised by the caller: user-info
    removed, local paths absolute): ``cache_dir/<sha256(url)[:16]>.git``."""
    return Path(cache_dir) / (hashlib.sha256(url.encode()).hexdigest()[:16] + ".git")


@contextlib.contextmanager
def locked(cache_dir: Path, timeout: float):
    """Hold an exclusive ``flock`` on the cache directory itself while the block runs, so
    processes sharing one ``--cache-dir`` (CI jobs on one runner, two agents) fetch one at a
    time: two concurrent ``git fetch`` runs into one mirror fail on its ref locks, and two first
    fetches race to move their staging directory into place. Locking the directory leaves no
    file behind and covers every mirror and staging directory in it; the lock is the kernel's,
    released when the process dies, so a killed process never leaves a stale lock.

    ``cache_dir``: made when missing. ``timeout``: seconds to wait for the lock. Raises
    TimeoutError (an OSError) when another process keeps it longer or ``gitproc.cancel`` ran
    (shutdown), OSError when the directory cannot be made or opened."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout
    fd = os.open(cache_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline or gitproc.cancelled():
                    raise TimeoutError(f"another process kept the lock of the cache {cache_dir} "
                                       f"for {timeout:g}s") from None
                time.sleep(LOCK_POLL)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
