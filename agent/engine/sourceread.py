"""Stage 1 of a pass: read the commit's documents (``read``), through the parse cache.

Why a stage of its own: ``run`` reuses a read while the commit stays (``steady.Source``), and
reads a new commit from the files Git says changed since the last one when that tells
(``snapshot.read_since``, ``loader.load_changed``); everything after works from what Git wants.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import cast

from agent.engine import steady as steady_
from agent.engine.options import Options
from agent.manifests import loader as manifests, parsecache
from agent.source import mirror as source, snapshot as snapshots

log = logging.getLogger("agent.sync")


@dataclass(frozen=True)
class SourceRead:
    """What a pass keeps of reading its commit: the snapshot's problems ((path, message)) and blob
    ids (path -> blob), the loaded documents (``manifests.LoadResult``) and the notes about the
    read (``steady.Source.read``: ``run`` reuses it while the commit stays)."""

    problems: list[tuple[str, str]]
    blobs: dict[str, str]
    loaded: manifests.LoadResult
    notes: list[str]
    plain: bool = False  # ``Snapshot.plain``: the next commit can be read from this one's (``read_since``)


def read(opts: Options, commit: str, before: steady_.Source | None = None) -> SourceRead:
    """Read and parse the documents under ``opts.path`` at ``commit`` (through the parse cache
    beside the mirror); with ``before`` (``run``'s read of an earlier commit), only the files
    Git says changed since, when that tells (``snapshot.read_since``, ``loader.load_changed``).
    Raises ``source.SourceError`` (a missing path without ``allow_empty``)."""
    cache = parsecache.beside(source.cache_path(opts.cache_dir, opts.repo, opts.credentials), opts.source_id)
    snapshot, notes, since = _snapshot(opts, commit, before, cache)
    loaded = _load_changed(opts, _read_of(before), snapshot, cache) if since and before is not None else None
    log.debug("commit %s read %s", commit, f"from the files changed since {before.commit}" if loaded and before
              else "in full")
    if loaded is None:
        loaded = manifests.load(snapshot.files, opts.namespace, blobs=snapshot.blobs, cache=cache)
        unsaved = cache.save()
        if unsaved:  # a full disk says so in the report, never silently
            notes = [*notes, unsaved]
    return SourceRead(snapshot.problems, snapshot.blobs, loaded, notes, snapshot.plain)  # the bytes are let go


def _read_of(before: steady_.Source) -> SourceRead:
    """The read ``steady.Source`` keeps (opaque there: ``steady`` is below this module)."""
    return cast(SourceRead, before.read)


def _snapshot(opts: Options, commit: str, before: steady_.Source | None,
              cache: parsecache.ParseCache) -> tuple[snapshots.Snapshot, list[str], bool]:
    """(the ``Snapshot`` of ``commit``, notes, whether it was read from ``before``'s)."""
    def unneeded(path: str, blob: str) -> bool:
        return manifests.parsed_before(cache, path, blob, opts.namespace)
    try:
        if before is not None and _read_of(before).plain:
            read = _read_of(before)
            earlier = snapshots.Snapshot(before.commit, blobs=read.blobs, problems=read.problems, plain=True)
            snapshot = snapshots.read_since(opts.repo, earlier, commit, opts.cache_dir, opts.path,
                                            credentials=opts.credentials, unneeded=unneeded)
            if snapshot is not None:
                return snapshot, [], True
        return snapshots.read(opts.repo, commit, opts.cache_dir, opts.path, submodules=opts.submodules,
                              credentials=opts.credentials, timeout=opts.fetch_timeout, unneeded=unneeded), [], False
    except source.PathMissing as err:
        if not opts.allow_empty:
            raise source.SourceError(f"{err} (with --allow-empty a missing path counts as no "
                                     "Applications)") from None
        return snapshots.Snapshot(commit=commit), [f"{err}; --allow-empty: treated as no Applications"], False


def _load_changed(opts: Options, before: SourceRead, snapshot: snapshots.Snapshot,
                  cache: parsecache.ParseCache) -> manifests.LoadResult | None:
    """``loader.load_changed`` of the files that changed since ``before``, or None; the parse
    cache forgets the blobs the commit no longer has (it is written at the end of the pass)."""
    old, new = before.blobs, snapshot.blobs
    changed = {path for path, blob in new.items() if old.get(path) != blob}
    gone = set(old) - set(new)
    loaded = manifests.load_changed(before.loaded, snapshot.files.only(changed), gone, opts.namespace,
                                    blobs=snapshot.blobs, cache=cache)
    if loaded is not None:
        cache.forget(parsecache.key(old[path], path, opts.namespace, manifests.MAX_FILE_BYTES,
                                    manifests.MAX_DOCUMENTS) for path in (changed | gone) if path in old)
    return loaded
