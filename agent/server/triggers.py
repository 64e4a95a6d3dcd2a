"""Which watch events are news to the agent: the rule that keeps ``run`` from passing on its own writes.

Why: a watch tells of every write, the agent's own included. Before this rule, the Applications,
Deployments and Services a pass created or updated came back as watch events and started another
pass right after it, and so did the watches' initial list (every object replayed as ADDED) at
start-up: ``run`` made two or three passes where one was due. Comparing the field manager is
not enough (the API server names the manager per field, not per write), and generation alone
misses metadata edits and the controllers' status changes that the Application's status reports.

The rule: every object a pass reads or writes is recorded (``Recording`` wraps the pass's
``Kube``) as its fingerprint, the part of the object a pass acts on or reports (``fingerprint``).
A watch event is news when its object's fingerprint differs from the recorded one: a hand edit,
a deleted child, a hand-applied Application, a Deployment whose rollout moved on (its replicas
and health feed the Application's status). The agent's own applies and status writes carry the
fingerprint just recorded, and its own deletions are recorded as gone, so they are never news.
Events are judged when the next pass could start, after the running pass recorded its writes,
so an event that overtook the response to the write that caused it is judged correctly too.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
from dataclasses import dataclass

from agent.api.labels import AGENT_NAME, MANAGED_BY
from agent.kinds import registry
from agent.kube.cluster import Wrapper
from agent.kube.livestore import Served

GONE = "gone"


def identity(obj: dict) -> tuple[str, str, str]:
    """(kind, namespace, name) of a live object."""
    meta = obj.get("metadata") or {}
    return obj.get("kind", ""), meta.get("namespace", ""), meta.get("name", "")


def fingerprint(obj: dict) -> str:
    """What of ``obj`` (a live Application or child) a pass acts on or reports:
    uid, generation (the spec), labels, annotations, ownerReferences and deletionTimestamp; for
    a child, what its kind calls news (``ChildKind.news``: a Service's spec, since Services have
    no generation; a Deployment's replicas and health, which feed the Application's status). Never resourceVersion, managedFields
    or an Application's status, which every status write changes. Pure."""
    meta = obj.get("metadata") or {}
    kind = obj.get("kind")
    parts = {k: meta.get(k) for k in ("uid", "generation", "labels", "annotations", "ownerReferences",
                                       "deletionTimestamp")}
    child_kind = registry.BY_KIND.get(kind)
    if child_kind is not None:
        parts["news"] = child_kind.news(obj)
    return json.dumps(parts, sort_keys=True, default=str)


def mark(obj: dict) -> bytes:
    """What ``Known`` keeps of ``obj``'s ``fingerprint``: a 17-byte string, ``b"w"`` when
    ``watched(obj)`` else ``b"-"``, then the fingerprint's 16-byte BLAKE2b digest. Why: the
    fingerprints of 30,000 objects as text were 27 MiB of ``run`` at 10,000 Applications (issue
    33); two different fingerprints share a digest with odds of about 2**-128."""
    head = b"w" if watched(obj) else b"-"
    return head + hashlib.blake2b(fingerprint(obj).encode(), digest_size=16).digest()


