"""Read a fetched mirror's history: who made a commit, when and why, what it changed in one file.

The agent's one Git reader of history. For ``explain`` and an Application's page: the commit
it last synced and the one that last changed it, with their author, date and subject, and the
diff of that change for its file (``commit_info``, ``file_diff``, ``file_at``, on a ``git.Repo``
from ``open_mirror`` or ``mirror.mirror``). For the status page's list: the subjects of many
commits at once (``subjects``, one ``git log``). For the rule of which prunes a refused file
could hide (``engine/hidden.py``): whether a commit descends from another (``descends``), the
blob ids of some files at a commit (``blobs_at``) and a blob's text (``blob_text``). Reads only
the bare mirror a pass brought up to date, each command bounded by ``LOG_TIMEOUT``; never fetches
by itself.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import git

from agent.source import gitproc
from agent.source.mirror import Credentials, SourceError, cache_path, effective

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
"""The id of Git's empty tree: what a root commit's file is compared with."""
MAX_DIFF_CHARS = 20000
"""A diff longer than this is cut, with a line saying so (one screen, not a whole file)."""
LOG_TIMEOUT = 5.0
"""Seconds ``subjects``' one ``git log`` may take."""
LOG_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}
"""``subjects``' environment: never a prompt, never a lock taken in a mirror a pass writes."""
SHA = re.compile(r"^[0-9a-f]{7,64}$")
"""A commit's hexadecimal SHA, abbreviated (7 digits) to whole (SHA-256's 64)."""


def open_mirror(cache_dir: str | os.PathLike, url: str, credentials: Credentials | None = None) -> git.Repo | None:
    """The bare mirror of ``url`` in ``cache_dir`` (``mirror.cache_path``) as it is: None when
    no pass made it yet. Fetches nothing."""
    where = cache_path(cache_dir, url, credentials)
    return git.Repo(where) if Path(where).is_dir() else None


def subjects(mirror: str | os.PathLike | None, shas: list[str]) -> dict[str, dict]:
    """``{sha: {"sha": full SHA, "subject", "author": name, "date": RFC 3339 author date}}`` for
    each of ``shas`` (hexadecimal, ``SHA``) the bare mirror at ``mirror`` holds: one ``git log
    --no-walk`` (``--ignore-missing`` leaves out the ones it does not; an old git without it
    reads them one by one). ``{}`` when there is no mirror or ``git`` fails (``LOG_TIMEOUT``)."""
    if mirror is None or not Path(mirror).is_dir():
        return {}
    try:
        out = gitproc.run(["log", "--no-walk=unsorted", "--ignore-missing", "--format=%H%x00%s%x00%an%x00%aI%x1e",
                           *shas, "--"], cwd=mirror, env=LOG_ENV, timeout=LOG_TIMEOUT)
    except gitproc.Failed:
        if len(shas) > 1:
            return {k: v for s in shas for k, v in subjects(mirror, [s]).items()}
        return {}
    found: dict[str, dict] = {}
    for record in out.split("\x1e"):
        parts = record.strip("\n").split("\x00")
        if len(parts) == 4:
            full, subject, author, date = parts
            entry = {"sha": full, "subject": subject, "author": author, "date": date}
            for sha in shas:
                if full.startswith(sha):
                    found[sha] = entry
    return found


def commit_info(repo: git.Repo, sha: str) -> dict:
    """``{"author": "Name <email>", "date": RFC 3339 author date, "subject": first line}`` of
    the commit ``sha`` in ``repo``. Raises SourceError when the mirror does not hold it (or ``sha``
    is not hexadecimal, ``SHA``: it is never read as an option)."""
    if not SHA.match(sha):
        raise SourceError(f"{sha!r} is not a commit SHA")
    try:
        text = gitproc.run(["log", "-1", "--format=%an <%ae>%x00%aI%x00%s", sha, "--"], cwd=repo.git_dir,
                           env=LOG_ENV, timeout=LOG_TIMEOUT).rstrip("\n")
    except gitproc.Failed:
        raise SourceError(f"commit {sha} is not in the mirror") from None
    author, date, subject = (text.split("\x00") + ["", "", ""])[:3]
    return {"author": author, "date": date, "subject": subject}


