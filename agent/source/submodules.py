"""Git submodules (gitlinks, tree mode 160000) under ``--path``: followed, or the pass fails.

A gitlink is a commit of another repository recorded in a tree. Reading it as an empty
directory would make the Applications in it look deleted, and the agent would prune them, so a
gitlink is never skipped silently: it is followed (the default, as Argo CD does) or it fails
the pass by name (``--no-submodules``, a missing ``.gitmodules`` entry, a failed fetch, a
refused protocol).

Following one: its URL comes from the ``.gitmodules`` of the commit that holds it (parsed by
``git config --blob``), relative URLs (``../other.git``) are resolved against the URL of the
repository holding it the way ``git submodule`` does, and it is fetched into its own bare
mirror in the same cache directory with ``source.mirror`` (same timeout, redaction, staging).
Nothing is fetched when the mirror already has the commit, so offline passes stay offline;
that mirror is the one of the credentials the submodule is fetched with (``source.cache_path``),
so a submodule naming another source's private URL is fetched, never read from its mirror.
Submodule fetches run with ``GIT_PROTOCOL_FROM_USER=0``, so Git applies its own protocol policy
(``protocol.file.allow=user`` by default): a local or ``file://`` submodule is refused unless
Git's configuration allows the file protocol. The main repository's credentials go only to
submodules on the same scheme, host and port.

This module imports ``git`` too (with ``agent/source/mirror.py``, the only two that do).
"""

from __future__ import annotations

import os
import posixpath
import subprocess
import urllib.parse
from collections import deque
from dataclasses import dataclass

import git

from agent.source import mirror as source

MAX_DEPTH = 5
DEFAULT_PORTS = {"http": 80, "https": 443, "ssh": 22, "git": 9418}
FILE_PROTOCOL_HINT = ("; a local or file:// submodule is fetched only when Git's configuration allows it "
                      "(protocol.file.allow=always)")


def file_protocol_allowed(config: dict[str, str | None], allow_list: str | None) -> bool:
    """Whether Git lets a submodule (a command not run by the user: ``GIT_PROTOCOL_FROM_USER=0``)
    use the file protocol, by Git's rule (``transport.c``, ``git help config``: protocol.allow):
    ``GIT_ALLOW_PROTOCOL`` (``allow_list``, colon-separated), when set, decides alone; else
    ``protocol.file.allow``, else ``protocol.allow`` (``config``: name -> value or None), else
    the default ``user``; only ``always`` allows it, since ``user`` requires a user's command."""
    if allow_list is not None:
        return "file" in allow_list.split(":")
    value = config.get("protocol.file.allow") or config.get("protocol.allow") or "user"
    return value.strip().lower() == "always"


def _git_config(name: str) -> str | None:
    """``git config --get NAME`` as Git would read it here (system, global, ``GIT_CONFIG_*``)."""
    done = subprocess.run(["git", "config", "--get", name], capture_output=True, text=True, timeout=30, cwd=os.sep)
    return done.stdout.strip() if done.returncode == 0 else None


def _local_url(url: str) -> bool:
    """True for a URL Git fetches with the file protocol: ``file://`` or a local path."""
    return url.startswith("file://") or ("://" not in url and _local(url))


def _local(url: str) -> bool:
    """Git's ``url_is_local_not_ssh``: no colon, or a slash before the first colon."""
    colon, slash = url.find(":"), url.find("/")
    return colon < 0 or 0 <= slash < colon


def resolve_url(url: str, base: str) -> str:
    """The URL of a submodule as ``git submodule`` computes it (``relative_url`` in Git).

    ``url``: the ``submodule.<name>.url`` value; only one starting with ``./`` or ``../`` is
    relative, anything else is returned unchanged. ``base``: the URL (or absolute path) of the
    repository whose ``.gitmodules`` names it. Each ``../`` removes one path component of
    ``base`` (or the ``:path`` of an scp-like ``host:path``). Examples:
    (``../b.git``, ``https://h/org/a.git``) -> ``https://h/org/b.git``;
    (``./sub``, ``/srv/a``) -> ``/srv/a/sub``; (``../b.git``, ``git@h:a.git``) -> ``git@h:b.git``.
    Raises ValueError when ``base`` has no component left to remove.
    """
    if not url.startswith(("./", "../")):
        return url
    remote = base[:-1] if base.endswith("/") else base
    relative = _local(remote) and not remote.startswith("/")
    if relative and not remote.startswith(("./", "../")):
        remote = "./" + remote
    colon = False
    while True:
        if url.startswith("../"):
            url = url[3:]
            if "/" in remote:
                remote = remote[:remote.rindex("/")]
            elif ":" in remote:
                remote, colon = remote[:remote.rindex(":")], True
            elif relative or remote == ".":
                raise ValueError(f"cannot strip one component off url {base!r}")
            else:
                remote = "."
        elif url.startswith("./"):
            url = url[2:]
        else:
            break
    out = f"{remote}{':' if colon else '/'}{url}"
    if url.endswith("/"):
        out = out[:-1]
    return out[2:] if out.startswith("./") else out


