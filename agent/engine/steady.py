"""What ``run``'s next pass may take from this one: the Applications whose inputs did not move.

Why: a pass is level-based (``sync``): it decides every Application and child again. At 10,000
Applications that is seconds of work a pass with nothing to do throws away, and it delays the one
Application a push changed behind 9,999 that did not (issue 33). ``run`` keeps one ``Steady``
across its passes; ``sync --once`` has none and decides everything, as before.

What one Application's part of a pass depends on: its document in Git (file, line and Git blob:
the same blob is the same bytes), its live object and its live children (each at a
``metadata.resourceVersion``, which the API server changes on every write to the object), the
commit (recorded only in its status; the plan never compares it: ``plan._without_provenance``)
and the pass's settings (fixed for one ``run``). So:

- **unchanged** (``unchanged``): the same document, the live Application and the same children at
  the resourceVersions this pass left them at (after its own writes: ``versions``), and the
  previous pass synced it cleanly. The pass skips rendering and deciding it and its children:
  they are unchanged again. Only its status is still computed (a new commit moves it: the sweep).
- **settled** (``settled``): unchanged, and the same commit, and Git was seen as then (or an
  offline pass after an online one): its status would not move either. Its health, readiness and
  summary lines are the ones recorded.

Only Applications that synced cleanly are kept: not failed, not backing off, not held, not
another source's, from this source's Git. Anything else is decided in full every pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Callable, Iterable, TypeGuard, TypeVar, cast

from agent.api.objects import Obj

T = TypeVar("T")
Document = tuple[str, int, str]  # (path, line, Git blob id) of an Application's document
Child = tuple[tuple[str, str, str, str], str | None]  # (plan.Identity, resourceVersion) of a live child
Versions = Callable[[str, str, str, str | None], str | None]  # (kind, namespace, name, read) -> after the pass


@dataclass(frozen=True, slots=True)  # one per Application, kept across passes: no __dict__
class Entry:
    """One Application as a pass left it. ``children``: (identity, resourceVersion) of each live
    child, sorted; ``lines``: the subjects of its children's summary lines (each unchanged again); ``health``,
    ``readiness`` and ``synced``: what the pass put in ``Report.health``, ``readiness`` and
    ``synced`` for it; ``notes``: the pass's notes about its document (labels the agent sets)."""

    document: Document
    version: str
    children: tuple[Child, ...]
    commit: str
    source_seen: bool
    lines: tuple[str, ...]
    health: Obj
    readiness: tuple[str, str] | None
    synced: object
    notes: tuple[str, ...] = ()

    @staticmethod
    def over(old: "Entry", new: "Entry") -> "Entry":
        """``new``, each field equal to ``old``'s being ``old``'s own value. Why: after a new commit
        every Application gets a new entry while the last pass's are still held; most parts are
        the same (issue 48)."""
        return Entry(*(was if was == now else now
                       for was, now in ((getattr(old, f), getattr(new, f)) for f in _ENTRY_FIELDS)))


_ENTRY_FIELDS = tuple(f.name for f in fields(Entry))


@dataclass
class Source:
    """A commit's documents as a pass read them (path and commit fixed for one ``run``)."""

    commit: str
    read: object  # what ``sync`` keeps of the read: opaque here


