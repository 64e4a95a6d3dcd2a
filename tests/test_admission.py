"""What admission says, told (issue 44 item 6): the API server's ``Warning`` headers on an apply
(PodSecurity's ``warn`` mode) in the report, an ``AdmissionWarning`` Event and ``explain``; and a
Deployment whose ReplicaSet cannot create pods (``FailedCreate``: PodSecurity's ``enforce`` mode,
a ResourceQuota) or whose pods no node fits (``FailedScheduling``) named in its health, in the
status a pass writes and so in ``get`` and ``explain``, one pass after the controllers reacted.
Real control plane (PodSecurity and ResourceQuota admission are on in every kube-apiserver), real
Git, kubectl as people type it."""

from __future__ import annotations

import json
import sys

import pytest
import yaml

from tests.support import wait_for
from tests.test_run import remote, start_agent  # noqa: F401 (fixtures)

pytestmark = pytest.mark.usefixtures("crd")


def in_git(repo, namespace: str, name: str = "web", commit: bool = True, **spec) -> None:
    doc = {"apiVersion": "heumsi.github.io/v1", "kind": "Application",
           "metadata": {"name": name, "namespace": namespace},
           "spec": {"image": "nginx:1.27", "replicas": 1, "port": 8080, **spec}}
    repo.write(f"{namespace}-{name}.yaml", yaml.safe_dump(doc, sort_keys=False))
    if commit:
        repo.commit()


def restricted(cluster, namespace: str) -> None:
    """``namespace`` refuses pods that break the restricted standard, and warns of templates that would."""
    cluster.kubectl("label", "namespace", namespace, "pod-security.kubernetes.io/enforce=restricted",
                    "pod-security.kubernetes.io/warn=restricted")


def told(objects, namespace: str) -> list[dict]:
    return [e for e in objects.events(namespace) if e["reason"] == "AdmissionWarning"]


