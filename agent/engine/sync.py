"""One reconcile pass: source -> manifests -> render -> plan -> apply -> prune -> status -> report.

Level-based: every pass recomputes the whole desired state from the newest commit and the whole
live state from the cluster, so missed commits, crashed passes and hand edits need no special
handling. Fail closed: a file that did not parse or validate blocks the prunes it could hide
(``hidden``), an Application refused by scope or tenancy blocks every prune, and a fetch or list
failure stops the pass before any change.

The pass is a sequence of stages (``reconcile``), each a function of its own module taking what it
needs and returning a frozen value (``passvalues``); the ``Report`` is the one accumulator:
``sourceread`` (the commit's documents), ``livestate`` (the cluster), ``appplan`` (the
Applications' plan and guards), ``appapply`` (their apply), ``childapply`` (their children, in two
waves), ``statuses``, ``wantedby``, ``prune`` and, in ``run``, ``remember``.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable, cast

from agent.api import labels
from agent.api.objects import Obj
from agent.api.schema import GROUP, KIND
from agent.engine import (appapply, appplan, backoff, childapply, conditions, events, livestate, plan, prune,
                          remember as remember_, scope, sourceread, tenancy, statuses, statuswrite, steady as steady_, wantedby,
                          writes)
from agent.engine.options import Options
from agent.engine.passvalues import ChildIndex, ChildWave, Pass, Wanted, key_of
from agent.engine.report import Report
from agent.kube.cluster import ApiError, Cluster
from agent.manifests import loader as manifests, parsecache
from agent.manifests.manifest import Manifest
from agent.source import mirror as source

CRD_NAME = statuswrite.CRD_NAME
__all__ = ["CRD_NAME", "Options", "reconcile", "redacted", "run"]


def run(kube: Cluster, opts: Options, *, known_commit: str | None = None, offline: bool = False,
        retry: backoff.Policy = backoff.ONE_SHOT, on_commit: Callable[[str, list[Manifest]], None] | None = None,
        steady: steady_.Steady | None = None) -> Report:
    """Run one pass against ``kube``; never raises for source, manifest or API faults, which
    are reported in ``Report.errors`` (the command line turns them into exit code 2).

    ``known_commit``: the commit the previous pass worked from; the fetch is skipped when the
    remote ref still points at it. ``offline``: reuse ``known_commit`` without asking the
    remote at all (passes triggered by cluster changes between scheduled passes).
    ``retry``: the backoff policy (``backoff.Policy``); with ``skip`` (``run``), Applications
    whose retry time has not come are skipped and reported, everything else is attempted.
    ``on_commit(sha, applications)``: called once the commit is read, before anything is applied
    (a commit status ``pending``: ``agent.notify``), with the commit's Applications in scope
    (``Manifest``s: ``namespace``, ``name``; sorted, maybe empty); it must not block.
    ``steady``: what the previous pass of ``run`` left (``steady.py``): its read of the same
    commit and its unchanged Applications are reused, and this pass's are recorded in it.
    """
    report = Report()
    kube = scope.ScopedKube(kube, opts.allowed_namespaces, opts.agent_namespace)  # on without the flag too
    read = _source(kube, opts, report, known_commit, offline, steady)
    if read is None:
        return report
    git = _wanted(opts, report, read)
    batch = events.Batch(kube, steady.told if steady is not None else None)  # one Event per Application per pass
    if on_commit is not None and report.commit:
        on_commit(report.commit, git.manifests)
    try:
        with kube.sharing():  # the pass's live objects share equal parts (share.py)
            reconcile(Pass(batch, opts, report, git, retry, steady))
    except ApiError as err:
        report.errors.append(f"{err}; the pass stopped, nothing further was pruned or recorded")
        report.stopped = True
        if steady is not None:
            steady.entries, steady.facts = {}, {}  # what it did is not known: decide everything next time
        return report
    batch.flush(lambda items: list(writes.ordered(kube, items, lambda e, _: kube.event(*e), report)))
    if steady is not None:  # a read of the changed files only leaves the parse cache's file to write
        unsaved = parsecache.beside(source.cache_path(opts.cache_dir, opts.repo, opts.credentials),
                                    opts.source_id).save(prune=False)
        if unsaved:
            report.notes.append(unsaved)
    return report


def _source(kube: Cluster, opts: Options, report: Report, known_commit: str | None, offline: bool,
            steady: steady_.Steady | None) -> sourceread.SourceRead | None:
    """Fetch (unless ``offline`` with a ``known_commit``) and read the commit (``run`` reuses the
    read of the same commit: ``steady.source``). None when the source failed: the error is in
    ``report``, and each of this source's Applications says so (``_source_unavailable``)."""
    started = time.monotonic()
    reason = conditions.FETCH_FAILED
    try:
        if offline and known_commit:
            report.commit = known_commit
        else:
            fetched = source.fetch(opts.repo, opts.ref, opts.cache_dir, opts.fetch_timeout,
                                   credentials=opts.credentials, known_commit=known_commit)
            report.commit = fetched.commit
            report.source_seen = True
            if fetched.fetched:
                report.fetch_seconds = time.monotonic() - started
        reason = conditions.READ_FAILED
        if steady is not None and steady.source is not None and steady.source.commit == report.commit:
            return cast(sourceread.SourceRead, steady.source.read)  # the same commit: the same documents
        read = sourceread.read(opts, report.commit, steady.source if steady is not None else None)
        if steady is not None:
            steady.source = steady_.Source(report.commit, read)
        return read
    except source.SourceError as err:
        report.fetch_failed, report.source_seen = True, False
        report.errors.append(f"{err}; nothing was changed or pruned")
        if not isinstance(err, source.Interrupted):  # shutting down says nothing about the source
            _source_unavailable(kube, opts, report, reason, str(err))
        return None


