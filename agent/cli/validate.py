"""``validate``: every problem in a directory or commit of Application YAML, with no cluster.

Reuses ``manifests.load`` (YAML syntax, the spec schema, DNS-1123 names, duplicate identities,
unknown fields, ``metadata`` keys, labels and annotations as ``agent/manifests/metadata.py`` checks them:
the same rules ``sync`` applies) and adds the whole document against the packaged CRD's
``openAPIV3Schema`` (``crd.problems``). A document that passes here is not refused by the API
server later.

Two sources: a plain directory on disk (a pre-commit hook validates the work tree) or, as
``sync`` reads it, a commit of a Git repository.
"""

from __future__ import annotations

import os
import posixpath
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from agent.api import crd
from agent.kinds import ingress, podspec
from agent.manifests import loader as manifests, specrules
from agent.manifests.loader import Manifest, ManifestError
from agent.source import mirror as source, snapshot as snapshots

MAX_FILE_BYTES = manifests.MAX_FILE_BYTES
MAX_FILES = snapshots.MAX_FILES



@dataclass
class Result:
    """What ``validate`` found. ``files``: number of manifest files read; ``manifests``: the
    valid Applications; ``errors``: every problem, sorted by (path, line); ``commit``: the full
    SHA read (None for a directory); ``fatal``: a problem that stopped reading at all (bad
    ``--path``, unreachable repository), None otherwise; ``seconds``: wall time;
    ``fetch_seconds``: how long the fetch took, None when nothing was fetched (a directory, or
    a mirror that had the commit already), as ``sync`` reports it."""

    files: int = 0
    manifests: list[Manifest] = field(default_factory=list)
    errors: list[ManifestError] = field(default_factory=list)
    commit: str | None = None
    fatal: str | None = None
    seconds: float = 0.0
    fetch_seconds: float | None = None

    @property
    def ok(self) -> bool:
        return not self.errors and not self.fatal


def read_directory(directory: str, *, max_file_bytes: int = MAX_FILE_BYTES, max_files: int = MAX_FILES,
                   submodules: bool = True) -> tuple[dict[str, bytes], list[ManifestError]]:
    """The ``*.yaml``/``*.yml`` files under ``directory`` on disk, skipping names that start
    with '.', as ``{path: bytes}`` with paths as the user would open them (``directory``
    joined with the file's relative path, posix separators). Symlinks follow the rules of a
    commit (``snapshots._follow``; the repository is the Git work tree holding ``directory``,
    else ``directory`` itself, ``work_tree``): a symlink to a regular file inside the
    repository is read; one to an absolute path or leaving the repository, to nothing, to a directory or to another symlink is refused (one ManifestError
    each, as is a symlink to a directory named ``*.yaml``). Anything else that is not a
    regular file (a FIFO, a socket, a device) is refused and never opened; files over
    ``max_file_bytes`` are refused unread; beyond ``max_files`` every file is refused.
    A directory under it that cannot be listed is a ManifestError too (nothing is skipped
    unsaid), and so is, with ``submodules=False``, a submodule's checkout under it (a directory
    holding ``.git``), as ``--no-submodules`` refuses a gitlink in a commit; with the default
    its files are read as the directory's. Raises ``NotADirectoryError``, ``FileNotFoundError`` or ``PermissionError`` for a
    bad ``directory``."""
    root = Path(directory)
    try:
        exists, is_dir = root.exists(), root.is_dir()
    except OSError as err:  # a parent that may not be searched
        raise PermissionError(f"--path {directory!r} cannot be read: {err.strerror or err}") from None
    if not exists:
        raise FileNotFoundError(f"--path {directory!r} does not exist")
    if not is_dir:
        raise NotADirectoryError(f"--path {directory!r} is not a directory")
    real_root = Path(os.path.realpath(root))
    top, in_submodule = work_tree(real_root)
    if in_submodule and not submodules:
        return {}, [ManifestError(directory, None, None, f"is in the checkout of a Git submodule ({top}), "
                                  "and --no-submodules refuses submodules")]
    found: list[Path] = []
    unreadable: list[ManifestError] = []  # a directory os.walk could not list: fail, never skip it silently

    def shown_as(where: Path) -> str:
        return where.as_posix() if directory not in (".", "./") else where.relative_to(root).as_posix()

    def cannot_list(err: OSError) -> None:
        unreadable.append(ManifestError(shown_as(Path(err.filename or root)), None, None,
                                        f"cannot be read: {err.strerror or err}"))
    for dirpath, dirnames, filenames in os.walk(root, onerror=cannot_list):
        # a symlink to a directory is listed in dirnames (and never walked): as in a commit,
        # one named *.yaml is a symlink that is not a file symlink, refused below
        linked = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in linked)
        if not submodules:
            checkouts = [d for d in dirnames if os.path.lexists(os.path.join(dirpath, d, ".git"))]
            unreadable += [ManifestError(shown_as(Path(dirpath) / d), None, None, "is a Git submodule (it holds "
                                         ".git), and --no-submodules refuses submodules") for d in checkouts]
            dirnames[:] = [d for d in dirnames if d not in checkouts]
        found += [Path(dirpath) / f for f in sorted(filenames + linked)
                  if not f.startswith(".") and f.endswith(source.MANIFEST_SUFFIXES)]
    shown = {p: p.as_posix() if directory not in (".", "./") else p.relative_to(root).as_posix() for p in found}
    if len(found) > max_files:
        return {}, [ManifestError(directory, None, None, f"{len(found)} manifest files; the limit is {max_files}")]
    files: dict[str, bytes] = {}
    errors: list[ManifestError] = unreadable
    for file in sorted(found, key=lambda f: shown[f]):
        name = shown[file]
        data, problem = _read_file(file, top or real_root, max_file_bytes, "repository" if top else "directory")
        if problem:
            errors.append(ManifestError(name, None, None, problem))
        else:
            files[name] = data
    return files, errors


