"""Taking over a running Deployment whose selector is not the agent's, with no serving gap
(issue 45): the seed operator's children (its templates and client calls), an Argo CD-made
Deployment (a Helm chart's selector and Argo CD's tracking label) and a hand-made one opted in,
2 replicas each, ``maxUnavailable`` as Kubernetes defaults it. The steps of
docs/guides/migrating.md are run as written. Real control plane, with the EndpointSlice
controller (``endpointslices``) so that a poller can read the Service's endpoints every 100 ms:
not one reading may find no ready endpoint, nor no ready pod the Service selects."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest
import yaml

from tests.support import api_writes, new_writes, wait_for
from tests.test_adoption import SEED_DEPLOYMENT, SEED_SERVICE, guide_steps, kopf_adopt, run_step

pytestmark = pytest.mark.usefixtures("crd")

REPLICAS = 2
SPEC = {"image": "nginx:1.27", "replicas": REPLICAS, "port": 80}
HELM = {"app.kubernetes.io/name": "web", "app.kubernetes.io/instance": "web-prod"}
ARGO_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "applications.argoproj.io"},
    "spec": {"group": "argoproj.io", "scope": "Namespaced",
             "names": {"plural": "applications", "singular": "application", "kind": "Application"},
             "versions": [{"name": "v1alpha1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]}}


@pytest.fixture(scope="module")
def endpointslices(cluster, tmp_path_factory):
    """kube-controller-manager's EndpointSlice controller, beside the suite's controllers, for
    this module's tests (its own process: the other tests need no EndpointSlices)."""
    log = (tmp_path_factory.mktemp("endpointslice") / "controller.log").open("w")
    proc = subprocess.Popen([str(cluster.binaries.cluster), "kube-controller-manager",
                             f"--kubeconfig={cluster.kubeconfig}", "--leader-elect=false", "--secure-port=0",
                             "--controllers=endpointslice-controller"], stdout=log, stderr=subprocess.STDOUT)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


class Serving(threading.Thread):
    """Every 100 ms: the ready endpoints of the Service ``name``'s EndpointSlices, and the ready
    pods (not being deleted) its current selector selects. ``gaps`` lists the readings with none."""

    def __init__(self, objects, namespace: str, name: str = "web"):
        super().__init__(daemon=True)
        from kubernetes import client

        self.discovery = client.DiscoveryV1Api(objects.api_client)
        self.objects, self.namespace, self.name = objects, namespace, name
        self.readings: list[tuple[float, int, int]] = []
        self.stopped = threading.Event()

    def reading(self) -> tuple[float, int, int]:
        slices = self.discovery.list_namespaced_endpoint_slice(
            self.namespace, label_selector=f"kubernetes.io/service-name={self.name}").items
        endpoints = sum(1 for s in slices for e in s.endpoints or [] if e.conditions and e.conditions.ready)
        selector = self.objects.service(self.namespace, self.name)["spec"]["selector"]
        pods = self.objects.core.list_namespaced_pod(
            self.namespace, label_selector=",".join(f"{k}={v}" for k, v in selector.items())).items
        ready = sum(1 for p in pods if p.metadata.deletion_timestamp is None and any(
            c.type == "Ready" and c.status == "True" for c in (p.status.conditions or [])))
        return time.monotonic(), endpoints, ready

    def run(self) -> None:
        while not self.stopped.wait(0.1):
            self.readings.append(self.reading())

    @property
    def gaps(self) -> list[tuple[float, int, int]]:
        return [r for r in self.readings if r[1] == 0 or r[2] == 0]

    def __enter__(self):
        wait_for(lambda: self.reading()[1] == REPLICAS, timeout=60, what="the Service's endpoints to be ready")
        self.start()
        return self

    def __exit__(self, *exc):
        self.stopped.set()
        self.join(timeout=10)


def replica_sets(objects, namespace: str) -> set[str]:
    return {rs.metadata.name for rs in objects.apps.list_namespaced_replica_set(namespace).items}


def rolled_out(objects, namespace: str) -> bool:
    """The Deployment's rolling update is done: every replica updated and available, the old
    ReplicaSet's pods gone."""
    live = objects.deployment(namespace, "web")
    status = live.get("status") or {}
    return (status.get("observedGeneration") == live["metadata"]["generation"]
            and all(status.get(k) == REPLICAS for k in ("replicas", "updatedReplicas", "availableReplicas")))


