"""Command line: ``python -m agent sync --once ...``; the commands are ``agent/cli/commands.py``'s table.

Every flag can also be given as an environment variable (named in ``--help``); a flag on the
command line wins over the variable.
"""

from __future__ import annotations

import argparse
import logging
import sys

from agent.cli import commands, flags
from agent.common import arenas, exitcodes, logs


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command (``commands.TABLE``), or of the command ``only`` alone (its
    module is then the only one imported: ``validate`` never imports the cluster client)."""
    parser = flags.Parser(prog=flags.prog_name(), description="GitOps sync agent for Application resources.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {flags.version()}")
    commands.add_all(parser, only)
    return parser


def named(argv: list[str]) -> str | None:
    """The command ``argv`` starts with, None when it starts with anything else (``-h``, a typo)."""
    return argv[0] if argv and argv[0] in commands.TABLE else None


def read_only(argv: list[str]) -> bool:
    """Whether ``argv`` runs a read-only command (``Command.read_only``: ``get``, ``explain``)."""
    name = named(argv)
    return name is not None and commands.command(name).read_only


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code (each command's epilog lists them). Unexpected
    errors print their traceback and exit 2, never 1 (which means "changed something")."""
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
    args = build_parser(named(argv)).parse_args(argv)
    command = commands.command(args.command)
    logs.setup(args.log_format, args.log_level, default_level=command.log_level, log_retries=not command.read_only)
    try:
        return command.run(args, argv)
    except flags.UsageError as err:
        err.command = args.command
        raise
