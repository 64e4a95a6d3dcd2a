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
from dataclasses import dataclass, field, replace

from agent.api import labels
from agent.api.schema import GROUP, KIND, PLURAL, VERSION
from agent.engine import (apply, backoff, conditions, events, guards, news, plan, scope, status as status_, statuswrite,
                          steady as steady_, suspend, writes)
from agent.engine.report import (ADOPTED, CONFIGURED, CREATED, FAILED, KEPT, PRUNED, RECREATED, SKIPPED, SUSPENDED,
                                 UNCHANGED, Report)
from agent.kinds import health, registry, render
from agent.kube.client import ApiError, Kube
from agent.manifests import loader as manifests, nodes, parsecache, specrules
from agent.source import mirror as source, snapshot as snapshots

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


@dataclass(frozen=True)
class _Read:
    """What a pass keeps of reading its commit: the snapshot's problems and blob ids, the loaded
    documents and the notes about the read (``steady.Source.read``: ``run`` reuses it while the
    commit stays)."""

    problems: list
    blobs: dict
    loaded: object  # manifests.LoadResult
    notes: list
    plain: bool = False  # ``Snapshot.plain``: the next commit can be read from this one's (``read_since``)


def run(kube: Kube, opts: Options, *, known_commit: str | None = None, offline: bool = False,
        retry: backoff.Policy = backoff.ONE_SHOT, on_commit=None, steady: steady_.Steady | None = None) -> Report:
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
    started = time.monotonic()
    if opts.allowed_namespaces is not None:
        kube = scope.ScopedKube(kube, opts.allowed_namespaces)
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
            read = steady.source.read  # the same commit: the same documents
        else:
            read = _read(opts, report.commit, steady.source if steady is not None else None)
            if steady is not None:
                steady.source = steady_.Source(report.commit, read)
    except source.SourceError as err:
        report.fetch_failed, report.source_seen = True, False
        report.errors.append(f"{err}; nothing was changed or pruned")
        if not isinstance(err, source.Interrupted):  # shutting down says nothing about the source
            _source_unavailable(kube, opts, report, reason, str(err))
        return report
    report.notes += read.notes
    loaded = read.loaded
    wanted, outside = scope.split(loaded.manifests, opts.allowed_namespaces)
    problems = [manifests.ManifestError(p, None, None, m) for p, m in read.problems] + loaded.errors + outside
    report.errors += [str(p) for p in problems]
    report.problems = problems
    rejected = [(r.application or (f"{r.path}:{r.line}" if r.line else r.path), "; ".join(r.reasons), r)
                for r in loaded.rejected]
    elsewhere = [(m.message.split(":", 1)[0].removeprefix("Application "), str(m)) for m in outside]
    report.invalid += [(p, m) for p, m in read.problems] + [(what, why) for what, why, _ in rejected] + elsewhere
    # an invalid Application counts as a failed one (by file:line when its name is what is invalid)
    report.refused.update([(what, why) for what, why, r in rejected if r.application or r.is_application] + elsewhere)
    del loaded
    batch = events.Batch(kube)  # one Event per Application per pass (events.py)
    if on_commit is not None and report.commit:
        on_commit(report.commit, wanted)
    try:
        with kube.sharing():  # the pass's live objects share equal parts (share.py)
            _reconcile(batch, opts, report, wanted, problems, retry, outside=len(outside), steady=steady,
                       blobs=read.blobs)
    except ApiError as err:
        report.errors.append(f"{err}; the pass stopped, nothing further was pruned or recorded")
        if steady is not None:
            steady.entries, steady.facts = {}, {}  # what it did is not known: decide everything next time
        return report
    batch.flush(lambda items: list(writes.ordered(kube, items, lambda e, _: kube.event(*e), report)))
    if steady is not None:  # a read of the changed files only leaves the parse cache's file to write
        parsecache.beside(source.cache_path(opts.cache_dir, opts.repo, opts.credentials), opts.source_id).save(
            prune=False)
    return report


def _read(opts: Options, commit: str, before: steady_.Source | None = None) -> _Read:
    """Read and parse the documents under ``opts.path`` at ``commit`` (through the parse cache
    beside the mirror); with ``before`` (``run``'s read of an earlier commit), only the files
    Git says changed since, when that tells (``snapshot.read_since``, ``loader.load_changed``).
    Raises ``source.SourceError`` (a missing path without ``allow_empty``)."""
    cache = parsecache.beside(source.cache_path(opts.cache_dir, opts.repo, opts.credentials), opts.source_id)
    snapshot, notes, since = _snapshot(opts, commit, before, cache)
    loaded = _load_changed(opts, before.read, snapshot, cache) if since else None
    log.debug("commit %s read %s", commit, f"from the files changed since {before.commit}" if loaded
              else "in full")
    if loaded is None:
        loaded = manifests.load(snapshot.files, opts.namespace, blobs=snapshot.blobs, cache=cache)
        cache.save()
    return _Read(snapshot.problems, snapshot.blobs, loaded, notes, snapshot.plain)  # the files' bytes are let go


