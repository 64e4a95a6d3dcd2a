"""The PodDisruptionBudget child (``spec.disruptionBudget``): render pinned exactly, health,
the status fields it adds and what of it is news; an Application without it renders no budget."""

import json

import pytest

from agent.api import labels as keys
from agent.kinds import disruptionbudget, install, registry
from agent.kinds.health import Health, Status

META = {"name": "shop", "namespace": "team",
        "labels": {keys.NAME_LABEL: "shop", keys.INSTANCE_LABEL: "shop", keys.MANAGED_BY: keys.AGENT_NAME,
                   keys.APPLICATION_LABEL: "shop"},
        "ownerReferences": [{"apiVersion": "heumsi.github.io/v1", "kind": "Application", "name": "shop", "uid": "u",
                             "controller": True, "blockOwnerDeletion": True}]}
SELECTOR = {"matchLabels": {keys.INSTANCE_LABEL: "shop", keys.APPLICATION_LABEL: "shop"}}


@pytest.mark.parametrize("budget, spec", [
    ({"maxUnavailable": 1}, {"maxUnavailable": 1}),
    ({"maxUnavailable": "25%"}, {"maxUnavailable": "25%"}),
    ({"minAvailable": 2}, {"minAvailable": 2}),
    ({"minAvailable": "50%"}, {"minAvailable": "50%"}),
])
def test_render_exactly(budget, spec):
    found = disruptionbudget.render("shop", "team", "u", {"image": "i", "replicas": 3, "disruptionBudget": budget})
    assert found == {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": META,
                     "spec": {**spec, "selector": SELECTOR, "unhealthyPodEvictionPolicy": "AlwaysAllow"}}
    # the budget selects the pods the Deployment selects, and in the registry it follows the autoscaler
    [deployment] = [c for c in registry.children("shop", "team", "u", {"image": "i", "disruptionBudget": budget})
                    if c["kind"] == "Deployment"]
    assert deployment["spec"]["selector"] == found["spec"]["selector"]
    assert json.dumps(found).index('"selector"') < json.dumps(found).index("unhealthyPodEvictionPolicy")


def test_without_a_budget_nothing_is_rendered():
    spec = {"image": "nginx:latest", "replicas": 1, "port": 80}
    assert disruptionbudget.render("a", "n", "u", spec) is None
    assert not disruptionbudget.wanted(spec) and disruptionbudget.KIND not in registry.wanted(spec)
    with_budget = {**spec, "disruptionBudget": {"maxUnavailable": 1}}
    assert registry.wanted(with_budget)[-1] is disruptionbudget.KIND
    # the other children do not change with it
    assert registry.children("a", "n", "u", with_budget)[:-1] == registry.children("a", "n", "u", spec)


def pdb(generation=1, observed=1, allowed=1, healthy=2, desired=1, **meta):
    status = {"disruptionsAllowed": allowed, "currentHealthy": healthy, "desiredHealthy": desired, "expectedPods": 2}
    if observed is not None:
        status["observedGeneration"] = observed
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "shop", "generation": generation, **meta}, "status": status}


@pytest.mark.parametrize("obj, expected", [
    (None, Health(Status.MISSING, "PodDisruptionBudget does not exist")),
    ({"metadata": {"name": "shop", "generation": 1}},
     Health(Status.PROGRESSING, "waiting for the disruption controller to observe the budget")),
    (pdb(observed=None), Health(Status.PROGRESSING, "waiting for the disruption controller to observe the budget")),
    (pdb(generation=2, observed=1),
     Health(Status.PROGRESSING, "waiting for the disruption controller to observe the budget")),
    (pdb(), Health(Status.HEALTHY, "allows 1 disruption (2 healthy pods, 1 needed)")),
    (pdb(generation=2, observed=3, allowed=2, healthy=1, desired=0),
     Health(Status.HEALTHY, "allows 2 disruptions (1 healthy pod, 0 needed)")),
    # it does what it was asked: too few healthy pods is the Deployment's health, explain warns
    (pdb(allowed=0, healthy=1, desired=1), Health(Status.HEALTHY, "allows 0 disruptions (1 healthy pod, 1 needed)")),
    (pdb(deletionTimestamp="2026-01-01T00:00:00Z"),
     Health(Status.PROGRESSING, "PodDisruptionBudget shop is pending deletion (since 2026-01-01T00:00:00Z); a pass "
                                "after it is gone creates it again")),
])
def test_health(obj, expected):
    assert disruptionbudget.health(obj) == expected
    assert registry.BY_KIND["PodDisruptionBudget"].health(obj) == expected


def test_status_fields_and_news():
    assert disruptionbudget.observed(None) == {} == disruptionbudget.observed({"status": {}})
    assert disruptionbudget.observed(pdb(allowed=0)) == {"disruptionsAllowed": 0}
    assert disruptionbudget.observed({"status": {"disruptionsAllowed": True}}) == {}
    spec = {"image": "i", "replicas": 2, "disruptionBudget": {"maxUnavailable": 1}}
    assert registry.observed("shop", spec, {"PodDisruptionBudget": pdb()})["disruptionsAllowed"] == 1
    assert "disruptionsAllowed" not in registry.observed("shop", {"image": "i"}, {})
    assert disruptionbudget.news(pdb()) == ({"status": Status.HEALTHY,
                                             "message": "allows 1 disruption (2 healthy pods, 1 needed)"},
                                            {"disruptionsAllowed": 1})
    assert list(install.status_fields([disruptionbudget.KIND])) == ["disruptionBudget", "disruptionsAllowed"]


def test_an_application_with_a_budget_waits_for_it():
    spec = {"image": "i", "replicas": 2, "disruptionBudget": {"maxUnavailable": 1}}
    dep = {"kind": "Deployment", "metadata": {"generation": 1}, "spec": {"replicas": 2},
           "status": {"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 2}}
    assert registry.health({"Deployment": dep}, spec=spec) == Health(
        Status.MISSING, "PodDisruptionBudget: PodDisruptionBudget does not exist")
    assert registry.health({"Deployment": dep, "PodDisruptionBudget": pdb(observed=None)}, spec=spec).status \
        == Status.PROGRESSING
    assert registry.health({"Deployment": dep, "PodDisruptionBudget": pdb()}, spec=spec) == Health(
        Status.HEALTHY, "all children healthy")
