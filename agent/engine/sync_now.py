"""Sync now: the ``heumsi.github.io/reconcile-requested-at`` annotation and its record. Pure.

Follows Flux's ``reconcile.fluxcd.io/requestedAt`` pattern (``fluxcd/pkg/apis/meta``
``ReconcileRequestStatus``): a person or a tool sets the annotation on a live Application to any
token (``python -m agent reconcile`` sets the current time); the running agent sees the change
(the annotation differs from ``status.lastHandledReconcileAt``), runs a pass that asks Git, and
that pass copies the token, as given, to ``status.lastHandledReconcileAt``. A waiting client
compares the two strings, so clock skew never matters. The status field is written whether the
pass synced the Application or failed for it: the request was handled either way.

The annotation is set by its own field manager (``FIELD_MANAGER``), never by the agent's apply,
and lies outside the subtrees the agent takes over (``fields.AUTHORITATIVE``), so Git's apply
never removes it.
"""

from __future__ import annotations

import datetime
import time

from agent.api.labels import RECONCILE_REQUESTED_AT
from agent.api.objects import Obj

STATUS_FIELD = "lastHandledReconcileAt"
"""Status field holding the token of the newest request a pass handled."""
FIELD_MANAGER = "gitops-agent-reconcile"
"""Field manager of ``python -m agent reconcile``'s patch (never the agent's ``gitops-agent``,
so the agent's server-side apply never owns the annotation). Flux's CLI uses its own
``flux-client-side-apply`` the same way."""


def token(app: Obj) -> str | None:
    """The request token on ``app`` (a live Application dict): the annotation's value when it
    is a non-empty string, else None."""
    value = ((app.get("metadata") or {}).get("annotations") or {}).get(RECONCILE_REQUESTED_AT)
    return value if isinstance(value, str) and value else None


def handled(app: Obj) -> str | None:
    """The token the last pass recorded in ``status.lastHandledReconcileAt``, or None."""
    value = (app.get("status") or {}).get(STATUS_FIELD)
    return value if isinstance(value, str) else None


def pending(app: Obj) -> bool:
    """True when ``app`` carries a request no pass has handled yet: a token that differs from
    ``status.lastHandledReconcileAt`` (Flux's rule: any change of the value is a new request)."""
    requested = token(app)
    return requested is not None and requested != handled(app)


def status_fields(app: Obj) -> Obj:
    """What a status write for ``app`` records: ``{"lastHandledReconcileAt": token}`` with the
    annotation's token when there is one, else the previously recorded token (a removed
    annotation does not erase the record, as in Flux), else ``{}``."""
    value = token(app) or handled(app)
    return {STATUS_FIELD: value} if value else {}


def new_token(now_ns: int | None = None) -> str:
    """A request token: the time as RFC 3339 in UTC with nanoseconds, as ``flux reconcile``
    sets it (Go's ``time.RFC3339Nano``, here always with nine digits), e.g.
    ``2026-12-01T10:00:00.123456789Z``. ``now_ns``: nanoseconds since the epoch (default: now)."""
    ns = time.time_ns() if now_ns is None else now_ns
    seconds, nanos = divmod(ns, 1_000_000_000)
    stamp = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{nanos:09d}Z"
