"""One reconcile pass: source -> manifests -> render -> plan -> apply -> prune -> status -> report.

Level-based: every pass recomputes the whole desired state from the newest commit and the whole
live state from the cluster, so missed commits, crashed passes and hand edits need no special
handling. Fail closed: a pass that could not see the whole truth (a file that did not parse, a
refused file) prunes nothing, and a fetch or list failure stops the pass before any change.
"""

from __future__ import annotations

import datetime
import logging
import sys
import time
from dataclasses import dataclass, replace

from agent.engine import apply, backoff, conditions, events, guards, plan, scope, statuswrite, suspend, writes
from agent.kinds import health, registry, render
from agent.manifests import loader as manifests, parsecache
from agent.source import mirror as source
from agent.source import snapshot as snapshots
from agent.engine import status as status_
from agent.kube.client import ApiError, Kube
from agent.engine.report import CONFIGURED, CREATED, FAILED, KEPT, PRUNED, RECREATED, SUSPENDED, UNCHANGED, Report
from agent.api.schema import GROUP, KIND, PLURAL, SPEC_VALIDATOR, VERSION
from agent.api import labels

log = logging.getLogger("agent.sync")
CRD_NAME = statuswrite.CRD_NAME
CHILD_BATCH = 500
"""Applications whose children a pass renders, plans and applies at once: enough to keep the
write pool busy (``writes.ordered``), few enough that a pass over 10,000 Applications never
holds all 20,000 rendered children (issue 11)."""


@dataclass(frozen=True)
class Options:
    """What to sync. ``repo``: URL or local path (its ``source.repository_identity`` is recorded on
    every Application applied); ``ref``: branch, tag or SHA (None: the remote's HEAD); ``path``: directory
    inside the repository; ``namespace``: for Applications that name none; ``prune``: delete what the agent
    owns and Git no longer has; ``allow_empty``: permit a commit with no Applications to prune them all;
    ``cache_dir``: where the Git mirror lives; ``fetch_timeout``: seconds; ``source_id``: the value of the
    ``heumsi.github.io/source`` label that marks this source's Applications (see ``source.source_id``);
    ``submodules``: follow submodules under ``path`` (False: a submodule there fails the pass);
    ``max_prune_share``: a pass that would prune more than this share of the source's Applications, and
    more than 10, prunes nothing and fails (1.0: no limit; see ``guards``)."""

    repo: str
    cache_dir: str
    ref: str | None = None
    path: str = "."
    namespace: str = "default"
    prune: bool = True
    allow_empty: bool = False
    fetch_timeout: float = 60.0
    credentials: source.Credentials | None = None
    source_id: str = "default"
    submodules: bool = True
    allowed_namespaces: tuple[str, ...] | None = None  # names or globs; None: every namespace
    max_prune_share: float = guards.DEFAULT_MAX_PRUNE_SHARE


def _key(obj: dict) -> str:
    # one string per Application however often a pass names it (report, status, outcomes)
    return sys.intern(f"{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}")


