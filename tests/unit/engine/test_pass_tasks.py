"""The pass with tasks (``spec.tasks``: a Job each, ``agent.engine.taskgate``) against the
in-memory cluster, the Job controller played by hand (``finish``): the gate on a first install
and on an upgrade, a failure that holds until a new commit or a sync-now request, exactly one
run per digest, the history kept per task, AfterRollout after the rollout. The real-cluster
suite (tests/test_tasks.py) runs them with the Job controller."""

from __future__ import annotations

import pytest

from agent.api.labels import RECONCILE_REQUESTED_AT, TASK_LABEL
from agent.engine.report import CREATED, HELD, PRUNED, UNCHANGED
from tests.unit.engine.passes import NS, World, actions, app_yaml, conditions, image, rolled_out

MIGRATE = {"migrate": {"command": ["./migrate"], "args": ["up"]}}


@pytest.fixture
def world(tmp_path):
    return World(tmp_path)


def jobs(world: World) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in world.kube.of_kind("Job")}


def finish(world: World, name: str, ok: bool = True) -> None:
    """The Job ``name`` as the Job controller leaves it: Complete, or Failed (backoff limit)."""
    live = world.child("Job", name)
    condition = {"type": "Complete", "status": "True", "reason": "Completed", "message": "Reached expected number",
                 "lastTransitionTime": "2026-12-06T12:00:00Z"} if ok else \
        {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
         "message": "Job has reached the specified backoff limit", "lastTransitionTime": "2026-12-06T12:00:00Z"}
    live["status"] = {"startTime": "2026-12-06T11:59:00Z", "conditions": [condition],
                      **({"succeeded": 1, "completionTime": "2026-12-06T12:00:00Z"} if ok else {"failed": 3})}
    world.kube.put(live, manager="kube-controller-manager", subresource="status")


def only_job(world: World) -> str:
    [name] = jobs(world)
    return name


def test_a_first_install_creates_only_the_job_then_the_rest_once_it_succeeded(world):
    world.commit({"web.yaml": app_yaml("web", tasks=MIGRATE, files={"/etc/web/a.conf": {"content": "a=1\n"}})})
    report = world.sync()
    assert report.ok, report.errors
    name = only_job(world)
    assert name.startswith("web-migrate-") and len(name) == len("web-migrate-") + 8
    assert (f"Job/{NS}/{name}", CREATED) in actions(report) and (f"ConfigMap/{NS}/web", CREATED) in actions(report)
    assert {(s, a) for s, a in actions(report) if a == HELD} == {(f"Deployment/{NS}/web", HELD),
                                                                 (f"Service/{NS}/web", HELD)}
    assert world.child("Deployment", "web") is None and world.child("Service", "web") is None
    app = world.app("web")
    why = f"waiting for task migrate (Job {name}) to complete before the rollout"
    assert conditions(app)["Ready"] == ("False", "TaskRunning", why)
    assert conditions(app)["Reconciling"] == ("True", "TaskRunning", why)
    assert not [e for e in world.kube.events if e["type"] == "Warning"]  # a task that runs is a state, not a fault
    assert app["status"]["health"] == {"status": "Progressing", "message": why}
    assert "lastSyncedCommit" not in app["status"]
    [entry] = app["status"]["tasks"]
    assert (entry["name"], entry["job"], entry["phase"]) == ("migrate", name, "Pending")

    assert {a for _, a in actions(world.sync())} <= {UNCHANGED, HELD}  # still running: nothing new
    finish(world, name)
    report = world.sync()
    assert (f"Deployment/{NS}/web", CREATED) in actions(report) and (f"Service/{NS}/web", CREATED) in actions(report)
    app = world.app("web")
    assert app["status"]["tasks"][0]["phase"] == "Succeeded" and conditions(app)["Synced"][1] == "Synced"
    assert list(jobs(world)) == [name]


def test_an_upgrade_waits_for_its_task_and_the_live_image_stays_old(world):
    world.commit({"web.yaml": app_yaml("web", tasks=MIGRATE)})
    world.sync()
    finish(world, only_job(world))
    world.sync()
    first = only_job(world)
    world.commit({"web.yaml": app_yaml("web", image="nginx:1.28", tasks=MIGRATE)})
    world.sync()
    second = set(jobs(world)) - {first}
    assert len(second) == 1  # the task runs the new image: a new digest, a new Job
    assert image(world.child("Deployment", "web")) == "nginx:1.27"
    finish(world, second.pop())
    world.sync()
    assert image(world.child("Deployment", "web")) == "nginx:1.28"


