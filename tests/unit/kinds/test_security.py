"""spec.security rendered into every pod template the agent makes (the Deployment, each schedule's
CronJob, each task's Job), exactly; none of it without the field; the agent's default profile
applied to a spec that names none; the pod securityContext owned in full only while rendered."""

import copy
import json

import pytest

from agent.kinds import cronjob, deployment, fields, job, podspec, registry

BASE = {"image": "shop:1", "port": 8080, "replicas": 2,
        "schedules": {"report": {"schedule": "0 3 * * *", "args": ["report"]}},
        "tasks": {"migrate": {"args": ["migrate"]}}}
RESTRICTED_POD = {"runAsUser": 10001, "runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
RESTRICTED_CONTAINER = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def pods(spec: dict) -> dict[str, dict]:
    """Kind -> the pod template spec of each pod-running child of ``spec``."""
    out = {}
    for child in registry.children("shop", "prod", "u", spec):
        if child["kind"] == "Deployment" or child["kind"] == "Job":
            out[child["kind"]] = child["spec"]["template"]["spec"]
        elif child["kind"] == "CronJob":
            out[child["kind"]] = child["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return out


def test_restricted_renders_what_the_standard_requires_on_every_pod_and_container():
    found = pods({**BASE, "security": {"profile": "restricted", "runAsUser": 10001}})
    assert sorted(found) == ["CronJob", "Deployment", "Job"]
    for kind, pod in found.items():
        assert pod["securityContext"] == RESTRICTED_POD, kind
        assert [c["securityContext"] for c in pod["containers"]] == [RESTRICTED_CONTAINER], kind


def test_every_field_rendered_exactly():
    security = {"profile": "restricted", "runAsUser": 10001, "runAsGroup": 10002, "fsGroup": 10003,
                "readOnlyRootFilesystem": True, "addCapabilities": ["NET_BIND_SERVICE"]}
    out = deployment.render("shop", "prod", "u", {**BASE, "security": security})
    pod = out["spec"]["template"]["spec"]
    assert json.dumps(pod["securityContext"]) == (
        '{"runAsUser": 10001, "runAsGroup": 10002, "fsGroup": 10003, "runAsNonRoot": true, '
        '"seccompProfile": {"type": "RuntimeDefault"}}')
    assert json.dumps(pod["containers"][0]["securityContext"]) == (
        '{"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}, '
        '"readOnlyRootFilesystem": true}')
    assert list(pod) == ["containers", "securityContext"]
    assert list(pod["containers"][0])[-1] == "securityContext"


@pytest.mark.parametrize("security, pod, container", [
    ({"profile": "none"}, None, None),
    ({}, None, None),
    ({"profile": "none", "runAsUser": 1000}, {"runAsUser": 1000}, None),
    ({"runAsGroup": 0, "fsGroup": 2000}, {"runAsGroup": 0, "fsGroup": 2000}, None),
    ({"readOnlyRootFilesystem": False}, None, {"readOnlyRootFilesystem": False}),
    ({"profile": "none", "addCapabilities": ["NET_BIND_SERVICE"]}, None, {"capabilities": {"add": ["NET_BIND_SERVICE"]}}),
])
def test_none_renders_only_the_fields_given(security, pod, container):
    for kind, found in pods({**BASE, "security": security}).items():
        assert found.get("securityContext") == pod, kind
        assert found["containers"][0].get("securityContext") == container, kind


def test_without_security_every_child_renders_as_before():
    before = registry.children("shop", "prod", "u", BASE)
    assert "securityContext" not in json.dumps(before)
    assert registry.children("shop", "prod", "u", podspec.with_default_profile(BASE, "none")) == before
    assert registry.children("shop", "prod", "u", {**BASE, "security": {"profile": "none"}}) == before


def test_the_default_profile_fills_in_only_a_missing_profile():
    spec = copy.deepcopy({**BASE, "security": {"runAsUser": 10001}})
    kept = copy.deepcopy(spec)
    assert podspec.with_default_profile(spec, "none") is spec
    assert podspec.with_default_profile(spec, "restricted") == {**kept, "security": {"runAsUser": 10001,
                                                                                      "profile": "restricted"}}
    assert spec == kept  # not changed
    assert podspec.with_default_profile(BASE, "restricted")["security"] == {"profile": "restricted"}
    chosen = {**BASE, "security": {"profile": "none"}}
    assert podspec.with_default_profile(chosen, "restricted") is chosen
    assert podspec.with_default_profile("not a mapping", "restricted") == "not a mapping"  # type: ignore[arg-type]
    assert podspec.with_default_profile({**BASE, "security": 3}, "restricted")["security"] == 3
    found = pods(podspec.with_default_profile(BASE, "restricted"))
    assert all(pod["securityContext"] == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
               for pod in found.values())


def test_a_tasks_digest_changes_with_security_and_only_then():
    plain = job.task_digest("shop", BASE, "migrate")
    assert job.task_digest("shop", {**BASE, "replicas": 5}, "migrate") == plain
    assert job.task_digest("shop", {**BASE, "security": {"profile": "restricted"}}, "migrate") != plain
    assert job.task_spec({**BASE, "security": {"fsGroup": 1}}, "migrate")["security"] == {"fsGroup": 1}


def test_a_schedule_runs_in_the_applications_security():
    out = cronjob.render("shop", "prod", "u", {**BASE, "security": {"profile": "restricted", "fsGroup": 7}})
    pod = out[0]["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["securityContext"]["fsGroup"] == 7
    assert pod["restartPolicy"] == "Never"


POD_CONTEXT = ("f:spec", "f:template", "f:spec", "f:securityContext")
CRON_CONTEXT = ("f:spec", "f:jobTemplate", "f:spec", "f:template", "f:spec", "f:securityContext")


def test_the_pod_security_context_is_owned_in_full_only_while_rendered():
    bare = deployment.render("shop", "prod", "u", BASE)
    secured = deployment.render("shop", "prod", "u", {**BASE, "security": {"profile": "restricted"}})
    assert POD_CONTEXT not in fields.domains("Deployment", bare)  # a hand-set one stays, as before the field
    assert POD_CONTEXT in fields.domains("Deployment", secured)
    assert ("f:spec", "f:template", "f:spec", "f:containers") in fields.domains("Deployment", bare)
    cron_bare = cronjob.render("shop", "prod", "u", BASE)[0]
    cron_secured = cronjob.render("shop", "prod", "u", {**BASE, "security": {"runAsUser": 5}})[0]
    assert CRON_CONTEXT not in fields.domains("CronJob", cron_bare)
    assert CRON_CONTEXT in fields.domains("CronJob", cron_secured)


def test_a_hand_set_pod_security_context_is_drift_only_under_security():
    patched = {"f:spec": {"f:template": {"f:spec": {"f:securityContext": {"f:runAsUser": {}}}}}}
    live = {**deployment.render("shop", "prod", "u", BASE), "metadata": {"name": "shop", "managedFields": [
        {"manager": "kubectl-patch", "operation": "Update", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
         "fieldsV1": patched}]}}
    assert fields.foreign(live, deployment.render("shop", "prod", "u", BASE)) == {}
    secured = deployment.render("shop", "prod", "u", {**BASE, "security": {"profile": "restricted"}})
    assert fields.foreign(live, secured) == patched


def test_dropping_security_removes_what_the_agent_set():
    secured = deployment.render("shop", "prod", "u", {**BASE, "security": {"profile": "restricted"}})
    ours = {"f:spec": {"f:template": {"f:spec": {"f:securityContext": {"f:runAsNonRoot": {}}}}}}
    live = {**secured, "metadata": {"name": "shop", "managedFields": [
        {"manager": "gitops-agent", "operation": "Apply", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
         "fieldsV1": ours}]}}
    assert not fields.dropped(live, secured)
    assert fields.dropped(live, deployment.render("shop", "prod", "u", BASE))  # applied: the apply removes it
    assert fields.release(live, deployment.render("shop", "prod", "u", BASE)) is None  # not handed back
