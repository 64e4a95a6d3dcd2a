"""``python -m agent explain NAME``: one screen that says whether an Application is live, and if not, why.

The data is ``agent/views/explainview.py``'s (read by ``agent/views/inspect.py``); this module
only renders it as text (``render``) or prints it as JSON (``-o json``, the status page's shape).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys

from agent.cli import flags, nametypes, sourceflags
from agent.cli.commands import Command
from agent.cli.get_cmd import FAIL_FAST, RESOURCE, server_error
from agent.common import exitcodes, logs
from agent.kube.client import Kube
from agent.kube.cluster import ApiError
from agent.source.cachedir import default_cache_dir
from agent.views import appview, explainview, inspect

EPILOG = """exit codes:
  0  synced and healthy, and no field differs from Git
  1  not (yet) synced or healthy, or drifted from Git: the first line says why
  2  a flag was wrong, the Application does not exist, or the cluster could not be read
"""
_env = flags.env  # a flag's default from GITOPS_AGENT_<NAME>, checked (and named) by the flag's type


def arguments(parser: argparse.ArgumentParser) -> None:
    """``explain``'s arguments and flags."""
    parser.add_argument("name", metavar="NAME", type=nametypes.dns_subdomain, help="the Application's name")
    parser.add_argument("-n", "--namespace", type=nametypes.dns_label,
                        help="the namespace (default: the kubeconfig context's namespace, else default)")
    parser.add_argument("--repo", type=flags.repo, help="the Git repository to read commits from (default: the one "
                        "the Application's heumsi.github.io/repository annotation names, when reachable)")
    parser.add_argument("--ref", type=flags.non_empty,
                        help="the branch or tag the agent syncs, to tell whether Git still has the Application "
                             "(default: the remote's HEAD)")
    parser.add_argument("-o", "--output", type=flags.choice("text", "json"), default="text", metavar="{text,json}",
                        help="text (default) or json (one document, the shape agent/views/explainview.py names)")
    parser.add_argument("--cache-dir", default=_env("CACHE_DIR", default_cache_dir()), type=flags.non_empty,
                        help=f"where Git mirrors are kept (default: {default_cache_dir()}) [env GITOPS_AGENT_CACHE_DIR]")
    flags.add_credential_flags(parser)
    flags.add_security_profile_flag(parser)
    flags.add_kubeconfig_flags(parser)
    flags.add_log_flags(parser, _env)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """Carry out ``explain`` (see EPILOG for the exit codes); errors are one line on stderr."""
    try:
        kube = Kube(args.kubeconfig, args.context, **FAIL_FAST)
    except ApiError as err:
        logs.problem(str(err))
        return exitcodes.FAILED
    namespace = args.namespace or kube.namespace
    try:
        app = inspect.application(kube, namespace, args.name)
        if app is None:
            print(f'Error from server (NotFound): {RESOURCE} "{args.name}" not found', file=sys.stderr)
            return exitcodes.FAILED
        children, pods, events = inspect.cluster_parts(kube, app)
    except ApiError as err:
        print(server_error(err), file=sys.stderr)
        return exitcodes.FAILED
    url = inspect.repository_url(app, args.repo)
    if url:
        flags.cache_dir(args.cache_dir)
    git = inspect.read_git(app, url, args.ref, args.cache_dir, credentials=sourceflags.credentials(args) if url else None)
    found = explainview.explanation(app, children, pods, events, datetime.datetime.now(datetime.timezone.utc), git,
                                    default_profile=args.default_security_profile)
    if args.output == "json":
        print(json.dumps(found, indent=2, ensure_ascii=False), flush=True)
    else:
        print("\n".join(render(found, datetime.datetime.now(datetime.timezone.utc))), flush=True)
    return exitcodes.OK if found["verdict"]["ok"] else exitcodes.CHANGED


def _text(value) -> str:
    """A value from the cluster or Git on one line, control characters escaped; ``-`` for none."""
    return appview.one_line(value if isinstance(value, str) else None if value is None else str(value)) or "-"


def _commit(found: dict | None) -> str:
    if not found:
        return "-"
    parts = [found["short"], found.get("date"), found.get("author"), found.get("subject")]
    return "  ".join(_text(p) for p in parts if p)


