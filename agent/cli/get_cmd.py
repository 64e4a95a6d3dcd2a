"""``python -m agent get [NAME]``: list Applications as ``kubectl get`` does, with what the agent knows.

Reads the cluster only (never Git): one list or get of Applications, each row made by
``agent/views/appview.py`` (the status page shows the same rows). Spelling and behaviour follow
kubectl: ``-n``/``-A``/``-l``/``-w``/``-o wide|json|yaml|name``/``--no-headers``; the namespace
defaults to the kubeconfig context's; a missing Application is ``Error from server (NotFound):
applications.heumsi.github.io "NAME" not found`` (exit 1); an empty list says ``No resources
found in NS namespace.`` on stderr (exit 0).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import sys
import threading

from agent.api.schema import GROUP, KIND, PLURAL
from agent.cli import flags, nametypes
from agent.cli.commands import Command
from agent.common import exitcodes, logs, signals
from agent.kube import watch
from agent.kube.client import Kube
from agent.kube.cluster import ApiError
from agent.manifests import yamlwrite
from agent.views import appview, inspect

RESOURCE = f"{PLURAL}.{GROUP}"
OUTPUTS = ("wide", "json", "yaml", "name")
EPILOG = """exit codes:
  0  listed (also when nothing matched: "No resources found" on stderr); -w: stopped by
     Ctrl-C or SIGTERM
  1  the server answered with an error, as kubectl: the Application was not found (NotFound),
     the request was refused or the cluster could not be reached
  2  a flag was wrong
"""
_env = flags.env  # a flag's default from GITOPS_AGENT_<NAME>, checked (and named) by the flag's type


FAIL_FAST = {"retry_seconds": 3.0, "retry_unreachable": False}
"""How ``get`` and ``explain`` talk to the API server: a fault the server answers (429, 5xx) is
retried for 3 seconds, no answer at all (refused, unresolvable, timed out) not at all: they
fail in about a second, as kubectl does."""


def arguments(parser: argparse.ArgumentParser) -> None:
    """``get``'s arguments and flags."""
    parser.add_argument("name", metavar="NAME", nargs="?", type=nametypes.dns_subdomain,
                        help="one Application (default: all in the namespace)")
    parser.add_argument("-n", "--namespace", type=nametypes.dns_label,
                        help="the namespace (default: the kubeconfig context's namespace, else default)")
    parser.add_argument("-A", "--all-namespaces", action="store_true",
                        help="Applications of every namespace, with a NAMESPACE column")
    parser.add_argument("-l", "--selector", type=flags.non_empty,
                        help="label selector, as kubectl takes it (app=web,tier!=db)")
    parser.add_argument("-w", "--watch", action="store_true",
                        help="after the list, print each Application whose row changes, until Ctrl-C or SIGTERM")
    parser.add_argument("-o", "--output", type=flags.choice(*OUTPUTS), metavar="{" + ",".join(OUTPUTS) + "}",
                        help="wide (adds SOURCE, IMAGE, REPLICAS, SCHEDULES: how many, '2 (1 failed)', and TASKS: "
                             "'1/2 done', or 'migrate failed' naming the failed task), json or yaml (a v1 List of "
                             "the Applications) or name (application.heumsi.github.io/NAME) (default: a table)")
    parser.add_argument("--no-headers", action="store_true", help="no header line in tables")
    flags.add_kubeconfig_flags(parser)
    flags.add_log_flags(parser, _env)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """Carry out ``get`` (see EPILOG for the exit codes)."""
    if args.all_namespaces and args.name:
        raise flags.UsageError("a resource cannot be retrieved by name across all namespaces", flag="--all-namespaces")
    if args.selector and args.name:  # kubectl refuses the pair too: the name would ignore the selector
        raise flags.UsageError("name cannot be provided when a selector is specified", flag="--selector")
    try:
        kube = Kube(args.kubeconfig, args.context, **FAIL_FAST)
    except ApiError as err:
        logs.problem(str(err))
        return exitcodes.CHANGED  # 1: as kubectl, whatever the error
    namespace = None if args.all_namespaces else args.namespace or kube.namespace
    try:
        if args.name:
            found = inspect.application(kube, namespace, args.name)
            if found is None:
                print(f'Error from server (NotFound): {RESOURCE} "{args.name}" not found', file=sys.stderr)
                return exitcodes.CHANGED
            items, version = [inspect.without_managed_fields(found)], found["metadata"].get("resourceVersion")
        else:
            items, version = inspect.applications(kube, namespace, args.selector)
    except ApiError as err:
        print(server_error(err), file=sys.stderr)
        return exitcodes.CHANGED
    if not items and not args.watch:
        print(f"No resources found in {namespace} namespace." if namespace else "No resources found", file=sys.stderr)
    elif items:
        print(render(items, args, datetime.datetime.now(datetime.timezone.utc)), flush=True)
    if args.watch:
        return follow(kube, args, namespace, items)
    return exitcodes.OK