def _snapshot(opts: Options, commit: str, before: steady_.Source | None, cache) -> tuple:
    """(the ``Snapshot`` of ``commit``, notes, whether it was read from ``before``'s)."""
    def unneeded(path: str, blob: str) -> bool:
        return manifests.parsed_before(cache, path, blob, opts.namespace)
    try:
        if before is not None and before.read.plain:
            earlier = snapshots.Snapshot(before.commit, blobs=before.read.blobs, problems=before.read.problems,
                                         plain=True)
            snapshot = snapshots.read_since(opts.repo, earlier, commit, opts.cache_dir, opts.path,
                                            credentials=opts.credentials, unneeded=unneeded)
            if snapshot is not None:
                return snapshot, [], True
        return snapshots.read(opts.repo, commit, opts.cache_dir, opts.path, submodules=opts.submodules,
                              credentials=opts.credentials, timeout=opts.fetch_timeout, unneeded=unneeded), [], False
    except source.PathMissing as err:
        if not opts.allow_empty:
            raise source.SourceError(f"{err} (with --allow-empty a missing path counts as no "
                                     "Applications)") from None
        return snapshots.Snapshot(commit=commit), [f"{err}; --allow-empty: treated as no Applications"], False


def _load_changed(opts: Options, before: _Read, snapshot: snapshots.Snapshot, cache):
    """``loader.load_changed`` of the files that changed since ``before``, or None; the parse
    cache forgets the blobs the commit no longer has (it is written at the end of the pass)."""
    old, new = before.blobs, snapshot.blobs
    changed = {path for path, blob in new.items() if old.get(path) != blob}
    gone = set(old) - set(new)
    loaded = manifests.load_changed(before.loaded, snapshot.files.only(changed), gone, opts.namespace,
                                    blobs=snapshot.blobs, cache=cache)
    if loaded is not None:
        cache.forget(parsecache.key(old[path], path, opts.namespace, manifests.MAX_FILE_BYTES,
                                    manifests.MAX_DOCUMENTS) for path in (changed | gone) if path in old)
    return loaded


