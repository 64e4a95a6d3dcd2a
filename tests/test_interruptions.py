"""Passes cut short: the API server unreachable mid-pass (a TCP fault proxy in front of it) and
the agent killed with SIGKILL mid-pass. The next pass must converge with nothing lost or doubled."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.proxy import FaultProxy
from tests.support import app_yaml, wait_for

pytestmark = pytest.mark.usefixtures("crd")
ROOT = Path(__file__).resolve().parent.parent
APPS = 12


@pytest.fixture
def proxy(cluster, tmp_path):
    port = int(cluster.server.rsplit(":", 1)[1])
    fault = FaultProxy(port)
    fault.config = fault.kubeconfig(cluster.kubeconfig, tmp_path / "proxied-kubeconfig")
    yield fault
    fault.close()


def many_apps(repo, count=APPS, image="nginx:1"):
    for i in range(count):
        repo.write(f"apps/app{i}.yaml", app_yaml(f"app{i}", image=image))


def snapshot(objects, namespace: str) -> dict:
    """What a converged namespace looks like, without times, UIDs and versions."""
    out = {}
    for app in objects.custom.list_namespaced_custom_object("heumsi.github.io", "v1", namespace, "applications")["items"]:
        status = app.get("status", {})
        out[f"Application/{app['metadata']['name']}"] = (
            app["spec"], status.get("lastSyncedCommit"), status.get("lastAttemptedCommit"),
            tuple((c["type"], c["status"], c["reason"]) for c in status.get("conditions", [])
                  if c["type"] not in ("Ready", "Reconciling")))  # these depend on how fast pods start
    for d in objects.apps.list_namespaced_deployment(namespace).items:
        out[f"Deployment/{d.metadata.name}"] = (d.spec.replicas, d.spec.template.spec.containers[0].image,
                                                len(d.metadata.owner_references or []))
    for s in objects.core.list_namespaced_service(namespace).items:
        out[f"Service/{s.metadata.name}"] = (s.spec.ports[0].port, len(s.metadata.owner_references or []))
    return out


def sync_via(agent, repo, namespace, kubeconfig, *args):
    cmd = [sys.executable, "-m", "agent", "sync", "--once", "--repo", str(repo.path), "--kubeconfig",
           str(kubeconfig), "--cache-dir", str(agent.cache_dir), "--namespace", namespace, *args]
    return agent.run(cmd, timeout=120)


def test_api_server_dropping_connections_briefly_is_retried(agent, repo, namespace, objects, proxy):
    many_apps(repo)
    head = repo.commit()
    proxy.cut_after_first_connection(delay=0.4, duration=2.0)
    proc = sync_via(agent, repo, namespace, proxy.config)
    assert proc.returncode == 0, proc.stderr
    for i in range(APPS):
        app, deployment, service = objects.trio(namespace, f"app{i}")
        assert app["status"]["lastSyncedCommit"] == head and deployment and service


def test_api_server_gone_mid_pass_prunes_nothing_advances_nothing_then_converges(agent, repo, namespace,
                                                                                 objects, proxy, cluster):
    many_apps(repo)
    first = repo.commit()
    assert agent.sync(repo.path, "--namespace", namespace).returncode == 0
    before_uids = {i: objects.app(namespace, f"app{i}")["metadata"]["uid"] for i in range(APPS)}
    many_apps(repo, APPS, image="nginx:2")
    repo.remove("apps/app0.yaml")  # would be pruned by a complete pass
    second = repo.commit("bump and remove app0")
    proxy.cut_after_first_connection(delay=0.3, duration=None)
    proc = sync_via(agent, repo, namespace, proxy.config, "--api-retry-seconds", "2")
    assert proc.returncode == 2
    assert "Unreachable" in proc.stderr and "the pass stopped" in proc.stderr
    assert all(objects.trio(namespace, "app0")) and objects.app(namespace, "app0")["metadata"]["uid"] == before_uids[0]
    for i in range(1, APPS):  # no status advanced to the commit of the cut pass
        assert objects.app(namespace, f"app{i}")["status"]["lastSyncedCommit"] == first
    proxy.restore()
    assert sync_via(agent, repo, namespace, proxy.config).returncode == 0
    state = snapshot(objects, namespace)
    assert "Application/app0" not in state and "Deployment/app0" not in state
    for i in range(1, APPS):
        assert state[f"Application/app{i}"][1] == second
        assert state[f"Deployment/app{i}"] == (1, "nginx:2", 1)
    assert len([k for k in state if k.startswith("Deployment/")]) == APPS - 1  # nothing doubled


def test_kill_9_mid_pass_then_a_normal_run_converges_to_the_uninterrupted_end_state(agent, repo, namespace,
                                                                                    objects, cluster):
    many_apps(repo)
    repo.commit()
    assert agent.sync(repo.path, "--namespace", namespace).returncode == 0  # uninterrupted
    reference = snapshot(objects, namespace)
    assert len(reference) == 3 * APPS
    cluster.kubectl("-n", namespace, "delete", "app,deploy,svc", "--all", "--wait=true", "--timeout=60s")
    cmd = [sys.executable, "-m", "agent", "sync", "--once", "--repo", str(repo.path), "--kubeconfig",
           str(cluster.kubeconfig), "--cache-dir", str(agent.cache_dir), "--namespace", namespace]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: objects.deployment(namespace, "app0") is not None or proc.poll() is not None,
             timeout=60, interval=0.02, what="the pass to be under way")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL  # it really was cut short
    assert len(snapshot(objects, namespace)) < 3 * APPS or not all(
        v[1] for k, v in snapshot(objects, namespace).items() if k.startswith("Application/"))
    assert agent.sync(repo.path, "--namespace", namespace).returncode == 0
    assert snapshot(objects, namespace) == reference
