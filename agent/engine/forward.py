"""Stage 4b of a pass: commits only move forward (issue 46). A pass never takes an Application
back to an older commit than the one another writer of the same source (CI's ``sync --once``,
a second replica of ``run``) already applied to it, unless the ref itself went back.

The rule, per Application from Git whose live copy this source holds and records another commit
``S`` (``labels.SOURCE_COMMIT``) than this pass's ``C``:

1. ``S`` is an ancestor of ``C`` (the usual case: Git moved on) and the pass has just asked the
   remote where the ref points (``Report.source_seen``): applied.
2. Else (``S`` is newer, on another line, or not known here; or ``run``'s pass on a watch event,
   which did not ask: the ref may have gone back since) the pass looks where the ref points
   now (``ancestry.tip``: ``git ls-remote``, and a fetch when it moved; for a local checkout,
   its ``origin``'s ref):

   - at ``C``: applied (the ref is here; after a reset and force-push, a deliberate rollback);
   - at ``S`` or past it: left as it is, and the report says so (not a failure). ``run`` passes
     again at once, online, and so applies the newer commit;
   - elsewhere: ``run`` leaves it and passes again at once (that pass decides at the new tip);
     ``sync --once`` applies ``C``, as asked;
   - not known (the remote did not answer): left as it is (fail closed: never back on a doubt).

Cost: nothing while every live Application records ``C``; one ``git merge-base`` per distinct
``S`` (after a new commit: one); one ``git ls-remote`` only when an ``S`` is not behind ``C``, or
in a pass that did not ask the remote.
"""

from __future__ import annotations

import datetime

from agent.api.labels import SOURCE_COMMIT
from agent.api.objects import Obj
from agent.engine import plan
from agent.engine.passvalues import Kept, Pass
from agent.source import ancestry, mirror


def _recorded(p: Pass, live_by_key: dict[str, Obj]) -> dict[str, list[str]]:
    """Commit -> the keys of the Applications from Git whose live copy this source holds and
    records that commit, other than this pass's."""
    out: dict[str, list[str]] = {}
    for key in p.git.paths:
        live = live_by_key.get(key)
        if live is None or not plan.owned(live, p.opts.source_id):
            continue
        sha = (live["metadata"].get("annotations") or {}).get(SOURCE_COMMIT)
        if isinstance(sha, str) and sha and sha != p.report.commit:
            out.setdefault(sha, []).append(key)
    return out


def kept(p: Pass, live_by_key: dict[str, Obj]) -> dict[str, Kept]:
    """Key -> ``Kept`` of each Application this pass leaves as it is (module docstring). In
    ``run`` (``p.steady``) a pass right away is asked for (``report.retry_at``) when the ref moved."""
    commit, opts = p.report.commit, p.opts
    if not commit:
        return {}
    recorded = _recorded(p, live_by_key)
    if not recorded:
        return {}
    here = mirror.cache_path(opts.cache_dir, opts.repo, opts.credentials)
    # a pass that did not ask the remote (run's passes on a watch event) may be behind the ref
    ahead = [sha for sha in recorded if not p.report.source_seen or not ancestry.is_ancestor(here, sha, commit)]
    if not ahead:
        return {}
    try:
        now = ancestry.tip(opts.repo, opts.ref, opts.cache_dir, commit, opts.fetch_timeout,
                           credentials=opts.credentials)
    except mirror.SourceError as err:
        return {key: Kept(sha, commit, None, str(err)) for sha in ahead for key in recorded[sha]}
    if now.commit == commit:
        return {}  # the ref is at this pass's commit: applied
    out: dict[str, Kept] = {}
    for sha in ahead:
        if p.steady is not None or ancestry.is_ancestor(now.where, sha, now.commit):
            out.update({key: Kept(sha, commit, now.commit) for key in recorded[sha]})
    if out and p.steady is not None:
        soon = datetime.datetime.now(datetime.timezone.utc)
        p.report.retry_at = soon if p.report.retry_at is None else min(p.report.retry_at, soon)
    return out
