"""Stage 3 of a pass: the Applications' plan (``plan_applications``): render each one from Git
that moved since ``run``'s previous pass, decide it against the live one, and apply the guards.

The guards (``guards.py``): another source's Applications are refused (``sources.refuse``);
annotated ones and ones another source's Git also has (``sources.wanted_elsewhere``) are kept; a
commit with none, or a mass prune, prunes nothing; a refused file holds back the prunes it could
hide (``hidden``: every prune when the history cannot be read), an Application refused by scope or
tenancy every prune (fail closed). An Application in backoff is skipped (``backoff.waiting``, ``run`` only).
"""

from __future__ import annotations

import datetime
import logging

from agent.api.objects import Obj
from agent.api.schema import KIND
from agent.engine import backoff, forward, guards, hidden, livestate, plan, sources, steady as steady_, suspend
from agent.engine.passvalues import AppPlan, LiveState, Pass, key_of
from agent.engine.report import FAILED, SKIPPED, Report
from agent.kinds import render

log = logging.getLogger("agent.sync")


def plan_applications(p: Pass, live: LiveState) -> AppPlan | None:
    """The plan of the Applications from Git against ``live``, with the guards; None when the
    empty-commit guard stops the pass (its error in the report)."""
    opts, report, git = p.opts, p.report, p.git
    prune = opts.prune and not git.problems
    # refused files alone: ``hidden`` decides each prune; with no valid Application left, none (as the empty guard)
    files_only = opts.prune and bool(git.problems) and not (git.outside or git.forbidden) and bool(git.manifests)
    if git.problems and opts.prune and not files_only:
        report.notes.append(f"pruning skipped: {why_no_prune(len(git.problems), git.outside)}")
    owned_live = [app for facts, app in zip(live.app_facts, live.apps) if facts.this]
    behind = forward.stale(p, [facts.recorded for facts in live.app_facts if facts.this])  # would it take the cluster back?
    if behind is not None:
        report.notes.append(behind.message())
        return None
    live_by_key = live.by_key()
    hits = livestate.unchanged(p, live, live_by_key)
    if p.steady is not None:
        log.debug("%d of %d Applications unchanged since the previous pass (steady.py)", len(hits), len(git.manifests))
    desired, notes_of = _render(p, hits)
    if prune and not git.manifests and owned_live and not opts.allow_empty:
        report.errors.append(
            f"commit {report.commit} has no Applications under {opts.path!r}, so pruning would delete "
            f"{all_owned(len(owned_live))} the agent owns; nothing was changed. If that is intended, "
            "run again with --allow-empty")
        return None
    skipped = waiting(report, live, git.paths, p.retry)  # in backoff: skipped
    # an Application unchanged since the previous pass is neither decided nor pruned: left out
    undecided = [app for facts, app in zip(live.app_facts, live.apps) if facts.key not in hits] if hits else live.apps
    pruning = prune or files_only
    steps = plan.plan(desired, undecided, prune=pruning, source=opts.source_id)
    if pruning and opts.former_source_ids:  # a former id's Applications Git no longer has are this source's
        held = {plan.identity(app): app for app in undecided}
        for former in opts.former_source_ids:
            steps += plan.prunes(held, {s.identity for s in steps}, former)
    steps, refused = _refused(p, steps)
    if files_only:
        steps, files_only = _hidden(p, steps)
    steps, prune = _guarded(p, steps, prune or files_only, len(owned_live))
    return AppPlan(prune, live_by_key, hits, tuple(desired), notes_of, skipped, steps, frozenset(refused))


def _render(p: Pass, hits: dict[str, steady_.Entry]) -> tuple[list[Obj], dict[str, list[str]]]:
    """The rendered Applications from Git less ``hits`` (whose notes are reported again), and
    key -> the notes about each one's document (labels the agent sets over Git's)."""
    report, opts = p.report, p.opts
    identity = opts.identity()  # one for every URL form of the repository; a checkout's is its origin's
    desired: list[Obj] = []
    notes_of: dict[str, list[str]] = {}
    for key, m in zip(p.git.keys, p.git.manifests):
        if key in hits:
            report.notes += hits[key].notes
            continue
        app = render.desired_application(m.body, report.commit or "", m.path, opts.source_id, identity)
        desired.append(app)
        notes = [f"{m.path}:{m.line}: {field}: set by the agent to {ours!r}; the value in Git ({git!r}) is not "
                 "applied" for field, git, ours in render.overridden(m.body, app)]
        if notes:
            notes_of[key] = notes
            report.notes += notes
    return desired, notes_of


