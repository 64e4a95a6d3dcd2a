"""What the status page says of one Application: ``explain``'s answer as a plain dict. Pure.

A stand-in for the branch ``cmds``'s ``explain -o json`` data until it is merged, with its parts:
a one-line verdict, the Git source, the synced and the last changing commit (author, date,
subject, web link), the diff of that change for the Application's file, each child's health,
the pods that are not ready with their waiting or terminated reason (or why they are not
scheduled), the conditions and the history. Everything comes from what ``run`` holds: the
Application and its children and pods from the watch cache, commits from its Git mirror.
"""

from __future__ import annotations

import datetime

from agent.kinds import registry
from agent.server import gitinfo, views


def verdict(app: dict, row: dict) -> str:
    """One line: Suspended | In backoff until T | Not in Git | <sync reason>: why | Degraded: why |
    Progressing: why | Missing: why | Synced and healthy | Not synced yet."""
    status = app.get("status") or {}
    synced = views.appview.condition(app, "Synced")
    health = status.get("health") if isinstance(status.get("health"), dict) else {}
    if row["suspended"] == "True":
        return "Suspended"
    if status.get("nextRetryTime"):
        return f"In backoff until {status['nextRetryTime']}: {synced.get('message') or ''}".rstrip(": ")
    if synced.get("status") == "False":
        if synced.get("reason") == "PruneSkipped":
            return f"Not in Git: {synced.get('message') or ''}".rstrip(": ")
        return f"{synced.get('reason') or 'Not synced'}: {synced.get('message') or ''}".rstrip(": ")
    if health.get("status") in ("Degraded", "Progressing", "Missing"):
        return f"{health['status']}: {health.get('message') or ''}".rstrip(": ")
    if synced.get("status") == "True" and health.get("status") == "Healthy":
        return "Synced and healthy"
    return "Not synced yet"


def child(obj: dict | None, kind: str, name: str) -> dict:
    """{kind, name, health, message} of one child (None: missing), by its kind's health rule."""
    rule = registry.BY_KIND.get(kind)
    health = rule.health(obj) if rule is not None else None
    return {"kind": kind, "name": name, "health": health.status if health else ("Healthy" if obj else "Missing"),
            "message": health.message if health else ""}


def pod(obj: dict) -> dict:
    """{name, phase, ready, reason, message} of a pod: the first container's waiting or terminated
    reason, else an unmet PodScheduled or Ready condition's."""
    status = obj.get("status") or {}
    reason = message = ""
    for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        state = cs.get("state") or {}
        last = (cs.get("lastState") or {}).get("terminated") or {}
        for word in ("waiting", "terminated"):
            if state.get(word) and state[word].get("reason") not in (None, "Completed"):
                reason, message = state[word].get("reason") or "", state[word].get("message") or last.get("message") or ""
                break
        if reason:
            break
    conditions = {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, dict)}
    if not reason:
        for type_ in ("PodScheduled", "Ready"):
            c = conditions.get(type_)
            if c and c.get("status") == "False" and c.get("reason"):
                reason, message = c["reason"], c.get("message") or ""
                break
    ready = (conditions.get("Ready") or {}).get("status") == "True"
    return {"name": (obj.get("metadata") or {}).get("name"), "phase": status.get("phase") or "Unknown",
            "ready": ready, "reason": reason or None, "message": message or None}


def commit(info: dict | None, sha: str | None, repo_url: str | None) -> dict | None:
    """{sha, subject, author, date, url} of a commit (subject and the rest None when Git does not say)."""
    if not sha:
        return None
    info = info or {}
    return {"sha": sha, "subject": info.get("subject"), "author": info.get("author"), "date": info.get("date"),
            "url": gitinfo.commit_url(repo_url, sha)}


def detail(app: dict, children: list[dict], pods: list[dict], commits: dict, diff: str | None,
           repo_url: str | None, now: datetime.datetime) -> dict:
    """The whole answer for ``app``. ``children``: ({kind, name, object or None}); ``pods``: its
    pods; ``commits``: ``gitinfo.Commits.info``'s answer; ``diff``: of the last change to its file."""
    status = app.get("status") or {}
    row = views.row(app, now)
    changed = status.get("lastChangedCommit")
    row["subject"] = ((commits.get(changed) or {}).get("subject")) if changed else None
    source = status.get("sourcePath")
    return {
        "namespace": row["namespace"], "name": row["name"], "verdict": verdict(app, row), "row": row,
        "source": {"path": source, "repository": gitinfo.shown(repo_url),
                   "url": gitinfo.file_url(repo_url, status.get("lastSyncedCommit"), source)},
        "synced": commit(commits.get(status.get("lastSyncedCommit")), status.get("lastSyncedCommit"), repo_url),
        "changed": commit(commits.get(changed), changed, repo_url),
        "diff": {"text": diff, "why": None if diff is not None else
                 "no change recorded yet" if not changed else "the commit is not in the agent's Git mirror"},
        "children": [child(c["object"], c["kind"], c["name"]) for c in children],
        "pods": sorted((pod(p) for p in pods), key=lambda p: (p["ready"], p["name"] or "")),
        "conditions": [{k: c.get(k) for k in ("type", "status", "reason", "message", "lastTransitionTime")}
                       for c in status.get("conditions") or [] if isinstance(c, dict)],
        "history": [h for h in status.get("history") or [] if isinstance(h, dict)],
        "labels": (app.get("metadata") or {}).get("labels") or {},
        "annotations": {k: v for k, v in ((app.get("metadata") or {}).get("annotations") or {}).items()
                        if k != "kubectl.kubernetes.io/last-applied-configuration"},
    }
