"""``python -m agent reconcile NAME``: ask the running agent to sync one Application now.

The command does what ``flux reconcile`` does for Flux objects: it sets the annotation
``heumsi.github.io/reconcile-requested-at`` to the current time (RFC 3339 with nanoseconds) with
a JSON merge patch under its own field manager (``sync_now.FIELD_MANAGER``, never the agent's,
so the agent's server-side apply never owns or removes it). The agent's ``run`` watches
Applications, sees a token it has not handled and runs a pass that asks Git; that pass copies
the token to ``status.lastHandledReconcileAt``. With ``--wait`` the command polls until the two
match and then until the Application is healthy (``Ready`` True), as ``flux reconcile`` and
``argocd app wait`` do, and prints the result.
"""

from __future__ import annotations

import argparse
import signal
import threading
import time

from agent.api import labels
from agent.api.schema import GROUP, KIND
from agent.cli import flags, nametypes, output
from agent.cli.commands import Command
from agent.common import exitcodes, logs
from agent.engine import readiness, suspend, sync_now
from agent.engine.report import printable
from agent.kube.client import Kube, path
from agent.kube.cluster import ApiError

POLL_SECONDS = 0.5
EPILOG = """exit codes:
  0  the request was set (without --wait); with --wait: the agent handled it, its sync
     succeeded and the Application is healthy (Ready=True)
  1  with --wait: handled and synced, but not healthy (Ready=True) within --timeout, or it is
     Degraded or Stalled (waiting cannot help), or the wait was ended by SIGTERM or SIGINT
     (before or after the request was handled)
  2  the Application does not exist, a flag was wrong, the request could not be set; with
     --wait: it was not handled within --timeout (no agent run seems to be handling requests),
     or the agent handled it and the sync failed
"""
_env = flags.env  # a flag's default from GITOPS_AGENT_<NAME>, checked (and named) by the flag's type


def arguments(parser: argparse.ArgumentParser) -> None:
    """``reconcile``'s arguments and flags."""
    parser.add_argument("name", metavar="NAME", type=nametypes.dns_subdomain, help="the Application's name")
    parser.add_argument("-n", "--namespace", default=_env("NAMESPACE", "default"), type=nametypes.dns_label,
                        help="the Application's namespace (default: default) [env GITOPS_AGENT_NAMESPACE]")
    flags.switch(parser, "--wait", variable="RECONCILE_WAIT", default=False, negatable=False,
                 help="wait until the agent handled the request and the Application is healthy (Ready=True), "
                      "Degraded or Stalled, then print the result [env GITOPS_AGENT_RECONCILE_WAIT]")
    parser.add_argument("--timeout", type=flags.number(0, 86400, above=True), default=_env("RECONCILE_TIMEOUT", "300"),
                        help="seconds --wait waits; above 0, at most 86400 (default: 300, as flux reconcile) "
                             "[env GITOPS_AGENT_RECONCILE_TIMEOUT]")
    flags.add_kubeconfig_flags(parser)
    flags.add_log_flags(parser, _env)


