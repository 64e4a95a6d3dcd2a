"""The command table: each command declared once, in its own module, dispatched from one table."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from agent.cli import commands, main

ROOT = Path(__file__).resolve().parents[3]


def test_every_command_of_the_table_is_one_module_declaring_it():
    top = main.build_parser()
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sub.choices) == list(commands.TABLE)
    for name, module in commands.TABLE.items():
        found = commands.command(name)
        assert isinstance(found, commands.Command) and found.run.__module__ == module
        assert found.arguments.__module__ == module
    assert [n for n in commands.TABLE if commands.command(n).read_only] == ["get", "explain"]
    assert [n for n in commands.TABLE if commands.command(n).log_level != "WARNING"] == ["run"]


def test_one_command_alone_parses_as_in_the_whole_parser():
    argv = ["validate", "--path", "x", "-o", "json"]
    assert vars(main.build_parser("validate").parse_args(argv)) == vars(main.build_parser().parse_args(argv))
    assert main.named(argv) == "validate" and main.named(["-h"]) is None and main.named([]) is None
    assert main.read_only(["get", "-A"]) and not main.read_only(["sync"]) and not main.read_only(["nope"])


def test_validate_never_imports_the_cluster_client(tmp_path):
    """A pre-commit hook starts ``validate`` on every commit: the Kubernetes client is not imported."""
    code = ("import sys; from agent import __main__ as m; code = m.main(['validate', '--path', sys.argv[1]]); "
            "print('kubernetes' in sys.modules, code)")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.stdout.strip().splitlines()[-1] == "False 0", proc.stdout + proc.stderr