def test_a_failed_task_holds_until_a_sync_now_request_runs_it_again(world):
    world.commit({"web.yaml": app_yaml("web", tasks=MIGRATE)})
    world.sync()
    finish(world, only_job(world))
    world.sync()
    world.commit({"web.yaml": app_yaml("web", image="nginx:1.28", tasks=MIGRATE)})
    world.sync()
    name = next(n for n, j in jobs(world).items() if not j.get("status"))
    finish(world, name, ok=False)
    world.sync()
    app = world.app("web")
    assert conditions(app)["Stalled"][:2] == ("True", "TaskFailed")
    assert f"task migrate failed (Job {name} failed: BackoffLimitExceeded" in conditions(app)["Stalled"][2]
    assert app["status"]["health"]["status"] == "Degraded"
    assert image(world.child("Deployment", "web")) == "nginx:1.27"
    uid = world.child("Job", name)["metadata"]["uid"]
    world.sync()
    assert world.child("Job", name)["metadata"]["uid"] == uid  # no new run on a later pass
    live = world.app("web")
    live["metadata"].setdefault("annotations", {})[RECONCILE_REQUESTED_AT] = "now-1"
    world.kube.put(live, manager="gitops-agent-reconcile")
    report = world.sync()
    assert (f"Job/{NS}/{name}", PRUNED) in actions(report) and (f"Job/{NS}/{name}", CREATED) in actions(report)
    assert world.child("Job", name)["metadata"]["uid"] != uid and not world.child("Job", name).get("status")
    assert image(world.child("Deployment", "web")) == "nginx:1.27"


def test_a_failed_task_runs_again_on_a_new_commit(world):
    world.commit({"web.yaml": app_yaml("web", tasks=MIGRATE)})
    world.sync()
    name = only_job(world)
    finish(world, name, ok=False)
    world.sync()
    uid = world.child("Job", name)["metadata"]["uid"]
    world.commit({"other.yaml": app_yaml("other")})
    world.sync()
    assert world.child("Job", name)["metadata"]["uid"] != uid


def test_no_spurious_runs_drift_replicas_a_deleted_job(world):
    world.commit({"web.yaml": app_yaml("web", tasks=MIGRATE)})
    world.sync()
    name = only_job(world)
    finish(world, name)
    world.sync()
    world.commit({"web.yaml": app_yaml("web", replicas=3, tasks=MIGRATE)})
    world.sync()
    assert list(jobs(world)) == [name] and world.child("Deployment", "web")["spec"]["replicas"] == 3
    world.kube.delete(world.child("Job", name))
    report = world.sync()
    assert jobs(world) == {} and report.ok
    assert world.app("web")["status"]["tasks"][0]["phase"] == "Succeeded"
    assert conditions(world.app("web"))["Synced"][1] == "Synced"


def test_three_jobs_are_kept_per_task_and_none_once_the_task_is_removed(world):
    for i in range(5):
        world.commit({"web.yaml": app_yaml("web", image=f"nginx:1.{i}", tasks=MIGRATE)})
        world.sync()
        newest = next(n for n, j in jobs(world).items() if not j.get("status"))
        finish(world, newest)
        world.sync()
    assert len(jobs(world)) == 3
    assert all(j["metadata"]["labels"][TASK_LABEL] == "migrate" for j in jobs(world).values())
    world.commit({"web.yaml": app_yaml("web", image="nginx:1.4")})
    world.sync()
    assert jobs(world) == {} and "tasks" not in world.app("web")["status"]


def test_an_after_rollout_task_starts_once_the_deployment_is_healthy(world):
    world.commit({"web.yaml": app_yaml("web", tasks={"warm": {"command": ["warm"], "when": "AfterRollout"}})})
    world.sync()
    assert jobs(world) == {} and world.child("Deployment", "web") is not None
    assert world.app("web")["status"]["tasks"][0]["message"].endswith("waits for the rollout to finish")
    rolled_out(world, "web")
    world.sync()
    name = only_job(world)
    assert conditions(world.app("web"))["Ready"][1] == "TaskRunning"
    finish(world, name)
    world.sync()
    assert conditions(world.app("web"))["Ready"][0] == "True"


def test_a_suspended_application_runs_no_task_and_deletes_no_failed_job(world):
    world.commit({"web.yaml": app_yaml("web", tasks=MIGRATE)})
    world.sync()
    name = only_job(world)
    finish(world, name, ok=False)
    world.sync()
    uid = world.child("Job", name)["metadata"]["uid"]
    world.commit({"web.yaml": app_yaml("web", tasks=MIGRATE, suspend=True)})  # a new commit: would run it again
    world.sync()
    assert world.child("Job", name)["metadata"]["uid"] == uid
    assert world.app("web")["status"]["health"]["status"] == "Suspended"
    assert {a for _, a in actions(world.sync())} <= {"unchanged", "suspended"}  # suspended, not held by the task


def test_a_dry_run_says_which_job_would_be_created_and_what_is_held(tmp_path):
    world = World(tmp_path)
    world.commit({"web.yaml": app_yaml("web", tasks=MIGRATE)})
    world.sync()
    finish(world, only_job(world))
    world.sync()
    world.commit({"web.yaml": app_yaml("web", image="nginx:1.28", tasks=MIGRATE)})
    before = {o["metadata"]["name"] for o in world.kube.of_kind("Job")}
    world.kube.dry_run = True
    report = world.sync()
    world.kube.dry_run = False
    created = [s for s, a in actions(report) if a == CREATED]
    assert len(created) == 1 and created[0].startswith(f"Job/{NS}/web-migrate-")
    assert (f"Deployment/{NS}/web", HELD) in actions(report)
    assert {o["metadata"]["name"] for o in world.kube.of_kind("Job")} == before  # nothing kept
    assert image(world.child("Deployment", "web")) == "nginx:1.27"
