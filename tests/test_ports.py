"""spec.ports and spec.startupProbe against the real control plane (issue 44 item 5): an
Application with a metrics port and a startupProbe syncs; its container has both ports and the
probe (the port a probe names rendered as its number), its Service both ports with their
targetPorts, its pods become Ready (kwok); drift on the Service's metrics port is undone by the
next pass; a worker with only a metrics port has a Service of that port alone."""

from __future__ import annotations

import json

import pytest
import yaml

pytestmark = pytest.mark.usefixtures("crd")

SPEC = {"image": "nginx:1.27", "replicas": 1, "port": 8080, "ports": {"metrics": 9090},
        "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}},
        "startupProbe": {"httpGet": {"path": "/metrics", "port": "metrics"}, "periodSeconds": 2,
                         "failureThreshold": 30}}
PORTS = [{"name": "http", "protocol": "TCP", "port": 8080, "targetPort": 8080},
         {"name": "metrics", "protocol": "TCP", "port": 9090, "targetPort": 9090}]


def app(name: str, spec: dict) -> str:
    return yaml.safe_dump({"apiVersion": "heumsi.github.io/v1", "kind": "Application", "metadata": {"name": name},
                           "spec": spec}, sort_keys=False)


def service_ports(objects, namespace: str, name: str) -> list[dict]:
    return objects.service(namespace, name)["spec"]["ports"]


def test_a_metrics_port_and_a_startup_probe_sync_and_drift_on_the_port_is_undone(agent, repo, namespace, objects,
                                                                                  cluster):
    repo.write("web.yaml", app("web", SPEC))
    repo.commit()
    proc = agent.sync(repo.path, "--namespace", namespace, "--wait=2m")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    deployment = objects.deployment(namespace, "web")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["ports"] == [{"containerPort": 8080, "protocol": "TCP"},
                                  {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}]
    assert container["readinessProbe"]["httpGet"]["port"] == 8080
    startup = container["startupProbe"]
    assert startup["httpGet"] == {"path": "/metrics", "port": 9090, "scheme": "HTTP"}
    assert (startup["periodSeconds"], startup["failureThreshold"]) == (2, 30)
    assert service_ports(objects, namespace, "web") == PORTS
    # --wait waited for the Application to be Healthy: the pod is Ready
    assert deployment["status"]["readyReplicas"] == 1
    [pod] = objects.core.list_namespaced_pod(namespace, label_selector="heumsi.github.io/application=web").items
    assert [c.type for c in pod.status.conditions if c.type == "Ready" and c.status == "True"] == ["Ready"]
    assert objects.app(namespace, "web")["status"]["health"]["status"] == "Healthy"

    # drift: the metrics port sent elsewhere by hand; one pass puts it back
    patch = [{"op": "replace", "path": "/spec/ports/1/targetPort", "value": 9999}]
    cluster.kubectl("-n", namespace, "patch", "service", "web", "--type=json", "-p", json.dumps(patch))
    assert service_ports(objects, namespace, "web")[1]["targetPort"] == 9999
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"Service/{namespace}/web configured" in proc.stdout
    assert service_ports(objects, namespace, "web") == PORTS
    assert "0 configured" in agent.sync(repo.path, "--namespace", namespace).stdout


def test_a_worker_with_a_metrics_port_has_a_service_of_that_port_alone(agent, repo, namespace, objects):
    spec = {"image": "nginx:1.27", "replicas": 1, "ports": {"metrics": 9100},
            "livenessProbe": {"tcpSocket": {"port": 9100}}}
    repo.write("jobs.yaml", app("jobs", spec))
    repo.commit()
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [container] = objects.deployment(namespace, "jobs")["spec"]["template"]["spec"]["containers"]
    assert container["ports"] == [{"name": "metrics", "containerPort": 9100, "protocol": "TCP"}]
    assert container["livenessProbe"]["tcpSocket"] == {"port": 9100}
    assert service_ports(objects, namespace, "jobs") == [
        {"name": "metrics", "protocol": "TCP", "port": 9100, "targetPort": 9100}]
    # the metrics port dropped from Git: a worker again, its Service pruned
    repo.write("jobs.yaml", app("jobs", {"image": "nginx:1.27", "replicas": 1}))
    repo.commit()
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"Service/{namespace}/jobs pruned" in proc.stdout
    assert objects.service(namespace, "jobs") is None
    assert "ports" not in objects.deployment(namespace, "jobs")["spec"]["template"]["spec"]["containers"][0]