def _refused(p: Pass, steps: list[plan.Step]) -> tuple[list[plan.Step], set[str]]:
    """``steps`` less another source's Applications (``sources.refuse``), each failed here with the
    reason: nothing is written to it but the wanted-by mark; and their keys."""
    where = {key: f"{m.path}:{m.line}" for key, m in zip(p.git.keys, p.git.manifests)}  # file:line in Git
    steps, refused = sources.refuse(steps, p.opts.source_id, p.opts.identity(), where, p.opts.former_source_ids)
    keys = set()
    for step, why in refused:
        p.report.add(key_of(step.target), step.subject, FAILED, why)
        keys.add(key_of(step.target))
    return steps, keys


def _hidden(p: Pass, steps: list[plan.Step]) -> tuple[list[plan.Step], bool]:
    """``steps`` less the prunes a refused file could hide (``hidden``), each one's reason in
    ``report.held_back``; and whether the pass still prunes (False when the history cannot be
    read: then no prune is left, as before the rule)."""
    report = p.report
    gone = {key_of(s.target): s.target for s in steps if s.action == plan.PRUNE}
    if not gone:
        return steps, True
    verdict = hidden.judge(p, gone)
    if verdict.everything is not None:
        report.notes.append(f"pruning skipped: {why_no_prune(len(p.git.problems), 0)}, and {verdict.everything}")
        first = p.git.problems[0]
        report.held_back.update({key: f"{first} could hide it, and {verdict.everything}" for key in gone})
        return [s for s in steps if s.action != plan.PRUNE], False
    report.held_back.update(verdict.blocked)
    if verdict.blocked:
        count = len(verdict.blocked)
        report.notes.append(f"pruning held back for {count} Application{'s' if count != 1 else ''} a refused file "
                            f"could hide: {', '.join(sorted(verdict.blocked)[:10])}"
                            + (f" and {count - 10} more" if count > 10 else ""))
    return [s for s in steps if s.action != plan.PRUNE or key_of(s.target) not in verdict.blocked], True


def _guarded(p: Pass, steps: list[plan.Step], prune: bool, owned: int) -> tuple[list[plan.Step], bool]:
    """``steps`` less the prunes the guards stop (``guards.py``): annotated Applications, ones
    another source's Git has, and every prune of a mass prune (then ``prune`` is False)."""
    source_id = p.opts.source_id
    steps = [s for s in steps if s.action != plan.PRUNE or not (
        guards.prune_disabled(s.target) or suspend.never_pruned(s.target)
        or sources.wanted_elsewhere(s.target, source_id))]
    prunes = sum(s.action == plan.PRUNE for s in steps)
    if p.git.manifests and guards.too_many(prunes, owned, p.opts.max_prune_share):
        p.report.errors.append(guards.refusal(prunes, owned, p.opts.max_prune_share, p.report.commit))
        return [s for s in steps if s.action != plan.PRUNE], False
    return steps, prune


def waiting(report: Report, live: LiveState, git_paths: dict[str, str],
            retry: backoff.Policy) -> dict[str, backoff.Waiting]:
    """Applications this pass skips because they are backing off (``backoff.waiting``; only
    with ``retry.skip``), each reported as one skipped Application object with the reason
    (never as unchanged: it is still failing); another source id's are not this pass's. One
    unchanged since a pass that synced it cleanly (a hit, ``steady.py``) has no failures in its
    status, so it is never skipped. Only those whose status counts failures are read
    (``AppFacts.failing``): a push's pass at 10,000 Applications reads no other status."""
    if not retry.skip:
        return {}
    now = datetime.datetime.now(datetime.timezone.utc)
    out: dict[str, backoff.Waiting] = {}
    for facts, app in zip(live.app_facts, live.apps):
        if not facts.failing or (facts.ours and not facts.mine):
            continue
        key = facts.key
        from_git = key in git_paths or facts.mine  # as the status write decides
        wait = backoff.waiting(app, report.commit if from_git else None, now)
        if wait is not None:
            out[key] = report.backing_off[key] = wait
            report.add(key, f"{KIND}/{key}", SKIPPED, wait.message())
            report.retry_at = backoff.earliest(report.retry_at, wait.next_retry)
    return out


def why_no_prune(problems: int, outside: int) -> str:
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


def all_owned(n: int) -> str:
    """``the 1 Application`` or ``all N Applications``: the count of the empty-commit guard."""
    return "the 1 Application" if n == 1 else f"all {n} Applications"
