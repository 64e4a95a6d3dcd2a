"""Schedules (``spec.schedules``: a CronJob each) against the real control plane, whose
kube-controller-manager runs the CronJob and Job controllers and whose fake node (kwok)
completes a Job's pod, or fails it when the pod is labelled ``FAIL_LABEL: job-fail``
(tests/cluster/stages.yaml): a CronJob made, updated in place, pruned; one scheduled run
completing under ``* * * * *``; a failing one told in status but the Application not Degraded;
suspend."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.cluster import FAIL_LABEL
from tests.support import wait_for

pytestmark = pytest.mark.usefixtures("crd")

RUN_WAIT = 180.0
"""Seconds a ``* * * * *`` run may take to be scheduled (at the next minute), run and be seen."""


def app(name: str, replicas: int = 1, **spec) -> str:
    return yaml.safe_dump({"apiVersion": "heumsi.github.io/v1", "kind": "Application", "metadata": {"name": name},
                           "spec": {"image": "busybox:1.36", "replicas": replicas, "port": 80, **spec}},
                          sort_keys=False)


def sync(agent, repo, namespace, code=0):
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == code, proc.stdout + proc.stderr
    return proc


def get(cluster, namespace, what: str) -> dict | None:
    proc = cluster.kubectl("-n", namespace, "get", what, "-o", "json", check=False, timeout=60)
    if proc.returncode != 0:
        assert "NotFound" in proc.stderr, proc.stderr
        return None
    return json.loads(proc.stdout)


def cronjobs(cluster, namespace) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in get(cluster, namespace, "cronjobs")["items"]}


def test_a_cronjob_is_made_updated_in_place_and_pruned(agent, repo, namespace, objects, cluster):
    schedules = {"report": {"schedule": "0 3 * * *", "timeZone": "Europe/Berlin", "command": ["report"]},
                 "cleanup": {"schedule": "@hourly"}}
    repo.write("web.yaml", app("web", schedules=schedules))
    repo.write("db.yaml", app("db", replicas=0))  # so that removing web leaves Applications in Git
    repo.commit()
    sync(agent, repo, namespace)
    made = cronjobs(cluster, namespace)
    assert set(made) == {"web-report", "web-cleanup"}
    report = made["web-report"]
    assert report["metadata"]["ownerReferences"][0]["name"] == "web"
    assert (report["spec"]["schedule"], report["spec"]["timeZone"]) == ("0 3 * * *", "Europe/Berlin")
    pod_labels = report["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]
    selector = objects.service(namespace, "web")["spec"]["selector"]
    assert not set(selector.items()) <= set(pod_labels.items())  # the Service never selects a run's pod
    assert sync(agent, repo, namespace).stdout.count("unchanged") >= 1
    assert "CronJob" not in "".join(line for line in sync(agent, repo, namespace).stdout.splitlines()
                                    if "configured" in line or "created" in line)

    repo.write("web.yaml", app("web", schedules={**schedules, "report": {"schedule": "0 4 * * *"}}))
    repo.commit()
    out = sync(agent, repo, namespace).stdout
    assert f"CronJob/{namespace}/web-report" in out
    updated = cronjobs(cluster, namespace)["web-report"]
    assert updated["metadata"]["uid"] == report["metadata"]["uid"]  # in place
    assert updated["spec"]["schedule"] == "0 4 * * *" and "timeZone" not in updated["spec"]

    repo.write("web.yaml", app("web", schedules={"cleanup": schedules["cleanup"]}))
    repo.commit()
    sync(agent, repo, namespace)
    wait_for(lambda: set(cronjobs(cluster, namespace)) == {"web-cleanup"}, what="web-report to be pruned")

    repo.remove("web.yaml")
    repo.commit()
    sync(agent, repo, namespace)
    wait_for(lambda: cronjobs(cluster, namespace) == {}, what="the Application's CronJobs to go with it")


def test_a_scheduled_run_completes_and_a_failing_one_is_told_but_not_degraded(agent, repo, namespace, objects,
                                                                               cluster):
    every_minute = {"schedule": "* * * * *", "command": ["true"], "retries": 0, "timeoutSeconds": 120}
    repo.write("ok.yaml", app("ok", replicas=0, schedules={"tick": every_minute}))
    # replicas 0: no Deployment pod carries the failing label, only the runs' pods
    repo.write("bad.yaml", app("bad", replicas=0, podLabels={FAIL_LABEL: "job-fail"}, schedules={"tick": every_minute}))
    repo.commit()
    sync(agent, repo, namespace)
    wait_for(lambda: (cronjobs(cluster, namespace)["ok-tick"].get("status") or {}).get("lastSuccessfulTime"),
             timeout=RUN_WAIT, interval=2, what="a run of ok-tick to succeed")

    def failed_job():
        for job in get(cluster, namespace, "jobs")["items"]:
            if job["metadata"]["name"].startswith("bad-tick-") and any(
                    c["type"] == "Failed" and c["status"] == "True" for c in job["status"].get("conditions") or []):
                return job["metadata"]["name"]
        return None
    failed = wait_for(failed_job, timeout=RUN_WAIT, interval=2, what="a run of bad-tick to fail")
    sync(agent, repo, namespace)

    ok = objects.app(namespace, "ok")["status"]
    [tick] = ok["schedules"]
    assert (tick["name"], tick["cronJob"]) == ("tick", "ok-tick")
    assert tick["lastSuccessfulTime"] and tick["lastScheduleTime"] and "lastFailure" not in tick

    bad = objects.app(namespace, "bad")
    [tick] = bad["status"]["schedules"]
    assert tick["lastFailure"]["job"] == failed and tick["lastFailure"]["time"]
    assert tick["lastFailure"]["reason"] == "BackoffLimitExceeded"
    assert bad["status"]["health"]["status"] == "Healthy", bad["status"]["health"]
    ready = next(c for c in bad["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True"
    assert not [c for c in bad["status"]["conditions"] if c["type"] == "Stalled"]
    told = [e for e in objects.events(namespace) if e["reason"] == "ScheduleFailed"
            and e["involvedObject"]["name"] == "bad"]
    assert told and told[0]["type"] == "Warning" and f"schedule tick: Job {failed} failed" in told[0]["message"]


def test_suspend_a_schedule_or_the_whole_application(agent, repo, namespace, objects, cluster):
    repo.write("web.yaml", app("web", replicas=0, schedules={"report": {"schedule": "@daily", "suspend": True}}))
    repo.commit()
    sync(agent, repo, namespace)
    assert cronjobs(cluster, namespace)["web-report"]["spec"]["suspend"] is True
    assert objects.app(namespace, "web")["status"]["schedules"][0]["suspended"] is True
    wait_for(lambda: (objects.deployment(namespace, "web")["status"].get("observedGeneration") or 0) >= 1,
             what="the Deployment to be observed")
    sync(agent, repo, namespace)
    status = objects.app(namespace, "web")["status"]
    assert status["health"]["status"] == "Suspended", status["health"]
    assert status["health"]["message"].startswith("CronJob/web-report: ")

    repo.write("web.yaml", app("web", replicas=0, suspend=True, schedules={"report": {"schedule": "@hourly"}}))
    repo.commit()
    sync(agent, repo, namespace)
    live = cronjobs(cluster, namespace)["web-report"]
    assert (live["spec"]["schedule"], live["spec"]["suspend"]) == ("@daily", True)  # left as it was

    repo.write("web.yaml", app("web", replicas=0, schedules={"report": {"schedule": "@hourly"}}))
    repo.commit()
    sync(agent, repo, namespace)
    live = cronjobs(cluster, namespace)["web-report"]
    assert (live["spec"]["schedule"], live["spec"]["suspend"]) == ("@hourly", False)
    status = objects.app(namespace, "web")["status"]
    assert "suspended" not in status["schedules"][0]
