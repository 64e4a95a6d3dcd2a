"""Stage 6 of a pass: prune what Git no longer has (``plan_prunes``, ``prune_all``).

Children first, then their Applications (not left to the garbage collector): two waves
(``writes.ordered``), so every child's prune has finished before an Application's starts. Only
this pass's own, synced Applications' objects are pruned: not another source's, not one that
failed or backs off; an object kept by its annotation, or a suspended Application's child, is
reported as kept or suspended.
"""

from __future__ import annotations

from agent.api import labels
from agent.api.objects import Obj
from agent.api.schema import KIND
from agent.engine import guards, news, plan, suspend, writes
from agent.engine.passvalues import AppPlan, AppsApplied, ChildIndex, ChildWave, LiveState, Pass
from agent.engine.report import FAILED, KEPT, PRUNED, SUSPENDED
from agent.kube.cluster import ApiError, Cluster


def plan_prunes(p: Pass, live: LiveState, idx: ChildIndex, children: ChildWave, prune: bool) -> list[plan.Step]:
    """The prunes of children: each live child no desired child paired with (when ``prune``); a
    note for each one with the agent's labels that it did not make."""
    unpaired = {ident: c for ident, c in idx.by_id.items() if ident not in children.paired}
    steps = plan.prunes(unpaired, set()) if prune else []
    for ident, owner, _ in live.child_facts:
        if owner is None and ident in unpaired:  # not desired
            p.report.notes.append(f"{plan.subject(ident)} carries the agent's labels but is "
                                  "not a child it made: not ours, left alone")
    return steps


def prune_all(p: Pass, child_prunes: list[plan.Step], planned: AppPlan, applied: AppsApplied) -> None:
    """Prune ``child_prunes``, then the Applications ``planned`` prunes (its ``steps`` hold only
    prunes once the Applications were applied)."""
    kube, report = p.kube, p.report
    keeps_children: set[str] = set()  # Applications with a child kept by its annotation
    for wave in ([s for s in child_prunes if s.action == plan.PRUNE],
                 [s for s in planned.steps if s.action == plan.PRUNE]):
        deletes = [d for step in wave if (d := _delete_of(p, step, planned, applied, keeps_children))]
        for (step, owner, _), pruned in writes.ordered(kube, deletes, lambda d, scratch: _prune(kube, scratch, *d),
                                                       report):
            if pruned:
                kube.change(step.live if step.identity[1] == KIND else applied.in_scope.get(owner), owner, PRUNED,
                            step.subject)
                if step.identity[1] == KIND:  # its status goes with it: the prune itself is the news
                    report.notices.append(pruned_notice(step.target, report.commit))


def _delete_of(p: Pass, step: plan.Step, planned: AppPlan, applied: AppsApplied,
               keeps_children: set[str]) -> tuple[plan.Step, str, str] | None:
    """(step, owner key, propagation) when ``step`` is to be carried out; None when its owner is
    not synced, another's or backing off, or it is held (reported as suspended) or kept by its
    annotation (reported as kept; its owner then keeps ``keeps_children``' orphan propagation)."""
    report, live = p.report, step.target  # a prune's target is its live object
    owner = plan.owner_key(live)
    if owner in report.failures or owner in applied.foreign or owner in planned.waiting:
        return None
    if step.identity[1] != KIND and owner in applied.holds:  # a suspended Application's child Git dropped
        report.add(owner, step.subject, SUSPENDED, suspend.not_applied(applied.holds[owner]))
        return None
    if guards.prune_disabled(live) or suspend.set_by_hand(live):
        by = labels.PRUNE_ANNOTATION if guards.prune_disabled(live) else labels.RECONCILE_ANNOTATION
        report.add(owner, step.subject, KEPT, f"not in Git; {by}: {live['metadata']['annotations'][by]}")
        keeps_children.add(owner)
        return None
    return step, owner, guards.propagation(step.identity[1], owner in keeps_children)


def pruned_notice(app: Obj, commit: str | None) -> news.Notice:
    """The ``Pruned`` notice of the live Application ``app`` deleted at ``commit``."""
    meta, old = app["metadata"], app.get("status") or {}
    return news.pruned(meta.get("namespace", ""), meta["name"], commit=commit, uid=meta.get("uid", ""),
                       previous_commit=news.deployed(old) or old.get("lastSyncedCommit"),
                       source_path=old.get("sourcePath") or (meta.get("annotations") or {}).get(labels.SOURCE_PATH))


def _prune(kube: Cluster, report: writes.Scratch, step: plan.Step, owner: str, propagation: str) -> bool:
    """Delete one object ``step`` prunes; True when it was deleted (or already gone). A refusal
    is recorded as failed for ``owner``; an unreachable API server (status 0) re-raises."""
    try:
        kube.delete(step.target, propagation)
    except ApiError as err:
        if err.status == 0:
            raise
        report.add(owner, step.subject, FAILED, f"prune failed: {err}")
        return False
    report.add(owner, step.subject, PRUNED)
    return True
