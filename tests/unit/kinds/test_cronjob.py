"""agent.kinds.cronjob: a CronJob per schedule, its health and the status of the schedules; the
registry's slots for a kind with several objects per Application."""

from __future__ import annotations

from agent.api.labels import SCHEDULE_LABEL
from agent.kinds import cronjob, deployment, health, registry
from agent.kinds.health import Health, Status
from agent.kinds.render import selector_labels

SPEC = {"image": "shop:1", "port": 8080, "command": ["serve"], "env": {"A": "1", "B": "2"},
        "readinessProbe": {"httpGet": {"path": "/"}}, "serviceAccountName": "shop", "imagePullSecrets": ["reg"],
        "podLabels": {"team": "a"}, "podAnnotations": {"x.io/y": "z"},
        "files": {"/etc/shop/config.yaml": {"content": "a: 1\n"}},
        "schedules": {"report": {"schedule": "0 3 * * *", "timeZone": "Europe/Berlin", "command": ["report"],
                                 "args": ["--all"], "env": {"B": "two", "C": "3"}, "retries": 0,
                                 "timeoutSeconds": 60, "keep": {"succeeded": 1, "failed": 5},
                                 "concurrencyPolicy": "Replace", "startingDeadlineSeconds": 30},
                      "cleanup": {"schedule": "@hourly", "image": "tools:2", "suspend": True,
                                  "resources": {"limits": {"memory": "1Gi"}}}}}


def by_name(objs):
    return {o["metadata"]["name"]: o for o in objs}


def test_one_cronjob_per_schedule_named_app_dash_schedule_in_name_order():
    found = cronjob.render("shop", "team", "u", SPEC)
    assert [o["metadata"]["name"] for o in found] == ["shop-cleanup", "shop-report"]
    assert cronjob.names("shop", SPEC) == ("shop-cleanup", "shop-report")
    assert registry.children("shop", "team", "u", SPEC)[-2:] == found
    assert cronjob.render("shop", "team", "u", {"image": "i", "port": 1}) == []


def test_a_cronjob_runs_the_schedules_command_with_the_applications_pod_settings():
    report = by_name(cronjob.render("shop", "team", "u", SPEC))["shop-report"]
    assert report["apiVersion"] == "batch/v1" and report["kind"] == "CronJob"
    meta = report["metadata"]
    assert meta["labels"][SCHEDULE_LABEL] == "report" and meta["labels"]["heumsi.github.io/application"] == "shop"
    assert meta["ownerReferences"][0]["name"] == "shop" and meta["ownerReferences"][0]["controller"] is True
    spec = report["spec"]
    assert {k: v for k, v in spec.items() if k != "jobTemplate"} == {
        "schedule": "0 3 * * *", "timeZone": "Europe/Berlin", "concurrencyPolicy": "Replace",
        "startingDeadlineSeconds": 30, "suspend": False, "successfulJobsHistoryLimit": 1,
        "failedJobsHistoryLimit": 5}
    job = spec["jobTemplate"]
    assert job["metadata"]["labels"] == {"app.kubernetes.io/name": "shop", "heumsi.github.io/application": "shop",
                                         SCHEDULE_LABEL: "report"}
    assert (job["spec"]["backoffLimit"], job["spec"]["activeDeadlineSeconds"]) == (0, 60)
    pod = job["spec"]["template"]
    assert pod["metadata"]["labels"] == {"app.kubernetes.io/name": "shop", "app.kubernetes.io/managed-by": "gitops-agent",
                                         "team": "a", SCHEDULE_LABEL: "report"}
    assert not set(selector_labels("shop")) & set(pod["metadata"]["labels"])  # never the Service's pods
    web = deployment.render("shop", "team", "u", SPEC)["spec"]["template"]
    assert pod["metadata"]["annotations"] == web["metadata"]["annotations"]  # podAnnotations and the files' digest
    assert pod["spec"]["restartPolicy"] == "Never"
    assert {k: pod["spec"][k] for k in ("serviceAccountName", "imagePullSecrets", "volumes")} == \
        {k: web["spec"][k] for k in ("serviceAccountName", "imagePullSecrets", "volumes")}
    [container] = pod["spec"]["containers"]
    assert container == {"name": "report", "image": "shop:1", "command": ["report"], "args": ["--all"],
                         "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "two"},
                                 {"name": "C", "value": "3"}],
                         "volumeMounts": web["spec"]["containers"][0]["volumeMounts"]}


