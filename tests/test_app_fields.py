"""The Application's optional fields against the real control plane: each rendered and applied;
each change and removal converged in one pass, then a pass that writes nothing; a config file's
edit rolls the pods; replicas left to an autoscaler; an Application that drops its Ingress keeps
the rest; a worker (no port) has no Service until Git gives it one, and loses it with the port; a
stranger in a child's slot never touched; hostile values refused by name; and an upgrade from the
agent before these fields restarts nothing."""

from __future__ import annotations

import copy
import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from tests.support import ORIGINAL_APPLICATION, Agent, api_writes, new_writes, wait_for

pytestmark = pytest.mark.usefixtures("crd")
ROOT = Path(__file__).resolve().parent.parent
BEFORE_FIELDS = "ac258b8"
"""The last commit of the agent before the optional fields: what an upgrade starts from."""
RESOURCES = ("applications", "deployments", "services", "configmaps", "ingresses", "horizontalpodautoscalers")

SHOP = {
    "image": "nginx:1.27", "port": 8080,
    "command": ["nginx"], "args": ["-g", "daemon off;"],
    "env": {"LOG_LEVEL": "info", "DB_PASSWORD": {"secretKeyRef": {"name": "db", "key": "password"}},
            "FEATURES": {"configMapKeyRef": {"name": "flags", "key": "all"}}},
    "envFrom": [{"configMapRef": {"name": "common"}}],
    "resources": {"requests": {"cpu": "0.25", "memory": "128Mi"}, "limits": {"memory": "1024Mi"}},
    "readinessProbe": {"httpGet": {"path": "/ready"}, "periodSeconds": 5},
    "livenessProbe": {"tcpSocket": {"port": "http"}, "failureThreshold": 5},
    "files": {"/etc/shop/config.yaml": {"content": "greeting: hello\n"},
              "/etc/shop/token": {"secretRef": {"name": "db", "key": "token"}}},
    "serviceAccountName": "default", "imagePullSecrets": ["regcred"],
    "podAnnotations": {"prometheus.io/scrape": "true"}, "podLabels": {"tier": "web"},
    "rollout": {"maxSurge": 1, "maxUnavailable": 0, "progressDeadlineSeconds": 120},
    "ingress": {"host": "shop.example.com", "tlsSecretName": "shop-tls",
                "annotations": {"nginx.ingress.kubernetes.io/proxy-body-size": "8m"}},
    "autoscaling": {"minReplicas": 2, "maxReplicas": 5, "targetCPUUtilizationPercentage": 70},
}


def write(repo, spec: dict, name: str = "shop") -> str:
    repo.write(f"{name}.yaml", yaml.safe_dump({"apiVersion": "heumsi.github.io/v1", "kind": "Application",
                                              "metadata": {"name": name}, "spec": spec}, sort_keys=False))
    return repo.commit()


def get(cluster, namespace: str, kind: str, name: str = "shop") -> dict | None:
    proc = cluster.kubectl("-n", namespace, "get", kind, name, "-o", "json", "--show-managed-fields", check=False)
    return json.loads(proc.stdout) if proc.returncode == 0 else None


