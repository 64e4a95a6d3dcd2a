"""``python -m agent reconcile NAME ...`` (or ``-l SELECTOR``): ask the running agent to sync these Applications now.

The command does what ``flux reconcile`` does for Flux objects: it sets the annotation
``heumsi.github.io/reconcile-requested-at`` to the current time (RFC 3339 with nanoseconds) with
a JSON merge patch under its own field manager (``sync_now.FIELD_MANAGER``, never the agent's,
so the agent's server-side apply never owns or removes it). The agent's ``run`` watches
Applications, sees a token it has not handled and runs a pass that asks Git; that pass copies
the token to ``status.lastHandledReconcileAt``. With ``--wait`` the command polls until the two
match and then until the Application is healthy (``Ready`` True), as ``flux reconcile`` and
``argocd app wait`` do, and prints the result. Several Applications (names, or ``-l``: a label
selector in ``-n``'s namespace) get one token; the wait is for them alone, so another team's broken
Application does not fail it (issue 46, item 3), and its exit code is the worst of theirs.
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
EPILOG = """exit codes (with several Applications, the worst of theirs; others are not looked at):
  0  the request was set (without --wait); with --wait: the agent handled it, its sync
     succeeded and the Application is healthy (Ready=True)
  1  with --wait: handled and synced, but not healthy (Ready=True) within --timeout, or it is
     Degraded or Stalled (waiting cannot help), or the wait was ended by SIGTERM or SIGINT
     (before or after the request was handled)
  2  the Application does not exist, -l matches none, a flag was wrong, the request could not
     be set; with --wait: it was not handled within --timeout (no agent run seems to be
     handling requests), or the agent handled it and the sync failed
