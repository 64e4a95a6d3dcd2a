"""The HTML of ``/applications/NS/NAME``: ``explain -o json``'s answer (``explainview.explanation``,
the same dict ``/api/v1/applications/NS/NAME`` serves) as a page, with the Application's row
(``views.row``: health, sync, image, replicas) and its labels and annotations. Pure; escaping as
in ``pages`` (every value through ``pages.t``/``pages.attr``, links only ``https://`` ones of
``gitinfo``). Times are shown as written (not as ages), so an unchanged Application renders the
same bytes and the script's poll of ``parts`` answers 304.
"""

from __future__ import annotations

import json

from agent.server import gitinfo
from agent.server.pages import attr, fragment, layout, link, state_class, t
from agent.views import explainview

WARN_STATES = (explainview.PROGRESSING, explainview.SUSPENDED, explainview.DRIFTED)
"""Verdicts shown in the warning colour, as the Health line shows Progressing and Suspended;
the others but ``Synced`` in the failure colour."""
HIDDEN_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)  # large and shown elsewhere


def commit_block(label: str, c: dict | None, repo_url: str | None) -> str:
    """A ``<dt>``/``<dd>`` pair for a COMMIT of the explanation (sha linked to the Git host)."""
    if not c:
        return f"<dt>{label}</dt><dd>-</dd>"
    sha = link(gitinfo.commit_url(repo_url, c["sha"]), c["sha"][:12])
    who = f' by {t(c["author"])}' if c.get("author") else ""
    when = f' on {t(c["date"])}' if c.get("date") else ""
    subject = f'<div class="subject">{t(c["subject"])}</div>' if c.get("subject") else ""
    return f"<dt>{label}</dt><dd><code>{sha}</code>{who}{when}{subject}</dd>"


def diff_block(e: dict, repo_url: str | None) -> str:
    """The diff of the last change to the Application's file, or why there is none."""
    changed = e["commits"]["changed"]
    if not e["diff"]:
        why = ("Git was not read: " + (e["git"]["reason"] or "unknown")) if not e["git"]["available"] else \
            "no change recorded yet" if not changed else "the change did not touch its file"
        return f'<p class="muted">No diff: {t(why)}.</p>'
    lines = []
    for line in e["diff"].splitlines():
        cls = "add" if line.startswith("+") and not line.startswith("+++") else \
            "del" if line.startswith("-") and not line.startswith("---") else "hunk" if line.startswith("@@") else ""
        lines.append(f'<span class="{cls}">{attr(line)}</span>' if cls else attr(line))
    url = gitinfo.commit_url(repo_url, changed["sha"]) if changed else None
    more = f' <span class="muted">(also on {link(url, "the Git host")})</span>' if url else ""
    return f'<p>The change to this file{more}:</p><pre class="diff" id="diff">' + "\n".join(lines) + "</pre>"


def table(headings: tuple[str, ...], keys: tuple[str, ...], items: list[dict], empty: str, css: str = "") -> str:
    if not items:
        return f'<p class="muted">{empty}</p>'
    head = "".join(f"<th>{h}</th>" for h in headings)
    body = "".join("<tr>" + "".join(f'<td class="c-{k}{_state(k, i.get(k))}"{_title(k, i.get(k))}>{t(i.get(k))}</td>'
                                    for k in keys) + "</tr>" for i in items)
    return f'<div class="scroll"><table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


STATE_KEYS = ("health", "type", "status")
"""The table columns whose value may colour the cell (through ``pages.state_class``)."""


def _state(key: str, value) -> str:
    return f" {state_class(value)}" if key in STATE_KEYS else ""


def _title(key: str, value) -> str:
    """The whole text of a cell the style sheet may cut (``…``), as its tooltip."""
    return f' title="{attr(value)}"' if key in ("message", "reason", "subject") and value else ""


def pairs(values: dict) -> str:
    items = [(k, v) for k, v in sorted(values.items()) if k not in HIDDEN_ANNOTATIONS]
    if not items:
        return '<span class="muted">none</span>'
    return '<ul class="pairs">' + "".join(f"<li><code>{t(k)}</code>: {t(v)}</li>" for k, v in items) + "</ul>"


