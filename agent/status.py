"""Compute an Application's status from what one pass observed. Pure.

Follows the Kubernetes API conventions: ``observedGeneration``; ``conditions`` as a list of
{type, status, reason, message, lastTransitionTime, observedGeneration} where
``lastTransitionTime`` only moves when a condition's status flips; ``Ready`` is the summary.
"""

from __future__ import annotations

from dataclasses import dataclass

READY, SYNCED = "Ready", "Synced"


@dataclass(frozen=True)
class Outcome:
    """What the pass did for one Application.

    ``ok``: every step for it succeeded. ``changed``: something was created or updated.
    ``commit``: the full SHA the pass worked from (None for a hand-applied Application).
    ``reason``/``message``: a CamelCase reason and a sentence for the Synced condition.
    ``source_path``: the file it came from in Git, if any.
    """

    ok: bool
    changed: bool
    commit: str | None
    reason: str
    message: str
    source_path: str | None = None


def _condition(old: list[dict], type_: str, status: bool, reason: str, message: str,
               generation: int, now: str) -> dict:
    value = "True" if status else "False"
    previous = next((c for c in old if c.get("type") == type_), None)
    since = previous["lastTransitionTime"] if previous and previous.get("status") == value else now
    return {"type": type_, "status": value, "reason": reason, "message": message,
            "lastTransitionTime": since, "observedGeneration": generation}


def compute(app: dict, outcome: Outcome, deployment: dict | None, now: str) -> dict:
    """The new ``status`` for ``app`` (the live Application dict).

    ``deployment``: the live child Deployment (replicas read from its status), or None.
    ``now``: RFC 3339 UTC timestamp, e.g. ``2026-11-30T12:00:00Z``.
    ``lastSyncedCommit`` only advances when ``outcome.ok``; ``lastSyncTime`` moves when a
    change was applied or the synced commit advanced, and is otherwise kept.
    """
    old = app.get("status") or {}
    meta = app["metadata"]
    generation = meta.get("generation", 0)
    status: dict = {"observedGeneration": generation, "deployment": meta["name"], "service": meta["name"]}
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
    dstatus = (deployment or {}).get("status") or {}
    want = app.get("spec", {}).get("replicas", 0)
    status["replicas"] = dstatus.get("replicas", 0)
    status["readyReplicas"] = dstatus.get("readyReplicas", 0)
    conditions = old.get("conditions") or []
    synced = _condition(conditions, SYNCED, outcome.ok, outcome.reason, outcome.message, generation, now)
    rolled_out = (deployment is not None
                  and dstatus.get("observedGeneration", 0) >= deployment["metadata"].get("generation", 0)
                  and dstatus.get("updatedReplicas", 0) >= want
                  and status["readyReplicas"] >= want and status["replicas"] <= want)
    if not outcome.ok:
        ready = _condition(conditions, READY, False, outcome.reason, outcome.message, generation, now)
    elif rolled_out:
        ready = _condition(conditions, READY, True, "Available",
                           f"{status['readyReplicas']}/{want} replicas ready", generation, now)
    else:
        ready = _condition(conditions, READY, False, "Progressing",
                           f"{status['readyReplicas']}/{want} replicas ready", generation, now)
    status["conditions"] = [ready, synced]
    return status


def differs(old: dict | None, new: dict) -> bool:
    """True when writing ``new`` would change the stored status ``old``."""
    return (old or {}) != new
