"""Writing one Application's status at the end of a pass.

Why a module of its own: the status is the one thing every Application gets every pass, and its
write has rules plain PATCH does not give: the full new status is ``status.compute`` plus the
sync-now (``sync_now``) and backoff (``backoff``) fields; a status that would not move sends
nothing (and is checked outside the write pool); the write goes through the status subresource
as a JSON merge patch, and a write whose read-back does not hold the value is an error naming the
fields dropped and the CRD, not a success (Kubernetes API conventions; a CRD whose status schema
lacks fields drops them silently: ``not_stored``).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from agent.api.objects import Obj
from agent.api.schema import GROUP, KIND, PLURAL
from agent.engine import backoff, conditions as conditions_, news as news_, status as status_, suspend, sync_now
from agent.engine.report import FAILED, Report
from agent.kube.cluster import ApiError, Cluster

CRD_NAME = f"{PLURAL}.{GROUP}"


def now() -> str:
    """The current UTC time as RFC 3339 with seconds, e.g. ``2026-12-01T10:00:00Z``."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_status(app: Obj, outcome: status_.Outcome, children: Mapping[str, Obj | None],
               failed: bool, retry: backoff.Policy, by: str = status_.SYNC_ONCE) -> Obj:
    """The status ``write`` would store: ``status.compute`` plus the sync-now and
    backoff fields (see their modules), then ``observedAt``/``observedBy`` (``status.observed``;
    ``by``: the command whose pass this is, ``reconcile`` when this write handles a new
    sync-now request, ``observer``)."""
    stamp = now()
    new = status_.compute(app, outcome, children, stamp)
    new.update(sync_now.status_fields(app))  # the request is handled, whatever the outcome
    new.update(backoff.status_fields(app, outcome.commit, failed, datetime.datetime.now(datetime.timezone.utc), retry))
    return status_.observed(app.get("status"), new, stamp, observer(app, by))


def observer(app: Obj, by: str) -> str:
    """``observedBy`` for a pass of the command ``by`` that writes ``app``'s status:
    ``reconcile`` when it is a pass of ``run`` and the Application carries a sync-now request its
    status has not recorded as handled (``sync_now``: this pass handles it, the pass
    ``python -m agent reconcile`` asked for), else ``by`` (a ``sync --once`` that handles a
    request is still ``sync --once``)."""
    token = sync_now.token(app)
    return status_.RECONCILE if by == status_.RUN and token and token != sync_now.handled(app) else by


def moves(app: Obj, outcome: status_.Outcome, children: Mapping[str, Obj | None], failed: bool, *,
          retry: backoff.Policy, by: str = status_.SYNC_ONCE) -> bool:
    """True when ``write`` would send a write (the stored status differs); a status
    that does not move is checked, and skipped, without the pool (``writes.ordered``)."""
    return status_.differs(app.get("status"), new_status(app, outcome, children, failed, retry, by))


def dropped(sent: Any, stored: Any, path: str = "status") -> list[str]:
    """Dotted paths of the fields in ``sent`` (a status, or part of one) that ``stored`` (what the
    API server gave back) lacks, e.g. ``status.health``, ``status.conditions[].observedGeneration``
    (a list's items share one path); each once, in ``sent``'s order. Pure."""
    out: list[str] = []
    if isinstance(sent, dict):
        for k, value in sent.items():
            if not isinstance(stored, dict) or k not in stored:
                out.append(f"{path}.{k}")
            else:
                out += dropped(value, stored[k], f"{path}.{k}")
    elif isinstance(sent, list) and isinstance(stored, list):
        for item, kept in zip(sent, stored):
            out += dropped(item, kept, f"{path}[]")
    return list(dict.fromkeys(out))


def not_stored(sent: Obj, stored: Obj | None) -> str:
    """Why a status write the API server accepted did not stick, for the report: the fields it
    dropped (``dropped``) and the cause. The status subresource exists (the pass checked it
    first), so a dropped field is one the CRD's status schema does not name: the API server
    prunes unknown fields of a structural schema without ``x-kubernetes-preserve-unknown-fields``
    (Kubernetes "Field pruning"), i.e. the CRD in the cluster is older than this agent's."""
    gone = dropped(sent, stored or {})
    which = "this field, so the API server prunes it" if len(gone) == 1 else "these fields, so the API server prunes them"
    if not gone:  # stored, but with other values (another writer, a defaulting webhook)
        changed = sorted(k for k in sent if (stored or {}).get(k) != sent[k])
        return (f"the API server accepted the status write but stored other values for "
                f"{', '.join(f'status.{k}' for k in changed) or 'status'} than were sent")
    return (f"the API server accepted the status write but dropped {', '.join(gone)}: the CustomResourceDefinition "
            f"{CRD_NAME} in the cluster is older than this agent's crd.yaml (its status schema lacks {which}); "
            "apply this agent's crd.yaml (kubectl apply -f crd.yaml)")