def sync(agent, repo, namespace: str) -> dict:
    proc = agent.sync(repo.path, "--namespace", namespace, "-o", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def application(doc: dict, namespace: str, name: str = "web") -> dict:
    return next(a for a in doc["applications"] if a["name"] == f"{namespace}/{name}")


def condition(objects, namespace: str, type_: str) -> dict | None:
    """The Deployment ``web``'s condition ``type_`` (None while it has none)."""
    found = (objects.deployment(namespace, "web") or {}).get("status", {}).get("conditions") or []
    return next((c for c in found if c["type"] == type_), None)


def explain(agent, namespace: str) -> dict:
    proc = agent.run([sys.executable, "-m", "agent", "explain", "web", "-n", namespace, "--kubeconfig",
                      str(agent.kubeconfig), "--cache-dir", str(agent.cache_dir), "-o", "json"])
    return json.loads(proc.stdout)


def get_message(agent, namespace: str) -> str:
    proc = agent.run([sys.executable, "-m", "agent", "get", "web", "-n", namespace, "--kubeconfig",
                      str(agent.kubeconfig), "-o", "json"])
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["status"]["health"]["message"]


def test_pod_security_warns_at_the_apply_and_its_refusal_is_named_in_one_pass(agent, repo, namespace, cluster,
                                                                              objects):
    restricted(cluster, namespace)
    in_git(repo, namespace)  # no security: its pods break the restricted standard
    proc = agent.run([sys.executable, "-m", "agent", "diff", "--repo", str(repo.path), "--namespace", namespace,
                      "--kubeconfig", str(agent.kubeconfig), "--cache-dir", str(agent.cache_dir), "-o", "json"])
    [planned] = [o for o in application(json.loads(proc.stdout), namespace)["objects"] if o["kind"] == "Deployment"]
    assert planned["warnings"][0].startswith('would violate PodSecurity "restricted:latest": ')  # a dry run is warned of
    doc = sync(agent, repo, namespace)
    [deployment] = [o for o in application(doc, namespace)["objects"] if o["kind"] == "Deployment"]
    assert deployment["action"] == "create"
    [warning] = deployment["warnings"]
    assert warning.startswith('would violate PodSecurity "restricted:latest": '), warning
    assert "allowPrivilegeEscalation != false" in warning
    assert [(e["type"], e["involvedObject"]["kind"], e["message"]) for e in told(objects, namespace)] == [
        ("Warning", "Application", f"Deployment/{namespace}/web: {warning}")]

    wait_for(lambda: condition(objects, namespace, "ReplicaFailure"), timeout=60,
             what="the deployment controller to copy the ReplicaSet's ReplicaFailure")
    failure = condition(objects, namespace, "ReplicaFailure")
    assert (failure["status"], failure["reason"]) == ("True", "FailedCreate")
    doc = sync(agent, repo, namespace)  # the one pass after the controller reacted
    health = application(doc, namespace)["health"]
    assert health["status"] == "Progressing"
    assert "; FailedCreate: " in health["message"] and 'violates PodSecurity "restricted:latest"' in \
        health["message"], health
    assert "FailedCreate" in get_message(agent, namespace)
    said = explain(agent, namespace)
    [child] = [c for c in said["children"] if c["kind"] == "Deployment"]
    assert "violates PodSecurity" in child["health"]["message"]
    assert [e["message"] for e in said["admission"]] == [f"Deployment/{namespace}/web: {warning}"]
    text = agent.run([sys.executable, "-m", "agent", "explain", "web", "-n", namespace, "--kubeconfig",
                      str(agent.kubeconfig), "--cache-dir", str(agent.cache_dir)]).stdout
    assert "Admission warnings (newest first):" in text and "would violate PodSecurity" in text
    # nothing applied again: nothing warned again
    assert len(told(objects, namespace)) == 1


def test_run_names_the_refusal_unasked_and_tells_a_warning_once(start_agent, remote, repo, namespace, cluster,
                                                                 objects):
    """``run``: the deployment controller's ReplicaFailure starts a pass (its watch), which names it;
    drift undone applies the Deployment again, warned of again, and told no second time."""
    restricted(cluster, namespace)
    in_git(repo, namespace, commit=False)
    remote.push()
    start_agent(remote.url, "--namespace", namespace, "--interval", "3600")

    def health() -> dict:
        return ((objects.app(namespace, "web") or {}).get("status") or {}).get("health") or {}
    wait_for(lambda: "; FailedCreate: " in health().get("message", ""), timeout=60,
             what="a pass to name the refusal")
    assert health()["status"] == "Progressing" and "violates PodSecurity" in health()["message"]
    assert len(told(objects, namespace)) == 1
    cluster.kubectl("-n", namespace, "set", "image", "deployment/web", "web=nginx:1.26")
    image = lambda: objects.deployment(namespace, "web")["spec"]["template"]["spec"]["containers"][0]["image"]  # noqa: E731
    wait_for(lambda: image() == "nginx:1.27", timeout=60, what="the drift to be undone")
    assert len(told(objects, namespace)) == 1


def test_a_quota_and_a_pod_no_node_fits_are_named_in_one_pass(agent, repo, namespaces, cluster, objects):
    quota, big = namespaces(), namespaces()
    cluster.kubectl("-n", quota, "create", "quota", "no-pods", "--hard=pods=0")
    # no resource-quota controller runs here: its usage is written as that controller would (test_backoff)
    cluster.kubectl("-n", quota, "patch", "quota", "no-pods", "--subresource=status", "--type=merge",
                    "-p", '{"status":{"hard":{"pods":"0"},"used":{"pods":"0"}}}')
    in_git(repo, quota)
    in_git(repo, big, resources={"requests": {"cpu": "100000"}})  # far more than the kwok node has
    sync(agent, repo, quota)

    wait_for(lambda: condition(objects, quota, "ReplicaFailure"), timeout=60, what="the quota's refusal")

    def unscheduled() -> bool:
        pods = objects.core.list_namespaced_pod(big).items
        return any(c.type == "PodScheduled" and c.status == "False" for p in pods for c in p.status.conditions or [])
    wait_for(unscheduled, timeout=60, what="the scheduler to find no node for the pod")
    wait_for(lambda: (objects.deployment(big, "web") or {}).get("status", {}).get("replicas") == 1, timeout=60,
             what="the deployment controller to count the pod")
    doc = sync(agent, repo, quota)  # the one pass after the controllers reacted
    health = application(doc, quota)["health"]
    assert health["status"] == "Progressing"
    assert "; FailedCreate: " in health["message"] and "exceeded quota: no-pods" in health["message"], health
    health = application(doc, big)["health"]
    assert health["status"] == "Progressing"
    assert "; FailedScheduling: " in health["message"] and "Insufficient cpu" in health["message"], health
    assert "FailedScheduling" in get_message(agent, big)
    [child] = [c for c in explain(agent, big)["children"] if c["kind"] == "Deployment"]
    assert "FailedScheduling" in child["health"]["message"]


def test_run_names_a_pod_no_node_fits_unasked(start_agent, remote, repo, namespace, objects):
    """``run``: the deployment controller counting the pod it made starts a pass (its watch), which
    reads the Deployment's pods and names the scheduler's reason."""
    in_git(repo, namespace, commit=False, resources={"requests": {"cpu": "100000"}})
    remote.push()
    start_agent(remote.url, "--namespace", namespace, "--interval", "3600")

    def health() -> dict:
        return ((objects.app(namespace, "web") or {}).get("status") or {}).get("health") or {}
    wait_for(lambda: "; FailedScheduling: " in health().get("message", ""), timeout=60,
             what="a pass to name the unschedulable pod")
    assert health()["status"] == "Progressing" and "Insufficient cpu" in health()["message"]