def sync(agent, repo, namespace, *args):
    proc = agent.sync(repo.path, "--namespace", namespace, *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def container(cluster, namespace, name: str = "shop"):
    return get(cluster, namespace, "deployment", name)["spec"]["template"]["spec"]["containers"][0]


def quiet(agent, repo, namespace, cluster):
    """The next pass reports nothing configured and sends no write the agent makes (status and
    scale subresources are controllers' too: the autoscaler scales through ``scale``), and records
    no Event (controllers record theirs: only the agent's are counted)."""
    events = len(agent_events(cluster, namespace))
    before = api_writes(cluster, resources=RESOURCES)
    proc = agent.sync(repo.path, "--namespace", namespace, "--exit-code")
    after = api_writes(cluster, resources=RESOURCES)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert " 0 created, 0 configured," in proc.stdout and " 0 pruned, 0 failed" in proc.stdout, proc.stdout
    writes = {k: v for k, v in new_writes(before, after).items() if k[2] not in ("status", "scale")}
    assert writes == {}, f"the pass after a converging one wrote: {writes}"
    assert len(agent_events(cluster, namespace)) == events


def agent_events(cluster, namespace):
    found = json.loads(cluster.kubectl("-n", namespace, "get", "events", "-o", "json").stdout)["items"]
    return [e for e in found if (e.get("source") or {}).get("component") == "gitops-agent"]


def test_every_field_is_rendered_and_applied_then_the_next_pass_writes_nothing(agent, repo, namespace, cluster):
    write(repo, SHOP)
    out = sync(agent, repo, namespace).stdout
    for kind in ("ConfigMap", "Deployment", "Service", "Ingress", "HorizontalPodAutoscaler"):
        assert f"{kind}/{namespace}/shop created" in out
    c = container(cluster, namespace)
    assert (c["command"], c["args"]) == (["nginx"], ["-g", "daemon off;"])
    assert c["env"] == [{"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}},
                        {"name": "FEATURES", "valueFrom": {"configMapKeyRef": {"name": "flags", "key": "all"}}},
                        {"name": "LOG_LEVEL", "value": "info"}]
    assert c["envFrom"] == [{"configMapRef": {"name": "common"}}]
    assert c["resources"] == {"requests": {"cpu": "250m", "memory": "128Mi"}, "limits": {"memory": "1Gi"}}
    assert c["readinessProbe"]["httpGet"] == {"path": "/ready", "port": 8080, "scheme": "HTTP"}
    assert c["readinessProbe"]["periodSeconds"] == 5 and c["livenessProbe"]["tcpSocket"] == {"port": 8080}
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    assert set(mounts) == {"/etc/shop/config.yaml", "/etc/shop/token"}
    assert all(m["readOnly"] and m["subPath"] == "file" for m in mounts.values())
    deployment = get(cluster, namespace, "deployment")
    pod = deployment["spec"]["template"]
    assert pod["spec"]["serviceAccountName"] == "default" and pod["spec"]["imagePullSecrets"] == [{"name": "regcred"}]
    assert pod["metadata"]["labels"]["tier"] == "web"
    assert pod["metadata"]["annotations"]["prometheus.io/scrape"] == "true"
    assert "heumsi.github.io/files-digest" in pod["metadata"]["annotations"]
    assert deployment["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}
    assert deployment["spec"]["progressDeadlineSeconds"] == 120
    configmap = get(cluster, namespace, "configmap")
    assert list(configmap["data"].values()) == ["greeting: hello\n"]
    ingress = get(cluster, namespace, "ingress")
    assert ingress["spec"]["rules"][0]["host"] == "shop.example.com"
    assert ingress["spec"]["tls"] == [{"hosts": ["shop.example.com"], "secretName": "shop-tls"}]
    assert ingress["metadata"]["annotations"] == {"nginx.ingress.kubernetes.io/proxy-body-size": "8m"}
    hpa = get(cluster, namespace, "hpa")
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 5)
    for child in (configmap, deployment, ingress, hpa):
        [ref] = child["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["name"], ref["controller"]) == ("Application", "shop", True)
        assert child["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gitops-agent"
    # the autoscaler owns the replicas: it scales to its minimum, and that is no drift
    wait_for(lambda: get(cluster, namespace, "deployment")["spec"].get("replicas") == 2, timeout=90,
             what="the autoscaler to scale to minReplicas")
    status = get(cluster, namespace, "application")["status"]
    assert {status[k] for k in ("deployment", "service", "configMap", "ingress", "horizontalPodAutoscaler")} == {"shop"}
    # no metrics server here: once it has tried (it scales to minReplicas without metrics), the
    # autoscaler says it cannot read CPU use
    wait_for(lambda: any(c["type"] == "ScalingActive" and c["status"] == "False" for c in
                         get(cluster, namespace, "hpa")["status"].get("conditions") or []), timeout=90,
             what="the autoscaler to report it cannot read its metrics")
    quiet(agent, repo, namespace, cluster)
    # health: the autoscaler cannot read CPU use: Progressing within its
    # 120 s grace, Degraded after (Argo CD 3.5); it is the worst child (the Ingress, without an
    # address, is Progressing), named first on a tie
    health = get(cluster, namespace, "application")["status"]["health"]
    assert health["status"] in ("Progressing", "Degraded"), health
    assert health["message"].startswith("HorizontalPodAutoscaler: "), health
    assert "the HPA was unable to compute the replica count" in health["message"], health


CHANGES = [
    # (what changes in Git, the change, a check of the live objects after one pass)
    ("command removed", lambda s: s.pop("command"), lambda c, ns: "command" not in container(c, ns)),
    ("an env variable removed", lambda s: s["env"].pop("LOG_LEVEL"),
     lambda c, ns: [e["name"] for e in container(c, ns)["env"]] == ["DB_PASSWORD", "FEATURES"]),
    ("an env value changed", lambda s: s["env"].update(LOG_LEVEL="debug"),
     lambda c, ns: {"name": "LOG_LEVEL", "value": "debug"} in container(c, ns)["env"]),
    ("envFrom removed", lambda s: s.pop("envFrom"), lambda c, ns: "envFrom" not in container(c, ns)),
    ("a resource limit removed", lambda s: s["resources"].pop("limits"),
     lambda c, ns: container(c, ns)["resources"] == {"requests": {"cpu": "250m", "memory": "128Mi"}}),
    ("a probe's timing removed", lambda s: s["readinessProbe"].pop("periodSeconds"),
     lambda c, ns: container(c, ns)["readinessProbe"]["periodSeconds"] == 10),  # Kubernetes' default again
    ("the liveness probe removed", lambda s: s.pop("livenessProbe"),
     lambda c, ns: "livenessProbe" not in container(c, ns)),
    ("a pod annotation removed", lambda s: s.pop("podAnnotations"),
     lambda c, ns: "prometheus.io/scrape" not in get(c, ns, "deployment")["spec"]["template"]["metadata"]["annotations"]),
    ("the rollout removed", lambda s: s.pop("rollout"),
     lambda c, ns: get(c, ns, "deployment")["spec"]["progressDeadlineSeconds"] == 600),
    ("an Ingress annotation removed", lambda s: s["ingress"].pop("annotations"),
     lambda c, ns: not get(c, ns, "ingress")["metadata"].get("annotations")),
    ("the autoscaler's maximum changed", lambda s: s["autoscaling"].update(maxReplicas=7),
     lambda c, ns: get(c, ns, "hpa")["spec"]["maxReplicas"] == 7),
    ("the secret file removed", lambda s: s["files"].pop("/etc/shop/token"),
     lambda c, ns: [m["mountPath"] for m in container(c, ns)["volumeMounts"]] == ["/etc/shop/config.yaml"]),
]


def test_each_change_and_removal_converges_in_one_pass_then_the_next_writes_nothing(
        agent, repo, namespace, cluster):
    spec = copy.deepcopy(SHOP)
    write(repo, spec)
    sync(agent, repo, namespace)
    for what, change, check in CHANGES:
        change(spec)
        write(repo, spec)
        out = sync(agent, repo, namespace).stdout
        assert check(cluster, namespace), f"{what}: not converged in one pass\n{out}"
        quiet(agent, repo, namespace, cluster)


def test_a_config_file_edit_rolls_the_pods_and_removing_every_file_prunes_the_configmap(
        agent, repo, namespace, cluster):
    spec = copy.deepcopy(SHOP)
    write(repo, spec)
    sync(agent, repo, namespace)

    def replica_sets():
        found = json.loads(cluster.kubectl("-n", namespace, "get", "rs", "-o", "json").stdout)["items"]
        return {rs["metadata"]["name"] for rs in found}

    wait_for(lambda: len(replica_sets()) == 1, what="the first ReplicaSet")
    first = replica_sets()
    spec["files"]["/etc/shop/config.yaml"]["content"] = "greeting: bye\n"
    write(repo, spec)
    out = sync(agent, repo, namespace).stdout
    assert f"ConfigMap/{namespace}/shop configured" in out and f"Deployment/{namespace}/shop configured" in out
    assert list(get(cluster, namespace, "configmap")["data"].values()) == ["greeting: bye\n"]
    wait_for(lambda: len(replica_sets() - first) == 1, what="a new ReplicaSet for the new file")
    quiet(agent, repo, namespace, cluster)
    spec.pop("files")
    write(repo, spec)
    out = sync(agent, repo, namespace).stdout
    assert f"ConfigMap/{namespace}/shop pruned" in out
    assert get(cluster, namespace, "configmap") is None and "volumeMounts" not in container(cluster, namespace)
    assert "configMap" not in get(cluster, namespace, "application")["status"]
    quiet(agent, repo, namespace, cluster)


def test_dropping_the_ingress_removes_it_and_keeps_the_rest(agent, repo, namespace, cluster):
    spec = copy.deepcopy(SHOP)
    write(repo, spec)
    sync(agent, repo, namespace)
    uids = {kind: get(cluster, namespace, kind)["metadata"]["uid"] for kind in ("deployment", "service", "configmap",
                                                                              "hpa")}
    spec.pop("ingress")
    write(repo, spec)
    out = sync(agent, repo, namespace).stdout
    assert f"Ingress/{namespace}/shop pruned" in out
    assert get(cluster, namespace, "ingress") is None
    assert {kind: get(cluster, namespace, kind)["metadata"]["uid"] for kind in uids} == uids
    assert "ingress" not in get(cluster, namespace, "application")["status"]
    quiet(agent, repo, namespace, cluster)


def test_a_worker_has_no_service_until_git_gives_it_a_port_and_loses_it_with_the_port(agent, repo, namespace, cluster):
    worker = {"image": "nginx:1.27", "replicas": 1, "args": ["--queue", "orders"],
              "livenessProbe": {"exec": {"command": ["true"]}}}
    write(repo, worker, "jobs")
    out = sync(agent, repo, namespace, "--wait=2m").stdout  # 0: healthy without waiting for a Service
    assert f"Deployment/{namespace}/jobs created" in out and "Service/" not in out
    c = get(cluster, namespace, "deployment", "jobs")["spec"]["template"]["spec"]["containers"][0]
    assert "ports" not in c and c["livenessProbe"]["exec"] == {"command": ["true"]}
    assert get(cluster, namespace, "service", "jobs") is None
    status = get(cluster, namespace, "application", "jobs")["status"]
    assert "service" not in status and status["health"]["status"] == "Healthy", status
    for command in (["get", "-n", namespace], ["explain", "jobs", "-n", namespace, "--cache-dir", str(agent.cache_dir)]):
        proc = agent.run([sys.executable, "-m", "agent", *command, "--kubeconfig", str(agent.kubeconfig)])
        assert proc.returncode == 0 and "jobs" in proc.stdout, proc.stderr
    deployment = get(cluster, namespace, "deployment", "jobs")["metadata"]["uid"]
    write(repo, {**worker, "port": 8080}, "jobs")
    out = sync(agent, repo, namespace).stdout
    assert f"Service/{namespace}/jobs created" in out
    assert get(cluster, namespace, "service", "jobs")["spec"]["ports"] == [
        {"name": "http", "protocol": "TCP", "port": 8080, "targetPort": 8080}]
    assert container(cluster, namespace, "jobs")["ports"] == [{"containerPort": 8080, "protocol": "TCP"}]
    assert get(cluster, namespace, "application", "jobs")["status"]["service"] == "jobs"
    write(repo, worker, "jobs")
    proc = agent.run([sys.executable, "-m", "agent", "diff", "--repo", str(repo.path), "--kubeconfig",
                      str(agent.kubeconfig), "--cache-dir", str(agent.cache_dir), "--namespace", namespace])
    assert proc.returncode == 1 and f"Service/{namespace}/jobs" in proc.stdout, proc.stderr
    out = sync(agent, repo, namespace).stdout
    assert f"Service/{namespace}/jobs pruned" in out
    wait_for(lambda: get(cluster, namespace, "service", "jobs") is None, what="the Service pruned")
    assert get(cluster, namespace, "deployment", "jobs")["metadata"]["uid"] == deployment  # kept
    assert "ports" not in container(cluster, namespace, "jobs")
    assert "service" not in get(cluster, namespace, "application", "jobs")["status"]
    quiet(agent, repo, namespace, cluster)


def test_an_autoscaler_without_metrics_reads_degraded_after_its_grace(agent, repo, namespace, cluster):
    """No metrics server here: the autoscaler cannot read CPU use. Within the 120 s grace (metrics
    lag new pods) the Application is Progressing, naming the failure; after it, Degraded (Argo CD
    3.5: the failing condition wins over AbleToScale=True). Each pass reads it again."""
    write(repo, {"image": "nginx:1.27", "port": 8080,
                 "autoscaling": {"maxReplicas": 3, "targetCPUUtilizationPercentage": 70}})
    sync(agent, repo, namespace)
    wait_for(lambda: any(c["type"] == "ScalingActive" and c["status"] == "False" for c in
                         get(cluster, namespace, "hpa")["status"].get("conditions") or []), timeout=90,
             what="the autoscaler to report it cannot read its metrics")
    sync(agent, repo, namespace)
    health = get(cluster, namespace, "application")["status"]["health"]
    assert health["status"] == "Progressing" and health["message"].startswith(
        "HorizontalPodAutoscaler: metrics not read yet (FailedGetResourceMetric; Degraded if it lasts 120 s"), health

    def degraded():
        sync(agent, repo, namespace)
        return get(cluster, namespace, "application")["status"]["health"]["status"] == "Degraded"
    wait_for(degraded, timeout=180, interval=5, what="the grace to end")
    health = get(cluster, namespace, "application")["status"]["health"]
    assert health["message"].startswith("HorizontalPodAutoscaler: the HPA was unable to compute the replica count: "
                                        "failed to get cpu utilization"), health


def test_replicas_go_to_the_autoscaler_and_come_back_to_git(agent, repo, namespace, cluster):
    spec = copy.deepcopy(SHOP)
    spec.pop("autoscaling")
    spec["replicas"] = 3
    write(repo, spec)
    sync(agent, repo, namespace)
    assert get(cluster, namespace, "deployment")["spec"]["replicas"] == 3
    spec.pop("replicas")
    spec["autoscaling"] = {"minReplicas": 1, "maxReplicas": 5, "targetCPUUtilizationPercentage": 70}
    write(repo, spec)
    generation = get(cluster, namespace, "deployment")["metadata"]["generation"]
    sync(agent, repo, namespace)
    live = get(cluster, namespace, "deployment")
    assert live["spec"]["replicas"] == 3 and live["metadata"]["generation"] == generation  # let go of, kept
    ours = next(e for e in live["metadata"]["managedFields"] if e["manager"] == "gitops-agent"
                and e["operation"] == "Apply")
    assert "f:replicas" not in ours["fieldsV1"]["f:spec"]
    cluster.kubectl("-n", namespace, "scale", "deployment/shop", "--replicas=4")  # a person or the autoscaler
    quiet(agent, repo, namespace, cluster)
    assert get(cluster, namespace, "deployment")["spec"]["replicas"] == 4
    spec.pop("autoscaling")
    spec["replicas"] = 2
    write(repo, spec)
    out = sync(agent, repo, namespace).stdout
    assert f"HorizontalPodAutoscaler/{namespace}/shop pruned" in out
    assert get(cluster, namespace, "deployment")["spec"]["replicas"] == 2  # Git takes the field again
    cluster.kubectl("-n", namespace, "scale", "deployment/shop", "--replicas=5")
    sync(agent, repo, namespace)
    assert get(cluster, namespace, "deployment")["spec"]["replicas"] == 2  # and corrects a hand edit
    quiet(agent, repo, namespace, cluster)


def test_replicas_left_out_are_nobodys_until_someone_scales(agent, repo, namespace, cluster):
    write(repo, {"image": "nginx:1.27", "port": 80})
    sync(agent, repo, namespace)
    assert get(cluster, namespace, "deployment")["spec"]["replicas"] == 1  # the API server's default
    cluster.kubectl("-n", namespace, "scale", "deployment/shop", "--replicas=3")
    quiet(agent, repo, namespace, cluster)
    assert get(cluster, namespace, "deployment")["spec"]["replicas"] == 3


def test_a_stranger_in_a_childs_slot_is_never_touched(agent, repo, namespace, cluster, tmp_path):
    stranger = tmp_path / "ingress.yaml"
    stranger.write_text(yaml.safe_dump({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": "shop", "namespace": namespace, "labels": {"app.kubernetes.io/managed-by": "gitops-agent"}},
        "spec": {"rules": [{"host": "other.example.com", "http": {"paths": [{
            "path": "/", "pathType": "Prefix", "backend": {"service": {"name": "other", "port": {"number": 80}}}}]}}]}}))
    cluster.kubectl("apply", "-f", str(stranger))
    before = get(cluster, namespace, "ingress")
    write(repo, SHOP)
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode != 0
    assert f"Ingress/{namespace}/shop" in proc.stdout + proc.stderr
    after = get(cluster, namespace, "ingress")
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    conditions = {c["type"]: c for c in get(cluster, namespace, "application")["status"]["conditions"]}
    assert conditions["Ready"]["reason"] == "OwnershipConflict"
    spec = copy.deepcopy(SHOP)
    spec.pop("ingress")
    write(repo, spec)
    sync(agent, repo, namespace)  # Git no longer wants an Ingress: the stranger is not pruned either
    assert get(cluster, namespace, "ingress")["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


HOSTILE = [  # (lines added to the seed's Application from line 9, the line named, the field, its rule)
    ("env:\n    1BAD: x", 10, "spec.env.1BAD", "the name must be a C identifier"),
    ("resources:\n    requests: {cpu: 1x}", 10, "spec.resources.requests.cpu", "must be a quantity such as 500m"),
    ("resources:\n    requests: {memory: 2Gi}\n    limits: {memory: 1Gi}", 10, "spec.resources.requests.memory",
     "must be at most the limit resources.limits.memory"),
    ("readinessProbe:\n    httpGet: {port: 9090}", 10, "spec.readinessProbe.httpGet.port",
     "must be the Application's port (80) or its name http (got 9090)"),
    ("autoscaling: {maxReplicas: 3, targetCPUUtilizationPercentage: 50}", 7, "spec.replicas",
     "must not be given together with spec.autoscaling"),
    ("files:\n    etc/passwd: {content: x}", 10, "spec.files.etc/passwd", "the path must be an absolute path"),
    ("files:\n    /etc/../root: {content: x}", 10, "spec.files./etc/../root", "the path must not hold a . or .. segment"),
    ("podLabels: {heumsi.github.io/application: other}", 9, "spec.podLabels.heumsi.github.io/application",
     "is one of the agent's own pod labels"),
    ("env:\n    DB: {secretKeyRef: {name: ../etc, key: k}}", 10, "spec.env.DB.secretKeyRef.name",
     "must be a DNS-1123 subdomain"),
    ("ingress: {host: 'evil host'}", 9, "spec.ingress.host", "must be a host name"),
    ("ingress: {path: /a/../b}", 9, "spec.ingress.path", "must not hold //, /./, /../ or %2f"),
]


@pytest.mark.parametrize("extra, line, field, rule", HOSTILE, ids=[h[2] for h in HOSTILE])
def test_hostile_and_wrong_values_are_refused_by_name(extra, line, field, rule, agent, repo, namespace, cluster):
    text = ORIGINAL_APPLICATION + "  " + extra + "\n"
    repo.write("app.yaml", text)
    repo.commit()
    proc = agent.run([sys.executable, "-m", "agent", "validate", "--path", str(repo.path)])
    assert proc.returncode == 2
    assert f"app.yaml:{line}: {field}: {rule}" in proc.stdout + proc.stderr
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 2 and f"app.yaml:{line}: {field}: {rule}" in proc.stdout + proc.stderr
    assert get(cluster, namespace, "deployment", "nginx") is None


def _old_agent(tmp_path) -> Path:
    """The agent as of ``BEFORE_FIELDS``, unpacked from this repository's history."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a Git checkout: the agent before the fields cannot be unpacked")
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", BEFORE_FIELDS, "agent"], capture_output=True)
    if archive.returncode != 0:
        pytest.skip(f"commit {BEFORE_FIELDS} is not in this checkout's history")
    target = tmp_path / "old"
    target.mkdir()
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(target, filter="data")
    return target


def test_an_upgrade_from_the_agent_before_these_fields_writes_nothing(cluster, repo, namespace, objects, tmp_path):
    repo.write("application.yaml", ORIGINAL_APPLICATION)
    repo.commit()
    old = Agent(kubeconfig=cluster.kubeconfig, cache_dir=tmp_path / "cache", cwd=_old_agent(tmp_path))
    proc = old.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wait_for(lambda: (objects.deployment(namespace, "nginx").get("status") or {}).get("readyReplicas") == 1,
             timeout=90, what="the pod to be ready")
    proc = old.sync(repo.path, "--namespace", namespace)  # its status with the ready pod
    assert proc.returncode == 0
    pods = cluster.kubectl("-n", namespace, "get", "pods", "-o", "name").stdout.split()
    new = Agent(kubeconfig=cluster.kubeconfig, cache_dir=tmp_path / "cache", cwd=ROOT)
    before = api_writes(cluster, resources=RESOURCES + ("events",))
    proc = new.sync(repo.path, "--namespace", namespace, "--exit-code")
    after = api_writes(cluster, resources=RESOURCES + ("events",))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 created, 0 configured, 3 unchanged, 0 pruned, 0 failed" in proc.stdout
    assert new_writes(before, after) == {}, "the new agent wrote to what the old one synced"
    assert cluster.kubectl("-n", namespace, "get", "pods", "-o", "name").stdout.split() == pods


def test_a_suspended_application_keeps_the_ingress_git_dropped_until_it_resumes(agent, repo, namespace, cluster):
    spec = copy.deepcopy(SHOP)
    write(repo, spec)
    sync(agent, repo, namespace)
    spec.pop("ingress")
    spec["suspend"] = True
    write(repo, spec)
    out = agent.sync(repo.path, "--namespace", namespace).stdout
    assert f"Ingress/{namespace}/shop suspended" in out, out
    assert get(cluster, namespace, "ingress") is not None
    spec.pop("suspend")
    write(repo, spec)
    out = sync(agent, repo, namespace).stdout
    assert f"Ingress/{namespace}/shop pruned" in out and get(cluster, namespace, "ingress") is None
