"""Stage 5 of a pass: the children of the Applications in scope, in two waves (``waves``): first
those of what changed, then the rest. Each wave renders, plans, name-checks and applies
``CHILD_BATCH`` Applications' children at a time (``apply_wave``).

Why batches: at 10,000 Applications all rendered children at once would be 20,000 objects; a
batch's are let go once applied. Why waves: a push's changed Application is applied and its
status written before the sweep of the 9,999 that only record the new commit (issue 33).
"""

from __future__ import annotations

from dataclasses import replace

from agent.api.objects import Obj
from agent.api.schema import KIND
from agent.engine import apply, conditions, plan, suspend, sync_now, takeover, taskgate, tenancy, writes
from agent.engine.appapply import converge, health_only, record
from agent.engine.passvalues import AppPlan, AppsApplied, ChildIndex, ChildWave, LiveState, Pass
from agent.engine.report import FAILED, HELD, PRUNED, SUSPENDED, UNCHANGED
from agent.kinds import configmap, deployment, health, job, podspec, registry
from agent.kube.cluster import ApiError
from agent.manifests import nodes, specrules

CHILD_BATCH = 500
"""Applications whose children a pass renders, plans and applies at once: enough to keep the
write pool busy (``writes.ordered``), few enough that a pass over 10,000 Applications never
holds all 20,000 rendered children (issue 11)."""


def waves(p: Pass, planned: AppPlan, applied: AppsApplied) -> tuple[list[str], list[str]]:
    """The Applications in scope, split: first what changed (its own apply wrote, or, in ``run``,
    anything about it moved since the previous pass: not a hit), then the rest, whose passes
    only record the new commit (the sweep). Each sorted; see issue 33."""
    first: list[str] = []
    rest: list[str] = []
    for key in sorted(applied.in_scope):
        changed = key in applied.written or (p.steady is not None and key not in planned.hits)
        (first if changed else rest).append(key)
    return first, rest


def index(live: LiveState) -> ChildIndex:
    """The live children by identity, and each owned one as its Application's child in its slot
    (``registry.slot``: its kind, or ``Kind/name`` for a kind with several per Application)."""
    live_of: dict[str, dict[str, Obj]] = {}
    for key, children in live.children_of.items():
        kinds = live_of.setdefault(key, {})
        for child, _, _ in children:
            kinds[registry.slot(child)] = child
    return ChildIndex({ident: c for c, (ident, _, _) in zip(live.children, live.child_facts)}, live_of, live.related)


class _Wave:
    """What one wave gathers as it goes; ``result`` freezes it."""

    def __init__(self, before: ChildWave):
        self.paired = set(before.paired)
        self.live_of: dict[str, dict[str, Obj]] = {}
        self.written: set[str] = set()
        self.held: dict[str, dict[str, str]] = {}
        self.taken: dict[str, set[str]] = {}
        self.opted: set[str] = set()
        self.denied: dict[str, str] = {}  # opted in where the operator does not consent: why
        self.gates: dict[str, taskgate.Gate] = {}

    def result(self) -> ChildWave:
        return ChildWave(frozenset(self.paired), self.live_of, frozenset(self.written), self.held, self.taken,
                         frozenset(self.opted), gates=self.gates)


def apply_wave(p: Pass, keys: list[str], planned: AppPlan, applied: AppsApplied, idx: ChildIndex,
               listed: dict[tuple[str, str, str], list[Obj]], before: ChildWave | None = None) -> ChildWave:
    """Render, plan, name-check and apply the children of the Applications ``keys``,
    ``CHILD_BATCH`` at a time. An Application unchanged since the previous pass (a hit) renders
    nothing: its children are unchanged again. ``before``: the wave before this one (the live
    children it paired are not paired again); ``listed``: ``apply.claim``'s lists, kept across
    batches and waves (each kind and namespace is listed once)."""
    wave = _Wave(before or ChildWave())
    scoped = []
    for key in keys:
        entry = planned.hits.get(key)
        if entry is None:
            scoped.append((key, applied.in_scope[key]))
            continue
        wave.paired.update(ident for ident, _ in entry.children)
        for subject in entry.lines:
            p.report.add(key, subject, UNCHANGED)
    for start in range(0, len(scoped), CHILD_BATCH):
        steps = _plan_children(p, scoped[start:start + CHILD_BATCH], idx, wave, applied.holds)
        claimed = apply.claim(p.kube, p.report, steps, p.report.failures, p.report.reasons, wave.taken, listed,
                              wave.opted, wave.denied)
        claimed = takeover.keep_selectors(claimed, lambda key: _render(p, applied.in_scope[key]))
        _apply_batch(p, _unheld(p, claimed, applied.holds, wave), idx, wave, applied.in_scope)
    return wave.result()


