"""What ``get`` shows of an Application: one row of plain values per Application. Pure.

The row is the data of ``gitops-agent get`` (its table columns) and of the status page's list;
rendering (column widths, headers) is the caller's (``agent/cli/get_cmd.py``). Every value is
read from the Application object alone (its ``metadata``, ``spec`` and ``status``), so a row
needs no request besides the list. Fields another part of the agent may not have written yet
(``status.lastChangedCommit``, ``status.history``) read as None when absent.

A row (``row``) is a dict of strings or None (None: absent, shown as ``-``)::

    {"namespace": "shop", "name": "web",
     "health": "Healthy",            # status.health.status
     "ready": "True",                # the Ready condition's status; "Unknown" without one
     "reason": "Healthy",            # the Ready condition's reason
     "commit": "5f0c2e3d",           # status.lastSyncedCommit, first 8 characters
     "changed": "9a1b4c6d",          # status.lastChangedCommit, first 8 characters
     "suspended": "False",           # "True" while suspended (status.suspended or spec.suspend)
     "created": "2026-01-02T03:04:05Z",  # metadata.creationTimestamp
     "age": "4h",                    # kubectl's duration since created (``age``)
     "observed": "12m ago by sync --once",  # status.observedAt's age and status.observedBy (``observed``)
     "message": "all children healthy",  # the Ready condition's message, on one line
     "source": "apps/web.yaml",      # status.sourcePath (":LINE" added when status.sourceLine is set)
     "image": "nginx:1.27",          # spec.image
     "replicas": "2/3",              # status.readyReplicas / desired (spec.replicas, else status.replicas)
     "schedules": "2 (1 failed)",    # status.schedules: how many, and whose last run failed (``schedules``)
     "tasks": "1/2 done"}            # status.tasks: how many succeeded, or the failed one (``tasks``)
"""

from __future__ import annotations

import datetime

from agent.api.schema import TASK_PHASES
from agent.common import rfc3339

SHORT_SHA = 8
"""Characters of a commit SHA in a column (as ``git log --oneline`` abbreviates at least 7)."""

COLUMNS = ("name", "health", "ready", "reason", "commit", "changed", "suspended", "age", "observed", "message")
"""The row keys of the default table, in order (``-A`` puts ``namespace`` first)."""
WIDE = ("source", "image", "replicas", "schedules", "tasks")
"""The row keys ``-o wide`` adds, before ``message`` (the longest stays last)."""
HEADERS = {"namespace": "NAMESPACE", "name": "NAME", "health": "HEALTH", "ready": "READY", "reason": "REASON",
           "commit": "COMMIT", "changed": "CHANGED", "suspended": "SUSPENDED", "age": "AGE",
           "observed": "OBSERVED",
           "message": "MESSAGE", "source": "SOURCE", "image": "IMAGE", "replicas": "REPLICAS",
           "schedules": "SCHEDULES", "tasks": "TASKS"}


def age(seconds: float) -> str:
    """kubectl's AGE: apimachinery's ``duration.HumanDuration`` of ``seconds`` (a duration):
    ``<invalid>`` below -1 s (clock skew of more is an error), ``0s`` for -1 s to 0 s, then
    ``59s``, ``119s``, ``2m``, ``3m2s`` (below 10 minutes: minutes and seconds), ``10m`` to
    ``179m``, ``3h``, ``4h5m`` (below 8 hours), ``8h`` to ``47h``, ``2d``, ``2d3h`` (below 8
    days), ``8d`` to ``729d``, ``2y``, ``2y5d`` (below 8 years), ``8y``. Whole units, truncated."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        return _two(minutes, "m", whole % 60, "s")
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        return _two(hours, "h", minutes % 60, "m")
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return _two(hours // 24, "d", hours % 24, "h")
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        return _two(hours // 24 // 365, "y", (hours // 24) % 365, "d")
    return f"{hours // 24 // 365}y"


def _two(big: int, big_unit: str, small: int, small_unit: str) -> str:
    return f"{big}{big_unit}" if small == 0 else f"{big}{big_unit}{small}{small_unit}"


parse_time = rfc3339.parse


def age_since(timestamp, now: datetime.datetime) -> str:
    """``age`` from the RFC 3339 ``timestamp`` to ``now`` (aware); ``<unknown>`` when there is
    none, as kubectl prints it."""
    moment = parse_time(timestamp)
    return "<unknown>" if moment is None else age((now - moment).total_seconds())


def condition(app: dict, type_: str) -> dict:
    """The condition of ``type_`` in ``app``'s ``status.conditions``; ``{}`` when absent."""
    for item in (app.get("status") or {}).get("conditions") or []:
        if isinstance(item, dict) and item.get("type") == type_:
            return item
    return {}


