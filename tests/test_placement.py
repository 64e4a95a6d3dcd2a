"""spec.placement and spec.volumes against the real control plane: its kube-scheduler places the
pods and kwok (``--manage-all-nodes``) makes the test's extra Nodes Ready. Two Nodes of the test's
own, each with a zone and hostname label, a pool label unique to the test and a NoSchedule taint
of that pool: no other test's pod lands on them, and they are deleted after the test (the control
plane is the session's). An Application with nodeSelector and a toleration lands its pods on
the chosen tainted node with its emptyDir volume mounted; one with ``spreadAcross: [node]`` and 2
replicas gets a pod on each node; a nodeSelector key added by hand is undone by one pass."""

from __future__ import annotations

import json
import uuid

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from tests.support import wait_for

pytestmark = pytest.mark.usefixtures("crd")

POOL = "placement.gitops-agent.test/pool"
"""The label and taint key of the test's Nodes; its value is unique to one test."""


@pytest.fixture
def pool(objects):
    """``(pool, [node names])``: two Ready Nodes labelled ``POOL=pool``, zones ``<pool>-a`` and
    ``<pool>-b`` and their hostname, tainted ``POOL=pool:NoSchedule``; deleted after the test."""
    name = f"p{uuid.uuid4().hex[:8]}"
    nodes = [f"{name}-a", f"{name}-b"]
    for node in nodes:
        objects.core.create_node({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": node, "labels": {POOL: name, "kubernetes.io/hostname": node,
                                                  "topology.kubernetes.io/zone": node, "type": "kwok"},
                         "annotations": {"kwok.x-k8s.io/node": "fake"}},
            "spec": {"taints": [{"key": POOL, "value": name, "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "50"},
                       "capacity": {"cpu": "8", "memory": "16Gi", "pods": "50"}}})

    def ready(node: str) -> bool:
        conditions = objects.core.read_node(node).status.conditions or []
        return any(c.type == "Ready" and c.status == "True" for c in conditions)
    for node in nodes:
        wait_for(lambda: ready(node), timeout=30, interval=0.2, what=f"node {node} to be Ready")
    yield name, nodes
    for node in nodes:
        try:
            objects.core.delete_node(node)
        except ApiException as err:
            if err.status != 404:
                raise


def in_git(repo, name: str, **spec) -> None:
    repo.write(f"{name}.yaml", yaml.safe_dump({
        "apiVersion": "heumsi.github.io/v1", "kind": "Application", "metadata": {"name": name},
        "spec": {"image": "nginx:1.27", "port": 8080, **spec}}, sort_keys=False))
    repo.commit()


def tolerating(pool: str) -> list[dict]:
    return [{"key": POOL, "operator": "Equal", "value": pool, "effect": "NoSchedule"}]


def placed_pods(objects, namespace: str, count: int) -> list:
    """The ``count`` running pods of ``namespace`` once each has its node and is Ready."""
    def done():
        pods = [p for p in objects.core.list_namespaced_pod(namespace).items if not p.metadata.deletion_timestamp]
        ready = [p for p in pods if p.spec.node_name and any(c.type == "Ready" and c.status == "True"
                                                             for c in p.status.conditions or [])]
        return ready if len(ready) == count == len(pods) else None
    return wait_for(done, timeout=60, interval=0.3, what=f"{count} pods placed and Ready")


def test_pods_land_on_the_tainted_node_chosen_with_the_volume_mounted(agent, repo, namespace, cluster, objects,
                                                                      pool):
    name, (node_a, _) = pool
    in_git(repo, "web", replicas=1, terminationGracePeriodSeconds=5,
           placement={"nodeSelector": {POOL: name, "topology.kubernetes.io/zone": node_a},
                      "tolerations": tolerating(name)},
           volumes={"/var/cache/web": {"emptyDir": {"sizeLimit": "64Mi"}}})
    proc = agent.sync(repo.path, "--namespace", namespace, "--wait=1m")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [pod] = placed_pods(objects, namespace, 1)
    assert pod.spec.node_name == node_a
    assert pod.spec.termination_grace_period_seconds == 5
    [volume] = [v for v in pod.spec.volumes if v.empty_dir is not None]
    assert volume.name.startswith("scratch-") and volume.empty_dir.size_limit == "64Mi"
    [mount] = [m for m in pod.spec.containers[0].volume_mounts if m.name == volume.name]
    assert mount.mount_path == "/var/cache/web" and not mount.read_only

    # drift: a nodeSelector key added by hand (no node has it: the new pods would stay Pending)
    patch = {"spec": {"template": {"spec": {"nodeSelector": {"disk": "ssd"}}}}}
    cluster.kubectl("-n", namespace, "patch", "deployment", "web", "-p", json.dumps(patch))
    assert objects.deployment(namespace, "web")["spec"]["template"]["spec"]["nodeSelector"]["disk"] == "ssd"
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"Deployment/{namespace}/web configured" in proc.stdout
    live = objects.deployment(namespace, "web")["spec"]["template"]["spec"]
    assert live["nodeSelector"] == {POOL: name, "topology.kubernetes.io/zone": node_a}
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert f"Deployment/{namespace}/web configured" not in proc.stdout  # one pass was enough


def test_spread_across_nodes_puts_a_pod_on_each(agent, repo, namespace, objects, pool):
    name, nodes = pool
    in_git(repo, "web", replicas=2,
           placement={"nodeSelector": {POOL: name}, "tolerations": tolerating(name), "spreadAcross": ["node"]})
    proc = agent.sync(repo.path, "--namespace", namespace, "--wait=1m")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pods = placed_pods(objects, namespace, 2)
    assert sorted(p.spec.node_name for p in pods) == nodes
    [constraint] = pods[0].spec.topology_spread_constraints
    assert (constraint.topology_key, constraint.max_skew, constraint.when_unsatisfiable) == (
        "kubernetes.io/hostname", 1, "ScheduleAnyway")