def render(found: dict, now: datetime.datetime) -> list[str]:
    """The text of an explanation (``explainview.explanation``), one screen: the verdict line,
    the source and commits, the health with when and by what it was observed
    (``Progressing, 12m ago, by sync --once``), then Children, Tasks, Schedules, Pods (not ready
    ones), Drift, Admission warnings (what the API server warned of the agent's writes), Events,
    History and
    the last change's diff; sections with nothing to say are left out."""
    app, source, git = found["application"], found["source"], found["git"]
    where = source["path"] or "-"
    if source["path"] and source["line"]:
        where += f":{source['line']}"
    lines = [_text(found["verdict"]["text"]), "",
             f"Application  {app['namespace']}/{app['name']}",
             f"Source       {_text(where)}  repository {_text(git['url'] or source['repository'])}"
             + (f"  ref {_text(source['ref'])}" if source["ref"] else ""),
             f"Synced       {_commit(found['commits']['synced'])}",
             f"Changed      {_commit(found['commits']['changed'])}"]
    seen = found.get("observed") or {}
    if health := appview.health_text(seen.get("health"), seen.get("at"), seen.get("by"), now):
        lines.append(f"Health       {health}")
    if not git["available"]:
        lines.append(f"Git          not read: {_text(git['reason'])}")
    for item in found["conditions"]:
        lines.append(f"{item.get('type', '?'):<13}{_text(item.get('status'))} {_text(item.get('reason'))}: "
                     f"{_text(item.get('message'))}")
    lines += _section("Children", [f"{c['kind']}/{c['name']}  {c['health']['status']}  {_text(c['message'])}"
                                   + (f"  ({_text(c['health']['message'])})" if c["health"]["message"] else "")
                                   for c in found["children"]])
    lines += _section("Tasks", [_task(e, now) for e in found.get("tasks") or []])
    lines += _section("Schedules", [_schedule(e, now) for e in found.get("schedules") or []])
    lines += _section("Pods not ready", [f"{p['name']}  {_text(p['phase'])}  {_problem(q)}"
                                         for p in found["pods"] for q in p["problems"]])
    lines += _section(drift_title(found["drift"]), [
        f"{d['object']} {d['field']}: {d['against']} {_value(d['want'])}, live {_value(d['live'])}"
        + (f" (changed by {', '.join(d['managers'])})" if d["managers"] else "") for d in found["drift"]])
    lines += _section("Admission warnings (newest first)", [
        f"{appview.age_since(e['time'], now):>6}  {_text(e['message'])}" for e in found.get("admission") or []])
    lines += _section("Events (newest first)", [
        f"{appview.age_since(e['time'], now):>6}  {_text(e['type'])}  {_text(e['reason'])}  {e['object']}  "
        f"{_text(e['message'])}" + (f" (x{e['count']})" if e["count"] > 1 else "") for e in found["events"]])
    history = [{"revision": appview.short(h["revision"]), "first": h["firstSyncedAt"], "last": h["lastSyncedAt"],
                "passes": h["passes"], "digest": (h["digest"] or "")[:19] or None} for h in found["history"]]
    if history:
        lines += ["", "History (newest first):"] + ["  " + line for line in _history(history)]
    if found["diff"]:
        changed = found["commits"]["changed"] or {}
        lines += ["", f"Change {changed.get('short', '')} to {_text(source['path'])}:"]
        lines += ["  " + "".join(c if c.isprintable() or c == "\t" else repr(c)[1:-1] for c in line)
                  for line in found["diff"].splitlines()]
    return lines


def _task(entry: dict, now) -> str:
    """One line of a task (an entry of ``status.tasks``): its phase, its Job, when it started and
    finished (ago, where known) and its message: ``migrate  Failed  Job/web-migrate-3f2a9c1e
    started 5m ago, finished 4m ago  Job web-migrate-3f2a9c1e failed: BackoffLimitExceeded: ...``."""
    times = [f"{word} {appview.age_since(entry[field], now)} ago"
             for word, field in (("started", "startTime"), ("finished", "completionTime")) if entry.get(field)]
    parts = [_text(entry.get("name")), _text(entry.get("phase")), f"Job/{_text(entry.get('job'))}"]
    parts += [", ".join(times)] if times else []
    return "  ".join(parts + ([_text(entry["message"])] if entry.get("message") else []))


def _schedule(entry: dict, now) -> str:
    """One line of a schedule (an entry of ``status.schedules``): its CronJob, when it last ran and
    succeeded (ago), how many run, and its last failure."""
    def ago(field: str) -> str:
        return f"{appview.age_since(entry[field], now)} ago" if entry.get(field) else "never"
    line = (f"{_text(entry.get('name'))}  CronJob/{_text(entry.get('cronJob'))}"
            f"{'  suspended' if entry.get('suspended') else ''}  last run {ago('lastScheduleTime')}, "
            f"last success {ago('lastSuccessfulTime')}, {entry.get('active', 0)} running")
    failure = entry.get("lastFailure") if isinstance(entry.get("lastFailure"), dict) else None
    if failure:
        line += (f"; last failure Job/{_text(failure.get('job'))} {appview.age_since(failure.get('time'), now)} ago"
                 + (f" ({_text(failure.get('reason'))}: {_text(failure.get('message'))})" if failure.get("reason")
                    else ""))
    return line


def drift_title(drift: list[dict]) -> str:
    """``Drift from Git`` when Git was read, else what the drift is against."""
    if drift and drift[0]["against"] != explainview.GIT:
        return "Drift from what the agent renders from the live Application (Git not read)"
    return "Drift from Git"


def _section(title: str, items: list[str]) -> list[str]:
    return ["", f"{title}:", *("  " + item for item in items)] if items else []


def _problem(problem: dict) -> str:
    who = f"{problem['container']}: " if problem["container"] else ""
    text = f"{who}{_text(problem['reason'])}"
    if problem.get("exitCode") is not None:
        text += f" (exit code {problem['exitCode']})"
    if problem.get("message"):
        text += f": {_text(problem['message'])}"
    if problem.get("restarts"):
        text += f"; restarted {problem['restarts']} times"
    return text


def _value(value) -> str:
    return "absent" if value is None else _text(json.dumps(value, ensure_ascii=False) if not isinstance(value, str)
                                                else value)


def _history(rows: list[dict]) -> list[str]:
    keys = ("revision", "first", "last", "passes", "digest")
    headers = {"revision": "REVISION", "first": "FIRST SYNCED", "last": "LAST SYNCED", "passes": "PASSES",
               "digest": "DIGEST"}
    cells = [[headers[k] for k in keys]] + [["-" if r[k] is None else str(r[k]) for k in keys] for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(keys))]
    return ["   ".join([c.ljust(w) for c, w in zip(line[:-1], widths)] + [line[-1]]) for line in cells]


COMMAND = Command(
    help="say whether an Application is live, and if not, why",
    description="One screen about one Application: a verdict first, then its Git source, the commit it "
                "synced and the one that last changed it (author, date, subject) with that change's diff, "
                "each child's state, why pods are not ready, fields changed by hand and by whom, the last "
                "Events and its history. Git is read with --repo, or from the repository the Application's "
                "annotation names when it is reachable.",
    epilog=EPILOG, arguments=arguments, run=run, read_only=True)