def server_error(err: ApiError) -> str:
    """kubectl's line for an error answer: ``Error from server (Reason): message``; for no answer
    the agent's own message."""
    if err.status == 0:
        return f"error: {err}"
    reason = err.reason if err.reason and err.reason != "Error" else {
        400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound"}.get(err.status, "InternalError")
    return f"Error from server ({reason}): {err.message}"


def render(items: list[dict], args: argparse.Namespace, now: datetime.datetime, headers: bool | None = None) -> str:
    """``items`` (Applications) in ``args.output``: a table (``appview.table``), a v1 List as
    JSON or YAML, or one ``application.heumsi.github.io/NAME`` line each."""
    if args.output in ("json", "yaml"):
        doc = items[0] if args.name and len(items) == 1 else {"apiVersion": "v1", "kind": "List", "items": items,
                                                              "metadata": {"resourceVersion": ""}}
        return json.dumps(doc, indent=4, ensure_ascii=False) if args.output == "json" else \
            yamlwrite.text(doc).rstrip("\n")
    if args.output == "name":
        return "\n".join(f"{KIND.lower()}.{GROUP}/{i['metadata']['name']}" for i in items)
    keys = appview.columns(args.output == "wide", args.all_namespaces)
    rows = [appview.row(i, now) for i in items]
    show = not args.no_headers if headers is None else headers
    return "\n".join(appview.table(rows, keys, show))


def follow(kube: Kube, args: argparse.Namespace, namespace: str | None, items: list[dict]) -> int:
    """``-w``: watch Applications from the list on and print each whose row (ages aside) or, for
    ``-o json|yaml|name``, whose object changed, until SIGINT or SIGTERM; returns 0. The watch
    is cluster-wide and filtered here by namespace and name (the label selector is the server's)."""
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    shown = {_key(i): _seen(i, args) for i in items}
    lock = threading.Lock()

    def show(obj: dict | None) -> None:
        if not isinstance(obj, dict) or not _wanted(obj, args, namespace):
            return
        inspect.without_managed_fields(obj)
        with lock:
            seen = _seen(obj, args)
            if shown.get(_key(obj)) == seen:
                return
            shown[_key(obj)] = seen
            print(render([obj], args, datetime.datetime.now(datetime.timezone.utc), headers=not shown_any[0]
                         and not args.no_headers and args.output not in OUTPUTS[1:]), flush=True)
            shown_any[0] = True

    shown_any = [bool(items)]
    thread = threading.Thread(target=watch.run, daemon=True, kwargs={
        "kube": kube, "group": GROUP, "kind": KIND, "label_selector": args.selector, "stop": done,
        "on_event": lambda _type, obj: show(obj),
        "on_list": lambda _kind, listed, _first: [show(o) for o in listed]})
    thread.start()
    signals.wait(done)  # not done.wait(): agent/common/signals.py
    sys.stdout.flush()
    os._exit(exitcodes.OK)  # the watch thread may be blocked in a read: do not wait for it


def _key(obj: dict) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace", ""), meta.get("name", "")


def _seen(obj: dict, args: argparse.Namespace):
    """What of ``obj`` a change must touch to be printed again: for a table its row without the
    ages (``age``, and ``observed`` read as ``status.observedAt`` and ``observedBy``: a new
    observation prints the row, the clock alone does not), its name for ``-o name``, the object
    less its resourceVersion otherwise."""
    if args.output in ("json", "yaml"):
        meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "resourceVersion"}
        return json.dumps({**obj, "metadata": meta}, sort_keys=True)
    if args.output == "name":
        return obj["metadata"].get("name")
    row = appview.row(obj, datetime.datetime.now(datetime.timezone.utc))
    status = obj.get("status") or {}
    return (*(v for k, v in row.items() if k not in ("age", "observed")),
            status.get("observedAt"), status.get("observedBy"))


def _wanted(obj: dict, args: argparse.Namespace, namespace: str | None) -> bool:
    meta = obj.get("metadata") or {}
    return (namespace is None or meta.get("namespace") == namespace) and (not args.name or meta.get("name") == args.name)


COMMAND = Command(
    help="list Applications with health, readiness, commits and age (as kubectl get)",
    description="List Applications as kubectl get does, with the columns NAME, HEALTH, READY, REASON, COMMIT "
                "(last synced), CHANGED (last changed), SUSPENDED, AGE, OBSERVED (when and by what command the "
                "status was observed: '12m ago by sync --once') and MESSAGE. Reads the cluster only.",
    epilog=EPILOG, arguments=arguments, run=run, read_only=True)
