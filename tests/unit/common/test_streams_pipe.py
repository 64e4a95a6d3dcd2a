"""A reader that closes the pipe (``get -A | head -1``): the read-only commands end quietly
with 141, as a shell reports kubectl ended by SIGPIPE; other commands keep exit 2."""

from __future__ import annotations

import io
import os

from agent.common import exitcodes, streams


def broken_stdout() -> streams.Guarded:
    read, write = os.pipe()
    os.close(read)
    out = streams.Guarded(io.TextIOWrapper(os.fdopen(write, "wb", buffering=0), write_through=True), -1, "<stdout>")
    out._fail = lambda err, out=out: (setattr(out, "lost", True), setattr(out, "error", out.error or err),
                                      setattr(out, "_stream", None))  # keep the test's own descriptors
    out.write("NAME   HEALTH\n" * 100)
    return out


def test_a_closed_pipe_is_141_quietly_for_get_and_explain_and_2_otherwise(capsys):
    err = streams.Guarded(io.StringIO(), 2, "<stderr>")
    assert streams.exit_code(exitcodes.OK, broken_stdout(), err, read_only=True) == exitcodes.CLOSED_PIPE == 141
    assert streams.exit_code(exitcodes.CHANGED, broken_stdout(), err, read_only=True) == 141
    assert err._stream.getvalue() == ""
    assert streams.exit_code(exitcodes.OK, broken_stdout(), err) == exitcodes.FAILED
    assert streams.exit_code(exitcodes.CHANGED, streams.Guarded(io.StringIO(), 1, "<stdout>"), err,
                             read_only=True) == exitcodes.CHANGED
