"""The pass taking over a Deployment whose selector is not the agent's (issue 45), against the
in-memory cluster: the selector is kept (no delete, same uid), the pod template gains the
agent's labels, the Service and the PodDisruptionBudget select the kept labels, the report and
its message say so, and the next pass is quiet. The real-cluster suite (tests/test_takeover.py)
watches the Service's endpoints through the rolling update."""

from __future__ import annotations

import pytest

from agent.api.labels import ADOPT_ANNOTATION
from agent.engine.report import ADOPTED, CREATED, UNCHANGED
from agent.kinds.render import selector_labels
from tests.unit.engine.passes import NS, World, actions, app_yaml, rolled_out

OPERATOR = {"app": "web"}


@pytest.fixture
def world(tmp_path):
    world = World(tmp_path, adopt_namespaces=(NS,))
    world.kube.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    return world


def hand_made(world: World, selector: dict) -> tuple[dict, dict]:
    """A Deployment and a Service made with kubectl, selecting ``selector``."""
    made = world.kube.add({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": NS, "labels": selector},
        "spec": {"replicas": 2, "selector": {"matchLabels": selector},
                 "template": {"metadata": {"labels": selector},
                              "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                                                       "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}}}})
    service = world.kube.add({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": NS},
        "spec": {"selector": selector, "ports": [{"port": 80, "targetPort": 80, "protocol": "TCP"}]}})
    return made, service


def opted_in(**spec) -> str:
    return app_yaml("web", replicas=2, annotations={ADOPT_ANNOTATION: "true"}, **spec)


def test_a_taken_over_deployment_keeps_its_selector_and_the_service_selects_the_same(world):
    made, service = hand_made(world, OPERATOR)
    world.commit({"web.yaml": opted_in(disruptionBudget={"minAvailable": 1})})
    report = world.sync()
    found = dict(actions(report))
    assert found[f"Deployment/{NS}/web"] == ADOPTED and found[f"Service/{NS}/web"] == ADOPTED
    assert found[f"PodDisruptionBudget/{NS}/web"] == CREATED
    message = next(c.message for c in report.changes if c.subject == f"Deployment/{NS}/web")
    assert "kept its selector app=web (immutable)" in message
    assert not [w for w in world.kube.writes if w[0] == "delete"]  # not recreated
    live = world.child("Deployment", "web")
    assert live["metadata"]["uid"] == made["metadata"]["uid"]
    assert live["spec"]["selector"] == {"matchLabels": OPERATOR}
    assert live["spec"]["template"]["metadata"]["labels"].items() >= {**OPERATOR, **selector_labels("web")}.items()
    svc = world.child("Service", "web")
    assert svc["metadata"]["uid"] == service["metadata"]["uid"] and svc["spec"]["selector"] == OPERATOR
    assert world.child("PodDisruptionBudget", "web")["spec"]["selector"] == {"matchLabels": OPERATOR}


def test_the_pass_after_a_take_over_writes_nothing(world):
    hand_made(world, OPERATOR)
    world.commit({"web.yaml": opted_in()})
    world.sync()
    rolled_out(world, "web")
    world.sync()
    report = world.sync()
    assert {action for _, action in actions(report)} == {UNCHANGED}
    assert [w for w in world.kube.writes if not w[0].startswith("patch_status")] == []


def test_a_selector_with_expressions_is_recreated_as_before(world):
    made, _ = hand_made(world, OPERATOR)
    made["spec"]["selector"]["matchExpressions"] = [{"key": "app", "operator": "Exists"}]
    world.kube.objects[("apps", "Deployment", NS, "web")]["spec"]["selector"] = made["spec"]["selector"]
    world.commit({"web.yaml": opted_in()})
    report = world.sync()
    message = next(c.message for c in report.changes if c.subject == f"Deployment/{NS}/web")
    assert "spec.selector is immutable" in message and "recreated" in message
    assert world.child("Deployment", "web")["spec"]["selector"] == {"matchLabels": selector_labels("web")}
    assert world.child("Service", "web")["spec"]["selector"] == selector_labels("web")


def test_the_kept_selector_annotation_removed_by_hand_is_restored_not_recreated(world):
    made, _ = hand_made(world, OPERATOR)
    world.commit({"web.yaml": opted_in()})
    world.sync()
    live = world.child("Deployment", "web")
    del live["metadata"]["annotations"]["heumsi.github.io/kept-selector"]
    world.kube.put(live, manager="kubectl-annotate")
    world.sync()
    assert not [w for w in world.kube.writes if w[0] == "delete"]
    live = world.child("Deployment", "web")
    assert live["metadata"]["uid"] == made["metadata"]["uid"]
    assert live["metadata"]["annotations"]["heumsi.github.io/kept-selector"] == "app=web"
