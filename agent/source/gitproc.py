"""Every Git command the agent runs, as a child process that a timeout, shutdown and the agent's death end.

Why not GitPython's ``kill_after_timeout``: it can only end a command when its timeout runs out
(``--fetch-timeout``, up to an hour), and it ends it with SIGKILL, which leaves Git no chance to
remove its lock files (``packed-refs.lock``, ``refs/.../main.lock``), so the next fetch into the
mirror fails on them. Here every command runs in its own process group (``start_new_session``),
so its helpers (``git-remote-http``, ``ssh``) go with it, and is ended group-wide with SIGTERM
first (Git's signal handlers remove its lock and temporary files), then SIGKILL after
``TERM_GRACE`` seconds. ``cancel()`` (SIGTERM of ``run``) ends every running command at once and
refuses new ones, so a pass stuck on a remote that never answers fails at once instead of
holding the shutdown for ``--shutdown-grace``; the pass then fails like any failed fetch
(nothing changed or pruned).

Local commands (``rev-parse``, ``config --blob``, ``diff-tree``, ``log``) run here too, each with a
timeout: a hostile commit can make one wait for ever (a ``.gitmodules`` whose ``[include]`` names
``/proc/self/fd/1``, issue 42). Only GitPython's object reads stay outside: its long-lived
``git cat-file --batch`` helpers read the mirror's own objects, and they end by themselves when
their standard input closes, so when the agent dies.

A command dies with the agent (issue 42: a ``git fetch`` left running after a ``kill -9`` of
``sync --once`` held the mirror's ref locks, and the next sync failed with ``cannot lock ref``).
Each command's group is led by a small ``/bin/sh`` (``GROUP_LEADER``) that runs Git and, on
SIGTERM, sends SIGTERM to its whole group: Git and its helpers (``git-remote-https``, ``ssh``,
which Git itself does not end when it is signalled). On Linux the kernel sends the leader that
SIGTERM when the thread that started it ends (``prctl(PR_SET_PDEATHSIG)``, set between fork and
exec); ``run`` waits in that thread until the command ends, so the signal comes only when the
agent's process is gone. SIGTERM, not SIGKILL: Git removes its lock files on SIGTERM.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time

TERM_GRACE = 1.0  # seconds between SIGTERM and SIGKILL of a command's process group
POLL = 0.1  # seconds between checks of a running command

LOCAL_TIMEOUT = 60.0  # seconds a local command may take when its caller gives no other bound
PR_SET_PDEATHSIG = 1  # prctl(2) option, <linux/prctl.h>
_TERM = int(signal.SIGTERM)
GROUP_LEADER = ("/bin/sh", "-c", 'trap \'trap "" TERM; kill -TERM 0 2>/dev/null; exit 143\' TERM; "$@" & wait $!',
                "git-group")
"""The leader of a command's process group: runs ``git ARGS`` in the background and waits for it,
its exit status Git's (128 + N when a signal N ended Git); on SIGTERM it ignores further ones,
sends SIGTERM to the group (``kill 0``) and exits 143."""

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


def _libc_prctl():
    """libc's ``prctl``, resolved once here (never in a forked child), or None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_prctl = _libc_prctl()


def _die_with_parent(parent: int):
    """The ``preexec_fn`` of a command started by process ``parent``: SIGTERM to the command when
    the thread that started it ends (``prctl(2)``: PR_SET_PDEATHSIG), and an exit at once when
    the agent died before the request took effect (the command was already handed to init).
    Runs between fork and exec: no imports, no locks, no allocation beyond the call."""
    def preexec() -> None:
        _prctl(PR_SET_PDEATHSIG, _TERM, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)
    return preexec


def _signal(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)  # the command leads its own group (start_new_session)
    except (ProcessLookupError, PermissionError):
        pass


def run(args: list[str], *, cwd: str | os.PathLike | None, env: dict[str, str] | None = None,
        timeout: float = LOCAL_TIMEOUT, text: bool = True) -> str:
    """Run ``git ARGS`` in ``cwd`` with ``env`` added to this process's environment; returns its
    standard output (text, undecodable bytes replaced; with ``text=False`` the bytes). Raises
    ``Failed`` when it exits non-zero, runs longer than ``timeout`` seconds or is cancelled (in
    both last cases its process group is ended), OSError when ``git`` cannot be started."""
    if _cancelled.is_set():
        raise Failed(None, "interrupted: the agent is shutting down", cancelled=True)
    preexec = _die_with_parent(os.getpid()) if _prctl is not None else None
    proc = subprocess.Popen([*GROUP_LEADER, "git", *args], cwd=cwd, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=preexec)
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
    raw = b"".join(out)
    stdout = raw.decode("utf-8", "replace")
    stderr = b"".join(err).decode("utf-8", "replace")
    if ended_by == "cancel" or (proc.returncode != 0 and _cancelled.is_set()):
        raise Failed(None, "interrupted: the agent is shutting down", cancelled=True)
    if ended_by == "timeout":
        raise Failed(None, stderr, timed_out=True)
    if proc.returncode != 0:
        raise Failed(proc.returncode, stderr)
    return stdout if text else raw  # type: ignore[return-value]
