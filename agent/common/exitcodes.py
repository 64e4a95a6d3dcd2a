"""Exit codes of every command, in one place (design notes: 0 in sync, 1 changes found where
the user asked to be told, 2 and above failure; 130 and 143 as a shell reports a signal)."""

from __future__ import annotations

OK = 0
"""Success: in sync, valid, or the request was handled."""
CHANGED = 1
"""The pass found or made changes where the user asked to be told (``--exit-code``, ``diff``)."""
FAILED = 2
"""Failure: bad input or flags, an unreachable source or cluster, a refused Application."""
INTERRUPTED = 130
"""Ctrl-C (SIGINT) ended a one-shot command (128 + 2, as a shell reports it)."""
TERMINATED = 143
"""SIGTERM ended a one-shot command (128 + 15)."""
CLOSED_PIPE = 141
"""``get`` or ``explain`` stopped because the reader of its output went away (``| head``):
128 + 13 (SIGPIPE), as a shell reports kubectl and other tools ended by it; nothing printed."""

CODES: tuple[tuple[int, str], ...] = (
    (OK, "success: in sync, valid, or handled"),
    (CHANGED, "changes found or made where asked to be told (`--exit-code`, `diff`)"),
    (FAILED, "failure: bad input or flags, unreachable source or cluster, a refused Application"),
    (INTERRUPTED, "interrupted by Ctrl-C (SIGINT)"),
    (TERMINATED, "terminated by SIGTERM"),
    (CLOSED_PIPE, "`get` or `explain`: the reader closed the pipe (`| head`), quietly, as kubectl"),
)
"""(code, meaning) for the reference table."""
