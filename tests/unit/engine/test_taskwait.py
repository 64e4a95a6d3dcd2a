"""``sync --once --wait`` with tasks (``agent.engine.taskwait``): passes again while a task
runs, stops at a failed one, the timeout or a signal, and merges the reports."""

from __future__ import annotations

import threading

from agent.engine import taskwait
from agent.engine.readiness import Wait
from agent.engine.report import CREATED, HELD, UNCHANGED, Report


def report(tasks: dict[str, str], *changes, **fields) -> Report:
    out = Report(tasks=dict(tasks), **fields)
    for subject, action in changes:
        out.add("ns/web", subject, action)
    return out


def test_passes_again_until_no_task_runs_and_merges_what_each_did():
    later = iter([report({"ns/web": "TaskRunning"}, ("Job/ns/web-m-1", UNCHANGED), ("Deployment/ns/web", HELD)),
                  report({}, ("Job/ns/web-m-1", UNCHANGED), ("Deployment/ns/web", CREATED))])
    told = []
    first = report({"ns/web": "TaskRunning"}, ("Job/ns/web-m-1", CREATED), ("Deployment/ns/web", HELD),
                   notices=["first"])
    last, ended = taskwait.until_open(lambda: next(later), first, 60, threading.Event(), poll=0, on_pass=told.append)
    assert ended is None and len(told) == 2 and last is told[-1]
    assert [(c.subject, c.action) for c in last.changes] == [("Job/ns/web-m-1", CREATED),
                                                             ("Deployment/ns/web", CREATED)]
    assert last.notices == ["first"]


def test_a_failed_task_ends_the_wait_at_once():
    calls = []
    first = report({"ns/web": "TaskFailed", "ns/db": "TaskRunning"})
    last, ended = taskwait.until_open(lambda: calls.append(1) or first, first, 60, threading.Event(), poll=0)
    assert calls == [] and ended.result == Wait.FAILED
    assert ended.states == {"ns/web": Wait.FAILED, "ns/db": Wait.WAITING} and ended.not_healthy() == ["ns/db", "ns/web"]


def test_the_timeout_and_a_signal_end_the_wait():
    running = report({"ns/web": "TaskRunning"}, synced={"ns/ok": object()}, health={"ns/ok": {"status": "Healthy"}})
    _, ended = taskwait.until_open(lambda: running, running, 0, threading.Event(), poll=0)
    assert ended.result == Wait.TIMEOUT and ended.states == {"ns/web": Wait.WAITING, "ns/ok": Wait.HEALTHY}
    stop = threading.Event()
    stop.set()
    _, ended = taskwait.until_open(lambda: running, running, 60, stop, poll=1)
    assert ended.result == Wait.INTERRUPTED


def test_a_pass_that_fails_ends_the_loop_with_its_report():
    broken = report({"ns/web": "TaskRunning"}, errors=["boom"])
    last, ended = taskwait.until_open(lambda: broken, report({"ns/web": "TaskRunning"}), 60, threading.Event(), poll=0)
    assert last.errors == ["boom"] and ended is None
