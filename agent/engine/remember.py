"""The last step of a ``run`` pass: what the next pass may reuse (``remember``, ``steady.py``)."""

from __future__ import annotations

from typing import Iterable

from agent.api.objects import Obj
from agent.api.schema import KIND
from agent.engine import plan, steady as steady_
from agent.engine.passvalues import AppPlan, AppsApplied, ChildWave, LiveState, Pass, Version
from agent.engine.report import ADOPTED, CONFIGURED, CREATED, RECREATED, UNCHANGED, Change
from agent.manifests.manifest import Manifest

_CLEAN = frozenset({CREATED, CONFIGURED, RECREATED, ADOPTED, UNCHANGED})


def remember(p: Pass, steady: steady_.Steady, planned: AppPlan, applied: AppsApplied, children: ChildWave,
             live: LiveState | None = None) -> None:
    """Record in ``steady`` each Application from this source's Git that this pass synced
    cleanly (every line of it applied or unchanged, its status written or settled), as the
    pass left it: its document, and its live object and children at the resourceVersions of
    the pass's own writes (``steady.Steady.after``). Everything else is decided in full next time.
    ``live``: what the pass read (its children's versions are the entries' own: ``_read_versions``)."""
    report = p.report
    lines: dict[str, list[Change]] = {}
    for change in report.changes:
        lines.setdefault(change.application, []).append(change)
    entries: dict[str, steady_.Entry] = {}
    wanted = dict(zip(p.git.keys, p.git.manifests))
    versions = _read_versions(live)
    for key, app in applied.in_scope.items():
        hit = planned.hits.get(key)
        if key in report.rechecks:  # its rollout is judged again at the next pass (``deployment.recheck_at``)
            continue
        if steady_.Steady.settled(hit, report.commit, report.source_seen) and key not in report.failed:
            entries[key] = hit  # nothing of it moved, nothing was written
            continue
        m = wanted.get(key)
        if m is None or m.path not in p.git.blobs or key in report.failures or key in planned.waiting \
                or key in applied.holds or key in children.held or key in report.failed or key not in report.health \
                or key not in report.synced or any(c.action not in _CLEAN for c in lines.get(key, ())):
            continue
        entry = _entry(p, steady, key, m, app, lines.get(key, ()), children, planned, versions)
        if entry is not None:
            entries[key] = entry
    steady.entries = entries
    steady.turn()


def _read_versions(live: LiveState | None) -> dict[int, Version]:
    """id of each live child the pass read -> its (identity, resourceVersion) as ``livestate``
    derived it (``steady.Steady.fact``): one tuple for the pass's view, the next pass's
    ``unchanged`` and the entry (``_entry``), not one more per child (issue 48)."""
    if live is None:
        return {}
    return {id(child): version for child, (_, _, version) in zip(live.children, live.child_facts)}


def _entry(p: Pass, steady: steady_.Steady, key: str, m: Manifest, app: Obj, lines: Iterable[Change],
           children: ChildWave, planned: AppPlan, read: dict[int, Version]) -> steady_.Entry | None:
    """The entry of the Application ``key`` (``m``: its manifest; ``app``: live) as the pass left
    it; None when a resourceVersion after the pass cannot be told. ``read``: ``_read_versions``.
    Each part equal to the previous entry's (``planned.hits``: the Application was unchanged) is
    that entry's own: a status sweep builds 10,000 entries beside the ones it replaces (issue 48)."""
    report = p.report
    version = steady.after(app)
    kids = tuple(sorted(_child(steady, c, read) for c in children.live_of.get(key, {}).values()))
    if version is None or report.commit is None or any(v is None for _, v in kids):
        return None
    hit = planned.hits.get(key)
    entry = steady_.Entry(
        document=(m.path, m.line, p.git.blobs.get(m.path, "")), version=version, children=kids,
        commit=report.commit, source_seen=report.source_seen,
        lines=tuple(c.subject for c in lines if not c.subject.startswith(f"{KIND}/")),
        health=report.health[key], readiness=report.readiness.get(key), synced=report.synced[key],
        notes=tuple(hit.notes if hit is not None else planned.notes_of.get(key, ())))
    return entry if hit is None else steady_.Entry.over(hit, entry)


def _child(steady: steady_.Steady, child: Obj, read: dict[int, Version]) -> Version:
    """(identity, resourceVersion after the pass) of a live ``child``: the tuple the pass read
    (``read``) when the pass did not write it since."""
    after = steady.after(child)
    known = read.get(id(child))
    if known is not None and known[1] == after:
        return known
    return (known[0] if known is not None else plan.identity(child)), after
