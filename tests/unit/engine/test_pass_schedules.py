"""The pass with schedules (``spec.schedules``: a CronJob each, ``agent.kinds.cronjob``) against
the in-memory cluster: several children of one kind per Application, each created, updated in
place, left alone when unchanged and pruned when its schedule leaves Git; the status of the
schedules, a failed run told but not Degraded. The real-cluster suite (tests/test_schedules.py)
runs them with the CronJob and Job controllers."""

from __future__ import annotations

import pytest

from agent.api.labels import SCHEDULE_LABEL
from agent.engine.report import CONFIGURED, CREATED, PRUNED, UNCHANGED
from tests.unit.engine.passes import NS, World, actions, app_yaml, conditions, rolled_out

TWO = {"report": {"schedule": "0 3 * * *", "command": ["report"]}, "cleanup": {"schedule": "@hourly"}}


@pytest.fixture
def world(tmp_path):
    return World(tmp_path)


def cronjobs(world: World) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in world.kube.of_kind("CronJob")}


def test_each_schedule_is_a_cronjob_created_updated_in_place_and_pruned(world):
    world.commit({"web.yaml": app_yaml("web", schedules=TWO)})
    report = world.sync()
    assert report.ok, report.errors
    assert actions(report)[-2:] == [(f"CronJob/{NS}/web-cleanup", CREATED), (f"CronJob/{NS}/web-report", CREATED)]
    first = cronjobs(world)
    assert set(first) == {"web-cleanup", "web-report"}
    assert world.sync().counts() == {UNCHANGED: 5}  # the Application, its Deployment, Service and two CronJobs

    world.commit({"web.yaml": app_yaml("web", schedules={**TWO, "report": {"schedule": "0 4 * * *"}})})
    report = world.sync()
    assert (f"CronJob/{NS}/web-report", CONFIGURED) in actions(report)
    assert (f"CronJob/{NS}/web-cleanup", UNCHANGED) in actions(report)
    updated = cronjobs(world)["web-report"]
    assert updated["metadata"]["uid"] == first["web-report"]["metadata"]["uid"]  # in place
    assert updated["spec"]["schedule"] == "0 4 * * *"

    world.commit({"web.yaml": app_yaml("web", schedules={"cleanup": TWO["cleanup"]})})
    report = world.sync()
    assert (f"CronJob/{NS}/web-report", PRUNED) in actions(report)
    assert set(cronjobs(world)) == {"web-cleanup"}

    world.commit({"web.yaml": app_yaml("web")})
    report = world.sync()
    assert (f"CronJob/{NS}/web-cleanup", PRUNED) in actions(report)
    assert cronjobs(world) == {} and world.child("Deployment", "web") is not None


def test_an_application_gone_from_git_takes_its_cronjobs_with_it(world):
    world.commit({"web.yaml": app_yaml("web", schedules=TWO), "db.yaml": app_yaml("db")})
    world.sync()
    world.commit({"web.yaml": None})
    report = world.sync()
    assert {(s, a) for s, a in actions(report) if a == PRUNED} >= {
        (f"CronJob/{NS}/web-cleanup", PRUNED), (f"CronJob/{NS}/web-report", PRUNED), (f"Application/{NS}/web", PRUNED)}
    assert cronjobs(world) == {}


def test_a_cronjob_of_another_application_of_that_name_is_not_taken(world):
    """``web`` with schedule ``a-b`` and ``web-a`` with schedule ``b`` both want ``web-a-b``: the
    first one's stays its own, the second fails (OwnershipConflict), nothing is pruned."""
    world.commit({"web.yaml": app_yaml("web", schedules={"a-b": {"schedule": "@daily"}})})
    world.sync()
    owner = cronjobs(world)["web-a-b"]["metadata"]["ownerReferences"][0]["name"]
    world.commit({"web-a.yaml": app_yaml("web-a", schedules={"b": {"schedule": "@hourly"}})})
    report = world.sync()
    assert report.reasons == {f"{NS}/web-a": "OwnershipConflict"}
    assert "controlled by Application/web" in report.failures[f"{NS}/web-a"]
    assert world.app("web-a")["status"]["health"]["message"] == (
        "CronJob/web-a-b: another CronJob of this name exists and is not the agent's, so the agent's is not created")
    live = cronjobs(world)["web-a-b"]
    assert live["metadata"]["ownerReferences"][0]["name"] == owner == "web"
    assert live["spec"]["schedule"] == "@daily"
    assert world.sync().counts().get(PRUNED) is None