def work_tree(directory: Path) -> tuple[Path | None, bool]:
    """(the top of the Git work tree holding ``directory`` (a real path), whether that work tree
    is a submodule's checkout), or (None, False) outside any. Git's rule: the nearest directory
    upwards holding ``.git``; a submodule's ``.git`` is a file naming a gitdir under its
    superproject's ``.git/modules/``."""
    for top in (directory, *directory.parents):
        marker = top / ".git"
        try:
            if marker.is_dir():
                return top, False
            if marker.is_file():
                gitdir = marker.read_text(errors="replace").partition("gitdir:")[2].strip()
                return top, "/modules/" in "/" + gitdir.replace(os.sep, "/")
        except OSError:
            return None, False
    return None, False


def _read_file(file: Path, real_top: Path, max_file_bytes: int, top_is: str) -> tuple[bytes | None, str | None]:
    """(the bytes of ``file``, None) or (None, why it is refused); never blocks on a FIFO and
    never raises for what is on disk. A symlink is followed to a regular file inside
    ``real_top`` (a real path: the Git work tree, as a commit's symlinks are read within the
    repository, else the directory validated; ``top_is`` names which)."""
    leaves = f"is refused (it leaves the {top_is})"
    try:
        mode = os.lstat(file).st_mode
        if stat.S_ISLNK(mode):
            target = os.readlink(file)
            if os.path.isabs(target):
                return None, f"symlink to absolute path {target!r} {leaves}"
            parent = Path(os.path.realpath(file.parent)).relative_to(real_top).as_posix()
            relative = posixpath.normpath(posixpath.join(parent, target))
            if relative == ".." or relative.startswith("../"):
                return None, f"symlink to {target!r} {leaves}"
            file = real_top / relative
            try:
                mode = os.lstat(file).st_mode
            except OSError:  # missing, or a path through a file or a symlink loop
                return None, f"symlink to {target!r} points to nothing"
            if not stat.S_ISREG(mode):
                return None, f"symlink to {target!r} is not a regular file; only file symlinks are followed"
            if not Path(os.path.realpath(file)).is_relative_to(real_top):  # through a linked directory
                return None, f"symlink to {target!r} {leaves}"
        elif not stat.S_ISREG(mode):
            return None, f"is not a regular file ({_kind(mode)}); only regular files and file symlinks are read"
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
        with os.fdopen(fd, "rb") as handle:
            opened = os.fstat(handle.fileno())
            if not stat.S_ISREG(opened.st_mode):  # replaced since lstat
                return None, f"is not a regular file ({_kind(opened.st_mode)}); only regular files and file " \
                             "symlinks are read"
            if opened.st_size > max_file_bytes:
                return None, f"file is {opened.st_size} bytes; the limit is {max_file_bytes} bytes"
            data = handle.read(max_file_bytes + 1)
    except OSError as err:
        return None, f"cannot be read: {err.strerror or err}"
    if len(data) > max_file_bytes:  # grew since fstat
        return None, f"file is over {max_file_bytes} bytes; the limit is {max_file_bytes} bytes"
    return data, None


