"""Parsed manifest files by Git blob id, so a pass parses only files that changed.

Why: a pass reads every file of the commit, and parsing is most of a no-change pass's time
(issue 11). A Git blob id is the hash of the file's bytes, so a file whose blob id, path,
default namespace and limits are those of an earlier parse parses to the same result. Only
files that parsed with no error at all are kept (an error is recomputed every pass, so its
wording is always the parser's).

Where: in memory for the life of the process (``run`` keeps it between passes), and on disk
in one JSON file per source beside the Git mirror (``<mirror>.<source id>.parsed.json``) for ``sync``, which starts a
new process each time. The file is never trusted: anything that is not exactly the shape this
module writes (bad JSON, another format or agent version, an entry of the wrong shape, a body
that is not an Application with valid names) is ignored and parsed again, and a file that cannot
be read or written only costs the time saved. Entries not used by the latest pass are dropped
when it is saved, so the file holds one commit's worth.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from pathlib import Path

from agent.api.schema import API_VERSION, KIND
from agent.manifests.manifest import Manifest, is_dns1123_label

log = logging.getLogger("agent.parsecache")
FORMAT = "gitops-agent/parsed-manifests/v3"  # v2: the line of metadata.name; v3: of metadata.namespace
_registry: dict[str, "ParseCache"] = {}
_registry_lock = threading.Lock()


def key(blob: str, path: str, namespace: str, max_bytes: int, max_docs: int) -> str:
    """The cache key of one file: everything its parse result depends on."""
    return f"{blob}\0{path}\0{namespace}\0{max_bytes}\0{max_docs}"


def entry(found: list, documents: list) -> list:
    """A clean file's parse (``manifests.load``'s ``found`` items and ``documents`` rows, see
    ``manifests._row``) as ``put`` stores it: [first line, last line, body or None, line of
    ``metadata.name`` or None, line of ``metadata.namespace`` or None] per document (a List: per
    item). ``found`` holds one item per named document, in order."""
    named = iter([(manifest.body, name_line, manifest.namespace_line) for _, _, _, manifest, name_line in found])
    return [[row[1], row[2], *(next(named) if row[3] else (None, None, None))] for row in documents]


def restore(path: str, stored: list, documents: list) -> list:
    """The ``found`` items of a cached clean file, from its ``entry``, and its ``documents`` rows
    appended (no errors)."""
    found = []
    for start, end, body, name_line, namespace_line in stored:
        named = item = None
        if body is not None:
            meta = body["metadata"]
            identity = (meta["namespace"], meta["name"])
            named = "/".join(identity)
            item = (identity, path, start, Manifest(identity[0], identity[1], body, path, start, namespace_line),
                    name_line)
            found.append(item)
        documents.append((path, start, end, named, body is not None, [], item))
    return found


def _valid_entry(entry) -> bool:
    """True when ``entry`` is a list of [first line, last line, body or None, line of its
    ``metadata.name`` (from the first to the last line) or None with no body, line of its
    ``metadata.namespace`` (the same) or None] as ``put`` stores."""
    if not isinstance(entry, list):
        return False
    for doc in entry:
        if not (isinstance(doc, list) and len(doc) == 5 and all(type(n) is int and n >= 1 for n in doc[:2])
                and doc[0] <= doc[1]):
            return False
        body, name_line, namespace_line = doc[2], doc[3], doc[4]
        if body is None:
            if name_line is not None or namespace_line is not None:
                return False
            continue
        if not (type(name_line) is int and doc[0] <= name_line <= doc[1]):
            return False
        if not (namespace_line is None or (type(namespace_line) is int and doc[0] <= namespace_line <= doc[1])):
            return False
        if not isinstance(body, dict) or body.get("apiVersion") != API_VERSION or body.get("kind") != KIND:
            return False
        meta = body.get("metadata")
        if not isinstance(meta, dict) or not is_dns1123_label(meta.get("name")) \
                or not is_dns1123_label(meta.get("namespace")) or not isinstance(body.get("spec"), dict):
            return False
        if set(body) - {"apiVersion", "kind", "metadata", "spec", "status"}:
            return False
    return True


class ParseCache:
    """Clean parse results keyed by ``key()``; ``file``: the JSON file (None: memory only).
    Values are lists of ``[first line, last line, body or None, line of metadata.name or None]``,
    one per YAML document (None for an empty document). Thread-safe."""

    def __init__(self, file: str | os.PathLike | None = None, version: str = ""):
        self.file = Path(file) if file else None
        self.version = version
        self._entries: dict[str, list] = {}
        self._used: set[str] = set()
        self._checked: set[str] = set()  # keys whose entry has the shape ``put`` stores: checked once
        self._restored: dict[str, tuple] = {}  # key -> (entry, found items, rows without errors): ``restore_into``
        self._dirty = False
        self._lock = threading.Lock()
        if self.file is not None:
            self._entries = self._read()

    def _read(self) -> dict[str, list]:
        texts: dict[str, str] = {}

        def shared(pairs: list) -> dict:  # one copy of each equal string value (apiVersion, kind, image...)
            return {k: texts.setdefault(v, v) if type(v) is str else v for k, v in pairs}

        try:
            # the bodies are the pass's manifests too: 10,000 files repeat the same few strings
            data = json.loads(self.file.read_text(encoding="utf-8"), object_pairs_hook=shared)
        except (OSError, ValueError, UnicodeDecodeError):
            return {}
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != self.version \
                or not isinstance(data.get("entries"), dict):
            return {}
        return {k: v for k, v in data["entries"].items() if isinstance(k, str)}

    def get(self, cache_key: str) -> list | None:
        """The entry for ``cache_key``, or None (also for one of the wrong shape, then dropped)."""
        with self._lock:
            entry = self._entries.get(cache_key)
            if entry is None:
                return None
            if cache_key not in self._checked:  # an entry read from the file; a pass asks twice a file
                if not _valid_entry(entry):
                    del self._entries[cache_key]
                    self._dirty = True
                    return None
                self._checked.add(cache_key)
            self._used.add(cache_key)
            return entry

    def restore_into(self, cache_key: str, path: str, entry: list, documents: list) -> list:
        """``restore(path, entry, documents)``, with the ``Manifest``s and ``found`` items made
        once per entry for the life of the process (they never change; each pass gets rows of its
        own, since ``load`` adds errors to a row): ``run`` reads 10,000 cached files a pass."""
        known = self._restored.get(cache_key)
        if known is None or known[0] is not entry:
            rows: list = []
            known = (entry, restore(path, entry, rows), [(*row[:5], row[6]) for row in rows])
            with self._lock:
                self._restored[cache_key] = known
        documents += [(p, start, end, named, is_app, [], item) for p, start, end, named, is_app, item in known[2]]
        return known[1]

    def put(self, cache_key: str, entry: list) -> None:
        with self._lock:
            self._entries[cache_key] = entry
            self._checked.discard(cache_key)  # checked again when first read back
            self._used.add(cache_key)
            self._dirty = True

    def forget(self, cache_keys) -> None:
        """Drop the entries of ``cache_keys`` (a pass that read only the changed files: the
        entries of the blobs it no longer has)."""
        with self._lock:
            for k in cache_keys:
                if self._entries.pop(k, None) is not None:
                    self._dirty = True
                self._checked.discard(k)
                self._restored.pop(k, None)

    def save(self, prune: bool = True) -> str | None:
        """Keep only the entries this pass used (all, without ``prune``: a pass that asked for
        the changed files only, see ``forget``) and write the file (atomically: a temporary file
        beside it, renamed over it) when anything changed. Never raises: returns None, or one line
        saying what could not be written and why (a full disk, a read-only directory), for the
        pass's report. The temporary file is removed on every error (issue 42: on a full disk it
        was left behind, holding the last free space, and the next fetch failed); the entries stay
        in memory and the next save tries again."""
        with self._lock:
            unused = set(self._entries) - self._used if prune else set()
            for k in unused:
                del self._entries[k]
            self._checked -= unused
            for k in unused:
                self._restored.pop(k, None)
            dirty, self._dirty = self._dirty or bool(unused), False
            self._used = set()
            if self.file is None or not dirty:
                return None
            entries = list(self._entries.items())  # written outside the lock; entries are never changed
        tmp = None
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.file.parent, prefix=".parsed-")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                _write(out, self.version, entries)
            os.replace(tmp, self.file)
            return None
        except OSError as err:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
            with self._lock:
                self._dirty = True  # not on disk: the next save writes it
            problem = (f"could not write the parse cache {self.file} ({err.strerror or err}); the next pass parses "
                       "every file again")
            log.warning("%s", problem)
            return problem


def _write(out, version: str, entries: list[tuple[str, list]]) -> None:
    """The file's JSON (``{"format", "version", "entries"}``, compact) written to ``out`` one
    entry at a time. Why: as one string (and its UTF-8 bytes) it was twice the file, 6 MB at
    10,000 Applications, at the end of a pass that changed a file: the top of ``run``'s
    memory (issue 48)."""
    out.write(f'{{"format":{json.dumps(FORMAT)},"version":{json.dumps(version)},"entries":{{')
    for i, (name, value) in enumerate(entries):
        out.write(f'{"," if i else ""}{json.dumps(name)}:{json.dumps(value, separators=(",", ":"))}')
    out.write("}}")


def beside(mirror: str | os.PathLike, source: str = "default") -> ParseCache:
    """The process-wide cache of the source ``source`` (its source id: agents on other paths of
    the same repository keep their own file), stored beside the Git mirror directory ``mirror``
    as ``<mirror>.<source>.parsed.json``."""
    from agent.common.values import version

    file = f"{str(mirror).rstrip('/')}.{source}.parsed.json"
    with _registry_lock:
        if file not in _registry:
            _registry[file] = ParseCache(file, version())
        return _registry[file]