"""
_env = flags.env  # a flag's default from GITOPS_AGENT_<NAME>, checked (and named) by the flag's type


def arguments(parser: argparse.ArgumentParser) -> None:
    """``reconcile``'s arguments and flags."""
    parser.add_argument("name", metavar="NAME", nargs="*", type=nametypes.dns_subdomain,
                        help="the Applications' names (one or more; or -l)")
    parser.add_argument("-l", "--selector", type=nametypes.label_selector,
                        help="label selector, as kubectl takes it (team=a, team!=b, 'team in (a,b)', env): every "
                             "Application of the namespace it matches; a suspended one is left out with a line; "
                             "matching none is an error (not with NAME)")
    parser.add_argument("-n", "--namespace", default=_env("NAMESPACE", "default"), type=nametypes.dns_label,
                        help="the Applications' namespace (default: default) [env GITOPS_AGENT_NAMESPACE]")
    flags.switch(parser, "--wait", variable="RECONCILE_WAIT", default=False, negatable=False,
                 help="wait until the agent handled the request and each chosen Application is healthy "
                      "(Ready=True), Degraded or Stalled, then print the result; only they are waited for "
                      "[env GITOPS_AGENT_RECONCILE_WAIT]")
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
    (``logs.problem``: a JSON object with ``--log-format json``, as every other line there).
    Raises ``flags.UsageError`` for names and ``-l`` together (as kubectl) or neither."""
    if args.selector and args.name:  # kubectl refuses the pair too: the names would ignore the selector
        raise flags.UsageError("name cannot be provided when a selector is specified", flag="--selector")
    if not args.selector and not args.name:
        raise flags.UsageError("give the Applications' names (NAME ...) or a label selector (-l)", flag="NAME")
    try:
        kube = Kube(args.kubeconfig, args.context)
    except ApiError as err:
        logs.problem(str(err))
        return exitcodes.FAILED
    token = sync_now.new_token()
    targets = _requested(kube, args, token)
    if targets is None:
        return exitcodes.FAILED
    if not args.wait:
        return exitcodes.OK
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: (stop.set(), kube.interrupt.set()))
                for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        return _wait(kube, targets, token, args, stop)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _requested(kube: Kube, args: argparse.Namespace, token: str) -> list[tuple[str, str]] | None:
    """Set the request ``token`` on each chosen Application (``NAME ...`` or ``-l`` in ``-n``)
    and print one line each; ``(subject, url)`` of each, or None after one line on stderr when
    nothing is requested: a named one is missing or suspended, the selector matches none, or
    an API call failed. A suspended one the selector matches is left out, with one line; all
    are checked before the first request is set."""
    where = f"namespace {args.namespace}"
    try:
        if args.selector:
            found = kube.list_in(GROUP, KIND, args.namespace, args.selector)
            lives = {a["metadata"]["name"]: a for a in found}
            if not lives:
                logs.problem(printable(f"no Application in {where} matches -l {args.selector!r}: nothing to "
                                       "reconcile"))
                return None
        else:
            lives = {name: kube.request("GET", path(GROUP, KIND, args.namespace, name)) for name in args.name}
    except ApiError as err:
        logs.problem(f"{KIND} in {where}: could not read: {err}")
        return None
    chosen = []
    for name, live in sorted(lives.items()) if args.selector else lives.items():
        subject = f"{KIND}/{args.namespace}/{name}"
        if live is None:
            logs.problem(f"{subject} not found (no such Application in {where}, or the Application CRD is not installed)")
            return None
        hold = suspend.application(None, live)
        if hold is not None:  # as `flux reconcile` refuses a suspended object at once
            logs.problem(f"{subject} is suspended ({hold.mechanism}), so no pass would sync it; resume it "
                         "first (see Suspend and hot-fix in the README)")
            if not args.selector:
                return None
            continue
        chosen.append((subject, path(GROUP, KIND, args.namespace, name)))
    if not chosen:
        logs.problem(printable(f"every Application -l {args.selector!r} matches in {where} is suspended: "
                               "nothing to reconcile"))
        return None
    for subject, url in chosen:
        try:
            kube.request("PATCH", url, body={"metadata": {"annotations": {labels.RECONCILE_REQUESTED_AT: token}}},
                         query={"fieldManager": sync_now.FIELD_MANAGER}, content_type="application/merge-patch+json")
        except ApiError as err:
            logs.problem(f"{subject}: could not request a sync: {err}")
            return None
        print(f"{subject}: sync requested ({labels.RECONCILE_REQUESTED_AT}={token})", flush=True)
    return chosen


def _wait(kube: Kube, targets: list[tuple[str, str]], token: str, args: argparse.Namespace,
          stop: threading.Event) -> int:
    """``--wait``: poll each Application of ``targets`` (``(subject, url)``) until its request
    is handled and then until it is healthy, Degraded or Stalled (``readiness.state``),
    ``--timeout`` or ``stop`` (a signal). Returns the worst exit code of them (EPILOG)."""
    deadline = time.monotonic() + args.timeout
    handled: dict[str, bool] = {}
    codes: dict[str, int] = {}
    last: dict[str, dict | None] = {}
    while True:
        for subject, url in targets:
            if subject in codes:
                continue
            try:
                app = last[subject] = kube.request("GET", url)
            except ApiError as err:
                if stop.is_set():  # the signal ended the request in flight (kube.interrupt)
                    break
                logs.problem(f"{subject}: reading it failed while waiting: {err}")
                codes[subject] = exitcodes.FAILED
                continue
            code = _step(subject, app, token, handled)
            if code is not None:
                codes[subject] = code
        if len(codes) == len(targets):
            return max(codes.values())
        if stop.is_set() or time.monotonic() >= deadline:
            for subject, _ in targets:
                if subject not in codes:
                    codes[subject] = _gave_up(subject, last.get(subject), handled.get(subject, False), args,
                                              stop.is_set())
            return max(codes.values())
        stop.wait(POLL_SECONDS)


def _step(subject: str, app: dict | None, token: str, handled: dict[str, bool]) -> int | None:
    """One look at ``app`` (``subject``'s live object) while waiting: its exit code once it is
    decided (deleted or its sync failed: 2; Degraded or Stalled: 1; healthy: 0), else None.
    Marks ``handled[subject]`` and prints the line when the request is seen handled."""
    if app is None:
        logs.problem(f"{subject} was deleted while waiting for the request to be handled")
        return exitcodes.FAILED
    if not handled.get(subject) and sync_now.handled(app) == token:
        ok, line = describe(app)
        if not ok:
            logs.problem(printable(f"{subject}: handled, {line}"))  # a status message may hold a newline
            return exitcodes.FAILED
        handled[subject] = True
        print(printable(f"{subject}: handled: {line}"), flush=True)
    if handled.get(subject):
        now = readiness.state(app.get("status"))
        if now == readiness.Wait.HEALTHY:
            print(printable(f"{subject}: healthy: {describe(app)[1]}"), flush=True)
            return exitcodes.OK
        if now == readiness.Wait.FAILED:
            logs.problem(printable(f"{subject}: Degraded or Stalled, waiting cannot help: {describe(app)[1]}"))
            return exitcodes.CHANGED
    return None


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
    help="ask the running agent to sync Applications now",
    description=f"Set the annotation {labels.RECONCILE_REQUESTED_AT} on each named Application (or each one -l "
                "matches) to the current time, so that the running agent (run) syncs it now, asking Git for the "
                "newest commit. With --wait, wait until the agent handled the request and print the result.",
    epilog=EPILOG, arguments=arguments, run=run)
