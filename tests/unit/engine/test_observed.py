"""``status.observedAt``/``status.observedBy`` (issue 46 item 5): the status says when it was
true and by what command. ``status.observed`` is pure; the passes run ``sync.run`` against the
in-memory cluster with a real Git repository (``tests/unit/engine/passes.py``). The real control
plane: tests/test_observed.py."""

from __future__ import annotations

import pytest

from agent.engine import status, statuswrite
from agent.engine.sync_now import RECONCILE_REQUESTED_AT
from tests.unit.engine.passes import NS, World, app_yaml, rolled_out

AT, LATER = "2026-12-01T10:00:00Z", "2026-12-01T10:12:00Z"
NEW = {"observedGeneration": 1, "health": {"status": "Progressing", "message": "m"}}


@pytest.mark.parametrize("old, by, expected", [
    (None, "sync --once", {**NEW, "observedAt": LATER, "observedBy": "sync --once"}),  # a first write
    ({**NEW, "observedAt": AT, "observedBy": "run"}, "sync --once",  # nothing moved: the stored pair is kept
     {**NEW, "observedAt": AT, "observedBy": "run"}),
    ({**NEW, "health": {"status": "Healthy", "message": ""}, "observedAt": AT, "observedBy": "run"}, "sync --once",
     {**NEW, "observedAt": LATER, "observedBy": "sync --once"}),  # the health moved: observed now, by this pass
    (NEW, "run", NEW),  # written by an agent before the fields: an upgrade writes nothing
    ({**NEW, "observedAt": AT}, "run", {**NEW, "observedAt": AT}),  # a time without a command stays as it is
    ({**NEW, "health": {"status": "Healthy"}}, "run", {**NEW, "observedAt": LATER, "observedBy": "run"}),
    ({**NEW, "extra": 1, "observedAt": AT, "observedBy": "run"}, "run",  # a field the pass drops moves it too
     {**NEW, "observedAt": LATER, "observedBy": "run"}),
])
def test_observed_keeps_the_pair_while_nothing_else_moves(old, by, expected):
    assert status.observed(old, dict(NEW), LATER, by) == expected


@pytest.fixture
def world(tmp_path, monkeypatch):
    clock = iter(f"2026-12-01T10:{minute:02d}:00Z" for minute in range(60))
    monkeypatch.setattr(statuswrite, "now", lambda: next(clock))
    return World(tmp_path)


def observed(world: World, name: str = "web") -> tuple:
    got = world.app(name)["status"]
    return got["health"]["status"], got.get("observedAt"), got.get("observedBy")


def test_a_pass_records_when_and_by_what_and_a_pass_with_nothing_new_writes_nothing(world):
    world.commit({"apps/web.yaml": app_yaml("web")})
    assert world.sync().ok
    first = observed(world)
    assert first[0] == "Progressing" and first[2] == "sync --once"
    assert world.sync().ok and not world.kube.writes  # the same status: no write, the pair kept
    assert observed(world) == first
    rolled_out(world, "web")
    assert world.sync(observed_by="run").ok
    assert world.kube.writes == [("patch_status", f"Application/{NS}/web")]
    healthy = observed(world)
    assert healthy[0] == "Healthy" and healthy[2] == "run" and healthy[1] > first[1]


def test_a_pass_that_handles_a_sync_now_request_is_by_reconcile(world):
    world.commit({"apps/web.yaml": app_yaml("web")})
    assert world.sync(observed_by="run").ok
    live = world.app("web")
    live["metadata"].setdefault("annotations", {})[RECONCILE_REQUESTED_AT] = "2026-12-01T10:30:00.000000001Z"
    world.kube.put(live, manager="gitops-agent-reconcile")
    assert world.sync(observed_by="run").ok
    assert observed(world)[2] == "reconcile"
    assert world.sync(observed_by="run").ok and not world.kube.writes  # handled: nothing new, nothing written
    assert observed(world)[2] == "reconcile"
    live = world.app("web")
    live["metadata"]["annotations"][RECONCILE_REQUESTED_AT] = "2026-12-01T10:40:00.000000001Z"
    world.kube.put(live, manager="gitops-agent-reconcile")
    assert world.sync().ok  # no run handles it: sync --once does, and says so
    assert observed(world)[2] == "sync --once"


def test_an_upgrade_writes_nothing_and_the_pair_comes_with_the_next_change(world):
    world.commit({"apps/web.yaml": app_yaml("web")})
    assert world.sync().ok
    live = world.app("web")
    for key in ("observedAt", "observedBy"):  # as an agent before issue 46 left it
        del live["status"][key]
    world.kube.put(live, manager="gitops-agent", subresource="status")
    assert world.sync().ok and not world.kube.writes  # no write, for the status or a child
    assert observed(world) == ("Progressing", None, None)
    rolled_out(world, "web")
    assert world.sync().ok
    assert world.kube.writes == [("patch_status", f"Application/{NS}/web")]
    _, at, by = observed(world)
    assert at and by == "sync --once"
