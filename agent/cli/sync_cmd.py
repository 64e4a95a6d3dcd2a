"""``python -m agent sync``: one reconcile pass, its report printed; with ``--dry-run`` nothing is
written, with ``--wait`` the Applications' health is waited for (``agent/cli/passrun.py``): all of
the pass's, or those ``-l``, ``--app`` and ``-n`` choose (``agent/cli/waitchoice.py``)."""

from __future__ import annotations

import argparse

from agent.cli import flags, notify_flags, passrun, sourceflags, waitchoice
from agent.cli.commands import Command
from agent.engine import readiness

EPILOG = """exit codes:
  0  success: the cluster matches the commit; with --wait: and every Application of the pass
     is healthy (Ready=True); with -l, --app or -n: every one they choose (others may not be)
  1  success, and the pass changed something (only with --exit-code); with --dry-run:
     something would change (nothing was written); with --wait: an Application was not
     healthy when the time was up, one is Degraded or Stalled (waiting cannot help), or the
     wait was ended by SIGTERM or SIGINT (the report is printed all the same)
  2  failure: the source could not be fetched, a file or Application was invalid, an API call
     failed, or pruning was refused (with --wait: nothing is waited for); failing Applications
     and files are named on stderr; with --wait: -l, --app or -n chose none of the pass's
     Applications
"""


def arguments(parser: argparse.ArgumentParser) -> None:
    """``sync``'s own flags, then the source, notification and output flags."""
    parser.add_argument("--once", action="store_true",
                        help="run one pass and exit (the only mode of 'sync'; kept for clarity)")
    parser.add_argument("--exit-code", action="store_true",
                        help="exit 1 when the pass changed something (like git diff --exit-code)")
    parser.add_argument("--dry-run", action="store_true",
                        help="the whole pass as a server-side dry run: nothing is written (no "
                             "changes, events, status or namespaces); exit 1 when something would change")
    parser.add_argument(
        "--wait", nargs="?", metavar="DURATION", const=readiness.DEFAULT_SECONDS, default=flags.env("WAIT"),
        type=flags.number(0, 86400, above=True),
        help="after the pass, wait until every Application it synced from Git is healthy (Ready=True), one is "
             "Degraded or Stalled, or DURATION is up (90s, 2m, 1h; a number is seconds; alone: 5m), rewriting each "
             "one's status as its children become ready; exit 1 when not all are healthy; refused with --dry-run "
             "(nothing is applied to wait for; the variable is ignored there) [env GITOPS_AGENT_WAIT]")
    waitchoice.add_flags(parser)
    sourceflags.add_source_flags(parser)
    notify_flags.add(parser)
    sourceflags.add_output_flags(parser)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """One pass (``passrun.run``). Raises ``flags.UsageError`` for ``--wait`` given with
    ``--dry-run`` on the command line; ``GITOPS_AGENT_WAIT`` (set for the job's sync) is
    ignored by a dry run. Raises it too for ``-l``, ``--app`` or ``-n`` without ``--wait`` or
    both ``-l`` and ``--app`` (``waitchoice.check``)."""
    waitchoice.check(args)
    if args.wait is not None and args.dry_run:
        if any(a == "--wait" or a.startswith("--wait=") for a in argv):
            raise flags.UsageError("--wait is not allowed with --dry-run: a dry run applies nothing to wait for "
                                   "(use one or the other)", flag="--wait")
        args.wait = None
    return passrun.run(args, notify=True)


COMMAND = Command(
    help="run one reconcile pass",
    description="Fetch the repository, apply its Applications and their Deployments and "
                "Services, prune what Git no longer has, write status, print a summary.",
    epilog=EPILOG, arguments=arguments, run=run)
