"""Command line: ``python -m agent sync --once ...``.

Every flag can also be given as an environment variable (named in ``--help``); a flag on the
command line wins over the variable.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import threading

from agent.api.labels import AGENT_NAME
from agent.cli import commands as ci, explain_cmd, flags, get_cmd, nametypes, notify_flags, reconcile_cmd
from agent.common import arenas, exitcodes, logs
from agent.engine import backoff, guards, readiness, sync, writes
from agent.kube import ratelimit
from agent.kube.client import ApiError, Kube
from agent.source.cachedir import default_cache_dir
from agent.source.mirror import cache_path, redact, source_id

EPILOG = """exit codes:
  0  success: the cluster matches the commit; with --wait: and every Application of the pass
     is healthy (Ready=True)
  1  success, and the pass changed something (only with --exit-code); with --dry-run:
     something would change (nothing was written); with --wait: an Application was not
     healthy when the time was up, one is Degraded or Stalled (waiting cannot help), or the
     wait was ended by SIGTERM or SIGINT (the report is printed all the same)
  2  failure: the source could not be fetched, a file or Application was invalid, an API call
     failed, or pruning was refused (with --wait: nothing is waited for); failing Applications
     and files are named on stderr
"""


RUN_EPILOG = """exit codes:
  0  stopped by SIGTERM or SIGINT (the running pass finished or was abandoned cleanly)
  2  failure: the configuration could not be loaded, the HTTP address could not be bound, or
     this replica lost the leader lease
