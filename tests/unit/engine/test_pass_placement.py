"""The pass with ``spec.placement``, ``spec.terminationGracePeriodSeconds`` and ``spec.volumes``
against the in-memory cluster: rendered into the Deployment and a task's Job; drift on them
(a nodeSelector key added, a toleration added, a spread constraint added, a volume's size
changed) undone by the next pass; a nodeSelector or toleration set by hand on an Application
without placement stays; removing them removes what the agent rendered. The real-cluster suite
(tests/test_placement.py) schedules the pods on tainted, labelled nodes."""

from __future__ import annotations

import pytest

from agent.engine.report import CONFIGURED, UNCHANGED
from tests.unit.engine.passes import World, actions, app_yaml

PLACEMENT = {"nodeSelector": {"pool": "web"}, "tolerations": [{"key": "pool", "value": "web", "effect": "NoSchedule"}],
             "spreadAcross": ["node"], "priorityClassName": "high"}
VOLUMES = {"/tmp": {"emptyDir": {"sizeLimit": "64Mi"}}}
SELECTED = {"app.kubernetes.io/instance": "web", "heumsi.github.io/application": "web"}


@pytest.fixture
def world(tmp_path):
    return World(tmp_path)


def pod(world: World, name: str = "web") -> dict:
    return world.child("Deployment", name)["spec"]["template"]["spec"]


def placed(world: World) -> None:
    world.commit({"web.yaml": app_yaml("web", replicas=2, placement=PLACEMENT, terminationGracePeriodSeconds=5,
                                       volumes=VOLUMES)})
    world.sync()


def test_placement_and_volumes_are_rendered_and_the_next_pass_is_quiet(world):
    world.commit({"web.yaml": app_yaml("web", replicas=2, placement=PLACEMENT, terminationGracePeriodSeconds=5,
                                       volumes=VOLUMES, tasks={"migrate": {"args": ["migrate"]}})})
    world.sync()
    [task] = world.kube.of_kind("Job")
    task_pod = task["spec"]["template"]["spec"]
    assert task_pod["nodeSelector"] == {"pool": "web"} and task_pod["tolerations"] == PLACEMENT["tolerations"]
    assert task_pod["priorityClassName"] == "high" and task_pod["terminationGracePeriodSeconds"] == 5
    assert "topologySpreadConstraints" not in task_pod  # the spread counts the Application's served pods
    [volume] = task_pod["volumes"]
    assert task_pod["containers"][0]["volumeMounts"] == [{"name": volume["name"], "mountPath": "/tmp"}]
    task["status"] = {"startTime": "2026-12-06T11:59:00Z", "succeeded": 1, "completionTime": "2026-12-06T12:00:00Z",
                      "conditions": [{"type": "Complete", "status": "True", "reason": "Completed",
                                      "lastTransitionTime": "2026-12-06T12:00:00Z"}]}
    world.kube.put(task, manager="kube-controller-manager", subresource="status")
    world.sync()
    found = pod(world)
    assert found["nodeSelector"] == {"pool": "web"}
    assert found["tolerations"] == PLACEMENT["tolerations"]
    assert found["topologySpreadConstraints"] == [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                                   "whenUnsatisfiable": "ScheduleAnyway",
                                                   "labelSelector": {"matchLabels": SELECTED}}]
    assert found["priorityClassName"] == "high" and found["terminationGracePeriodSeconds"] == 5
    assert found["volumes"] == [{"name": volume["name"], "emptyDir": {"sizeLimit": "64Mi"}}]
    assert found["containers"][0]["volumeMounts"] == [{"name": volume["name"], "mountPath": "/tmp"}]
    assert all(action == UNCHANGED for _, action in actions(world.sync()))


@pytest.mark.parametrize("edit", [
    lambda spec: spec["nodeSelector"].update({"disk": "ssd"}),
    lambda spec: spec["nodeSelector"].update({"pool": "batch"}),
    lambda spec: spec["tolerations"].append({"key": "spot", "operator": "Exists"}),
    lambda spec: spec["topologySpreadConstraints"].append({"maxSkew": 2, "topologyKey": "topology.kubernetes.io/zone",
                                                           "whenUnsatisfiable": "DoNotSchedule"}),
    lambda spec: spec.update({"priorityClassName": "low"}),
    lambda spec: spec.update({"terminationGracePeriodSeconds": 300}),
    lambda spec: spec["volumes"][0]["emptyDir"].update({"sizeLimit": "1Gi"}),
], ids=["selector-key-added", "selector-value", "toleration-added", "spread-added", "priority-class",
        "grace", "size-limit"])
def test_drift_on_placement_and_volumes_is_undone_in_one_pass(world, edit):
    placed(world)
    before = pod(world)
    live = world.child("Deployment", "web")
    edit(live["spec"]["template"]["spec"])
    world.kube.put(live, manager="kubectl-edit")
    assert pod(world) != before
    assert ("Deployment/shop/web", CONFIGURED) in actions(world.sync())
    assert pod(world) == before
    assert ("Deployment/shop/web", UNCHANGED) in actions(world.sync())


def test_hand_set_placement_stays_on_an_application_without_it(world):
    world.commit({"web.yaml": app_yaml("web")})
    world.sync()
    live = world.child("Deployment", "web")
    live["spec"]["template"]["spec"].update({"nodeSelector": {"pool": "web"}, "priorityClassName": "high",
                                             "tolerations": [{"key": "pool", "operator": "Exists"}],
                                             "terminationGracePeriodSeconds": 90})
    world.kube.put(live, manager="kubectl-edit")
    assert ("Deployment/shop/web", UNCHANGED) in actions(world.sync())
    assert pod(world)["nodeSelector"] == {"pool": "web"}  # others' values, as before spec.placement
    assert pod(world)["terminationGracePeriodSeconds"] == 90


def test_removing_placement_and_volumes_removes_what_the_agent_rendered(world):
    placed(world)
    world.commit({"web.yaml": app_yaml("web", replicas=2)})
    assert ("Deployment/shop/web", CONFIGURED) in actions(world.sync())
    found = pod(world)
    for field in ("nodeSelector", "tolerations", "topologySpreadConstraints", "terminationGracePeriodSeconds",
                  "volumes"):
        assert field not in found, field
    assert "volumeMounts" not in found["containers"][0]
