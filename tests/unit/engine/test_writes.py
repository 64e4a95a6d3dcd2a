"""Bounded parallel writes that keep the serial pass's results and order (agent/engine/writes.py)."""

from __future__ import annotations

import random
import threading
import time

import pytest

from agent.engine import writes
from agent.engine.report import Report
from agent.kinds import render
from agent.kube.client import ApiError
from tests.unit.fakecluster import FakeCluster


class Pool:
    def __init__(self, concurrency):
        self.concurrency = concurrency


def test_defaults():
    assert (writes.DEFAULT_CONCURRENCY, writes.MAX_CONCURRENCY) == (4, 64)


@pytest.mark.parametrize("concurrency, window", [(1, 64), (4, 64), (16, 64), (3, 2), (4, 1)])
def test_results_and_report_come_in_input_order_whatever_the_completion_order(concurrency, window, monkeypatch):
    """Also across the windows the pool is handed (``WINDOW_PER_WORKER`` tasks per worker)."""
    monkeypatch.setattr(writes, "WINDOW_PER_WORKER", window)
    report, failures = Report(), {}

    def task(i, scratch):
        time.sleep(random.random() / 200)
        scratch.add(f"ns/a{i}", f"Deployment/ns/a{i}", "created")
        if i % 3 == 0:
            scratch.failures[f"ns/a{i}"] = f"failed {i}"
        return i * 10

    out = list(writes.ordered(Pool(concurrency), range(30), task, report, failures))
    assert out == [(i, i * 10) for i in range(30)]
    assert [c.subject for c in report.changes] == [f"Deployment/ns/a{i}" for i in range(30)]
    assert failures == {f"ns/a{i}": f"failed {i}" for i in range(0, 30, 3)}


def test_at_most_concurrency_tasks_run_at_once():
    running, peak, lock, threads = [0], [0], threading.Condition(), set()

    def task(_item, _scratch):
        with lock:
            threads.add(threading.current_thread().name)
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            lock.notify_all()
            # hold until three ran at once (not for a time a loaded machine may outlast)
            lock.wait_for(lambda: peak[0] >= 3, timeout=30)
            running[0] -= 1

    list(writes.ordered(Pool(3), range(12), task, Report()))
    assert peak[0] == 3 and len(threads) == 3  # three threads: never a fourth task at once


def test_no_concurrency_attribute_means_one_at_a_time():
    seen = []
    list(writes.ordered(object(), range(5), lambda i, _s: seen.append((i, threading.current_thread().name)), Report()))
    assert [i for i, _ in seen] == [0, 1, 2, 3, 4]
    assert {name for _, name in seen} == {threading.current_thread().name}


def test_an_unreachable_server_stops_the_rest_and_raises_in_order():
    report, started = Report(), []

    def task(i, scratch):
        started.append(i)
        scratch.add(f"ns/a{i}", f"Application/ns/a{i}", "created")
        if i == 2:
            raise ApiError(0, "Unreachable", "connection refused")
        time.sleep(0.01)
        return i

    results = writes.ordered(Pool(2), range(40), task, report)
    assert next(results) == (0, 0) and next(results) == (1, 1)
    with pytest.raises(ApiError) as err:
        next(results)
    assert err.value.status == 0
    assert [c.subject for c in report.changes] == [f"Application/ns/a{i}" for i in range(3)]
    assert len(started) < 40  # tasks not yet started were skipped


def test_an_api_refusal_is_a_result_that_stops_nothing():
    def task(i, _scratch):
        if i == 1:
            raise ApiError(422, "Invalid", "no")
        return i

    results = writes.ordered(Pool(4), range(4), task, Report())
    assert next(results) == (0, 0)
    with pytest.raises(ApiError):  # raised at its place: callers turn refusals into results
        next(results)