"""


_env = flags.env  # a flag's default from GITOPS_AGENT_<NAME>, checked by the flag's type


def add_source_flags(parser: argparse.ArgumentParser) -> None:
    """Flags shared by every command that syncs: source, scope, cluster connection, logging."""
    flags.add_log_flags(parser, _env, "WARNING for sync, INFO for run")
    def flag(name, env, help_, **kw):
        parser.add_argument(name, help=f"{help_} [env GITOPS_AGENT_{env}]", **kw)

    flag("--repo", "REPO", "Git repository: local path, file://, https:// or ssh:// URL",
         default=_env("REPO"), required=_env("REPO") is None, type=flags.repo)
    flag("--ref", "REF", "branch, tag or commit SHA to sync, also as a full name (refs/heads/main, refs/tags/v1); "
         "default: the remote's HEAD", default=_env("REF"), type=flags.non_empty)
    flag("--path", "PATH", "directory inside the repository holding Application YAML (default: .)",
         default=_env("PATH", "."), type=flags.non_empty)
    flag("--namespace", "NAMESPACE", "namespace for Applications that name none (default: default)",
         default=_env("NAMESPACE", "default"), type=nametypes.dns_label)
    flag("--source-id", "SOURCE_ID", "name for this repository and path in the heumsi.github.io/source label "
         "of its Applications; only they are ever pruned by this source (default: derived from --repo "
         "and --path; set it to keep ownership when the URL or path changes)", default=_env("SOURCE_ID"),
         type=nametypes.label_value)
    flags.add_kubeconfig_flags(parser)
    flag("--cache-dir", "CACHE_DIR", f"where Git mirrors are kept (default: {default_cache_dir()})",
         default=_env("CACHE_DIR", default_cache_dir()), type=flags.non_empty)
    flag("--api-retry-seconds", "API_RETRY_SECONDS", "how long one API call retries transient faults "
         "(connection errors, 429, 5xx) before the pass gives up; 0 to 600 (default: 20)",
         type=flags.number(0, 600), default=_env("API_RETRY_SECONDS", "20"))
    flag("--concurrency", "CONCURRENCY", "API writes (apply, prune, status, events) a pass sends at once; "
         f"1 to {writes.MAX_CONCURRENCY} (default: {writes.DEFAULT_CONCURRENCY})",
         type=flags.number(1, writes.MAX_CONCURRENCY, integer=True, unit="requests"),
         default=_env("CONCURRENCY", str(writes.DEFAULT_CONCURRENCY)))
    flag("--kube-api-qps", "KUBE_API_QPS", "client-side rate limit: API requests per second, on average; "
         f"0.1 to 10000 (default: none when the API server has API Priority and Fairness, else "
         f"{ratelimit.DEFAULT_QPS:g}; as Flux)",
         type=flags.number(0.1, 10000, unit="requests per second"), default=_env("KUBE_API_QPS"))
    flag("--kube-api-burst", "KUBE_API_BURST", "client-side rate limit: API requests allowed at once above "
         f"the rate after a quiet spell; 1 to 100000 (default: none when the API server has API Priority "
         f"and Fairness, else {ratelimit.DEFAULT_BURST}; as Flux)",
         type=flags.number(1, 100000, integer=True, unit="requests"), default=_env("KUBE_API_BURST"))
    flag("--fetch-timeout", "FETCH_TIMEOUT", "seconds a Git fetch may take; above 0, at most 3600 (default: 60)",
         type=flags.number(0, 3600, above=True), default=_env("FETCH_TIMEOUT", "60"))
    flags.switch(parser, "--prune", variable="PRUNE", default=True,
                 help="delete Applications (and children) the agent owns that Git no longer has "
                      "(default: on) [env GITOPS_AGENT_PRUNE]")
    flags.add_submodules_switch(parser)
    flags.switch(parser, "--allow-empty", variable="ALLOW_EMPTY", default=False, negatable=False,
                 help="allow a commit with no Applications to prune every Application the agent owns "
                      "[env GITOPS_AGENT_ALLOW_EMPTY]")
    flag("--max-prune-share", "MAX_PRUNE_SHARE", "a pass that would prune more than this share (0 to 1) of "
         f"this source's Applications, and more than {guards.MIN_PRUNES_GUARDED}, prunes nothing and exits 2 "
         "(default: 0.5; 1.0 turns the guard off)", type=flags.number(0, 1, unit=""),
         default=_env("MAX_PRUNE_SHARE", "0.5"))
    flags.add_credential_flags(parser)
    flag("--allowed-namespaces", "ALLOWED_NAMESPACES", "comma-separated namespace names or globs "
         "(team-*) that Applications may target; an Application elsewhere is refused and nothing there is "
         "created or pruned; plain names need only namespaced Roles (default: every namespace)",
         default=_env("ALLOWED_NAMESPACES"), type=nametypes.namespace_patterns)




def build_parser() -> argparse.ArgumentParser:
    parser = flags.Parser(prog=flags.prog_name(), description="GitOps sync agent for Application resources.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {flags.version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    sync_parser = commands.add_parser(
        "sync", help="run one reconcile pass", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Fetch the repository, apply its Applications and their Deployments and "
                    "Services, prune what Git no longer has, write status, print a summary.")
    sync_parser.add_argument("--once", action="store_true",
                             help="run one pass and exit (the only mode of 'sync'; kept for clarity)")
    sync_parser.add_argument("--exit-code", action="store_true",
                             help="exit 1 when the pass changed something (like git diff --exit-code)")
    sync_parser.add_argument("--dry-run", action="store_true",
                             help="the whole pass as a server-side dry run: nothing is written (no "
                                  "changes, events, status or namespaces); exit 1 when something would change")
    sync_parser.add_argument(
        "--wait", nargs="?", metavar="DURATION", const=readiness.DEFAULT_SECONDS, default=_env("WAIT"),
        type=flags.number(0, 86400, above=True),
        help="after the pass, wait until every Application it synced from Git is healthy (Ready=True), one is "
             "Degraded or Stalled, or DURATION is up (90s, 2m, 1h; a number is seconds; alone: 5m), rewriting each "
             "one's status as its children become ready; exit 1 when not all are healthy; refused with --dry-run "
             "(nothing is applied to wait for; the variable is ignored there) [env GITOPS_AGENT_WAIT]")
    add_source_flags(sync_parser)
    notify_flags.add(sync_parser)
    ci.add_output_flags(sync_parser, _env)
    diff_parser = commands.add_parser(
        "diff", help="show what a sync would change, without changing anything", epilog=ci.DIFF_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="A unified diff of live against desired for every object a sync would create, "
                    "update or prune, computed with a server-side dry-run apply (server defaults never "
                    "show as changes). Takes the same source and scope flags as sync.")
    add_source_flags(diff_parser)
    ci.add_output_flags(diff_parser, _env)
    ci.add_validate_parser(commands, _env, default_cache_dir())
    reconcile_cmd.add_parser(commands, _env)
    get_cmd.add_parser(commands, _env)
    explain_cmd.add_parser(commands, _env)
    run_parser = commands.add_parser(
        "run", help="run passes on a schedule (the in-cluster Deployment)", epilog=RUN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run a pass every --interval seconds and whenever an Application or one of its "
                    "children changes, serve /healthz, /readyz and /metrics, optionally as one of "
                    "several replicas with leader election.")
    add_source_flags(run_parser)
    notify_flags.add(run_parser)
    run_parser.add_argument("--interval", type=flags.number(1, 86400), default=_env("INTERVAL", "60"),
                            help="seconds between scheduled passes; 1 to 86400 (default: 60) "
                                 "[env GITOPS_AGENT_INTERVAL]")
    run_parser.add_argument("--jitter", type=flags.number(0, 3600), default=_env("JITTER", "0"),
                            help="at most this many random seconds added to each interval; 0 to 3600 "
                                 "(default: 0) [env GITOPS_AGENT_JITTER]")
    run_parser.add_argument("--relist-interval", type=flags.number(10, 86400), default=_env("RELIST_INTERVAL", "600"),
                            help="seconds after which each watch lists its kind again, bounding any divergence "
                                 "between what the passes read and the cluster; 10 to 86400 (default: 600) "
                                 "[env GITOPS_AGENT_RELIST_INTERVAL]")
    run_parser.add_argument("--http-addr", default=_env("HTTP_ADDR", ":8080"), type=nametypes.http_addr,
                            help="HOST:PORT for /healthz, /readyz, /metrics (default: :8080) "
                                 "[env GITOPS_AGENT_HTTP_ADDR]")
    flags.switch(run_parser, "--leader-elect", variable="LEADER_ELECT", default=False,
                 help="only the holder of a coordination.k8s.io Lease syncs (default: off) "
                      "[env GITOPS_AGENT_LEADER_ELECT]")
    run_parser.add_argument("--lease-name", default=_env("LEASE_NAME", AGENT_NAME), type=nametypes.dns_subdomain,
                            help="Lease name (default: gitops-agent) [env GITOPS_AGENT_LEASE_NAME]")
    run_parser.add_argument("--lease-namespace", default=_env("LEASE_NAMESPACE", os.environ.get("POD_NAMESPACE", "default")),
                            type=nametypes.dns_label,
                            help="Lease namespace (default: $POD_NAMESPACE, else default) [env GITOPS_AGENT_LEASE_NAMESPACE]")
    run_parser.add_argument("--lease-duration", type=flags.number(3, 3600, integer=True),
                            default=_env("LEASE_DURATION", "15"),
                            help="whole seconds a lease is valid without renewal; 3 to 3600 (default: 15) "
                                 "[env GITOPS_AGENT_LEASE_DURATION]")
    run_parser.add_argument("--identity", default=_env("IDENTITY", f"{socket.gethostname()}-{os.getpid()}"),
                            type=flags.non_empty,
                            help="this replica's name in the Lease (default: HOST-PID) [env GITOPS_AGENT_IDENTITY]")
    flags.switch(run_parser, "--watch", variable="WATCH", default=True,
                 help="also pass when an Application or child changes (default: on) [env GITOPS_AGENT_WATCH]")
    run_parser.add_argument("--shutdown-grace", type=flags.number(0, 3600), default=_env("SHUTDOWN_GRACE", "20"),
                            help="seconds SIGTERM waits for a running pass; 0 to 3600 (default: 20) "
                                 "[env GITOPS_AGENT_SHUTDOWN_GRACE]")
    run_parser.add_argument("--webhook-secret-file", default=_env("WEBHOOK_SECRET_FILE"), type=flags.readable_file,
                            help="enable POST /hooks/git with the secret in this file (or set the secret itself in "
                                 "GITOPS_AGENT_WEBHOOK_SECRET); without one the path answers 404 "
                                 "[env GITOPS_AGENT_WEBHOOK_SECRET_FILE]")
    run_parser.add_argument("--min-retry-delay", type=flags.number(0, 3600, above=True),
                            default=_env("MIN_RETRY_DELAY", f"{backoff.BASE_SECONDS:g}"),
                            help="seconds before the first retry of an Application whose apply failed; each "
                                 "further failure doubles it; above 0, at most 3600 (default: "
                                 f"{backoff.BASE_SECONDS:g}) [env GITOPS_AGENT_MIN_RETRY_DELAY]")
    run_parser.add_argument("--max-retry-delay", type=flags.number(0, 86400, above=True),
                            default=_env("MAX_RETRY_DELAY", f"{backoff.MAX_SECONDS:g}"),
                            help="the longest wait between retries, seconds; at least --min-retry-delay, at most "
                                 f"86400 (default: {backoff.MAX_SECONDS:g}) [env GITOPS_AGENT_MAX_RETRY_DELAY]")
    add_ui_flags(run_parser)
    return parser


def add_ui_flags(run_parser: argparse.ArgumentParser) -> None:
    """``run``'s status page flags (``agent/server/ui.py``); checked together by ``ui_token``."""
    run_parser.add_argument("--ui-address", default=_env("UI_ADDRESS"), type=nametypes.http_addr,
                            help="HOST:PORT of the read-only status page (/, /applications/NS/NAME, /api/v1/...); "
                                 "off when unset; a non-loopback address needs --ui-token-file or --ui-anonymous "
                                 "(default: off) [env GITOPS_AGENT_UI_ADDRESS]")
    run_parser.add_argument("--ui-token-file", default=_env("UI_TOKEN_FILE"), type=flags.readable_file,
                            help="file holding the bearer token every status page request must carry "
                                 "(Authorization: Bearer TOKEN, or as the password a browser asks for) "
                                 "[env GITOPS_AGENT_UI_TOKEN_FILE]")
    flags.switch(run_parser, "--ui-anonymous", variable="UI_ANONYMOUS", default=False, negatable=False,
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


def options_from(args: argparse.Namespace) -> sync.Options:
    """sync.Options from parsed flags. Raises flags.UsageError naming the flag when the token
    file cannot be read or the credentials contradict ``--repo``'s user-info
    (``commands.credentials``)."""
    credentials = ci.credentials(args)
    return sync.Options(repo=args.repo, ref=args.ref, path=args.path, namespace=args.namespace,
                        prune=args.prune, allow_empty=args.allow_empty, cache_dir=args.cache_dir,
                        fetch_timeout=args.fetch_timeout, credentials=credentials,
                        source_id=args.source_id or source_id(args.repo, args.path),
                        submodules=args.submodules, allowed_namespaces=args.allowed_namespaces,
                        max_prune_share=args.max_prune_share)


def _setup_logging(args: argparse.Namespace) -> None:
    logs.setup(args.log_format, args.log_level, args.command)


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code (see EPILOG). Unexpected errors print their
    traceback and exit 2, never 1 (which means "changed something")."""
    try:
        return _main(argv)
    except flags.UsageError as err:  # found after parsing: worded as argparse words a bad value
        print(flags.usage_line(getattr(err, "command", None), err), file=sys.stderr)
        return exitcodes.FAILED
    except SystemExit as stop:
        if isinstance(stop.code, str):
            print(stop.code, file=sys.stderr)
            return exitcodes.FAILED
        return exitcodes.FAILED if stop.code not in (0, None) else exitcodes.OK
    except Exception:  # a bug: say so loudly, but keep the documented exit code
        logging.getLogger("agent").exception("unexpected error")
        return exitcodes.FAILED


def _main(argv: list[str] | None) -> int:
    arenas.limit()  # before any thread starts (agent/common/arenas.py)
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    try:
        return _command(args, argv)
    except flags.UsageError as err:
        err.command = args.command
        raise


def _given(argv: list[str], flag: str, value: float, *, named: bool = True) -> str:
    """How a number in a usage error is named: ``--flag 5`` (``5`` without ``named``) when it
    came from the command line or is the default, ``GITOPS_AGENT_X='5'`` when from the variable."""
    variable = flags.ENV_PREFIX + flag.removeprefix("--").replace("-", "_").upper()
    on_command_line = any(a == flag or a.startswith(flag + "=") for a in argv)
    raw = os.environ.get(variable)
    if raw is not None and not on_command_line:
        return f"{variable}={raw!r}"
    return f"{flag} {value:g}" if named else f"{value:g}"


def _command(args: argparse.Namespace, argv: list[str]) -> int:
    _setup_logging(args)
    if args.command == "reconcile":
        return reconcile_cmd.run(args)
    if args.command == "get":
        return get_cmd.run(args)
    if args.command == "explain":
        return explain_cmd.run(args)
    secret = None
    if args.command == "run":
        if args.min_retry_delay > args.max_retry_delay:
            low = _given(argv, "--min-retry-delay", args.min_retry_delay, named=False)
            high = _given(argv, "--max-retry-delay", args.max_retry_delay)
            raise flags.UsageError(f"{low} is not allowed: must not be more than {high} (the first retry "
                                   "cannot wait longer than the longest)", flag="--min-retry-delay")
        from agent.server import webhook

        # popped: Git and SSH, started by the passes, never inherit the secret
        secret = webhook.load_secret(args.webhook_secret_file, os.environ.pop("GITOPS_AGENT_WEBHOOK_SECRET", None))
        args.ui_token = ui_token(args)
    if args.command == "validate":
        return ci.run_validate(args)
    if getattr(args, "wait", None) is not None and args.dry_run:
        if any(a == "--wait" or a.startswith("--wait=") for a in argv):
            raise flags.UsageError("--wait is not allowed with --dry-run: a dry run applies nothing to wait for "
                                   "(use one or the other)", flag="--wait")
        args.wait = None  # GITOPS_AGENT_WAIT, set for the job's sync, does not stop its dry run
    flags.cache_dir(args.cache_dir)
    try:
        opts = options_from(args)
        notify = notify_flags.settings(args, opts.source_id) if args.command in ("sync", "run") else None
        kube = Kube(args.kubeconfig, args.context, retry_seconds=args.api_retry_seconds,
                    dry_run=ci.is_dry_run(args), concurrency=args.concurrency, qps=args.kube_api_qps,
                    burst=args.kube_api_burst)
    except (ApiError, OSError) as err:
        if args.command != "run":
            return ci.report_failure(args, str(err))
        logs.problem(redact(str(err)))
        return exitcodes.FAILED
    if args.command == "run":
        return run_forever(kube, opts, args, secret, notify)
    return ci.run_pass(kube, opts, args, notify)


def _serve_ui(args: argparse.Namespace, opts: sync.Options, cache, runner) -> bool:
    """Start the status page on ``--ui-address``; False (after one problem line) when it cannot listen."""
    from agent.server import gitinfo, ui, uiserver
    from agent.server.endpoints import listen_problem

    commits = gitinfo.Commits(cache_path(opts.cache_dir, opts.repo, opts.credentials))
    git = gitinfo.Explained(opts.repo, opts.ref, opts.cache_dir, opts.credentials, opts.fetch_timeout)
    source = ui.Source(cache, runner, commits, repo_url=opts.repo, git=git)
    try:
        page = uiserver.serve(args.ui_address, source, args.ui_token, args.ui_anonymous)
    except OSError as err:
        given = getattr(args.ui_address, "variable", "--ui-address")
        logs.problem(f"cannot listen on {args.ui_address} ({given}): {listen_problem(args.ui_address, err)}")
        return False
    logging.getLogger("agent.run").info("serving the status page on http://%s:%d/ (%s)", *page.server_address[:2],
                                        "token required" if args.ui_token else "no token")
    return True


def run_forever(kube: Kube, opts: sync.Options, args: argparse.Namespace, secret: bytes | None = None,
                notify=None) -> int:
    """``run``: serve HTTP, elect (optionally), pass on schedule and on changes, stop on SIGTERM.
    ``secret``: the webhook's (``webhook.load_secret``), None for no webhook; ``notify``:
    ``notifier.Settings`` (None: no notifications, no commit status)."""
    from agent.server import webhook
    from agent.server.cache import Cache
    from agent.server.endpoints import Health, Metrics, listen_problem, serve
    from agent.server.runner import Runner

    done = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: done.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    metrics = Metrics()
    kube.on_wait = metrics.rate_limit_wait.observe
    health = Health(max_age=3 * args.interval + 2 * opts.fetch_timeout)
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
    try:
        server = serve(args.http_addr, metrics, health, webhook=hook)
    except OSError as err:  # in use, not an address of this machine, a port below 1024
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        given = getattr(args.http_addr, "variable", "--http-addr")  # the flag, or the variable it came from
        logs.problem(f"cannot listen on {args.http_addr} ({given}): {listen_problem(args.http_addr, err)}")
        return exitcodes.FAILED
    logging.getLogger("agent.run").info("serving /healthz, /readyz, /metrics%s on %s:%d",
                                        ", /hooks/git" if secret else "", *server.server_address[:2])
    if cache is not None and not _serve_ui(args, opts, cache, runner):
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        server.shutdown()
        return exitcodes.FAILED
    election = None
    if args.leader_elect:
        election = kube.elect(args.lease_name, args.lease_namespace, args.identity, runner.start_leading,
                   lambda: (runner.stop_leading(), done.set()), lease_duration=args.lease_duration,
                   renew_deadline=max(2, args.lease_duration * 2 // 3), retry_period=max(1, args.lease_duration // 7),
                   on_request=lambda: runner.request_pass(trigger="forwarded-webhook"))
        if hook is not None:
            hook.forward = election.forward  # a standby hands verified pushes to the leader
        logging.getLogger("agent.run").info("leader election on the Lease %s/%s as %s", args.lease_namespace,
                                            args.lease_name, args.identity)
    else:
        runner.start_leading()
    done.wait()
    runner.shutdown(args.shutdown_grace)  # False when the pass was abandoned: ended all the same, below
    code = exitcodes.FAILED if runner.lost_lease else exitcodes.OK
    if election is not None and not runner.lost_lease:
        election.release()  # the next replica takes over at once instead of after the lease expires
    logging.getLogger("agent.run").info("stopped")
    server.shutdown()
    # Ended here, not by the interpreter's finalization: an abandoned pass's thread would hold
    # its exit, and the watches' and the rate limiter's daemon threads still blocked in C (a TLS
    # read, a lock) made finalization abort now and then (SIGABRT, exit -6, about one stop in
    # three in test_shutdown). Everything to keep is written; the OS releases the rest (the
    # cache lock, sockets, the Git processes' pipes).
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