def _plan_children(p: Pass, batch: list[tuple[str, Obj]], idx: ChildIndex, wave: _Wave,
                   holds: dict[str, suspend.Hold]) -> list[plan.Step]:
    """The child steps of ``batch`` (key, live Application), each rendered from its spec with the
    pass's ``--default-security-profile`` (``podspec.with_default_profile``); an Application whose
    spec does not match the schema fails and renders none; one with tasks goes through its gate (``_gated``;
    ``holds``: the suspended Applications, whose tasks are not decided: nothing of them is applied). An unchanged
    child's step keeps only its live object."""
    steps: list[plan.Step] = []
    report = p.report
    for key, app in batch:
        spec = _spec(p, app)
        found = specrules.live_problems(spec, app["metadata"]["name"])
        if found:
            where, why = found[0]
            report.failures[key] = (f"its spec does not match the Application schema (spec{'.' if where else ''}"
                                    f"{nodes.dotted(where)}: {why}); children not rendered")
            report.reasons[key] = conditions.INVALID_SPEC
            report.add(key, f"{KIND}/{key}", FAILED, report.failures[key])
            continue
        meta, opt_in = app["metadata"], plan.opted_in(app)
        denied = tenancy.adoption_denied(meta["namespace"], p.opts.adopt_namespaces) if opt_in else None
        if denied:
            opt_in, wave.denied[key] = False, denied
        if opt_in:
            wave.opted.add(key)
        mine = []
        for child in registry.children(meta["name"], meta["namespace"], meta["uid"], spec):
            ident = plan.identity(child)
            live = idx.by_id.get(ident) if ident not in wave.paired else None
            if live is not None:
                wave.paired.add(ident)
            mine.append(plan.decide(child, live, opt_in, denied or ""))
        if job.wanted(spec) and key not in holds:  # a suspended one's children are all held after this (_unheld)
            mine = _gated(p, key, app, spec, mine, idx, wave)
        steps += [replace(step, desired=None) if step.action == plan.UNCHANGED else step for step in mine]
    return steps


def _spec(p: Pass, app: Obj) -> Obj:
    """The live Application ``app``'s spec as its children are rendered: with the pass's
    ``--default-security-profile`` (``podspec.with_default_profile``)."""
    return podspec.with_default_profile(app.get("spec") or {}, p.opts.default_security_profile)


def _render(p: Pass, app: Obj) -> list[Obj]:
    """The desired children of the live Application ``app`` (``registry.children``)."""
    meta = app["metadata"]
    return registry.children(meta["name"], meta["namespace"], meta["uid"], _spec(p, app))


