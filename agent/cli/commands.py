"""Every command of the command line, in one table; each is declared once, in its own module.

A command's module (``TABLE``) holds one ``Command``, ``COMMAND``: its help, description and exit
codes, the function adding its arguments, whether it is read-only, its default log level and the
function running it. ``agent/cli/main.py`` builds the parser from the table and dispatches to
``Command.run``; ``agent/__main__.py`` asks the table whether a command is read-only.

A module is imported only when its command is parsed or run (``command``), so ``validate``
never imports the cluster client (a pre-commit hook starts it on every commit).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from dataclasses import dataclass

TABLE = {
    "sync": "agent.cli.sync_cmd",
    "diff": "agent.cli.diff_cmd",
    "validate": "agent.cli.validate_cmd",
    "reconcile": "agent.cli.reconcile_cmd",
    "get": "agent.cli.get_cmd",
    "explain": "agent.cli.explain_cmd",
    "run": "agent.cli.run_cmd",
}
"""Each command's name and its module, in the order ``--help`` lists them."""


@dataclass(frozen=True)
class Command:
    """One command. ``help``: its line in the list of commands; ``description``: the first
    paragraph of its ``--help``; ``epilog``: its exit codes, printed as written;
    ``arguments(parser)``: adds its arguments; ``run(args, argv)``: carries it out with the
    parsed ``args`` (``argv``: the command line, to tell a flag given from its variable) and
    returns the exit code, or raises ``flags.UsageError``. ``read_only``: it changes nothing
    anywhere (``get``, ``explain``): a closed stdout is exit 141, as for ``kubectl get``, and
    API retries are not logged by default (it fails fast instead); ``log_level``: its level
    without ``--log-level``."""

    help: str
    description: str
    epilog: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, list[str]], int]
    read_only: bool = False
    log_level: str = "WARNING"


def command(name: str) -> Command:
    """The command ``name`` (a key of ``TABLE``), its module imported now. Raises KeyError for
    another name."""
    return importlib.import_module(TABLE[name]).COMMAND


def add_all(parser: argparse.ArgumentParser, only: str | None = None) -> None:
    """Add every command of ``TABLE`` (or just ``only``) to ``parser`` as a subcommand
    (``args.command`` names the one given; one is required)."""
    subcommands = parser.add_subparsers(dest="command", required=True)
    for name in TABLE if only is None else (only,):
        found = command(name)
        sub = subcommands.add_parser(name, help=found.help, description=found.description, epilog=found.epilog,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
        found.arguments(sub)
