"""``python -m agent run``: passes on a schedule and on changes, HTTP endpoints, leader election,
the push webhook and the status page, until SIGTERM or SIGINT (``agent/server/``)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import threading

from agent.api.labels import AGENT_NAME
from agent.cli import flags, nametypes, notify_flags, passrun, sourceflags
from agent.cli.commands import Command
from agent.common import exitcodes, logs, signals
from agent.engine import backoff, sync
from agent.kube.client import Kube
from agent.kube.cluster import ApiError
from agent.source.mirror import cache_path, redact

EPILOG = """exit codes:
  0  stopped by SIGTERM or SIGINT (the running pass finished or was abandoned cleanly)
  2  failure: the configuration could not be loaded, the HTTP address could not be bound, or
     this replica lost the leader lease
"""


_env = flags.env  # a flag's default from GITOPS_AGENT_<NAME>, checked by the flag's type


def arguments(parser: argparse.ArgumentParser) -> None:
    """``run``'s flags: the source's (as ``sync``), notifications, then its own."""
    sourceflags.add_source_flags(parser)
    notify_flags.add(parser)
    _schedule_flags(parser)
    _lease_flags(parser)
    _serving_flags(parser)
    _retry_flags(parser)
    add_ui_flags(parser)


def _schedule_flags(parser: argparse.ArgumentParser) -> None:
    """When passes run (the interval, its jitter, the watches' relist); where the endpoints listen."""
    parser.add_argument("--interval", type=flags.number(1, 86400), default=_env("INTERVAL", "60"),
                        help="seconds between scheduled passes; 1 to 86400 (default: 60) "
                             "[env GITOPS_AGENT_INTERVAL]")
    parser.add_argument("--jitter", type=flags.number(0, 3600), default=_env("JITTER", "0"),
                        help="at most this many random seconds added to each interval; 0 to 3600 "
                             "(default: 0) [env GITOPS_AGENT_JITTER]")
    parser.add_argument("--relist-interval", type=flags.number(10, 86400), default=_env("RELIST_INTERVAL", "600"),
                        help="seconds after which each watch lists its kind again, bounding any divergence "
                             "between what the passes read and the cluster; 10 to 86400 (default: 600) "
                             "[env GITOPS_AGENT_RELIST_INTERVAL]")
    parser.add_argument("--http-addr", default=_env("HTTP_ADDR", ":8080"), type=nametypes.http_addr,
                        help="HOST:PORT for /healthz, /readyz, /metrics and /hooks/git (default: :8080) "
                             "[env GITOPS_AGENT_HTTP_ADDR]")
    parser.add_argument("--probe-addr", default=_env("PROBE_ADDR"), type=nametypes.http_addr,
                        help="HOST:PORT of a listener of their own for /healthz, /readyz and /metrics, which "
                             "keep answering there whatever floods --http-addr or the status page; point the "
                             "kubelet's probes and Prometheus at it (default: off) [env GITOPS_AGENT_PROBE_ADDR]")


def _lease_flags(parser: argparse.ArgumentParser) -> None:
    """Leader election: whether, the Lease and this replica's name in it."""
    flags.switch(parser, "--leader-elect", variable="LEADER_ELECT", default=False,
                 help="only the holder of a coordination.k8s.io Lease syncs (default: off) "
                      "[env GITOPS_AGENT_LEADER_ELECT]")
    parser.add_argument("--lease-name", default=_env("LEASE_NAME", AGENT_NAME), type=nametypes.dns_subdomain,
                        help="Lease name (default: gitops-agent) [env GITOPS_AGENT_LEASE_NAME]")
    parser.add_argument("--lease-namespace", default=_env("LEASE_NAMESPACE", os.environ.get("POD_NAMESPACE", "default")),
                        type=nametypes.dns_label,
                        help="Lease namespace (default: $POD_NAMESPACE, else default) [env GITOPS_AGENT_LEASE_NAMESPACE]")
    parser.add_argument("--lease-duration", type=flags.number(3, 3600, integer=True),
                        default=_env("LEASE_DURATION", "15"),
                        help="whole seconds a lease is valid without renewal; 3 to 3600 (default: 15) "
                             "[env GITOPS_AGENT_LEASE_DURATION]")
    parser.add_argument("--identity", default=_env("IDENTITY", f"{socket.gethostname()}-{os.getpid()}"),
                        type=flags.non_empty,
                        help="this replica's name in the Lease (default: HOST-PID) [env GITOPS_AGENT_IDENTITY]")


def _serving_flags(parser: argparse.ArgumentParser) -> None:
    """Passes on changes, the stop, the push webhook."""
    flags.switch(parser, "--watch", variable="WATCH", default=True,
                 help="also pass when an Application or child changes (default: on) [env GITOPS_AGENT_WATCH]")
    parser.add_argument("--shutdown-grace", type=flags.number(0, 3600), default=_env("SHUTDOWN_GRACE", "20"),
                        help="seconds SIGTERM waits for a running pass; 0 to 3600 (default: 20) "
                             "[env GITOPS_AGENT_SHUTDOWN_GRACE]")
    parser.add_argument("--stuck-pass-after", type=flags.number(1, 86400), default=_env("STUCK_PASS_AFTER"),
                        help="seconds a pass may run before /healthz fails, so that the kubelet restarts a pod "
                             "whose pass is stuck; raise it when a pass of yours takes longer; 1 to 86400 "
                             "(default: 3 intervals, at least 600) [env GITOPS_AGENT_STUCK_PASS_AFTER]")
    parser.add_argument("--webhook-secret-file", default=_env("WEBHOOK_SECRET_FILE"), type=flags.readable_file,
                        help="enable POST /hooks/git with the secret in this file (or set the secret itself in "
                             "GITOPS_AGENT_WEBHOOK_SECRET); without one the path answers 404 "
                             "[env GITOPS_AGENT_WEBHOOK_SECRET_FILE]")


def _retry_flags(parser: argparse.ArgumentParser) -> None:
    """The retries of an Application whose apply failed."""
    parser.add_argument("--min-retry-delay", type=flags.number(0, 3600, above=True),
                        default=_env("MIN_RETRY_DELAY", f"{backoff.BASE_SECONDS:g}"),
                        help="seconds before the first retry of an Application whose apply failed; each "
                             "further failure doubles it; above 0, at most 3600 (default: "
                             f"{backoff.BASE_SECONDS:g}) [env GITOPS_AGENT_MIN_RETRY_DELAY]")
    parser.add_argument("--max-retry-delay", type=flags.number(0, 86400, above=True),
                        default=_env("MAX_RETRY_DELAY", f"{backoff.MAX_SECONDS:g}"),
                        help="the longest wait between retries, seconds; at least --min-retry-delay, at most "
                             f"86400 (default: {backoff.MAX_SECONDS:g}) [env GITOPS_AGENT_MAX_RETRY_DELAY]")


def add_ui_flags(parser: argparse.ArgumentParser) -> None:
    """``run``'s status page flags (``agent/server/ui.py``); checked together by ``ui_token``."""
    parser.add_argument("--ui-address", default=_env("UI_ADDRESS"), type=nametypes.http_addr,
                        help="HOST:PORT of the read-only status page (/, /applications/NS/NAME, /api/v1/...); "
                             "off when unset; a non-loopback address needs --ui-token-file or --ui-anonymous "
                             "(default: off) [env GITOPS_AGENT_UI_ADDRESS]")
    parser.add_argument("--ui-token-file", default=_env("UI_TOKEN_FILE"), type=flags.readable_file,
                        help="file holding the bearer token every status page request must carry "
                             "(Authorization: Bearer TOKEN, or as the password a browser asks for) "
                             "[env GITOPS_AGENT_UI_TOKEN_FILE]")
    flags.switch(parser, "--ui-anonymous", variable="UI_ANONYMOUS", default=False, negatable=False,
                 help="serve the status page without a token on a non-loopback --ui-address (default: off) "
                      "[env GITOPS_AGENT_UI_ANONYMOUS]")


def ui_token(args: argparse.Namespace) -> str | None:
    """The status page's token (None: none needed). Raises UsageError when ``--ui-address`` is
    not loopback and neither ``--ui-token-file`` nor ``--ui-anonymous`` is given, or both are."""
    from agent.server.ui import is_loopback

    if not args.ui_address:
        return None
    if args.ui_token_file and args.ui_anonymous:
        raise flags.UsageError("--ui-anonymous is not allowed with --ui-token-file: choose one", flag="--ui-anonymous")
    if args.ui_token_file:
        return flags.read_token_file(args.ui_token_file, flag="--ui-token-file")
    host = args.ui_address.rpartition(":")[0]
    if not args.ui_anonymous and not (host and is_loopback(host)):
        raise flags.UsageError(f"{flags.shown(args.ui_address)} is not allowed without a token: it is not a loopback "
                               "address, so give --ui-token-file (or --ui-anonymous to serve it to anyone who can "
                               "reach it)", flag="--ui-address")
    return None


def _given(argv: list[str], flag: str, value: float, *, named: bool = True) -> str:
    """How a number in a usage error is named: ``--flag 5`` (``5`` without ``named``) when it
    came from the command line or is the default, ``GITOPS_AGENT_X='5'`` when from the variable."""
    variable = flags.ENV_PREFIX + flag.removeprefix("--").replace("-", "_").upper()
    on_command_line = any(a == flag or a.startswith(flag + "=") for a in argv)
    raw = os.environ.get(variable)
    if raw is not None and not on_command_line:
        return f"{variable}={raw!r}"
    return f"{flag} {value:g}" if named else f"{value:g}"


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """``run`` (see EPILOG for the exit codes). Raises ``flags.UsageError`` when
    ``--min-retry-delay`` exceeds ``--max-retry-delay``, the webhook's secret or the status
    page's token cannot be read, or the status page would be served without a token
    (``ui_token``)."""
    if args.min_retry_delay > args.max_retry_delay:
        low = _given(argv, "--min-retry-delay", args.min_retry_delay, named=False)
        high = _given(argv, "--max-retry-delay", args.max_retry_delay)
        raise flags.UsageError(f"{low} is not allowed: must not be more than {high} (the first retry "
                               "cannot wait longer than the longest)", flag="--min-retry-delay")
    from agent.server import webhook

    # popped: Git and SSH, started by the passes, never inherit the secret
    secret = webhook.load_secret(args.webhook_secret_file, os.environ.pop("GITOPS_AGENT_WEBHOOK_SECRET", None))
    args.ui_token = ui_token(args)
    flags.cache_dir(args.cache_dir)
    try:
        kube, opts, notify = passrun.connect(args, notify=True)
    except (ApiError, OSError) as err:
        logs.problem(redact(str(err)))
        return exitcodes.FAILED
    return run_forever(kube, opts, args, secret, notify)


def _serve_ui(args: argparse.Namespace, opts: sync.Options, cache, runner) -> bool:
    """Start the status page on ``--ui-address``; False (after one problem line) when it cannot listen."""
    from agent.server import gitinfo, ui, uiserver
    from agent.server.endpoints import listen_problem

    commits = gitinfo.Commits(cache_path(opts.cache_dir, opts.repo, opts.credentials))
    git = gitinfo.Explained(opts.repo, opts.ref, opts.cache_dir, opts.credentials, opts.fetch_timeout)
    source = ui.Source(cache, runner, commits, repo_url=opts.repo, git=git,
                       default_profile=opts.default_security_profile)
    try:
        page = uiserver.serve(args.ui_address, source, args.ui_token, args.ui_anonymous)
    except OSError as err:
        given = getattr(args.ui_address, "variable", "--ui-address")
        logs.problem(f"cannot listen on {args.ui_address} ({given}): {listen_problem(args.ui_address, err)}")
        return False
    logging.getLogger("agent.run").info("serving the status page on http://%s:%d/ (%s)", *page.server_address[:2],
                                        "token required" if args.ui_token else "no token")
    return True


def _serve_endpoints(args: argparse.Namespace, metrics, health, hook) -> list | None:
    """Start ``--http-addr`` (and ``--probe-addr`` when given); None (after one problem line, with
    nothing left listening) when one cannot listen."""
    from agent.server.endpoints import listen_problem, serve, serve_probes

    started: list = []
    log = logging.getLogger("agent.run")
    for flag, address in (("--http-addr", args.http_addr), ("--probe-addr", args.probe_addr)):
        if not address:
            continue
        try:
            server = serve(address, metrics, health, webhook=hook) if flag == "--http-addr" else \
                serve_probes(address, metrics, health)
        except OSError as err:  # in use, not an address of this machine, a port below 1024
            for running in started:
                running.shutdown()
            given = getattr(address, "variable", flag)  # the flag, or the variable it came from
            logs.problem(f"cannot listen on {address} ({given}): {listen_problem(address, err)}")
            return None
        started.append(server)
        paths = "/healthz, /readyz, /metrics" + (", /hooks/git" if hook is not None and flag == "--http-addr" else "")
        log.info("serving %s on %s:%d", paths, *server.server_address[:2])
    return started


def run_forever(kube: Kube, opts: sync.Options, args: argparse.Namespace, secret: bytes | None = None,
                notify=None) -> int:
    """``run``: serve HTTP, elect (optionally), pass on schedule and on changes, stop on SIGTERM.
    ``secret``: the webhook's (``webhook.load_secret``), None for no webhook; ``notify``:
    ``notifier.Settings`` (None: no notifications, no commit status)."""
    from agent.server import webhook
    from agent.server.cache import Cache
    from agent.server.endpoints import STUCK_MINIMUM, Health, Metrics
    from agent.server.runner import Runner

    done = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: done.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    metrics = Metrics()
    kube.on_wait = metrics.rate_limit_wait.observe
    health = Health(max_age=3 * args.interval + 2 * opts.fetch_timeout,
                    stuck_after=args.stuck_pass_after or max(3 * args.interval, STUCK_MINIMUM))
    cache = Cache() if args.ui_address else None
    notifier = None
    if notify is not None:
        from agent.notify.notifier import Notifier

        notifier = Notifier(notify, kube=kube, counters=metrics.notifications)
    runner = Runner(kube, opts, interval=args.interval, jitter=args.jitter, metrics=metrics,
                    health=health, watch=args.watch, notifier=notifier, cache=cache,
                    relist_interval=args.relist_interval,
                    retry=backoff.Policy(base=args.min_retry_delay, cap=args.max_retry_delay, skip=True))
    hook = webhook.create(secret, opts, runner, metrics) if secret else None
    servers = _serve_endpoints(args, metrics, health, hook)
    if servers is None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        return exitcodes.FAILED
    if cache is not None and not _serve_ui(args, opts, cache, runner):
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for server in servers:
            server.shutdown()
        return exitcodes.FAILED
    election = None
    if args.leader_elect:
        renew_deadline = max(2, args.lease_duration * 2 // 3)
        election = kube.elect(args.lease_name, args.lease_namespace, args.identity, runner.start_leading,
                   lambda: (runner.stop_leading(), done.set()), lease_duration=args.lease_duration,
                   renew_deadline=renew_deadline, retry_period=max(1, args.lease_duration // 7),
                   on_request=lambda: runner.request_pass(trigger="forwarded-webhook"))
        kube.fence = lambda: election.holds(renew_deadline)  # a paused leader writes nothing (issue 46)
        if hook is not None:
            hook.forward = election.forward  # a standby hands verified pushes to the leader
        logging.getLogger("agent.run").info("leader election on the Lease %s/%s as %s", args.lease_namespace,
                                            args.lease_name, args.identity)
    else:
        runner.start_leading()
    signals.wait(done)  # not done.wait(): agent/common/signals.py
    runner.shutdown(args.shutdown_grace)  # False when the pass was abandoned: ended all the same, below
    code = exitcodes.FAILED if runner.lost_lease else exitcodes.OK
    if election is not None and not runner.lost_lease:
        election.release()  # the next replica takes over at once instead of after the lease expires
    logging.getLogger("agent.run").info("stopped")
    for server in servers:
        server.shutdown()  # within about a second each, whatever their connections do
    # Ended here, not by the interpreter's finalization: an abandoned pass's thread would hold
    # its exit, and the watches' and the rate limiter's daemon threads still blocked in C (a TLS
    # read, a lock) made finalization abort now and then (SIGABRT, exit -6, about one stop in
    # three in test_shutdown). Everything to keep is written; the OS releases the rest (the
    # cache lock, sockets, the Git processes' pipes).
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


COMMAND = Command(
    help="run passes on a schedule (the in-cluster Deployment)",
    description="Run a pass every --interval seconds and whenever an Application or one of its "
                "children changes, serve /healthz, /readyz and /metrics, optionally as one of "
                "several replicas with leader election.",
    epilog=EPILOG, arguments=arguments, run=run, log_level="INFO")