def watched(obj: dict) -> bool:
    """True when ``run``'s watches see ``obj``: every Application, children with the agent's label."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return obj.get("kind") == "Application" or labels.get(MANAGED_BY) == AGENT_NAME


@dataclass(frozen=True, slots=True)
class Sighting:
    """A watch event as ``run`` keeps it until it is judged: its type, the object's identity
    and ``mark`` (None for a DELETED). Why: events wait while a pass runs, and a pass that
    writes 10,000 statuses hears 10,000 events; kept whole they were hundreds of MiB."""

    event_type: str
    key: tuple[str, str, str] | None
    print_: bytes | None

    @classmethod
    def of(cls, event_type: str, obj: dict | None) -> "Sighting":
        if not obj or not obj.get("kind"):
            return cls(event_type, None, None)
        kind, namespace, name = identity(obj)
        # the event's own kind and namespace strings, interned: a sweep's 10,000 events name one kind and
        # a few namespaces (not the names: some CPython 3.12 releases never free an interned string)
        key = (sys.intern(kind) if type(kind) is str else kind,
               sys.intern(namespace) if type(namespace) is str else namespace, name)
        return cls(event_type, key, None if event_type == "DELETED" else mark(obj))


FLUSH_AFTER = 256
"""Objects a pass records (``Known.seen``) after it read a served list, beyond which the lists
kept back (``Known.seen_served``) are recorded at once. Why: a push's pass writes a handful of
objects before its apply is done, and a status sweep writes every Application; a list kept back
through the sweep held each Application it read alive beside the one the watches replaced it
with (issue 48)."""


class Known:
    """The newest fingerprint (its ``mark``) of every object the agent's passes read or wrote
    (``GONE`` for what they deleted). Thread-safe: the pass's write pool records while watches ask."""

    def __init__(self):
        self._lock = threading.Lock()
        self._known: dict[tuple[str, str, str], bytes | str] = {}
        self._versions: dict[tuple[str, str, str], str] = {}  # the resourceVersion each fingerprint is of
        self._pending: list[tuple[tuple, list]] = []  # served lists not recorded yet (``seen_served``)
        self._touched: set[tuple[str, str, str]] = set()  # recorded since the oldest of ``_pending`` was read

    def seen(self, obj: dict | None) -> None:
        """Record ``obj`` as read or written by a pass (None and objects without a name: ignored).
        An object at the resourceVersion recorded last is not fingerprinted again: a pass reads
        every watched object, most of them unchanged."""
        meta = (obj or {}).get("metadata") or {}
        if obj and meta.get("name") and obj.get("kind"):
            key, version = identity(obj), meta.get("resourceVersion")
            if version and self._versions.get(key) == version and self._known.get(key) not in (None, GONE):
                return
            print_ = mark(obj)
            with self._lock:
                self._put(key, version, print_)
                sweeping = len(self._touched) >= FLUSH_AFTER
            if sweeping:
                self.flush()

    def _put(self, key: tuple[str, str, str], version: str | None, print_: bytes) -> None:
        """Record ``print_`` for ``key`` (the lock held)."""
        self._known[key] = print_
        if version:
            self._versions[key] = version
        else:
            self._versions.pop(key, None)
        if self._pending:
            self._touched.add(key)

    def seen_served(self, where: tuple, objs: list[dict]) -> None:
        """``seen`` of each of ``objs``, a list the watches' store served (``where``: its kind and
        namespace), done later (``flush``): before any event is judged, not before the pass's
        first apply (10,000 fingerprints after a status sweep replaced every Application: 0.1 s
        of a push's way to its Deployment, issue 33). An object recorded after the list was read
        (the pass's own write, its deletion) keeps that newer record; an object served at the
        resourceVersion recorded for it is skipped: it was recorded then. Kept by version, not by
        the Python object: holding the objects kept the ones the watches replaced alive for one
        more pass (issue 33); and not by the last list's versions too: a second record of 30,000
        objects was 3 MB of ``run`` at 10,000 Applications (issue 48). Also once the pass has
        recorded ``FLUSH_AFTER`` objects since (a status sweep)."""
        with self._lock:
            self._pending.append((where, objs))

    def flush(self) -> None:
        """Record the served lists ``seen_served`` kept back; ``news``, ``judge`` and ``relisted``
        call it first. Skipping a record only ever makes an event news (an extra pass), never
        the other way."""
        with self._lock:
            pending, touched = self._pending, self._touched
            self._pending, self._touched = [], set()
            for _, objs in pending:
                for obj in objs:
                    self._flushed(obj, touched)

    def _flushed(self, obj: dict, touched: set) -> None:
        meta = obj.get("metadata") or {}
        if not (meta.get("name") and obj.get("kind")):
            return
        key, version = identity(obj), meta.get("resourceVersion")
        if key in touched or (version and self._versions.get(key) == version
                              and self._known.get(key) not in (None, GONE)):
            return
        self._put(key, version, mark(obj))

    def gone(self, obj: dict) -> None:
        """Record that a pass deleted ``obj``."""
        with self._lock:
            self._known[identity(obj)] = GONE
            self._versions.pop(identity(obj), None)
            if self._pending:
                self._touched.add(identity(obj))

    def news(self, event_type: str, obj: dict | None) -> bool:
        """True when the watch event ``event_type`` (ADDED, MODIFIED, DELETED) of ``obj`` tells
        of a state no pass has seen: a DELETED of an object a pass saw live, any other event whose
        object's fingerprint differs from the recorded one (or was never recorded)."""
        if not obj or not obj.get("kind"):
            return event_type != "BOOKMARK"
        self.flush()
        with self._lock:
            known = self._known.get(identity(obj))
        if event_type == "DELETED":
            return known is not None and known != GONE
        return known != mark(obj)

    def judge(self, seen: "Sighting") -> bool:
        """``news`` for an event kept as a ``Sighting``."""
        if seen.key is None:
            return seen.event_type != "BOOKMARK"
        self.flush()
        with self._lock:
            known = self._known.get(seen.key)
        if seen.event_type == "DELETED":
            return known is not None and known != GONE
        return known != seen.print_

    def relisted(self, kind: str, items: list[dict]) -> bool:
        """True when a watch's re-list (after ``410 Gone`` or a dropped connection) of ``kind``
        shows news: an item that is news as ADDED, or a watched object a pass saw live that the
        list no longer has (deleted while the watch was away)."""
        self.flush()
        if any(self.news("ADDED", item) for item in items):
            return True
        listed = {identity(item) for item in items}
        with self._lock:
            live = [key for key, value in self._known.items() if key[0] == kind and value != GONE]
        return any(key not in listed for key in live if self._watched_key(key))

    def _watched_key(self, key: tuple[str, str, str]) -> bool:
        with self._lock:
            value = self._known.get(key)
        return isinstance(value, bytes) and value[:1] == b"w"


