"""The live objects ``run``'s passes read, kept current by its watches: a pass sends no LIST.

Why: ``run`` watches the Applications, the agent's children and the Namespaces anyway (its
triggers); listing them again on every pass cost 10 s at 10,000 Applications for a pass that had
nothing to do (issue 33). Each watch hands its list and events here (``listed``, ``event``,
``progress``, ``interrupted``), and a pass reads them back through ``StoreKube``, in the form
``Kube.list`` gives them (managedFields compacted: ``client.item_of``), each child kept packed:
its identity decoded, the rest compressed until read (``agent.kube.packed``).

Correctness first. A pass reads a kind from here only while the store can vouch for it, and
otherwise sends the LIST it always sent (said at DEBUG, with why):

- the kind's watch has not finished its first list, or it lost events: it ended with an error
  (``410 Gone``: the resourceVersion it would resume from has expired) and lists again; until
  that list arrives the store is stale in ways no event will repair;
- the watch's connection is down (``interrupted``) and is being opened again: events may be on
  their way;
- the store has not reached the resourceVersion of the newest write a pass made to that kind
  (``written``; waited for up to ``REACH_WAIT`` seconds): a pass must never read the state before
  its own last write and write it again;
- another label selector than the watch's, or another kind.

The store is fed by the watch alone, in the order the API server sends, so what a pass reads is
one consistent view of the kind at the store's resourceVersion. A pass's own deletion hides the
object (by uid) until its DELETED event arrives. resourceVersions are compared as integers, as
every etcd-backed API server serves them; one that is not an integer makes the kind unusable
(LIST, always). The watch's periodic relist (``watch.run``'s ``relist_every``) bounds any
divergence no rule above catches.
"""

from __future__ import annotations

import json
import logging
import threading
import time

from agent.kube import packed
from agent.kube.client import RESOURCES, item_of
from agent.kube.cluster import Wrapper
from agent.kube.share import Memo

log = logging.getLogger("agent.kube")
REACH_WAIT = 1.0
"""Seconds a pass waits for the watch to deliver the pass's own last write of a kind before it
lists that kind instead (the event usually arrives within milliseconds)."""


def _copy(obj: dict) -> dict:
    """A copy of a watched object to keep: ``item_of`` compacts in place, and the watch's other
    readers (the triggers, the status page) get the same object."""
    return json.loads(json.dumps(obj))


def _rv(obj: dict | None) -> int | None:
    value = ((obj or {}).get("metadata") or {}).get("resourceVersion")
    return int(value) if isinstance(value, str) and value.isdigit() else None


UNPACKED = ("Application",)
"""Kinds the store keeps decoded, equal parts shared (``client.item_of``), not packed. Why: every
pass of ``run`` reads each Application's status (the commit it records, its failures), and a
status sweep replaces every Application; packed, the pass after a sweep decoded all of them on
its way to the apply (push to applied 0.3 -> 0.7 s at 10,000, issue 48). Children are read in
full only for the Applications a pass acts on."""


class _Kind:
    """One watched kind: its objects by (namespace, name), its watch's state and resourceVersion."""

    def __init__(self, group: str, kind: str, selector: str | None, pool: packed.Loaded, memo: Memo):
        self.group, self.kind, self.selector = group, kind, selector
        self.objects: dict[tuple[str, str], dict] = {}
        self.synced = False  # a list arrived and no event was lost since
        self.connected = False
        self.usable = True  # False once a resourceVersion was not an integer
        self.rv = 0  # the newest resourceVersion the watch delivered (list, event or bookmark)
        self.wanted = 0  # the newest resourceVersion a pass's write of this kind returned
        self.hidden: dict[tuple[str, str], str] = {}  # (namespace, name) -> uid a pass deleted
        self.versions: dict[tuple[str, str], int] = {}  # (namespace, name) -> resourceVersion a pass's write returned
        api_version = RESOURCES[(group, kind)][0].split("/", 2)[-1]
        self.codec = packed.Codec()
        self.heads = packed.Codec()  # the packed metadata's (packed.Head)
        prepare = item_of(kind, api_version, None)
        if kind in UNPACKED:  # a replaced one keeps the parts of the one it replaces (``Memo.share_over``)
            self.item = lambda obj, old=None: memo.share_over(prepare(obj), old)
        else:
            self.item = lambda obj, old=None: packed.pack(prepare(obj), self.codec, pool, memo, self.heads)

    def why_not(self, selector: str | None) -> tuple[str | None, bool]:
        """(why a pass may not read this kind from the store now, or None; whether waiting helps)."""
        if selector != self.selector:
            return f"label selector {selector!r} is not the watch's", False
        if not self.usable:
            return "the API server's resourceVersions are not integers", False
        if not self.synced:
            return "its watch has not listed since it started or lost events", False
        if not self.connected:
            return "its watch is reconnecting", False
        if self.rv < self.wanted:
            return f"the watch has not yet delivered resourceVersion {self.wanted} (the pass's last write)", True
        return None, False


