"""The agent under test, run as a user runs it (``python -m agent sync --once``) from a source
tree: this checkout, or another one (``BENCH_AGENT_TREE``) so two versions compare in one run.

Each pass is its own process; its wall time, exit code and peak RSS are returned. The peak RSS
is the agent's own (``VmHWM`` of ``/proc/PID/status``, read every 20 ms while it runs, so growth
in its last 20 ms is missed); ``os.wait4``'s ``ru_maxrss`` is not, since Linux folds into it the
largest waited-for descendant, a Git process of the pass included. The tree's own ``.venv/bin/python`` is used
when it has one (its dependencies may differ), else the harness's interpreter with the tree
first on ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import pstats
import subprocess
import sys
import time
from dataclasses import dataclass
from io import StringIO
from pathlib import Path


@dataclass(frozen=True)
class Tree:
    """An agent checkout: ``label`` for the tables, ``path``, ``python``, ``commit`` (with
    ``+dirty`` when its work tree differs from it) and whether ``sync`` takes ``--concurrency``."""

    label: str
    path: Path
    python: str
    commit: str
    concurrency_flag: bool

    @classmethod
    def at(cls, label: str, path: Path) -> "Tree":
        path = Path(path).resolve()
        if not (path / "agent" / "__main__.py").exists():
            raise SystemExit(f"bench: {path} holds no agent/ package (BENCH_AGENT_TREE must be a checkout)")
        venv = path / ".venv" / "bin" / "python"
        python = str(venv) if venv.exists() else sys.executable
        git = lambda *a: subprocess.run(["git", "-C", str(path), *a], capture_output=True, text=True).stdout.strip()
        commit = git("rev-parse", "--short=12", "HEAD") + ("+dirty" if git("status", "--porcelain", "agent") else "")
        where = subprocess.run([python, "-c", "import agent, os; print(os.path.dirname(agent.__file__))"],
                               cwd=path, env=_env(path), capture_output=True, text=True).stdout.strip()
        if Path(where).resolve() != path / "agent":
            raise SystemExit(f"bench: {python} imports the agent from {where or '?'}, not from {path}")
        help_text = subprocess.run([python, "-m", "agent", "sync", "--help"], cwd=path, env=_env(path),
                                   capture_output=True, text=True).stdout
        return cls(label, path, python, commit, "--concurrency" in help_text)


def _env(tree: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITOPS_AGENT_")}
    env["PYTHONPATH"] = str(tree)
    return env


@dataclass
class Pass:
    """One finished pass: ``seconds`` (wall), ``rss_mib`` (the agent process's peak RSS, MiB;
    ``ru_maxrss`` when ``/proc`` could not be read), ``code`` and its output."""

    seconds: float
    rss_mib: float
    code: int
    output: str


def sync_args(repo: Path, path: str, source_id: str, kubeconfig: Path, cache: Path,
              concurrency: int | None, tree: Tree) -> list[str]:
    """``sync --once`` arguments; ``--concurrency`` only when given and the tree takes it."""
    args = ["sync", "--once", "--repo", str(repo), "--path", path, "--source-id", source_id,
            "--kubeconfig", str(kubeconfig), "--cache-dir", str(cache), "--max-prune-share", "1"]
    if concurrency is not None and tree.concurrency_flag:
        args += ["--concurrency", str(concurrency)]
    return args


def start(tree: Tree, args: list[str], log: Path, profile: Path | None = None) -> subprocess.Popen:
    """Start one agent process writing to ``log``; under cProfile when ``profile`` is set."""
    prefix = [tree.python, "-m", "cProfile", "-o", str(profile)] if profile else [tree.python]
    out = open(log, "wb")
    return subprocess.Popen(prefix + ["-m", "agent", *args], cwd=tree.path, env=_env(tree.path),
                            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def wait(proc: subprocess.Popen, started: float, log: Path, timeout: float) -> Pass:
    """Reap ``proc`` (killing it after ``timeout`` seconds) and return its figures."""
    deadline = started + timeout
    peak_kib = 0
    while True:
        peak_kib = max(peak_kib, high_water_kib(proc.pid))  # before wait4: a zombie has no VmHWM
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.02)
    seconds = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Pass(seconds, (peak_kib or usage.ru_maxrss) / 1024, proc.returncode, log.read_text(errors="replace"))


def high_water_kib(pid: int) -> int:
    """The process's peak resident set size so far (``VmHWM``, KiB), 0 when it cannot be read."""
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def run_pass(tree: Tree, args: list[str], log: Path, timeout: float, profile: Path | None = None) -> Pass:
    """Run one pass to the end; see ``start`` and ``wait``."""
    started = time.monotonic()
    proc = start(tree, args, log, profile)
    return wait(proc, started, log, timeout)


def profile_top(profile: Path, tree: Path, count: int = 20) -> str:
    """The ``count`` functions with the most own time (pstats ``tottime``), paths shortened."""
    out = StringIO()
    stats = pstats.Stats(str(profile), stream=out)
    stats.sort_stats("tottime").print_stats(count)
    text = out.getvalue()
    for prefix in (str(tree) + "/", sys.prefix + "/", sys.base_prefix + "/", "/usr/local/lib/", "/usr/lib/"):
        text = text.replace(prefix, "")
    lines = text.splitlines()
    start_at = next((i for i, line in enumerate(lines) if "function calls" in line), 0)
    return "\n".join(line.rstrip() for line in lines[start_at:] if line.strip())
