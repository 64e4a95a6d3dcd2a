"""What ``run`` holds of the cluster for the status page: the newest copy of each watched object.

Why: a page request must send no request to the API server (at 10,000 Applications Argo CD's list
page takes 35 s largely because it asks). ``run`` already watches Applications and the agent's
children (``runner``), and its passes list and write them; both feed this cache, so the page reads
memory only. With the page on, ``run`` also watches the Applications' pods (label
``heumsi.github.io/application``) so that a page can name a pod's waiting or terminated reason.

With the page on, it also watches Events (``slim_event``: only those about an Application, a
child kind or a Pod, cut to what ``explain`` reads), so the page shows the last Events as
``explain`` does.

An object is kept under (kind, namespace, name) without ``metadata.managedFields`` (the largest
part of most objects), except for the child kinds (``FIELDS_KEPT``): ``explain``'s drift names
the field managers that changed a child, so their entries (but the ``status`` subresource's,
which drift never reads) are kept as one JSON string, parsed again by ``whole``. A write from a
pass and a watch event may arrive in either order: the copy with the higher
``metadata.resourceVersion`` wins (compared as integers when both are, as every etcd-backed API
server serves them; else the newest arrival wins); at the same version a watch's copy (whole)
replaces a pass's (its managedFields compacted, a Deployment's conditions cut), never the other
way. ``version`` grows by one on every change, so a reader can reuse what it derived from an
unchanged cache.
"""

from __future__ import annotations

import json
import threading

from agent.kinds import registry

FIELDS_KEPT = frozenset(k.kind for k in registry.CHILD_KINDS) | {"Application"}
"""Kinds whose managedFields are kept (as a string): the Application and its children, for
``explain``'s drift (who changed a field)."""
EVENT_KINDS = frozenset({"Application", "Pod"}) | FIELDS_KEPT
"""The involvedObject kinds of the Events kept: what ``explain`` shows Events of."""
EVENT_KEYS = ("type", "reason", "message", "count", "lastTimestamp", "eventTime")


def key_of(obj: dict) -> tuple[str, str, str]:
    """(kind, namespace, name) of ``obj``."""
    meta = obj.get("metadata") or {}
    return obj.get("kind") or "", meta.get("namespace") or "", meta.get("name") or ""


def _newer(new: dict, old: dict | None, whole: bool, old_whole: bool) -> bool:
    """True when ``new`` replaces ``old`` (see the module docstring): a higher
    ``resourceVersion``, or the same one and ``new`` is ``whole`` or ``old`` is not."""
    if old is None:
        return True
    a = (new.get("metadata") or {}).get("resourceVersion")
    b = (old.get("metadata") or {}).get("resourceVersion")
    if isinstance(a, str) and isinstance(b, str) and a.isdigit() and b.isdigit():
        return int(a) > int(b) or (int(a) == int(b) and (whole or not old_whole))
    return True


