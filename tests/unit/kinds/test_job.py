"""job: a task of spec.tasks as a batch/v1 Job (render, name, digest), its health by gitops-engine's
rule (fixtures captured from the local control plane), its phase and its status.tasks[] entry."""

import copy
import hashlib
from pathlib import Path

import pytest
import yaml

from agent.api import labels as keys
from agent.kinds import configmap, job, podspec, registry, render
from agent.kinds.health import Health, Status

FIXTURES = Path(__file__).parent / "fixtures" / "health"
OWNER = {"apiVersion": "heumsi.github.io/v1", "kind": "Application", "name": "shop", "uid": "uid-1",
         "controller": True, "blockOwnerDeletion": True}
SPEC = {"image": "shop:1.4", "port": 8080, "replicas": 3, "tasks": {"migrate": {"args": ["migrate"]}}}
FULL = {
    "image": "shop:1.4", "port": 8080, "replicas": 2, "command": ["/srv/shop"], "args": ["serve"],
    "env": {"DB": {"secretKeyRef": {"name": "db", "key": "url"}}, "MODE": "web", "LEVEL": "info"},
    "envFrom": [{"configMapRef": {"name": "common"}}],
    "resources": {"requests": {"cpu": "1000m", "memory": "64Mi"}},
    "files": {"/etc/shop/app.yaml": {"content": "a: 1\n"}, "/etc/shop/key": {"secretRef": {"name": "k", "key": "pem"}}},
    "serviceAccountName": "shop", "imagePullSecrets": ["registry"],
    "podLabels": {"team": "payments"}, "podAnnotations": {"b": "2", "a": "1"},
    "readinessProbe": {"httpGet": {"path": "/ready"}},
    "tasks": {
        "migrate": {"command": ["/srv/shop"], "args": ["migrate"], "env": {"MODE": "migrate"},
                    "retries": 0, "timeoutSeconds": 120},
        "warm-cache": {"when": "AfterRollout", "image": "curl:8", "args": ["http://shop/warm"],
                       "resources": {"limits": {"cpu": "0.5"}}},
    },
}


def fixture(name: str) -> dict:
    return yaml.safe_load((FIXTURES / f"{name}.yaml").read_text())


def test_a_task_renders_one_job_in_the_applications_pod_settings():
    out = job.render_task("shop", "prod", "uid-1", FULL, "migrate")
    digest = job.task_digest("shop", FULL, "migrate")
    app, key = podspec.volume_name("/etc/shop/app.yaml"), podspec.volume_name("/etc/shop/key")
    assert out == {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": f"shop-migrate-{digest[:8]}", "namespace": "prod",
                     "labels": {keys.NAME_LABEL: "shop", keys.INSTANCE_LABEL: "shop", keys.MANAGED_BY: keys.AGENT_NAME,
                                keys.APPLICATION_LABEL: "shop", keys.TASK_LABEL: "migrate", keys.TASK_DIGEST: digest},
                     "ownerReferences": [OWNER]},
        "spec": {
            "backoffLimit": 0, "activeDeadlineSeconds": 120,
            "template": {
                "metadata": {"labels": {keys.NAME_LABEL: "shop", keys.MANAGED_BY: keys.AGENT_NAME, "team": "payments",
                                        keys.TASK_LABEL: "migrate"},
                             "annotations": {"a": "1", "b": "2", keys.FILES_DIGEST: configmap.digest(FULL)}},
                "spec": {
                    "containers": [{
                        "name": "migrate", "image": "shop:1.4", "command": ["/srv/shop"], "args": ["migrate"],
                        "env": [{"name": "DB", "valueFrom": {"secretKeyRef": {"name": "db", "key": "url"}}},
                                {"name": "LEVEL", "value": "info"}, {"name": "MODE", "value": "migrate"}],
                        "envFrom": [{"configMapRef": {"name": "common"}}],
                        "resources": {"requests": {"cpu": "1", "memory": "64Mi"}},
                        "volumeMounts": [
                            {"name": app, "mountPath": "/etc/shop/app.yaml", "subPath": "file",
                             "readOnly": True},
                            {"name": key, "mountPath": "/etc/shop/key", "subPath": "file",
                             "readOnly": True}]}],
                    "serviceAccountName": "shop", "imagePullSecrets": [{"name": "registry"}],
                    "volumes": [
                        {"name": app, "configMap": {"name": "shop", "items": [
                            {"key": configmap.key("/etc/shop/app.yaml"), "path": "file"}]}},
                        {"name": key, "secret": {"secretName": "k", "items": [
                            {"key": "pem", "path": "file"}]}}],
                    "restartPolicy": "Never"}}}}
    assert len(digest) == 16 and int(digest, 16) >= 0


