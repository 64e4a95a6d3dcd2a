"""What starts a pass of ``python -m agent run`` (long ``--interval``, watches on), counted from
``gitops_agent_passes_total``: after start-up exactly one pass runs until something changes (the
watches' first lists and the agent's own applies, status writes and prunes start none), and one
sync-now request is exactly one more pass, also when that pass applies a new commit and prunes.
Genuine changes still start a pass: ``tests/test_run.py`` recreates a hand-deleted child."""

from __future__ import annotations

import time

import pytest
import yaml

from tests.support import app_yaml, json_lines, wait_for
from tests.test_reconcile_request import reconcile
from tests.test_run import remote, start_agent  # noqa: F401 (fixtures)
from tests.test_webhook import passes

pytestmark = pytest.mark.usefixtures("crd")
NAMES = ("web", "db", "cache")
QUIET = 5  # seconds in which a pass started by the agent's own writes would have run


def rolled_out(objects, namespace, names) -> bool:
    for name in names:
        status = (objects.deployment(namespace, name) or {}).get("status") or {}
        if status.get("readyReplicas") != 1 or status.get("availableReplicas") != 1:
            return False
    return True


def test_one_pass_after_start_and_one_per_reconcile_request(start_agent, agent, repo, remote, namespace,  # noqa: F811
                                                           objects):
    for name in NAMES:
        repo.write(f"{name}.yaml", app_yaml(name))
    remote.push()
    assert agent.sync(remote.url, "--namespace", namespace).returncode == 0
    # the rollouts finish first: a Deployment becoming ready is a change the status reports
    wait_for(lambda: rolled_out(objects, namespace, NAMES), timeout=120, what="the rollouts")
    running = start_agent(remote.url, "--interval", "300", "--namespace", namespace)
    wait_for(lambda: passes(running) >= 1, timeout=60, what="the first pass")
    wait_for(lambda: all(objects.app(namespace, n)["status"].get("readyReplicas") == 1 for n in NAMES),
             timeout=30, what="the first pass to record the ready replicas")  # its own status writes
    time.sleep(QUIET)
    assert passes(running) == 1, running.output()

    doc = yaml.safe_load(app_yaml("web"))
    doc["metadata"]["labels"] = {"team": "shop"}
    repo.write("web.yaml", yaml.safe_dump(doc))
    repo.remove("cache.yaml")  # the pass prunes cache: its own deletions are not news either
    head = remote.push()
    proc = reconcile(agent, "web", namespace, "--wait", "--timeout", "60")
    assert proc.returncode == 0, proc.stderr
    time.sleep(QUIET)
    assert passes(running) == 2, running.output()
    app = objects.app(namespace, "web")
    assert app["metadata"]["labels"]["team"] == "shop" and app["status"]["lastSyncedCommit"] == head
    assert objects.trio(namespace, "cache") == (None, None, None)
    assert running.output().count('trigger="reconcile-request"') + running.output().count(
        "trigger=reconcile-request") == 1


def test_start_on_a_synced_cluster_logs_one_pass(start_agent, agent, repo, remote, namespace, objects):  # noqa: F811
    """Nothing changes after start-up: the log holds one pass line, with every kind of child
    of the registry that settles without a controller of its own (a ConfigMap from ``files``,
    an Ingress that waits for an ingress controller) beside the Deployment and Service."""
    doc = yaml.safe_load(app_yaml("shop"))
    doc["spec"].update({"files": {"/etc/shop/a.conf": {"content": "a: 1\n"}}, "ingress": {"host": "shop.example"}})
    repo.write("shop.yaml", yaml.safe_dump(doc))
    repo.write("web.yaml", app_yaml("web"))
    remote.push()
    assert agent.sync(remote.url, "--namespace", namespace).returncode == 0
    wait_for(lambda: rolled_out(objects, namespace, ("shop", "web")), timeout=120, what="the rollouts")
    assert agent.sync(remote.url, "--namespace", namespace).returncode == 0  # the statuses record them
    running = start_agent(remote.url, "--interval", "300", "--namespace", namespace, "--log-format", "json")
    wait_for(lambda: passes(running) >= 1, timeout=60, what="the first pass")
    time.sleep(QUIET)
    logged = json_lines(running.output(), "pass")
    assert [line["trigger"] for line in logged] == ["interval"], running.output()
    assert logged[0]["result"] == "success" and logged[0]["unchanged"] == 8 and passes(running) == 1
