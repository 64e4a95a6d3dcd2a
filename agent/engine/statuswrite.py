"""Writing one Application's status at the end of a pass.

Why a module of its own: the status is the one thing every Application gets every pass, and its
write has rules plain PATCH does not give: the full new status is ``status.compute`` plus the
sync-now (``sync_now``) and backoff (``backoff``) fields; a status that would not move sends
nothing (and is checked outside the write pool); the write goes through the status subresource
as a JSON merge patch, and a write whose read-back does not hold the value is an error naming the
CRD, not a success (Kubernetes API conventions; a CRD without the subresource or with a pruning
schema drops fields silently).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping

from agent.api.schema import GROUP, KIND, PLURAL
from agent.engine import backoff, status as status_, suspend, sync_now
from agent.engine.report import FAILED, Report
from agent.kube.client import ApiError, Kube

CRD_NAME = f"{PLURAL}.{GROUP}"


def now() -> str:
    """The current UTC time as RFC 3339 with seconds, e.g. ``2026-12-01T10:00:00Z``."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_status(app: dict, outcome: status_.Outcome, children: Mapping[str, dict | None],
               failed: bool, retry: backoff.Policy) -> dict:
    """The status ``write`` would store: ``status.compute`` plus the sync-now and
    backoff fields (see their modules)."""
    new = status_.compute(app, outcome, children, now())
    new.update(sync_now.status_fields(app))  # the request is handled, whatever the outcome
    new.update(backoff.status_fields(app, outcome.commit, failed, datetime.datetime.now(datetime.timezone.utc), retry))
    return new


def moves(app: dict, outcome: status_.Outcome, children: Mapping[str, dict | None], failed: bool, *,
          retry: backoff.Policy) -> bool:
    """True when ``write`` would send a write (the stored status differs); a status
    that does not move is checked, and skipped, without the pool (``writes.ordered``)."""
    return status_.differs(app.get("status"), new_status(app, outcome, children, failed, retry))


def write(kube: Kube, report: Report, key: str, app: dict, outcome: status_.Outcome,
          children: Mapping[str, dict | None], *, failed: bool = False,
          retry: backoff.Policy = backoff.ONE_SHOT) -> str | None:
    """Write the Application's new status when it differs from the stored one (``children``:
    its live children by kind, as ``status.compute`` reads them); returns the
    status's ``nextRetryTime`` (RFC 3339, None when not backing off) for the runner's retry
    pass. ``report`` may be a ``writes.Scratch`` (status writes run in the pool)."""
    new = new_status(app, outcome, children, failed, retry)
    next_retry = new.get(backoff.NEXT_RETRY)
    if not status_.differs(app.get("status"), new):
        return next_retry
    old = app.get("status") or {}
    patch = {**{k: None for k in old if k not in new}, **new}  # merge patch: null removes a field
    try:
        stored = kube.patch_status(app, patch)
    except ApiError as err:
        if err.status == 404:
            return next_retry
        report.add(key, f"{KIND}/{key}", FAILED, f"status write failed: {err}")
        return next_retry
    if stored is None or stored.get("status") != new:
        lost = sorted(k for k in new if ((stored or {}).get("status") or {}).get(k) != new[k])
        report.add(key, f"{KIND}/{key}", FAILED,
                   f"the API server accepted the status write but did not store {', '.join(lost) or 'it'}: "
                   f"the CustomResourceDefinition {CRD_NAME} in the cluster has no status subresource or "
                   "a schema that prunes these fields; apply this project's crd.yaml "
                   "(kubectl apply -f crd.yaml)")
        return next_retry
    if not outcome.ok and (app.get("status") or {}).get("conditions") != new["conditions"]:
        kube.event(app, "Normal" if outcome.reason == suspend.SUSPENDED else "Warning", outcome.reason, outcome.message)
    return next_retry
