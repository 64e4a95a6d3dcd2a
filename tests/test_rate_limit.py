"""The client-side rate limit, measured by the API server: with --kube-api-qps 5 and
--kube-api-burst 5 a cold pass of many Applications sends its requests no faster than the limit
allows (counted from the API server's own apiserver_request_total, not from the agent), and
therefore takes at least the time the limit implies; ``run`` reports the time spent waiting."""

from __future__ import annotations

import re
import time

import pytest

from agent.kube.client import Kube
from tests.support import api_writes, app_yaml, new_writes, wait_for
from tests.test_run import start_agent  # noqa: F401 (fixture)

pytestmark = pytest.mark.usefixtures("crd")
QPS, BURST, APPS = 5, 5, 12


def agents_requests(delta: dict) -> int:
    """Requests in ``delta`` that only the agent sends: server-side applies of Applications,
    Deployments and Services, and Application status patches (controllers update, never apply)."""
    return int(sum(n for (verb, resource, sub), n in delta.items()
                   if verb == "APPLY" or (resource == "applications" and verb == "PATCH" and sub == "status")))


def test_requests_per_second_stay_under_the_limit(agent, repo, namespace, objects, cluster):
    for i in range(APPS):
        repo.write(f"app{i}.yaml", app_yaml(f"app{i}", replicas=0))
    repo.commit()
    before = api_writes(cluster)
    started = time.monotonic()
    proc = agent.sync(repo.path, "--namespace", namespace, "--kube-api-qps", str(QPS), "--kube-api-burst",
                      str(BURST), "--concurrency", "16", timeout=300)
    seconds = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    sent = agents_requests(new_writes(before, api_writes(cluster)))
    assert sent == 4 * APPS  # three applies and one status write per Application
    assert sent <= BURST + QPS * seconds, f"{sent} requests in {seconds:.1f}s"
    assert seconds >= (sent - BURST) / QPS, f"{sent} requests in {seconds:.1f}s: faster than the limit"
    for i in range(APPS):
        assert objects.app(namespace, f"app{i}")["status"]["lastSyncedCommit"] == repo.head()


def test_run_reports_the_time_spent_waiting(start_agent, repo, namespace, objects):  # noqa: F811
    for i in range(APPS):
        repo.write(f"app{i}.yaml", app_yaml(f"app{i}", replicas=0))
    repo.commit()
    agent = start_agent(str(repo.path), "--namespace", namespace, "--kube-api-qps", "5", "--kube-api-burst", "1")
    wait_for(lambda: (objects.app(namespace, f"app{APPS - 1}") or {}).get("status"), timeout=180,
             what="the first pass")

    def waited():
        text = agent.get("/metrics")[1]
        match = re.search(r"^gitops_agent_kube_api_rate_limit_wait_seconds_sum (\S+)$", text, re.M)
        return match and float(match.group(1)) > 1.0

    wait_for(waited, timeout=60, what="the rate limit's wait in /metrics")


LIFTED = "the API server has API Priority and Fairness: no client-side rate limit"


def test_with_no_limit_set_the_servers_priority_and_fairness_lifts_it(agent, repo, namespace, cluster):
    """The local API server has API Priority and Fairness (on by default since Kubernetes 1.20):
    with neither --kube-api-qps nor --kube-api-burst the first answer lifts the limit, as in
    Flux; one set by flag or variable holds."""
    kube = Kube(str(cluster.kubeconfig))
    assert kube.limit_auto and not kube.limiter.lifted
    kube.list("", "Namespace")
    assert kube.limiter.lifted and not kube.limit_auto
    repo.write("web.yaml", app_yaml("web", replicas=0))
    repo.commit()
    proc = agent.sync(repo.path, "--namespace", namespace, "--log-level", "INFO")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count(LIFTED) == 1
    for how in (["--kube-api-qps", "50"], ["--kube-api-burst", "300"]):
        proc = agent.sync(repo.path, "--namespace", namespace, "--log-level", "INFO", *how)
        assert proc.returncode == 0 and LIFTED not in proc.stderr, proc.stderr
    proc = agent.sync(repo.path, "--namespace", namespace, "--log-level", "INFO", env={"GITOPS_AGENT_KUBE_API_QPS": "50"})
    assert proc.returncode == 0 and LIFTED not in proc.stderr, proc.stderr
