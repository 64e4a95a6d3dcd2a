"""Compute an Application's status from what one pass observed. Pure.

Follows the Kubernetes API conventions: ``observedGeneration``; ``conditions`` as a list of
{type, status, reason, message, lastTransitionTime, observedGeneration} where
``lastTransitionTime`` only moves when a condition's status flips; ``Ready`` is the summary.
Which conditions there are follows kstatus (``conditions.kstatus``); ``health`` follows
gitops-engine (``registry.health``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from agent.api.objects import Obj
from agent.engine import conditions as conditions_, history
from agent.kinds import health as health_, registry

READY, SYNCED = conditions_.ConditionType.READY, conditions_.ConditionType.SYNCED


@dataclass(frozen=True, slots=True)  # a pass makes one per object: no __dict__
class Outcome:
    """What the pass did for one Application.

    ``ok``: every step for it succeeded. ``changed``: something was created or updated.
    ``commit``: the full SHA the pass worked from (None for a hand-applied Application).
    ``reason``/``message``: a CamelCase reason and a sentence for the Synced condition.
    ``source_path``: the file it came from in Git, if any; ``source_line``: the 1-based line of
    its document in that file.
    ``health``: the health to record instead of the children's (a suspended Application, see
    ``suspend.outcome``); ``suspended``: write ``status.suspended: true`` (absent otherwise).
    ``source_seen``: the pass asked the source and read its commit, so a ``SourceAvailable``
    condition is dropped; False (a pass that reused the last commit without asking Git) keeps
    it as it is (``conditions.SOURCE_AVAILABLE``).
    ``tasks``: ``status.tasks[]`` as the pass's task gate left it (``taskgate.entries``); None: the
    pass did not decide the tasks (an unchanged Application, a failure), so the stored entries
    of the tasks still in the spec are kept.
    """

    ok: bool
    changed: bool
    commit: str | None
    reason: str
    message: str
    source_path: str | None = None
    health: health_.Health | None = None
    suspended: bool = False
    source_line: int | None = None
    source_seen: bool = True
    tasks: tuple[Obj, ...] | None = None


def _condition(old: list[Obj], type_: str, status: bool, reason: str, message: str,
               generation: int, now: str) -> Obj:
    value = "True" if status else "False"
    previous = next((c for c in old if c.get("type") == type_), None)
    since = previous["lastTransitionTime"] if previous and previous.get("status") == value else now
    return {"type": type_, "status": value, "reason": reason, "message": message,
            "lastTransitionTime": since, "observedGeneration": generation}


def compute(app: Obj, outcome: Outcome, children: Mapping[str, Obj | None], now: str) -> Obj:
    """The new ``status`` for ``app`` (the live Application dict).

    ``children``: the live children by slot (``registry.slot``: ``{"Deployment": obj,
    "CronJob/web-nightly": obj, ...}``; None or missing where absent): each kind the spec has
    (``registry.wanted``) names its child (a kind with several objects lists them instead), and
    each kind adds what it observes (``registry.observed``: a Deployment's replicas, the
    schedules); ``health`` is ``{status, message}``, the worst of the spec's children's
    (``registry.health``)).
    ``conditions``: ``Ready``, then ``Reconciling`` and ``Stalled`` when they apply, then
    ``Synced`` (see ``conditions.kstatus``), each with ``observedGeneration``.
    ``now``: RFC 3339 UTC timestamp, e.g. ``2026-11-30T12:00:00Z``.
    ``lastSyncedCommit`` only advances when ``outcome.ok``; ``lastSyncTime`` moves when a
    change was applied or the synced commit advanced, and is otherwise kept; so do ``history``
    and ``lastChangedCommit`` (``history.fields``).
    """
    old = app.get("status") or {}
    meta = app["metadata"]
    generation = meta.get("generation", 0)
    spec = app.get("spec") if isinstance(app.get("spec"), dict) else {}
    status: Obj = {"observedGeneration": generation,
                   **{k.status_field: meta["name"] for k in registry.wanted(spec) if not k.many}}
    synced_commit = old.get("lastSyncedCommit")
    if outcome.commit:
        status["lastAttemptedCommit"] = outcome.commit
        if outcome.ok:
            synced_commit = outcome.commit
        if synced_commit:
            status["lastSyncedCommit"] = synced_commit
            status["lastSyncedCommitShort"] = synced_commit[:7]
    if outcome.source_path:
        status["sourcePath"] = outcome.source_path
    advanced = outcome.ok and (outcome.changed or synced_commit != old.get("lastSyncedCommit"))
    last_sync = now if advanced or (outcome.ok and not old.get("lastSyncTime")) else old.get("lastSyncTime")
    if last_sync:
        status["lastSyncTime"] = last_sync
    status.update(history.fields(old, spec, outcome.commit, outcome.ok, advanced, now))
    line = outcome.source_line if advanced else old.get("sourceLine")  # an upgrade writes nothing for it
    if outcome.source_path and isinstance(line, int) and line > 0:
        status["sourceLine"] = line
    status.update(registry.observed(meta["name"], spec, children))
    if tasks := _tasks(old, spec or {}, outcome.tasks):
        status["tasks"] = tasks
    health = health_of(app, outcome, children)
    status["health"] = health.as_status()
    if outcome.suspended:
        status["suspended"] = True
    old_conditions = old.get("conditions") or []
    status["conditions"] = [_condition(old_conditions, c.type, c.status, c.reason, c.message, generation, now)
                            for c in conditions_.kstatus(outcome.ok, outcome.reason, outcome.message, health)]
    kept = next((c for c in old_conditions if c.get("type") == conditions_.ConditionType.SOURCE_AVAILABLE), None)
    if kept is not None and not outcome.source_seen:
        status["conditions"].insert(-1, kept)  # before Synced, as ``source_conditions`` places it
    return status


def _tasks(old: Obj, spec: Obj, found: tuple[Obj, ...] | None) -> list[Obj]:
    """``status.tasks[]``: ``found`` when the pass decided the tasks, else the stored entries of
    the tasks ``spec`` still has (a Succeeded entry is what keeps a task from running again)."""
    if found is not None:
        return list(found)
    names = spec.get("tasks") or {}
    return [e for e in old.get("tasks") or [] if isinstance(e, dict) and isinstance(names, dict)
            and e.get("name") in names]


def health_of(app: Obj, outcome: Outcome, children: Mapping[str, Obj | None]) -> health_.Health:
    """The health ``compute`` records for ``app``: "pending deletion" when the Application is
    being deleted, else the outcome's own (a suspended Application), else the worst of its
    spec's children's (``registry.health``; ``children`` by slot, as ``compute`` reads them)."""
    spec = app.get("spec") if isinstance(app.get("spec"), dict) else {}
    return health_.pending_deletion(app, "Application") or outcome.health or registry.health(
        children, spec=spec, name=app["metadata"]["name"])


OBSERVED_AT, OBSERVED_BY = "observedAt", "observedBy"
"""The status fields that say when, and by what, the status was observed (``observed``)."""
SYNC_ONCE, RUN, RECONCILE = "sync --once", "run", "reconcile"
"""The values of ``observedBy``: the command whose pass wrote the status (``reconcile``: a pass of
``run`` that handled a sync-now request of ``python -m agent reconcile``)."""


def observed(old: Obj | None, new: Obj, at: str, by: str) -> Obj:
    """``new`` (a status as ``compute`` makes it, without ``observedAt``/``observedBy``) with
    the time ``at`` (RFC 3339 UTC) and the command ``by`` (``SYNC_ONCE``, ``RUN``,
    ``RECONCILE``) of the pass that observed it. When the rest of the stored status ``old`` equals
    ``new``, the stored pair is kept: a pass that finds nothing new sends no write, so the pair
    says when the status last moved, and by what. A status stored by an agent before these fields
    has none, and keeps none until it moves: an upgrade writes nothing (tests/test_app_fields.py).
    Argo CD's ``status.reconciledAt`` and the conditions' ``lastTransitionTime`` are the models."""
    old = old or {}
    rest = {k: v for k, v in old.items() if k not in (OBSERVED_AT, OBSERVED_BY)}
    if rest == new:
        return {**new, **{k: old[k] for k in (OBSERVED_AT, OBSERVED_BY) if k in old}}
    return {**new, OBSERVED_AT: at, OBSERVED_BY: by}


def differs(old: Obj | None, new: Obj) -> bool:
    """True when writing ``new`` would change the stored status ``old``."""
    return (old or {}) != new