def problem(p: dict) -> str:
    """One pod problem as ``explain`` words it: ``container: Reason (exit code N)``."""
    text = (f"{p['container']}: " if p["container"] else "") + str(p["reason"] or p["state"])
    if p.get("exitCode") is not None:
        text += f" (exit code {p['exitCode']})"
    return text + (f"; restarted {p['restarts']} times" if p.get("restarts") else "")


def value(v) -> str:
    return "absent" if v is None else v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)


def facts(e: dict, row: dict, repo_url: str | None) -> str:
    """The ``<dl class="facts">``: health (with when and by what it was observed, the time as
    written), sync, readiness, source, image, replicas, commits."""
    src, git = e["source"], e["git"]
    where = (src["path"] or "-") + (f":{src['line']}" if src["path"] and src["line"] else "")
    synced = (e["commits"]["synced"] or {}).get("sha")
    source = link(gitinfo.file_url(repo_url, synced, src["path"]), where)
    ref = f' ref {t(src["ref"])}' if src["ref"] else ""
    unread = "" if git["available"] else f'<dt>Git</dt><dd class="muted">not read: {t(git["reason"])}</dd>'
    seen = e.get("observed") or {}
    when = (f' <span class="muted">observed {t(seen["at"])}' + (f' by {t(seen["by"])}' if seen.get("by") else "")
            + "</span>") if seen.get("at") else ""
    return (f'<dl class="facts"><dt>Health</dt><dd class="{state_class(row["health"])}">{t(row["health"])}{when}</dd>'
            f'<dt>Sync</dt><dd class="{state_class(row["sync"])}">{t(row["sync"])}</dd>'
            f'<dt>Ready</dt><dd>{t(row["ready"])} {t(row["reason"])}</dd><dt>Message</dt><dd>{t(row["message"])}</dd>'
            f'<dt>Source</dt><dd>{source} in {t(git["url"] or src["repository"])}{ref}</dd>'
            f'<dt>Image</dt><dd>{t(row["image"])}</dd><dt>Replicas</dt><dd>{t(row["replicas"])}</dd>'
            f'{commit_block("Synced commit", e["commits"]["synced"], repo_url)}'
            f'{commit_block("Last changed by", e["commits"]["changed"], repo_url)}{unread}</dl>')


def sections(e: dict) -> str:
    """Children, tasks and schedules (when there are), pods, drift, Events, conditions and history, each a table."""
    children = [{"kind": c["kind"], "name": c["name"], "health": c["health"]["status"],
                 "message": c["message"] + (f' ({c["health"]["message"]})' if c["health"]["message"] else "")}
                for c in e["children"]]  # as explain writes it
    pods = [{"name": p["name"], "phase": p["phase"], "ready": p["ready"],
             "reason": "; ".join(problem(q) for q in p["problems"]) or None,
             "message": "; ".join(q["message"] for q in p["problems"] if q.get("message")) or None} for p in e["pods"]]
    drift = [{**d, "want": value(d["want"]), "live": value(d["live"]), "managers": ", ".join(d["managers"]) or None}
             for d in e["drift"]]
    rendered = bool(e["drift"]) and e["drift"][0]["against"] != explainview.GIT
    history = [{**h, "revision": (h["revision"] or "")[:12] or None, "digest": (h["digest"] or "")[:19] or None}
               for h in e["history"]]
    return ('<h2>Children</h2>' + table(("Kind", "Name", "Health", "Message"), ("kind", "name", "health", "message"),
                                        children, "No children.")
            + tasks(e.get("tasks") or [])
            + schedules(e.get("schedules") or [])
            + '<h2>Pods</h2>' + table(("Pod", "Phase", "Ready", "Reason", "Message"),
                                      ("name", "phase", "ready", "reason", "message"), pods, "No pods.", "pods")
            + ('<h2>Drift from what the agent renders from the live Application (Git not read)</h2>' if rendered
               else '<h2>Drift from Git</h2>')
            + table(("Object", "Field", "Rendered" if rendered else "Git", "Live", "Changed by"),
                    ("object", "field", "want", "live", "managers"), drift, "No field differs from Git.", "drift")
            + ('<h2>Admission warnings</h2>' + table(("Time", "Message"), ("time", "message"), e["admission"], "")
               if e.get("admission") else "")  # what the API server warned of the agent's writes
            + '<h2>Events</h2>' + table(("Time", "Type", "Reason", "Object", "Message", "Count"),
                                        ("time", "type", "reason", "object", "message", "count"), e["events"],
                                        "No Events.", "events")
            + '<h2>Conditions</h2>' + table(("Type", "Status", "Reason", "Message", "Since"),
                                            ("type", "status", "reason", "message", "lastTransitionTime"),
                                            e["conditions"], "No conditions yet.")
            + '<h2>History</h2>' + table(("Commit", "First synced", "Last synced", "Passes", "Digest"),
                                         ("revision", "firstSyncedAt", "lastSyncedAt", "passes", "digest"), history,
                                         "No history yet.", "history"))