def _wanted(opts: Options, report: Report, read: sourceread.SourceRead) -> Wanted:
    """What Git wants: the valid Applications in scope. Every refused file or Application is an
    error, ``invalid`` and (for an Application) ``refused`` in ``report``."""
    report.notes += read.notes
    loaded = read.loaded
    wanted, outside = scope.split(loaded.manifests, opts.allowed_namespaces, opts.agent_namespace)
    wanted, forbidden = tenancy.refuse(wanted, tenancy.policy(opts))
    problems = [manifests.ManifestError(p, None, None, m) for p, m in read.problems] + loaded.errors + outside \
        + forbidden
    report.errors += [str(p) for p in problems]
    report.problems = problems
    rejected = [(r.application or (f"{r.path}:{r.line}" if r.line else r.path), "; ".join(r.reasons), r)
                for r in loaded.rejected]
    elsewhere = [(m.message.split(":", 1)[0].removeprefix("Application "), str(m)) for m in outside + forbidden]
    report.invalid += [(p, m) for p, m in read.problems] + [(what, why) for what, why, _ in rejected] + elsewhere
    # an invalid Application counts as a failed one (by file:line when its name is what is invalid)
    report.refused.update([(what, why) for what, why, r in rejected if r.application or r.is_application] + elsewhere)
    return Wanted(wanted, read.blobs, problems, len(outside), len(forbidden))


def reconcile(p: Pass) -> None:
    """The pass after the source is read: read live, plan and apply Applications, then what
    changed first (its children applied and statuses written), then the rest, prune, and the
    status sweep of the rest. Raises ``ApiError`` (status 0) when the API server is
    unreachable; every other fault is recorded in ``p.report``."""
    live = livestate.read_live(p)
    planned = appplan.plan_applications(p, live) if live is not None else None
    if live is None or planned is None:
        return
    applied = appapply.keep_live(p, live, planned, appapply.apply_applications(p, live, planned))
    planned = replace(planned, live={}, desired=(), steps=[s for s in planned.steps if s.action == plan.PRUNE])  # let go
    first, rest = childapply.waves(p, planned, applied)
    idx = childapply.index(live)
    listed: dict[tuple[str, str, str], list[Obj]] = {}  # ``apply.claim``'s lists, for every batch
    done = childapply.apply_wave(p, first, planned, applied, idx, listed)
    statuses.write_statuses(p, first, planned, applied, _with_live(done, idx))
    appapply.report_unchanged(p, planned.hits)
    wantedby.mark_wanted(p, live, planned.refused)
    done = done.merged(childapply.apply_wave(p, rest, planned, applied, idx, listed, before=done))
    prune.prune_all(p, prune.plan_prunes(p, live, idx, done, planned.prune), planned, applied)
    live = replace(live, apps=[], app_facts=[])  # let go: the sweep replaces each Application it writes
    statuses.write_statuses(p, sorted(set(applied.failed) | set(rest)), planned, applied, _with_live(done, idx),
                            let_go=True)
    if p.steady is not None:
        remember_.remember(p, p.steady, planned, applied, _with_live(done, idx), live)


def _with_live(done: ChildWave, idx: ChildIndex) -> ChildWave:
    """``done`` with every owned live child in ``live_of``: what the waves applied over what was read;
    and what the children make, read for the status (``related``: a CronJob's Jobs)."""
    return replace(done, live_of={**idx.live_of, **done.live_of}, related=idx.related)


def _source_unavailable(kube: Cluster, opts: Options, report: Report, reason: str, error: str) -> None:
    """Say on each live Application of this source (its ``heumsi.github.io/source`` label, owned:
    ``plan.owned``) that the source could not be fetched (``reason`` ``FetchFailed``) or its
    commit read (``ReadFailed``): ``SourceAvailable`` False with the redacted ``error`` and since
    when (``statuswrite.write_source_unavailable``; written only when it changes). Nothing else is
    written, nothing pruned; none in a dry run. A failed list is a note: the pass failed already."""
    if kube.dry_run:
        return
    message = redacted(error, opts)
    try:
        apps = [a for a in kube.list(GROUP, KIND, f"{labels.SOURCE_LABEL}={opts.source_id}")
                if plan.owned(a) and not a["metadata"].get("deletionTimestamp")]  # the selector: this source's
        marked = sum(statuswrite.write_source_unavailable(kube, report, key_of(app), app, reason, message)
                     for app in apps)
    except ApiError as err:
        report.notes.append(f"could not record on this source's Applications that the source is unavailable: {err}")
        return
    if marked:
        report.notes.append(f"{marked} Application{'s' if marked != 1 else ''} marked {conditions.SOURCE_AVAILABLE}=False "
                            f"({reason})")


def redacted(text: str, opts: Options) -> str:
    """``text`` with the repository URL's user-info and the token of ``opts.credentials`` (a
    ``--git-token-file``'s) removed (``source.redact``): what may be written to the cluster."""
    text = source.redact(text, opts.repo)
    token = opts.credentials.token if opts.credentials else None
    return text.replace(token, "***") if token and len(token) >= 4 else text
