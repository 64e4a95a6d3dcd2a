"""Stage 7 of a pass: each Application's outcome and status (``write_statuses``).

An Application's status says what this pass did for it (``status.Outcome``): synced from Git,
failed (with the reason), refused in Git, kept from the cluster (and why it was not pruned), or
held (suspended). It is written once per pass, only when it differs; one unchanged and at the
same commit since ``run``'s previous pass is not even computed (``steady.Steady.settled``).
"""

from __future__ import annotations

import datetime
from dataclasses import replace
from typing import cast

from agent.api import labels
from agent.api.objects import Obj
from agent.api.schema import KIND
from agent.engine import (backoff, conditions, guards, news, plan, sources, status as status_, statuswrite,
                          steady as steady_, suspend, taskgate, writes)
from agent.engine.conditions import Reason
from agent.engine.passvalues import AppPlan, AppsApplied, ChildWave, Pass
from agent.engine.report import KEPT, Report

Status = tuple[str, Obj, status_.Outcome, dict[str, Obj], bool]
"""(key, live Application, outcome, slot -> live child, failed): one Application's status to write."""
from agent.kinds import deployment, job, registry
from agent.kube.cluster import ApiError


STATUS_BATCH = 128
"""Applications whose statuses ``write_statuses`` computes, judges and writes in one step. Why: a
status sweep (every Application, after a new commit) held the outcome, children and write record
of each of 10,000 Applications at once, and read each child in three stages, each after the
store's pool of decoded objects (``packed.LOADED_LIMIT``) had shed it, so a Deployment was
decoded four times a sweep. A batch's children stay decoded from its first stage to its last, and
its records go into the report before the next batch starts (issue 48)."""


def write_statuses(p: Pass, keys: list[str], planned: AppPlan, applied: AppsApplied, children: ChildWave,
                   let_go: bool = False) -> None:
    """Write the status of each Application of ``keys`` once, in the pool, only when it
    differs; a status that does not move is checked inline, and one unchanged and at the same
    commit since the previous pass (``steady.Steady.settled``) not at all: its health and
    readiness are the recorded ones. ``children``: the child waves so far, ``live_of`` holding
    every owned live child. ``STATUS_BATCH`` Applications at a time, in order; the pod reads
    (``MAX_POD_READS``) are counted across batches. Sets ``report.retry_at`` to the earliest retry.
    ``let_go`` (the sweep, the pass's last writes): once a batch is written, the pass holds
    only the identity of its Applications (``AppsApplied.let_go``) and no facts of those it
    wrote (``steady.Steady.release``)."""
    broken_files = {problem.path: str(problem) for problem in p.git.problems}
    synced = {True: f"children applied from commit {(p.report.commit or '')[:12]}",  # one string each for the pass
              False: "children applied from the live Application"}
    kube, retry, by = p.kube, p.retry, p.opts.observed_by
    reads, now = MAX_POD_READS, clock()  # one budget and one clock for the whole call
    for start in range(0, len(keys), STATUS_BATCH):
        statuses = _statuses(p, keys[start:start + STATUS_BATCH], planned, applied, children, broken_files, synced)
        statuses, reads = _with_pods(p, statuses, reads, now)
        record_health(p, statuses, children)
        for _, next_retry in writes.ordered(kube, statuses, lambda st, scratch: statuswrite.write(
                kube, cast(Report, scratch), *st[:4], failed=st[4], retry=retry, by=by), p.report,
                inline=lambda st: not statuswrite.moves(*st[1:], retry=retry, by=by)):
            p.report.retry_at = backoff.earliest(p.report.retry_at, next_retry)
        if let_go:
            del statuses  # this batch's (key, Application, ...) tuples
            gone = applied.let_go(keys[start:start + STATUS_BATCH])
            if p.steady is not None:
                p.steady.release(gone)


def _statuses(p: Pass, keys: list[str], planned: AppPlan, applied: AppsApplied, children: ChildWave,
              broken_files: dict[str, str], synced: dict[bool, str]) -> list[Status]:
    """The status to write of each Application of ``keys`` whose status may move; a settled one's
    recorded health and readiness go into the report instead (``write_statuses``)."""
    report = p.report
    statuses: list[Status] = []
    for key in keys:
        entry = planned.hits.get(key)
        if steady_.Steady.settled(entry, report.commit, report.source_seen):
            report.health[key], report.synced[key] = entry.health, entry.synced
            if entry.readiness is not None:
                report.readiness[key] = entry.readiness
                live = applied.in_scope.get(key) or applied.failed.get(key) or {}
                if commit := news.about(live.get("status") or {}):
                    report.attributed[key] = commit
            continue
        app = applied.in_scope.get(key) or applied.failed[key]
        outcome = _outcome(p, key, app, broken_files, synced[key in p.git.paths], applied, children)
        if not report.source_seen:  # the last commit reused, Git not asked: SourceAvailable stays as it is
            outcome = replace(outcome, source_seen=False)
        kinds = children.live_of.get(key, {})
        if key in children.related:  # what its children make (a CronJob's Jobs): read for its status only
            kinds = {**kinds, **children.related[key]}
        statuses.append((key, app, _located(p, key, outcome), kinds, key in report.failures))
    return statuses