def test_the_status_lists_the_schedules_and_a_failed_run_is_not_degraded(world):
    world.commit({"web.yaml": app_yaml("web", schedules=TWO)})
    world.sync()
    rolled_out(world, "web")
    live = cronjobs(world)["web-report"]
    world.kube.patch_status(live, {"lastScheduleTime": "2026-12-06T03:00:00Z",
                                   "lastSuccessfulTime": "2026-12-05T03:00:09Z"})
    world.kube.add({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": "web-report-29000", "namespace": NS, "labels": {SCHEDULE_LABEL: "report"},
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "web-report",
                             "uid": live["metadata"]["uid"], "controller": True}]},
        "status": {"conditions": [{"type": "Failed", "status": "True", "lastTransitionTime": "2026-12-06T03:10:00Z",
                                   "reason": "BackoffLimitExceeded", "message": "Job has reached the specified "
                                                                                "backoff limit"}]}})
    report = world.sync()
    status = world.app("web")["status"]
    assert status["schedules"] == [
        {"name": "cleanup", "cronJob": "web-cleanup", "active": 0},
        {"name": "report", "cronJob": "web-report", "lastScheduleTime": "2026-12-06T03:00:00Z",
         "lastSuccessfulTime": "2026-12-05T03:00:09Z", "active": 0,
         "lastFailure": {"job": "web-report-29000", "time": "2026-12-06T03:10:00Z", "reason": "BackoffLimitExceeded",
                         "message": "Job has reached the specified backoff limit"}}]
    assert status["health"]["status"] == "Healthy", status["health"]
    assert conditions(world.app("web"))["Ready"][0] == "True"
    assert report.ok
    assert [(s, a) for s, a in actions(report) if s.startswith("Job/")] == []  # a Job is read, never applied


def test_a_suspended_schedule_is_suspended_and_so_is_the_application_health(world):
    world.commit({"web.yaml": app_yaml("web", replicas=0, schedules={"report": {"schedule": "@daily",
                                                                                 "suspend": True}})})
    world.sync()  # the status of the pass that creates it reads the CronJob as applied
    assert world.app("web")["status"]["schedules"][0]["suspended"] is True
    rolled_out(world, "web")
    world.sync()
    assert cronjobs(world)["web-report"]["spec"]["suspend"] is True
    status = world.app("web")["status"]
    assert status["schedules"][0]["suspended"] is True
    assert status["health"]["status"] == "Suspended"
    assert "CronJob/web-report" in status["health"]["message"]


def test_a_suspended_application_leaves_its_cronjobs_alone(world):
    world.commit({"web.yaml": app_yaml("web", schedules=TWO)})
    world.sync()
    world.commit({"web.yaml": app_yaml("web", suspend=True, schedules={"cleanup": {"schedule": "@daily"}})})
    report = world.sync()
    assert set(cronjobs(world)) == {"web-cleanup", "web-report"}
    assert cronjobs(world)["web-cleanup"]["spec"]["schedule"] == "@hourly"
    assert report.counts().get(PRUNED) is None


def test_the_wait_finds_a_schedules_cronjob_in_its_slot(world):
    """``sync --once --wait`` of an Application with a schedule (the README's first sync): its
    CronJob is found (``registry.slot``: ``CronJob/NAME``), not reported Missing."""
    import threading

    from agent.engine import readiness
    from tests.unit.engine.passes import rolled_out

    world.commit({"web.yaml": app_yaml("web", schedules={"nightly": {"schedule": "@daily"}})})
    report = world.sync()
    rolled_out(world, "web")
    result = readiness.wait(world.kube, report, 5, threading.Event(), poll=0.01)
    assert result.result == "healthy", (result, world.app("web")["status"]["health"])
