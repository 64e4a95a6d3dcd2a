"""Stage 4 of a pass: apply the Applications from Git (``apply_applications``) and add the live
ones that still sync (``keep_live``).

``converge`` and ``record`` are the one way a pass carries out a step and reports it, for
Applications here and for children (``childapply``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from agent.api.objects import Obj
from agent.api.schema import KIND
from agent.engine import apply, conditions, plan, steady as steady_, suspend, writes
from agent.engine.conditions import Reason
from agent.engine.passvalues import AppPlan, AppsApplied, LiveState, Pass, key_of
from agent.engine.report import FAILED, SUSPENDED, UNCHANGED, WRITTEN, Report
from agent.kinds import health, render
from agent.kube.cluster import ApiError, Cluster


def apply_applications(p: Pass, live: LiveState, planned: AppPlan) -> AppsApplied:
    """Apply the Applications from Git (their namespace first, when missing), in the pool; one
    held by its reconcile annotation stays as it is, one backing off is not attempted. Those
    unchanged since ``run``'s previous pass are in scope as they are."""
    kube, report = p.kube, p.report
    made = writes.Namespaces(kube, live.namespaces, render.namespace)
    in_scope = {key: planned.live[key] for key in planned.hits}  # unchanged again (reported after the first wave)
    work = []
    for step in (s for s in planned.steps if s.action != plan.PRUNE and key_of(s.target) not in planned.waiting):
        if step.live is not None and suspend.set_by_hand(step.live):  # reconcile: disabled: the live one stays
            report.add(key_of(step.target), step.subject, SUSPENDED,
                       suspend.Hold(suspend.ON_APPLICATION, True).message)
            in_scope[key_of(step.target)] = step.live
        else:
            work.append(step)
    failed: dict[str, Obj] = {}
    written: set[str] = set()
    for step, done in writes.ordered(kube, work, lambda step, scratch: converge(
            kube, scratch, key_of(step.target), step,
            before=lambda: made.ensure(step.target["metadata"]["namespace"])), report, report.failures,
            report.reasons, inline=lambda step: step.action == plan.UNCHANGED):
        key = key_of(step.target)
        if done is None:
            if step.live is not None:
                failed[key] = step.live
            continue
        if record(p, key, step.subject, done, done.live):
            written.add(key)
        in_scope[key] = done.live
    return AppsApplied(in_scope, failed, frozenset(written))


def keep_live(p: Pass, live: LiveState, planned: AppPlan, applied: AppsApplied) -> AppsApplied:
    """``applied`` with the Applications kept from the cluster in scope: hand-applied ones, and
    owned ones Git did not prune this pass (their file failed to validate, or pruning is off);
    another source's are its agent's business (``foreign``). Then the suspended ones
    (``suspend.application``: ``holds``)."""
    pruned = {key_of(s.target) for s in planned.steps if s.action == plan.PRUNE}
    facts = list(zip(live.app_facts, live.apps))
    foreign = frozenset(f.key for f, _ in facts if f.ours and not f.this)
    in_scope = dict(applied.in_scope)
    failures = p.report.failures
    for f, app in facts:
        if (key := f.key) not in in_scope and key not in pruned and key not in failures and key not in foreign \
                and key not in planned.waiting and not app["metadata"].get("deletionTimestamp"):
            in_scope[key] = app
    desired = {key_of(d): d for d in planned.desired}
    holds = {k: h for k, a in in_scope.items() if k not in planned.hits and (h := suspend.application(desired.get(k), a))}
    return replace(applied, in_scope=in_scope, foreign=foreign, holds=holds)


def report_unchanged(p: Pass, hits: dict[str, steady_.Entry]) -> None:
    """Report the Applications unchanged since the previous pass (``hits``) as unchanged: after
    what changed is applied, since at 10,000 Applications that is 10,000 lines (issue 33)."""
    for key in hits:
        p.report.add(key, f"{KIND}/{key}", UNCHANGED)


def converge(kube: Cluster, report: Report | writes.Scratch, key: str, step: plan.Step,
             before: Callable[[], None] | None = None) -> apply.Applied | None:
    """Carry out a create/update/unchanged ``step`` (``before()`` first, if given; see
    ``apply.converge``), with what the API server warned of its writes (``Applied.warnings``).
    On an API error record the failure for ``key`` in ``report``
    (``failures``, and ``reasons`` when retrying cannot fix it: ``conditions.failure_reason``)
    and return None; re-raise when the API server is unreachable (status 0: the pass stops,
    nothing is pruned). ``report``: the ``Report`` or a pool task's ``writes.Scratch``."""
    try:
        if step.action == plan.UNCHANGED:
            return apply.converge(kube, step)  # nothing is written: nothing to be warned of
        if before:
            before()
        kube.take_warnings()  # what an earlier write of this thread was told is not this step's
        done = apply.converge(kube, step)
        warned = tuple(kube.take_warnings())
        return replace(done, warnings=warned) if warned else done
    except ApiError as err:
        if err.status == 0:
            raise
        report.failures[key] = str(err)
        reason = conditions.failure_reason(err.status, isinstance(err, apply.ImmutableConflict))
        if reason != Reason.SYNC_FAILED:
            report.reasons[key] = reason
        report.add(key, step.subject, FAILED, str(err))
        return None


def health_only(done: apply.Applied | None) -> apply.Applied | None:
    """``done`` with its applied child cut to what health and status read (``health.view``):
    a pass holds every child it applied until the statuses are written."""
    return done if done is None or done.action == UNCHANGED else replace(done, live=health.view(done.live))


def record(p: Pass, key: str, subject: str, done: apply.Applied, app: Obj | None) -> bool:
    """Report what ``done`` did to ``subject`` for the Application ``key`` (``app``: its live
    object, for the Event), with what admission warned of it (an ``AdmissionWarning`` Event:
    ``events.Batch.warned``); True when it wrote (created, configured, recreated, adopted)."""
    p.report.add(key, subject, done.action, done.message, done.warnings)
    if done.warnings or done.action != UNCHANGED:  # a write: none said, what was told may be told again
        p.kube.warned(app, key, subject, done.warnings)
    if done.action == UNCHANGED:  # the status asks only whether anything changed
        return False
    p.kube.change(app, key, done.action, subject, done.message)
    return done.action in WRITTEN