def short(sha) -> str | None:
    """The first ``SHORT_SHA`` characters of a commit SHA; None when ``sha`` is not a non-empty string."""
    return sha[:SHORT_SHA] if isinstance(sha, str) and sha else None


def one_line(text) -> str | None:
    """``text`` with every run of white space (line breaks, tabs) made one blank, and other
    control characters shown escaped (``\\x1b``); None for an empty or missing text."""
    if not isinstance(text, str) or not text.strip():
        return None
    joined = " ".join(text.split())
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in joined)


def suspended(app: dict) -> bool:
    """True while ``app`` is suspended: ``status.suspended``, or ``spec.suspend`` (before a
    pass wrote the status)."""
    return bool((app.get("status") or {}).get("suspended") or (app.get("spec") or {}).get("suspend"))


def observed(app: dict, now: datetime.datetime) -> str | None:
    """When and by what the status was observed: ``12m ago by sync --once`` (``ago``)."""
    status = app.get("status") or {}
    return ago(status.get("observedAt"), status.get("observedBy"), now)


def ago(at, by, now: datetime.datetime) -> str | None:
    """``12m ago by sync --once``: the ``age`` of the RFC 3339 time ``at`` (``status.observedAt``)
    at ``now``, then ``by`` (``status.observedBy``; ``12m ago`` without it); None when ``at`` is
    not a time (a status written before the agent wrote ``observedAt``). The status is as of that
    time: a ``sync --once`` that ended with the pods still starting leaves it Progressing."""
    if not isinstance(at, str) or parse_time(at) is None:
        return None
    who = one_line(by)
    return f"{age_since(at, now)} ago" + (f" by {who}" if who else "")


def health_text(health, at, by, now: datetime.datetime) -> str | None:
    """The health ``health`` (``status.health.status``) with when and by what it was observed,
    for ``explain`` and the status page: ``Progressing, 12m ago, by sync --once`` (``ago`` of
    ``at`` and ``by``); the health alone without a time; None without a health."""
    state = one_line(health)
    if state is None:
        return None
    when = ago(at, by, now)
    return state if when is None else f"{state}, " + when.replace(" ago by ", " ago, by ", 1)


def source(app: dict) -> str | None:
    """``status.sourcePath``, with ``:LINE`` when ``status.sourceLine`` is set; None without a path."""
    status = app.get("status") or {}
    path = status.get("sourcePath")
    if not isinstance(path, str) or not path:
        return None
    line = status.get("sourceLine")
    return f"{path}:{line}" if isinstance(line, int) and not isinstance(line, bool) else path


def replicas(app: dict) -> str | None:
    """``READY/DESIRED`` pods: ``status.readyReplicas`` (0 when absent) of ``spec.replicas``,
    else ``status.replicas``; None when neither is known."""
    spec, status = app.get("spec") or {}, app.get("status") or {}
    desired = spec.get("replicas") if isinstance(spec.get("replicas"), int) else status.get("replicas")
    if not isinstance(desired, int):
        return None
    return f"{status.get('readyReplicas') or 0}/{desired}"


