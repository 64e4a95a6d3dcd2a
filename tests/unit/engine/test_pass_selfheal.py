"""Self-heal backoff (``agent.engine.selfheal``, issue 46), against the in-memory cluster: a
child another writer keeps changing is corrected at once the first time, then held with a
growing wait (reported ``held``, ``run`` asked to pass again then); a change in Git is applied at
once whatever the record; ``sync --once`` (no ``Steady``) corrects every time; once the other
writer stops, one pass corrects it and the next writes nothing."""

from __future__ import annotations

import pytest

from agent.engine import selfheal, steady as steady_
from agent.engine.report import CONFIGURED, HELD, UNCHANGED
from tests.unit.engine.passes import NS, World, app_yaml

SUBJECT = f"Deployment/{NS}/web"


@pytest.fixture
def world(tmp_path):
    return World(tmp_path)


@pytest.fixture
def steady(world):
    def versions(kind, namespace, name, read):  # as the live store answers (test_pass_steady.py)
        stored = world.kube.stored(kind, namespace, name) if kind else None
        return stored["metadata"]["resourceVersion"] if stored else read
    return steady_.Steady(versions=versions)


def edit(world: World, replicas: int) -> None:
    """Another writer's edit of the Deployment (``kubectl scale``)."""
    live = world.child("Deployment", "web")
    live["spec"]["replicas"] = replicas
    world.kube.put(live, manager="kubectl-scale")


def action(report) -> tuple:
    return next((c.action, c.message) for c in report.changes if c.subject == SUBJECT)


def test_the_wait_grows_and_is_capped():
    assert [selfheal.wait(n) for n in (1, 2, 3, 4)] == [5, 10, 20, 40]
    assert selfheal.wait(20) == selfheal.MAX_WAIT


def test_an_object_another_writer_keeps_changing_is_corrected_with_a_growing_wait(world, steady, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(selfheal.time, "monotonic", lambda: clock[0])
    world.commit({"web.yaml": app_yaml("web", replicas=2)})
    world.sync(steady=steady)
    edit(world, 5)
    assert action(world.sync(steady=steady))[0] == CONFIGURED  # the first correction: at once
    edit(world, 5)
    held, why = action(report := world.sync(steady=steady))
    assert held == HELD and "corrected 1 time already" in why and "(self-heal backoff)" in why
    assert report.retry_at is not None and world.child("Deployment", "web")["spec"]["replicas"] == 5
    clock[0] += selfheal.FIRST_WAIT
    assert action(world.sync(steady=steady))[0] == CONFIGURED  # its time came: the retry pass
    edit(world, 5)
    clock[0] += selfheal.FIRST_WAIT  # the next wait is twice as long
    assert action(world.sync(steady=steady))[0] == HELD
    clock[0] += selfheal.FIRST_WAIT
    assert action(world.sync(steady=steady))[0] == CONFIGURED  # the other writer stopped: corrected
    assert world.child("Deployment", "web")["spec"]["replicas"] == 2
    report = world.sync(steady=steady)
    assert all(c.action == UNCHANGED for c in report.changes) and world.kube.writes == []


def test_a_change_in_git_is_applied_at_once_during_a_backoff(world, steady, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(selfheal.time, "monotonic", lambda: clock[0])
    world.commit({"web.yaml": app_yaml("web", replicas=2)})
    world.sync(steady=steady)
    for _ in range(2):
        edit(world, 5)
        world.sync(steady=steady)
    world.commit({"web.yaml": app_yaml("web", replicas=3)})
    assert action(world.sync(steady=steady))[0] == CONFIGURED
    assert world.child("Deployment", "web")["spec"]["replicas"] == 3


def test_sync_once_corrects_every_time(world):
    world.commit({"web.yaml": app_yaml("web", replicas=2)})
    world.sync()
    for _ in range(3):
        edit(world, 5)
        assert action(world.sync())[0] == CONFIGURED
