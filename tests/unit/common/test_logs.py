"""agent.logs: what reaches stderr."""

from __future__ import annotations

import logging

from agent.common import logs


def test_a_job_skipped_while_its_pass_runs_is_not_a_warning(capfd):
    logs.setup("text", None, default_level="INFO")
    logs.setup("text", None, default_level="INFO")  # set up twice (tests, a second command): one filter
    scheduler = logging.getLogger("apscheduler.scheduler")
    scheduler.warning('Execution of job "%s" skipped: maximum number of running instances reached (%d)', "pass", 1)
    scheduler.warning("Run time of job %s was missed", "pass")
    err = capfd.readouterr().err
    assert "maximum number of running instances" not in err and "Run time of job pass was missed" in err
    assert len(scheduler.filters) == 1