def last_run_failed(schedule: dict) -> bool:
    """True when the entry ``schedule`` of ``status.schedules`` says its last finished run failed:
    a ``lastFailure`` later than its ``lastSuccessfulTime`` (or with none)."""
    failure = schedule.get("lastFailure") if isinstance(schedule.get("lastFailure"), dict) else None
    if failure is None:
        return False
    failed, succeeded = parse_time(failure.get("time")), parse_time(schedule.get("lastSuccessfulTime"))
    return succeeded is None or (failed is not None and failed > succeeded)


def schedules(app: dict) -> str | None:
    """How many schedules ``status.schedules`` lists, and how many of them last failed
    (``last_run_failed``): ``2``, ``2 (1 failed)``; None without any."""
    found = [s for s in (app.get("status") or {}).get("schedules") or [] if isinstance(s, dict)]
    if not found:
        return None
    failed = sum(last_run_failed(s) for s in found)
    return f"{len(found)} ({failed} failed)" if failed else str(len(found))


_SUCCEEDED, _FAILED = TASK_PHASES[2], TASK_PHASES[3]


def tasks(app: dict) -> str | None:
    """What ``status.tasks`` says of the Application's tasks, short: ``NAME failed`` for the first
    task whose run failed (``+N`` more failed ones: ``migrate failed +1``), else ``DONE/ALL
    done`` (``1/2 done``: how many runs of the current content ``Succeeded``); None without any."""
    found = [e for e in (app.get("status") or {}).get("tasks") or [] if isinstance(e, dict)]
    if not found:
        return None
    failed = [str(e.get("name")) for e in found if e.get("phase") == _FAILED]
    if failed:
        return f"{failed[0]} failed" + (f" +{len(failed) - 1}" if len(failed) > 1 else "")
    return f"{sum(e.get('phase') == _SUCCEEDED for e in found)}/{len(found)} done"


def row(app: dict, now: datetime.datetime) -> dict:
    """The row of ``app`` (an Application as the API serves it) at ``now`` (aware); see the
    module docstring for the keys."""
    meta, spec, status = app.get("metadata") or {}, app.get("spec") or {}, app.get("status") or {}
    ready = condition(app, "Ready")
    health = status.get("health") if isinstance(status.get("health"), dict) else {}
    return {
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "health": health.get("status"),
        "ready": ready.get("status") or "Unknown",
        "reason": ready.get("reason"),
        "commit": short(status.get("lastSyncedCommit")),
        "changed": short(status.get("lastChangedCommit")),
        "suspended": "True" if suspended(app) else "False",
        "created": meta.get("creationTimestamp"),
        "age": age_since(meta.get("creationTimestamp"), now),
        "observed": observed(app, now),
        "message": one_line(ready.get("message")),
        "source": source(app),
        "image": spec.get("image") if isinstance(spec.get("image"), str) else None,
        "replicas": replicas(app),
        "schedules": schedules(app),
        "tasks": tasks(app),
    }


def columns(wide: bool, all_namespaces: bool) -> tuple[str, ...]:
    """The row keys a table shows, in order: ``COLUMNS``, with ``WIDE`` before ``message`` when
    ``wide``, and ``namespace`` first when ``all_namespaces``."""
    return (("namespace",) if all_namespaces else ()) + COLUMNS[:-1] + (WIDE if wide else ()) + COLUMNS[-1:]


def table(rows: list[dict], keys: tuple[str, ...], headers: bool = True) -> list[str]:
    """The lines of a kubectl-style table of ``rows`` showing ``keys``: columns left-aligned,
    three blanks apart, the last one not padded, None shown as ``-``; a header line of
    ``HEADERS`` first when ``headers``. No line for no rows and no headers."""
    cells = [[HEADERS[k] for k in keys]] if headers else []
    cells += [["-" if r.get(k) is None else str(r[k]) for k in keys] for r in rows]
    if not cells:
        return []
    widths = [max(len(line[i]) for line in cells) for i in range(len(keys))]
    return ["   ".join([c.ljust(w) for c, w in zip(line[:-1], widths)] + [line[-1]]) for line in cells]
