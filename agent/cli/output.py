"""Reports as documents: one JSON-able dict per command run, rendered as json, markdown or text.

The document's keys are pinned by ``agent/report.schema.json`` and listed in docs/reference/report.md (make docs).
Renderers only read the document, so the three formats never disagree. Pure: callers print.
What text and markdown show of a string is ``report.printable`` (a file name's control
characters escaped); json keeps every string as it is (JSON escapes them itself).
"""

from __future__ import annotations

import html
import json
import re

from agent.common import values
from agent.engine.report import (ADOPTED, CONFIGURED, CREATED, FAILED, HELD, KEPT, PRUNED, RECREATED, SKIPPED,
                                 SUSPENDED, UNCHANGED, Report, printable)

SCHEMA_VERSION = 1
ACTIONS = {CREATED: "create", CONFIGURED: "update", UNCHANGED: "unchanged", PRUNED: "prune",
           FAILED: "failed", RECREATED: "recreate", ADOPTED: "adopt", KEPT: "kept", SUSPENDED: "suspended",
           HELD: "held", SKIPPED: "skipped"}
"""Report action word -> the plan word used in json and markdown (and by dry runs)."""
CHANGING = ("create", "update", "prune", "recreate", "adopt")
COUNTED = ("create", "update", "unchanged", "prune", "recreate", "adopt", "failed", "kept", "suspended", "held",
           "skipped")
FORMATS = ("text", "json", "markdown")


def pass_document(report: Report, *, command: str, dry_run: bool, exit_code: int, source: dict,
                  diffs: dict[str, str] | None = None, seconds: float = 0.0, wait: dict | None = None) -> dict:
    """The document for ``sync`` or ``diff``: ``report`` of the pass, ``diffs`` (subject ->
    unified diff, from ``diff.Recording.diffs``), ``source`` ({repo (redacted), ref, path}),
    ``seconds`` the whole command's wall time, ``wait`` the ``--wait`` result (``wait_document``;
    None without ``--wait``). Objects are ``report.outcomes()``, so ``counts`` equal the text
    summary's; file errors are only in ``errors``. Each Application's ``health`` is the one its
    status holds (``{status, message}``), null in a dry run (nothing was written) or when the
    pass wrote no status for it."""
    diffs = diffs or {}
    apps: dict[str, list[dict]] = {}
    for change in report.outcomes():  # a refused Application is one failed Application object
        kind, _, rest = change.subject.partition("/")
        namespace, _, name = rest.rpartition("/")
        action = ACTIONS.get(change.action, change.action)
        apps.setdefault(change.application, []).append({
            "subject": change.subject, "kind": kind, "namespace": namespace, "name": name,
            "action": action, "message": change.message or None,
            "diff": diffs.get(change.subject) if action in CHANGING else None,
            **({"warnings": list(change.warnings)} if change.warnings else {})})
    counts = dict.fromkeys(COUNTED, 0)
    for objects in apps.values():
        for obj in objects:
            counts[obj["action"]] = counts.get(obj["action"], 0) + 1
    changes = any(counts[a] for a in CHANGING)
    return {
        "schemaVersion": SCHEMA_VERSION, "command": command, "dryRun": dry_run,
        "ok": report.ok, "changes": changes, "exitCode": exit_code,
        "commit": report.commit, "source": source,
        "applications": [{"name": name, "health": None if dry_run else report.health.get(name), "objects": objs}
                         for name, objs in sorted(apps.items())],
        "errors": _errors(report), "notes": list(report.notes), "counts": counts,
        "timings": {"totalSeconds": round(seconds, 3),
                    "fetchSeconds": None if report.fetch_seconds is None else round(report.fetch_seconds, 3)},
        "wait": wait,
    }


def wait_document(result, health: dict[str, dict]) -> dict:
    """``--wait``'s part of the document from a ``readiness.Result``: ``result`` (healthy,
    failed, timeout, interrupted or error), ``seconds`` waited, ``timeoutSeconds``, ``error``
    (for error), ``notHealthy`` (each Application not healthy at the end, with its health from
    ``health``: ``namespace/name`` -> ``{status, message}``) and ``skipped`` (Applications of the
    pass not waited for: suspended, or a child held by its annotation)."""
    return {"result": result.result, "seconds": round(result.seconds, 3), "timeoutSeconds": result.timeout,
            "error": result.error,
            "notHealthy": [{"name": key, "health": health.get(key)} for key in result.not_healthy()],
            "skipped": list(result.skipped)}


