"""Fail fast with the reason (issue 45 item 2), against the real control plane: pods the fake node
makes fail to pull their image or crash-loop (tests/cluster FAIL_LABEL); the Application is
Degraded with the reason within ``spec.rollout.failAfterSeconds`` plus a pass, under ``run`` with no
new commit, and ``sync --once --wait`` ends 1 as soon as that happens, well before its timeout."""

from __future__ import annotations

import calendar
import json
import sys
import time

import pytest
import yaml

from tests.cluster import FAIL_LABEL
from tests.support import app_yaml, wait_for
from tests.test_run import remote, start_agent  # noqa: F401 (fixtures)

GRACE = 10
STAGES = [("image-pull", "ImagePullBackOff"), ("crash-loop", "CrashLoopBackOff")]


def failing(stage: str) -> str:
    doc = yaml.safe_load(app_yaml("web", image="registry.invalid/web:nope"))
    doc["spec"]["podLabels"] = {FAIL_LABEL: stage}
    doc["spec"]["rollout"] = {"failAfterSeconds": GRACE}
    return yaml.safe_dump(doc, sort_keys=False)


def get(agent, namespace: str, kubeconfig) -> dict:
    proc = agent.run([sys.executable, "-m", "agent", "get", "web", "-n", namespace, "--kubeconfig", str(kubeconfig),
                      "-o", "json"])
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def first_pod_created(cluster, namespace: str) -> float:
    pods = json.loads(cluster.kubectl("-n", namespace, "get", "pods", "-o", "json").stdout)["items"]
    stamps = [p["metadata"]["creationTimestamp"] for p in pods]
    assert stamps, "no pod was made"
    return min(calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ")) for s in stamps)


@pytest.mark.parametrize("stage, reason", STAGES)
def test_run_calls_the_rollout_failed_within_the_grace_without_a_new_commit(
        start_agent, agent, repo, remote, namespace, cluster, crd, stage, reason):
    repo.write("web.yaml", failing(stage))
    remote.push()
    start_agent(remote.url, "--interval", "300", "--namespace", namespace)
    seen = {}

    def degraded():
        proc = agent.run([sys.executable, "-m", "agent", "get", "web", "-n", namespace, "--kubeconfig",
                          str(cluster.kubeconfig), "-o", "json"])
        if proc.returncode != 0:  # the first pass has not made the Application yet
            return False
        app = seen["app"] = json.loads(proc.stdout)
        return (app.get("status", {}).get("health") or {}).get("status") == "Degraded"

    wait_for(degraded, timeout=GRACE + 30, interval=0.5, what="the Application to be Degraded")
    at = time.time()
    health = seen["app"]["status"]["health"]
    assert health["message"].startswith(f"Deployment: {reason}: container web: "), health
    ready = next(c for c in seen["app"]["status"]["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "Degraded") and reason in ready["message"]
    # within the grace plus a pass (the recheck): not at the progress deadline (600 s)
    assert at - first_pod_created(cluster, namespace) < GRACE + 20
    shown = cluster.kubectl("-n", namespace, "get", "applications.heumsi.github.io", "web").stdout
    assert f"Deployment: {reason}: container web:" in shown  # the Message column, without -o wide


@pytest.mark.parametrize("stage, reason", STAGES)
def test_sync_wait_ends_1_as_soon_as_the_grace_is_over(agent, repo, namespace, cluster, crd, stage, reason):
    repo.write("web.yaml", failing(stage))
    repo.commit()
    began = time.monotonic()
    proc = agent.sync(repo.path, "--namespace", namespace, "--wait", "60", timeout=90)
    took = time.monotonic() - began
    assert proc.returncode == 1, proc.stderr
    assert took < GRACE + 20, took  # not the 60 s timeout
    assert reason in proc.stdout + proc.stderr
    health = get(agent, namespace, cluster.kubeconfig)["status"]["health"]
    assert health["status"] == "Degraded" and health["message"].startswith(f"Deployment: {reason}: container web: ")
