"""``python -m agent``: see ``agent.cli.main``, which imports only the module of the command given
(``agent/cli/commands.py``), so ``validate`` never imports the cluster client (a pre-commit hook
starts it on every commit)."""

import os
import signal
import sys

from agent.common import exitcodes

_STOPPED = {signal.SIGINT: (b"interrupted (SIGINT)", exitcodes.INTERRUPTED), signal.SIGTERM: (b"terminated (SIGTERM)", exitcodes.TERMINATED)}


def _interrupted(signum, frame) -> None:
    """SIGINT (Ctrl-C) or SIGTERM outside ``run``: one line and exit 130 or 143 (128 + the
    signal, as a shell reports it) at once, instead of a KeyboardInterrupt traceback from
    wherever the pass was (``run`` installs its own handler: it stops cleanly, see
    ``agent.cli``). Running Git commands are ended first: they lead process groups of their
    own, so neither the terminal's SIGINT nor a SIGTERM sent to the agent (a CI job's timeout)
    reaches them, and none must go on writing into the cache after the lock is gone; a first
    fetch's staging directory left behind is removed by the next fetch."""
    gitproc = sys.modules.get("agent.source.gitproc")
    if gitproc is not None:
        gitproc.cancel()
    what, code = _STOPPED.get(signum, _STOPPED[signal.SIGINT])
    os.write(2, what + b": stopped at once; what was already written stays, nothing further was changed or pruned\n")
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m agent`` and the ``gitops-agent`` script; returns the exit code."""
    for sig in _STOPPED:
        signal.signal(sig, _interrupted)
    from agent.common import streams

    out, err = streams.guard()  # a failed write (full disk, broken pipe, closed stdout) ends quietly, exit 2
    argv = sys.argv[1:] if argv is None else argv
    from agent.cli import main as cli

    return streams.exit_code(cli.main(argv), out, err, read_only=cli.read_only(argv))


if __name__ == "__main__":
    sys.exit(main())