def _located(p: Pass, key: str, outcome: status_.Outcome) -> status_.Outcome:
    """``outcome`` with the line of the Application's document in its file, when it is in Git."""
    line = p.git.lines.get(key)
    return replace(outcome, source_line=line) if line and outcome.source_path == p.git.paths.get(key) else outcome


MAX_POD_READS = 20
"""Deployments whose pods one pass reads (``_with_pods``); the others' health says only what the
Deployment says, until a later pass."""
RECHECK_SECONDS = 15.0
"""Seconds after which ``run`` looks again at a Deployment in a rollout whose pods name no reason
yet (``deployment.recheck_at``): pods are not watched, so a pod that starts failing changes no
object the watches see."""


def clock() -> datetime.datetime:
    """The pass's clock (aware, UTC) at which it judges its Deployments' rollouts."""
    return datetime.datetime.now(datetime.timezone.utc)


def _with_pods(p: Pass, statuses: list[Status], reads: int,
               now: datetime.datetime) -> tuple[list[Status], int]:
    """``statuses`` with each Deployment in a rollout judged at the pass's clock ``now``
    (``clock``; ``deployment.with_pods``): one that says nothing of why (``deployment.waits_for_pods``) read
    with its pods (one LIST of its namespace's pods by its selector, at most ``MAX_POD_READS`` a
    pass), so that its health names a pod no node fits (``FailedScheduling``) or a container that
    cannot start (``ImagePullBackOff``, ...); one whose pods could not be made
    (``deployment.failed_create``) with none. Either is Degraded once its failure has lasted
    ``spec.rollout.failAfterSeconds``. ``reads``: the pod reads left to this pass; returns the
    statuses and the reads then left. A steady pass computes no status (``steady.Steady.settled``)
    and an available Deployment is in no rollout: neither sends a request. A read that fails
    leaves the Deployment as it is. Each Deployment not yet decided is rechecked
    (``report.rechecks``, ``report.retry_at``: ``deployment.recheck_at``)."""
    out: list[Status] = []
    slot = deployment.KIND.kind
    for key, app, outcome, kinds, failed in statuses:
        live = kinds.get(slot)
        seconds = deployment.fail_after(app.get("spec"))
        if live is not None and deployment.failed_create(live):
            kinds = {**kinds, slot: deployment.with_pods(live, [], now, seconds)}
        elif live is not None and reads > 0 and deployment.waits_for_pods(live):
            reads -= 1
            labels_ = deployment.selected(live, app["metadata"]["name"])
            selector = ",".join(f"{k}={v}" for k, v in sorted(labels_.items()))
            try:
                pods = p.kube.list_in("", "Pod", live["metadata"]["namespace"], selector)
            except ApiError as err:
                if err.status == 0:
                    raise
                pods = []
            kinds = {**kinds, slot: deployment.with_pods(live, pods, now, seconds)}
        if (judged := kinds.get(slot)) is not None and \
                (at := deployment.recheck_at(judged, now, min(RECHECK_SECONDS, seconds))) is not None:
            p.report.rechecks[key] = at
            p.report.retry_at = at if p.report.retry_at is None else min(p.report.retry_at, at)
        out.append((key, app, outcome, kinds, failed))
    return out, reads


def record_health(p: Pass, statuses: list[Status], children: ChildWave) -> None:
    """Put each Application's health (``status.health_of``; equal ones one dict, kept by the next
    pass's ``steady.Entry`` too: ``Report.shared_health``) in ``report.health``, and in
    ``report.synced`` each one from this source's Git that synced: its outcome with ``changed``
    False (what ``sync --wait`` rewrites its status with when a child's readiness moves,
    ``readiness``), or None when its health is not its children's: suspended, or a child held
    (not ok, reason ``Suspended``: ``sync --wait`` lists it as skipped, not waited for)."""
    report = p.report
    for key, app, outcome, kinds, _ in statuses:
        health = status_.health_of(app, outcome, kinds).as_status()
        report.health[key] = report.shared_health.setdefault((health["status"], health["message"]), health)
        if outcome.reason in (Reason.TASK_RUNNING, Reason.TASK_FAILED) and key in p.git.paths:
            report.tasks[key] = outcome.reason
        held = outcome.reason == suspend.SUSPENDED and key not in report.failures
        if (outcome.ok or held) and key in p.git.paths:
            waits = outcome.ok and outcome.health is None and not outcome.suspended and key not in children.held
            report.synced[key] = replace(outcome, changed=False) if waits else None