def run(kube: Kube, opts: Options, *, known_commit: str | None = None, offline: bool = False,
        retry: backoff.Policy = backoff.ONE_SHOT) -> Report:
    """Run one pass against ``kube``; never raises for source, manifest or API faults, which
    are reported in ``Report.errors`` (the command line turns them into exit code 2).

    ``known_commit``: the commit the previous pass worked from; the fetch is skipped when the
    remote ref still points at it. ``offline``: reuse ``known_commit`` without asking the
    remote at all (passes triggered by cluster changes between scheduled passes).
    ``retry``: the backoff policy (``backoff.Policy``); with ``skip`` (``run``), Applications
    whose retry time has not come are skipped and reported, everything else is attempted.
    """
    report = Report()
    started = time.monotonic()
    try:
        if offline and known_commit:
            report.commit = known_commit
        else:
            fetched = source.fetch(opts.repo, opts.ref, opts.cache_dir, opts.fetch_timeout,
                                   credentials=opts.credentials, known_commit=known_commit)
            report.commit = fetched.commit
            if fetched.fetched:
                report.fetch_seconds = time.monotonic() - started
        cache = parsecache.beside(source.cache_path(opts.cache_dir, opts.repo, opts.credentials), opts.source_id)
        try:
            snapshot = snapshots.read(opts.repo, report.commit, opts.cache_dir, opts.path,
                                   submodules=opts.submodules, credentials=opts.credentials,
                                   timeout=opts.fetch_timeout, unneeded=lambda path, blob: manifests.parsed_before(
                                       cache, path, blob, opts.namespace))
        except source.PathMissing as err:
            if not opts.allow_empty:
                raise source.SourceError(f"{err} (with --allow-empty a missing path counts as no "
                                         "Applications)") from None
            report.notes.append(f"{err}; --allow-empty: treated as no Applications")
            snapshot = snapshots.Snapshot(commit=report.commit)
    except source.SourceError as err:
        report.fetch_failed = True
        report.errors.append(f"{err}; nothing was changed or pruned")
        return report
    loaded = manifests.load(snapshot.files, opts.namespace, blobs=snapshot.blobs, cache=cache)
    cache.save()
    wanted, outside = scope.split(loaded.manifests, opts.allowed_namespaces)
    problems = [manifests.ManifestError(p, None, None, m) for p, m in snapshot.problems] + loaded.errors + outside
    report.errors += [str(p) for p in problems]
    report.problems = problems
    rejected = [(r.application or (f"{r.path}:{r.line}" if r.line else r.path), "; ".join(r.reasons), r)
                for r in loaded.rejected]
    elsewhere = [(m.message.split(":", 1)[0].removeprefix("Application "), str(m)) for m in outside]
    report.invalid += [(p, m) for p, m in snapshot.problems] + [(what, why) for what, why, _ in rejected] + elsewhere
    # an invalid Application counts as a failed one (by file:line when its name is what is invalid)
    report.refused.update([(what, why) for what, why, r in rejected if r.application or r.is_application] + elsewhere)
    del snapshot, loaded  # the files' bytes: not needed once parsed (a pass holds what it still reads)
    if opts.allowed_namespaces is not None:
        kube = scope.ScopedKube(kube, opts.allowed_namespaces)
    batch = events.Batch(kube)  # one Event per Application per pass (events.py)
    try:
        with kube.sharing():  # the pass's live objects share equal parts (share.py)
            _reconcile(batch, opts, report, wanted, problems, retry, outside=len(outside))
    except ApiError as err:
        report.errors.append(f"{err}; the pass stopped, nothing further was pruned or recorded")
        return report
    batch.flush(lambda items: list(writes.ordered(kube, items, lambda e, _: kube.event(*e), report)))
    return report


