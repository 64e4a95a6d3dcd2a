"""One ``git.Repo`` per mirror for the passes (``opened``), so that the Git processes GitPython
keeps for reading objects (``git cat-file --batch`` and ``--batch-check``) serve pass after pass
instead of being started again by each one.

Why: a pass after a push reads the blobs the push changed (``snapshot.read_since``) and asks
whether the commit the Applications record is behind the new one (``ancestry.is_ancestor``).
Each Git process started on a push's way to its apply costs milliseconds, more on a busy
machine (issue 48).

For the passes only: they run one at a time, and GitPython's processes answer one question at
a time (a second thread would read another's answer). Anything else (the status page) opens
its own ``git.Repo``.

Safe to keep: ``git cat-file --batch`` looks again for packs it does not know when an object is
missing (a fetch since it started added them). A mirror made anew (a first fetch moves a
staging directory into place, also after someone deleted the cache) is forgotten by the fetch
that made it (``forget``), a directory with another device or inode is another mirror, and a
``Repo`` is opened afresh after ``MAX_AGE`` seconds (its processes keep the packs a repack
deleted open: disk not given back until then) or when one of its processes has ended. A
closed ``Repo`` ends its processes. At most ``KEPT`` mirrors are held (a source, its submodules,
a checkout's ``origin``), the least recently used is closed first.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict

import git

KEPT = 4
"""Mirrors held open at once."""
MAX_AGE = 600.0
"""Seconds a ``Repo`` serves before it is opened afresh."""

_open: OrderedDict[tuple[str, int, int], tuple[git.Repo, float]] = OrderedDict()
_lock = threading.Lock()


def opened(path: str | os.PathLike) -> git.Repo:
    """The ``git.Repo`` of the mirror at ``path``, opened once while it is the same directory
    (for at most ``MAX_AGE`` seconds). Raises what ``git.Repo`` raises (``git.NoSuchPathError``,
    ``git.InvalidGitRepositoryError``)."""
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError:
        return git.Repo(real)  # raises NoSuchPathError, as before
    key, now = (real, st.st_dev, st.st_ino), time.monotonic()
    with _lock:
        held = _open.get(key)
        if held is not None and now - held[1] < MAX_AGE and _alive(held[0]):
            _open.move_to_end(key)
            return held[0]
    repo = git.Repo(real)
    forget(real)
    with _lock:
        _open[key] = (repo, now)
        while len(_open) > KEPT:
            _open.popitem(last=False)[1][0].close()
    return repo


def _alive(repo: git.Repo) -> bool:
    """False when one of the ``cat-file`` processes GitPython started for ``repo`` has ended
    (killed, out of memory): GitPython would not start it again, and every read would fail."""
    for cmd in (repo.git.cat_file_all, repo.git.cat_file_header):
        proc = getattr(cmd, "proc", None)
        if proc is not None and proc.poll() is not None:
            return False
    return True


def forget(path: str | os.PathLike) -> None:
    """Close the ``Repo`` held for ``path``, if any (the directory there was made anew)."""
    real = os.path.realpath(path)
    with _lock:
        for stale in [k for k in _open if k[0] == real]:
            _open.pop(stale)[0].close()
