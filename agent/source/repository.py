"""The identity of a Git repository, whatever form its URL takes. Pure (no ``git`` import).

Why: the default source id (``source.source_id``) is made from this identity and ``--path``, and
the ``heumsi.github.io/repository`` annotation records it, so moving from ``https://`` to
``ssh://`` must not make a new source (whose Applications another source would hold,
``sources.other_source``): one repository has one identity, in every URL form Git accepts.

Rules, as Git itself reads a URL (``connect.c``: ``url_is_local_not_ssh`` and ``parse_connect_url``):

- ``scheme://[user[:password]@]host[:port]/path``: the host lowercased (DNS names are not case
  sensitive), user-info dropped, the scheme's default port dropped (``DEFAULT_PORTS``), the
  path kept as typed (it is case sensitive on most servers);
- ``[user@]host:path`` (scp-like: a colon before any slash) is ``ssh://[user@]host/path``;
- trailing ``/`` and one ``.git`` are removed from remote paths (``repo``, ``repo.git`` and
  ``repo/`` name one repository on every hosting service);
- anything else, and ``file://`` URLs, is a local path: its absolute real path (symlinks
  resolved), never stripped (``/srv/repo`` and ``/srv/repo.git`` are two directories).

So ``https://github.com/Org/repo.git``, ``https://user:tok@github.com/Org/repo``,
``ssh://git@github.com/Org/repo.git``, ``git@github.com:Org/repo.git`` and
``http://github.com/Org/repo/`` are all ``github.com/Org/repo``. The identity never contains a
credential; it is recorded in an annotation (no 63-character limit, unlike a label value).

A checkout given by path is the repository its ``origin`` names (``origin.repository_of``, issue 46),
so CI's ``--repo "$GITHUB_WORKSPACE"`` and ``run``'s URL are one source; this module stays pure.

The agent's one parser of repository URLs: ``remote`` gives the parts of a remote URL (the
host of a commit status API, ``agent/notify/commitstatus.py``), ``identity`` is built on it.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from dataclasses import dataclass

DEFAULT_PORTS = {"http": 80, "https": 443, "ssh": 22, "git+ssh": 22, "ssh+git": 22, "git": 9418}
"""Ports that name nothing beyond the scheme's default, so they are dropped."""

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


@dataclass(frozen=True)
class Remote:
    """A remote repository URL's parts, by the rules above. ``scheme``: lowercased (``ssh`` for
    scp-like); ``host``: lowercased, no user-info, an IPv6 literal in brackets; ``port``: digits,
    ``""`` when none or the scheme's default; ``path``: without leading and trailing slashes
    and one trailing ``.git``, as typed otherwise (``""`` when none)."""

    scheme: str
    host: str
    port: str
    path: str


def remote(url: str) -> Remote | None:
    """The parts of ``url`` (any form ``--repo`` accepts) when it names a remote repository;
    None for a local path or a ``file://`` URL."""
    url = url.strip()
    scheme = _SCHEME.match(url)
    if scheme:
        name = scheme.group(1).lower()
        if name == "file":
            return None
        parts = urllib.parse.urlsplit(url)
        host, port = _host(parts.netloc, name)
        return Remote(name, host, port, _path(parts.path))
    colon, slash = url.find(":"), url.find("/")
    if colon > 0 and (slash < 0 or colon < slash):  # scp-like [user@]host:path, as Git reads it
        host, _, path = url.partition(":")
        return Remote("ssh", host.rpartition("@")[2].lower(), "", _path(path))
    return None


def identity(url: str) -> str:
    """``url`` (any form ``--repo`` accepts) -> the repository's identity string.

    Remote: ``host[:port]/path`` (e.g. ``github.com/Org/repo``, ``git.example.com:2222/team/apps``).
    Local path or ``file://`` URL: the absolute real path (e.g. ``/srv/git/apps``), which always
    starts with ``/`` and so never equals a remote identity. See the module docstring for the
    rules and where they come from.
    """
    found = remote(url)
    if found is None:
        url = url.strip()
        if _SCHEME.match(url):  # file://
            return os.path.realpath(urllib.parse.unquote(urllib.parse.urlsplit(url).path) or "/")
        return os.path.realpath(url)
    host = f"{found.host}:{found.port}" if found.port else found.host
    return f"{host}/{found.path}" if found.path else host


def _host(netloc: str, scheme: str) -> tuple[str, str]:
    """(host, port) of a URL's netloc: user-info dropped, host lowercased, the scheme's default
    port dropped (``""``). An IPv6 literal keeps its brackets."""
    hostport = netloc.rpartition("@")[2].lower()
    host, port = hostport, ""
    if hostport.startswith("["):
        close = hostport.find("]")
        if close > 0:
            host, port = hostport[:close + 1], hostport[close + 1:].removeprefix(":")
    elif ":" in hostport:
        host, _, port = hostport.partition(":")
    if port and port.isdigit() and int(port) == DEFAULT_PORTS.get(scheme):
        port = ""
    return host, port


def _path(path: str) -> str:
    """A remote path with its leading and trailing slashes removed, then one trailing ``.git``
    (so ``repo.git/`` is ``repo``)."""
    return path.strip("/").removesuffix(".git")