def origin(url: str) -> tuple[str, str, int | None] | None:
    """(scheme, lower-case host, port with the scheme's default filled in) of a network URL;
    an scp-like ``user@host:path`` counts as ``ssh`` port 22. None for local paths and
    ``file://`` (no host, no credentials)."""
    if "://" in url:
        parts = urllib.parse.urlsplit(url)
        scheme = {"git+ssh": "ssh", "ssh+git": "ssh"}.get(parts.scheme.lower(), parts.scheme.lower())
        if scheme == "file" or not parts.hostname:
            return None
        try:
            port = parts.port
        except ValueError:
            return None
        return scheme, parts.hostname.lower(), port or DEFAULT_PORTS.get(scheme)
    if _local(url):
        return None
    return "ssh", url.split(":", 1)[0].rpartition("@")[2].lower(), 22


def credentials_for(url: str, main_url: str, credentials: source.Credentials | None) -> source.Credentials | None:
    """``credentials`` (the main repository's) when ``url`` has the same scheme, host and port
    as ``main_url``; None otherwise, so a token or key never goes to another host."""
    here = origin(url)
    return credentials if here is not None and here == origin(main_url) else None


@dataclass(frozen=True)
class Layer:
    """One repository of the walk: its mirror, the commit read, that commit's root tree, its
    clean URL, where its root sits in the superproject (``""`` or ``"apps/team-b/"``) and how
    deeply it is nested (0 for the superproject)."""

    repo: git.Repo
    commit: str
    tree: git.Tree
    url: str
    prefix: str = ""
    depth: int = 0


