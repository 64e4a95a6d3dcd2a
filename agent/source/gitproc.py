"""Git's network commands (``fetch``, ``ls-remote``) as child processes that shutdown can end.

Why not GitPython's ``kill_after_timeout``: it can only end a command when its timeout runs out
(``--fetch-timeout``, up to an hour), and it ends it with SIGKILL, which leaves Git no chance to
remove its lock files (``packed-refs.lock``, ``refs/.../main.lock``), so the next fetch into the
mirror fails on them. Here every command runs in its own process group (``start_new_session``),
so its helpers (``git-remote-http``, ``ssh``) go with it, and is ended group-wide with SIGTERM
first (Git's signal handlers remove its lock and temporary files), then SIGKILL after
``TERM_GRACE`` seconds. ``cancel()`` (SIGTERM of ``run``) ends every running command at once and
refuses new ones, so a pass stuck on a remote that never answers fails at once instead of
holding the shutdown for ``--shutdown-grace``; the pass then fails like any failed fetch
(nothing changed or pruned). Local commands (``cat-file``, ``rev-parse``) stay with GitPython in
``source``; they never wait on a network.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

TERM_GRACE = 1.0  # seconds between SIGTERM and SIGKILL of a command's process group
POLL = 0.1  # seconds between checks of a running command

_lock = threading.Lock()
_running: set[subprocess.Popen] = set()
_cancelled = threading.Event()


class Failed(Exception):
    """A Git command failed: ``status`` its exit status (``None`` when it was ended: by its
    timeout, then ``timed_out`` is True, or by ``cancel``, then ``cancelled`` is True) and
    ``stderr`` its error output."""

    def __init__(self, status: int | None, stderr: str, *, timed_out: bool = False, cancelled: bool = False):
        self.status, self.stderr, self.timed_out, self.cancelled = status, stderr, timed_out, cancelled
        super().__init__(stderr or f"exit status {status}")


def cancelled() -> bool:
    """True once ``cancel`` was called: no further Git command starts."""
    return _cancelled.is_set()


def cancel() -> None:
    """End every running command now (its whole process group, SIGTERM then SIGKILL) and refuse
    any later one with ``Failed(cancelled=True)``. For shutdown; never undone in a process."""
    _cancelled.set()
    with _lock:
        procs = list(_running)
    for proc in procs:
        _signal(proc, signal.SIGTERM)


def _signal(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)  # the command leads its own group (start_new_session)
    except (ProcessLookupError, PermissionError):
        pass


def run(args: list[str], *, cwd: str | os.PathLike | None, env: dict[str, str], timeout: float) -> str:
    """Run ``git ARGS`` in ``cwd`` with ``env`` added to this process's environment; returns its
    standard output (text). Raises ``Failed`` when it exits non-zero, runs longer than
    ``timeout`` seconds or is cancelled (in both last cases its process group is ended)."""
    if _cancelled.is_set():
        raise Failed(None, "interrupted: the agent is shutting down", cancelled=True)
    proc = subprocess.Popen(["git", *args], cwd=cwd, env={**os.environ, **env}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    with _lock:
        _running.add(proc)
    out: list[bytes] = []
    err: list[bytes] = []
    readers = [threading.Thread(target=lambda s=s, into=into: into.append(s.read()), daemon=True)
               for s, into in ((proc.stdout, out), (proc.stderr, err))]
    for reader in readers:
        reader.start()
    deadline = time.monotonic() + timeout
    ended_by = None
    try:
        if _cancelled.is_set():  # cancel() ran between the check above and the registration
            _signal(proc, signal.SIGTERM)
        while True:
            try:
                proc.wait(POLL)
                break
            except subprocess.TimeoutExpired:
                pass
            if ended_by is None and (_cancelled.is_set() or time.monotonic() > deadline):
                ended_by = "cancel" if _cancelled.is_set() else "timeout"
                _signal(proc, signal.SIGTERM)
                kill_at = time.monotonic() + TERM_GRACE
            if ended_by is not None and time.monotonic() > kill_at:
                _signal(proc, signal.SIGKILL)
    except BaseException:  # KeyboardInterrupt of ``sync``: its own group would not get the terminal's SIGINT
        _signal(proc, signal.SIGTERM)
        raise
    finally:
        with _lock:
            _running.discard(proc)
    for reader in readers:
        reader.join(TERM_GRACE)  # a helper that outlived the group's leader may hold a pipe open
    stdout = b"".join(out).decode("utf-8", "replace")
    stderr = b"".join(err).decode("utf-8", "replace")
    if ended_by == "cancel" or (proc.returncode != 0 and _cancelled.is_set()):
        raise Failed(None, "interrupted: the agent is shutting down", cancelled=True)
    if ended_by == "timeout":
        raise Failed(None, stderr, timed_out=True)
    if proc.returncode != 0:
        raise Failed(proc.returncode, stderr)
    return stdout
