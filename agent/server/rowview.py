"""A stand-in for ``agent.engine.appview`` (``gitops-agent get``'s rows, built on the branch
``cmds``) until it is merged: the same row keys and values, from the Application object alone.
Replaced by an import of ``appview`` once it is on this branch. Pure.

Row: {"namespace", "name", "health" (status.health.status), "ready" (the Ready condition's
status, "Unknown" without one), "reason", "commit" and "changed" (status.lastSyncedCommit and
lastChangedCommit, 8 characters), "suspended" ("True"/"False"), "created" (RFC 3339), "age"
(kubectl's), "message" (one line), "source" (status.sourcePath[:line]), "image", "replicas"
("ready/desired")}; None for absent values.
"""

from __future__ import annotations

import datetime

SHORT_SHA = 8


def condition(app: dict, type_: str) -> dict:
    """The condition of ``type_`` in ``status.conditions``; ``{}`` when absent."""
    for item in (app.get("status") or {}).get("conditions") or []:
        if isinstance(item, dict) and item.get("type") == type_:
            return item
    return {}


def age(seconds: float) -> str:
    """kubectl's AGE (apimachinery's HumanDuration), whole units."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 120:
        return f"{max(s, 0)}s"
    m, h, d = s // 60, s // 3600, s // 86400
    if m < 10:
        return f"{m}m" if s % 60 == 0 else f"{m}m{s % 60}s"
    if m < 180:
        return f"{m}m"
    if h < 8:
        return f"{h}h" if m % 60 == 0 else f"{h}h{m % 60}m"
    if h < 48:
        return f"{h}h"
    if h < 192:
        return f"{d}d" if h % 24 == 0 else f"{d}d{h % 24}h"
    if d < 730:
        return f"{d}d"
    y = d // 365
    return f"{y}y" if y >= 8 or d % 365 == 0 else f"{y}y{d % 365}d"


def age_since(timestamp, now: datetime.datetime) -> str:
    try:
        moment = datetime.datetime.fromisoformat(str(timestamp).replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    return age((now - moment).total_seconds()) if moment.tzinfo else "<unknown>"


def _short(sha) -> str | None:
    return sha[:SHORT_SHA] if isinstance(sha, str) and sha else None


def _one_line(text) -> str | None:
    if not isinstance(text, str) or not text.strip():
        return None
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in " ".join(text.split()))


def row(app: dict, now: datetime.datetime) -> dict:
    """The row of ``app`` at ``now`` (aware); see the module docstring."""
    meta, spec, status = app.get("metadata") or {}, app.get("spec") or {}, app.get("status") or {}
    ready = condition(app, "Ready")
    health = status.get("health") if isinstance(status.get("health"), dict) else {}
    desired = spec.get("replicas") if isinstance(spec.get("replicas"), int) else status.get("replicas")
    path, line = status.get("sourcePath"), status.get("sourceLine")
    return {
        "namespace": meta.get("namespace"), "name": meta.get("name"), "health": health.get("status"),
        "ready": ready.get("status") or "Unknown", "reason": ready.get("reason"),
        "commit": _short(status.get("lastSyncedCommit")), "changed": _short(status.get("lastChangedCommit")),
        "suspended": "True" if status.get("suspended") or spec.get("suspend") else "False",
        "created": meta.get("creationTimestamp"), "age": age_since(meta.get("creationTimestamp"), now),
        "message": _one_line(ready.get("message")),
        "source": (f"{path}:{line}" if isinstance(line, int) else path) if isinstance(path, str) and path else None,
        "image": spec.get("image") if isinstance(spec.get("image"), str) else None,
        "replicas": f"{status.get('readyReplicas') or 0}/{desired}" if isinstance(desired, int) else None,
    }
