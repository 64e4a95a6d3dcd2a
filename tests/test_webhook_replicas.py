"""Push webhooks with two replicas (``--leader-elect``): two real ``python -m agent run``
processes against the real control plane, each with its own webhook endpoint, as the Service of
``deploy/`` spreads hits over both. A standby hands a verified push to the leader through the
Lease (``kube.election``); the leader's next renewal reads it and passes. Every agent runs with
``--interval 300`` and ``--no-watch``, so only a hook can explain a pass after the first."""

from __future__ import annotations

import datetime
import json
import signal
import time
from pathlib import Path

import pytest

from tests.support import app_yaml, json_lines, wait_for
from tests.test_run import ROOT, image_of, remote, start_agent  # noqa: F401 (fixtures)
from tests.test_webhook import github, hooks, passes, post, push_payload, secret_file, sign  # noqa: F401

pytestmark = pytest.mark.usefixtures("crd")
LEASE = "gitops-agent"
ANNOTATION = "heumsi.github.io/pass-requested-at"


def pass_lines(agent) -> list[dict]:
    """The agent's pass log lines (``--log-format json``), oldest first."""
    return json_lines(agent.output(), "pass")


def electing(agent) -> bool:
    """True once the agent's election runs (its webhook can forward from then on)."""
    return "leader election on the Lease" in agent.output()


def two_replicas(start_agent, remote, repo, namespace, objects, secret_file, *, standby_kubeconfig=None,
                 lease=("--lease-namespace", "")):
    """(leader, standby): both with the webhook and a 7 s lease (renewed every second; ``lease``:
    its flags, in ``namespace`` by default), the leader after its first pass, the standby with
    its election running."""
    repo.write("a.yaml", app_yaml("web", image="nginx:0"))
    remote.push()
    flags = ["--interval", "300", "--no-watch", "--namespace", namespace, "--leader-elect",
             *(lease if lease[1] else ("--lease-namespace", namespace)), "--lease-duration", "7",
             "--webhook-secret-file", str(secret_file), "--log-format", "json"]
    leader = start_agent(remote.url, *flags, "--identity", "first", cache="cache-1")
    wait_for(lambda: leader.metric("gitops_agent_leader") == 1 and passes(leader) >= 1
             and image_of(objects, namespace, "web") == "nginx:0", timeout=30, what="the first to lead and pass")
    standby = start_agent(remote.url, *flags, "--identity", "second", cache="cache-2", kubeconfig=standby_kubeconfig)
    wait_for(lambda: electing(standby), timeout=60, what="the standby's election")
    return leader, standby


def served(leader, sha: str, timeout: float = 60) -> dict:
    """The leader's first pass line whose commit is ``sha`` (waits for it)."""
    found: list[dict] = []
    wait_for(lambda: found.extend(p for p in pass_lines(leader) if p.get("commit") == sha) or found,
             timeout=timeout, interval=0.1, what=f"a pass on the leader that sees {sha[:8]}")
    return found[0]