def _reconcile(kube: Kube, opts: Options, report: Report, wanted: list, problems: list,
               retry: backoff.Policy = backoff.ONE_SHOT, outside: int = 0) -> None:
    served = kube.served(GROUP, VERSION)
    if PLURAL not in served:
        report.errors.append(f"the CustomResourceDefinition {CRD_NAME} is not installed in the cluster "
                             f"(install it with: kubectl apply -f crd.yaml); nothing was changed")
        return
    if f"{PLURAL}/status" not in served:
        report.errors.append(f"the CustomResourceDefinition {CRD_NAME} in the cluster has no status "
                             "subresource, so no Application status could be stored; apply this "
                             "project's crd.yaml (kubectl apply -f crd.yaml); nothing was changed")
        return
    live_apps = kube.list(GROUP, KIND)
    selector = f"{labels.MANAGED_BY}={labels.AGENT_NAME}"
    live_children = [child for k in registry.CHILD_KINDS for child in kube.list(k.group, k.kind, selector)]
    namespaces = {ns["metadata"]["name"] for ns in kube.list("", "Namespace")}

    prune = opts.prune and not problems
    if problems and opts.prune:
        report.notes.append(f"pruning skipped: {_why_no_prune(len(problems), outside)}")
    repository = source.repository_identity(opts.repo)  # one for every URL form of the repository
    desired_apps = [render.desired_application(m.body, report.commit, m.path, opts.source_id, repository) for m in wanted]
    report.notes += [f"{m.path}:{m.line}: {field}: set by the agent to {ours!r}; the value in Git ({git!r}) is not "
                     "applied" for m, desired in zip(wanted, desired_apps)
                     for field, git, ours in render.overridden(m.body, desired)]
    owned_live = [a for a in live_apps if plan.owned(a, opts.source_id)]
    if prune and not desired_apps and owned_live and not opts.allow_empty:
        report.errors.append(
            f"commit {report.commit} has no Applications under {opts.path!r}, so pruning would delete "
            f"{_all_owned(len(owned_live))} the agent owns; nothing was changed. If that is intended, "
            "run again with --allow-empty")
        return

    # Applications from Git: ensure namespaces, apply.
    in_scope: dict[str, dict] = {}
    outcomes: dict[str, list[str]] = {}  # app key -> actions taken, other than unchanged
    failures: dict[str, str] = {}
    reasons: dict[str, str] = {}  # app key -> the failure's condition reason, when not SyncFailed
    git_paths = {sys.intern(f"{m.namespace}/{m.name}"): m.path for m in wanted}  # the keys ``_key`` returns
    waiting = _waiting(report, live_apps, git_paths, opts.source_id, retry)  # in backoff: skipped
    app_steps = plan.plan(desired_apps, live_apps, prune=prune, source=opts.source_id)
    where = {f"{m.namespace}/{m.name}": f"{m.path}:{m.line}" for m in wanted}  # file:line in Git
    app_steps, refused = plan.refuse(app_steps, opts.source_id, repository, where)
    del where  # read only for refused Applications
    for step, why in refused:  # another repository's Application: failed here, nothing written to it
        report.add(_key(step.desired), step.subject, FAILED, why)
    # Guards (see guards.py): annotated Applications are kept; a mass prune prunes nothing.
    app_steps = [s for s in app_steps if s.action != plan.PRUNE or not (guards.prune_disabled(s.live)
                                                                        or suspend.never_pruned(s.live))]
    prunes = sum(s.action == plan.PRUNE for s in app_steps)
    if desired_apps and guards.too_many(prunes, len(owned_live), opts.max_prune_share):
        report.errors.append(guards.refusal(prunes, len(owned_live), opts.max_prune_share, report.commit))
        prune = False
        app_steps = [s for s in app_steps if s.action != plan.PRUNE]
    made = writes.Namespaces(kube, namespaces, render.namespace)
    failed_apps: dict[str, dict] = {}  # live Applications whose own apply failed: status only
    app_work = []
    for step in (s for s in app_steps if s.action != plan.PRUNE and _key(s.desired) not in waiting):
        if suspend.set_by_hand(step.live):  # heumsi.github.io/reconcile: disabled: the live one stays as it is
            report.add(_key(step.desired), step.subject, SUSPENDED, suspend.Hold(suspend.ON_APPLICATION, True).message)
            in_scope[_key(step.desired)] = step.live
        else:
            app_work.append(step)
    taking = {_key(step.desired): other for step, other in plan.taken_over(app_work, opts.source_id)}
    for step, done in writes.ordered(kube, app_work, lambda step, scratch: _converge(
            kube, scratch, scratch.failures, _key(step.desired), step, reasons=scratch.reasons,
            before=lambda: made.ensure(step.desired["metadata"]["namespace"])), report, failures, reasons,
            inline=lambda step: step.action == plan.UNCHANGED):
        key = _key(step.desired)
        if done is None:
            if step.live is not None:
                failed_apps[key] = step.live
            continue
        _record(report, kube, key, step.subject, done, done.live, outcomes)
        in_scope[key] = done.live
    report.notes += _taken_over([(key, taking[key]) for key in sorted(taking) if key in in_scope])

    # Applications kept from the cluster: hand-applied ones, and owned ones Git did not prune this pass
    # (their file failed to validate, or pruning is off). Another source's are its agent's business.
    pruned_apps = {_key(s.live) for s in app_steps if s.action == plan.PRUNE}
    foreign = {_key(a) for a in live_apps if plan.owned(a) and not plan.owned(a, opts.source_id)}
    for app in live_apps:
        key = _key(app)
        if key not in in_scope and key not in pruned_apps and key not in failures and key not in foreign \
                and key not in waiting and not app["metadata"].get("deletionTimestamp"):
            in_scope[key] = app

    # Suspended Applications (spec.suspend, the reconcile annotation; see suspend.py).
    desired_by_key = {_key(d): d for d in desired_apps}
    holds = {k: h for k, a in in_scope.items() if (h := suspend.application(desired_by_key.get(k), a))}
    # The rendered Applications are not read after this: let them go before the children are
    # planned (only the prunes of Applications are left to do).
    del desired_by_key, desired_apps, app_work
    app_steps = [s for s in app_steps if s.action == plan.PRUNE]
    held_children: dict[str, dict[str, str]] = {}  # app key -> kind -> subject, children held by their annotation

    # Children, CHILD_BATCH Applications at a time: render, plan against live, check names, apply;
    # a batch's rendered children are let go once applied (at 10,000 Applications they would be
    # 20,000 objects at once). An unchanged child's step keeps only its live object. ``live_by_id``
    # loses each child a desired one pairs with: once every batch is done, what is left is not desired.
    live_by_id = {plan.identity(c): c for c in live_children}
    taken: dict[str, set[str]] = {}  # app key -> kinds of its children whose name another object holds
    listed: dict = {}  # what ``apply.claim`` listed, by kind and namespace: once per pass
    live_of: dict[str, dict[str, dict]] = {}  # app key -> kind -> child: health reads what the pass saw, then applied
    for child in live_children:
        if plan.owned(child):
            live_of.setdefault(plan.owner_key(child), {})[child["kind"]] = child
    scoped = sorted(in_scope.items())
    for start in range(0, len(scoped), CHILD_BATCH):
        child_steps: list[plan.Step] = []
        for key, app in scoped[start:start + CHILD_BATCH]:
            spec = app.get("spec") or {}
            if not SPEC_VALIDATOR.is_valid(spec):
                failures[key] = "its spec does not match the Application schema; children not rendered"
                reasons[key] = conditions.INVALID_SPEC
                report.add(key, f"{KIND}/{key}", FAILED, failures[key])
                continue
            for child in registry.children(app["metadata"]["name"], app["metadata"]["namespace"], app["metadata"]["uid"],
                                         spec):
                step = plan.decide(child, live_by_id.pop(plan.identity(child), None))
                child_steps.append(replace(step, desired=None) if step.action == plan.UNCHANGED else step)
        child_work = []
        for step in apply.claim(kube, report, child_steps, failures, reasons, taken, listed):
            key = plan.owner_key(step.desired or step.live)
            why = suspend.child(holds.get(key), step.subject, step.live)
            if not why:
                child_work.append(step)
                continue
            report.add(key, step.subject, SUSPENDED, why)
            if key not in holds:
                held_children.setdefault(key, {})[step.identity[1]] = step.subject
        del child_steps
        for step, done in writes.ordered(kube, child_work, lambda step, scratch: _health_only(_converge(
                kube, scratch, scratch.failures, plan.owner_key(step.desired or step.live), step,
                reasons=scratch.reasons)), report, failures, reasons, inline=lambda step: step.action == plan.UNCHANGED):
            key = plan.owner_key(step.desired or step.live)
            if done is None:
                continue
            _record(report, kube, key, step.subject, done, in_scope.get(key), outcomes)
            live_of.setdefault(key, {})[step.identity[1]] = done.live
        del child_work
    del scoped, listed
    child_steps = plan.prunes(live_by_id, set()) if prune else []
    for child in live_children:
        if plan.identity(child) in live_by_id and not plan.owned(child):  # not desired
            report.notes.append(f"{plan.subject(plan.identity(child))} carries the agent's labels but is "
                                "not a child it made: not ours, left alone")

    # Prune: children first, then their Applications (not left to the garbage collector).
    # Two waves (writes.ordered): every child's prune has finished before an Application's starts.
    keeps_children: set[str] = set()  # Applications with a child kept by its annotation
    for wave in ([s for s in child_steps if s.action == plan.PRUNE], [s for s in app_steps if s.action == plan.PRUNE]):
        deletes = []
        for step in wave:
            owner = plan.owner_key(step.live)
            if owner in failures or owner in foreign or owner in waiting:  # not synced this pass, another source's, or backing off
                continue
            if guards.prune_disabled(step.live) or suspend.set_by_hand(step.live):
                by = labels.PRUNE_ANNOTATION if guards.prune_disabled(step.live) else labels.RECONCILE_ANNOTATION
                report.add(owner, step.subject, KEPT, f"not in Git; {by}: {step.live['metadata']['annotations'][by]}")
                keeps_children.add(owner)
                continue
            deletes.append((step, owner, guards.propagation(step.identity[1], owner in keeps_children)))
        for (step, owner, _), pruned in writes.ordered(kube, deletes, lambda d, scratch: _prune(kube, scratch, *d), report):
            if pruned:
                kube.change(step.live if step.identity[1] == KIND else in_scope.get(owner), owner, PRUNED, step.subject)

    # Status: once per Application in scope, only when it differs.
    broken_files = {p.path: str(p) for p in problems}
    statuses = []  # written in parallel once every outcome is known
    synced = {True: f"children applied from commit {(report.commit or '')[:12]}",  # one string each for the pass
              False: "children applied from the live Application"}
    for key, app in sorted({**failed_apps, **in_scope}.items()):
        annotations = app["metadata"].get("annotations") or {}
        from_git = key in git_paths or plan.owned(app, opts.source_id)
        path = git_paths.get(key) or annotations.get(labels.SOURCE_PATH)
        if key in failures:
            outcome = status_.Outcome(False, False, report.commit if from_git else None, reasons.get(key, "SyncFailed"),
                                      failures[key], path if from_git else None,
                                      health=registry.health(live_of.get(key, {}), frozenset(taken[key])) if key in taken else None)
        elif key not in git_paths and plan.owned(app, opts.source_id) and path in broken_files:
            outcome = status_.Outcome(False, False, report.commit, "InvalidManifest", broken_files[path], path)
            report.refused.setdefault(key, broken_files[path])
        elif key not in git_paths and plan.owned(app, opts.source_id):
            why = "pruning is off (--no-prune)" if not opts.prune else "pruning was blocked this pass"
            if guards.prune_disabled(app):
                why = f"it has the annotation {labels.PRUNE_ANNOTATION}: {guards.PRUNE_DISABLED}"
            if key in holds:
                why = suspend.kept_because(holds[key])
            report.add(key, f"{KIND}/{key}", KEPT, f"not in Git; {why}")
            outcome = suspend.outcome(holds.get(key), {}, {}, commit=report.commit, path=path, gone=True) \
                or status_.Outcome(False, False, report.commit, "PruneSkipped",
                                   f"no longer in Git at commit {report.commit}; kept because {why}", path)
        elif key in holds or key in held_children:
            outcome = suspend.outcome(holds.get(key), held_children.get(key, {}), live_of.get(key, {}),
                                      commit=report.commit if key in git_paths else None,
                                      path=git_paths.get(key))
        else:
            changed = bool(set(outcomes.get(key, [])) & {CREATED, CONFIGURED, RECREATED})
            outcome = status_.Outcome(True, changed, report.commit if key in git_paths else None,
                                      "Synced", synced[key in git_paths], path if key in git_paths else None)
        statuses.append((key, app, outcome, live_of.get(key, {}), key in failures))
    for _, next_retry in writes.ordered(kube, statuses, lambda st, scratch: statuswrite.write(
            kube, scratch, *st[:4], failed=st[4], retry=retry), report,
            inline=lambda st: not statuswrite.moves(*st[1:], retry=retry)):
        report.retry_at = backoff.earliest(report.retry_at, next_retry)


