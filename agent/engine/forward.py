"""Stage 4b of a pass: commits only move forward (issue 46). A pass never takes the cluster back
from a commit another writer of the same source (CI's ``sync --once``, a second replica of
``run``) already applied, unless the ref itself went back.

Each Application records the last commit a writer tried to apply to it (``recorded``): its status
(``lastAttemptedCommit``, else ``lastSyncedCommit``) and, while the status is behind the spec
(``metadata.generation`` is not ``status.observedGeneration``: another writer's pass between its
apply and its status write) or absent, the ``labels.SOURCE_COMMIT`` annotation that apply set.
When one of this source's Applications records another commit ``S`` than this pass's ``C``, and
the pass does not know it stands at the ref (it did not just resolve ``C`` from a branch: a CI
checkout, ``--ref SHA``, ``run``'s pass on a watch event) or ``S`` is not behind ``C``, the pass
looks where the ref points now (``ancestry.tip``: ``git ls-remote``, for a checkout its
``origin``'s ref, for a SHA the remote's ``HEAD``), at ``T``:

- ``T`` is ``C``: the pass goes on (a deliberate rollback is a ref moved back: applied);
- ``C`` and ``S`` are both on the branch (behind or at ``T``), and ``C`` is behind ``S``: the pass
  would take the cluster back. It changes nothing at all (no apply, create, prune or status) and
  says so; ``run`` passes again at once, online, at the ref;
- not known (the remote did not answer): the same (fail closed: never back on a doubt);
- ``C`` off the branch in ``run``'s pass at its remembered commit (the branch was reset since):
  the same, the online pass decides;
- else the pass goes on: ``C`` off the branch is a commit asked for by itself (``--ref`` of a pull
  request's commit, a deleted branch's), ``S`` off the branch a preview of another commit.

Why the whole pass: an Application a newer commit added would be pruned, and one it pruned
created again, by a pass of an older commit (a CI pipeline run again, ``run`` behind CI).
Not in a dry run: ``diff`` of a pull request's commit (off the branch) shows what it would change.

Cost: nothing while every Application records ``C`` (``run``'s steady state); else one
``git merge-base`` per distinct ``S`` and, when one may be ahead, one ``git ls-remote``.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from agent.api.labels import SOURCE_COMMIT
from agent.api.objects import Obj
from agent.engine.passvalues import Pass
from agent.source import ancestry, mirror, origin


@dataclass(frozen=True)
class Stale:
    """A pass that would take the cluster back: its ``commit``, the ``recorded`` commit (full SHAs)
    an Application of the source has, where the ref is (``tip``; None: not known, ``why``)."""

    commit: str
    recorded: str
    tip: str | None
    why: str = ""

    def message(self) -> str:
        """The report's note, e.g. ``nothing applied: the ref is at 1a2b..., and this pass's
        commit 0f9e... would take the cluster back from 1a2b... (another writer applied it)``."""
        where = f"the ref is at {self.tip[:12]}" if self.tip else f"where the ref points is not known ({self.why})"
        return (f"nothing applied: {where}, and this pass's commit {self.commit[:12]} would take the cluster back "
                f"from {self.recorded[:12]}, which another writer applied")


def recorded(app: Obj) -> tuple[str, ...]:
    """The commits (full SHAs, none to two) a writer last tried to apply to the live Application
    ``app`` (module docstring). The annotation alone is not enough: a commit that leaves an
    Application's content as it was does not apply it again (``plan.PROVENANCE``), so it often
    names an older commit than the status. The status alone is not either: between another
    writer's apply and its status write, only the annotation and the spec have moved."""
    status, meta = app.get("status") or {}, app.get("metadata") or {}
    attempted, synced = status.get("lastAttemptedCommit"), status.get("lastSyncedCommit")
    sha = attempted if isinstance(attempted, str) and attempted else \
        synced if isinstance(synced, str) and synced else ""
    if sha and meta.get("generation") == status.get("observedGeneration"):  # the steady state
        return (sha,)
    note = (meta.get("annotations") or {}).get(SOURCE_COMMIT)
    note = note if isinstance(note, str) and note != sha else ""
    return tuple(found for found in (sha, note) if found)


def _fresh(p: Pass) -> bool:
    """True when the pass just resolved its commit from the ref: a branch, asked now, of a URL or
    of a path with no ``origin`` (a checkout's ref is its ``origin``'s)."""
    ref, repo = p.opts.ref, p.opts.repo
    return p.report.source_seen and not (ref and ancestry.SHA.match(ref)) \
        and not (origin.is_local_path(repo) and origin.origin_url(repo))


def stale(p: Pass, owned: list[tuple[str, ...]]) -> Stale | None:
    """The ``Stale`` verdict of this pass over ``owned``, the ``recorded`` commits of each live
    Application this source owns (``AppFacts.recorded``: derived once per object in ``run``, not
    per pass), None when it goes on (module docstring). In ``run`` (``p.steady``) a pass at once
    is asked for."""
    commit, opts = p.report.commit, p.opts
    if not commit or p.kube.dry_run:  # diff and --dry-run show what this commit would change
        return None
    shas = {sha for commits in owned for sha in commits if sha != commit}
    if not shas:
        return None
    here = mirror.cache_path(opts.cache_dir, opts.repo, opts.credentials)
    fresh = _fresh(p)
    maybe = sorted(sha for sha in shas if not fresh or not ancestry.is_ancestor(here, sha, commit))
    if not maybe:
        return None
    try:
        now = ancestry.tip(opts.repo, opts.ref, opts.cache_dir, commit, opts.fetch_timeout,
                           credentials=opts.credentials)
    except mirror.SourceError as err:
        return _asked(p, Stale(commit, maybe[0], None, str(err)))
    if now.commit == commit:
        return None
    if not ancestry.is_ancestor(now.where, commit, now.commit):
        if p.steady is not None and not p.report.source_seen:  # run's remembered commit, since left behind
            return _asked(p, Stale(commit, sorted(shas)[0], now.commit))
        return None  # a commit off the branch (--ref of a pull request's or a deleted branch's commit): as asked
    for sha in maybe:
        if ancestry.is_ancestor(now.where, sha, now.commit) and not ancestry.is_ancestor(now.where, sha, commit):
            return _asked(p, Stale(commit, sha, now.commit))
    return None


def _asked(p: Pass, found: Stale) -> Stale:
    """``found``, with a pass at once asked for in ``run``."""
    if p.steady is not None:
        soon = datetime.datetime.now(datetime.timezone.utc)
        p.report.retry_at = soon if p.report.retry_at is None else min(p.report.retry_at, soon)
    return found
