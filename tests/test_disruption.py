"""``spec.disruptionBudget`` against the real control plane, whose kube-controller-manager runs
the disruption controller: the PodDisruptionBudget is made on the Application's pods and turns
Healthy once the controller has counted them; a node drain's evictions (policy/v1 Eviction,
POST pods/NAME/eviction) are let through while the budget allows and refused with 429 once it
does not, and ``explain`` warns then."""

from __future__ import annotations

import json
import sys

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.cluster import NODE_NAME
from tests.support import wait_for

pytestmark = pytest.mark.usefixtures("crd")


def app(name: str, **spec) -> str:
    return yaml.safe_dump({"apiVersion": "heumsi.github.io/v1", "kind": "Application", "metadata": {"name": name},
                           "spec": {"image": "nginx:1.27", "port": 80, **spec}}, sort_keys=False)


def get(cluster, namespace, what: str) -> dict | None:
    proc = cluster.kubectl("-n", namespace, "get", what, "-o", "json", check=False, timeout=60)
    if proc.returncode != 0:
        assert "NotFound" in proc.stderr, proc.stderr
        return None
    return json.loads(proc.stdout)


def evict(core, namespace: str, pod: str) -> int:
    """The HTTP status of an eviction of ``pod`` (what ``kubectl drain`` sends)."""
    body = client.V1Eviction(api_version="policy/v1", kind="Eviction",
                             metadata=client.V1ObjectMeta(name=pod, namespace=namespace))
    try:
        core.create_namespaced_pod_eviction(pod, namespace, body)
    except ApiException as err:
        return err.status
    return 201


def test_a_budget_lets_one_eviction_through_and_refuses_the_next(agent, repo, namespace, cluster, objects):
    repo.write("web.yaml", app("web", replicas=2, disruptionBudget={"maxUnavailable": 1}))
    repo.commit()
    proc = agent.sync(repo.path, "--namespace", namespace, "--wait=2m")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pdb = get(cluster, namespace, "pdb/web")
    assert pdb["spec"] == {"maxUnavailable": 1, "selector": objects.deployment(namespace, "web")["spec"]["selector"],
                           "unhealthyPodEvictionPolicy": "AlwaysAllow"}
    [ref] = pdb["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["name"], ref["controller"]) == ("Application", "web", True)
    # --wait waited for it to be Healthy: the disruption controller has observed it; it counts both pods
    assert pdb["status"]["observedGeneration"] == pdb["metadata"]["generation"]
    wait_for(lambda: get(cluster, namespace, "pdb/web")["status"].get("disruptionsAllowed") == 1,
             what="the disruption controller to count both pods")
    assert "unchanged" in agent.sync(repo.path, "--namespace", namespace).stdout
    status = objects.app(namespace, "web")["status"]
    assert (status["disruptionBudget"], status["disruptionsAllowed"], status["health"]["status"]) == (
        "web", 1, "Healthy"), status

    core = client.CoreV1Api(objects.api_client)
    pods = sorted(p.metadata.name for p in core.list_namespaced_pod(
        namespace, label_selector="heumsi.github.io/application=web").items)
    assert len(pods) == 2
    # a drain: the node cordoned, so the evicted pod's replacement cannot start elsewhere
    cluster.kubectl("cordon", NODE_NAME)
    try:
        assert evict(core, namespace, pods[0]) == 201
        assert evict(core, namespace, pods[1]) == 429  # would leave 0 of 2 available
        wait_for(lambda: get(cluster, namespace, "pdb/web")["status"]["disruptionsAllowed"] == 0,
                 what="the budget to allow no more disruptions")
        agent.sync(repo.path, "--namespace", namespace)
        assert objects.app(namespace, "web")["status"]["disruptionsAllowed"] == 0
        proc = agent.run([sys.executable, "-m", "agent", "explain", "web", "-n", namespace, "--kubeconfig",
                          str(agent.kubeconfig), "--cache-dir", str(agent.cache_dir)])
        line = next(x for x in proc.stdout.splitlines() if "PodDisruptionBudget/web" in x)
        assert "Warning: allows 0 disruptions" in line, proc.stdout
    finally:
        cluster.kubectl("uncordon", NODE_NAME)
    # the drain is over: the replacement starts, and the budget allows one again
    wait_for(lambda: get(cluster, namespace, "pdb/web")["status"]["disruptionsAllowed"] == 1, timeout=90,
             what="the budget to allow one disruption again")
    assert evict(core, namespace, pods[1]) == 201