def _kind(mode: int) -> str:
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return kind
    return "not a file"


def check(files: dict[str, bytes], namespace: str, refused: list[ManifestError] = (),
          allow_snippets: bool = False, default_profile: str = podspec.NONE) -> Result:
    """Validate ``files`` (path -> bytes) as ``sync`` would, plus the apply-time rules of the
    module docstring. ``refused``: problems found while reading (kept in the result);
    ``allow_snippets``: ``--allow-ingress-snippets`` (else an Ingress annotation that injects
    controller configuration is a problem at its own line, ``ingress.snippets``);
    ``default_profile``: ``--default-security-profile``, under which a spec without a profile is
    checked as the pass renders it (``_profile_problems``).
    Raises ValueError for an invalid default ``namespace``."""
    loaded = manifests.load(files, namespace, max_file_bytes=MAX_FILE_BYTES)
    errors = list(refused) + loaded.errors
    valid = []
    for manifest in loaded.manifests:
        found = [(sub, f"{message} (rule from crd.yaml)") for sub, message in crd.problems(manifest.body)]
        if not allow_snippets:
            found += [(("spec", "ingress", "annotations", key), ingress.snippet_refusal(key))
                      for key in ingress.snippets(manifest.body.get("spec") or {})]
        found += _profile_problems(manifest.body, default_profile)
        if not found:
            valid.append(manifest)
            continue
        lines = manifests.field_lines(files[manifest.path], manifest.line)
        errors += [ManifestError(manifest.path, manifests._line(lines, sub) if lines else manifest.line,
                                 manifests._dotted(sub) or None, message) for sub, message in found]
    unique = {(e.path, e.line or 0, e.field or "", e.message): e for e in errors}
    return Result(files=len(files) + len({e.path for e in refused}), manifests=valid,
                  errors=[unique[k] for k in sorted(unique)])


def _profile_problems(body: dict, default_profile: str) -> list[tuple[tuple, str]]:
    """What the pass refuses of the Application ``body`` only because ``default_profile`` gives
    its spec a profile (``podspec.with_default_profile``; ``runAsUser: 0`` under ``restricted``),
    each as (path from the document, message; the rule's message names the flag). Empty when the spec names a
    profile, or the default is ``none``."""
    spec = body.get("spec")
    profiled = podspec.with_default_profile(spec, default_profile)
    if profiled is spec:
        return []
    name = (body.get("metadata") or {}).get("name", "")
    return [(("spec",) + where, why)
            for where, why in specrules.live_problems(profiled, name)
            if (where, why) not in specrules.live_problems(spec, name)]


def run(*, path: str, repo: str | None = None, ref: str | None = None, namespace: str = "default",
        cache_dir: str | None = None, fetch_timeout: float = 60.0,
        credentials: source.Credentials | None = None, submodules: bool = True,
        allow_snippets: bool = False, default_profile: str = podspec.NONE) -> Result:
    """Validate a directory (``repo`` None: ``path`` on disk) or the files under ``path`` in
    the commit ``ref`` of ``repo`` (fetched into ``cache_dir`` as ``sync`` does).
    ``submodules``: follow submodules under ``path`` (False: one there is a problem, as for
    ``sync --no-submodules``). Never raises for bad input: a source that cannot be read sets
    ``Result.fatal``. ``allow_snippets``, ``default_profile``: as ``check``'s."""
    started = time.monotonic()
    commit = fetch_seconds = None
    try:
        if repo is None:
            files, refused = read_directory(path, submodules=submodules)
        else:
            fetched = source.fetch(repo, ref, cache_dir, fetch_timeout, credentials=credentials)
            commit = fetched.commit
            fetch_seconds = time.monotonic() - started if fetched.fetched else None
            snapshot = snapshots.read(repo, commit, cache_dir, path, credentials=credentials, timeout=fetch_timeout,
                                   submodules=submodules)
            files = snapshot.files
            refused = [ManifestError(p, None, None, m) for p, m in snapshot.problems]
        result = check(files, namespace, refused, allow_snippets, default_profile)
    except (OSError, source.SourceError, ValueError) as err:
        result = Result(fatal=source.redact(str(err), repo))
    result.commit, result.fetch_seconds = commit, fetch_seconds
    result.seconds = time.monotonic() - started
    return result

