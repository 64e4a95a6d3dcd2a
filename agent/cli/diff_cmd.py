"""``python -m agent diff``: what a sync would change, as unified diffs, changing nothing
(``agent/cli/passrun.py``: the ordinary pass against a dry-run ``Kube``)."""

from __future__ import annotations

import argparse

from agent.cli import passrun, sourceflags
from agent.cli.commands import Command

EPILOG = """exit codes:
  0  nothing would change: the cluster matches the commit
  1  something would change (create, update, recreate or prune); the report says what
  2  failure: the source could not be fetched, a file or Application was invalid, an API call
     failed, or pruning was refused; a failed diff never exits 1
"""


def arguments(parser: argparse.ArgumentParser) -> None:
    """The source and output flags of ``sync``; no notifications (nothing is applied)."""
    sourceflags.add_source_flags(parser)
    sourceflags.add_output_flags(parser)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """One dry-run pass and its diffs (``passrun.run``)."""
    return passrun.run(args, notify=False)


COMMAND = Command(
    help="show what a sync would change, without changing anything",
    description="A unified diff of live against desired for every object a sync would create, "
                "update or prune, computed with a server-side dry-run apply (server defaults never "
                "show as changes). Takes the same source and scope flags as sync.",
    epilog=EPILOG, arguments=arguments, run=run)