def application(namespace: str, adopt: bool) -> str:
    meta = {"name": "web", "namespace": namespace,
            **({"annotations": {"heumsi.github.io/adopt": "true"}} if adopt else {})}
    return yaml.safe_dump({"apiVersion": "heumsi.github.io/v1", "kind": "Application", "metadata": meta,
                           "spec": SPEC}, sort_keys=False)


def made(objects, namespace: str, labels: dict, annotations: dict | None = None, owner: dict | None = None):
    """A Deployment and a Service as the seed's operator renders them (its templates), selecting
    ``labels``, created with the official client (``kopf.adopt``'s ownerReference to ``owner``)."""
    deployment = yaml.safe_load(SEED_DEPLOYMENT.format(name="web", **SPEC))
    service = yaml.safe_load(SEED_SERVICE.format(name="web", **SPEC))
    deployment["metadata"]["labels"] = dict(labels)
    deployment["spec"]["selector"]["matchLabels"] = dict(labels)
    deployment["spec"]["template"]["metadata"]["labels"] = dict(labels)
    service["spec"]["selector"] = dict(labels)
    for obj in (deployment, service):
        obj["metadata"]["namespace"] = namespace
        if annotations:
            obj["metadata"]["annotations"] = dict(annotations)
        if owner is not None:
            kopf_adopt(obj, owner)
    objects.apps.create_namespaced_deployment(namespace=namespace, body=deployment)
    objects.core.create_namespaced_service(namespace=namespace, body=service)
    wait_for(lambda: rolled_out(objects, namespace), timeout=120, what="the Deployment to be ready")
    return objects.deployment(namespace, "web"), objects.service(namespace, "web")


def assert_taken_over(objects, namespace, before, serving, sets, labels) -> None:
    """The same Deployment and Service (uid, cluster IP), the selector kept, one new ReplicaSet,
    and the Service never without a ready endpoint or pod."""
    assert len(serving.readings) > 20, serving.readings
    assert serving.gaps == [], f"the Service had no ready endpoint or pod: {serving.gaps[:5]}"
    deployment, service = before
    live, svc = objects.deployment(namespace, "web"), objects.service(namespace, "web")
    assert live["metadata"]["uid"] == deployment["metadata"]["uid"]
    assert live["spec"]["selector"] == {"matchLabels": labels}
    assert live["spec"]["template"]["metadata"]["labels"]["heumsi.github.io/application"] == "web"
    assert svc["metadata"]["uid"] == service["metadata"]["uid"]
    assert svc["spec"]["clusterIP"] == service["spec"]["clusterIP"] and svc["spec"]["selector"] == labels
    assert len(replica_sets(objects, namespace) - sets) == 1, "not exactly one new ReplicaSet"


def assert_quiet(proc, before, after) -> None:
    assert proc.returncode == 0, proc.stderr
    assert "0 created, 0 configured, 3 unchanged, 0 pruned, 0 failed" in proc.stdout, proc.stdout
    writes = {k: v for k, v in new_writes(before, after).items() if k[2] != "status"}
    assert writes == {}, f"the pass after the take-over wrote: {writes}"


def test_the_seed_operators_deployment_is_taken_over_without_a_gap(agent, repo, namespace, cluster, objects,
                                                                    endpointslices):
    cluster.kubectl("-n", namespace, "apply", "-f", "-", input=application(namespace, adopt=False))
    before = made(objects, namespace, {"app": "web"}, owner=objects.app(namespace, "web"))
    sets = replica_sets(objects, namespace)
    repo.write("web.yaml", application(namespace, adopt=False))
    repo.commit("web into Git")
    with Serving(objects, namespace) as serving:
        proc = agent.sync(repo.path, "--namespace", namespace)
        assert proc.returncode == 0, proc.stderr
        assert (f"Deployment/{namespace}/web adopted (its controller ownerReference names this Application; kept its "
                "selector app=web (immutable), so one rolling update replaces its pods") in proc.stdout
        wait_for(lambda: rolled_out(objects, namespace) and len(replica_sets(objects, namespace) - sets) == 1,
                 timeout=120, what="the rolling update")
        time.sleep(1)  # the last old pod's endpoint leaves
        # a fast take-over can end within 20 readings: read on until there are more (still no gap allowed)
        wait_for(lambda: len(serving.readings) > 20, timeout=30, what="more than 20 readings of the Service")
    assert_taken_over(objects, namespace, before, serving, sets, {"app": "web"})
    [event] = [e for e in objects.events(namespace) if e["reason"] == "Adopted"]
    assert "kept its selector app=web (immutable)" in event["message"]
    shown = agent.run([sys.executable, "-m", "agent", "explain", "web", "-n", namespace, "--kubeconfig",
                       str(agent.kubeconfig), "--cache-dir", str(agent.cache_dir)])
    assert "keeps selector app=web" in shown.stdout, shown.stdout + shown.stderr
    assert "Drift" not in shown.stdout, shown.stdout
    written = api_writes(cluster)
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert_quiet(proc, written, api_writes(cluster))