def wait_lines(wait: dict) -> list[str]:
    """The closing lines of ``sync --wait``'s text summary (``printable``): one per Application
    not healthy at the end (its health), then the verdict, e.g. ``wait succeeded: every
    Application healthy after 4.2s`` or ``wait failed: 1 Application not healthy after
    1m30s (timed out): ns/web``."""
    lines = [printable(f"  {a['name']}: {_health_words(a['health'])}") for a in wait["notHealthy"]]
    lines += [printable(f"  {key}: not waited for (suspended, or a child held by its annotation)")
              for key in wait["skipped"]]
    return lines + [printable(wait_verdict(wait))]


def wait_verdict(wait: dict) -> str:
    """One line for how ``--wait`` ended (see ``wait_lines``)."""
    after = duration(wait["seconds"])
    names = [a["name"] for a in wait["notHealthy"]]
    which = f"{len(names)} Application{'s' if len(names) != 1 else ''} not healthy after {after}"
    if wait["result"] == "healthy":
        return f"wait succeeded: every Application healthy after {after}"
    if wait["result"] == "error":
        return f"wait failed: {wait['error']}"
    why = {"failed": "Degraded or Stalled: waiting cannot help",
           "timeout": f"timed out: --wait={duration(wait['timeoutSeconds'])}",
           "interrupted": "interrupted by a signal"}[wait["result"]]
    return f"wait failed: {which} ({why}): {', '.join(names)}"


def duration(seconds: float) -> str:
    """``values.duration``: ``20s``, ``4.2s``, ``1m30s``, as kubectl prints a duration."""
    return values.duration(seconds)


def _health_words(health: dict | None) -> str:
    if not health:
        return "health unknown"
    return f"{health['status']} ({health['message']})" if health.get("message") else health["status"]


def validate_document(result, *, exit_code: int, source: dict) -> dict:
    """The document for ``validate`` from a ``validate.Result``: the valid Applications with
    their file and line, every error with file, line and field, counts of files, Applications
    and errors."""
    errors = [{"message": e.message, "file": e.path, "line": e.line, "field": e.field, "subject": None}
              for e in result.errors]
    if result.fatal:
        errors.insert(0, {"message": result.fatal, "file": None, "line": None, "field": None, "subject": None})
    return {
        "schemaVersion": SCHEMA_VERSION, "command": "validate", "dryRun": False,
        "ok": result.ok, "changes": False, "exitCode": exit_code, "commit": result.commit, "source": source,
        "applications": [{"name": f"{m.namespace}/{m.name}", "file": m.path, "line": m.line, "objects": []}
                         for m in result.manifests],
        "errors": errors, "notes": [],
        "counts": {"files": result.files, "applications": len(result.manifests), "errors": len(errors)},
        "timings": {"totalSeconds": round(result.seconds, 3),
                    "fetchSeconds": None if result.fetch_seconds is None else round(result.fetch_seconds, 3)},
    }


def _errors(report: Report) -> list[dict]:
    out, seen = [], set()
    for p in report.problems:
        out.append({"message": p.message, "file": p.path, "line": p.line, "field": p.field, "subject": None})
        seen.add(str(p))
    failed = {f"{c.subject}: {c.message}": c for c in report.changes if c.action == FAILED}
    for error in report.errors:
        if error in seen:
            continue
        change = failed.get(error)
        out.append({"message": change.message if change else error, "file": None, "line": None,
                    "field": None, "subject": change.subject if change else None})
    return out


def render(doc: dict, fmt: str) -> str:
    """``doc`` as ``json`` (indented, one document), ``markdown`` or ``text``."""
    if fmt == "json":
        return json.dumps(doc, indent=2, sort_keys=False)
    if fmt == "markdown":
        return markdown(doc)
    return text(doc)


def _verdict(doc: dict) -> str:
    counts = doc["counts"]
    if doc["command"] == "validate":
        files = f"{counts['files']} file{'s' if counts['files'] != 1 else ''}"
        if doc["ok"]:
            apps = f"{counts['applications']} Application{'s' if counts['applications'] != 1 else ''}"
            return f"valid: {files}, {apps} ({doc['timings']['totalSeconds']:.2f}s)"
        if not counts["files"] and doc["errors"] and doc["errors"][0]["file"] is None:
            return "not validated: the files could not be read"
        bad = len({e["file"] for e in doc["errors"] if e.get("file")})
        where = f"{bad} of {files}" if bad and bad != counts["files"] else files
        return f"invalid: {counts['errors']} problem{'s' if counts['errors'] != 1 else ''} in {where}"
    tally = ", ".join(f"{counts[a]} {a}" for a in COUNTED if counts[a] or a in ("create", "update", "prune", "failed"))
    head = "dry run, nothing written" if doc["dryRun"] else "sync"
    if not doc["ok"]:
        return f"{head}: failed ({tally})"
    if doc["dryRun"]:
        return f"{head}: {'changes pending' if doc['changes'] else 'no changes'} ({tally})"
    wait = doc.get("wait")
    if wait and wait["result"] != "healthy":  # the pass went well, the Applications did not get healthy
        return f"{head}: {'changed' if doc['changes'] else 'applied'}, but the wait failed: {wait['result']} ({tally})"
    return f"{head}: {'changed' if doc['changes'] else 'in sync'} ({tally})"


