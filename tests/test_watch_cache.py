"""``run``'s passes read Applications, children and Namespaces from its watches (``LiveStore``),
and LIST only when a watch cannot vouch for its kind: a real ``python -m agent run`` process
against the real control plane and a real Git remote, its LISTs and writes counted by the API
server itself (``apiserver_request_total``), its fallbacks read from its DEBUG log.

How each fallback is forced:

- **410 Gone**: the agent's connections are cut (``FaultProxy``) and, while it cannot watch,
  the Application CRD's names change (a category): the API server replaces the kind's storage and
  its watch cache, which starts at the current resourceVersion, and etcd is compacted to that
  revision. The agent's watch resumes from its last resourceVersion, now older than anything the
  API server keeps, and is answered ``410 Expired: too old resource version``. (For the built-in
  kinds the watch cache holds every event of the last 75 s, however many: only an API server
  restart or minutes of waiting expire a resourceVersion there.)
- **periodic relist**: ``--relist-interval 10``.
- **watch cut mid-pass**: ``FaultProxy.cut`` while a pass over many Applications runs.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request

import pytest
import yaml

from tests.support import api_writes, app_yaml, new_writes, wait_for
from tests.test_pass_triggers import rolled_out
from tests.test_run import image_of, remote, start_agent  # noqa: F401 (fixtures)
from tests.test_webhook import SECRET, github, passes, push_payload

pytestmark = pytest.mark.usefixtures("crd")
WATCHED = ("applications", "deployments", "services", "namespaces")
NAMES = ("web", "db", "cache")
FALLBACK = "not read from the watch"


def lists(cluster) -> dict:
    """LIST requests the API server has served so far for the watched kinds, by resource (its
    ``apiserver_request_total``; WATCH is a verb of its own and not counted)."""
    text = cluster.kubectl("get", "--raw", "/metrics").stdout
    out = {r: 0.0 for r in WATCHED}
    for line in text.splitlines():
        if line.startswith("apiserver_request_total{"):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', line[:line.rindex("}")]))
            if labels.get("verb") == "LIST" and labels.get("resource") in WATCHED:
                out[labels["resource"]] += float(line.rsplit(" ", 1)[1])
    return out


def grown(before: dict, after: dict) -> dict:
    return {k: after[k] - before[k] for k in after if after[k] > before[k]}


def log_lines(agent, since: int = 0) -> list[dict]:
    """The agent's JSON log lines, from the ``since``-th on."""
    out = []
    for line in agent.output().splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out[since:]


def messages(agent, since: int = 0) -> list[str]:
    return [line.get("message", "") for line in log_lines(agent, since)]


def pass_lines(agent, since: int = 0) -> list[dict]:
    return [line for line in log_lines(agent, since) if line.get("event") == "pass"]


@pytest.fixture
def secret_file(tmp_path):
    path = tmp_path / "webhook-secret"
    path.write_text(SECRET + "\n")
    return path


def settled_agent(start_agent, agent, repo, remote, namespace, objects, names, *flags,  # noqa: F811
                  kubeconfig=None):
    """``run`` (DEBUG, JSON log) syncing ``names`` whose rollouts finished before it started,
    once its first pass recorded them: from here on nothing changes until the test does."""
    for name in names:
        repo.write(f"{name}.yaml", app_yaml(name))
    remote.push()
    assert agent.sync(remote.url, "--namespace", namespace).returncode == 0
    wait_for(lambda: rolled_out(objects, namespace, names), timeout=120, what="the rollouts")
    running = start_agent(remote.url, "--namespace", namespace, "--log-level", "DEBUG", "--log-format", "json",
                          *flags, kubeconfig=kubeconfig)
    wait_for(lambda: passes(running) >= 1, timeout=60, what="the first pass")
    wait_for(lambda: all((objects.app(namespace, n).get("status") or {}).get("readyReplicas") == 1 for n in names),
             timeout=30, what="the first pass to record the ready replicas")
    return running


def webhook_pass(running, head: str = "0" * 40, timeout: float = 30) -> dict:
    """A signed push webhook, and the log line of the pass it started."""
    count = len(pass_lines(running))
    assert github(running, push_payload(after=head)) == 202
    wait_for(lambda: len(pass_lines(running)) > count and pass_lines(running)[-1].get("trigger") == "webhook",
             timeout=timeout, what="the webhook's pass")
    return pass_lines(running)[-1]


def everything_there(objects, namespace, names) -> bool:
    return all(None not in objects.trio(namespace, n) for n in names)


def test_passes_of_a_healthy_agent_send_no_list_and_no_write(start_agent, agent, repo, remote, namespace,  # noqa: F811
                                                              objects, cluster, secret_file):
    running = settled_agent(start_agent, agent, repo, remote, namespace, objects, NAMES, "--interval", "300",
                            "--webhook-secret-file", str(secret_file))
    webhook_pass(running)  # whatever the first pass's status writes left to read back
    lines, listed, written = len(log_lines(running)), lists(cluster), api_writes(cluster)
    for _ in range(3):
        line = webhook_pass(running)
        assert line["result"] == "success", line
    assert grown(listed, lists(cluster)) == {}, running.output()[-3000:]
    assert new_writes(written, api_writes(cluster)) == {}
    assert not [m for m in messages(running, lines) if FALLBACK in m]
    assert len(pass_lines(running, lines)) == 3


def test_drift_and_a_commit_converge_from_the_store(start_agent, agent, repo, remote, namespace, objects,  # noqa: F811
                                                    cluster, secret_file):
    running = settled_agent(start_agent, agent, repo, remote, namespace, objects, NAMES, "--interval", "300",
                            "--webhook-secret-file", str(secret_file))
    lines, listed = len(log_lines(running)), lists(cluster)
    service_uid = objects.service(namespace, "db")["metadata"]["uid"]
    cluster.kubectl("-n", namespace, "scale", "deployment", "web", "--replicas=3")
    cluster.kubectl("-n", namespace, "set", "image", "deployment/cache", "cache=nginx:hand-edited")
    cluster.kubectl("-n", namespace, "delete", "service", "db", "--wait=false")
    wait_for(lambda: objects.deployment(namespace, "web")["spec"]["replicas"] == 1
             and image_of(objects, namespace, "cache") == "nginx:latest"
             and (objects.service(namespace, "db") or {}).get("metadata", {}).get("uid") not in (None, service_uid),
             timeout=30, what="the watch's pass to undo the hand edits")
    assert any(line.get("trigger") == "watch" for line in pass_lines(running, lines))

    repo.write("db.yaml", app_yaml("db", image="nginx:2"))
    head = remote.push()
    line = webhook_pass(running, head)
    assert line["result"] == "success" and line["commit"] == head, line
    assert image_of(objects, namespace, "db") == "nginx:2"
    assert {objects.app(namespace, n)["status"]["lastSyncedCommit"] for n in NAMES} == {head}
    assert everything_there(objects, namespace, NAMES)
    # read from the store, the webhook's own pass included: the one LIST is the Services of the
    # namespace, of every owner, to recreate db's (someone else's object may hold its name)
    fallbacks = [m for m in messages(running, lines) if FALLBACK in m]
    assert set(fallbacks) == {f"listing Service in {namespace}: not read from the watch "
                              "(label selector None is not the watch's)"}, running.output()[-3000:]
    assert set(grown(listed, lists(cluster))) == {"services"}
