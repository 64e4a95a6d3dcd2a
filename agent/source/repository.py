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
"""

from __future__ import annotations

import os
import re
import urllib.parse

DEFAULT_PORTS = {"http": 80, "https": 443, "ssh": 22, "git+ssh": 22, "ssh+git": 22, "git": 9418}
"""Ports that name nothing beyond the scheme's default, so they are dropped."""

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def identity(url: str) -> str:
    """``url`` (any form ``--repo`` accepts) -> the repository's identity string.

    Remote: ``host[:port]/path`` (e.g. ``github.com/Org/repo``, ``git.example.com:2222/team/apps``).
    Local path or ``file://`` URL: the absolute real path (e.g. ``/srv/git/apps``), which always
    starts with ``/`` and so never equals a remote identity. See the module docstring for the
    rules and where they come from.
    """
    url = url.strip()
    scheme = _SCHEME.match(url)
    if scheme:
        name = scheme.group(1).lower()
        parts = urllib.parse.urlsplit(url)
        if name == "file":
            return os.path.realpath(urllib.parse.unquote(parts.path) or "/")
        return _remote(_host(parts.netloc, name), parts.path)
    colon, slash = url.find(":"), url.find("/")
    if colon > 0 and (slash < 0 or colon < slash):  # scp-like [user@]host:path, as Git reads it
        host, _, path = url.partition(":")
        return _remote(host.rpartition("@")[2].lower(), path)
    return os.path.realpath(url)


def _host(netloc: str, scheme: str) -> str:
    """``host[:port]`` of a URL's netloc: user-info dropped, host lowercased, the scheme's
    default port dropped. An IPv6 literal keeps its brackets."""
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
    return f"{host}:{port}" if port else host


def _remote(host: str, path: str) -> str:
    """``host/path`` with the path's leading and trailing slashes removed, then one trailing
    ``.git`` (so ``repo.git/`` is ``repo``)."""
    path = path.strip("/").removesuffix(".git")
    return f"{host}/{path}" if path else host
