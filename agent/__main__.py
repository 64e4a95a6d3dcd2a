"""``python -m agent``: see ``agent.cli``; ``validate`` goes straight to ``agent.commands`` so it
never imports the cluster client (a pre-commit hook starts it on every commit)."""

import sys


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m agent`` and the ``gitops-agent`` script; returns the exit code."""
    from . import streams

    out, err = streams.guard()  # a failed write (full disk, broken pipe, closed stdout) ends quietly, exit 2
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["validate"]:
        from .commands import validate_main

        return streams.exit_code(validate_main(argv[1:]), out, err)
    from .cli import main as cli_main

    return streams.exit_code(cli_main(argv), out, err)


if __name__ == "__main__":
    sys.exit(main())