def _converge(kube: Kube, report: Report, failures: dict[str, str], key: str, step: plan.Step,
              before=None, reasons: dict[str, str] | None = None) -> apply.Applied | None:
    """Carry out a create/update/unchanged step (``before()`` first, if given; see
    ``apply.converge``). On an API error record the failure for ``key`` and return None;
    re-raise when the API server is unreachable (the pass stops, nothing is pruned). A refusal
    retrying cannot fix also records its reason in ``reasons`` (``conditions.failure_reason``)."""
    try:
        if before and step.action != plan.UNCHANGED:
            before()
        return apply.converge(kube, step)
    except ApiError as err:
        if err.status == 0:
            raise
        failures[key] = str(err)
        reason = conditions.failure_reason(err.status, isinstance(err, apply.ImmutableConflict))
        if reasons is not None and reason != "SyncFailed":
            reasons[key] = reason
        report.add(key, step.subject, FAILED, str(err))
        return None


def _health_only(done: apply.Applied | None) -> apply.Applied | None:
    """``done`` with its applied child cut to what health and status read (``health.view``):
    a pass holds every child it applied until the statuses are written."""
    return done if done is None or done.action == UNCHANGED else replace(done, live=health.view(done.live))


def _record(report: Report, kube: events.Batch, key: str, subject: str, done: apply.Applied, app: dict | None,
            outcomes: dict[str, list[str]]) -> None:
    report.add(key, subject, done.action, done.message)
    if done.action != UNCHANGED:  # the status asks only whether anything changed
        outcomes.setdefault(key, []).append(done.action)
        kube.change(app, key, done.action, subject, done.message)


