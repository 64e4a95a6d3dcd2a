"""What `run` sets up before its first pass: the wait for the watches' first lists (issue 33), the collector."""

import threading
import time

import pytest

from agent.server import runner as runner_mod
from agent.server.endpoints import Health, Metrics


@pytest.fixture
def runner(monkeypatch):
    monkeypatch.setattr(runner_mod, "FIRST_LIST_WAIT", 0.3)
    r = runner_mod.Runner(None, None, interval=60, jitter=0, metrics=Metrics(), health=Health(max_age=60))
    r._first_lists = [threading.Event(), threading.Event()]
    return r


def _list_slowly(r, seconds: float) -> None:
    """Items arrive every 50 ms for ``seconds``, then both lists are done."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        r.store.items_read += 1
        time.sleep(0.05)
    for listed in r._first_lists:
        listed.set()


def test_the_wait_lasts_while_items_arrive_past_the_quiet_limit(runner):
    lists = list(runner._first_lists)
    threading.Thread(target=_list_slowly, args=(runner, 1.0), daemon=True).start()
    start = time.monotonic()
    runner._await_first_lists()
    assert time.monotonic() - start >= 0.9 and all(e.is_set() for e in lists) and runner._first_lists == []


def test_the_wait_ends_once_no_item_arrived_for_the_quiet_limit(runner):
    start = time.monotonic()
    runner._await_first_lists()  # a list refused or not answered: nothing arrives
    assert 0.25 <= time.monotonic() - start < 1.0


def test_the_wait_ends_at_once_when_stopping(runner):
    runner.stopping.set()
    start = time.monotonic()
    runner._await_first_lists()
    assert time.monotonic() - start < 0.1


def test_leading_raises_the_threshold_of_a_full_collection(monkeypatch):
    import gc
    import types

    before = gc.get_threshold()
    r = runner_mod.Runner(None, types.SimpleNamespace(source_id="s"), interval=60, jitter=0, metrics=Metrics(),
                          health=Health(max_age=60), watch=False)
    r._scheduler = types.SimpleNamespace(add_job=lambda *a, **k: None, start=lambda: None)
    r.stopping.set()  # the trigger loop ends at once
    try:
        r.start_leading()
        assert gc.get_threshold() == runner_mod.GC_THRESHOLDS and runner_mod.GC_THRESHOLDS[2] >= 1000
    finally:
        gc.set_threshold(*before)
