"""The manifest files of one commit (``Snapshot``), read from a mirror's tree objects.

Files are read from the commit's tree objects, never from a work tree: nothing outside the
repository can be read, and symlinks are resolved inside the tree or refused. Submodules under
``--path`` are followed through ``agent/source/submodules.py``. Apart from ``mirror`` (fetching)
so that submodules can fetch through ``mirror`` without an import cycle.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import git

from agent.manifests.loader import MAX_FILE_BYTES  # pure: the limit load() applies too
from agent.source import gitproc, mirror, mirrorrepo, submodules as gitlinks

MAX_FILES = 20_000
"""Manifest files a snapshot may hold (over all submodules): room for 10,000 Applications of
one file each, twice over; beyond it the whole commit is refused (a path pointed at the wrong
tree, a generator gone wrong) rather than read for minutes."""
SYMLINK_MODE = 0o120000


@dataclass(frozen=True)
class Snapshot:
    """The manifest files of one commit.

    ``commit``: full 40-hex SHA. ``files``: repo-relative posix path -> raw bytes, every
    ``*.yaml``/``*.yml`` under the configured path (a ``Files`` mapping: a file ``read`` was
    told is unneeded is read from Git only when asked for). ``problems``: (path, message) for
    files that were refused (symlink leaving the repository, over the size limit, too many
    files). ``blobs``: path -> the Git blob id (40 hex) of the bytes in ``files`` (the parse
    cache's key).
    """

    commit: str
    files: "Files" = field(default_factory=lambda: Files())
    blobs: dict[str, str] = field(default_factory=dict)
    problems: list[tuple[str, str]] = field(default_factory=list)
    plain: bool = False  # read from the superproject alone: no submodule entered, no symlink followed


class Files(Mapping):
    """Path -> bytes of a snapshot's files. ``put`` stores bytes read; ``defer`` stores a Git
    blob whose bytes are read (again) each time they are asked for, and not kept."""

    def __init__(self, read: dict[str, bytes] | None = None):
        self._read = dict(read or {})
        self._deferred: dict[str, object] = {}

    def put(self, path: str, data: bytes) -> None:
        self._read[path] = data
        self._deferred.pop(path, None)

    def defer(self, path: str, blob) -> None:
        """``blob``: a GitPython blob, or (repository, blob id) to look it up only when read."""
        self._deferred[path] = blob
        self._read.pop(path, None)

    def only(self, paths) -> "Files":
        """The files of ``paths`` (each one of these), read or deferred as here."""
        part = Files()
        part._read = {p: self._read[p] for p in paths if p in self._read}
        part._deferred = {p: self._deferred[p] for p in paths if p in self._deferred}
        return part

    def __getitem__(self, path: str) -> bytes:
        if path in self._read:
            return self._read[path]
        blob = self._deferred[path]
        if isinstance(blob, tuple):
            repo, sha = blob
            return repo.odb.stream(bytes.fromhex(sha)).read()
        return blob.data_stream.read()

    def __iter__(self):
        yield from self._read
        yield from self._deferred

    def __len__(self) -> int:
        return len(self._read) + len(self._deferred)


def read(url: str, commit: str, cache_dir: str | os.PathLike, path: str = ".", *,
         max_file_bytes: int = MAX_FILE_BYTES, max_files: int = MAX_FILES, submodules: bool = True,
         credentials: mirror.Credentials | None = None, timeout: float = 60.0,
         unneeded: Callable[[str, str], bool] | None = None) -> Snapshot:
    """The manifest files under ``path`` in ``commit`` of the mirror of ``url`` fetched with
    ``credentials`` (by ``fetch``, in this or another process); files and directories whose
    names start with '.' (``.github/``, ``.gitlab-ci.yml``) are skipped.

    ``path`` is relative to the repository root and must stay inside it and exist in the
    commit (a mistyped path must not look like "no Applications"); it may lead into a
    submodule. Files larger than ``max_file_bytes`` bytes are refused unread; beyond
    ``max_files`` files (counted over all submodules) the snapshot is refused whole.

    Submodules (gitlinks) under ``path`` are followed (``agent/source/submodules.py``): fetched with
    ``credentials`` only when on the main repository's host, within ``timeout`` seconds per Git
    command, unless their mirror already holds the commit; their files appear under the
    submodule's path. With ``submodules=False`` any gitlink under ``path`` is refused. A
    mirror is read only when fetched with the same credentials (``cache_path``), so a submodule
    naming another source's private URL must be fetched. Raises SourceError (no mirror for
    these credentials; naming the submodule and its URL when one cannot be read) or
    PathMissing; a gitlink is never read as an empty directory.

    ``unneeded(path, blob id) -> bool``: True for a file whose bytes the caller will not read
    (``manifests.parsed_before``: the parse cache holds it). Such a file is neither sized nor
    read here, which saves two Git round trips a file on a pass whose files did not change; its
    bytes are read if asked for after all. A blob id names its bytes, so a blob that was under
    the size limit once is under it always.
    """
    root = posixpath.normpath(path.replace(os.sep, "/")) if path else "."
    if root.startswith("/") or root == ".." or root.startswith("../"):
        raise mirror.SourceError(f"--path {path!r} leaves the repository; give a path inside it")
    clean, credentials = mirror.effective(url, credentials)
    try:
        repo = git.Repo(mirror.cache_path(cache_dir, clean, credentials))  # also the status page's: its own
    except (git.NoSuchPathError, git.InvalidGitRepositoryError):
        raise mirror.SourceError(f"{mirror.redact(clean)} has no mirror in the cache {cache_dir} fetched with these "
                          "credentials; fetch it first") from None
    walker = gitlinks.Walker(repo, commit, clean, cache_dir, follow=submodules, credentials=credentials,
                             timeout=timeout)
    layer, tree = walker.locate(root, path)
    blobs = walker.manifests(layer, tree)
    if len(blobs) > max_files:
        raise mirror.SourceError(f"{len(blobs)} manifest files under {path!r}; the limit is {max_files}")
    snapshot = Snapshot(commit=commit, plain=layer is walker.top and not walker.entered and not any(
        blob.mode == SYMLINK_MODE for _, _, blob in blobs))
    for shown, layer, blob in blobs:
        target = blob
        if blob.mode == SYMLINK_MODE:
            target, problem = _follow(layer.tree, blob)
            if problem:
                snapshot.problems.append((shown, problem))
                continue
        if unneeded is not None and unneeded(shown, target.hexsha):
            snapshot.files.defer(shown, target)
        elif target.size > max_file_bytes:
            snapshot.problems.append((shown, f"file is {target.size} bytes; the limit is {max_file_bytes} bytes"))
            continue
        else:
            snapshot.files.put(shown, target.data_stream.read())
        snapshot.blobs[shown] = target.hexsha
    snapshot.problems.sort()
    return snapshot


def read_since(url: str, before: Snapshot, commit: str, cache_dir: str | os.PathLike, path: str = ".", *,
               max_file_bytes: int = MAX_FILE_BYTES, max_files: int = MAX_FILES,
               credentials: mirror.Credentials | None = None,
               unneeded: Callable[[str, str], bool] | None = None) -> Snapshot | None:
    """The snapshot ``read`` gives for ``commit``, built from ``before`` (what ``read`` gave for
    an earlier commit with the same ``path`` and limits; its ``files`` are not used) and the files
    Git says changed between the two commits (``git diff-tree -r``): a pass after a push reads
    the few files the push changed, not 10,000 tree entries (issue 33). Arguments as ``read``'s.

    None when only ``read`` can tell, and the caller reads in full: ``before`` is not ``plain``
    (a submodule or symlink can change what a file reads without a change in the superproject),
    a symlink or submodule changed anywhere in the repository, no manifest file is left under
    ``path`` (it may be gone: ``read`` says so), a path is not UTF-8, or Git cannot diff (an
    earlier commit no longer in the mirror). Raises SourceError as ``read`` does for too many files.
    ``unneeded`` is asked about changed files only: the others are deferred (read if asked for)."""
    if not before.plain or before.commit == commit or not before.blobs:
        return None
    root = posixpath.normpath(path.replace(os.sep, "/")) if path else "."
    clean, credentials = mirror.effective(url, credentials)
    try:
        repo = mirrorrepo.opened(mirror.cache_path(cache_dir, clean, credentials))  # a pass's only
        raw = gitproc.run(["diff-tree", "-r", "-z", "--raw", "--no-renames", before.commit, commit],
                          cwd=repo.git_dir, text=False)
        changes = _changes(raw.decode("utf-8"))
    except (git.GitError, gitproc.Failed, UnicodeDecodeError, ValueError, OSError):
        return None
    if changes is None:
        return None
    blobs, problems = dict(before.blobs), dict(before.problems)
    changed = {}
    for changed_path, sha in changes:
        if _manifest_under(root, changed_path):
            blobs.pop(changed_path, None)
            problems.pop(changed_path, None)
            if sha is not None:
                changed[changed_path] = sha
    blobs.update(changed)
    if not blobs and not problems:
        return None
    if len(blobs) + len(problems) > max_files:
        raise mirror.SourceError(f"{len(blobs) + len(problems)} manifest files under {path!r}; the limit is {max_files}")
    snapshot = Snapshot(commit=commit, plain=True, problems=list(problems.items()))
    for shown, sha in blobs.items():
        if shown not in changed or (unneeded is not None and unneeded(shown, sha)):
            snapshot.files.defer(shown, (repo, sha))  # unchanged: under the limit before; read if asked for
        elif (size := repo.odb.info(bytes.fromhex(sha)).size) > max_file_bytes:
            snapshot.problems.append((shown, f"file is {size} bytes; the limit is {max_file_bytes} bytes"))
            continue
        else:
            snapshot.files.put(shown, repo.odb.stream(bytes.fromhex(sha)).read())
        snapshot.blobs[shown] = sha
    snapshot.problems.sort()
    return snapshot


def _changes(raw: str) -> list[tuple[str, str | None]] | None:
    """(path, new blob id or None when deleted) of each file in ``git diff-tree -r -z --raw``'s
    output (``:old-mode new-mode old-sha new-sha status NUL path NUL``); None when a symlink or
    submodule (gitlink) is among them, before or after."""
    fields = raw.split("\0")
    out = []
    for header, changed_path in zip(fields[0::2], fields[1::2]):
        old_mode, new_mode, _, new_sha, status = header.lstrip(":").split(" ")
        if {old_mode, new_mode} & {"120000", "160000"}:
            return None
        out.append((changed_path, None if status.startswith("D") else new_sha))
    return out


def _manifest_under(root: str, file: str) -> bool:
    """True when ``read`` reads ``file`` (a path in the repository) as a manifest under ``root``:
    a ``*.yaml``/``*.yml`` file below it, no name below ``root`` starting with '.'."""
    if root != ".":
        if not file.startswith(root + "/"):
            return False
        file = file[len(root) + 1:]
    return file.endswith(mirror.MANIFEST_SUFFIXES) and not any(part.startswith(".") for part in file.split("/"))


def _follow(tree, link) -> tuple[object | None, str | None]:
    """Resolve a symlink blob inside ``tree``; (blob, None) or (None, why it is refused)."""
    target = link.data_stream.read().decode("utf-8", "replace")
    if target.startswith("/"):
        return None, f"symlink to absolute path {target!r} is refused (it leaves the repository)"
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(link.path), target))
    if resolved == ".." or resolved.startswith("../"):
        return None, f"symlink to {target!r} is refused (it leaves the repository)"
    try:
        item = tree / resolved
    except KeyError:
        return None, f"symlink to {target!r} points to nothing in this commit"
    except ValueError:  # a directory on the way holds a name Git refuses (submodules.entries)
        return None, f"symlink to {target!r} goes through a directory Git would refuse"
    if item.type != "blob" or item.mode == SYMLINK_MODE:
        return None, f"symlink to {target!r} is not a regular file; only file symlinks are followed"
    return item, None