def write(kube: Cluster, report: Report, key: str, app: Obj, outcome: status_.Outcome,
          children: Mapping[str, Obj | None], *, failed: bool = False,
          retry: backoff.Policy = backoff.ONE_SHOT, by: str = status_.SYNC_ONCE) -> str | None:
    """Write the Application's new status when it differs from the stored one (``children``:
    its live children by kind, as ``status.compute`` reads them); returns the
    status's ``nextRetryTime`` (RFC 3339, None when not backing off) for the runner's retry
    pass. ``report`` may be a ``writes.Scratch`` (status writes run in the pool). ``by``: the
    command whose pass this is (``observedBy``, see ``new_status``).
    Records in ``report.readiness`` the ``Ready`` condition of an Application from Git
    (``outcome.commit`` set) and in ``report.attributed`` the commit its outcome is about, and,
    once the write is stored, its ``news.news`` in ``report.notices`` (the status is the record
    of what was told: issue 32) and the commit whose rollout it ended undecided in
    ``report.replaced`` (``news.replaced``). A refusal is a failure of the Application; a gone
    Application is nothing; an unreachable API server (``ApiError`` status 0) re-raises, so the
    pass stops before it prunes."""
    new = new_status(app, outcome, children, failed, retry, by)
    next_retry = new.get(backoff.NEXT_RETRY)
    if outcome.commit:
        ready: Obj = next((c for c in new["conditions"] if c["type"] == status_.READY), {})
        report.readiness[key] = (ready.get("status", "False"), ready.get("reason", ""))
        if commit := news_.about(new):
            report.attributed[key] = commit
    if not status_.differs(app.get("status"), new):
        return next_retry
    old = app.get("status") or {}
    patch = {**{k: None for k in old if k not in new}, **new}  # merge patch: null removes a field
    try:
        stored = kube.patch_status(app, patch)
    except ApiError as err:
        if err.status == 0:  # unreachable: the pass stops and prunes nothing (writes.py)
            raise
        if err.status == 404:
            return next_retry
        report.add(key, f"{KIND}/{key}", FAILED, f"status write failed: {err}")
        return next_retry
    if stored is None or stored.get("status") != new:
        report.add(key, f"{KIND}/{key}", FAILED, not_stored(new, (stored or {}).get("status")))
        return next_retry
    meta = app["metadata"]
    if gone := news_.replaced(app.get("status"), new):
        report.replaced.add(gone)
    report.notices += news_.news(app.get("status"), new, namespace=meta.get("namespace", ""), name=meta["name"],
                                 uid=meta.get("uid", ""), changed=outcome.changed)
    for message in news_.failed_runs(app.get("status") or {}, new):  # a failed scheduled run: told, not Degraded
        kube.event(app, "Warning", news_.NoticeReason.SCHEDULE_FAILED, message)
    if not outcome.ok and (app.get("status") or {}).get("conditions") != new["conditions"]:
        normal = outcome.reason in (suspend.SUSPENDED, conditions_.Reason.TASK_RUNNING)  # a state, not a fault
        kube.event(app, "Normal" if normal else "Warning", outcome.reason, outcome.message)
    return next_retry


def write_source_unavailable(kube: Cluster, report: Report, key: str, app: Obj, reason: str, message: str) -> bool:
    """Record on the Application ``app`` (``key``: ``namespace/name``) that its source could not
    be fetched or read: its conditions with ``SourceAvailable`` False (``reason``, ``message``:
    the redacted error; ``conditions.source_conditions``), written through the status
    subresource like ``write`` (a merge patch: the list replaces the stored one whole) and read
    back. Nothing is sent when the stored condition already says the same. Returns True when a
    write was sent and stored. A refusal or a dropped field is a note of the pass (the pass
    already failed for its source); a gone Application is nothing; an unreachable API server
    (status 0) re-raises."""
    old = (app.get("status") or {}).get("conditions") or []
    new = conditions_.source_conditions(old, reason, message, app["metadata"].get("generation", 0), now())
    if new is None:
        return False
    try:
        stored = kube.patch_status(app, {"conditions": new})
    except ApiError as err:
        if err.status == 0:
            raise
        if err.status != 404:
            report.notes.append(f"{KIND}/{key}: could not record that its source is unavailable: {err}")
        return False
    if stored is None or (stored.get("status") or {}).get("conditions") != new:
        report.notes.append(f"{KIND}/{key}: {not_stored({'conditions': new}, (stored or {}).get('status'))}")
        return False
    return True