def _prune(kube: Kube, report, step: plan.Step, owner: str, propagation: str) -> bool:
    """Delete one object ``step`` prunes; True when it was deleted (or already gone). A refusal
    is recorded as failed for ``owner``; an unreachable API server (status 0) re-raises."""
    try:
        kube.delete(step.live, propagation)
    except ApiError as err:
        if err.status == 0:
            raise
        report.add(owner, step.subject, FAILED, f"prune failed: {err}")
        return False
    report.add(owner, step.subject, PRUNED)
    return True


def _waiting(report: Report, live_apps: list[dict], git_paths: dict, source_id: str,
             retry: backoff.Policy) -> dict[str, backoff.Waiting]:
    """Applications this pass skips because they are backing off (``backoff.waiting``; only
    with ``retry.skip``), each reported in a note; another source's are not this pass's."""
    if not retry.skip:
        return {}
    now = datetime.datetime.now(datetime.timezone.utc)
    out = {}
    for app in live_apps:
        key = _key(app)
        if plan.owned(app) and not plan.owned(app, source_id):
            continue
        from_git = key in git_paths or plan.owned(app, source_id)  # as the status write decides
        wait = backoff.waiting(app, report.commit if from_git else None, now)
        if wait is not None:
            out[key] = report.backing_off[key] = wait
            report.notes.append(f"{KIND}/{key}: {wait.message()}")
            report.retry_at = backoff.earliest(report.retry_at, wait.next_retry)
    return out


