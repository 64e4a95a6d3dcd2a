"""CI commands: ``validate`` (no cluster), ``diff`` and ``sync`` with ``--dry-run`` and ``--output``.

``diff`` and ``sync --dry-run`` are the ordinary pass (``sync.run``) against a ``Kube`` in dry-run
mode, so what they report is exactly what ``sync`` would do. The report goes to stdout in the
chosen format, logs and progress to stderr; every string printed passes ``source.redact``.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import urllib.parse

from agent.cli import flags, nametypes, output, validate as validate_
from agent.common import exitcodes, logs
from agent.engine.report import printable
from agent.source import mirror as source
from agent.source.cachedir import default_cache_dir

# ``sync`` (and with it the kubernetes client) is imported only by the commands that need a
# cluster: ``validate`` starts in a fraction of the time, which a pre-commit hook notices.


DIFF_EPILOG = """exit codes:
  0  nothing would change: the cluster matches the commit
  1  something would change (create, update, recreate or prune); the report says what
  2  failure: the source could not be fetched, a file or Application was invalid, an API call
     failed, or pruning was refused; a failed diff never exits 1
"""

VALIDATE_EPILOG = """exit codes:
  0  valid: every file parsed and every Application would be accepted by the API server
  2  invalid: every problem is listed with file, line and field; or the source could not be
     read, or a flag was wrong
