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

from agent.source import gitproc, mirror, mirrorrepo, origin


SHA = re.compile(r"^[0-9a-f]{7,40}$")
"""A ref that is an abbreviated or full commit SHA."""

FULL_SHA = re.compile(r"^[0-9a-f]{40}$")
NEAR_READS = 16
"""Commit objects ``_near`` reads before it leaves the answer to ``git merge-base``."""
MAX_COMMIT_BYTES = 1 << 20
"""A larger commit object is not read by ``_near``."""


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
    history rewritten by a force-push, a shallow checkout) or Git failed. A few commits back
    from ``newer`` are looked at first, through the mirror's open ``cat-file`` (``_near``): a
    push's pass asks whether the commit before the push is behind it, and a Git process on its
    way to its apply costs milliseconds (issue 48)."""
    if _near(where, older, newer):
        return True
    try:
        gitproc.run(["merge-base", "--is-ancestor", older, newer], cwd=where, timeout=timeout)
        return True
    except gitproc.Failed as err:
        return False if err.status == 1 else None
    except OSError:
        return None


def _near(where: str | os.PathLike, older: str, newer: str, reads: int = NEAR_READS) -> bool:
    """True when ``older`` is ``newer`` or reached from it through its parents within ``reads``
    commit objects read (full SHAs only; ``mirrorrepo.opened``'s ``cat-file``); False when not
    found so (``merge-base`` decides), or anything was not as expected: a missing or large
    object, not a commit. A parent named in a commit is its ancestor whatever else Git knows."""
    if not (FULL_SHA.match(older) and FULL_SHA.match(newer)):
        return False
    try:
        odb = mirrorrepo.opened(where).odb
        todo, seen = [newer], {newer}
        while todo and reads > 0:
            reads -= 1
            sha = bytes.fromhex(todo.pop(0))
            info = odb.info(sha)
            if info.binsha != sha or info.type != b"commit" or info.size > MAX_COMMIT_BYTES:
                return False
            stream = odb.stream(sha)
            if stream.binsha != sha:  # the reply is not about what was asked: trust nothing read
                return False
            for parent in _parents(stream.read()):
                if parent == older:
                    return True
                if parent not in seen:
                    seen.add(parent)
                    todo.append(parent)
    except Exception:  # noqa: BLE001 (GitPython and gitdb raise many kinds): merge-base decides
        return False
    return False


def _parents(body: bytes) -> list[str]:
    """The ``parent`` SHAs in a commit object's header (its lines before the first empty one)."""
    out = []
    for line in body.split(b"\n\n", 1)[0].split(b"\n"):
        if line.startswith(b"parent ") and FULL_SHA.match(sha := line[7:].decode("ascii", "replace")):
            out.append(sha)
    return out


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
