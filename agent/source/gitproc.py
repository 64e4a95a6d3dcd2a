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
SIGTERM when the thread that started it ends (``prctl(PR_SET_PDEATHSIG)``); ``run`` waits in that
thread until the command ends, so the signal comes only when the agent's process is gone.
SIGTERM, not SIGKILL: Git removes its lock files on SIGTERM.

Fast, because a pass runs several local commands on a push's way to its apply (issue 48). The
parent-death signal is set by util-linux's ``setpriv --pdeathsig`` (``SETPRIV``), not by a
``preexec_fn``: Python must ``fork`` the agent for a ``preexec_fn`` (25 ms at 350 MiB, the copy of
its page tables) and can ``vfork`` it without one (1 ms). Without ``setpriv`` the ``preexec_fn``
stays. The leader exits at once when the agent is no longer its parent (the agent died before
the signal was set). The end of a command is awaited on a pidfd (``os.pidfd_open``), not by
``Popen.wait(timeout)``'s sleeps of up to 50 ms.
"""

from __future__ import annotations

import ctypes
import os
import select
import shutil
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
GROUP_LEADER = ("/bin/sh", "-c", '[ "$PPID" = "$1" ] || exit 1; shift; '
                'trap \'trap "" TERM; kill -TERM 0 2>/dev/null; exit 143\' TERM; "$@" & wait $!', "git-group")
"""The leader of a command's process group, given the agent's pid then ``git ARGS``: exits 1 when
the agent is not its parent (it died before the parent-death signal was set), else runs Git in
the background and waits for it, its exit status Git's (128 + N when a signal N ended Git); on
SIGTERM it ignores further ones, sends SIGTERM to the group (``kill 0``) and exits 143."""

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
SETPRIV = shutil.which("setpriv") if _prctl is not None else None
"""util-linux's ``setpriv``, which sets the parent-death signal and execs the leader (module
docstring); None off Linux or where it is not installed (then a ``preexec_fn`` sets it)."""


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


def _command(args: list[str]):
    """(the argv that runs ``git ARGS`` under its group's leader, the ``preexec_fn`` or None)."""
    leader = [*GROUP_LEADER, str(os.getpid()), "git", *args]
    if SETPRIV is not None:
        return [SETPRIV, "--pdeathsig", "TERM", *leader], None
    return leader, _die_with_parent(os.getpid()) if _prctl is not None else None


class _Exit:
    """The end of ``proc``, awaited on a pidfd where the system has one (``ended`` returns the
    moment the process ends), else by ``Popen.wait``. ``close`` frees the pidfd."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        try:
            self.fd: int | None = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):
            self.fd = None

    def ended(self, seconds: float) -> bool:
        """True once the process has ended (and is reaped), False while it still runs after
        waiting ``seconds``."""
        if self.fd is None:
            try:
                self.proc.wait(seconds)
                return True
            except subprocess.TimeoutExpired:
                return False
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        if not poller.poll(seconds * 1000):
            return False
        self.proc.wait()
        return True

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


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
    command, preexec = _command(args)
    proc = subprocess.Popen(command, cwd=cwd, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL,
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
    exit_ = _Exit(proc)
    try:
        if _cancelled.is_set():  # cancel() ran between the check above and the registration
            _signal(proc, signal.SIGTERM)
        while not exit_.ended(POLL):
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
        exit_.close()
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