def test_ten_pushes_over_two_replicas_each_reach_a_pass_on_the_leader(start_agent, repo, remote, namespace, objects,
                                                                      secret_file):
    leader, standby = two_replicas(start_agent, remote, repo, namespace, objects, secret_file)
    targets = [standby, leader, standby, standby, leader, standby, leader]  # then a burst of three
    latencies = []
    for i, target in enumerate(targets, start=1):
        repo.write("a.yaml", app_yaml("web", image=f"nginx:{i}"))
        sha = remote.push()
        sent = time.monotonic()
        code, answer = post(target, body := push_payload(after=sha),
                            {"X-GitHub-Event": "push", "X-Hub-Signature-256": sign(body)})
        assert (code, answer["result"]) == (202, "forwarded" if target is standby else "accepted"), answer
        line = served(leader, sha)
        latencies.append(time.monotonic() - sent)
        assert line["trigger"] == ("forwarded-webhook" if target is standby else "webhook")
        assert line["result"] == "success"
    # a burst: three pushes, one hook each, within a fraction of a second; at most one pass each
    before = passes(leader)
    for i, target in zip((8, 9, 10), (standby, leader, standby)):
        repo.write("a.yaml", app_yaml("web", image=f"nginx:{i}"))
        head = remote.push()
        assert github(target, push_payload(after=head)) == 202
    served(leader, head)
    wait_for(lambda: (objects.app(namespace, "web").get("status") or {}).get("lastSyncedCommit") == head,
             timeout=60, what="the last commit synced")
    assert image_of(objects, namespace, "web") == "nginx:10"
    time.sleep(2)
    assert 1 <= passes(leader) - before <= 3  # each hook asks for one pass at most
    # no bound on these seconds (under 5 s on an idle machine): each commit reached a pass its hook
    # triggered (``trigger`` above, with the interval 300 s away), however loaded the machine
    print(f"push to pass latency: max {max(latencies):.2f}s, mean {sum(latencies) / len(latencies):.2f}s")
    assert hooks(standby, "forwarded") == 6 and hooks(leader, "accepted") == 4
    for agent in (leader, standby):
        assert hooks(agent, "standby") == hooks(agent, "forward_failed") == 0
    assert passes(standby) == 0 and standby.metric("gitops_agent_leader") == 0  # the standby never syncs
    assert leader.metric("gitops_agent_leader") == 1  # the forwards never cost the lease
    assert "lost the leader lease" not in leader.output()


def test_a_push_forwarded_while_the_leader_stops_is_served_by_the_next(start_agent, repo, remote, namespace, objects,
                                                                       secret_file, cluster):
    leader, standby = two_replicas(start_agent, remote, repo, namespace, objects, secret_file)
    repo.write("a.yaml", app_yaml("web", image="nginx:1"))
    head = remote.push()
    leader.proc.send_signal(signal.SIGTERM)  # releases the Lease; the standby takes over within a second
    codes = [github(standby, push_payload(after=head))]
    assert leader.proc.wait(timeout=30) == 0
    served(standby, head)
    assert image_of(objects, namespace, "web") == "nginx:1"
    repo.write("a.yaml", app_yaml("web", image="nginx:2"))
    head = remote.push()
    codes.append(github(standby, push_payload(after=head)))  # now it leads: accepted, not forwarded
    served(standby, head)
    assert codes == [202, 202] and hooks(standby, "accepted") >= 1


def agent_kubeconfig(cluster, tmp_path, account: str, namespace: str) -> Path:
    """A kubeconfig of the cluster with a token of the ServiceAccount ``namespace/account``."""
    token = cluster.kubectl("create", "token", account, "-n", namespace).stdout.strip()
    config = json.loads(Path(cluster.kubeconfig).read_text())
    config["users"][0]["user"] = {"token": token}
    path = tmp_path / f"{account}-kubeconfig"
    path.write_text(json.dumps(config))
    return path


def test_the_rbac_of_deploy_lets_a_standby_forward(start_agent, repo, remote, namespace, objects, secret_file,
                                                   cluster, tmp_path):
    for name in ("namespace.yaml", "serviceaccount.yaml", "rbac.yaml"):
        cluster.kubectl("apply", "-f", str(ROOT / "deploy" / name))
    kubeconfig = agent_kubeconfig(cluster, tmp_path, "gitops-agent", "gitops-agent")
    lease = ("--lease-namespace", "gitops-agent", "--lease-name", f"hooks-{namespace}")
    try:
        leader, standby = two_replicas(start_agent, remote, repo, namespace, objects, secret_file,
                                       standby_kubeconfig=kubeconfig, lease=lease)
        repo.write("a.yaml", app_yaml("web", image="nginx:1"))
        head = remote.push()
        code, answer = post(standby, body := push_payload(after=head),
                            {"X-GitHub-Event": "push", "X-Hub-Signature-256": sign(body)})
        assert (code, answer["result"]) == (202, "forwarded")
        assert served(leader, head)["trigger"] == "forwarded-webhook"
        assert "Forbidden" not in standby.output()
    finally:
        cluster.kubectl("delete", "lease", "-n", "gitops-agent", f"hooks-{namespace}", check=False)


