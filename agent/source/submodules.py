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
submodules on the same scheme, host and port. A network submodule is fetched only from the main
repository's host or one ``--submodule-hosts`` names (``host_allowed``), and an error fetching
one repeats nothing that remote wrote (``mirror(quiet=True)``): a commit chooses the URL.
``.gitmodules`` is read with includes off and a timeout (``_gitmodules``).

This module imports ``git`` too (with ``agent/source/mirror.py``, the only two that do).
"""

from __future__ import annotations

import ast
import fnmatch
import os
import posixpath
import re
import urllib.parse
from collections import deque
from dataclasses import dataclass

import git

from agent.source import gitproc, mirror as source

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
    """``git config --get NAME`` as Git would read it here (system, global, ``GIT_CONFIG_*``);
    None when unset or when Git fails (``gitproc``'s timeout)."""
    try:
        return gitproc.run(["config", "--get", name], cwd=os.sep).strip()
    except gitproc.Failed:
        return None


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


def entries(tree: git.Tree, layer: Layer, commit: str) -> list:
    """The entries of ``tree`` (a directory of ``layer``, read for the superproject's ``commit``).
    Raises SourceError naming the directory and the entry when one has a name Git itself refuses
    in a tree (``.``, ``..``, ``.git`` or a spelling of it that some file system reads as it, an
    empty name: ``verify_path`` in Git, checked by GitPython as it reads the tree), so that a
    hostile tree fails the pass by name instead of with an internal error (issue 42)."""
    try:
        return list(tree)
    except ValueError as err:
        where = layer.prefix + tree.path if tree.path else layer.prefix[:-1] or "."
        name = _refused_name(err)
        raise source.SourceError(f"directory {where!r} in commit {commit} holds an entry named {name}, a name Git "
                                 "refuses in a tree ('.', '..', '.git' or a spelling of it, an empty name); "
                                 "the commit is refused") from None


def _entry(tree: git.Tree, name: str, layer: Layer, commit: str):
    """``tree / name`` (KeyError when there is none), checked as ``entries`` checks."""
    entries(tree, layer, commit)
    return tree / name


def _refused_name(err: ValueError) -> str:
    """The entry name in GitPython's refusal (``Invalid repository path 'tree/NAME'``, ``Repository
    path aliases Git metadata: 'tree/NAME'``), quoted as Python quotes it (control characters
    escaped); the whole message, quoted, when it holds none."""
    text = str(err)
    found = re.search(r"""(['"])tree/.*\1$""", text, re.S)
    if found:
        try:
            return repr(ast.literal_eval(found.group(0)).removeprefix("tree/"))
        except (ValueError, SyntaxError):
            pass
    return repr(text)


def host_allowed(url: str, main_url: str, allowed: tuple[str, ...] = ()) -> bool:
    """Whether a submodule at ``url`` may be fetched for the repository at ``main_url``: a local
    or ``file://`` URL always (Git's file-protocol policy decides, ``file_protocol_allowed``);
    a network URL when its host is ``main_url``'s (any scheme or port: ``https://`` beside
    ``ssh://`` on one server) or matches one of ``allowed`` (lower-case names or ``fnmatch``
    globs, ``*.example.com``; ``*`` allows every host). Why (issue 42): whoever writes to the
    repository names the URL, and the agent fetches it from where it runs: any URL would let
    a commit send requests to any address the agent reaches (cloud metadata, internal
    services: request forgery, and a port scanner from the errors)."""
    here = origin(url)
    if here is None:
        return _local_url(url)  # else a network URL with no host Git would read (https:///x)
    main = origin(main_url)
    if main is not None and here[1] == main[1]:
        return True
    return any(fnmatch.fnmatchcase(here[1], pattern) for pattern in allowed)


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
                node = _entry(node, part, layer, self.top.commit)
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
            for item in entries(tree, layer, self.top.commit):
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
        allowed = self.credentials.submodule_hosts if self.credentials else ()
        if not host_allowed(clean, self.top.url, allowed):
            raise source.SourceError(f"{what} refused: its host {origin(clean)[1]!r} is not --repo's; a submodule "
                                     "is fetched only from --repo's host or one --submodule-hosts names")
        if _local_url(clean) and not file_protocol_allowed(
                {k: _git_config(k) for k in ("protocol.file.allow", "protocol.allow")},
                os.environ.get("GIT_ALLOW_PROTOCOL")):  # checked here too: a cached mirror is read without a fetch
            raise source.SourceError(f"{what} failed: transport 'file' not allowed{FILE_PROTOCOL_HINT}")
        try:
            repo, _ = source.mirror(clean, self.cache_dir, self.timeout, credentials=creds, what=what,
                                    want=sha, env={"GIT_PROTOCOL_FROM_USER": "0"}, quiet=True)
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
            self._modules[key] = _gitmodules(layer, self.timeout)
        return self._modules[key]


def _gitmodules(layer: Layer, timeout: float) -> dict[str, str]:
    """path -> URL of each submodule named in ``.gitmodules`` of ``layer``'s commit (empty without
    the file), read by ``git config --blob --no-includes`` within ``timeout`` seconds. Includes
    off (issue 42): with ``--blob`` Git honours ``[include] path=...`` by default, so a commit
    could make it read any file of the agent's machine (``/proc/self/fd/1``: for ever). Raises
    SourceError naming the commit when Git refuses the file or is cut short."""
    try:
        layer.tree / ".gitmodules"
    except KeyError:
        return {}
    where = f" of submodule {layer.prefix[:-1]!r}" if layer.depth else ""
    try:
        out = gitproc.run(["config", "--no-includes", "--blob", f"{layer.commit}:.gitmodules", "-z", "--get-regexp",
                           r"^submodule\..*\.(path|url)$"], cwd=layer.repo.git_dir, timeout=timeout)
    except gitproc.Failed as err:
        if err.status == 1:  # no such keys
            return {}
        why = ("interrupted: the agent is shutting down" if err.cancelled else
               f"Git did not read it within {timeout:g}s" if err.timed_out else
               source.redact(str(err.stderr or err).strip())[:300])
        raise (source.Interrupted if err.cancelled else source.SourceError)(
            f".gitmodules{where} at commit {layer.commit} cannot be parsed: {why}") from None
    paths, urls = {}, {}
    for entry in filter(None, out.split("\0")):
        key, _, value = entry.partition("\n")
        name, _, variable = key[len("submodule."):].rpartition(".")
        (paths if variable == "path" else urls)[name] = value
    return {posixpath.normpath(path): urls.get(name, "") for name, path in paths.items()}