def test_the_task_takes_its_own_image_command_args_and_resources_and_defaults():
    spec = job.task_spec(FULL, "warm-cache")
    assert spec == {"image": "curl:8", "args": ["http://shop/warm"],
                    "env": {"DB": {"secretKeyRef": {"name": "db", "key": "url"}}, "MODE": "web", "LEVEL": "info"},
                    "resources": {"limits": {"cpu": "0.5"}},
                    **{k: FULL[k] for k in job.POD_FIELDS if k in FULL}}  # never spec.command, never the probes or the port
    out = job.render_task("shop", "prod", "uid-1", FULL, "warm-cache")
    assert (out["spec"]["backoffLimit"], out["spec"]["activeDeadlineSeconds"]) == (2, 600)
    assert out["spec"]["template"]["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "500m"}}
    plain = job.render_task("shop", "prod", "uid-1", SPEC, "migrate")
    assert plain["spec"]["template"] == {
        "metadata": {"labels": {keys.NAME_LABEL: "shop", keys.MANAGED_BY: keys.AGENT_NAME, keys.TASK_LABEL: "migrate"}},
        "spec": {"containers": [{"name": "migrate", "image": "shop:1.4", "args": ["migrate"]}],
                 "restartPolicy": "Never"}}
    # no resources of its own: the Application's; explicitly empty: none
    inherited = job.task_spec({**FULL, "tasks": {"t": {"args": ["x"]}}}, "t")
    assert inherited["resources"] == FULL["resources"] and inherited["image"] == "shop:1.4"
    assert "resources" not in job.task_spec({**FULL, "tasks": {"t": {"args": ["x"], "resources": {}}}}, "t")
    assert "env" not in job.task_spec(SPEC, "migrate")
    with pytest.raises(KeyError):
        job.render_task("shop", "prod", "uid-1", SPEC, "nothing")


def test_a_task_pod_is_never_selected_by_the_service_or_the_deployment():
    spec = {**FULL, "podLabels": {**FULL["podLabels"], keys.INSTANCE_LABEL: "shop", keys.APPLICATION_LABEL: "shop"}}
    children = {c["kind"]: c for c in registry.children("shop", "prod", "uid-1", FULL)}
    for task in job.tasks(spec):
        labels = job.render_task("shop", "prod", "uid-1", spec, task)["spec"]["template"]["metadata"]["labels"]
        assert not children["Service"]["spec"]["selector"].items() <= labels.items()
        assert not children["Deployment"]["spec"]["selector"]["matchLabels"].items() <= labels.items()
        assert not labels.keys() & render.selector_labels("shop").keys()
        assert labels[keys.TASK_LABEL] == task and labels["team"] == "payments"
    assert job.pod_labels("shop", {"podLabels": {keys.TASK_LABEL: "other"}}, "migrate")[keys.TASK_LABEL] == "migrate"


def test_an_application_renders_its_children_exactly_as_without_tasks_and_a_job_per_task():
    without = {k: v for k, v in FULL.items() if k != "tasks"}
    children = registry.children("shop", "prod", "uid-1", FULL)
    assert [c for c in children if c["kind"] != "Job"] == registry.children("shop", "prod", "uid-1", without)
    assert [c for c in children if c["kind"] == "Job"] == [job.render_task("shop", "prod", "uid-1", FULL, name)
                                                          for name in job.tasks(FULL)]
    assert job.KIND.names("shop", FULL) == () and job.wanted(FULL) and not job.wanted(without)
    assert job.tasks(without) == () and job.tasks({"tasks": None}) == ()


def test_tasks_run_before_rollout_ones_first_each_by_name():
    spec = {"tasks": {"b": {"args": ["x"]}, "z": {"when": "AfterRollout"}, "a": {"when": "BeforeRollout"},
                      "c": {"when": "AfterRollout"}}}
    assert job.tasks(spec) == ("a", "b", "c", "z")
    assert job.tasks(spec, job.BEFORE_ROLLOUT) == ("a", "b")
    assert job.tasks(spec, job.AFTER_ROLLOUT) == ("c", "z")
    assert job.tasks({"tasks": {"x": {"when": "Sometimes"}}}) == ()  # validate refuses it


def changed(path: tuple, value) -> dict:
    spec = copy.deepcopy(FULL)
    target = spec
    for key in path[:-1]:
        target = target.setdefault(key, {})
    if value is None:
        target.pop(path[-1])
    else:
        target[path[-1]] = value
    return spec


SAME = [
    (("replicas",), 7), (("replicas",), None), (("port",), 9090), (("readinessProbe",), None),
    (("livenessProbe",), {"exec": {"command": ["true"]}}), (("rollout",), {"maxSurge": 1}),
    (("ingress",), {"host": "shop.example.com"}), (("autoscaling",), {"maxReplicas": 3}),
    (("command",), ["/other"]), (("args",), None), (("suspend",), True),
    (("tasks", "migrate", "when"), "AfterRollout"), (("tasks", "warm-cache"), None),
    (("tasks", "other"), {"args": ["x"]}),
    (("resources", "requests", "cpu"), "1"),  # the same quantity, written another way
    (("env",), {"LEVEL": "info", "MODE": "web", "DB": {"secretKeyRef": {"name": "db", "key": "url"}}}),
]
OTHER = [
    (("image",), "shop:1.5"), (("tasks", "migrate", "image"), "migrator:1"),
    (("tasks", "migrate", "command"), ["/bin/migrate"]), (("tasks", "migrate", "args"), ["migrate", "--all"]),
    (("tasks", "migrate", "env", "MODE"), "other"), (("env", "NEW"), "1"), (("env", "MODE"), "ignored-but-merged"),
    (("envFrom",), None), (("resources",), None), (("tasks", "migrate", "resources"), {"limits": {"memory": "1Gi"}}),
    (("files", "/etc/shop/app.yaml", "content"), "a: 2\n"), (("files", "/etc/shop/new"), {"content": ""}),
    (("serviceAccountName",), "other"), (("imagePullSecrets",), None), (("podLabels", "team"), "core"),
    (("podAnnotations", "a"), "9"), (("tasks", "migrate", "retries"), 1), (("tasks", "migrate", "timeoutSeconds"), 60),
]


@pytest.mark.parametrize("path, value", SAME)
def test_what_the_task_does_not_run_keeps_its_digest_and_its_job_name(path, value):
    before = job.render_task("shop", "prod", "uid-1", FULL, "migrate")
    after = job.render_task("shop", "prod", "uid-1", changed(path, value), "migrate")
    assert after["metadata"]["name"] == before["metadata"]["name"]
    assert job.task_digest("shop", changed(path, value), "migrate") == job.task_digest("shop", FULL, "migrate")


@pytest.mark.parametrize("path, value", OTHER)
def test_what_the_task_runs_changes_its_digest_and_its_job_name(path, value):
    spec = changed(path, value)
    if path == ("env", "MODE"):  # the task's own MODE wins over spec.env: the pod runs the same
        assert job.task_digest("shop", spec, "migrate") == job.task_digest("shop", FULL, "migrate")
        return
    assert job.task_digest("shop", spec, "migrate") != job.task_digest("shop", FULL, "migrate")
    assert job.render_task("shop", "prod", "uid-1", spec, "migrate")["metadata"]["name"] != \
        job.render_task("shop", "prod", "uid-1", FULL, "migrate")["metadata"]["name"]


def test_the_digest_is_pinned_a_new_one_would_run_every_task_again_on_upgrade():
    """The SHA-256 of the Job's spec as compact JSON with sorted keys; any change to how it is
    computed names every task's Job anew, and the next pass would run each once more."""
    text = ('{"activeDeadlineSeconds":600,"backoffLimit":2,"template":{"metadata":{"labels":{'
            '"app.kubernetes.io/managed-by":"gitops-agent","app.kubernetes.io/name":"shop","heumsi.github.io/task":'
            '"migrate"}},"spec":{"containers":[{"args":["migrate"],"image":"shop:1.4","name":"migrate"}],'
            '"restartPolicy":"Never"}}}')
    assert hashlib.sha256(text.encode()).hexdigest()[:16] == job.task_digest("shop", SPEC, "migrate") == \
        "cacc084c8bc5a0b3"
    assert job.render_task("shop", "prod", "uid-1", SPEC, "migrate")["metadata"]["name"] == "shop-migrate-cacc084c"


def test_the_digest_names_the_application_and_the_task():
    assert job.task_digest("shop", FULL, "migrate") != job.task_digest("shop2", FULL, "migrate")
    twin = {**SPEC, "tasks": {"a": {"args": ["migrate"]}, "b": {"args": ["migrate"]}}}
    assert job.task_digest("shop", twin, "a") != job.task_digest("shop", twin, "b")


def test_job_name_and_its_length():
    assert job.job_name("shop", "migrate", "0123456789abcdef") == "shop-migrate-01234567"
    assert job.name_overflow("shop", "migrate") == 0
    assert job.name_overflow("a" * 26, "b" * 27) == 0  # 26 + 1 + 27 + 1 + 8 = 63
    assert len(job.job_name("a" * 26, "b" * 27, "c" * 16)) == job.MAX_NAME == 63
    assert job.name_overflow("a" * 26, "b" * 28) == 1
    assert job.name_overflow("a" * 63, "b") == 11


@pytest.mark.parametrize("name, status, message, phase", [
    ("job-complete", Status.HEALTHY, "Reached expected number of succeeded pods", job.SUCCEEDED),
    ("job-running", Status.PROGRESSING, "waiting for Job migrate-running to complete", job.PENDING),
    ("job-resumed", Status.PROGRESSING, "waiting for Job migrate-resumed to complete", job.PENDING),
    ("job-suspended", Status.SUSPENDED, "Job migrate-suspended is suspended", job.PENDING),
    ("job-deadline-exceeded", Status.DEGRADED,
     "Job migrate-deadline failed: DeadlineExceeded: Job was active longer than specified deadline", job.FAILED),
    ("job-backoff-limit-exceeded", Status.DEGRADED,
     "Job migrate-backoff failed: BackoffLimitExceeded: Job has reached the specified backoff limit", job.FAILED),
])
def test_job_fixtures(name, status, message, phase):
    obj = fixture(name)
    assert (obj["apiVersion"], obj["kind"]) == ("batch/v1", "Job") and obj["metadata"]["uid"]
    assert job.health(obj) == Health(status, message)
    assert job.phase(obj) == phase


def status(*conditions, **counts):
    return {"metadata": {"name": "j"}, "status": {
        "conditions": [dict(zip(("type", "status", "reason", "message"), c)) for c in conditions], **counts}}


@pytest.mark.parametrize("obj, expected", [
    (None, Health(Status.MISSING, "Job does not exist")),
    ({}, Health(Status.PROGRESSING, "waiting for Job  to complete")),
    (status(), Health(Status.PROGRESSING, "waiting for Job j to complete")),
    (status(failed=1, active=1), Health(Status.PROGRESSING, "waiting for Job j to complete (1 failed pod so far)")),
    (status(failed=2), Health(Status.PROGRESSING, "waiting for Job j to complete (2 failed pods so far)")),
    # only a condition with status True counts (gitops-engine counts a resumed Job's Suspended False as finished)
    (status(("Complete", "False", "x", "y")), Health(Status.PROGRESSING, "waiting for Job j to complete")),
    (status(("Failed", "False", "x", "y")), Health(Status.PROGRESSING, "waiting for Job j to complete")),
    (status(("Suspended", "False", "JobResumed", "Job resumed")),
     Health(Status.PROGRESSING, "waiting for Job j to complete")),
    (status(("FailureTarget", "True", "BackoffLimitExceeded", "m")),
     Health(Status.PROGRESSING, "waiting for Job j to complete")),  # its pods still terminate
    (status(("Complete", "True", "CompletionsReached", "done")), Health(Status.HEALTHY, "done")),
    (status(("Complete", "True")), Health(Status.HEALTHY, "")),
    (status(("Failed", "True")), Health(Status.DEGRADED, "Job j failed")),
    (status(("Failed", "True", "DeadlineExceeded")), Health(Status.DEGRADED, "Job j failed: DeadlineExceeded")),
    (status(("Failed", "True", "R", "exit code X")), Health(Status.DEGRADED, "Job j failed: R: exit code X")),
    (status(("Suspended", "True", "JobSuspended", "Job suspended")), Health(Status.SUSPENDED, "Job j is suspended")),
    # failed first, then suspended, then complete (gitops-engine's order)
    (status(("Suspended", "True"), ("Failed", "True", "R", "m")), Health(Status.DEGRADED, "Job j failed: R: m")),
    (status(("Complete", "True", "x", "done"), ("Suspended", "True")), Health(Status.SUSPENDED, "Job j is suspended")),
    ({"metadata": {"name": "j", "deletionTimestamp": "t"}, "status": {"conditions": [{"type": "Complete",
                                                                                       "status": "True"}]}},
     Health(Status.PROGRESSING, "Job j is pending deletion (since t); a pass after it is gone creates it again")),
])
def test_job_health(obj, expected):
    assert job.health(obj) == expected


@pytest.mark.parametrize("obj, expected", [
    (None, job.PENDING),
    ({}, job.PENDING),
    (status(active=1, ready=0), job.PENDING),  # its pod waits for a node or its image
    (status(active=1), job.RUNNING),  # an API server that does not count ready pods
    (status(active=1, ready=1), job.RUNNING),
    (status(active=1, ready=0, failed=1), job.RUNNING),  # a retry
    (status(ready=0, succeeded=1), job.RUNNING),  # done, the Complete condition not yet written
    (status(("Suspended", "True"), active=1), job.PENDING),
    (status(("Suspended", "False"), active=1, ready=1), job.RUNNING),
    (status(("Complete", "True"), succeeded=1), job.SUCCEEDED),
    (status(("Failed", "True"), failed=3), job.FAILED),
    (status(("Failed", "False"), ready=0), job.PENDING),
])
def test_phase(obj, expected):
    assert job.phase(obj) == expected


def test_task_status_entries():
    commit = "c" * 40
    assert job.task_status("migrate", "d" * 16, "shop-migrate-dddddddd", None, commit) == {
        "name": "migrate", "digest": "d" * 16, "job": "shop-migrate-dddddddd", "phase": "Pending", "commit": commit,
        "message": "Job shop-migrate-dddddddd is not created yet"}
    assert job.task_status("migrate", "d" * 16, "migrate-complete", fixture("job-complete"), commit) == {
        "name": "migrate", "digest": "d" * 16, "job": "migrate-complete", "phase": "Succeeded", "commit": commit,
        "startTime": "2026-12-06T10:19:45Z", "completionTime": "2026-12-06T10:19:46Z"}
    assert job.task_status("migrate", "d" * 16, "migrate-deadline", fixture("job-deadline-exceeded"), commit) == {
        "name": "migrate", "digest": "d" * 16, "job": "migrate-deadline", "phase": "Failed", "commit": commit,
        "startTime": "2026-12-06T10:19:45Z", "completionTime": "2026-12-06T10:19:49Z",
        "message": "Job migrate-deadline failed: DeadlineExceeded: Job was active longer than specified deadline"}
    assert job.task_status("migrate", "d" * 16, "migrate-running", fixture("job-running"), commit) == {
        "name": "migrate", "digest": "d" * 16, "job": "migrate-running", "phase": "Pending", "commit": commit,
        "startTime": "2026-12-06T10:19:45Z", "message": "waiting for Job migrate-running to complete"}
    # a Failed condition without a time, a completion time without Complete: neither is a completion time
    assert "completionTime" not in job.task_status("t", "d", "j", status(("Failed", "True")), commit)
    assert "completionTime" not in job.task_status("t", "d", "j", {"status": {"completionTime": "x"}}, commit)
    for name in ("job-complete", "job-deadline-exceeded", "job-running", "job-suspended"):
        entry = job.task_status("t", "d", "j", fixture(name), commit)
        assert entry["phase"] in ("Pending", "Running", "Succeeded", "Failed")