def _where(error: dict) -> str:
    if error["file"]:
        where = error["file"] if error["line"] is None else f"{error['file']}:{error['line']}"
        return ": ".join(p for p in (where, error["field"]) if p)
    return error["subject"] or ""


def error_line(error: dict) -> str:
    """One entry of ``doc["errors"]`` as the line printed on stderr: ``file:line: field:
    message``, ``subject: message`` or just the message, ``printable`` (one line, whatever the
    file name holds)."""
    return printable(": ".join(p for p in (_where(error), error["message"]) if p))


def text(doc: dict) -> str:
    """Plain text: for ``validate`` the verdict (its errors are printed on stderr, each as
    ``error_line``); for ``diff`` the diffs then the plan; for a dry-run ``sync`` the plan (per
    Application its objects and actions)."""
    lines: list[str] = []
    if doc["command"] == "validate":
        return _verdict(doc)
    if doc["command"] == "diff":
        for app in doc["applications"]:
            lines += [_printable_lines(obj["diff"]) for obj in app["objects"] if obj["diff"]]
    lines.append(f"commit {doc['commit']}" if doc["commit"] else "commit: none (source not fetched)")
    for app in doc["applications"]:
        lines.append(printable(f"{app['name']}:"))
        for obj in app["objects"]:
            lines.append(printable(f"  {obj['subject']} {obj['action']}" + (f" ({obj['message']})" if obj["message"] else "")))
            lines += [printable(f"    warning: {text}") for text in obj.get("warnings", ())]
    lines += [printable(f"note: {n}") for n in doc["notes"]]
    lines.append(_verdict(doc))
    return "\n".join(lines)


def _printable_lines(text: str) -> str:
    """``text`` (a unified diff) with each of its lines ``printable``: its line breaks kept, any
    other control character (a carriage return, ESC) escaped."""
    return "\n".join(printable(line) for line in text.rstrip("\n").split("\n"))


def code(value: str) -> str:
    """``value`` (``printable``) as a CommonMark code span (spec 0.31, 6.1 "Code spans"): between
    backtick strings one longer than its longest run of backticks (a span ends only at a run of
    its own length), with one space inside each end when it starts or ends with a backtick or
    both starts and ends with a space (a span strips one space from each end then): a`b is fenced
    by two backticks, `x by two backticks and a space. Backslashes are literal in a span."""
    text = printable(value)
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    pad = " " if text[:1] == "`" or text[-1:] == "`" or (text[:1] == text[-1:] == " " and text.strip(" ")) \
        or not text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def plain(value: str) -> str:
    """``value`` (``printable``) as CommonMark inline text that reads as it is: a backslash-escape
    (spec 2.4, any ASCII punctuation may be escaped) before each backslash and each character that
    could start markup inside a line (a code span, emphasis, strikethrough, a link, HTML, an
    entity), and before a first character that could start a block (a heading, a quote, a list);
    ``|`` is left as it is (it is markup only in a table: ``cell``)."""
    text = re.sub(r"([\\`*_~\[\]<>&])", r"\\\1", printable(value))
    return re.sub(r"^(\d+)([.)])", r"\1\\\2", re.sub(r"^([#+=-])", r"\\\1", text))


def cell(markdown_text: str) -> str:
    """Inline Markdown (``code``, ``plain`` or markup) as a GFM table cell: every ``|`` escaped
    (GFM spec 0.29, 4.10 "Tables": a cell's pipes are escaped, inside code spans too, and the
    table removes one backslash before each pipe before reading the cell's inline content)."""
    return markdown_text.replace("|", "\\|")


MARKDOWN_LIMIT = 60_000
"""Characters a markdown plan may have: GitHub refuses a comment over 65,536 characters (and
GitLab's notes over 1,000,000), so a plan stays well under it (issue 32: 40 new Applications
made 104 KB)."""