class LiveStore:
    """Thread-safe store of the watched kinds (see the module docstring)."""

    def __init__(self):
        self._cond = threading.Condition()
        self._kinds: dict[str, _Kind] = {}
        # the objects whose packed rest is decoded now, across kinds (agent/kube/packed.py)
        self.loaded = packed.Loaded()
        # one memo for every kind (it settles itself: long-lived sharing stays bounded): the
        # Applications' equal parts, and the strings of the children's identities (a Service's
        # name is its Deployment's and its Application's)
        self._memo = Memo()
        self.reads = {"store": 0, "list": 0}  # how often a pass read a kind from here or listed it
        self.items_read = 0  # list items handed to ``item``: a list in progress (``runner``)

    def settle(self) -> None:
        """Let the share memo forget the parts only one object still uses (``Memo.settle``):
        ``run`` calls it between passes. Why: the memo otherwise settles only when it has doubled,
        and until then it keeps alive every part of every object a status sweep replaced (about
        a third of its entries after a sweep, issue 48)."""
        self._memo.settle()

    def watching(self, group: str, kind: str, selector: str | None) -> None:
        """Declare a watched kind (before its watch starts); others are always listed."""
        with self._cond:
            self._kinds[kind] = _Kind(group, kind, selector, self.loaded, self._memo)

    # -- fed by the watches ------------------------------------------------------------------

    def item(self, kind: str, obj: dict) -> dict:
        """``obj`` (a list item, the caller's own: changed in place) in the form the store keeps
        (``client.item_of``); as it is for a kind not watched. A watch hands each item of its list
        through this as it is read, so a list of 10,000 Deployments is never whole in memory.
        Counted in ``items_read``. An object the store holds at the same resourceVersion (one
        write of one object: the same content) is the store's own; another Application is shared
        over the one it replaces (``Memo.share_over``). Why: ``run``'s watches list again every
        10 minutes, and each re-list made a second copy of everything the store holds while the
        first was still in use (issue 48)."""
        k = self._kinds.get(kind)
        if k is None:
            return obj
        self.items_read += 1  # one thread per kind; an increment lost to a race is harmless
        meta = obj.get("metadata") or {}
        old = k.objects.get((meta.get("namespace") or "", meta.get("name") or ""))
        version = meta.get("resourceVersion")
        if old is not None and version and (old.get("metadata") or {}).get("resourceVersion") == version:
            return old  # the same write of the same object: a re-list keeps what the store holds
        return k.item(obj, old)

    def listed(self, kind: str, items: list[dict], resource_version: str | None) -> None:
        """A watch's (re-)list, its items in the store's form (``item``): it replaces the kind's
        objects; the watch is synced and connected."""
        with self._cond:
            k = self._kinds.get(kind)
            if k is None:
                return
            k.objects = {}
            for item in items:
                meta = item.get("metadata") or {}
                if meta.get("name"):
                    k.objects[(meta.get("namespace") or "", meta["name"])] = item
            rv = _rv({"metadata": {"resourceVersion": resource_version}})
            k.usable = k.usable and rv is not None
            k.rv, k.synced, k.connected = max(k.rv, rv or 0), True, True
            k.hidden = {key: uid for key, uid in k.hidden.items() if key in k.objects}
            self._cond.notify_all()

    def event(self, kind: str, event_type: str, obj: dict | None) -> None:
        """A watch event: ADDED and MODIFIED keep ``obj``, DELETED forgets it."""
        meta = (obj or {}).get("metadata") or {}
        rv = _rv(obj)
        with self._cond:
            k = self._kinds.get(kind)
            if k is None or not meta.get("name"):
                return
            key = (meta.get("namespace") or "", meta["name"])
            if event_type == "DELETED":
                k.objects.pop(key, None)
                k.versions.pop(key, None)
                if k.hidden.get(key) == meta.get("uid"):
                    del k.hidden[key]
            elif event_type in ("ADDED", "MODIFIED"):
                k.objects[key] = k.item(_copy(obj), k.objects.get(key))
            k.connected = True
            if rv is None:
                k.usable = False
            else:
                k.rv = max(k.rv, rv)
            self._cond.notify_all()

    def progress(self, kind: str, resource_version: str | None) -> None:
        """A bookmark, or a watch request that ended cleanly: the kind is current up to
        ``resource_version``, and its watch is (still) connected."""
        rv = _rv({"metadata": {"resourceVersion": resource_version}})
        with self._cond:
            k = self._kinds.get(kind)
            if k is not None:
                k.connected = True
                k.rv = max(k.rv, rv or 0)
                self._cond.notify_all()

    def interrupted(self, kind: str, lost: bool) -> None:
        """The watch's connection dropped (``lost``: it ended with an error, ``410 Gone``
        among them, and lists again: events were lost, so the kind is not synced until then)."""
        with self._cond:
            k = self._kinds.get(kind)
            if k is not None:
                k.connected = False
                k.synced = k.synced and not lost

    # -- told by the passes --------------------------------------------------------------------

    def written(self, obj: dict | None) -> None:
        """A pass wrote ``obj`` (the API server's answer): the store serves its kind again only
        once the watch has delivered that resourceVersion."""
        rv = _rv(obj)
        meta = (obj or {}).get("metadata") or {}
        with self._cond:
            k = self._kinds.get((obj or {}).get("kind"))
            if k is not None and rv is not None:
                k.wanted = max(k.wanted, rv)
                key = (meta.get("namespace") or "", meta.get("name") or "")
                k.versions[key] = max(k.versions.get(key, 0), rv)

    def version_after(self, kind: str, namespace: str, name: str, read: str | None) -> str | None:
        """The resourceVersion of an object read at ``read`` once the passes' own writes to it
        are counted (the newest answer to one); None for a kind not watched or a version that
        is not an integer."""
        with self._cond:
            k = self._kinds.get(kind)
            if k is None or not (isinstance(read, str) and read.isdigit()):
                return None
            written = k.versions.get((namespace, name), 0)
            return read if int(read) >= written else str(written)  # ``read`` itself: one string kept, not two

    def deleted(self, obj: dict) -> None:
        """A pass is deleting ``obj``: hidden from the next reads until its DELETED event."""
        meta = obj.get("metadata") or {}
        with self._cond:
            k = self._kinds.get(obj.get("kind"))
            if k is not None and meta.get("name"):
                k.hidden[(meta.get("namespace") or "", meta["name"])] = meta.get("uid")

    def held(self, kind: str) -> list[dict]:
        """The objects of ``kind`` the store holds now (none for a kind not watched), as they are:
        not waited for, not counted as a pass's read (``reads``)."""
        with self._cond:
            k = self._kinds.get(kind)
            return [] if k is None else list(k.objects.values())

    def read(self, kind: str, selector: str | None, namespace: str | None = None,
             wait: float = REACH_WAIT) -> tuple[list[dict] | None, str]:
        """(the kind's objects, in ``namespace`` when given, or None, why not). Waits up to
        ``wait`` seconds for the watch to reach the pass's last write; never for anything else."""
        deadline = time.monotonic() + wait
        with self._cond:
            k = self._kinds.get(kind)
            if k is None:
                return None, "not watched"
            why, waits = k.why_not(selector)
            while why and waits and (left := deadline - time.monotonic()) > 0:
                self._cond.wait(left)
                why, waits = k.why_not(selector)
            if why:
                self.reads["list"] += 1
                return None, why
            self.reads["store"] += 1
            hidden = k.hidden
            return [o for key, o in k.objects.items() if (namespace is None or key[0] == namespace)
                    and not (key in hidden and (o.get("metadata") or {}).get("uid") == hidden[key])], ""