class Recording(Wrapper):
    """Wraps the ``Kube`` of ``run``'s passes: every object listed, read or written is recorded
    in ``known`` (deletions as gone), and in ``cache`` (an ``agent.server.cache.Cache``, the status
    page's) when given. Every other verb is the wrapped one's (``Wrapper``)."""

    def __init__(self, kube, known: Known, cache=None):
        self._kube, self.known, self.cache = kube, known, cache

    def _seen(self, obj):
        self.known.seen(obj)
        if self.cache is not None:
            self.cache.seen(obj)
        return obj

    def list(self, group, kind, *args, **kwargs):
        return self._listed(self._kube.list(group, kind, *args, **kwargs), (kind, None))

    def list_in(self, group, kind, namespace, *args, **kwargs):
        return self._listed(self._kube.list_in(group, kind, namespace, *args, **kwargs), (kind, namespace))

    def _listed(self, items, where: tuple):
        if isinstance(items, Served):  # the watches' own objects: the page's cache has them already
            self.known.seen_served(where, items)
            return items
        for item in items:
            self._seen(item)
        return items

    def get(self, obj):
        return self._seen(self._kube.get(obj))

    def apply(self, obj, *args, **kwargs):
        return self._seen(self._kube.apply(obj, *args, **kwargs))

    def create(self, obj):
        return self._seen(self._kube.create(obj))

    def patch_status(self, obj, status):
        return self._seen(self._kube.patch_status(obj, status))

    def patch_managed_fields(self, obj, entries):
        return self._seen(self._kube.patch_managed_fields(obj, entries))

    def patch_annotations(self, obj, annotations):
        return self._seen(self._kube.patch_annotations(obj, annotations))

    def delete(self, obj, *args, **kwargs):
        self.known.gone(obj)  # before the request: its DELETED event may come before the answer
        if self.cache is not None:
            self.cache.gone(obj)
        return self._kube.delete(obj, *args, **kwargs)
