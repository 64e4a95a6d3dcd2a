"""``sync --once --wait`` with tasks: passes again until every task gate has opened.

Why: one pass cannot finish an Application whose BeforeRollout task runs (``taskgate``): it
creates the task's Job and holds the rest; only a pass after the Job succeeded rolls out, and
only a pass after the rollout starts an AfterRollout task. ``run`` gets those passes from its
watches; ``sync --once --wait`` runs them itself, every ``POLL_SECONDS``, while a pass left an
Application with reason ``TaskRunning`` (``Report.tasks``). It stops at once when one is
``TaskFailed`` (waiting cannot help: a new commit or ``reconcile`` must run it again), at the
timeout, or on a signal; then ``readiness.wait`` waits for the rollouts as for any pass.

A later pass finds the Jobs and children the earlier ones made unchanged, so the reports are
merged (``merged``): each object keeps the last thing a pass did to it other than leaving it
unchanged, and every pass's notices are kept.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from agent.engine.conditions import Reason
from agent.engine.readiness import Result, Wait
from agent.engine.report import UNCHANGED, Report

POLL_SECONDS = 2.0
"""Seconds between two passes while a task runs: a Job's pod takes seconds at least."""


def merged(earlier: Report, later: Report) -> Report:
    """``later`` with the changes of both (per subject, the later pass's line unless it left the
    object unchanged and the earlier one did something) and the notices of both, earlier first."""
    lines = {c.subject: c for c in earlier.changes}
    for change in later.changes:
        before = lines.get(change.subject)
        if before is None or change.action != UNCHANGED or before.action == UNCHANGED:
            lines[change.subject] = change
    later.changes = list(lines.values())
    later.notices = earlier.notices + later.notices
    return later


def until_open(again: Callable[[], Report], report: Report, timeout: float, stop: threading.Event, *,
               poll: float = POLL_SECONDS, on_pass: Callable[[Report], object] | None = None
               ) -> tuple[Report, Result | None]:
    """Run ``again()`` (one pass) every ``poll`` seconds while ``report`` (the last pass's) has
    an Application with a task running, for at most ``timeout`` seconds (``stop``: a signal ends
    it). Returns (the merged report, None) once no task runs, the report alone having failed
    (errors: the caller reports them); else (the merged report, the ``Result``: ``FAILED`` when a
    task failed, ``TIMEOUT``, ``INTERRUPTED``), the waiting Applications' states in it.
    ``on_pass(report)``: told each further pass's report."""
    started = time.monotonic()
    while report.ok:
        running = {k for k, why in report.tasks.items() if why == Reason.TASK_RUNNING}
        failed = {k for k, why in report.tasks.items() if why == Reason.TASK_FAILED}
        if failed or not running:
            return report, (_result(Wait.FAILED, report, started, timeout) if failed else None)
        left = timeout - (time.monotonic() - started)
        if left <= 0:
            return report, _result(Wait.TIMEOUT, report, started, timeout)
        if stop.wait(min(poll, left)):
            return report, _result(Wait.INTERRUPTED, report, started, timeout)
        report = merged(report, again())
        if on_pass is not None:
            on_pass(report)
    return report, None


def _result(kind: Wait, report: Report, started: float, timeout: float) -> Result:
    """The wait's ``Result`` when it ends at a task: each Application a task holds, failed or
    waiting; the others as far as the pass saw them (healthy when their health was)."""
    states = {key: Wait.FAILED if why == Reason.TASK_FAILED else Wait.WAITING for key, why in report.tasks.items()}
    for key, outcome in report.synced.items():
        if outcome is not None and key not in states:
            states[key] = Wait.HEALTHY if (report.health.get(key) or {}).get("status") == "Healthy" else Wait.WAITING
    return Result(kind, time.monotonic() - started, timeout, states)