def file_diff(repo: git.Repo, sha: str, path: str) -> str:
    """The unified diff of ``path`` made by commit ``sha`` (against its first parent, or the
    empty tree for a root commit); ``""`` when the commit did not change the file. Cut at
    ``MAX_DIFF_CHARS``. Raises SourceError when the mirror does not hold the commit (or ``sha`` is
    not hexadecimal, ``SHA``)."""
    if not SHA.match(sha):
        raise SourceError(f"{sha!r} is not a commit SHA")
    try:
        parents = gitproc.run(["rev-list", "--parents", "-n", "1", sha, "--"], cwd=repo.git_dir, env=LOG_ENV,
                              timeout=LOG_TIMEOUT).split()[1:]
        text = gitproc.run(["diff", "--no-ext-diff", "--no-textconv", parents[0] if parents else EMPTY_TREE, sha,
                            "--", path], cwd=repo.git_dir, env=LOG_ENV, timeout=LOG_TIMEOUT).rstrip("\n")
    except gitproc.Failed:
        raise SourceError(f"commit {sha} is not in the mirror") from None
    if len(text) > MAX_DIFF_CHARS:
        text = text[:MAX_DIFF_CHARS] + f"\n... (cut at {MAX_DIFF_CHARS} characters)"
    return text


def file_at(repo: git.Repo, sha: str, path: str) -> bytes | None:
    """The bytes of ``path`` in commit ``sha``; None when the commit has no such file."""
    try:
        return (repo.commit(sha).tree / path).data_stream.read()
    except (KeyError, ValueError, git.BadName):
        return None


def mirror_path(cache_dir: str | os.PathLike, url: str, credentials: Credentials | None = None) -> Path:
    """The bare mirror's directory a pass reads ``url`` from (``mirror.effective``, then
    ``cache_path``: the directory ``snapshot.read`` opens). It may not exist yet."""
    clean, credentials = effective(url, credentials)
    return cache_path(cache_dir, clean, credentials)


def descends(mirror: str | os.PathLike, ancestor: str, commit: str) -> bool:
    """True when ``ancestor`` is ``commit`` or one of its ancestors in the bare mirror at
    ``mirror`` (``git merge-base --is-ancestor``, ``LOG_TIMEOUT``); False when it is not (another
    line of history: a force-push, another ref). Raises SourceError when Git cannot tell: a
    commit the mirror does not hold, a SHA that is not hexadecimal (``SHA``), a timeout."""
    if not (SHA.match(ancestor) and SHA.match(commit)):
        raise SourceError(f"{ancestor!r} or {commit!r} is not a commit SHA")
    try:
        gitproc.run(["merge-base", "--is-ancestor", ancestor, commit], cwd=mirror, env=LOG_ENV, timeout=LOG_TIMEOUT)
    except gitproc.Failed as err:
        if err.status == 1:  # Git's answer "no"; 128 and more: it could not read one of them
            return False
        raise SourceError(f"could not tell whether {ancestor} is an ancestor of {commit}: "
                          f"{'timed out' if err.timed_out else err.stderr.strip()[:200]}") from None
    return True


def blobs_at(mirror: str | os.PathLike, commit: str, paths: list[str]) -> dict[str, str]:
    """``{path: blob id}`` of each of ``paths`` (repository-relative, posix) that ``commit`` holds
    as a blob (a file, or a symlink's own blob); a path it does not hold is left out. One ``git
    ls-tree -r -z`` with literal paths (``GIT_LITERAL_PATHSPECS``), ``LOG_TIMEOUT``. Raises
    SourceError when the mirror does not hold the commit, it is not hexadecimal, or Git fails."""
    if not SHA.match(commit):
        raise SourceError(f"{commit!r} is not a commit SHA")
    wanted = set(paths)
    try:
        out = gitproc.run(["ls-tree", "-r", "-z", "--full-tree", commit, "--", *sorted(wanted)], cwd=mirror,
                          env={**LOG_ENV, "GIT_LITERAL_PATHSPECS": "1"}, timeout=LOG_TIMEOUT)
    except gitproc.Failed as err:
        raise SourceError(f"could not list the files of commit {commit}: "
                          f"{'timed out' if err.timed_out else err.stderr.strip()[:200]}") from None
    found: dict[str, str] = {}
    for record in out.split("\x00"):
        head, _, path = record.partition("\t")
        parts = head.split()
        if len(parts) == 3 and parts[1] == "blob" and path in wanted:
            found[path] = parts[2]
    return found


def blob_text(mirror: str | os.PathLike, blob: str) -> str:
    """The bytes of the blob ``blob`` (hexadecimal) as text (undecodable bytes replaced). One ``git
    cat-file blob``, ``LOG_TIMEOUT``. Raises SourceError when the mirror does not hold it."""
    if not SHA.match(blob):
        raise SourceError(f"{blob!r} is not a blob id")
    try:
        return gitproc.run(["cat-file", "blob", blob], cwd=mirror, env=LOG_ENV, timeout=LOG_TIMEOUT)
    except gitproc.Failed as err:
        raise SourceError(f"could not read blob {blob}: "
                          f"{'timed out' if err.timed_out else err.stderr.strip()[:200]}") from None
