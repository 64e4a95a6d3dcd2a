"""One pass from the command line: ``sync`` and ``diff`` (``sync --dry-run`` too), the report
printed, and ``--wait``.

``diff`` and ``sync --dry-run`` are the ordinary pass (``sync.run``) against a ``Kube`` in dry-run
mode, so what they report is exactly what ``sync`` would do. The report goes to stdout in the
chosen format, logs and progress to stderr; every string printed passes ``source.redact``.
The pass (and with it the cluster client) is imported only when one runs: ``validate`` uses
``report_source`` and ``emit`` too.
"""

from __future__ import annotations

import argparse
import sys
import time

from agent.cli import flags, notify_flags, output, sourceflags
from agent.common import exitcodes, logs
from agent.engine.report import printable
from agent.source import mirror as source


def connect(args: argparse.Namespace, *, notify: bool):
    """(``Kube``, ``sync.Options``, ``notifier.Settings`` or None) for a command that runs passes,
    from its flags; the notifications' settings only when ``notify``. The ``Kube`` is in
    dry-run mode for ``diff`` and ``--dry-run``. The caller checks ``--cache-dir`` first
    (``flags.cache_dir``). Raises ``flags.UsageError`` for a bad token file or notification
    flag, ``ApiError`` or ``OSError`` when the cluster's configuration cannot be loaded."""
    from agent.kube.client import Kube


    opts = sourceflags.options_from(args)
    settings = notify_flags.settings(args, opts.source_id) if notify else None
    kube = Kube(args.kubeconfig, args.context, retry_seconds=args.api_retry_seconds, dry_run=is_dry_run(args),
                concurrency=args.concurrency, qps=args.kube_api_qps, burst=args.kube_api_burst,
                tenant_service_account=args.tenant_service_account)
    return kube, opts, settings


def run(args: argparse.Namespace, *, notify: bool) -> int:
    """``sync`` or ``diff``: ``connect``, then ``run_pass``; a command that could not start is
    ``report_failure``. Returns the exit code."""
    from agent.kube.cluster import ApiError

    flags.cache_dir(args.cache_dir)
    try:
        kube, opts, settings = connect(args, notify=notify)
    except (ApiError, OSError) as err:
        return report_failure(args, str(err))
    return run_pass(kube, opts, args, settings)


def report_source(repo: str | None, ref: str | None, path: str) -> dict:
    """The report's ``source``: the repository (credentials redacted), ref and path."""
    return {"repo": source.redact(repo, repo) if repo else None, "ref": ref, "path": path}


def emit(text: str) -> None:
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
                                   source=report_source(repo, args.ref, args.path))
        emit(output.render(doc, args.output))
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
    from agent.cli import progress, waitchoice
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
                emit(source.redact(report.summary(), opts.repo))  # what the pass did, before waiting
            report, waited = wait_healthy(kube, report, timeout, again=lambda: sync.run(kube, opts),
                                          choose=lambda done: waitchoice.chosen(kube, list(done.synced), args),
                                          chosen=waitchoice.describe(args))
        if notifier is not None:
            notifier.finished(report)
            notifier.drain()  # at most --notify-timeout; each dropped message is a warning line
    finally:
        kube.close()
    diffs = recording.diffs() if recording else {}
    wait_doc = output.wait_document(waited, report.health) if waited else None
    doc = output.pass_document(report, command=args.command, dry_run=dry, exit_code=exitcodes.FAILED,
                               source=report_source(opts.repo, opts.ref, opts.path), diffs=diffs,
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
    emit(source.redact(text, opts.repo))
    for error in report.errors:  # one line each, whatever a file name holds
        logs.problem(printable(source.redact(error, opts.repo)))
    return code


def wait_healthy(kube, report, timeout: float, again=None, choose=None, chosen: str = ""):
    """``--wait``: while a task holds an Application, pass again (``again()``: one pass; its
    report merged, ``taskwait.until_open``); then wait for the Applications to be healthy
    (``readiness.wait``), one line on stderr when it starts and one each time an Application's
    health changes; ``timeout`` seconds in all. SIGTERM and SIGINT end the wait at once (result
    ``interrupted``): their handlers are this function's only while it runs. ``choose(report)``:
    ``(keys, problem)`` of ``waitchoice.chosen``: only those keys are waited for; a problem (or
    a failed read) ends the wait at once with ``error``; ``chosen``: the choice as the first line
    says it. Returns (the last pass's report, the ``readiness.Result``)."""
    import signal
    import threading

    from agent.engine import readiness, taskwait
    from agent.kube.cluster import ApiError

    try:
        keys, problem = choose(report) if choose is not None else (None, None)
    except ApiError as err:
        keys, problem = None, f"reading the Applications to choose what to wait for failed: {err}"
    if problem is not None:
        return report, readiness.Result(readiness.Wait.ERROR, 0.0, timeout, error=problem)

    stop = threading.Event()

    def interrupted(*_):
        stop.set()
        kube.interrupt.set()  # an API retry in flight ends now, too

    previous = {sig: signal.signal(sig, interrupted) for sig in (signal.SIGTERM, signal.SIGINT)}
    started = time.monotonic()
    try:
        if again is not None and report.tasks:
            print(f"waiting up to {output.duration(timeout)} for the tasks of {len(report.tasks)} Application"
                  f"{'s' if len(report.tasks) != 1 else ''}, passing again as they finish", file=sys.stderr,
                  flush=True)
            report, ended = taskwait.until_open(again, report, timeout, stop, on_pass=_teller(report))
            if ended is not None or not report.ok:
                return report, ended or readiness.Result(readiness.Wait.ERROR, time.monotonic() - started, timeout,
                                                         error="a pass while waiting for the tasks failed")
        count = sum(outcome is not None for key, outcome in report.synced.items() if keys is None or key in keys)
        left = max(0.0, timeout - (time.monotonic() - started))
        print(f"waiting up to {output.duration(left)} for {count} Application{'s' if count != 1 else ''}{chosen} "
              "to be healthy", file=sys.stderr, flush=True)

        def changed(key: str, health: dict) -> None:
            print(printable(f"{key}: {health['status']} ({health['message']}) after "
                            f"{output.duration(time.monotonic() - started)}"), file=sys.stderr, flush=True)

        result = readiness.wait(kube, report, left, stop, on_change=changed, keys=keys)
        result.seconds, result.timeout = time.monotonic() - started, timeout
        return report, result
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _teller(first):
    """``on_pass`` for ``taskwait.until_open``: one line on stderr each time what holds an
    Application (``Report.tasks`` and its health message) changes from what was last told."""
    told = {key: (why, (first.health.get(key) or {}).get("message")) for key, why in first.tasks.items()}

    def tell(report) -> None:
        for key in sorted(report.tasks.keys() | told.keys()):
            now = (report.tasks.get(key), (report.health.get(key) or {}).get("message"))
            if told.get(key) != now:
                told[key] = now
                print(printable(f"{key}: {now[0] or 'tasks done'}" + (f" ({now[1]})" if now[0] else "")),
                      file=sys.stderr, flush=True)
    return tell