def test_the_defaults_and_a_schedules_own_image_and_resources():
    cleanup = by_name(cronjob.render("shop", "team", "u", SPEC))["shop-cleanup"]["spec"]
    assert (cleanup["concurrencyPolicy"], cleanup["startingDeadlineSeconds"], cleanup["suspend"]) == ("Forbid", 300, True)
    assert (cleanup["successfulJobsHistoryLimit"], cleanup["failedJobsHistoryLimit"]) == (3, 1)
    assert "timeZone" not in cleanup
    assert (cleanup["jobTemplate"]["spec"]["backoffLimit"], cleanup["jobTemplate"]["spec"]["activeDeadlineSeconds"]) \
        == (2, 600)
    [container] = cleanup["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "tools:2" and container["resources"] == {"limits": {"memory": "1Gi"}}
    assert container["command"] == ["serve"]  # the Application's, where the schedule sets none
    assert "ports" not in container and "readinessProbe" not in container


def test_an_application_without_schedules_renders_what_it_rendered_before():
    plain = {"image": "nginx", "port": 80, "replicas": 1}
    assert [o["kind"] for o in registry.children("a", "n", "u", plain)] == ["Deployment", "Service"]


def test_health_is_suspended_when_suspended_else_healthy_whatever_its_runs():
    assert cronjob.health(None) == Health(Status.MISSING, "CronJob does not exist")
    assert cronjob.health({"metadata": {"name": "a-b"}, "spec": {"suspend": True}}).status == Status.SUSPENDED
    assert cronjob.health({"metadata": {"name": "a-b"}, "spec": {}, "status": {"active": [{}]}}) == Health(Status.HEALTHY)
    deleting = {"metadata": {"name": "a-b", "deletionTimestamp": "t"}, "spec": {}}
    assert cronjob.health(deleting).status == Status.PROGRESSING
    applied = cronjob.render("a", "n", "u", {"image": "i", "schedules": {"b": {"schedule": "@daily", "suspend": True}}})[0]
    assert cronjob.health(health.view(applied)) == cronjob.health(applied)  # what a pass keeps of an applied one


def test_the_registry_keeps_each_cronjob_in_its_own_slot():
    spec = {"image": "i", "port": 1, "schedules": {"a": {"schedule": "@daily"}, "b": {"schedule": "@daily"}}}
    live = {"Deployment": None, "CronJob/web-a": {"metadata": {"name": "web-a"}, "spec": {"suspend": True}}}
    assert registry.slot({"kind": "CronJob", "metadata": {"name": "web-a"}}) == "CronJob/web-a"
    assert registry.slot({"kind": "Deployment", "metadata": {"name": "web"}}) == "Deployment"
    found = registry.healths(live, spec, "web")
    assert (found["CronJob/web-a"].status, found["CronJob/web-b"].status) == (Status.SUSPENDED, Status.MISSING)
    assert registry.health(live, spec=spec, name="web").status == Status.MISSING


def job(name, owner, failed_at=None, reason="BackoffLimitExceeded"):
    status = {"conditions": [{"type": "Failed", "status": "True", "lastTransitionTime": failed_at, "reason": reason,
                              "message": "Job has reached the specified backoff limit"}]} if failed_at else \
        {"conditions": [{"type": "Complete", "status": "True"}]}
    return {"metadata": {"name": name, "ownerReferences": [{"kind": "CronJob", "name": owner, "controller": True}]},
            "status": status}


def test_the_status_of_the_schedules_from_the_cronjobs_and_their_jobs():
    spec = {"schedules": {"report": {"schedule": "@daily"}, "cleanup": {"schedule": "@daily", "suspend": True}}}
    children = {
        "CronJob/shop-report": {"metadata": {"name": "shop-report"}, "spec": {}, "status": {
            "lastScheduleTime": "2026-12-06T03:00:00Z", "lastSuccessfulTime": "2026-12-05T03:00:09Z",
            "active": [{"name": "shop-report-1"}]}},
        "CronJob/shop-cleanup": {"metadata": {"name": "shop-cleanup"}, "spec": {"suspend": True}},
        "Job/shop-report-1": job("shop-report-1", "shop-report", "2026-12-04T03:00:30Z"),
        "Job/shop-report-2": job("shop-report-2", "shop-report", "2026-12-06T03:01:00Z"),
        "Job/shop-report-3": job("shop-report-3", "shop-report"),
        "Job/other-1": job("other-1", "other", "2026-12-06T03:01:00Z"),
    }
    assert registry.observed("shop", spec, children)["schedules"] == [
        {"name": "cleanup", "cronJob": "shop-cleanup", "suspended": True, "active": 0},
        {"name": "report", "cronJob": "shop-report", "lastScheduleTime": "2026-12-06T03:00:00Z",
         "lastSuccessfulTime": "2026-12-05T03:00:09Z", "active": 1,
         "lastFailure": {"job": "shop-report-2", "time": "2026-12-06T03:01:00Z", "reason": "BackoffLimitExceeded",
                         "message": "Job has reached the specified backoff limit"}}]
    assert "schedules" not in registry.observed("shop", {}, {})
    assert registry.observed("shop", spec, {})["schedules"][1] == {"name": "report", "cronJob": "shop-report",
                                                                  "active": 0}


def test_a_failed_job_without_a_time_is_told_without_one():
    untimed = job("a-b-1", "a-b", "2026-12-06T03:01:00Z")
    del untimed["status"]["conditions"][0]["lastTransitionTime"]
    assert cronjob.last_failure([untimed]) == {"job": "a-b-1", "reason": "BackoffLimitExceeded",
                                                "message": "Job has reached the specified backoff limit"}
    assert cronjob.last_failure([job("a-b-2", "a-b")]) is None


def test_a_worker_may_have_schedules_too():
    """A worker (no spec.port, issue 43) renders its Deployment and its CronJobs, no Service."""
    worker = {"image": "queue:3", "replicas": 1, "command": ["worker"],
              "schedules": {"purge": {"schedule": "@daily", "command": ["purge"]}}}
    assert [(o["kind"], o["metadata"]["name"]) for o in registry.children("jobs", "n", "u", worker)] == [
        ("Deployment", "jobs"), ("CronJob", "jobs-purge")]
