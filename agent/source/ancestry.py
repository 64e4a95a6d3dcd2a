"""Which of two commits is the newer, and where a ref points now: what forward-only commits need
(issue 46, ``agent/engine/forward.py``). Git does the work; every command is bounded (``gitproc``).

Why here: only ``agent/source`` runs Git. A local checkout's ``origin`` (``origin.origin_url``)
is where its ref is asked: a CI job's checkout is one commit of the repository the in-cluster
agent syncs, and where that repository's ref points now is known only from ``origin``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from agent.source import gitproc, mirror, origin


SHA = re.compile(r"^[0-9a-f]{7,40}$")
"""A ref that is an abbreviated or full commit SHA."""


@dataclass(frozen=True)
class Tip:
    """Where the ref points now: ``commit`` (full SHA), in the mirror ``where`` (a bare
    repository holding it, for ``is_ancestor``); ``upstream``: the URL it was read from."""

    commit: str
    where: Path
    upstream: str


def is_ancestor(where: str | os.PathLike, older: str, newer: str, timeout: float = gitproc.LOCAL_TIMEOUT) -> bool | None:
    """True when ``older`` is ``newer`` or one of its ancestors in the repository ``where``
    (``git merge-base --is-ancestor``), False when not, None when either commit is not there (a
    history rewritten by a force-push, a shallow checkout) or Git failed."""
    try:
        gitproc.run(["merge-base", "--is-ancestor", older, newer], cwd=where, timeout=timeout)
        return True
    except gitproc.Failed as err:
        return False if err.status == 1 else None
    except OSError:
        return None


def tip(url: str, ref: str | None, cache_dir: str | os.PathLike, known: str, timeout: float, *,
        credentials: mirror.Credentials | None = None) -> Tip:
    """Where ``ref`` of the source ``url`` points now. For a local checkout with an ``origin``:
    where ``origin``'s ref points (fetched into origin's own mirror). Otherwise ``git ls-remote``
    first, fetched only when it moved from ``known``. A ``ref`` that is a commit SHA (CI's
    ``--ref "$COMMIT_SHA"``) says nothing about where the branch is: the remote's ``HEAD`` is
    asked. Raises ``mirror.SourceError``."""
    upstream = (origin.origin_url(url) if origin.is_local_path(url) else None) or url
    branch = None if ref is not None and SHA.match(ref) else ref  # a commit pins nothing: its remote's HEAD
    found = mirror.fetch(upstream, branch, cache_dir, timeout, credentials=credentials,
                         known_commit=known if upstream == url and branch == ref else None)
    return Tip(found.commit or known, mirror.cache_path(cache_dir, upstream, credentials), mirror.redact(upstream))
