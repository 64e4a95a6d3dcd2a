"""stdout and stderr that cannot fail the program: a write that fails ends it quietly, exit 2.

``validate -o json > /dev/full`` used to end in a traceback (``OSError: [Errno 28]``) and exit
1, which to ``sync --exit-code`` means "changed something"; a closed stderr (``2>&-``) sent the
errors to stdout. ``guard()``, called first by ``python -m agent`` for every command, reopens a
closed descriptor 0, 1 or 2 on /dev/null (so no file the agent opens, and no Git process it
starts, ever gets it) and wraps ``sys.stdout``/``sys.stderr``: the first write or flush that
fails (a broken pipe, a full disk, a closed descriptor) points the descriptor at /dev/null, as
the Python documentation advises for SIGPIPE, so nothing fails again at exit, and marks the
stream ``lost``. ``exit_code`` turns a run that lost output into exit 2: one line on stderr
when stdout failed and stderr still works, nothing for a broken pipe (the reader went away).
"""

from __future__ import annotations

import errno
import io
import os
import sys

from agent.common import exitcodes


class Guarded(io.TextIOBase):
    """A text stream around ``stream`` (None: the descriptor was closed at start-up) writing to
    descriptor ``fd``; never raises from ``write`` or ``flush``. ``lost``: some text could not
    be written; ``error``: the first OSError (None for a closed descriptor)."""

    def __init__(self, stream, fd: int, name: str):
        super().__init__()
        self._stream, self._fd, self.name = stream, fd, name
        self.lost, self.error = False, None

    def _fail(self, err: BaseException | None) -> None:
        self.lost = True
        if self.error is None and isinstance(err, OSError):
            self.error = err
        if self._stream is not None:
            try:  # later writes and the interpreter's flush at exit go nowhere, without an error
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, self._fd)
                os.close(null)
            except OSError:
                pass
        self._stream = None

    def write(self, text: str) -> int:
        if self._stream is None:
            self.lost = self.lost or bool(text)
            return len(text)
        try:
            return self._stream.write(text)
        except (OSError, ValueError) as err:  # ValueError: the stream was closed
            self._fail(err)
            return len(text)

    def flush(self) -> None:
        if self._stream is None:
            return
        try:
            self._stream.flush()
        except (OSError, ValueError) as err:
            self._fail(err)

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        try:
            return self._stream is not None and self._stream.isatty()
        except (OSError, ValueError):
            return False

    def fileno(self) -> int:
        return self._fd

    @property
    def encoding(self):
        return getattr(self._stream, "encoding", "utf-8")

    @property
    def errors(self):
        return getattr(self._stream, "errors", "strict")

    def reconfigure(self, **kwargs) -> None:
        if self._stream is not None:
            self._stream.reconfigure(**kwargs)


def guard() -> tuple[Guarded, Guarded]:
    """Reopen closed descriptors 0-2 on /dev/null and replace ``sys.stdout`` and ``sys.stderr``
    with ``Guarded`` streams; returns them (stdout, stderr)."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)  # the lowest free descriptor: this one
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    out = sys.stdout if isinstance(sys.stdout, Guarded) else Guarded(sys.stdout, 1, "<stdout>")
    err = sys.stderr if isinstance(sys.stderr, Guarded) else Guarded(sys.stderr, 2, "<stderr>")
    sys.stdout, sys.stderr = out, err
    return out, err


def exit_code(code: int, out: Guarded, err: Guarded, read_only: bool = False) -> int:
    """``code``, or 2 when some output was lost; says so in one line on stderr when stdout
    failed with an error other than a broken pipe and stderr still works. ``read_only`` (``get``,
    ``explain``): a broken pipe on stdout (``| head``) is ``exitcodes.CLOSED_PIPE`` (141) instead,
    quietly, as a shell reports kubectl ended by SIGPIPE: nothing was changed, the reader left."""
    out.flush()
    err.flush()
    if not (out.lost or err.lost):
        return code
    if read_only and out.lost and out.error is not None and out.error.errno == errno.EPIPE and not err.lost:
        return exitcodes.CLOSED_PIPE
    if out.lost and not err.lost and out.error is not None and out.error.errno != errno.EPIPE:
        err.write(f"error: writing to stdout failed: {out.error.strerror or out.error}\n")
        err.flush()
    return exitcodes.FAILED