def tasks(entries: list[dict]) -> str:
    """The Tasks table (``status.tasks`` as explain writes it, a failed run first: one row per
    task, its phase coloured, its Job, start, completion and message); nothing without any, so a
    page without tasks is as it was."""
    if not entries:
        return ""
    rows = [{"name": e.get("name"), "status": e.get("phase"), "job": e.get("job"), "startTime": e.get("startTime"),
             "completionTime": e.get("completionTime"), "message": e.get("message")} for e in entries]
    return '<h2>Tasks</h2>' + table(("Task", "Phase", "Job", "Started", "Finished", "Message"),
                                    ("name", "status", "job", "startTime", "completionTime", "message"), rows,
                                    "No tasks.")


def schedules(entries: list[dict]) -> str:
    """The Schedules table (``status.schedules`` as explain writes it: one row per schedule, its
    last failure named); nothing without any, so a page without schedules is as it was."""
    if not entries:
        return ""
    rows = []
    for entry in entries:
        failure = entry.get("lastFailure") if isinstance(entry.get("lastFailure"), dict) else {}
        rows.append({"name": entry.get("name"), "cronJob": entry.get("cronJob"),
                     "status": "Suspended" if entry.get("suspended") else None,
                     "lastScheduleTime": entry.get("lastScheduleTime"),
                     "lastSuccessfulTime": entry.get("lastSuccessfulTime"), "active": entry.get("active", 0),
                     "failure": " ".join(str(failure[k]) for k in ("job", "time", "reason") if failure.get(k)) or None})
    return '<h2>Schedules</h2>' + table(("Schedule", "CronJob", "Status", "Last run", "Last success", "Running",
                                         "Last failure (Job, time, reason)"),
                                        ("name", "cronJob", "status", "lastScheduleTime", "lastSuccessfulTime",
                                         "active", "failure"), rows, "No schedules.")


def body(e: dict, app: dict, row: dict, repo_url: str | None) -> str:
    """``<div id="detail" data-part>``: everything of the page below its title (what ``parts`` swaps)."""
    meta = app.get("metadata") or {}
    look = "ok" if e["verdict"]["ok"] else "warn" if e["verdict"]["state"] in WARN_STATES else "bad"
    return (f'<div id="detail" data-part><p id="verdict" class="verdict {look}">'
            f'{t(e["verdict"]["text"])}</p>{facts(e, row, repo_url)}'
            f'<h2>Last change</h2>{diff_block(e, repo_url)}{sections(e)}'
            f'<h2>Labels</h2>{pairs(meta.get("labels") or {})}'
            f'<h2>Annotations</h2>{pairs(meta.get("annotations") or {})}</div>')


def detail_page(e: dict, app: dict, row: dict, repo_url: str | None) -> str:
    """The whole document of ``/applications/NS/NAME`` for explanation ``e`` of ``app``."""
    ns, name = e["application"]["namespace"], e["application"]["name"]
    head = f'<p class="crumbs"><a href="/">Applications</a> / {t(ns)}</p><h1>{t(name)}</h1>'
    return layout(f"{ns}/{name}", head + body(e, app, row, repo_url), "detail")


def parts(e: dict, app: dict, row: dict, repo_url: str | None) -> str:
    """``/_parts/applications/NS/NAME``: ``body`` alone, for the script to swap in."""
    return fragment(body(e, app, row, repo_url))