def _taken_over(taken: list[tuple[str, str]]) -> list[str]:
    """One note per other source id that Applications were taken over from, given as
    ``(namespace/name, other source id)`` pairs of Applications this pass applied, naming up to
    three of them: a changed ``--path`` takes every one over once, and two agents on
    overlapping paths take them from each other on every pass."""
    by_source: dict[str, list[str]] = {}
    for key, other in taken:
        by_source.setdefault(other, []).append(key)
    return [f"{len(keys)} Application{'s' if len(keys) != 1 else ''} taken over from source {other!r} "
            f"({', '.join(keys[:3])}{', ...' if len(keys) > 3 else ''}): it synced them under another --path or "
            "--source-id; if an agent of that source still runs, the two take them from each other on every pass "
            "(give each agent paths no other agent reads)" for other, keys in sorted(by_source.items())]


def _why_no_prune(problems: int, outside: int) -> str:
    """Why a pass with ``problems`` (files or Applications refused), ``outside`` of them
    Applications whose namespace ``--allowed-namespaces`` does not allow, prunes nothing: what it
    was refused stays unknown, so nothing it might still want is deleted (fail closed)."""
    reasons = []
    if problems > outside:
        reasons.append("not every file could be read and validated")
    if outside:
        reasons.append(f"{outside} Application{'s' if outside != 1 else ''} in Git target{'' if outside != 1 else 's'} "
                       "a namespace --allowed-namespaces does not allow (refused above; move "
                       f"{'them' if outside != 1 else 'it'} under a path no agent with this scope reads, or widen the flag)")
    return " and ".join(reasons)


def _all_owned(n: int) -> str:
    """``the 1 Application`` or ``all N Applications``: the count of the empty-commit guard."""
    return "the 1 Application" if n == 1 else f"all {n} Applications"