"""


TOKEN_VARIABLE = "GITOPS_AGENT_GIT_TOKEN"
_env = flags.env  # a flag's default from GITOPS_AGENT_<NAME>, checked (and named) by the flag's type


def validate_main(argv: list[str]) -> int:
    """``python -m agent validate ARGV``, without importing the cluster client. Returns the exit
    code (0 valid, 2 invalid or a user error; see VALIDATE_EPILOG)."""
    try:
        parser = flags.Parser(prog=flags.prog_name())
        add_validate_parser(parser.add_subparsers(dest="command", required=True), _env, default_cache_dir())
        args = parser.parse_args(["validate", *argv])
    except SystemExit as stop:
        if isinstance(stop.code, str):
            print(stop.code, file=sys.stderr)
        return exitcodes.OK if stop.code in (0, None) else exitcodes.FAILED
    logs.setup(args.log_format, args.log_level, "validate")  # as sync sets it up
    try:
        return run_validate(args)
    except flags.UsageError as err:
        print(flags.usage_line("validate", err), file=sys.stderr)
        return exitcodes.FAILED


def add_output_flags(parser: argparse.ArgumentParser, env) -> None:
    """``-o/--output text|json|markdown`` and ``--quiet`` (no progress bar). ``env(name, default)``
    reads ``GITOPS_AGENT_<name>``."""
    parser.add_argument("-o", "--output", type=flags.choice(*output.FORMATS), default=env("OUTPUT", "text"),
                        metavar="{" + ",".join(output.FORMATS) + "}",
                        help="report format on stdout: text, json (one document, see agent/report.schema.json) "
                             "or markdown (for a pull-request comment) [env GITOPS_AGENT_OUTPUT]")
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="no progress bar (it is only drawn when stdout and stderr are terminals)")


def add_validate_parser(commands, env, default_cache_dir: str) -> argparse.ArgumentParser:
    """The ``validate`` subcommand. Its ``--repo`` is never read from the environment, so a CI
    job that sets GITOPS_AGENT_REPO for ``sync`` still validates the work tree with ``--path``."""
    parser = commands.add_parser(
        "validate", help="validate Application YAML without a cluster", epilog=VALIDATE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Check every *.yaml/*.yml under --path (a directory on disk, or with --repo a "
                    "directory in a Git commit) as sync would, plus what the API server would refuse: "
                    "YAML syntax, the Application schema from crd.yaml, DNS-1123 names, duplicate "
                    "Applications, unknown fields, label and annotation syntax. Needs no cluster and no "
                    "kubeconfig; reports every problem in one run.")
    parser.add_argument("--repo", type=flags.repo,
                        help="Git repository to read a commit of (default: none, --path is a directory on disk)")
    parser.add_argument("--ref", type=flags.non_empty,
                        help="branch, tag or commit SHA, also as a full name (refs/heads/main); only with --repo; "
                             "default: the remote's HEAD")
    parser.add_argument("--path", default=".", type=flags.non_empty,
                        help="directory of Application YAML: on disk, or inside the repository with --repo "
                             "(default: .)")
    parser.add_argument("--namespace", default=env("NAMESPACE", "default"), type=nametypes.dns_label,
                        help="namespace for Applications that name none (default: default) [env GITOPS_AGENT_NAMESPACE]")
    parser.add_argument("--cache-dir", default=env("CACHE_DIR", default_cache_dir), type=flags.non_empty,
                        help=f"where Git mirrors are kept (default: {default_cache_dir}) [env GITOPS_AGENT_CACHE_DIR]")
    parser.add_argument("--fetch-timeout", type=flags.number(0, 3600, above=True), default=env("FETCH_TIMEOUT", "60"),
                        help="seconds a Git fetch may take; above 0, at most 3600 (default: 60) "
                             "[env GITOPS_AGENT_FETCH_TIMEOUT]")
    flags.add_credential_flags(parser)
    flags.add_submodules_switch(parser)
    flags.add_log_flags(parser, env)
    add_output_flags(parser, env)
    return parser


def credentials(args) -> source.Credentials:
    """The repository's credentials from the flags: the token from ``--git-token-file`` or
    ``GITOPS_AGENT_GIT_TOKEN``, the user from ``--git-username``, else the user written in an
    ``http(s)://`` ``--repo`` URL, else ``git``; the SSH key and known_hosts files.
    Raises ``flags.UsageError`` when the token file cannot be read, when it or the variable
    holds no token or more than one line (``flags.one_line_token``), or when ``--repo``'s
    user-info and the flags disagree (another user, another token): one would silently win.
    The message names neither the user-info nor the token (a token can be written as the
    URL's user). Without a token here, ``source.effective`` uses the URL's own user and
    password, as before (never sent to a submodule)."""
    if args.git_token_file:  # wins over the variable, which is then not read
        token, token_from = flags.read_token_file(args.git_token_file), flags.shown(args.git_token_file)
    else:
        token, token_from = flags.token_variable(TOKEN_VARIABLE, "--git-token-file"), TOKEN_VARIABLE
    username = args.git_username
    parts = urllib.parse.urlsplit(args.repo or "")
    if parts.scheme.lower() in ("http", "https") and "@" in parts.netloc:
        written = urllib.parse.unquote(parts.username or "")
        password = urllib.parse.unquote(parts.password or "")
        if username is not None and (password or written) and username != (written or "git"):
            raise flags.UsageError(f"{flags.shown(username)} is not allowed: must be the user written in --repo's "
                                   "URL when both are given (they differ; the URL's is not shown): give the user in "
                                   "one place", flag="--git-username")
        if token and password and token != password:
            raise flags.UsageError(f"{token_from} is not allowed: must be the same token as the password written "
                                   "in --repo's URL when both are given (they differ; neither is shown): give the "
                                   "token in one place", flag="--git-token-file")
        username = username or written or None
    return source.Credentials(token=token, username=username or "git",
                              ssh_key_file=args.ssh_key_file, known_hosts_file=args.known_hosts_file)


def run_validate(args) -> int:
    """``validate``: prints each problem on stderr (``error: file:line: field: message``) and
    the report on stdout (text: the verdict line); returns 0 (valid) or 2 (invalid, or
    unreadable source).
    Raises ``flags.UsageError`` for flags that do not go together or an unreadable token file."""
    if args.ref and not args.repo:
        raise flags.UsageError(f"{flags.shown(args.ref)} is not allowed without --repo (without --repo, "
                               "--path is a directory on disk)", flag="--ref")
    if args.repo:
        flags.cache_dir(args.cache_dir)
    creds = credentials(args) if args.repo else None
    result = validate_.run(path=args.path, repo=args.repo, ref=args.ref, namespace=args.namespace,
                           cache_dir=args.cache_dir, fetch_timeout=args.fetch_timeout, credentials=creds,
                           submodules=args.submodules)
    code = exitcodes.OK if result.ok else exitcodes.FAILED
    logging.getLogger("agent.validate").info("validated %s", source.redact(args.repo or args.path, args.repo), extra={
        "fields": {"commit": result.commit, "files": result.files, "applications": len(result.manifests),
                   "problems": len(result.errors) + bool(result.fatal), "seconds": round(result.seconds, 3)}})
    doc = output.validate_document(result, exit_code=code, source=_source(args.repo, args.ref, args.path))
    for error in doc["errors"]:  # every problem on stderr, whatever the report's format
        logs.problem(source.redact(output.error_line(error), args.repo),
                     {k: v for k, v in error.items() if k in ("file", "line", "field") and v is not None})
    sys.stderr.flush()  # the problems, then the verdict, also on one terminal
    _emit(source.redact(output.render(doc, args.output), args.repo))
    return code


def _source(repo: str | None, ref: str | None, path: str) -> dict:
    return {"repo": source.redact(repo, repo) if repo else None, "ref": ref, "path": path}


def _emit(text: str) -> None:
    """Print the report. A write that fails (``| head``, a full disk) is caught by
    ``agent/common/streams.py``: the command ends quietly with exit 2."""
    print(text, flush=True)


def report_failure(args, message: str) -> int:
    """A command that could not start (no cluster configuration, unreadable token file): the
    one-line error on stderr and, for ``-o json|markdown``, a report saying so on stdout, so a
    pipeline reading stdout still gets a document. Returns 2."""
    repo = getattr(args, "repo", None)
    message = source.redact(message, repo)
    logs.problem(printable(message))
    if getattr(args, "output", "text") != "text":
        from agent.engine.report import Report

        report = Report(errors=[message])
        doc = output.pass_document(report, command=args.command, dry_run=is_dry_run(args), exit_code=exitcodes.FAILED,
                                   source=_source(repo, args.ref, args.path))
        _emit(output.render(doc, args.output))
    return exitcodes.FAILED


def is_dry_run(args) -> bool:
    """True for ``diff`` and ``sync --dry-run``."""
    return args.command == "diff" or bool(getattr(args, "dry_run", False))


def run_pass(kube, opts, args, notify=None) -> int:
    """``sync`` or ``diff``: one pass (a dry run for ``diff`` and ``--dry-run``, with ``kube``
    built with ``dry_run=True``), the report printed in ``args.output``. Returns the exit
    code: 2 on any error; else for dry runs 1 when something would change, for ``sync`` 1
    when something changed and ``--exit-code`` was given; else 0. With ``--wait`` (``sync``
    only) a pass that succeeded is followed by ``wait_healthy``: 1 when its Applications were
    not all healthy in time. Closes ``kube``.
    ``notify``: ``notifier.Settings``: the pass's notices (those of the wait included) and the
    commit status are sent after the wait, waiting at most ``--notify-timeout`` at the end; what
    could not be sent is one warning line each."""
    from agent.cli import progress
    from agent.engine import diff as diff_, readiness, sync

    started = time.monotonic()
    dry = is_dry_run(args)
    recording = diff_.Recording(kube) if dry else None
    wrapped = progress.Progress(recording or kube, args.command, progress.enabled(args.quiet))
    notifier = None
    if notify is not None:
        from agent.notify.notifier import Notifier

        notifier = Notifier(notify, kube=kube)
    try:
        try:
            report = sync.run(wrapped, opts, on_commit=notifier.started if notifier else None)
        finally:
            wrapped.bar.close()
        timeout = getattr(args, "wait", None)
        waited = None
        if timeout is not None and not dry and report.ok:
            if args.output == "text":
                _emit(source.redact(report.summary(), opts.repo))  # what the pass did, before waiting
            waited = wait_healthy(kube, report, timeout)
        if notifier is not None:
            notifier.finished(report)
            notifier.drain()  # at most --notify-timeout; each dropped message is a warning line
    finally:
        kube.close()
    diffs = recording.diffs() if recording else {}
    wait_doc = output.wait_document(waited, report.health) if waited else None
    doc = output.pass_document(report, command=args.command, dry_run=dry, exit_code=exitcodes.FAILED,
                               source=_source(opts.repo, opts.ref, opts.path), diffs=diffs,
                               seconds=time.monotonic() - started, wait=wait_doc)
    if not report.ok or (waited and waited.result == readiness.Wait.ERROR):
        code = exitcodes.FAILED
    elif dry:
        code = exitcodes.CHANGED if doc["changes"] else exitcodes.OK
    elif waited and not waited.ok:
        code = exitcodes.CHANGED  # not healthy in time, Degraded or Stalled, or interrupted
    else:
        code = exitcodes.CHANGED if args.exit_code and doc["changes"] else exitcodes.OK
    doc["exitCode"] = code
    if waited and args.output == "text":
        text = "\n".join(output.wait_lines(wait_doc))
    else:
        text = report.summary() if args.output == "text" and not dry else output.render(doc, args.output)
    _emit(source.redact(text, opts.repo))
    for error in report.errors:  # one line each, whatever a file name holds
        logs.problem(printable(source.redact(error, opts.repo)))
    return code


def wait_healthy(kube, report, timeout: float):
    """``--wait``: wait up to ``timeout`` seconds for the pass's Applications to be healthy
    (``readiness.wait``), one line on stderr when it starts and one each time an Application's
    health changes. SIGTERM and SIGINT end the wait at once (result ``interrupted``): their
    handlers are this function's only while it runs. Returns the ``readiness.Result``."""
    import signal
    import threading

    from agent.engine import readiness

    stop = threading.Event()

    def interrupted(*_):
        stop.set()
        kube.interrupt.set()  # an API retry in flight ends now, too

    previous = {sig: signal.signal(sig, interrupted) for sig in (signal.SIGTERM, signal.SIGINT)}
    count = sum(outcome is not None for outcome in report.synced.values())
    print(f"waiting up to {output.duration(timeout)} for {count} Application{'s' if count != 1 else ''} "
          "to be healthy", file=sys.stderr, flush=True)
    started = time.monotonic()

    def changed(key: str, health: dict) -> None:
        print(printable(f"{key}: {health['status']} ({health['message']}) after "
                        f"{output.duration(time.monotonic() - started)}"), file=sys.stderr, flush=True)

    try:
        return readiness.wait(kube, report, timeout, stop, on_change=changed)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