def _source_unavailable(kube: Kube, opts: Options, report: Report, reason: str, error: str) -> None:
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
                if plan.owned(a, opts.source_id) and not a["metadata"].get("deletionTimestamp")]
        marked = sum(statuswrite.write_source_unavailable(kube, report, _key(app), app, reason, message)
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


@dataclass
class _Pass:
    """What one pass knows as it goes, step by step (``_reconcile``). Keys are ``namespace/name``
    of Applications (``_key``); ``report`` is the change set every step adds to."""

    kube: Kube
    opts: Options
    report: Report
    wanted: list  # manifests.Manifest from Git, valid and in scope
    problems: list  # files or Applications refused: nothing is pruned (fail closed)
    retry: backoff.Policy
    outside: int  # of ``problems``: Applications --allowed-namespaces refused
    prune: bool = False
    keys: list = field(default_factory=list)  # ``namespace/name`` of each of ``wanted``, in its order
    live_apps: list = field(default_factory=list)
    app_facts: list = field(default_factory=list)  # ``_app_facts`` of each of ``live_apps``
    live_children: list = field(default_factory=list)
    namespaces: set = field(default_factory=set)
    desired_apps: list | None = None  # rendered Applications, let go once applied
    app_steps: list = field(default_factory=list)  # plan.Step of Applications; only prunes after the apply
    git_paths: dict[str, str] = field(default_factory=dict)  # key -> file in Git
    git_lines: dict[str, int] = field(default_factory=dict)  # key -> line of its document in that file
    waiting: dict = field(default_factory=dict)  # key -> backoff.Waiting: skipped this pass
    in_scope: dict[str, dict] = field(default_factory=dict)  # key -> live Application whose children sync
    failed_apps: dict[str, dict] = field(default_factory=dict)  # live Applications whose own apply failed
    outcomes: dict[str, list[str]] = field(default_factory=dict)  # key -> actions taken, other than unchanged
    failures: dict[str, str] = field(default_factory=dict)  # key -> why it failed
    reasons: dict[str, str] = field(default_factory=dict)  # key -> the failure's condition reason, if not SyncFailed
    foreign: set[str] = field(default_factory=set)  # another source's Applications
    refused_apps: set[str] = field(default_factory=set)  # of ``foreign``: also in this source's Git
    holds: dict = field(default_factory=dict)  # key -> suspend.Hold
    held_children: dict[str, dict[str, str]] = field(default_factory=dict)  # key -> kind -> subject, held by annotation
    live_of: dict[str, dict[str, dict]] = field(default_factory=dict)  # key -> kind -> child, as seen then applied
    taken: dict[str, set[str]] = field(default_factory=dict)  # key -> kinds whose name another object holds
    opted: set[str] = field(default_factory=set)  # keys of Applications that opted in to adopt (plan.opted_in)
    child_prunes: list = field(default_factory=list)  # plan.Step of children no desired child paired with
    steady: steady_.Steady | None = None  # what the previous pass of ``run`` left
    blobs: dict[str, str] = field(default_factory=dict)  # path -> Git blob id of the commit's files
    hits: dict = field(default_factory=dict)  # key -> steady.Entry: unchanged since the previous pass
    children_of: dict[str, list] = field(default_factory=dict)  # key -> (child, identity, version) of each owned live child
    child_facts: list = field(default_factory=list)  # ``_child_facts`` of each of ``live_children``
    notes_of: dict[str, list[str]] = field(default_factory=dict)  # key -> notes about its document
    claimed: dict = field(default_factory=dict)  # what ``apply.claim`` listed, by kind and namespace
    live_by_key: dict[str, dict] = field(default_factory=dict)  # key -> live Application


def _reconcile(kube: Kube, opts: Options, report: Report, wanted: list, problems: list,
               retry: backoff.Policy = backoff.ONE_SHOT, outside: int = 0, steady: steady_.Steady | None = None,
               blobs: dict | None = None) -> None:
    """The pass after the source is read: read live, plan and apply Applications, then what
    changed first (its children applied and statuses written), then the rest, prune, and the
    status sweep of the rest. Raises ``ApiError`` (status 0) when the API server is
    unreachable; every other fault is recorded in ``report``."""
    p = _Pass(kube, opts, report, wanted, problems, retry, outside, steady=steady, blobs=blobs or {})
    if not _read_live(p) or not _plan_applications(p):
        return
    _apply_applications(p)
    _keep_live_applications(p)
    first, rest = _waves(p)
    live_by_id = _index_children(p)
    _apply_children(p, first, live_by_id)
    _write_statuses(p, first)
    _report_unchanged(p)
    _mark_wanted(p)
    _apply_children(p, rest, live_by_id)
    _plan_prunes(p, live_by_id)
    _prune_all(p)
    _write_statuses(p, sorted(set(p.failed_apps) | set(rest)))
    if steady is not None:
        _remember(p)


def _waves(p: _Pass) -> tuple[list[str], list[str]]:
    """The Applications in scope, split: first what changed (its own apply wrote, or, in ``run``,
    anything about it moved since the previous pass: not ``steady``), then the rest, whose
    passes only record the new commit (the sweep). Each sorted; see issue 33."""
    first, rest = [], []
    for key in sorted(p.in_scope):
        changed = key in p.outcomes or (p.steady is not None and key not in p.hits)
        (first if changed else rest).append(key)
    return first, rest


def _read_live(p: _Pass) -> bool:
    """Check the CRD is served with its status subresource, then list Applications, children and
    namespaces (one LIST each). False, with the error in the report, when the CRD is not right."""
    served = p.kube.served(GROUP, VERSION)
    if PLURAL not in served:
        p.report.errors.append(f"the CustomResourceDefinition {CRD_NAME} is not installed in the cluster "
                               f"(install it with: kubectl apply -f crd.yaml); nothing was changed")
        return False
    if f"{PLURAL}/status" not in served:
        p.report.errors.append(f"the CustomResourceDefinition {CRD_NAME} in the cluster has no status "
                               "subresource, so no Application status could be stored; apply this "
                               "project's crd.yaml (kubectl apply -f crd.yaml); nothing was changed")
        return False
    p.live_apps = p.kube.list(GROUP, KIND)
    p.app_facts = [_app_facts(p, app) for app in p.live_apps]
    selector = f"{labels.MANAGED_BY}={labels.AGENT_NAME}"
    p.live_children = [child for k in registry.CHILD_KINDS for child in p.kube.list(k.group, k.kind, selector)]
    p.namespaces = {ns["metadata"]["name"] for ns in p.kube.list("", "Namespace")}
    p.child_facts = [_facts(p, child) for child in p.live_children]
    for child, (ident, owner, version) in zip(p.live_children, p.child_facts):
        if owner is not None:
            p.children_of.setdefault(owner, []).append((child, ident, version))
    return True


def _child_facts(child: dict) -> tuple:
    """(identity, its Application's key when the agent owns it, else None, (identity,
    resourceVersion): what ``steady.Steady.unchanged`` compares) of a live child."""
    ident = plan.identity(child)
    return ident, plan.owner_key(child) if plan.owned(child) else None, (ident, child["metadata"].get("resourceVersion"))


def _facts(p: _Pass, child: dict) -> tuple:
    """``_child_facts``, derived once per object in ``run`` (``steady.Steady.fact``)."""
    return _child_facts(child) if p.steady is None else p.steady.fact(child, _child_facts)


def _app_facts(p: _Pass, app: dict) -> tuple[str, bool, bool]:
    """(key, owned by an agent: ``plan.owned``, owned by this source) of a live Application,
    derived once per object in ``run``."""
    def derive(obj: dict) -> tuple[str, bool, bool]:
        return _key(obj), *plan.owned_both(obj, p.opts.source_id)
    return derive(app) if p.steady is None else p.steady.fact(app, derive)


def _unchanged(p: _Pass, live_apps: dict[str, dict]) -> dict:
    """The Applications from Git whose document, live object and live children are as the
    previous pass of ``run`` left them (``steady.Steady.unchanged``): key -> entry."""
    if p.steady is None or not p.steady.entries:
        return {}
    hits, blobs, children_of, unchanged = {}, p.blobs, p.children_of, p.steady.unchanged
    this_source = {key for key, _, this in p.app_facts if this}
    for key, m in zip(p.keys, p.wanted):
        app = live_apps.get(key)
        blob = blobs.get(m.path)
        # no blob id: its content cannot be told apart; not this source's any more: another source
        # took it between two of this pass's writes (its apply and its status), which the
        # resourceVersion after those writes does not show
        if app is None or blob is None or key not in this_source:
            continue
        children = tuple(sorted(version for _, _, version in children_of.get(key, ())))
        entry = unchanged(key, (m.path, m.line, blob), app, children)
        if entry is not None:
            hits[key] = entry
    return hits


def _plan_applications(p: _Pass) -> bool:
    """Render the Applications from Git and plan them against the live ones, with the guards:
    another source's Applications are refused (``plan.refuse``), annotated ones and ones another
    source's Git also has (``plan.wanted_elsewhere``) kept, a commit with none (or a mass prune)
    prunes nothing. False when the empty-commit guard stops the pass."""
    opts, report = p.opts, p.report
    p.prune = opts.prune and not p.problems
    if p.problems and opts.prune:
        report.notes.append(f"pruning skipped: {_why_no_prune(len(p.problems), p.outside)}")
    repository = source.repository_identity(opts.repo)  # one for every URL form of the repository
    p.keys = [sys.intern(f"{m.namespace}/{m.name}") for m in p.wanted]  # the keys ``_key`` returns
    p.live_by_key = {key: app for (key, _, _), app in zip(p.app_facts, p.live_apps)}
    p.hits = _unchanged(p, p.live_by_key)
    if p.steady is not None:
        log.debug("%d of %d Applications unchanged since the previous pass (steady.py)", len(p.hits), len(p.wanted))
    p.desired_apps = []
    for key, m in zip(p.keys, p.wanted):
        if key in p.hits:
            report.notes += p.hits[key].notes
            continue
        desired = render.desired_application(m.body, report.commit, m.path, opts.source_id, repository)
        p.desired_apps.append(desired)
        notes = [f"{m.path}:{m.line}: {field}: set by the agent to {ours!r}; the value in Git ({git!r}) is not "
                 "applied" for field, git, ours in render.overridden(m.body, desired)]
        if notes:
            p.notes_of[key] = notes
            report.notes += notes
    owned_live = [app for (_, _, this), app in zip(p.app_facts, p.live_apps) if this]
    if p.prune and not p.wanted and owned_live and not opts.allow_empty:
        report.errors.append(
            f"commit {report.commit} has no Applications under {opts.path!r}, so pruning would delete "
            f"{_all_owned(len(owned_live))} the agent owns; nothing was changed. If that is intended, "
            "run again with --allow-empty")
        return False
    p.git_paths = {key: m.path for key, m in zip(p.keys, p.wanted)}
    p.git_lines = {key: m.line for key, m in zip(p.keys, p.wanted)}
    p.waiting = _waiting(report, p.live_by_key, p.git_paths, opts.source_id, p.retry, p.hits)  # in backoff: skipped
    # an Application unchanged since the previous pass is neither decided nor pruned: left out
    undecided = [app for (key, _, _), app in zip(p.app_facts, p.live_apps) if key not in p.hits] \
        if p.hits else p.live_apps
    app_steps = plan.plan(p.desired_apps, undecided, prune=p.prune, source=opts.source_id)
    where = {key: f"{m.path}:{m.line}" for key, m in zip(p.keys, p.wanted)}  # file:line in Git
    app_steps, refused = plan.refuse(app_steps, opts.source_id, repository, where)
    for step, why in refused:  # another source's Application: failed here, nothing written to it but ours
        report.add(_key(step.desired), step.subject, FAILED, why)
        p.refused_apps.add(_key(step.desired))
    # Guards (see guards.py): annotated Applications, and ones another source's Git has, are kept;
    # a mass prune prunes nothing.
    app_steps = [s for s in app_steps if s.action != plan.PRUNE or not (
        guards.prune_disabled(s.live) or suspend.never_pruned(s.live) or plan.wanted_elsewhere(s.live, opts.source_id))]
    prunes = sum(s.action == plan.PRUNE for s in app_steps)
    if p.wanted and guards.too_many(prunes, len(owned_live), opts.max_prune_share):
        report.errors.append(guards.refusal(prunes, len(owned_live), opts.max_prune_share, report.commit))
        p.prune = False
        app_steps = [s for s in app_steps if s.action != plan.PRUNE]
    p.app_steps = app_steps
    return True


def _apply_applications(p: _Pass) -> None:
    """Apply the Applications from Git (their namespace first, when missing), in the pool; one
    held by its reconcile annotation stays as it is. Fills ``in_scope`` and ``failed_apps``."""
    kube, report = p.kube, p.report
    made = writes.Namespaces(kube, p.namespaces, render.namespace)
    for key in p.hits:  # unchanged since the previous pass: unchanged again (steady.py; reported after the first wave)
        p.in_scope[key] = p.live_by_key[key]
    app_work = []
    for step in (s for s in p.app_steps if s.action != plan.PRUNE and _key(s.desired) not in p.waiting):
        if suspend.set_by_hand(step.live):  # heumsi.github.io/reconcile: disabled: the live one stays as it is
            report.add(_key(step.desired), step.subject, SUSPENDED, suspend.Hold(suspend.ON_APPLICATION, True).message)
            p.in_scope[_key(step.desired)] = step.live
        else:
            app_work.append(step)
    for step, done in writes.ordered(kube, app_work, lambda step, scratch: _converge(
            kube, scratch, scratch.failures, _key(step.desired), step, reasons=scratch.reasons,
            before=lambda: made.ensure(step.desired["metadata"]["namespace"])), report, p.failures, p.reasons,
            inline=lambda step: step.action == plan.UNCHANGED):
        key = _key(step.desired)
        if done is None:
            if step.live is not None:
                p.failed_apps[key] = step.live
            continue
        _record(report, kube, key, step.subject, done, done.live, p.outcomes)
        p.in_scope[key] = done.live


def _report_unchanged(p: _Pass) -> None:
    """Report the Applications unchanged since the previous pass (``hits``) as unchanged: after
    what changed is applied, since at 10,000 Applications that is 10,000 lines (issue 33)."""
    for key in p.hits:
        p.report.add(key, f"{KIND}/{key}", UNCHANGED)


def _mark_wanted(p: _Pass) -> None:
    """Keep this source's wanted-by annotation (``plan.wanted_by``) true on the live
    Applications: set, to ``"<source id> <file>"``, on each one another source holds that this
    source's Git has too (``refused_apps``), so its holder never prunes it; removed from each
    one that carries it and that this source now holds (after a hand-over) or no longer has in
    Git (not in a pass where a file failed: it may still be there; fail closed). A JSON merge
    patch each (``Kube.patch_annotations``: the holder's server-side apply never drops it),
    in the pool, only where the value differs: a steady state writes nothing. None in a dry run."""
    if p.kube.dry_run:
        return
    name, source_id = plan.wanted_by(p.opts.source_id), p.opts.source_id
    patches = []
    for (key, _, _), app in zip(p.app_facts, p.live_apps):
        if key in p.refused_apps:
            want = f"{source_id} {p.git_paths[key]}"
        elif key in p.git_paths or not p.problems:
            want = None
        else:
            continue
        meta = app["metadata"]
        if (meta.get("annotations") or {}).get(name) != want and not meta.get("deletionTimestamp"):
            patches.append((app, key, {name: want}))
    for _ in writes.ordered(p.kube, patches, lambda patch, scratch: _annotate(p.kube, scratch, *patch), p.report):
        pass


def _annotate(kube: Kube, report, app: dict, key: str, annotations: dict[str, str | None]) -> None:
    """Write ``annotations`` on the Application ``app`` (``key``); a refusal is a note of the
    pass (the Application's own outcome is reported already), one that is gone is nothing; an
    unreachable API server (status 0) re-raises."""
    try:
        kube.patch_annotations(app, annotations)
    except ApiError as err:
        if err.status == 0:
            raise
        if err.status != 404:
            report.notes.append(f"{KIND}/{key}: could not write {', '.join(annotations)}: {err}")


def _keep_live_applications(p: _Pass) -> None:
    """Add the Applications kept from the cluster to ``in_scope``: hand-applied ones, and owned
    ones Git did not prune this pass (their file failed to validate, or pruning is off); another
    source's are its agent's business. Then find the suspended ones (``suspend.py``) and let the
    rendered Applications go: only the prunes of Applications are left to do."""
    pruned_apps = {_key(s.live) for s in p.app_steps if s.action == plan.PRUNE}
    facts = list(zip(p.app_facts, p.live_apps))
    p.foreign = {key for (key, ours, this), _ in facts if ours and not this}
    for (key, _, _), app in facts:
        if key not in p.in_scope and key not in pruned_apps and key not in p.failures and key not in p.foreign \
                and key not in p.waiting and not app["metadata"].get("deletionTimestamp"):
            p.in_scope[key] = app
    desired_by_key = {_key(d): d for d in p.desired_apps}
    p.holds = {k: h for k, a in p.in_scope.items()
               if k not in p.hits and (h := suspend.application(desired_by_key.get(k), a))}
    p.desired_apps = None
    p.app_steps = [s for s in p.app_steps if s.action == plan.PRUNE]


def _index_children(p: _Pass) -> dict:
    """The live children by identity (``_apply_children`` takes out each one a desired child
    pairs with); each owned one is also its Application's live child of its kind (``live_of``)."""
    for key, children in p.children_of.items():
        kinds = p.live_of.setdefault(key, {})
        for child, _, _ in children:
            kinds[child["kind"]] = child
    return {ident: c for c, (ident, _, _) in zip(p.live_children, p.child_facts)}


def _apply_children(p: _Pass, keys: list[str], live_by_id: dict) -> None:
    """Render, plan, name-check and apply the children of the Applications ``keys``,
    ``CHILD_BATCH`` at a time; a batch's rendered children are let go once applied (at 10,000
    Applications they would be 20,000 objects at once). An Application unchanged since the
    previous pass (``hits``) renders nothing: its children are unchanged again."""
    scoped = []
    for key in keys:
        entry = p.hits.get(key)
        if entry is None:
            scoped.append((key, p.in_scope[key]))
            continue
        for ident, _ in entry.children:
            live_by_id.pop(ident, None)
        for subject in entry.lines:
            p.report.add(key, subject, UNCHANGED)
    for start in range(0, len(scoped), CHILD_BATCH):
        steps = _plan_children(p, scoped[start:start + CHILD_BATCH], live_by_id)
        _apply_child_batch(p, _unheld(p, apply.claim(p.kube, p.report, steps, p.failures, p.reasons, p.taken,
                                                     p.claimed, p.opted)))


def _plan_prunes(p: _Pass, live_by_id: dict) -> None:
    """Plan the prunes of children: what no desired child paired with; note the ones with the
    agent's labels that it did not make."""
    p.child_prunes = plan.prunes(live_by_id, set()) if p.prune else []
    for ident, owner, _ in p.child_facts:
        if owner is None and ident in live_by_id:  # not desired
            p.report.notes.append(f"{plan.subject(ident)} carries the agent's labels but is "
                                  "not a child it made: not ours, left alone")


def _plan_children(p: _Pass, batch: list[tuple[str, dict]], live_by_id: dict) -> list[plan.Step]:
    """The child steps of ``batch`` (key, live Application); an Application whose spec does not
    match the schema fails and renders none. An unchanged child's step keeps only its live object."""
    steps: list[plan.Step] = []
    for key, app in batch:
        spec = app.get("spec") or {}
        found = specrules.live_problems(spec)
        if found:
            where, why = found[0]
            p.failures[key] = (f"its spec does not match the Application schema (spec{'.' if where else ''}"
                               f"{nodes.dotted(where)}: {why}); children not rendered")
            p.reasons[key] = conditions.INVALID_SPEC
            p.report.add(key, f"{KIND}/{key}", FAILED, p.failures[key])
            continue
        meta, opt_in = app["metadata"], plan.opted_in(app)
        if opt_in:
            p.opted.add(key)
        for child in registry.children(meta["name"], meta["namespace"], meta["uid"], spec):
            step = plan.decide(child, live_by_id.pop(plan.identity(child), None), opt_in)
            steps.append(replace(step, desired=None) if step.action == plan.UNCHANGED else step)
    return steps


def _unheld(p: _Pass, steps) -> list[plan.Step]:
    """``steps`` less the children a suspended Application or their own annotation holds
    (reported as suspended)."""
    work = []
    for step in steps:
        key = plan.owner_key(step.desired or step.live)
        why = suspend.child(p.holds.get(key), step.subject, step.live)
        if not why:
            work.append(step)
            continue
        p.report.add(key, step.subject, SUSPENDED, why)
        if key not in p.holds:
            p.held_children.setdefault(key, {})[step.identity[1]] = step.subject
    return work


def _apply_child_batch(p: _Pass, work: list[plan.Step]) -> None:
    """Apply one batch's child steps in the pool; each applied child is kept as health reads it."""
    kube = p.kube
    for step, done in writes.ordered(kube, work, lambda step, scratch: _health_only(_converge(
            kube, scratch, scratch.failures, plan.owner_key(step.desired or step.live), step,
            reasons=scratch.reasons)), p.report, p.failures, p.reasons, inline=lambda step: step.action == plan.UNCHANGED):
        key = plan.owner_key(step.desired or step.live)
        if done is None:
            continue
        _record(p.report, kube, key, step.subject, done, p.in_scope.get(key), p.outcomes)
        p.live_of.setdefault(key, {})[step.identity[1]] = done.live


def _prune_all(p: _Pass) -> None:
    """Prune children first, then their Applications (not left to the garbage collector): two
    waves (``writes.ordered``), so every child's prune has finished before an Application's
    starts. An object kept by its annotation is reported as kept."""
    kube, report = p.kube, p.report
    keeps_children: set[str] = set()  # Applications with a child kept by its annotation
    for wave in ([s for s in p.child_prunes if s.action == plan.PRUNE],
                 [s for s in p.app_steps if s.action == plan.PRUNE]):
        deletes = []
        for step in wave:
            owner = plan.owner_key(step.live)
            if owner in p.failures or owner in p.foreign or owner in p.waiting:  # not synced, another's, backing off
                continue
            if step.identity[1] != KIND and owner in p.holds:  # a suspended Application's child Git dropped
                report.add(owner, step.subject, SUSPENDED, suspend.child(p.holds[owner], step.subject, step.live))
                continue
            if guards.prune_disabled(step.live) or suspend.set_by_hand(step.live):
                by = labels.PRUNE_ANNOTATION if guards.prune_disabled(step.live) else labels.RECONCILE_ANNOTATION
                report.add(owner, step.subject, KEPT, f"not in Git; {by}: {step.live['metadata']['annotations'][by]}")
                keeps_children.add(owner)
                continue
            deletes.append((step, owner, guards.propagation(step.identity[1], owner in keeps_children)))
        for (step, owner, _), pruned in writes.ordered(kube, deletes, lambda d, scratch: _prune(kube, scratch, *d),
                                                       report):
            if pruned:
                kube.change(step.live if step.identity[1] == KIND else p.in_scope.get(owner), owner, PRUNED,
                            step.subject)
                if step.identity[1] == KIND:  # its status goes with it: the prune itself is the news
                    report.notices.append(_pruned_notice(step.live, report.commit))


def _pruned_notice(app: dict, commit: str | None) -> news.Notice:
    """The ``Pruned`` notice of the live Application ``app`` deleted at ``commit``."""
    meta, old = app["metadata"], app.get("status") or {}
    return news.pruned(meta.get("namespace", ""), meta["name"], commit=commit, uid=meta.get("uid", ""),
                       previous_commit=news.content(old)[1] or old.get("lastSyncedCommit"),
                       source_path=old.get("sourcePath") or (meta.get("annotations") or {}).get(labels.SOURCE_PATH))


def _write_statuses(p: _Pass, keys: list[str]) -> None:
    """Write the status of each Application of ``keys`` once, in the pool, only when it
    differs; a status that does not move is checked inline, and one unchanged and at the same
    commit since the previous pass (``steady.Steady.settled``) not at all: its health and
    readiness are the recorded ones. Sets ``report.retry_at`` to the earliest retry."""
    broken_files = {problem.path: str(problem) for problem in p.problems}
    synced = {True: f"children applied from commit {(p.report.commit or '')[:12]}",  # one string each for the pass
              False: "children applied from the live Application"}
    statuses = []
    for key in keys:
        entry = p.hits.get(key)
        if steady_.Steady.settled(entry, p.report.commit, p.report.source_seen):
            p.report.health[key], p.report.synced[key] = entry.health, entry.synced
            if entry.readiness is not None:
                p.report.readiness[key] = entry.readiness
            continue
        app = p.in_scope.get(key) or p.failed_apps[key]
        statuses.append((key, app, _located(p, key, _outcome(p, key, app, broken_files, synced)),
                         p.live_of.get(key, {}), key in p.failures))
    if not p.report.source_seen:  # the last commit reused, Git not asked: SourceAvailable stays as it is
        statuses = [(key, app, replace(outcome, source_seen=False), *rest) for key, app, outcome, *rest in statuses]
    _record_health(p, statuses)
    kube, retry, report = p.kube, p.retry, p.report
    for _, next_retry in writes.ordered(kube, statuses, lambda st, scratch: statuswrite.write(
            kube, scratch, *st[:4], failed=st[4], retry=retry), report,
            inline=lambda st: not statuswrite.moves(*st[1:], retry=retry)):
        report.retry_at = backoff.earliest(report.retry_at, next_retry)


def _remember(p: _Pass) -> None:
    """Record in ``p.steady`` each Application from this source's Git that this pass synced
    cleanly (every line of it applied or unchanged, its status written or settled), as the
    pass left it: its document, and its live object and children at the resourceVersions of
    the pass's own writes (``steady.Steady.after``). Everything else is decided in full next time."""
    steady, report = p.steady, p.report
    clean = {CREATED, CONFIGURED, RECREATED, ADOPTED, UNCHANGED}
    lines: dict[str, list] = {}
    for change in report.changes:
        lines.setdefault(change.application, []).append(change)
    entries = {}
    wanted = {f"{m.namespace}/{m.name}": m for m in p.wanted}
    for key, app in p.in_scope.items():
        hit = p.hits.get(key)
        if steady_.Steady.settled(hit, report.commit, report.source_seen) and key not in report.failed:
            entries[key] = hit  # nothing of it moved, nothing was written
            continue
        m = wanted.get(key)
        if m is None or m.path not in p.blobs or key in p.failures or key in p.waiting or key in p.holds or key in p.held_children \
                or key in report.failed or key not in report.health or key not in report.synced \
                or any(c.action not in clean for c in lines.get(key, ())):
            continue
        version = steady.after(app)
        kids = tuple(sorted((plan.identity(c), steady.after(c)) for c in p.live_of.get(key, {}).values()))
        if version is None or any(v is None for _, v in kids):
            continue
        entries[key] = steady_.Entry(
            document=(m.path, m.line, p.blobs.get(m.path, "")), version=version, children=kids,
            commit=report.commit, source_seen=report.source_seen,
            lines=tuple(c.subject for c in lines.get(key, ()) if not c.subject.startswith(f"{KIND}/")),
            health=report.health[key], readiness=report.readiness.get(key), synced=report.synced[key],
            notes=tuple(p.hits[key].notes if key in p.hits else p.notes_of.get(key, ())))
    steady.entries = entries
    steady.turn()


def _located(p: _Pass, key: str, outcome: status_.Outcome) -> status_.Outcome:
    """``outcome`` with the line of the Application's document in its file, when it is in Git."""
    line = p.git_lines.get(key)
    return replace(outcome, source_line=line) if line and outcome.source_path == p.git_paths.get(key) else outcome


def _record_health(p: _Pass, statuses: list[tuple]) -> None:
    """Put each Application's health (``status.health_of``) in ``report.health``, and in
    ``report.synced`` each one from this source's Git that synced: its outcome with ``changed``
    False (what ``sync --wait`` rewrites its status with when a child's readiness moves,
    ``readiness``), or None when its health is not its children's: suspended, or a child held
    (not ok, reason ``Suspended``: ``sync --wait`` lists it as skipped, not waited for)."""
    for key, app, outcome, children, _ in statuses:
        p.report.health[key] = status_.health_of(app, outcome, children).as_status()
        held = outcome.reason == suspend.SUSPENDED and key not in p.failures
        if (outcome.ok or held) and key in p.git_paths:
            waits = outcome.ok and outcome.health is None and not outcome.suspended and key not in p.held_children
            p.report.synced[key] = replace(outcome, changed=False) if waits else None


def _outcome(p: _Pass, key: str, app: dict, broken_files: dict[str, str], synced: dict[bool, str]) -> status_.Outcome:
    """What the pass did for the Application ``key`` (``app``: live), for its status.
    ``broken_files``: path -> why it was refused; ``synced``: the Synced message, by in Git or not."""
    report, commit = p.report, p.report.commit
    annotations = app["metadata"].get("annotations") or {}
    in_git = key in p.git_paths
    from_git = in_git or plan.owned(app, p.opts.source_id)
    path = p.git_paths.get(key) or annotations.get(labels.SOURCE_PATH)
    if key in p.failures:
        return status_.Outcome(False, False, commit if from_git else None, p.reasons.get(key, "SyncFailed"),
                               p.failures[key], path if from_git else None,
                               health=registry.health(p.live_of.get(key, {}), frozenset(p.taken[key]), app.get("spec"))
                               if key in p.taken else None)
    if not in_git and from_git and path in broken_files:
        report.refused.setdefault(key, broken_files[path])
        return status_.Outcome(False, False, commit, "InvalidManifest", broken_files[path], path)
    if not in_git and from_git:
        return _kept_outcome(p, key, app, path)
    if key in p.holds or key in p.held_children:
        return suspend.outcome(p.holds.get(key), p.held_children.get(key, {}), p.live_of.get(key, {}),
                               commit=commit if in_git else None, path=p.git_paths.get(key), spec=app.get("spec"))
    changed = bool(set(p.outcomes.get(key, [])) & {CREATED, CONFIGURED, RECREATED, ADOPTED})
    return status_.Outcome(True, changed, commit if in_git else None, "Synced", synced[in_git],
                           path if in_git else None)


def _kept_outcome(p: _Pass, key: str, app: dict, path: str | None) -> status_.Outcome:
    """The outcome of an owned Application no longer in Git that this pass kept, and why: reason
    ``PruneBlocked`` when pruning is on and nothing chose to keep it (the pass's pruning was
    blocked), else ``PruneSkipped`` (``conditions``)."""
    why = "pruning is off (--no-prune)" if not p.opts.prune else "pruning was blocked this pass"
    reason = conditions.PRUNE_BLOCKED if p.opts.prune else conditions.PRUNE_SKIPPED
    if guards.prune_disabled(app):
        why = f"it has the annotation {labels.PRUNE_ANNOTATION}: {guards.PRUNE_DISABLED}"
        reason = conditions.PRUNE_SKIPPED
    if elsewhere := plan.wanted_elsewhere(app, p.opts.source_id):
        why, reason = _still_wanted(key, elsewhere), conditions.PRUNE_SKIPPED
    if key in p.holds:
        why = suspend.kept_because(p.holds[key])
    p.report.add(key, f"{KIND}/{key}", KEPT, f"not in Git; {why}")
    return suspend.outcome(p.holds.get(key), {}, {}, commit=p.report.commit, path=path, gone=True) \
        or status_.Outcome(False, False, p.report.commit, reason,
                           f"no longer in Git at commit {p.report.commit}; kept because {why}", path)


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


def _waiting(report: Report, live_by_key: dict[str, dict], git_paths: dict, source_id: str,
             retry: backoff.Policy, hits: dict | None = None) -> dict[str, backoff.Waiting]:
    """Applications this pass skips because they are backing off (``backoff.waiting``; only
    with ``retry.skip``), each reported as one skipped Application object with the reason
    (never as unchanged: it is still failing); another source's are not this pass's, nor
    ``hits`` (unchanged since a pass that synced them cleanly: not backing off)."""
    hits = hits or {}
    if not retry.skip:
        return {}
    now = datetime.datetime.now(datetime.timezone.utc)
    out = {}
    for key, app in live_by_key.items():
        if key in hits or (plan.owned(app) and not plan.owned(app, source_id)):  # a hit: synced cleanly
            continue
        from_git = key in git_paths or plan.owned(app, source_id)  # as the status write decides
        wait = backoff.waiting(app, report.commit if from_git else None, now)
        if wait is not None:
            out[key] = report.backing_off[key] = wait
            report.add(key, f"{KIND}/{key}", SKIPPED, wait.message())
            report.retry_at = backoff.earliest(report.retry_at, wait.next_retry)
    return out


def _still_wanted(key: str, elsewhere: list[tuple[str, str]]) -> str:
    """Why the Application ``key`` (``namespace/name``), gone from this source's Git, is kept:
    the other sources whose Git still has it (``plan.wanted_elsewhere``: ``(source id, file)``)
    and how to hand it over to the first of them."""
    namespace, _, name = key.partition("/")
    whose = ", ".join(f"source {other[:200]!r} ({path[:200]!r})" if path else f"source {other[:200]!r}"
                      for other, path in elsewhere[:3])
    return (f"{whose} still ha{'ve' if len(elsewhere) > 1 else 's'} it in Git; hand it over to "
            f"{'that source' if len(elsewhere) == 1 else 'one of them'}: "
            f"{plan.hand_over(namespace, name, elsewhere[0][0])}, or remove it from "
            f"{'that source' if len(elsewhere) == 1 else 'them'}")


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