class Walker:
    """Walks the tree of one commit, entering submodules (or refusing them, ``follow=False``).

    ``repo``/``commit``/``url``: the superproject's mirror, full commit SHA and clean URL;
    ``credentials``: the superproject's (sent to same-host submodules only); ``timeout``:
    seconds per Git command. Every method raises ``source.SourceError`` naming the submodule's
    path and URL when a gitlink cannot be read.
    """

    def __init__(self, repo: git.Repo, commit: str, url: str, cache_dir, *, follow: bool = True,
                 credentials: source.Credentials | None = None, timeout: float = 60.0):
        self.top = Layer(repo, commit, repo.commit(commit).tree, url)
        self.cache_dir, self.follow, self.credentials, self.timeout = cache_dir, follow, credentials, timeout
        self._modules: dict[tuple[str, str], dict[str, str]] = {}
        self.entered = 0  # submodules opened so far

    def locate(self, root: str, shown: str) -> tuple[Layer, git.Tree]:
        """The directory ``root`` (normalised, ``.`` for the top) and the repository it is in,
        entering submodules on the way. ``shown``: ``--path`` as the user gave it, for messages.
        Raises PathMissing when it does not exist, SourceError when it is not a directory."""
        layer, node = self.top, self.top.tree
        for part in ([] if root == "." else root.split("/")):
            try:
                if node.type != "tree":
                    raise KeyError(part)
                node = node / part
            except KeyError:
                inside = f" (inside submodule {layer.prefix[:-1]!r} at {layer.commit})" if layer.depth else ""
                raise source.PathMissing(f"--path {shown!r} does not exist in commit {self.top.commit}{inside}") from None
            if node.type == "submodule":
                layer = self.open(layer, node)
                node = layer.tree
        if node.type != "tree":
            raise source.SourceError(f"--path {shown!r} is not a directory in commit {self.top.commit}")
        return layer, node

    def manifests(self, layer: Layer, tree: git.Tree) -> list[tuple[str, Layer, git.Blob]]:
        """Every ``*.yaml``/``*.yml`` blob below ``tree``, breadth first, as (path in the
        superproject, its repository, the blob); names starting with '.' are skipped, with
        everything below them; submodules are entered (at most MAX_DEPTH deep)."""
        found = []
        queue = deque([(layer, tree)])
        while queue:
            layer, tree = queue.popleft()
            for item in tree:
                name = posixpath.basename(item.path)
                if name.startswith("."):
                    continue
                if item.type == "tree":
                    queue.append((layer, item))
                elif item.type == "submodule":
                    sub = self.open(layer, item)
                    queue.append((sub, sub.tree))
                elif item.type == "blob" and name.endswith(source.MANIFEST_SUFFIXES):
                    found.append((layer.prefix + item.path, layer, item))
        return found

    def open(self, layer: Layer, gitlink) -> Layer:
        """The repository of ``gitlink`` (a tree item of type "submodule" in ``layer``) at the
        commit it records, fetched unless its mirror for the credentials it gets (``credentials_for``,
        or those in its URL) already has that commit."""
        shown, sha = layer.prefix + gitlink.path, gitlink.hexsha
        self.entered += 1
        url = self._urls(layer).get(gitlink.path)
        named = f"submodule {shown!r} ({source.redact(url) if url else 'no URL in .gitmodules'})"
        if not self.follow:
            raise source.SourceError(f"{named} is under --path, and --no-submodules refuses submodules")
        if not url:
            raise source.SourceError(f"{named} at commit {sha} cannot be read: .gitmodules of commit "
                                     f"{layer.commit} has no URL for path {gitlink.path!r}")
        if layer.depth >= MAX_DEPTH:
            raise source.SourceError(f"{named} is nested more than {MAX_DEPTH} submodules deep")
        try:
            resolved = resolve_url(url, layer.url)
        except ValueError as err:
            raise source.SourceError(f"{named}: {source.redact(str(err))}") from None
        if resolved.startswith("-") or ("://" not in resolved and _local(resolved) and not resolved.startswith("/")):
            raise source.SourceError(f"{named}: the URL is neither absolute nor relative to the superproject "
                                     "(./ or ../), so it is refused")
        clean, creds = source.effective(resolved, credentials_for(resolved, self.top.url, self.credentials))
        what = f"fetching submodule {shown!r} from {source.redact(clean)} (commit {sha})"
        if _local_url(clean) and not file_protocol_allowed(
                {k: _git_config(k) for k in ("protocol.file.allow", "protocol.allow")},
                os.environ.get("GIT_ALLOW_PROTOCOL")):  # checked here too: a cached mirror is read without a fetch
            raise source.SourceError(f"{what} failed: transport 'file' not allowed{FILE_PROTOCOL_HINT}")
        try:
            repo, _ = source.mirror(clean, self.cache_dir, self.timeout, credentials=creds, what=what,
                                    want=sha, env={"GIT_PROTOCOL_FROM_USER": "0"})
            tree = repo.commit(sha).tree
        except source.SourceError as err:
            hint = FILE_PROTOCOL_HINT if "transport 'file' not allowed" in str(err) else ""
            raise source.SourceError(f"{err}{hint}") from None
        except (ValueError, git.GitError) as err:
            raise source.SourceError(f"{what} failed: commit {sha} is not in it ({type(err).__name__})") from None
        return Layer(repo, sha, tree, clean, shown + "/", layer.depth + 1)

    def _urls(self, layer: Layer) -> dict[str, str]:
        """path -> URL of every submodule in ``layer``'s ``.gitmodules`` (empty without one)."""
        key = (layer.prefix, layer.commit)
        if key not in self._modules:
            self._modules[key] = _gitmodules(layer)
        return self._modules[key]


def _gitmodules(layer: Layer) -> dict[str, str]:
    try:
        layer.tree / ".gitmodules"
    except KeyError:
        return {}
    try:
        out = layer.repo.git.config("--blob", f"{layer.commit}:.gitmodules", "-z", "--get-regexp",
                                    r"^submodule\..*\.(path|url)$")
    except git.GitCommandError as err:
        if err.status == 1:  # no such keys
            return {}
        where = f" of submodule {layer.prefix[:-1]!r}" if layer.depth else ""
        raise source.SourceError(f".gitmodules{where} at commit {layer.commit} cannot be parsed: "
                                 f"{source.redact(str(err.stderr or err).strip())[:300]}") from None
    paths, urls = {}, {}
    for entry in filter(None, out.split("\0")):
        key, _, value = entry.partition("\n")
        name, _, variable = key[len("submodule."):].rpartition(".")
        (paths if variable == "path" else urls)[name] = value
    return {posixpath.normpath(path): urls.get(name, "") for name, path in paths.items()}
