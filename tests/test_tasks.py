"""Tasks (``spec.tasks``: a Job each, ``agent.engine.taskgate``) against the real control plane,
whose kube-controller-manager runs the Job controller and whose fake node (kwok) completes a
Job's pod, or fails it when the pod is labelled ``FAIL_LABEL: job-fail`` (tests/cluster/stages.yaml;
a task's pod takes the Application's ``spec.podLabels``). The scenarios of the in-memory suite
(tests/unit/engine/test_pass_tasks.py), each run with ``sync --once`` passes: a worker's first
install held until its task completes; an upgrade gated; a failed task holding the old version
until a sync-now request; no spurious runs; at most ``KEEP`` Jobs per task, none once the task
is removed; task pods never selected by the Service; ``sync --once --wait``."""

from __future__ import annotations

import json
import sys

import pytest
import yaml

from agent.api.labels import TASK_DIGEST, TASK_LABEL
from agent.kinds.job import KEEP
from tests.cluster import FAIL_LABEL
from tests.support import wait_for

pytestmark = pytest.mark.usefixtures("crd")

MIGRATE = {"migrate": {"command": ["./migrate"], "args": ["up"]}}
JOB_WAIT = 90.0
"""Seconds a Job may take to be run by the Job controller and kwok, and be seen finished."""


def app(name: str, image: str = "busybox:1.36", replicas: int = 1, **spec) -> str:
    """An Application document; a worker (no port) unless ``port`` is given."""
    return yaml.safe_dump({"apiVersion": "heumsi.github.io/v1", "kind": "Application", "metadata": {"name": name},
                           "spec": {"image": image, "replicas": replicas, **spec}}, sort_keys=False)


def sync(agent, repo, namespace, *args, code=0):
    proc = agent.sync(repo.path, "--namespace", namespace, *args)
    assert proc.returncode == code, proc.stdout + proc.stderr
    return proc


def jobs(cluster, namespace) -> dict[str, dict]:
    """The live Jobs of ``namespace`` by name."""
    proc = cluster.kubectl("-n", namespace, "get", "jobs", "-o", "json", timeout=60)
    return {o["metadata"]["name"]: o for o in json.loads(proc.stdout)["items"]}


def finished(cluster, namespace, name: str, kind: str = "Complete") -> dict | None:
    """The Job ``name`` once its condition ``kind`` (Complete or Failed) is True, else None."""
    live = jobs(cluster, namespace).get(name)
    conditions = ((live or {}).get("status") or {}).get("conditions") or []
    return live if any(c["type"] == kind and c["status"] == "True" for c in conditions) else None


def wait_finished(cluster, namespace, name: str, kind: str = "Complete") -> dict:
    return wait_for(lambda: finished(cluster, namespace, name, kind), timeout=JOB_WAIT, interval=0.5,
                    what=f"Job {name} to be {kind}")


def new_job(cluster, namespace, before: set[str]) -> str:
    """The one Job of ``namespace`` not in ``before``."""
    [name] = set(jobs(cluster, namespace)) - before
    return name


def condition(application: dict, kind: str) -> tuple[str, str, str]:
    """(status, reason, message) of the Application's condition ``kind``."""
    found = next(c for c in application["status"]["conditions"] if c["type"] == kind)
    return found["status"], found["reason"], found["message"]


def image(deployment: dict) -> str:
    return deployment["spec"]["template"]["spec"]["containers"][0]["image"]


def installed(agent, repo, namespace, cluster, name: str, text: str) -> str:
    """Commit ``text`` as ``name``.yaml, sync, wait for its one task's Job to complete and sync
    again (the rollout); returns the Job's name."""
    repo.write(f"{name}.yaml", text)
    repo.commit()
    before = set(jobs(cluster, namespace))
    sync(agent, repo, namespace)
    job = new_job(cluster, namespace, before)
    wait_finished(cluster, namespace, job)
    sync(agent, repo, namespace)
    return job


