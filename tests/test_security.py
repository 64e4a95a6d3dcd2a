"""spec.security in a namespace that enforces the Pod Security Standard restricted (the
``pod-security.kubernetes.io/enforce`` label, which the API server's PodSecurity admission reads):
an Application with ``security: {profile: restricted}`` gets its pods; drift on a container's
``allowPrivilegeEscalation`` is undone by the next pass; a compliant hand-made Deployment is
adopted without a single refused pod. Real control plane (PodSecurity admission is on in every
kube-apiserver since 1.25), real Git, kubectl as people type it."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.support import wait_for

pytestmark = pytest.mark.usefixtures("crd")

SECURITY = {"profile": "restricted", "runAsUser": 10001}
POD = {"runAsUser": 10001, "runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
CONTAINER = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def restricted(cluster, namespace: str) -> None:
    """``namespace`` enforces the restricted standard: a pod that breaks it is refused."""
    cluster.kubectl("label", "namespace", namespace, "pod-security.kubernetes.io/enforce=restricted")


def in_git(repo, annotations: dict | None = None) -> None:
    meta = {"name": "web", **({"annotations": annotations} if annotations else {})}
    repo.write("web.yaml", yaml.safe_dump({"apiVersion": "heumsi.github.io/v1", "kind": "Application", "metadata": meta,
                                          "spec": {"image": "nginx:1.27", "replicas": 1, "port": 8080,
                                                   "security": SECURITY}}, sort_keys=False))
    repo.commit()


def ready(objects, namespace: str) -> None:
    """The Deployment ``web`` at its latest template with its one replica ready: its ReplicaSet
    made a pod that the namespace's admission let in."""
    def done():
        d = objects.deployment(namespace, "web")
        status = d["status"] if d else {}
        return d is not None and status.get("observedGeneration") == d["metadata"]["generation"] and \
            status.get("updatedReplicas") == 1 and status.get("readyReplicas") == 1 and status.get("replicas") == 1
    wait_for(done, timeout=120, interval=0.5, what="the Deployment's pod to be ready")


def refused(objects, namespace: str) -> list[str]:
    """The messages of the ReplicaSet controller's FailedCreate Events in ``namespace``."""
    return [e["message"] for e in objects.events(namespace) if e.get("reason") == "FailedCreate"]


def test_restricted_pods_are_admitted_and_drift_on_them_is_undone(agent, repo, namespace, cluster, objects):
    restricted(cluster, namespace)
    in_git(repo)
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 0, proc.stderr
    ready(objects, namespace)
    template = objects.deployment(namespace, "web")["spec"]["template"]["spec"]
    assert template["securityContext"] == POD
    assert [c["securityContext"] for c in template["containers"]] == [CONTAINER]
    [pod] = objects.core.list_namespaced_pod(namespace).items
    assert pod.spec.security_context.run_as_non_root is True
    assert pod.spec.containers[0].security_context.allow_privilege_escalation is False
    assert refused(objects, namespace) == []

    # PodSecurity judges pods, not their templates: the patch is taken, its ReplicaSet's pods are refused
    patch = [{"op": "replace", "path": "/spec/template/spec/containers/0/securityContext/allowPrivilegeEscalation",
              "value": True}]
    cluster.kubectl("-n", namespace, "patch", "deployment", "web", "--type=json", "-p", json.dumps(patch))
    live = objects.deployment(namespace, "web")["spec"]["template"]["spec"]["containers"][0]["securityContext"]
    assert live["allowPrivilegeEscalation"] is True
    wait_for(lambda: any("allowPrivilegeEscalation" in m for m in refused(objects, namespace)), timeout=60,
             what="the patched template's pods to be refused")
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 0, proc.stderr
    assert f"Deployment/{namespace}/web configured" in proc.stdout
    template = objects.deployment(namespace, "web")["spec"]["template"]["spec"]
    assert [c["securityContext"] for c in template["containers"]] == [CONTAINER]
    ready(objects, namespace)


HAND_MADE = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      securityContext:
        runAsUser: 10001
        runAsNonRoot: true
        seccompProfile: {type: RuntimeDefault}
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 8080}]
        securityContext:
          allowPrivilegeEscalation: false
          capabilities: {drop: [ALL]}
"""


def test_a_compliant_hand_made_deployment_is_adopted_without_a_refused_pod(agent, repo, namespace, cluster, objects):
    restricted(cluster, namespace)
    cluster.kubectl("-n", namespace, "create", "-f", "-", input=HAND_MADE)
    ready(objects, namespace)
    in_git(repo, annotations={"heumsi.github.io/adopt": "true"})
    proc = agent.sync(repo.path, "--namespace", namespace, env={"GITOPS_AGENT_ADOPT_NAMESPACES": namespace})
    assert proc.returncode == 0, proc.stderr
    assert f"Deployment/{namespace}/web adopted" in proc.stdout
    ready(objects, namespace)
    template = objects.deployment(namespace, "web")["spec"]["template"]["spec"]
    assert template["securityContext"] == POD
    assert [c["securityContext"] for c in template["containers"]] == [CONTAINER]
    assert refused(objects, namespace) == []