def describe(app: dict) -> tuple[bool, str]:
    """(synced, one line) for an Application whose request was handled: True when its
    ``Synced`` condition is True; the line names the ``Ready`` condition's status, reason and
    message and ``status.lastSyncedCommit`` (``none`` when nothing was synced yet). Pure."""
    status = app.get("status") or {}
    found = {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, dict)}
    ready, synced = found.get("Ready") or {}, found.get("Synced") or {}
    ok = synced.get("status") == "True"
    line = (f"Ready={ready.get('status', 'Unknown')} ({ready.get('reason', 'NoStatus')}: "
            f"{ready.get('message', 'no Ready condition')}); lastSyncedCommit {status.get('lastSyncedCommit') or 'none'}")
    if not ok:
        line = f"sync failed: {synced.get('message') or 'no Synced condition'}; {line}"
    return ok, line


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """Carry out ``reconcile`` (see EPILOG for the exit codes). Errors are one line on stderr
    (``logs.problem``: a JSON object with ``--log-format json``, as every other line there)."""
    subject = f"{KIND}/{args.namespace}/{args.name}"
    try:
        kube = Kube(args.kubeconfig, args.context)
    except ApiError as err:
        logs.problem(str(err))
        return exitcodes.FAILED
    token = sync_now.new_token()
    url = path(GROUP, KIND, args.namespace, args.name)
    try:
        live = kube.request("GET", url)
        hold = suspend.application(None, live) if live else None
        if hold is not None:  # as `flux reconcile` refuses a suspended object at once
            logs.problem(f"{subject} is suspended ({hold.mechanism}), so no pass would sync it; resume it "
                         "first (see Suspend and hot-fix in the README)")
            return exitcodes.FAILED
        kube.request("PATCH", url, body={"metadata": {"annotations": {labels.RECONCILE_REQUESTED_AT: token}}},
                     query={"fieldManager": sync_now.FIELD_MANAGER}, content_type="application/merge-patch+json")
    except ApiError as err:
        if err.status == 404:
            logs.problem(f"{subject} not found (no such Application in namespace {args.namespace}, "
                         "or the Application CRD is not installed)")
        else:
            logs.problem(f"{subject}: could not request a sync: {err}")
        return exitcodes.FAILED
    print(f"{subject}: sync requested ({labels.RECONCILE_REQUESTED_AT}={token})", flush=True)
    if not args.wait:
        return exitcodes.OK
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: (stop.set(), kube.interrupt.set()))
                for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        return _wait(kube, url, subject, token, args, stop)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _wait(kube: Kube, url: str, subject: str, token: str, args: argparse.Namespace, stop: threading.Event) -> int:
    """``--wait``: poll the Application until the request is handled and then until it is
    healthy, Degraded or Stalled (``readiness.state``), ``--timeout`` or ``stop`` (a signal).
    Returns the exit code (EPILOG)."""
    deadline = time.monotonic() + args.timeout
    handled = False
    while True:
        try:
            app = kube.request("GET", url)
        except ApiError as err:
            if stop.is_set():  # the signal ended the request in flight (kube.interrupt)
                return _gave_up(subject, None, handled, args, True)
            logs.problem(f"{subject}: reading it failed while waiting: {err}")
            return exitcodes.FAILED
        if app is None:
            logs.problem(f"{subject} was deleted while waiting for the request to be handled")
            return exitcodes.FAILED
        if not handled and sync_now.handled(app) == token:
            ok, line = describe(app)
            if not ok:
                logs.problem(printable(f"{subject}: handled, {line}"))  # a status message may hold a newline
                return exitcodes.FAILED
            handled = True
            print(printable(f"{subject}: handled: {line}"), flush=True)
        if handled:
            now = readiness.state(app.get("status"))
            if now == readiness.Wait.HEALTHY:
                print(printable(f"{subject}: healthy: {describe(app)[1]}"), flush=True)
                return exitcodes.OK
            if now == readiness.Wait.FAILED:
                logs.problem(printable(f"{subject}: Degraded or Stalled, waiting cannot help: {describe(app)[1]}"))
                return exitcodes.CHANGED
        if stop.is_set() or time.monotonic() >= deadline:
            return _gave_up(subject, app, handled, args, stop.is_set())
        stop.wait(POLL_SECONDS)


def _gave_up(subject: str, app: dict | None, handled: bool, args: argparse.Namespace, interrupted: bool) -> int:
    """The line and exit code when ``--wait`` ends unfinished: 1 when a signal ended it (in
    either phase: interrupted), else 2 when the request was never handled (no agent seems to
    run), else 1 (handled and synced, not healthy in time)."""
    if interrupted:
        state = "handled and synced, but not healthy" if handled else "the request was not handled yet"
        detail = f": {describe(app)[1]}" if handled and app is not None else ""
        logs.problem(printable(f"{subject}: {state}; the wait was interrupted by a signal{detail}"))
        return exitcodes.CHANGED
    why = f"within {output.duration(args.timeout)}"
    if not handled:
        logs.problem(f"{subject}: the request was not handled {why}: no agent run seems "
                     f"to be handling requests (is it running, leading and allowed to see namespace "
                     f"{args.namespace}? A pass that fails before writing status handles none; see its log)")
        return exitcodes.FAILED
    logs.problem(printable(f"{subject}: handled and synced, but not healthy {why}: {describe(app)[1]}"))
    return exitcodes.CHANGED


COMMAND = Command(
    help="ask the running agent to sync one Application now",
    description=f"Set the annotation {labels.RECONCILE_REQUESTED_AT} on the Application to the current time, "
                "so that the running agent (run) syncs it now, asking Git for the newest commit. "
                "With --wait, wait until the agent handled the request and print the result.",
    epilog=EPILOG, arguments=arguments, run=run)