def test_a_worker_first_install_holds_until_its_task_completes(agent, repo, namespace, objects, cluster):
    repo.write("worker.yaml", app("worker", tasks=MIGRATE))
    repo.commit()
    out = sync(agent, repo, namespace).stdout
    [name] = jobs(cluster, namespace)
    assert name.startswith("worker-migrate-") and len(name) == len("worker-migrate-") + 8
    assert f"Job/{namespace}/{name} created" in out
    assert f"Deployment/{namespace}/worker held (waits for task migrate (Job {name}) to succeed)" in out
    assert "Service" not in out
    assert objects.deployment(namespace, "worker") is None and objects.service(namespace, "worker") is None
    live = jobs(cluster, namespace)[name]
    assert live["metadata"]["ownerReferences"][0]["name"] == "worker"
    labels = live["metadata"]["labels"]
    assert labels[TASK_LABEL] == "migrate" and name.endswith(labels[TASK_DIGEST][:8])
    assert (live["spec"]["backoffLimit"], live["spec"]["activeDeadlineSeconds"]) == (2, 600)
    pod = live["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    assert (pod["containers"][0]["command"], pod["containers"][0]["args"]) == (["./migrate"], ["up"])
    application = objects.app(namespace, "worker")
    why = f"waiting for task migrate (Job {name}) to complete before the rollout"
    assert condition(application, "Ready") == ("False", "TaskRunning", why)
    assert application["status"]["health"] == {"status": "Progressing", "message": why}
    assert "lastSyncedCommit" not in application["status"]
    [entry] = application["status"]["tasks"]
    assert (entry["name"], entry["job"]) == ("migrate", name) and entry["phase"] in ("Pending", "Running")

    wait_finished(cluster, namespace, name)
    out = sync(agent, repo, namespace).stdout
    assert f"Deployment/{namespace}/worker created" in out and "held" not in out
    deployment = objects.deployment(namespace, "worker")
    assert "ports" not in deployment["spec"]["template"]["spec"]["containers"][0]
    assert objects.service(namespace, "worker") is None  # a worker has no Service
    [entry] = objects.app(namespace, "worker")["status"]["tasks"]
    assert (entry["job"], entry["phase"], entry["commit"]) == (name, "Succeeded", repo.head())
    assert entry["startTime"] and entry["completionTime"]
    assert list(jobs(cluster, namespace)) == [name]

    wait_for(lambda: (objects.deployment(namespace, "worker")["status"].get("availableReplicas") or 0) >= 1,
             timeout=JOB_WAIT, what="the worker's pod to be available")
    sync(agent, repo, namespace)
    application = objects.app(namespace, "worker")
    assert condition(application, "Ready")[0] == "True" and application["status"]["health"]["status"] == "Healthy"
    assert list(jobs(cluster, namespace)) == [name]


def test_an_upgrade_waits_for_its_task_and_the_live_image_stays_old(agent, repo, namespace, objects, cluster):
    first = installed(agent, repo, namespace, cluster, "web", app("web", port=80, tasks=MIGRATE))
    assert image(objects.deployment(namespace, "web")) == "busybox:1.36"

    repo.write("web.yaml", app("web", image="busybox:1.37", port=80, tasks=MIGRATE))
    repo.commit()
    out = sync(agent, repo, namespace).stdout
    second = new_job(cluster, namespace, {first})  # the task runs the new image: a new digest, a new Job
    assert jobs(cluster, namespace)[second]["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox:1.37"
    assert f"Deployment/{namespace}/web held" in out and f"Service/{namespace}/web held" in out
    assert image(objects.deployment(namespace, "web")) == "busybox:1.36"
    assert condition(objects.app(namespace, "web"), "Ready")[1] == "TaskRunning"

    wait_finished(cluster, namespace, second)
    out = sync(agent, repo, namespace).stdout
    assert f"Deployment/{namespace}/web configured" in out
    assert image(objects.deployment(namespace, "web")) == "busybox:1.37"
    [entry] = objects.app(namespace, "web")["status"]["tasks"]
    assert (entry["job"], entry["phase"]) == (second, "Succeeded")
    assert set(jobs(cluster, namespace)) == {first, second}


def test_a_failed_task_holds_the_old_version_until_a_sync_now_request(agent, repo, namespace, objects, cluster):
    first = installed(agent, repo, namespace, cluster, "web", app("web", port=80, tasks=MIGRATE))
    failing = {"migrate": {**MIGRATE["migrate"], "retries": 0}}
    # the label fails the task's pod; the Deployment's pods would carry it too, but they are held
    repo.write("web.yaml", app("web", image="busybox:1.37", port=80, podLabels={FAIL_LABEL: "job-fail"},
                               tasks=failing))
    repo.commit()
    sync(agent, repo, namespace)
    name = new_job(cluster, namespace, {first})
    failed = wait_finished(cluster, namespace, name, "Failed")
    sync(agent, repo, namespace)
    application = objects.app(namespace, "web")
    status, reason, message = condition(application, "Stalled")
    assert (status, reason) == ("True", "TaskFailed")
    assert message.startswith(f"task migrate failed (Job {name} failed: BackoffLimitExceeded"), message
    assert "a sync-now request (python -m agent reconcile) runs it again" in message
    assert application["status"]["health"]["status"] == "Degraded"
    entry = application["status"]["tasks"][0]
    assert (entry["job"], entry["phase"]) == (name, "Failed")
    deployment = objects.deployment(namespace, "web")
    assert image(deployment) == "busybox:1.36"  # the old version keeps serving
    assert FAIL_LABEL not in deployment["spec"]["template"]["metadata"]["labels"]

    out = sync(agent, repo, namespace).stdout  # a later pass runs nothing again
    assert f"Job/{namespace}/{name} created" not in out
    assert set(jobs(cluster, namespace)) == {first, name}
    assert jobs(cluster, namespace)[name]["metadata"]["uid"] == failed["metadata"]["uid"]

    proc = agent.run([sys.executable, "-m", "agent", "reconcile", "web", "--namespace", namespace,
                      "--kubeconfig", str(agent.kubeconfig)])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = sync(agent, repo, namespace).stdout
    assert f"Job/{namespace}/{name} pruned (its task failed and is run again)" in out
    assert f"Job/{namespace}/{name} created" in out
    again = wait_for(lambda: jobs(cluster, namespace).get(name), what=f"Job {name} to be created again")
    assert again["metadata"]["uid"] != failed["metadata"]["uid"]
    assert image(objects.deployment(namespace, "web")) == "busybox:1.36"

    wait_finished(cluster, namespace, name, "Failed")  # the label is still there: it fails again
    repo.write("other.yaml", app("other", replicas=0))
    repo.commit()  # a new commit that does not touch web runs it again, too
    out = sync(agent, repo, namespace).stdout
    assert f"Job/{namespace}/{name} pruned" in out and f"Job/{namespace}/{name} created" in out
    third = wait_for(lambda: jobs(cluster, namespace).get(name), what=f"Job {name} to be created a third time")
    assert third["metadata"]["uid"] not in (failed["metadata"]["uid"], again["metadata"]["uid"])
    assert image(objects.deployment(namespace, "web")) == "busybox:1.36"


def test_no_spurious_runs_replicas_drift_a_deleted_job(agent, repo, namespace, objects, cluster):
    name = installed(agent, repo, namespace, cluster, "web", app("web", port=80, tasks=MIGRATE))
    uid = jobs(cluster, namespace)[name]["metadata"]["uid"]

    repo.write("web.yaml", app("web", replicas=2, port=80, tasks=MIGRATE))  # replicas only: the same digest
    repo.commit()
    sync(agent, repo, namespace)
    assert objects.deployment(namespace, "web")["spec"]["replicas"] == 2
    assert {n: j["metadata"]["uid"] for n, j in jobs(cluster, namespace).items()} == {name: uid}

    cluster.kubectl("-n", namespace, "scale", "deployment", "web", "--replicas=4")  # drift
    sync(agent, repo, namespace)
    assert objects.deployment(namespace, "web")["spec"]["replicas"] == 2
    assert {n: j["metadata"]["uid"] for n, j in jobs(cluster, namespace).items()} == {name: uid}

    cluster.kubectl("-n", namespace, "delete", "job", name, "--wait=true")  # by hand, after it succeeded
    for _ in range(2):
        proc = sync(agent, repo, namespace)
        assert "Job/" not in proc.stdout, proc.stdout
        assert jobs(cluster, namespace) == {}
    application = objects.app(namespace, "web")
    [entry] = application["status"]["tasks"]
    assert (entry["job"], entry["phase"]) == (name, "Succeeded")
    assert condition(application, "Synced")[:2] == ("True", "Synced")


def test_at_most_three_jobs_per_task_and_none_once_the_task_is_removed(agent, repo, namespace, objects, cluster):
    made = []
    for i in range(KEEP + 1):  # four digests
        made.append(installed(agent, repo, namespace, cluster, "web",
                              app("web", image=f"busybox:1.3{i}", replicas=0, tasks=MIGRATE)))
        assert len(jobs(cluster, namespace)) <= KEEP
    assert len(set(made)) == KEEP + 1
    wait_for(lambda: set(jobs(cluster, namespace)) == set(made[1:]), what="the oldest Job to be pruned")
    assert all(j["metadata"]["labels"][TASK_LABEL] == "migrate" for j in jobs(cluster, namespace).values())
    assert image(objects.deployment(namespace, "web")) == f"busybox:1.3{KEEP}"

    repo.write("web.yaml", app("web", image=f"busybox:1.3{KEEP}", replicas=0))
    repo.commit()
    out = sync(agent, repo, namespace).stdout
    assert all(f"Job/{namespace}/{n} pruned" in out for n in made[1:]), out
    wait_for(lambda: jobs(cluster, namespace) == {}, what="the removed task's Jobs to be pruned")
    assert "tasks" not in objects.app(namespace, "web")["status"]
    assert "Job/" not in sync(agent, repo, namespace).stdout


def test_task_pods_are_never_selected_by_the_service(agent, repo, namespace, objects, cluster):
    name = installed(agent, repo, namespace, cluster, "web",
                     app("web", replicas=0, port=80, podLabels={"team": "shop"}, tasks=MIGRATE))
    proc = cluster.kubectl("-n", namespace, "get", "pods", "-l", f"job-name={name}", "-o", "json", timeout=60)
    [pod] = json.loads(proc.stdout)["items"]
    labels = pod["metadata"]["labels"]
    assert (labels["team"], labels[TASK_LABEL]) == ("shop", "migrate")
    selector = objects.service(namespace, "web")["spec"]["selector"]
    assert selector and not set(selector.items()) <= set(labels.items())
    match = objects.deployment(namespace, "web")["spec"]["selector"]["matchLabels"]
    assert not set(match.items()) <= set(labels.items())  # no ReplicaSet counts it either
    proc = cluster.kubectl("-n", namespace, "get", "endpointslices", "-l", "kubernetes.io/service-name=web",
                           "-o", "json", timeout=60)
    addresses = [a for s in json.loads(proc.stdout)["items"] for e in s.get("endpoints") or []
                 for a in e.get("addresses") or []]
    assert pod["status"].get("podIP") not in addresses


def test_an_after_rollout_task_starts_once_the_deployment_is_available(agent, repo, namespace, objects, cluster):
    repo.write("web.yaml", app("web", port=80, tasks={"warm": {"command": ["warm"], "when": "AfterRollout"}}))
    repo.commit()
    out = sync(agent, repo, namespace).stdout
    assert f"Deployment/{namespace}/web created" in out and "held" not in out
    assert jobs(cluster, namespace) == {}
    [entry] = objects.app(namespace, "web")["status"]["tasks"]
    assert entry["phase"] == "Pending" and entry["message"].endswith("waits for the rollout to finish")

    wait_for(lambda: (objects.deployment(namespace, "web")["status"].get("availableReplicas") or 0) >= 1,
             timeout=JOB_WAIT, what="the Deployment to be available")
    sync(agent, repo, namespace)
    [name] = jobs(cluster, namespace)
    assert name.startswith("web-warm-")
    assert condition(objects.app(namespace, "web"), "Ready")[1] == "TaskRunning"

    wait_finished(cluster, namespace, name)
    sync(agent, repo, namespace)
    application = objects.app(namespace, "web")
    assert condition(application, "Ready")[0] == "True" and application["status"]["tasks"][0]["phase"] == "Succeeded"
    assert list(jobs(cluster, namespace)) == [name]


def test_sync_once_wait_ends_once_the_task_and_the_rollout_are_done(agent, repo, namespace, objects, cluster):
    repo.write("web.yaml", app("web", port=80, tasks=MIGRATE))
    repo.commit()
    proc = sync(agent, repo, namespace, "--wait", "120")
    assert objects.deployment(namespace, "web") is not None, proc.stdout + proc.stderr
    application = objects.app(namespace, "web")
    assert application["status"]["tasks"][0]["phase"] == "Succeeded"
    assert condition(application, "Ready")[0] == "True", proc.stdout + proc.stderr


def test_sync_once_wait_ends_1_at_once_on_a_failed_task(agent, repo, namespace, objects, cluster):
    repo.write("web.yaml", app("web", port=80, podLabels={FAIL_LABEL: "job-fail"},
                               tasks={"migrate": {**MIGRATE["migrate"], "retries": 0}}))
    repo.commit()
    sync(agent, repo, namespace)
    [name] = jobs(cluster, namespace)
    wait_finished(cluster, namespace, name, "Failed")
    proc = sync(agent, repo, namespace, "--wait", "120", code=1)
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("wait failed: ") and last.endswith(f"): {namespace}/web"), proc.stdout