def test_scratch_replays_failed_and_notes_and_reasons():
    report, reasons = Report(), {}

    def task(i, scratch):
        scratch.failed.add(f"ns/a{i}")
        scratch.notes.append(f"note {i}")
        scratch.reasons[f"ns/a{i}"] = "InvalidSpec"

    list(writes.ordered(Pool(4), range(3), task, report, None, reasons))
    assert report.failed == {"ns/a0", "ns/a1", "ns/a2"}
    assert report.notes == ["note 0", "note 1", "note 2"]
    assert reasons == {f"ns/a{i}": "InvalidSpec" for i in range(3)}


def test_a_scratch_makes_only_the_containers_a_task_uses_and_replays_each():
    scratch = writes.Scratch()
    assert not hasattr(scratch, "__dict__") and not scratch
    with pytest.raises(AttributeError, match="'Scratch' object has no attribute 'health'"):
        scratch.health  # noqa: B018 (a Report field a task may not record)
    assert not scratch and scratch.notes == [] and not scratch  # made empty: still nothing to replay
    scratch.add("ns/a", "Deployment/ns/a", "created")
    scratch.add("ns/a", "Deployment/ns/a", "failed", message="m")
    assert scratch and scratch.added == [(("ns/a", "Deployment/ns/a", "created"), {}),
                                         (("ns/a", "Deployment/ns/a", "failed"), {"message": "m"})]
    for name, value in [("failed", {"ns/b"}), ("notes", ["n"]), ("notices", ["told"]), ("readiness", {"ns/b": ("True", "")}),
                        ("attributed", {"ns/b": "abc"}), ("replaced", {"def"}), ("failures", {"ns/b": "f"}),
                        ("reasons", {"ns/b": "R"})]:
        alone = writes.Scratch()
        setattr(alone, name, value)
        assert alone, name
        report, failures, reasons = Report(), {}, {}
        alone.replay(report, failures, reasons)
        got = {"failures": failures, "reasons": reasons}.get(name, getattr(report, name, None))
        assert got == value, name
    report = Report()
    scratch.replay(report)
    assert [(c.subject, c.action, c.message) for c in report.changes] == [
        ("Deployment/ns/a", "created", ""), ("Deployment/ns/a", "failed", "m")]


def test_each_missing_namespace_is_created_once_however_many_tasks_need_it():
    class Slow(FakeCluster):  # a slow API server: the tasks overlap
        def create(self, obj):
            time.sleep(0.01)
            return super().create(obj)

    kube = Slow(namespaces=("existing",))
    made = writes.Namespaces(kube, {"existing"}, render.namespace)
    list(writes.ordered(Pool(8), ["a", "a", "b", "existing", "a", "b"] * 3,
                        lambda ns, _s: made.ensure(ns), Report()))
    assert sorted(kube.writes) == [("create", "Namespace/a"), ("create", "Namespace/b")]  # a second: 409


def test_a_failed_namespace_creation_is_tried_again_by_the_next_task():
    kube = FakeCluster()
    kube.fail("create", "Namespace/a", ApiError(500, "InternalError", "try again"))
    made = writes.Namespaces(kube, set(), render.namespace)
    with pytest.raises(ApiError):
        made.ensure("a")
    made.ensure("a")
    made.ensure("a")
    assert kube.writes == [("create", "Namespace/a")] * 2 and kube.stored("Namespace", "", "a") is not None


def test_inline_items_run_in_the_calling_thread_and_keep_their_place():
    report, threads = Report(), {}

    def task(i, scratch):
        threads[i] = threading.current_thread().name
        scratch.add(f"ns/a{i}", f"Deployment/ns/a{i}", "unchanged" if i % 2 else "created")
        return i

    out = list(writes.ordered(Pool(4), range(8), task, report, inline=lambda i: i % 2 == 1))
    assert out == [(i, i) for i in range(8)]
    assert [c.subject for c in report.changes] == [f"Deployment/ns/a{i}" for i in range(8)]
    assert {threads[i] for i in (1, 3, 5, 7)} == {threading.current_thread().name}
    assert threading.current_thread().name not in {threads[i] for i in (0, 2, 4, 6)}
