"""Control characters from Git (a file name, a diff) never reach a terminal or a log line raw
(issue 42: raw newlines and ANSI escapes in file names forged CI log lines)."""

from __future__ import annotations

import io
import logging

from agent.cli import output
from agent.common import logs

EVIL = "apps/evil\n::error::x\x1b[31m\r.yaml"


def test_a_text_log_line_stays_one_line_with_escapes():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.TextFormatter(logs.TEXT_FORMAT))
    logger = logging.getLogger("agent.test-control")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("pass failed: %s", EVIL, extra={"fields": {"file": EVIL}})
    finally:
        logger.removeHandler(handler)
    line = stream.getvalue()
    assert line.count("\n") == 1 and "\x1b" not in line and "\r" not in line
    assert "apps/evil\\n::error::x\\x1b[31m\\r.yaml" in line


def test_an_error_line_is_printed_escaped(capsys):
    logs.problem(f"{EVIL}:1: not an Application")
    err = capsys.readouterr().err
    assert err == "error: apps/evil\\n::error::x\\x1b[31m\\r.yaml:1: not an Application\n"


def test_diffs_in_text_and_markdown_keep_their_lines_and_escape_the_rest():
    diff = "--- a\n+++ b\n+  path: apps/evil\x1b[31m\r.yaml\n"  # a line break is the diff's own
    doc = {"command": "diff", "dryRun": True, "ok": True, "changes": True, "commit": "a" * 40,
           "applications": [{"name": "ns/web", "objects": [
               {"subject": "Application/ns/web", "kind": "Application", "namespace": "ns", "name": "web",
                "action": "update", "message": None, "diff": diff}]}],
           "errors": [], "notes": [], "counts": dict.fromkeys(output.COUNTED, 0) | {"update": 1}, "wait": None}
    for rendered in (output.text(doc), output.markdown(doc)):
        assert "\x1b" not in rendered and "\r" not in rendered
        assert "+  path: apps/evil\\x1b[31m\\r.yaml" in rendered
        assert "--- a\n+++ b\n" in rendered