class Served(list):
    """A list a pass read from the store, not from the API server: its items are the watch's."""


class StoreKube(Wrapper):
    """The ``Kube`` of ``run``'s passes: ``list`` and ``list_in`` served from ``store`` when it
    can vouch for the kind (``LiveStore.read``; else the wrapped LIST, said at DEBUG), writes
    told to the store (``written``, ``deleted``). Every other verb is the wrapped one's."""

    def __init__(self, kube, store: LiveStore):
        super().__init__(kube)
        self.store = store

    def list(self, group, kind, label_selector=None):
        items, why = self.store.read(kind, label_selector)
        if items is not None:
            return Served(items)
        log.debug("listing %s: not read from the watch (%s)", kind, why)
        return self._kube.list(group, kind, label_selector)

    def list_in(self, group, kind, namespace, label_selector=None):
        items, why = self.store.read(kind, label_selector, namespace)
        if items is not None:
            return Served(items)
        log.debug("listing %s in %s: not read from the watch (%s)", kind, namespace, why)
        return self._kube.list_in(group, kind, namespace, label_selector)

    def _wrote(self, obj):
        self.store.written(obj)
        return obj

    def apply(self, obj, force=True):
        return self._wrote(self._kube.apply(obj, force))

    def create(self, obj):
        return self._wrote(self._kube.create(obj))

    def patch_status(self, obj, status):
        return self._wrote(self._kube.patch_status(obj, status))

    def patch_managed_fields(self, obj, entries):
        return self._wrote(self._kube.patch_managed_fields(obj, entries))

    def patch_annotations(self, obj, annotations):
        return self._wrote(self._kube.patch_annotations(obj, annotations))

    def delete(self, obj, propagation="Background"):
        self.store.deleted(obj)
        return self._kube.delete(obj, propagation)