def test_a_standby_the_api_server_refuses_answers_503(start_agent, repo, remote, namespace, objects, secret_file,
                                                      cluster, tmp_path):
    # the standby's account may read the Lease (to stand by) but not update it
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "lease-reader", "namespace": namespace},
            "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "lease-reader", "namespace": namespace},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "lease-reader"},
               "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": namespace}]}
    cluster.kubectl("create", "serviceaccount", "reader", "-n", namespace)
    manifest = tmp_path / "reader.json"
    manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [role, binding]}))
    cluster.kubectl("apply", "-f", str(manifest))
    kubeconfig = agent_kubeconfig(cluster, tmp_path, "reader", namespace)
    leader, standby = two_replicas(start_agent, remote, repo, namespace, objects, secret_file,
                                   standby_kubeconfig=kubeconfig)
    body = push_payload()
    code, answer = post(standby, body, {"X-GitHub-Event": "push", "X-Hub-Signature-256": sign(body)})
    assert code == 503 and answer["result"] == "forward_failed"
    assert answer["message"] == (f"this replica stands by and could not ask the leader for a pass: the API server "
                                 f"refused to update the Lease {namespace}/{LEASE}: 403 Forbidden; retry later")
    code, answer = post(standby, body, {"X-GitHub-Event": "push", "X-Hub-Signature-256": sign(body, "wrong")})
    assert code == 401  # the signature is checked before anything is forwarded
    assert hooks(standby, "forward_failed") == 1 and hooks(standby, "unauthorized") == 1
    assert leader.metric("gitops_agent_leader") == 1 and passes(leader) == 1  # nothing reached the leader


def test_a_renewal_that_meets_a_forward_keeps_the_lease(api, namespace):
    """The leader's renewal writes the Lease it read with that resourceVersion; a forward written
    in between makes it fail (409). It is written again on a fresh read, and only when the
    election itself did not move (another holder's write still wins)."""
    from kubernetes import client
    from kubernetes.leaderelection.leaderelectionrecord import LeaderElectionRecord

    from agent.kube.election import ReleasableLeaseLock

    asked: list[str] = []
    leader = ReleasableLeaseLock("l", namespace, "first", on_request=lambda: asked.append("first"))
    standby = ReleasableLeaseLock("l", namespace, "second", on_request=lambda: asked.append("second"))
    for lock in (leader, standby):
        lock.api_instance = client.CoordinationV1Api(api)

    def record(holder: str) -> LeaderElectionRecord:
        now = str(datetime.datetime.now())
        return LeaderElectionRecord(holder, "15", now, now)

    assert leader.create("l", namespace, record("first"))
    assert leader.get("l", namespace)[0] and standby.get("l", namespace)[0]  # no token yet
    assert standby.forward() is None  # between the leader's read and its renewal
    assert leader.update("l", namespace, record("first"))  # a 409, then written on a fresh read
    assert asked == ["first"]  # the fresh read carried the token: the leader asks for a pass
    assert leader.get("l", namespace)[0] and standby.get("l", namespace)[0]
    assert asked == ["first"]  # a token asks once; a standby never asks
    lease = client.CoordinationV1Api(api).read_namespaced_lease("l", namespace)
    assert lease.spec.holder_identity == "first" and lease.metadata.annotations[ANNOTATION].endswith(" second")
    # the election moved between the leader's read and its renewal: the renewal fails, as before
    assert leader.get("l", namespace)[0]
    assert standby.update("l", namespace, record("second"))
    assert not leader.update("l", namespace, record("first"))
    lease = client.CoordinationV1Api(api).read_namespaced_lease("l", namespace)
    assert lease.spec.holder_identity == "second" and lease.metadata.annotations[ANNOTATION].endswith(" second")
