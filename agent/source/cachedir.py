"""The cache directory (``--cache-dir``): where each bare mirror lives, and the lock that lets
several processes share one directory.

Why mirrors are keyed by the credentials too: a submodule whose mirror already holds the
recorded commit is read without a fetch (so offline passes stay offline). With one mirror per
URL, any source sharing the directory could name another source's private URL as a submodule
and read its files without credentials. So a mirror is ``<url key>-<credential key>.git``:
a source reads only a mirror fetched with the same credentials it would fetch with itself, and
any other source gets a mirror of its own and must fetch, which fails without access.

- The URL key: sha256 of the URL without user-info (local paths absolute), 16 hex digits.
- The credential key: ``anon`` when nothing the transport would send is configured (so public
  URLs still share one mirror); else 16 hex digits of PBKDF2-HMAC-SHA256 over what the
  transport sends, salted with the URL: over HTTP(S) the user name and token, over SSH the
  key file's and known_hosts file's contents (the path when a file cannot be read), local
  paths, ``file://`` and ``git://`` nothing; another transport all of them. No secret appears
  in a path; the slow hash keeps a short password from being guessed from a directory name.
- Mirrors of the layout before this one (``<url key>.git``, no credential key) are never read:
  who fetched them is unknown. A source fetches its mirror anew; the old ones may be deleted.

Credentials Git finds by itself (credential helpers, ``~/.netrc``, ``~/.ssh`` default keys,
an ssh-agent, ``http.extraHeader`` in Git's configuration) are not part of the key: sources
that rely on them share the ``anon`` mirror, as they share the identity that fetched it.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import re
import time
from pathlib import Path

from agent.source import gitproc

LOCK_POLL = 0.1  # seconds between tries of the cache's lock


ANONYMOUS = "anon"
KEY_ITERATIONS = 100_000  # PBKDF2 rounds of the credential key: about 0.1 s, once per URL and process



def default_cache_dir() -> str:
    """``$XDG_CACHE_HOME/gitops-agent`` (``~/.cache/gitops-agent``), the Git mirrors' home
    (``--cache-dir``'s default)."""
    return str(Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "gitops-agent")

def mirror_path(cache_dir: str | os.PathLike, url: str, credentials=None) -> Path:
    """Directory of the bare mirror of ``url`` fetched with ``credentials``:
    ``cache_dir/<sha256(url)[:16]>-<credential_key(url, credentials)>.git``.

    ``url``: already normalised by the caller (user-info removed, local paths absolute; the
    credentials it carried belong in ``credentials``). ``credentials``: a ``source.Credentials``
    (``token``, ``username``, ``ssh_key_file``, ``known_hosts_file``) or None. Never raises for
    an unreadable key file (its path is hashed instead; the fetch reports it)."""
    url_key = hashlib.sha256(url.encode()).hexdigest()[:16]
    return Path(cache_dir) / f"{url_key}-{credential_key(url, credentials)}.git"


def credential_key(url: str, credentials=None) -> str:
    """``anon``, or 16 hex digits naming what Git would send to authenticate to ``url`` with
    ``credentials`` (see the module docstring): equal for equal credentials, different for
    different ones, never containing or revealing a secret."""
    material = _material(transport(url), credentials)
    if material is None:
        return ANONYMOUS
    return _slow_hash(hashlib.sha256(json.dumps(material).encode()).digest(), url)


def transport(url: str) -> str:
    """How Git reaches ``url``: ``http`` (http, https), ``ssh`` (ssh://, git+ssh://, scp-like
    ``host:path``), ``file`` (``file://`` and local paths, by Git's ``url_is_local_not_ssh``),
    ``git`` (git://, no authentication) or ``other`` (a transport helper, another scheme)."""
    scheme = _SCHEME.match(url)
    if scheme:
        return _SCHEMES.get(scheme.group(1).lower(), "other")
    if "::" in url:
        return "other"
    colon, slash = url.find(":"), url.find("/")
    return "file" if colon < 0 or 0 <= slash < colon else "ssh"


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_SCHEMES = {"http": "http", "https": "http", "ssh": "ssh", "git+ssh": "ssh", "ssh+git": "ssh", "file": "file",
            "git": "git"}


def _material(kind: str, credentials) -> list | None:
    """What the transport ``kind`` would send from ``credentials``, as digests; None when nothing."""
    if credentials is None or kind in ("file", "git"):
        return None
    material = []
    if kind in ("http", "other") and credentials.token:
        material += ["token", credentials.username, hashlib.sha256(credentials.token.encode()).hexdigest()]
    if kind in ("ssh", "other"):
        for name, path in (("key", credentials.ssh_key_file), ("known_hosts", credentials.known_hosts_file)):
            if path:
                material += [name, _file_digest(path)]
    return material or None


def _file_digest(path: str) -> str:
    try:
        with open(path, "rb") as file:
            return "sha256:" + hashlib.sha256(file.read()).hexdigest()
    except OSError:
        return "path:" + hashlib.sha256(os.fsencode(path)).hexdigest()


@functools.lru_cache(maxsize=256)
def _slow_hash(digest: bytes, url: str) -> str:
    return hashlib.pbkdf2_hmac("sha256", digest, b"gitops-agent mirror\0" + url.encode(), KEY_ITERATIONS)[:8].hex()


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
