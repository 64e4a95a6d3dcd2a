"""The API server's ``Warning`` response headers, as text. Pure.

Why: admission plugins and deprecated APIs answer a write that they let through with a warning
(PodSecurity's ``would violate PodSecurity "restricted:latest": ...`` in a namespace labelled
``pod-security.kubernetes.io/warn``, a deprecated apiVersion, an unknown field). kubectl prints
them as ``Warning: ...``; the agent puts them in its report, ``explain`` and an Event
(docs/concepts.md, "What admission says").

The format (RFC 7234 section 5.5, as ``k8s.io/apimachinery/pkg/util/net.ParseWarningHeader``
reads it): ``warn-code SP warn-agent SP warn-text [SP warn-date]``, several joined by commas in
one header or sent as several headers (urllib3 joins them with ``, ``). The API server sends code
``299`` and agent ``-``; ``warn-text`` is a quoted string whose ``\\"`` and ``\\\\`` are escapes.
Only code 299 is kept (kubectl does the same). A hostile or broken server could send anything:
at most ``MAX_WARNINGS`` warnings of at most ``MAX_TEXT`` characters each are kept, and the header
is read at most ``MAX_HEADER`` characters far; a warning that does not parse ends the reading.
"""

from __future__ import annotations

MAX_WARNINGS = 20
"""Warnings kept from one answer; the rest are dropped."""
MAX_TEXT = 1024
"""Characters kept of one warning's text (longer ones end with ``...``); the Event API keeps 1,024."""
MAX_HEADER = 64 * 1024
"""Characters of the joined header values read; the rest is ignored."""


def parse(header: str | None) -> list[str]:
    """The texts of the code-299 warnings in ``header`` (the ``Warning`` header values joined with
    ``, ``), in order, each once, unescaped, with its control characters replaced by spaces; empty
    for None or a header that does not parse. Never raises."""
    if not header:
        return []
    text, at, out = header[:MAX_HEADER], 0, []
    while at < len(text) and len(out) < MAX_WARNINGS:
        found = _one(text, at)
        if found is None:
            break
        code, message, at = found
        message = " ".join("".join(c if c.isprintable() else " " for c in message).split())
        if len(message) > MAX_TEXT:
            message = message[:MAX_TEXT - 3] + "..."
        if code == "299" and message and message not in out:
            out.append(message)
    return out


def _one(text: str, at: int) -> tuple[str, str, int] | None:
    """(code, unescaped text, where the next warning starts) of the warning at ``at``; None when
    it does not parse."""
    while at < len(text) and text[at] in " \t,":
        at += 1
    code_end = text.find(" ", at)
    if code_end < 0:
        return None
    code = text[at:code_end]
    agent_end = text.find(" ", code_end + 1)
    if not code.isdigit() or len(code) != 3 or agent_end < 0 or agent_end + 1 >= len(text) \
            or text[agent_end + 1] != '"':
        return None
    chars, i = [], agent_end + 2
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            chars.append(text[i + 1])
            i += 2
            continue
        if c == '"':
            break
        chars.append(c)
        i += 1
    else:
        return None  # no closing quote
    i += 1
    while i < len(text) and text[i] == " ":
        i += 1
    if i < len(text) and text[i] == '"':  # an optional warn-date
        close = text.find('"', i + 1)
        if close < 0:
            return None
        i = close + 1
    while i < len(text) and text[i] == " ":
        i += 1
    if i < len(text) and text[i] != ",":
        return None
    return code, "".join(chars), i + 1