def markdown(doc: dict, limit: int = MARKDOWN_LIMIT) -> str:
    """A compact plan for a pull-request comment: a heading with the verdict, the commit, a
    summary table of Applications and their objects' actions (and, for ``sync``, each one's
    health), the ``--wait`` result, errors as a list, notes, the API server's warnings of a write
    (``> **Warning** `SUBJECT`: TEXT``), and each diff folded in
    ``<details>``. Names, files and fields are ``code`` spans, messages and notes ``plain``
    text, and table cells ``cell``s, so any file name or message reads as it is.
    At most ``limit`` characters: what does not fit is cut at a whole row, line or diff (never
    inside one, ``_capped``) with a closing line saying how much was left out and where to
    see it all."""
    title = {"validate": "validate", "diff": "diff", "sync": "sync"}[doc["command"]]
    blocks: list[tuple[str, str]] = [("", f"### gitops-agent {title}: {_verdict(doc).split(': ', 1)[1]}\n")]
    if doc["commit"]:
        blocks.append(("", f"Commit {code(doc['commit'][:12])}\n"))
    if doc["command"] == "validate":
        if doc["applications"]:
            blocks.append(("", "| Application | File |\n|---|---|"))
            blocks += [("row", f"| {cell(code(a['name']))} | {cell(code(a['file'] + ':' + str(a['line'])))} |")
                       for a in doc["applications"]]
            blocks.append(("", ""))
    elif doc["applications"]:
        healthy = doc["command"] == "sync" and not doc["dryRun"]
        blocks.append(("", "| Application | Changes | Unchanged |" + (" Health |" if healthy else "")
                       + "\n|---|---|---|" + ("---|" if healthy else "")))
        for app in doc["applications"]:
            changed = [f"{plain(o['kind'])} **{plain(o['action'])}**" for o in app["objects"] if o["action"] != "unchanged"]
            same = sum(o["action"] == "unchanged" for o in app["objects"])
            row = f"| {cell(code(app['name']))} | {cell(', '.join(changed)) or '-'} | {same} |"
            if healthy:
                health = app.get("health")
                row += f" {cell(plain(_health_words(health))) if health else '-'} |"
            blocks.append(("row", row))
        blocks.append(("", ""))
    if doc.get("wait"):
        blocks.append(("", f"**Wait**: {plain(wait_verdict(doc['wait']))}\n"))
    if doc["errors"]:
        blocks.append(("", "**Errors**\n"))
        blocks += [("error", f"- {code(_where(e)) + ': ' if _where(e) else ''}{plain(e['message'])}")
                   for e in doc["errors"]]
        blocks.append(("", ""))
    blocks += [("note", f"> {plain(note)}\n") for note in doc["notes"]]  # one quote each: no running together
    blocks += [("note", f"> **Warning** {code(obj['subject'])}: {plain(text)}\n") for app in doc["applications"]
               for obj in app["objects"] for text in obj.get("warnings", ())]  # what admission said of a write
    for app in doc["applications"]:
        for obj in app["objects"]:
            if obj.get("diff"):
                diff = _printable_lines(obj["diff"])
                fence = "`" * max(3, max(map(len, re.findall("`+", diff)), default=0) + 1)  # longer than any inside
                summary = html.escape(printable(f"{obj['subject']} ({obj['action']})"), quote=False)
                blocks.append(("diff", "\n".join([f"<details><summary>{summary}</summary>", "", f"{fence}diff", diff,
                                                  fence, "", "</details>", ""])))
    return _capped(blocks, limit)


_WHAT = {"row": ("table row", "table rows"), "error": ("error", "errors"), "note": ("note", "notes"),
         "diff": ("diff", "diffs")}


def _capped(blocks: list[tuple[str, str]], limit: int) -> str:
    """The markdown of ``blocks`` (``(what, text)``, each ending a line; ``what``: ``row``,
    ``error``, ``note``, ``diff`` or ``""`` for structure), whole, when it has at most ``limit``
    characters; else the blocks that fit in order, then a line naming how many of each kind,
    and how many characters, were left out, and how to see them all. Pure."""
    full = "\n".join(text for _, text in blocks).rstrip("\n") + "\n"
    if len(full) <= limit:
        return full
    room = limit - 400  # the closing line, with room to spare
    kept: list[str] = []
    left: dict[str, int] = {}
    size = 0
    for what, text in blocks:
        if not left and size + len(text) + 1 <= room:
            kept.append(text)
            size += len(text) + 1
        elif what:
            left[what] = left.get(what, 0) + 1
        elif not left:  # structure: no room for it, nor for anything after it
            left.setdefault("", 0)
    gone = ", ".join(f"{n} {_WHAT[w][n != 1]}" for w, n in left.items() if w and n)
    text = "\n".join(kept).rstrip("\n")
    closing = (f"**Cut to stay under {limit:,} characters** (GitHub refuses a comment over 65,536): "
               f"{gone or 'the rest'} left out ({len(full) - len(text):,} characters). The full report is in "
               "the CI log (`-o text`) or `-o json`.")
    return f"{text}\n\n{closing}\n"
