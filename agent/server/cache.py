"""What ``run`` holds of the cluster for the status page: the newest copy of each watched object.

Why: a page request must send no request to the API server (at 10,000 Applications Argo CD's list
page takes 35 s largely because it asks). ``run`` already watches Applications and the agent's
children (``runner``), and its passes list and write them; both feed this cache, so the page reads
memory only. With the page on, ``run`` also watches the Applications' pods (label
``heumsi.github.io/application``) so that a page can name a pod's waiting or terminated reason.

An object is kept under (kind, namespace, name) without ``metadata.managedFields`` (the largest
part of most objects, never shown). A write from a pass and a watch event may arrive in either
order: the copy with the higher ``metadata.resourceVersion`` wins (compared as integers when both
are, as every etcd-backed API server serves them; else the newest arrival wins). ``version`` grows
by one on every change, so a reader can reuse what it derived from an unchanged cache.
"""

from __future__ import annotations

import threading


def key_of(obj: dict) -> tuple[str, str, str]:
    """(kind, namespace, name) of ``obj``."""
    meta = obj.get("metadata") or {}
    return obj.get("kind") or "", meta.get("namespace") or "", meta.get("name") or ""


def _newer(new: dict, old: dict | None) -> bool:
    """True when ``new`` is not older than ``old`` by ``resourceVersion`` (see the module docstring)."""
    if old is None:
        return True
    a = (new.get("metadata") or {}).get("resourceVersion")
    b = (old.get("metadata") or {}).get("resourceVersion")
    if isinstance(a, str) and isinstance(b, str) and a.isdigit() and b.isdigit():
        return int(a) >= int(b)
    return True


def _slim(obj: dict) -> dict:
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        obj = {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    return obj


class Cache:
    """Thread-safe store of live objects (dicts as the API serves them, with ``kind``)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._kinds: dict[str, dict[tuple[str, str], dict]] = {}  # kind -> (namespace, name) -> object
        self.version = 0

    def seen(self, obj: dict | None) -> None:
        """Keep ``obj`` (read, written or reported by a watch) unless an older copy; None and
        objects without kind or name are ignored."""
        if not obj or not obj.get("kind") or not (obj.get("metadata") or {}).get("name"):
            return
        kind, namespace, name = key_of(obj)
        with self._lock:
            objects = self._kinds.setdefault(kind, {})
            if _newer(obj, objects.get((namespace, name))):
                objects[(namespace, name)] = _slim(obj)
                self.version += 1

    def gone(self, obj: dict | None) -> None:
        """Forget ``obj`` (deleted)."""
        if not obj:
            return
        kind, namespace, name = key_of(obj)
        with self._lock:
            if self._kinds.get(kind, {}).pop((namespace, name), None) is not None:
                self.version += 1

    def listed(self, kind: str, items: list[dict]) -> None:
        """A watch's (re-)list of ``kind``: it replaces every kept object of that kind."""
        fresh = {key_of(item)[1:]: _slim(item) for item in items if (item.get("metadata") or {}).get("name")}
        with self._lock:
            self._kinds[kind] = fresh
            self.version += 1

    def event(self, event_type: str, obj: dict | None) -> None:
        """A watch event: ADDED and MODIFIED keep, DELETED forgets, anything else is ignored."""
        if event_type in ("ADDED", "MODIFIED"):
            self.seen(obj)
        elif event_type == "DELETED":
            self.gone(obj)

    def of_kind(self, kind: str) -> list[dict]:
        """Every kept object of ``kind`` (a snapshot list; the dicts are shared: do not change them)."""
        with self._lock:
            return list(self._kinds.get(kind, {}).values())

    def get(self, kind: str, namespace: str, name: str) -> dict | None:
        with self._lock:
            return self._kinds.get(kind, {}).get((namespace, name))

    def where(self, kind: str, namespace: str, label: str, value: str) -> list[dict]:
        """Every kept ``kind`` in ``namespace`` whose label ``label`` is ``value`` (a pod's Application)."""
        with self._lock:
            objects = list(self._kinds.get(kind, {}).items())
        return [o for (ns, _), o in objects if ns == namespace
                and ((o.get("metadata") or {}).get("labels") or {}).get(label) == value]