def without_argo_crd(cluster, argocd: str) -> None:
    """Remove the Argo CD CRD from the worker's shared control plane, and kubectl's record of it:
    with either, ``kubectl ... application`` names Argo CD's kind (its group sorts first), and later
    tests' hand edits miss."""
    cluster.kubectl("-n", argocd, "patch", "applications.argoproj.io", "web", "--type", "merge",
                    "-p", '{"metadata": {"finalizers": null}}', check=False)
    cluster.kubectl("delete", "crd", ARGO_CRD["metadata"]["name"], "--ignore-not-found", "--wait=true",
                    "--timeout=60s", check=False)
    cluster.forget_discovery()


@pytest.mark.parametrize("section", ["From Argo CD", "Hand-made objects"])
def test_the_guides_take_over_of_an_argo_cd_or_hand_made_deployment_keeps_serving(
        section, agent, repo, namespace, namespaces, cluster, objects, endpointslices, request):
    values = {"REPO": str(repo.path), "NAMESPACE": namespace, "NAME": "web"}
    labels = {"app": "web"}
    if section == "From Argo CD":
        argocd = values["ARGOCD_NAMESPACE"] = namespaces("argocd")
        request.addfinalizer(lambda: without_argo_crd(cluster, argocd))
        cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(ARGO_CRD))
        wait_for(lambda: cluster.kubectl("get", "applications.argoproj.io", "-A", check=False).returncode == 0,
                 timeout=30, what="the Argo CD CRD")
        cluster.kubectl("-n", argocd, "apply", "-f", "-", input=yaml.safe_dump({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": "web", "finalizers": ["resources-finalizer.argocd.argoproj.io"]},
            "spec": {"destination": {"namespace": namespace}}}))
        labels = HELM
        before = made(objects, namespace, labels, {"argocd.argoproj.io/tracking-id": f"web-prod:apps/Deployment:{namespace}/web"})
    else:
        before = made(objects, namespace, labels)
    steps = guide_steps(section)
    assert sorted(steps) == [1, 2, 3, 4] and all(steps[n] for n in (2, 3, 4)), steps
    if section == "From Argo CD":
        run_step(1, values, agent, cluster, section=section)
        assert cluster.kubectl("-n", values["ARGOCD_NAMESPACE"], "get", "applications.argoproj.io",
                               check=False).stdout.strip() == ""
    repo.write("web.yaml", application(namespace, adopt=True))
    repo.commit("web into Git, adopted")
    sets = replica_sets(objects, namespace)
    [preview] = run_step(2, values, agent, cluster, section=section)
    assert f"Deployment/{namespace}/web adopt (" in preview.stdout, preview.stdout + preview.stderr
    with Serving(objects, namespace) as serving:
        [proc] = run_step(3, values, agent, cluster, section=section)
        assert proc.returncode == 0, proc.stderr
        assert "kept its selector" in proc.stdout
        wait_for(lambda: rolled_out(objects, namespace) and len(replica_sets(objects, namespace) - sets) == 1,
                 timeout=120, what="the rolling update")
        written = api_writes(cluster)
        status, proc = run_step(4, values, agent, cluster, section=section)
        time.sleep(1)
    assert_taken_over(objects, namespace, before, serving, sets, labels)
    assert "successfully rolled out" in status.stdout
    assert_quiet(proc, written, api_writes(cluster))
