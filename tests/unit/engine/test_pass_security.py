"""The pass with ``spec.security`` and ``--default-security-profile`` against the in-memory
cluster: the default fills in only a missing profile, for every pod the Application runs (its
task's Job too, whose digest the gate reads from the same spec); the default ``none`` changes
nothing; root under the restricted default is refused in words; drift on a field of it, and a
pod securityContext set by hand, are undone by the next pass. The real-cluster suite
(tests/test_security.py) runs it in a namespace that enforces the restricted standard."""

from __future__ import annotations

import pytest

from agent.engine.report import CONFIGURED, CREATED, FAILED, UNCHANGED
from tests.unit.engine.passes import World, actions, app_yaml

RESTRICTED_POD = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
RESTRICTED_CONTAINER = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


@pytest.fixture
def world(tmp_path):
    return World(tmp_path)


def pod(world: World, name: str) -> dict:
    return world.child("Deployment", name)["spec"]["template"]["spec"]


def test_the_default_none_renders_no_security_context(world):
    world.commit({"web.yaml": app_yaml("web")})
    world.sync()
    assert "securityContext" not in pod(world, "web")
    assert "securityContext" not in pod(world, "web")["containers"][0]
    assert actions(world.sync(default_security_profile="none")) == [
        ("Application/shop/web", UNCHANGED), ("Deployment/shop/web", UNCHANGED), ("Service/shop/web", UNCHANGED)]


def test_the_restricted_default_fills_in_a_missing_profile_only(world):
    world.commit({"web.yaml": app_yaml("web", tasks={"migrate": {"args": ["migrate"]}}),
                  "own.yaml": app_yaml("own", security={"profile": "none", "runAsUser": 1000})})
    world.sync(default_security_profile="restricted")
    [task] = world.kube.of_kind("Job")
    assert task["spec"]["template"]["spec"]["securityContext"] == RESTRICTED_POD
    assert task["spec"]["template"]["spec"]["containers"][0]["securityContext"] == RESTRICTED_CONTAINER
    assert pod(world, "own")["securityContext"] == {"runAsUser": 1000}  # its own profile wins
    assert "securityContext" not in pod(world, "own")["containers"][0]
    task["status"] = {"startTime": "2026-12-06T11:59:00Z", "succeeded": 1, "completionTime": "2026-12-06T12:00:00Z",
                      "conditions": [{"type": "Complete", "status": "True", "reason": "Completed",
                                      "lastTransitionTime": "2026-12-06T12:00:00Z"}]}
    world.kube.put(task, manager="kube-controller-manager", subresource="status")
    # the same Job (same digest) the next pass, done: the gate reads the spec the Job was rendered from
    world.sync(default_security_profile="restricted")
    assert [j["metadata"]["name"] for j in world.kube.of_kind("Job")] == [task["metadata"]["name"]]
    assert pod(world, "web")["securityContext"] == RESTRICTED_POD
    assert pod(world, "web")["containers"][0]["securityContext"] == RESTRICTED_CONTAINER


def test_root_under_the_restricted_default_is_refused_in_words(world):
    world.commit({"web.yaml": app_yaml("web", security={"runAsUser": 0})})
    report = world.sync(default_security_profile="restricted")
    assert ("Application/shop/web", FAILED) in actions(report)
    assert "spec.security.runAsUser: must not be 0 with profile restricted" in report.failures["shop/web"]
    assert world.child("Deployment", "web") is None
    world.sync()  # under the default none, root is the namespace's business
    assert pod(world, "web")["securityContext"] == {"runAsUser": 0}


def test_drift_on_the_security_context_is_undone_by_the_next_pass(world):
    world.commit({"web.yaml": app_yaml("web", security={"profile": "restricted", "runAsUser": 10001})})
    world.sync()
    live = world.child("Deployment", "web")
    live["spec"]["template"]["spec"]["containers"][0]["securityContext"]["allowPrivilegeEscalation"] = True
    live["spec"]["template"]["spec"]["securityContext"]["runAsGroup"] = 0  # a field the agent does not render
    world.kube.put(live, manager="kubectl-patch")
    assert ("Deployment/shop/web", CONFIGURED) in actions(world.sync())
    assert pod(world, "web")["securityContext"] == {"runAsUser": 10001, **RESTRICTED_POD}
    assert pod(world, "web")["containers"][0]["securityContext"] == RESTRICTED_CONTAINER


def test_a_hand_set_pod_security_context_stays_without_security(world):
    world.commit({"web.yaml": app_yaml("web")})
    world.sync()
    live = world.child("Deployment", "web")
    live["spec"]["template"]["spec"]["securityContext"] = {"runAsUser": 2000}
    world.kube.put(live, manager="kubectl-patch")
    assert ("Deployment/shop/web", UNCHANGED) in actions(world.sync())
    assert pod(world, "web")["securityContext"] == {"runAsUser": 2000}  # as before spec.security existed


def test_removing_security_removes_what_the_agent_rendered(world):
    world.commit({"web.yaml": app_yaml("web", security={"profile": "restricted"})})
    assert ("Deployment/shop/web", CREATED) in actions(world.sync())
    world.commit({"web.yaml": app_yaml("web")})
    assert ("Deployment/shop/web", CONFIGURED) in actions(world.sync())
    assert "securityContext" not in pod(world, "web")
    assert "securityContext" not in pod(world, "web")["containers"][0]