@dataclass
class Steady:
    """The entries of the previous pass, by ``namespace/name``, and the read of its commit.
    ``versions``: the resourceVersion an object has after the pass's own writes (its answer's),
    or the one it was read at; None when the caller cannot say (then nothing is kept).
    ``facts``: what a pass derived from each live object it read (``facts``), by the object."""

    versions: Versions | None = None
    entries: dict[str, Entry] = field(default_factory=dict)
    source: Source | None = None
    facts: dict[int, tuple[Obj, object]] = field(default_factory=dict)
    told: dict[str, set[str]] = field(default_factory=dict)
    """Application key -> the ``SUBJECT: TEXT`` admission warnings its ``AdmissionWarning`` Event
    told (``events.Batch.warned``): each is told once, not at every pass that applies again."""
    fights: dict[tuple[str, str, str, str], tuple[int, float, str]] = field(default_factory=dict)
    """Child identity -> (corrections, monotonic time the next may come, digest of the desired
    object) of each object another writer keeps changing (``selfheal``)."""
    _next: dict[int, tuple[Obj, object]] = field(default_factory=dict)
    _ahead: dict[int, tuple[Obj, object]] = field(default_factory=dict)  # ``warm``'s

    def fact(self, obj: Obj, derive: Callable[[Obj], T]) -> T:
        """``derive(obj)``, computed once for as long as the store hands out the same object
        (the watches replace an object on every change: a changed one is derived again). Pure
        ``derive`` only. ``turn`` keeps only the objects of the last pass."""
        known = self._next.get(id(obj))  # asked before in this pass
        if known is not None and known[0] is obj:
            return cast(T, known[1])
        known = self.facts.get(id(obj))
        if known is None or known[0] is not obj:
            known = self._ahead.get(id(obj))  # derived between passes (``warm``)
            if known is None or known[0] is not obj:
                known = (obj, derive(obj))
        self._next[id(obj)] = known  # the last pass's pair itself: 30,000 of them at 10,000 Applications
        return cast(T, known[1])

    def warm(self, objs: Iterable[Obj], derive: Callable[[Obj], object], stop: Callable[[], bool],
             batch: int = 256) -> int:
        """Between two passes: derive the facts of ``objs`` now, so that the next pass finds them
        (``fact``) instead of deriving them on its way to its apply. Held apart (``_ahead``): they
        replace what an earlier warm-up held, and ``turn`` keeps only those the pass asked for
        (objects the watches have replaced or deleted since are not kept alive). ``stop()`` is
        asked every ``batch`` objects: True ends the warm-up there (a pass is wanted; it derives
        the rest). Returns how many objects were looked at."""
        ahead: dict[int, tuple[Obj, object]] = {}
        n = 0
        for n, obj in enumerate(objs, 1):
            if n % batch == 0 and stop():
                n -= 1
                break
            known = self.facts.get(id(obj))
            if known is None or known[0] is not obj:
                known = self._ahead.get(id(obj))
            ahead[id(obj)] = known if known is not None and known[0] is obj else (obj, derive(obj))
        self._ahead = ahead
        return n

    def turn(self) -> None:
        """End of a pass: keep the facts of the objects it read, forget the others, and those
        of the objects it wrote (``written``): the watches replace each of those, and its fact
        would keep the old object alive for one more pass (after a status sweep, every
        Application: ~14 MiB at 10,000, issue 33)."""
        kept = self._next
        if self.versions is not None:
            kept = {k: v for k, v in kept.items() if not self.written(v[0])}
        self.facts, self._next, self._ahead = kept, {}, {}

    def release(self, objs: Iterable[Obj]) -> None:
        """Forget now, not at ``turn``, the facts of each of ``objs`` this pass wrote
        (``written``), wherever they are held. Why: a status sweep writes every Application, and
        while its facts held the ones it read, the watches' replacements of all 10,000 were alive
        beside them at the sweep's end (issue 48)."""
        if self.versions is None:
            return
        for obj in objs:
            if self.written(obj):
                for held in (self._next, self.facts, self._ahead):
                    known = held.get(id(obj))
                    if known is not None and known[0] is obj:
                        del held[id(obj)]

    def written(self, obj: Obj) -> bool:
        """True when this pass wrote ``obj`` (``after`` is past the resourceVersion it was read at)."""
        return self.after(obj) != (obj.get("metadata") or {}).get("resourceVersion")

    def unchanged(self, key: str, document: Document, app: Obj, children: tuple[Child, ...]) -> Entry | None:
        """The entry of ``key`` when its ``document``, live Application ``app`` and live
        ``children`` ((identity, resourceVersion), sorted) are as the previous pass left them."""
        entry = self.entries.get(key)
        if entry is None or entry.document != document or entry.children != children:
            return None
        return entry if (app.get("metadata") or {}).get("resourceVersion") == entry.version else None

    @staticmethod
    def settled(entry: Entry | None, commit: str | None, source_seen: bool) -> TypeGuard[Entry]:
        """True when an ``unchanged`` entry's status would not move at ``commit``."""
        return entry is not None and entry.commit == commit and (entry.source_seen or not source_seen)

    def after(self, obj: Obj) -> str | None:
        """``obj``'s resourceVersion once this pass's writes are counted (``versions``)."""
        meta = obj.get("metadata") or {}
        if self.versions is None:
            return None
        return self.versions(obj.get("kind", ""), meta.get("namespace") or "", meta.get("name", ""),
                             meta.get("resourceVersion"))
