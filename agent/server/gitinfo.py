"""Commits for the status page: subject, author and date of a commit, what Git says of an
Application, and a commit's address on the Git host. Read from ``run``'s own bare mirror (no
network, no API server) by ``agent/source/history.py``; what is here is the page's caches.

Why a cache: a commit never changes, so what is read of it is kept (bounded: ``LIMIT`` entries);
the list page asks for the subjects of the rows it shows, at most one ``git log`` per request for
the commits not yet known. A commit the mirror does not hold (not fetched yet, or a shallow
history) reads as None, never an error.

Web addresses (``commit_url``) are built from the repository's identity (``repository.identity``:
``host/path`` for every URL form, ``https://``, ``ssh://`` and scp-like ``git@host:org/repo``)
for hosts that are known to be GitHub, GitLab or Gitea (by name: ``github``, ``gitlab``,
``gitea``, ``codeberg``, ``forgejo`` in the host). Always ``https://``: a link never takes a
scheme from the outside, so it can never be ``javascript:``.
"""

from __future__ import annotations

import re
import threading
import urllib.parse
from pathlib import Path

from agent.source import history, mirror
from agent.source.history import SHA as _SHA
from agent.source.repository import identity
from agent.views import explainview, inspect

LIMIT = 10000  # commits kept; the cache is emptied when it grows past this
_HOST = re.compile(r"^[a-z0-9.-]+(:[0-9]+)?$")


def host_kind(host: str) -> str | None:
    """``github``, ``gitlab`` or ``gitea`` for a host name that says so, else None."""
    name = host.lower()
    for word, kind in (("github", "github"), ("gitlab", "gitlab"), ("gitea", "gitea"), ("codeberg", "gitea"),
                       ("forgejo", "gitea")):
        if word in name:
            return kind
    return None


def shown(repo_url: str | None) -> str | None:
    """The repository as the page shows it: its identity (``host/path`` or a local path), so
    user-info in ``--repo`` (a token) never appears."""
    return identity(repo_url) if repo_url else None


def web_base(repo_url: str | None) -> tuple[str, str] | None:
    """(kind, ``https://host/path``) of ``repo_url`` on a known Git host, else None (a local
    path, an unknown host, a host or path with characters no such host uses)."""
    if not repo_url:
        return None
    ident = identity(repo_url)
    host, _, path = ident.partition("/")
    kind = host_kind(host)
    if ident.startswith("/") or not path or kind is None or not _HOST.match(host):
        return None
    return kind, f"https://{host}/{urllib.parse.quote(path, safe='/')}"


def commit_url(repo_url: str | None, sha: str | None) -> str | None:
    """The web page of commit ``sha`` (it shows the commit's diff) on GitHub, GitLab or Gitea;
    None when the host is not one of them or ``sha`` is not a hexadecimal SHA."""
    base = web_base(repo_url)
    if base is None or not isinstance(sha, str) or not _SHA.match(sha):
        return None
    kind, root = base
    return f"{root}/-/commit/{sha}" if kind == "gitlab" else f"{root}/commit/{sha}"


def file_url(repo_url: str | None, sha: str | None, path: str | None) -> str | None:
    """The web page of file ``path`` at commit ``sha`` on a known host, else None."""
    base = web_base(repo_url)
    if base is None or not path or not isinstance(sha, str) or not _SHA.match(sha):
        return None
    kind, root = base
    where = "-/blob" if kind == "gitlab" else "src/commit" if kind == "gitea" else "blob"
    return f"{root}/{where}/{sha}/{urllib.parse.quote(path.lstrip('/'))}"


class Commits:
    """The subjects of commits read from the bare mirror at ``mirror`` (a directory; it may not
    exist yet), each commit read once. Thread-safe."""

    def __init__(self, mirror: Path | None):
        self.mirror = mirror
        self._lock = threading.Lock()
        self._info: dict[str, dict | None] = {}

    def info(self, shas) -> dict[str, dict | None]:
        """{sha: {sha, subject, author, date} or None} for each hexadecimal SHA in ``shas``,
        reading the unknown ones with one ``git log`` (``history.subjects``)."""
        wanted = {s for s in shas if isinstance(s, str) and _SHA.match(s)}
        with self._lock:
            unknown = sorted(s for s in wanted if s not in self._info)
        if unknown:
            found = history.subjects(self.mirror, unknown)
            with self._lock:
                if len(self._info) > LIMIT:
                    self._info.clear()
                for sha in unknown:
                    self._info[sha] = found.get(sha)
        with self._lock:
            return {s: self._info.get(s) for s in wanted}


class Explained:
    """What Git says of an Application for its page (``inspect.read_git``'s answer, the ``git``
    argument of ``explainview.explanation``), read from ``run``'s own mirror of ``url`` at the
    commit its last pass fetched: never a fetch. ``url``, ``ref``, ``cache_dir``,
    ``credentials`` and ``timeout`` are ``run``'s (``sync.Options``).

    Why a cache: a page refreshes itself every few seconds, and the answer depends only on the
    Application's commits and file and on the head commit, which change with passes. Kept per
    (namespace, name, synced, changed, file, head), at most ``LIMIT`` answers. Git reads are
    serialized (GitPython's object reader is one process)."""

    def __init__(self, url: str | None, ref: str | None, cache_dir: str | None, credentials=None,
                 timeout: float = 60.0):
        self.url, self.ref, self.cache_dir, self.credentials, self.timeout = url, ref, cache_dir, credentials, timeout
        self._lock = threading.Lock()
        self._answers: dict[tuple, dict] = {}
        self._repo = None

    def _open(self):
        if self._repo is None and self.url and self.cache_dir:
            self._repo = history.open_mirror(self.cache_dir, self.url, self.credentials)
        return self._repo

    def of(self, app: dict, head: str | None) -> dict:
        """The ``git`` dict for ``app`` at ``head`` (None: no pass fetched yet); unavailable, with a
        reason, when there is no mirror or commit yet, or the mirror lacks a commit."""
        if not self.url:
            return {"available": False, "reason": "no repository", "url": None}
        shown = mirror.redact(self.url)
        meta, status = app.get("metadata") or {}, app.get("status") or {}
        key = (meta.get("namespace"), meta.get("name"), status.get("lastSyncedCommit"),
               explainview.changed_commit(app), status.get("sourcePath"), head)
        with self._lock:
            if key not in self._answers:
                if len(self._answers) > LIMIT:
                    self._answers.clear()
                self._answers[key] = self._read(app, head, shown)
            return self._answers[key]

    def _read(self, app: dict, head: str | None, shown: str) -> dict:
        repo = self._open()
        if repo is None or not head:
            return {"available": False, "reason": "no pass has fetched the repository yet", "url": shown}
        try:
            return inspect.from_mirror(app, repo, shown, self.ref, head, lambda file: inspect.find(
                repo, self.url, head, self.cache_dir, app, file, self.credentials, self.timeout))
        except mirror.SourceError as err:
            return {"available": False, "reason": str(err), "url": shown}
