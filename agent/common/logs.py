"""Log set-up shared by every command: text or one JSON object per line on stderr.

A module of its own, importing nothing of the agent: every command sets logging up with it
(``agent/cli/main.py``), ``validate`` too, which must not import the cluster client.
"""

from __future__ import annotations

import datetime
import json
import logging
import sys

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_json = False  # set by ``setup``: whether stderr carries one JSON object per line


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and any ``extra={"fields": ...}``."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {"time": datetime.datetime.fromtimestamp(record.created, datetime.timezone.utc)
                 .strftime("%Y-%m-%dT%H:%M:%S.%fZ"), "level": record.levelname.lower(),
                 "logger": record.name, "message": record.getMessage()}
        entry.update(getattr(record, "fields", {}))
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: str) -> str:
    """``text`` as one line a terminal shows as it is: each character ``str.isprintable`` refuses
    (newline, carriage return, ESC and other control or format characters) written as an escape
    (``\\n``, ``\\x1b``, ``\\u202e``), the way ``engine.report.printable`` writes the report. A
    file name from Git can then neither forge a log line nor drive the terminal (issue 42)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _ESCAPES.get(c) or (
        f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}")
        for c in text)


class TextFormatter(logging.Formatter):
    """Human lines; a pass's fields follow the message as ``key=value``. The line (``TEXT_FORMAT``)
    is ``printable``: a message holding a file name from Git stays one line; a traceback after
    it keeps its own lines."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's API)
        return printable(super().formatMessage(record))

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = getattr(record, "fields", None)
        if fields:
            line += " " + " ".join(f"{k}={json.dumps(v) if not isinstance(v, (int, float)) else v}"
                                   for k, v in fields.items() if v not in (None, [], 0) or k == "commit")
        return line


def setup(log_format: str, log_level: str | None, *, default_level: str = "WARNING", log_retries: bool = True) -> None:
    """Log to stderr as ``log_format`` (``text`` or ``json``) at ``log_level`` (None: the
    command's ``default_level``, INFO for ``run``); without a level, API retries are still
    logged at INFO when ``log_retries`` (not for the read-only commands, which fail fast with
    one line instead: ``Command.read_only``, ``agent/cli/commands.py``)."""
    global _json
    _json = log_format == "json"
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if _json else TextFormatter(TEXT_FORMAT))
    level = log_level or default_level
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
    if not log_level and log_retries:  # each API retry says what failed and when the next try is
        logging.getLogger("agent.retry").setLevel(logging.INFO)
    for noisy in ("apscheduler", "urllib3", "kubernetes", "leaderelection"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))
    scheduler = logging.getLogger("apscheduler.scheduler")
    if not any(isinstance(f, _OverlapSkipped) for f in scheduler.filters):
        scheduler.addFilter(_OverlapSkipped())


def problem(message: str, fields: dict | None = None) -> None:
    """Print one problem a command ends with on stderr, whatever the log level: ``error:
    MESSAGE`` (``message`` already one printable line), or with ``--log-format json`` one
    JSON object as every log line is (``level`` error, ``logger`` agent, ``message``, and
    ``fields`` such as file, line and field), so a log collector parses every line of
    stderr. Errors of the flags themselves come before ``setup`` and stay plain text."""
    if _json:
        entry = {"time": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                 "level": "error", "logger": "agent", "message": message, **(fields or {})}
        print(json.dumps(entry, default=str), file=sys.stderr)
    else:
        print(f"error: {printable(message)}", file=sys.stderr)


class _OverlapSkipped(logging.Filter):
    """Drops APScheduler's WARNING ``Execution of job ... skipped: maximum number of running
    instances reached (1)``: a job that comes due while its pass still runs is skipped by
    design (``max_instances=1``, see ``agent.server.runner``), not a fault to warn about."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "maximum number of running instances reached" not in str(record.msg)
