"""What `run` sets up before its first pass: the wait for the watches' first lists (issue 33), the collector."""

import pytest

from agent.server import runner as runner_mod
from agent.server.endpoints import Health, Metrics


class Clock:
    """``time`` as ``_await_first_lists`` reads it, in virtual seconds: only the waits move it,
    so the tests measure the wait's own time, whatever the machine's load."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


class Listed:
    """A watch's first list done (``set``), as ``threading.Event``; each ``wait(seconds)`` moves
    the clock by ``seconds`` and then calls ``on_wait`` (items arriving meanwhile)."""

    def __init__(self, clock: Clock, on_wait=lambda: None):
        self.clock, self.on_wait, self.done, self.waits = clock, on_wait, False, 0

    def is_set(self) -> bool:
        return self.done

    def set(self) -> None:
        self.done = True

    def wait(self, seconds: float) -> bool:
        self.waits += 1
        self.clock.now += seconds
        self.on_wait()
        return self.done


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(runner_mod, "time", clock)  # the module's own ``time`` only
    return clock


@pytest.fixture
def runner(monkeypatch, clock):
    monkeypatch.setattr(runner_mod, "FIRST_LIST_WAIT", 0.3)
    r = runner_mod.Runner(None, None, interval=60, jitter=0, metrics=Metrics(), health=Health(max_age=60))
    r._first_lists = [Listed(clock), Listed(clock)]
    return r


def test_the_wait_lasts_while_items_arrive_past_the_quiet_limit(runner, clock):
    lists = list(runner._first_lists)

    def arrive():  # an item every 0.1 s for 1 s, then both lists are done
        runner.store.items_read += 1
        if clock.now >= 1.0:
            for listed in lists:
                listed.set()

    lists[0].on_wait = arrive
    runner._await_first_lists()
    assert clock.now >= 1.0 and all(e.is_set() for e in lists) and runner._first_lists == []


def test_the_wait_ends_once_no_item_arrived_for_the_quiet_limit(runner, clock):
    runner._await_first_lists()  # a list refused or not answered: nothing arrives
    assert 0.3 <= clock.now < 0.4 and runner._first_lists == []


def test_the_wait_ends_at_once_when_stopping(runner, clock):
    lists = list(runner._first_lists)
    runner.stopping.set()
    runner._await_first_lists()
    assert clock.now == 0 and [e.waits for e in lists] == [0, 0]


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


def test_a_pass_that_stopped_part_way_leaves_the_applications_gauge_as_the_last_whole_pass_set_it():
    import types
    from agent.engine.report import Report
    metrics = Metrics()
    r = runner_mod.Runner(None, types.SimpleNamespace(source_id="s"), interval=60, jitter=0, metrics=metrics,
                          health=Health(max_age=60))
    healthy = {"status": "Healthy", "message": ""}

    def ready() -> tuple[float, float]:
        return tuple(metrics.applications.labels(source="s", ready=v)._value.get() for v in ("true", "false"))
    r._observe(Report(commit="c1", health={"ns/a": healthy, "ns/b": healthy}), 0.1, "interval")
    assert ready() == (2, 0)
    r._observe(Report(commit="c1", health={"ns/a": healthy}, stopped=True), 0.1, "interval")  # some of them
    assert ready() == (2, 0)


def test_a_finished_pass_s_report_is_not_kept_by_the_runner(monkeypatch):
    """Nothing of ``run`` reads a finished pass's report after the pass: kept, it was a second
    report beside the one the next pass builds, 7 MB at 10,000 Applications (issue 48)."""
    import gc
    import types
    import weakref
    from agent.engine.report import Report
    made = []

    def run(*args, **kwargs):
        made.append(Report(commit="c1", health={"ns/a": {"status": "Healthy", "message": ""}}))
        return made[-1]
    monkeypatch.setattr(runner_mod.sync, "run", run)
    r = runner_mod.Runner(types.SimpleNamespace(), types.SimpleNamespace(source_id="s"), interval=60, jitter=0,
                          metrics=Metrics(), health=Health(max_age=60), watch=False)
    r._first_lists = []
    assert r.run_pass(offline=False, trigger="interval") is made[0]
    gone = weakref.ref(made.pop())
    gc.collect()
    assert gone() is None


def test_the_applications_facts_are_derived_between_passes_unless_a_push_waits():
    """A status sweep replaced every Application: their facts are derived when its events are
    judged (not news), so the next push's pass does not on its way to its apply (issue 48)."""
    import types

    r = runner_mod.Runner(None, types.SimpleNamespace(source_id="s", former_source_ids=()), interval=60, jitter=0,
                          metrics=Metrics(), health=Health(max_age=60))
    r.store.watching("heumsi.github.io", "Application", None)
    apps = [{"kind": "Application", "metadata": {"namespace": "ns", "name": f"a{i}", "resourceVersion": "1"}}
            for i in range(300)]
    r.store.listed("Application", apps, "1")
    assert r.run_pass(offline=True, trigger="watch", only_if=lambda: False) is None
    held = r.store.held("Application")
    assert [pair[0] for pair in r.steady._ahead.values()] == held
    assert [pair[1].key for pair in r.steady._ahead.values()] == [f"ns/a{i}" for i in range(300)]
    r.steady._ahead = {}
    r._last_requested, r._last_online_start = 2.0, 1.0  # served by a pass that started before it:
    assert r.run_pass(offline=True, trigger="watch", only_if=lambda: False) is None  # a push waits,
    assert len(r.steady._ahead) == 255  # and derives them itself
    r._last_online_start = 3.0  # its pass has started
    assert r.run_pass(offline=True, trigger="watch", only_if=lambda: False) is None
    assert len(r.steady._ahead) == 300