def _gated(p: Pass, key: str, app: Obj, spec: Obj, steps: list[plan.Step], idx: ChildIndex,
           wave: _Wave) -> list[plan.Step]:
    """``steps`` of the Application ``key`` (``app``: live; ``spec``: its spec as rendered) as its
    task gate lets them (``taskgate``): a task's Job only when it is created now or kept; while a BeforeRollout task
    has not succeeded, nothing but the ConfigMap and the Jobs (the rest is reported held, and
    none of its live children is pruned). A failed Job run again is deleted first."""
    name = app["metadata"]["name"]
    live_of = idx.live_of.get(key, {})
    jobs = [obj for slot, obj in live_of.items() if slot.startswith(f"{job.KIND.kind}/")]
    jobs += [s.live for s in steps if s.identity[1] == job.KIND.kind and s.action != plan.Op.CONFLICT
             and s.live is not None and all(s.live is not j for j in jobs)]  # one it adopts counts as its run
    rollout = next((s for s in steps if s.identity[1] == deployment.KIND.kind), None)
    done = rollout is not None and rollout.action == plan.UNCHANGED and \
        deployment.KIND.health(rollout.live).status == health.Status.HEALTHY
    commit = p.report.commit if key in p.git.paths else None
    gate = taskgate.decide(name, spec, jobs, list((app.get("status") or {}).get("tasks") or []), commit,
                           asked=sync_now.pending(app), rollout_done=done,
                           installed=rollout is not None and rollout.live is not None)
    wave.gates[key] = gate
    wave.paired.update(plan.identity(obj) for obj in jobs if obj["metadata"]["name"] in gate.keep)
    for failed in gate.rerun:
        if not _deleted(p, key, failed):
            return []
    out = []
    for step in steps:
        kind, child = step.identity[1], step.identity[3]
        if kind == job.KIND.kind:
            if child in gate.create:
                out.append(plan.decide(step.target, None))
            elif step.live is not None and child in gate.keep:
                out.append(step)
        elif gate.holding and kind != configmap.KIND.kind:
            waiting = next(r for r in gate.runs if r.when == job.BEFORE_ROLLOUT and r.state != job.SUCCEEDED)
            p.report.add(key, step.subject, HELD, f"waits for task {waiting.task} (Job {waiting.job}) to succeed")
        else:
            out.append(step)
    if gate.holding:  # nothing of it is pruned while it waits: the old version keeps serving
        wave.paired.update(plan.identity(obj) for slot, obj in live_of.items()
                           if not slot.startswith(f"{job.KIND.kind}/"))
    return out


def _deleted(p: Pass, key: str, failed: Obj) -> bool:
    """Delete the failed Job ``failed`` of the Application ``key`` so that its task runs again
    (its pods go with it: ``Background``); False, with the Application failed, when the API
    server refused."""
    try:
        p.kube.delete(failed, propagation="Background")
    except ApiError as err:
        p.report.failures[key] = f"could not delete the failed Job {failed['metadata']['name']} to run it again: {err}"
        p.report.reasons[key] = conditions.failure_reason(err.status, False)
        p.report.add(key, f"{job.KIND.kind}/{key.partition('/')[0]}/{failed['metadata']['name']}", FAILED,
                     p.report.failures[key])
        return False
    p.report.add(key, f"{job.KIND.kind}/{key.partition('/')[0]}/{failed['metadata']['name']}", PRUNED,
                 "its task failed and is run again")
    return True


def _unheld(p: Pass, steps: list[plan.Step], holds: dict[str, suspend.Hold], wave: _Wave) -> list[plan.Step]:
    """``steps`` less the children a suspended Application or their own annotation holds
    (reported as suspended)."""
    work = []
    for step in steps:
        key = plan.owner_key(step.target)
        why = suspend.child(holds.get(key), step.subject, step.live)
        if not why:
            work.append(step)
            continue
        p.report.add(key, step.subject, SUSPENDED, why)
        if key not in holds:
            wave.held.setdefault(key, {})[registry.slot_of(step.identity[1], step.identity[3])] = step.subject
    return work


def _apply_batch(p: Pass, work: list[plan.Step], idx: ChildIndex, wave: _Wave, in_scope: dict[str, Obj]) -> None:
    """Apply one batch's child steps in the pool; each applied child is kept as health reads it."""
    kube, report = p.kube, p.report
    for step, done in writes.ordered(kube, work, lambda step, scratch: health_only(converge(
            kube, scratch, plan.owner_key(step.target), step)), report, report.failures,
            report.reasons, inline=lambda step: step.action == plan.UNCHANGED):
        key = plan.owner_key(step.target)
        if done is None:
            continue
        if record(p, key, step.subject, done, in_scope.get(key)):
            wave.written.add(key)
        kinds = wave.live_of.get(key)
        if kinds is None:
            kinds = wave.live_of[key] = dict(idx.live_of.get(key, {}))
        kinds[registry.slot_of(step.identity[1], step.identity[3])] = done.live