def _slim(obj: dict) -> tuple[dict, str | None]:
    """(``obj`` without managedFields, its entries but the status subresource's as JSON for a
    kind in ``FIELDS_KEPT``, else None)."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj, None
    kept = None
    if obj.get("kind") in FIELDS_KEPT:
        entries = [e for e in meta["managedFields"] or [] if isinstance(e, dict) and e.get("subresource") != "status"]
        kept = json.dumps(entries, separators=(",", ":"))
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}, kept


def slim_event(obj: dict | None) -> dict | None:
    """An Event cut to what ``explain`` reads (metadata's name, namespace, resourceVersion and
    creationTimestamp; involvedObject's kind and name; ``EVENT_KEYS``); None for an Event about
    a kind not in ``EVENT_KINDS`` (a ReplicaSet's, a Node's): not kept."""
    involved = (obj or {}).get("involvedObject") or {}
    if involved.get("kind") not in EVENT_KINDS:
        return None
    meta = obj.get("metadata") or {}
    out = {k: obj.get(k) for k in EVENT_KEYS if obj.get(k) is not None}
    out.update({"kind": "Event", "involvedObject": {"kind": involved.get("kind"), "name": involved.get("name")},
                "metadata": {k: meta.get(k) for k in ("name", "namespace", "resourceVersion", "creationTimestamp")}})
    return out


class Cache:
    """Thread-safe store of live objects (dicts as the API serves them, with ``kind``)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._kinds: dict[str, dict[tuple[str, str], dict]] = {}  # kind -> (namespace, name) -> object
        self._fields: dict[tuple[str, str, str], str] = {}  # key -> managedFields as JSON (FIELDS_KEPT)
        self._partial: set[tuple[str, str, str]] = set()  # keys whose copy came from a pass, not a watch
        self.version = 0

    def seen(self, obj: dict | None, whole: bool = False) -> None:
        """Keep ``obj`` (read or written by a pass; ``whole``: reported by a watch) unless an
        older copy; None and objects without kind or name are ignored."""
        if not obj or not obj.get("kind") or not (obj.get("metadata") or {}).get("name"):
            return
        key = key_of(obj)
        with self._lock:
            objects = self._kinds.setdefault(key[0], {})
            if _newer(obj, objects.get(key[1:]), whole, key not in self._partial):
                self._keep(key, obj, whole)
                self.version += 1

    def _keep(self, key: tuple[str, str, str], obj: dict, whole: bool) -> None:
        slim, fields = _slim(obj)
        self._kinds.setdefault(key[0], {})[key[1:]] = slim
        if fields is None:
            self._fields.pop(key, None)
        else:
            self._fields[key] = fields
        if whole:
            self._partial.discard(key)
        else:
            self._partial.add(key)

    def gone(self, obj: dict | None) -> None:
        """Forget ``obj`` (deleted)."""
        if not obj:
            return
        kind, namespace, name = key_of(obj)
        with self._lock:
            if self._kinds.get(kind, {}).pop((namespace, name), None) is not None:
                self._fields.pop((kind, namespace, name), None)
                self._partial.discard((kind, namespace, name))
                self.version += 1

    def listed(self, kind: str, items: list[dict]) -> None:
        """A watch's (re-)list of ``kind``: it replaces every kept object of that kind."""
        with self._lock:
            self._kinds[kind] = {}
            self._fields = {k: v for k, v in self._fields.items() if k[0] != kind}
            self._partial = {k for k in self._partial if k[0] != kind}
            for item in items:
                if (item.get("metadata") or {}).get("name"):
                    self._keep((kind, *key_of(item)[1:]), item, True)
            self.version += 1

    def event(self, event_type: str, obj: dict | None) -> None:
        """A watch event: ADDED and MODIFIED keep, DELETED forgets, anything else is ignored."""
        if event_type in ("ADDED", "MODIFIED"):
            self.seen(obj, whole=True)
        elif event_type == "DELETED":
            self.gone(obj)

    def of_kind(self, kind: str) -> list[dict]:
        """Every kept object of ``kind`` (a snapshot list; the dicts are shared: do not change them)."""
        with self._lock:
            return list(self._kinds.get(kind, {}).values())

    def get(self, kind: str, namespace: str, name: str) -> dict | None:
        with self._lock:
            return self._kinds.get(kind, {}).get((namespace, name))

    def whole(self, kind: str, namespace: str, name: str) -> dict | None:
        """``get``'s object with its kept managedFields (a new dict; FIELDS_KEPT kinds), or None."""
        with self._lock:
            obj, fields = self._kinds.get(kind, {}).get((namespace, name)), self._fields.get((kind, namespace, name))
        if obj is None or fields is None:
            return obj
        return {**obj, "metadata": {**(obj.get("metadata") or {}), "managedFields": json.loads(fields)}}

    def in_namespace(self, kind: str, namespace: str) -> list[dict]:
        """Every kept ``kind`` in ``namespace`` (its Events)."""
        with self._lock:
            return [o for (ns, _), o in self._kinds.get(kind, {}).items() if ns == namespace]

    def where(self, kind: str, namespace: str, label: str, value: str) -> list[dict]:
        """Every kept ``kind`` in ``namespace`` whose label ``label`` is ``value`` (a pod's Application)."""
        with self._lock:
            objects = list(self._kinds.get(kind, {}).items())
        return [o for (ns, _), o in objects if ns == namespace
                and ((o.get("metadata") or {}).get("labels") or {}).get(label) == value]
