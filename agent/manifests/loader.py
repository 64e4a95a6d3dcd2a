"""Parse and validate Application manifests read from a Git commit.

Pure: no file system, network or Kubernetes access. The caller passes the raw bytes
of the ``*.yaml``/``*.yml`` files it selected and gets back the valid manifests plus
one ``ManifestError`` per problem found. When ``errors`` is non-empty, ``manifests``
is only the valid subset: a caller that prunes cluster objects missing from Git should
not prune on such a result.

YAML is read with a ``yaml.SafeLoader`` subclass (YAML 1.1, as PyYAML implements it),
hardened as follows:

* aliases (``*name``) are rejected, which rules out "billion laughs" alias bombs;
* collections nested deeper than ``MAX_DEPTH`` are rejected while scanning/composing,
  without recursion, so hostile input cannot raise ``RecursionError`` or run long;
* duplicate mapping keys (compared as the JSON strings kubectl makes of them, ``keys``) and keys
  that are not strings to PyYAML or to kubectl (``1``, ``on``, ``y``, a list) are errors, refusing
  only the document or List item that holds them, whose other problems are still reported;
* unquoted timestamps stay strings (as with kubectl / go-yaml v2), so bodies stay JSON;
* values JSON cannot carry (``!!binary``, ``!!set``, ``.nan``) are errors.

Speed: a file is first read with libyaml's C parser (``yaml.CParser``, whose events carry the
same line marks) under a composer that gives up at the first alias, at nesting deeper than
``MAX_DEPTH`` or at any YAML error. Only a file that comes out of that path with no error at
all is taken from it; any other file is read again with the pure-Python loader above, so every
error (and its file:line: field wording) is exactly that loader's. Without libyaml the
pure-Python loader reads every file. ``ParseCache`` (``parsecache.py``) skips files whose Git
blob id is unchanged since the last pass.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field as dataclass_field

import yaml
from yaml.nodes import MappingNode, SequenceNode

from agent.manifests import lists, metadata as metadata_rules, parsecache, specrules
from agent.manifests.manifest import _LABEL_RULE, Manifest, is_dns1123_label
from agent.manifests.nodes import (dotted as _dotted, index as _index, json_only as _json_only,  # validate uses them
                                   key_line as _key_line, kind_unknown as _kind_unknown, line as _line,
                                   non_json as _non_json, scalar as _scalar, show as _show, type_name as _type_name,
                                   under as _under)
from agent.manifests.yamlload import (FAST as _FAST, MAX_DEPTH, _Bail, _Loader,  # noqa: F401 (MAX_DEPTH: public)
                                      _TooDeep, construct as _construct_node)

if _FAST:
    from agent.manifests.yamlload import _CLoader

from agent.api.schema import API_VERSION, KIND, did_you_mean

MAX_FILE_BYTES = 1_048_576  # a file over this is refused whole (``load``, ``snapshot.read``)
MAX_DOCUMENTS = 1000  # YAML documents of one file, List items included

_TOP_LEVEL = ("apiVersion", "kind", "metadata", "spec", "status")  # status: ignored, never applied
_TOO_MANY = "more than {} YAML documents (each item of a List counts as one)"
_ALSO_LISTS = f", alone or as the items of a {lists.KIND} (apiVersion {lists.API_VERSION}, kind {lists.KIND})"


@dataclass(frozen=True)
class ManifestError:
    """One problem: file ``path``, 1-based ``line`` and dotted ``field`` (e.g.
    ``spec.replicas``) where known, and a ``message`` stating the rule broken."""

    path: str
    line: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        """``"apps/web.yaml:7: spec.replicas: must be ..."``; unknown parts omitted."""
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return ": ".join(p for p in (where, self.field, self.message) if p)


@dataclass(frozen=True)
class Rejected:
    """One document (or whole file, ``line`` None) that was refused: ``application`` is its
    ``namespace/name`` when the document named a valid one, else None; ``reasons`` its errors
    as ``str(ManifestError)``; ``is_application``: the document is of kind Application, so it
    is an invalid Application (counted as a failed one) even when its name is what is invalid."""

    path: str
    line: int | None
    application: str | None
    reasons: tuple[str, ...]
    is_application: bool = False


@dataclass(frozen=True)
class LoadResult:
    """``manifests`` sorted by (namespace, name); ``errors`` sorted by (path, line);
    ``rejected`` one entry per refused document or file, sorted by (path, line), so that a
    summary can count invalid Applications rather than errors."""

    manifests: list[Manifest]
    errors: list[ManifestError]
    rejected: list[Rejected] = dataclass_field(default_factory=list)


def parsed_before(cache, path: str, blob: str, default_namespace: str, *, max_file_bytes: int = MAX_FILE_BYTES,
                  max_documents: int = MAX_DOCUMENTS) -> bool:
    """True when ``load`` with these arguments takes ``path`` (Git blob id ``blob``) from
    ``cache`` (a ``parsecache.ParseCache``) and so never reads its bytes."""
    return cache.get(parsecache.key(blob, path, default_namespace, max_file_bytes, max_documents)) is not None


def load(files: Mapping[str, bytes], default_namespace: str, *, max_file_bytes: int = MAX_FILE_BYTES,
         max_documents: int = MAX_DOCUMENTS, blobs: dict[str, str] | None = None, cache=None) -> LoadResult:
    """Parse and validate Application documents.

    ``files`` maps repo-relative posix paths to raw file bytes (UTF-8, optional BOM,
    LF or CRLF); a file taken from ``cache`` is not looked up in it. Files larger than ``max_file_bytes`` bytes, or with more than
    ``max_documents`` YAML documents, are rejected whole, as are files with YAML syntax
    errors. Any other problem rejects only its document. Two documents with the same
    (namespace, name) are both rejected, with an error at the line of each one's ``metadata.name``
    naming every such ``path:line``.
    Raises ``ValueError`` if ``default_namespace`` is not a DNS-1123 label.

    ``blobs`` (path -> Git blob id) and ``cache`` (a ``parsecache.ParseCache``): a file whose
    blob id, path, default namespace and limits were parsed cleanly before is taken from the
    cache instead of parsed; a clean parse is stored there. The result is the same either way.
    """
    if not is_dns1123_label(default_namespace):
        raise ValueError(f"default namespace {default_namespace!r} {_LABEL_RULE}")
    errors: list[ManifestError] = []
    found: list[tuple[tuple[str, str], str, int, Manifest | None, int]] = []  # see _application
    documents: list[tuple] = []  # see _row
    for path in sorted(files):
        blob = (blobs or {}).get(path) if cache is not None else None
        cache_key = parsecache.key(blob, path, default_namespace, max_file_bytes, max_documents) if blob else None
        entry = cache.get(cache_key) if cache_key else None
        if entry is not None:
            file_found, file_errors = cache.restore_into(cache_key, path, entry, documents), []
        else:
            first = len(documents)
            file_found, file_errors = _load_file(path, files[path], default_namespace,
                                                 max_file_bytes, max_documents, documents)
            if cache_key and not file_errors:
                cache.put(cache_key, parsecache.entry(file_found, documents[first:]))
        found += file_found
        errors += file_errors
    by_identity: dict[tuple[str, str], list] = {}
    for item in found:
        by_identity.setdefault(item[0], []).append(item)
    manifests = []
    owner = {id(d[6]): d for d in documents if d[6] is not None}  # found item -> its row
    for (namespace, name), items in by_identity.items():
        if len(items) == 1:
            if items[0][3] is not None:
                manifests.append(items[0][3])
            continue
        where = ", ".join(f"{p}:{at}" for _, p, _, _, at in items)  # each metadata.name's own line
        for item in items:
            errors.append(ManifestError(item[1], item[4], "metadata.name", f"Application {namespace}/{name} "
                                        f"is defined more than once: {where}"))
            if id(item) in owner:
                owner[id(item)][5].append(errors[-1])
    manifests.sort(key=lambda m: (m.namespace, m.name))
    errors.sort(key=lambda e: (e.path, e.line or 0, e.field or "", e.message))
    return LoadResult(manifests, errors, _rejected(errors, documents))



def load_changed(before: LoadResult, files: Mapping[str, bytes], gone: set[str], default_namespace: str, *,
                 max_file_bytes: int = MAX_FILE_BYTES, max_documents: int = MAX_DOCUMENTS,
                 blobs: dict[str, str] | None = None, cache=None) -> LoadResult | None:
    """What ``load`` gives for the files ``before`` was loaded from, with ``files`` new or changed
    (path -> bytes, as ``load`` takes them) and the paths in ``gone`` removed: only ``files`` are
    parsed (``run`` after a push; issue 33). Other arguments as ``load``'s.

    None when only a full ``load`` can tell: ``before`` has errors (a duplicate's partner may now
    be alone), or an Application in ``files`` (valid or not) has the namespace and name of one in
    a file that did not change (both are refused, at each one's line)."""
    if before.errors:
        return None
    now = load(files, default_namespace, max_file_bytes=max_file_bytes, max_documents=max_documents, blobs=blobs,
               cache=cache)
    moved = set(files) | gone
    kept = [m for m in before.manifests if m.path not in moved]
    known = {f"{m.namespace}/{m.name}" for m in kept}
    if any(f"{m.namespace}/{m.name}" in known for m in now.manifests) or any(
            r.application in known for r in now.rejected):
        return None
    manifests = sorted(kept + now.manifests, key=lambda m: (m.namespace, m.name))
    return LoadResult(manifests, now.errors, now.rejected)


def _rejected(errors: list[ManifestError], documents: list[tuple]) -> list[Rejected]:
    """One Rejected per refused document (rows of ``documents``, see ``_row``): an error belongs
    to the row that recorded it (the document or List item whose check produced it); an error no
    row recorded belongs to the first document of its file whose lines hold it, or to its whole
    file when it has no line or no document holds it."""
    if not errors:  # the usual pass: nothing to group, and 10,000 documents need no index
        return []
    owner = {id(e): d for d in documents for e in d[5]}
    by_path: dict[str, list[tuple]] = {}
    for d in documents:
        by_path.setdefault(d[0], []).append(d)
    groups: dict[object, tuple[str, tuple | None, list[str]]] = {}
    for e in errors:
        doc = owner.get(id(e))
        if doc is None and e.line is not None:
            doc = next((d for d in by_path.get(e.path, ()) if d[1] <= e.line <= d[2]), None)
        key = id(doc) if doc is not None else e.path
        groups.setdefault(key, (e.path, doc, []))[2].append(str(e))
    return sorted((Rejected(p, doc[1] if doc else None, doc[3] if doc else None, tuple(r), bool(doc and doc[4]))
                   for p, doc, r in groups.values()), key=lambda r: (r.path, r.line or 0))


_DOCUMENT_BOM = re.compile(r"(^(?:---|\.\.\.)(?:[ \t]+#[^\r\n]*)?[ \t]*\r?\n)\ufeff", re.MULTILINE)
"""A byte order mark opening a document after ``---`` (or ``...``), which a comment may follow
on its line: files joined from files saved with a BOM have one there; kubectl reads each
document as its own input and drops it."""


def _load_file(path: str, data: bytes, namespace: str, max_bytes: int, max_docs: int, documents: list):
    found: list = []
    errors: list[ManifestError] = []
    if len(data) > max_bytes:
        return [], [ManifestError(path, None, None, f"file is {len(data)} bytes, "
                                  f"above the limit of {max_bytes} bytes")]
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        return [], [ManifestError(path, data.count(b"\n", 0, e.start) + 1, None,
                                  f"not valid UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start})")]
    if "\ufeff" in text:  # a BOM may open every document of a stream (YAML 1.2), as kubectl reads them
        text = _DOCUMENT_BOM.sub(r"\1", text)
    if _FAST:
        fast = _load_fast(path, text, namespace, max_docs)
        if fast is not None:
            documents += fast[2]
            return fast[0], fast[1]
    loader = None
    first = len(documents)
    try:
        loader = _Loader(text)
        count = 0
        while loader.check_node():
            count += 1
            node = loader.get_node() if count <= max_docs else None
            if node is not None:
                problems, loader.problems = loader.problems, []
                _document(path, node, problems, loader, namespace, found, errors, documents)
            if node is None or len(documents) - first > max_docs:
                del documents[first:]
                return [], [ManifestError(path, None, None, _TOO_MANY.format(max_docs))]
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        detail = f" ({e.context})" if e.context else ""
        message = e.problem if isinstance(e, _TooDeep) else f"invalid YAML: {e.problem}{detail}"
        return [], [ManifestError(path, mark.line + 1 if mark else None, None, message)]
    except yaml.reader.ReaderError as e:
        return [], [ManifestError(path, text.count("\n", 0, e.position) + 1, None,
                                  f"invalid YAML: character #x{e.character:04x}: {e.reason}")]
    finally:
        if loader is not None:
            loader.dispose()
    return found, errors


def _load_fast(path: str, text: str, namespace: str, max_docs: int):
    """(found, errors, documents) of ``text`` read with the C parser, or None when the file
    must be read by the pure-Python loader: any YAML error, alias, deep nesting, too many
    documents, or any error at all in its documents (so error wording is never the fast path's)."""
    found: list = []
    errors: list[ManifestError] = []
    documents: list = []
    loader = _CLoader(text)
    try:
        count = 0
        while loader.check_node():
            count += 1
            if count > max_docs:
                return None
            node = loader.get_node()
            _document(path, node, [], loader, namespace, found, errors, documents)
            if errors or len(documents) > max_docs:
                return None
    except (_Bail, yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError, MemoryError):
        return None
    finally:
        loader.dispose()
    return found, errors, documents


def _document(path, node, problems, loader, default_namespace, found, errors, documents) -> None:
    """Check one YAML document ``node`` of ``path``: its Application, or each item of a
    ``kind: List`` (``lists``), goes to ``found`` as (identity, path, line, Manifest or None),
    problems to ``errors``, and one row (see ``_row``) per document or List item to ``documents``,
    holding the errors its own check appended."""
    n_found, n_errors = len(found), len(errors)
    data, lines, dups = _construct(path, node, problems, loader, errors)  # dups: the key problems
    if dups and _kind_unknown(dups, lists.is_list(data)):  # what it is is not known: refused whole
        errors += _duplicates(path, dups)
        data = None
    if not lists.is_list(data):
        if data is not None:
            _application(path, node, data, lines, default_namespace, found, errors, dups)
        return _row(documents, found, n_found, path, node, node.end_mark.line + 1, data, errors[n_errors:], default_namespace)
    bad = _non_json({k: v for k, v in data.items() if k != "items"})
    pairs, own = lists.items(node, data) if bad is None else ([], [bad])
    own = [ManifestError(path, _line(lines, sub), _dotted(sub) or None, message) for sub, message in own]
    errors += own
    for i, (item_node, item) in enumerate(pairs):
        n, n_errors = len(found), len(errors)
        mine = [(sub[2:], *rest) for sub, *rest in dups if sub[1] == i]  # only this item is refused for them
        if _kind_unknown(mine, False):
            errors += _duplicates(path, mine)
            item = None
        else:
            _application(path, item_node, item, _index(item_node)[0], default_namespace, found, errors, mine)
        # an item's end mark is where the next item starts: its row ends on the line before
        end = min(item_node.end_mark.line + 1, pairs[i + 1][0].start_mark.line if i + 1 < len(pairs) else math.inf)
        _row(documents, found, n, path, item_node, max(item_node.start_mark.line + 1, end), item, errors[n_errors:],
             default_namespace)
    if not pairs or own:
        _row(documents, found, len(found), path, node, node.end_mark.line + 1, data, own, default_namespace)  # the List's own row


def _row(documents: list, found: list, n_found: int, path: str, node, end: int, data, errs: list, namespace) -> None:
    """Append the ``documents`` row of ``node`` (a document or List item ending on line ``end``,
    ``data`` as constructed, ``errs`` the errors its check appended): (path, first line, last
    line, ``namespace/name`` of the identity ``found`` gained since it held ``n_found`` items or
    None, kind is Application, ``errs``, that ``found`` item or None). A refused Application whose
    data could not be constructed (or whose kind is a repeated key) takes its kind, name and
    namespace (else ``namespace``) from the nodes, when they are plain strings, and the line of
    its ``metadata.name`` key from them too."""
    from_nodes = data is None or (isinstance(data, dict) and data.get("apiVersion") == API_VERSION)
    kind = data.get("kind") if isinstance(data, dict) else _scalar(node, ("kind",)) if data is None else None
    if kind == KIND and errs and from_nodes and len(found) == n_found:
        name, ns = _scalar(node, ("metadata", "name")), _scalar(node, ("metadata", "namespace"), namespace)
        if is_dns1123_label(name) and is_dns1123_label(ns):
            found.append(((ns, name), path, node.start_mark.line + 1, None, _key_line(node, ("metadata", "name"))))
    item = found[-1] if len(found) > n_found else None
    documents.append((path, node.start_mark.line + 1, end, "/".join(item[0]) if item else None, kind == KIND, errs, item))


def _construct(path, node, problems, loader, errors):
    """(data, {field path: line}, key problems) of ``node`` (see ``yamlload.construct``), or
    (None, None, []) after appending its composing problems, or its construction error and
    key problems, to ``errors`` (data is also None for an empty document)."""
    errors += [ManifestError(path, at, None, message) for at, message in problems]
    if problems:
        return None, None, []
    data, lines, dups, failure = _construct_node(loader, node)
    if failure:
        errors += [ManifestError(path, failure[0], None, failure[1])] + _duplicates(path, dups)
        return None, None, []
    return data, lines, dups


def _duplicates(path: str, dups: list) -> list[ManifestError]:
    """The errors of the key problems ``dups`` (see ``_construct``) of ``path``."""
    return [ManifestError(path, at, _dotted(sub) if sub else None, message) for sub, at, message, _ in dups]


def _application(path, node, data, lines, default_namespace, found, errors, dups=()) -> None:
    """Check ``data``, one document (or List item) composed from ``node``, as an Application, and
    report every problem it has: its key problems ``dups`` (path inside it, line, message,
    ambiguous: see ``yamlload.construct``), values JSON cannot hold, and every rule the rest
    breaks; nothing is said about what lies under a duplicated key or a left-out value (its
    meaning is not known). An Application with a valid identity goes to ``found`` as (identity,
    path, line of the document, Manifest or None when refused, line of its ``metadata.name``)."""
    line = node.start_mark.line + 1
    n_errors = len(errors)
    unknown = [sub for sub, _, _, ambiguous in dups if ambiguous]  # paths whose value is not known
    errors += _duplicates(path, dups)

    def error(sub, message):  # ``sub``: the field path, also giving the line (of its deepest known part)
        if not _under(sub, unknown):
            errors.append(ManifestError(path, _line(lines, sub), _dotted(sub) or None, message))

    if not isinstance(data, dict):
        return error((), f"document must be a mapping, not {_type_name(data)}")
    if data.get("apiVersion") != API_VERSION or data.get("kind") != KIND:
        return error((), f"only {KIND} ({API_VERSION}) documents are supported{_ALSO_LISTS} "
                     f"(found apiVersion {_show(data.get('apiVersion'))}, kind {_show(data.get('kind'))})")
    data, bad = _json_only(data)
    errors += [ManifestError(path, _line(lines, where), _dotted(where) or None, message)
               for where, message, left_out in bad if not _under(left_out, unknown)]
    unknown += [left_out for _, _, left_out in bad]
    for key in data:
        if key not in _TOP_LEVEL:
            error((key,), f"unknown field{did_you_mean(key, _TOP_LEVEL)} (allowed: {', '.join(_TOP_LEVEL)})")

    identity = None
    meta = data.get("metadata")
    if not isinstance(meta, dict):
        error(("metadata",), "must be a mapping" if "metadata" in data else "is required")
    else:
        name, namespace = meta.get("name"), meta.get("namespace", default_namespace)
        if "name" not in meta:
            error(("metadata", "name"), "is required")
        for field, value in (("name", name), ("namespace", namespace)):
            if field in meta and not isinstance(value, str):  # 123, true, null: not a label at all
                error(("metadata", field), metadata_rules.not_a_string(value))
            elif field in meta and not is_dns1123_label(value):
                error(("metadata", field), f"{_show(value)} {_LABEL_RULE}")
        for sub, message in metadata_rules.problems(meta):
            error(("metadata",) + sub, message)
        known = not _under(("metadata", "name"), unknown) and not _under(("metadata", "namespace"), unknown)
        if is_dns1123_label(name) and is_dns1123_label(namespace) and known:
            identity = (namespace, name)

    if "spec" not in data:
        error(("spec",), "is required")
    else:
        app = meta.get("name") if isinstance(meta, dict) and is_dns1123_label(meta.get("name")) \
            and not _under(("metadata", "name"), unknown) else None  # an ambiguous name is no name
        for sub, message in specrules.problems(data["spec"], app):
            error(("spec",) + sub, message)

    if identity:
        manifest = None
        if len(errors) == n_errors:
            body = {**data, "metadata": {**meta, "namespace": identity[0]}}
            manifest = Manifest(identity[0], identity[1], body, path, line,
                                _line(lines, ("metadata", "namespace")) if "namespace" in meta else None)
        found.append((identity, path, line, manifest, _line(lines, ("metadata", "name"))))


def field_lines(data: bytes, doc_line: int) -> dict[tuple, int] | None:
    """{field path: line} of the document (or ``kind: List`` item) starting on ``doc_line`` of
    an already-parsed file (``validate`` names the line of a field the CRD refuses with it)."""
    loader = _Loader(data.decode("utf-8-sig"))
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            items = next((v.value for k, v in node.value if getattr(k, "value", None) == "items"
                          and isinstance(v, SequenceNode)), []) if isinstance(node, MappingNode) else []
            for candidate in (*items, node):  # a one-line List starts on its first item's line
                if candidate.start_mark.line + 1 == doc_line:
                    return _index(candidate)[0]
    finally:
        loader.dispose()
    return None
