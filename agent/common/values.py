"""Values the user gives the agent, shared by every layer: where a value came from (a flag or a
``GITOPS_AGENT_*`` variable), how a refused one is named, the one rule of a token, and the
error a bad value ends the process with (exit 2). The command line's parser types build on
these (``agent/cli/flags.py``); lower layers (kubeconfig credentials, the webhook secret) use
them without importing the command line.
"""

from __future__ import annotations


class UsageError(ValueError):
    """A user error found after parsing but before anything ran (exit 2). ``str()`` is the
    message, ``flag`` the flag it concerns (None: none in particular); ``cli.main`` prints it
    as argparse prints a bad value: ``PROG CMD: error: argument FLAG: MESSAGE (see PROG CMD
    --help)``."""

    def __init__(self, message: str, flag: str | None = None):
        super().__init__(message)
        self.flag = flag


class EnvValue(str):
    """The raw text of an environment variable, used as a flag's default; ``.variable`` is the
    variable's full name, so that a type can say where a bad value came from."""

    variable: str

    def __new__(cls, value: str, variable: str) -> "EnvValue":
        obj = super().__new__(cls, value)
        obj.variable = variable
        return obj


TOKEN_RULE = "one token on one line"
MAX_TOKEN_FILE = 64 * 1024
"""Bytes a token, key or URL file may hold: one is read at most this far (plus one byte, to
tell a larger one), so ``/dev/zero`` or a huge file is refused, not read until memory runs out."""


def read_bounded(path: str, limit: int = MAX_TOKEN_FILE) -> bytes | None:
    """The bytes of the file ``path``, or None when it holds more than ``limit`` bytes (at most
    ``limit + 1`` are read). Raises OSError."""
    with open(path, "rb") as file:
        data = file.read(limit + 1)
    return None if len(data) > limit else data


def one_line_token(text: str) -> tuple[str, str | None]:
    """(``text`` without the blanks and line breaks around it, why that is not a token or None).
    The one rule for every token the agent is given, in a file (``--git-token-file``, a
    kubeconfig user's ``tokenFile``) or a variable (``GITOPS_AGENT_GIT_TOKEN``): the line break
    a file, or a Secret made from one, ends with is not part of it; nothing left (the request
    would silently go out anonymous) or a line break inside (a broken header) is refused; blanks
    inside are kept (a password may hold them)."""
    token = text.strip()
    if not token:
        return token, "it is empty"
    if "\n" in token or "\r" in token:
        return token, "it holds more than one line"
    return token, None


def shown(value) -> str:
    """How a refused value is named: ``GITOPS_AGENT_X='text'`` for an ``EnvValue``, else
    ``'text'``."""
    return f"{value.variable}={str(value)!r}" if isinstance(value, EnvValue) else repr(str(value))


def version() -> str:
    """The installed distribution's version (``gitops-agent``), or ``unknown`` when the package
    runs from a source tree that was never installed."""
    from importlib import metadata

    try:
        return metadata.version("gitops-agent")
    except metadata.PackageNotFoundError:
        return "unknown"


def duration(seconds: float) -> str:
    """``seconds`` as ``20s``, ``4.2s``, ``1m30s`` or ``1h2m3s``, as kubectl and Go print a
    duration (``time.Duration.String``: no trailing ``.0``): tenths of a second below a minute,
    whole seconds from a minute on. The one way every duration is printed (``--wait=20s``)."""
    tenths = round(seconds, 1)
    if tenths < 60:
        return f"{tenths:.1f}".removesuffix(".0") + "s"
    whole = int(round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return (f"{hours}h" if hours else "") + (f"{minutes}m" if hours or minutes else "") + f"{secs}s"