def _outcome(p: Pass, key: str, app: Obj, broken_files: dict[str, str], synced: str, applied: AppsApplied,
             children: ChildWave) -> status_.Outcome:
    """What the pass did for the Application ``key`` (``app``: live), for its status.
    ``broken_files``: path -> why it was refused; ``synced``: the Synced message."""
    report, commit, paths = p.report, p.report.commit, p.git.paths
    annotations = app["metadata"].get("annotations") or {}
    in_git = key in paths
    from_git = in_git or plan.owned(app, p.opts.source_id)
    path = paths.get(key) or annotations.get(labels.SOURCE_PATH)
    live_of = children.live_of.get(key, {})
    if key in report.failures:
        taken = children.taken.get(key)
        return status_.Outcome(False, False, commit if from_git else None, report.reasons.get(key, Reason.SYNC_FAILED),
                               report.failures[key], path if from_git else None,
                               health=registry.health(live_of, frozenset(taken), app.get("spec"),
                                                      app["metadata"]["name"])
                               if taken is not None else None)
    if not in_git and from_git and path in broken_files:
        report.refused.setdefault(key, broken_files[path])
        return status_.Outcome(False, False, commit, Reason.INVALID_MANIFEST, broken_files[path], path)
    if not in_git and from_git:
        return _kept_outcome(p, key, app, path, applied.holds)
    held = suspend.outcome(applied.holds.get(key), children.held.get(key, {}), live_of,
                           commit=commit if in_git else None, path=paths.get(key), spec=app.get("spec"),
                           name=app["metadata"]["name"]) \
        if key in applied.holds or key in children.held else None
    if held is not None:
        return held
    changed = key in applied.written or key in children.written
    if (gate := children.gates.get(key)) is not None:
        return _tasks_outcome(gate, live_of, changed, commit if in_git else None, synced, path if in_git else None)
    return status_.Outcome(True, changed, commit if in_git else None, Reason.SYNCED, synced, path if in_git else None)


def _tasks_outcome(gate: taskgate.Gate, live_of: dict[str, Obj], changed: bool, commit: str | None, synced: str,
                   path: str | None) -> status_.Outcome:
    """The outcome of an Application with tasks the pass decided (``gate``; ``live_of``: its
    children by slot, as the pass left them): ``status.tasks[]``, and not ok with the tasks'
    verdict (``TaskRunning``, ``TaskFailed``: ``taskgate.verdict``) until every task succeeded."""
    jobs = {slot.partition("/")[2]: obj for slot, obj in live_of.items()
            if slot.startswith(f"{job.KIND.kind}/") and obj is not None}
    found = tuple(taskgate.entries(gate, jobs))
    verdict = taskgate.verdict(gate, list(found))
    if verdict is None:
        return status_.Outcome(True, changed, commit, Reason.SYNCED, synced, path, tasks=found)
    return status_.Outcome(False, changed, commit, verdict.reason, verdict.message, path, health=verdict.health,
                           tasks=found)


def _kept_outcome(p: Pass, key: str, app: Obj, path: str | None, holds: dict[str, suspend.Hold]) -> status_.Outcome:
    """The outcome of an owned Application no longer in Git that this pass kept, and why: reason
    ``PruneBlocked`` when pruning is on and nothing chose to keep it (the pass's pruning was
    blocked), else ``PruneSkipped`` (``conditions``)."""
    held = p.report.held_back.get(key)
    why = "pruning is off (--no-prune)" if not p.opts.prune else \
        f"pruning was blocked: {held}" if held else "pruning was blocked this pass"
    reason = conditions.PRUNE_BLOCKED if p.opts.prune else conditions.PRUNE_SKIPPED
    if guards.prune_disabled(app):
        why = f"it has the annotation {labels.PRUNE_ANNOTATION}: {guards.PRUNE_DISABLED}"
        reason = conditions.PRUNE_SKIPPED
    if elsewhere := sources.wanted_elsewhere(app, p.opts.source_id):
        why, reason = still_wanted(app["metadata"]["namespace"], app["metadata"]["name"], elsewhere), \
            conditions.PRUNE_SKIPPED
    if key in holds:
        why = suspend.kept_because(holds[key])
    p.report.add(key, f"{KIND}/{key}", KEPT, f"not in Git; {why}")
    if key in holds:
        return suspend.held(holds[key], commit=p.report.commit, path=path, gone=True)
    return status_.Outcome(False, False, p.report.commit, reason,
                           f"no longer in Git at commit {p.report.commit}; kept because {why}", path)


def still_wanted(namespace: str, name: str, elsewhere: list[tuple[str, str]]) -> str:
    """Why the Application ``namespace``/``name``, gone from this source's Git, is kept: the
    other sources whose Git still has it (``sources.wanted_elsewhere``: ``(source id, file)``)
    and how to hand it over to the first of them."""
    whose = ", ".join(f"source {other[:200]!r} ({path[:200]!r})" if path else f"source {other[:200]!r}"
                      for other, path in elsewhere[:3])
    return (f"{whose} still ha{'ve' if len(elsewhere) > 1 else 's'} it in Git; hand it over to "
            f"{'that source' if len(elsewhere) == 1 else 'one of them'}: "
            f"{sources.hand_over(namespace, name, elsewhere[0][0])}, or remove it from "
            f"{'that source' if len(elsewhere) == 1 else 'them'}")
