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


def clean_pass(running) -> bool:
    """A webhook's pass succeeded and listed nothing."""
    start = len(log_lines(running))
    line = webhook_pass(running)
    return line["result"] == "success" and not [m for m in messages(running, start) if FALLBACK in m]


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
    # the children are applied before the pass's status writes and its log line: wait for the line
    wait_for(lambda: any(line.get("trigger") == "watch" for line in pass_lines(running, lines)),
             timeout=30, what="the watch's pass to end")

    repo.write("db.yaml", app_yaml("db", image="nginx:2"))
    head = remote.push()
    line = webhook_pass(running, head)
    assert line["result"] == "success" and line["commit"] == head, line
    assert image_of(objects, namespace, "db") == "nginx:2"
    assert {objects.app(namespace, n)["status"]["lastSyncedCommit"] for n in NAMES} == {head}
    assert everything_there(objects, namespace, NAMES)
    # read from the store, the webhook's own pass included: the one LIST is the Services of the
    # namespace, of every owner, to recreate db's (someone else's object may hold its name). A
    # Deployment still rolling out when its pass judges it is read with its pods (statuses.with_pods):
    # Pods are no watched kind, and whether the reverted rollouts are done by then is the cluster's timing
    fallbacks = [m for m in messages(running, lines) if FALLBACK in m
                 and m != f"listing Pod in {namespace}: not read from the watch (not watched)"]
    assert set(fallbacks) == {f"listing Service in {namespace}: not read from the watch "
                              "(label selector None is not the watch's)"}, running.output()[-3000:]
    assert set(grown(listed, lists(cluster))) == {"services"}


def read_how(running, since: int) -> list[str]:
    """How each pass since the ``since``-th log line read its commit (``sourceread.read``'s DEBUG line)."""
    return ["changed files" if "from the files changed since" in m else "in full"
            for m in messages(running, since) if re.match(r"commit [0-9a-f]{40} read ", m)]


def test_a_push_is_read_from_the_files_it_changed_and_in_full_when_that_cannot_tell(
        start_agent, agent, repo, remote, namespace, objects, cluster, secret_file):  # noqa: F811
    """Issue 33: a pushed commit is read from the files Git says changed; a duplicate across a
    changed and an unchanged file, a symlink, and a symlink's target changing are read in full,
    with the same result a new process gets."""
    running = settled_agent(start_agent, agent, repo, remote, namespace, objects, NAMES, "--interval", "300",
                            "--webhook-secret-file", str(secret_file))
    lines = len(log_lines(running))
    repo.write("db.yaml", app_yaml("db", image="nginx:2"))
    line = webhook_pass(running, remote.push())
    assert line["result"] == "success" and image_of(objects, namespace, "db") == "nginx:2", line
    assert read_how(running, lines) == ["changed files"]

    lines = len(log_lines(running))
    repo.write("again/web.yaml", app_yaml("web", image="nginx:3"))  # a second web: both refused, nothing pruned
    line = webhook_pass(running, remote.push())
    assert line["result"] == "failure" and image_of(objects, namespace, "web") == "nginx:latest", line
    assert "is defined more than once: again/web.yaml:" in running.output()
    assert read_how(running, lines) == ["in full"]  # the unchanged web.yaml is refused too: a full load says so

    lines = len(log_lines(running))
    repo.remove("again")
    repo.write("defs/api.txt", app_yaml("api"))
    (repo.path / "api.yaml").symlink_to("defs/api.txt")
    line = webhook_pass(running, remote.push())
    assert line["result"] == "success" and image_of(objects, namespace, "api") == "nginx:latest", line
    repo.write("defs/api.txt", app_yaml("api", image="nginx:4"))  # only the symlink's target changes
    line = webhook_pass(running, remote.push())
    assert line["result"] == "success" and image_of(objects, namespace, "api") == "nginx:4", line
    assert read_how(running, lines) == ["in full", "in full"]
    assert everything_there(objects, namespace, NAMES + ("api",))


@pytest.fixture
def proxy(cluster):
    """A ``FaultProxy`` in front of the API server (the agent's kubeconfig points at it)."""
    from tests.proxy import FaultProxy

    fault = FaultProxy(int(cluster.server.rsplit(":", 1)[1]))
    yield fault
    fault.close()


def etcd_compact(cluster) -> int:
    """Compact etcd to its current revision (its gRPC gateway on plain loopback HTTP, the
    address the API server was started with): every older resourceVersion is gone from etcd."""
    pid = json.loads((cluster.state_dir / "pids.json").read_text())["kube-apiserver"]
    args = open(f"/proc/{pid}/cmdline", "rb").read().decode().split("\0")
    etcd = next(a.split("=", 1)[1] for a in args if a.startswith("--etcd-servers=")).split(",")[0]

    def call(path: str, body: dict) -> dict:
        request = urllib.request.Request(etcd + path, data=json.dumps(body).encode(), method="POST")
        with urllib.request.urlopen(request, timeout=10) as resp:
            return json.loads(resp.read())

    revision = int(call("/v3/kv/range", {"key": "AA=="})["header"]["revision"])
    call("/v3/kv/compaction", {"revision": revision})
    return revision


def app_count(objects, namespace, names) -> int:
    return sum(objects.app(namespace, n) is not None for n in names)


def test_a_watch_answered_410_lists_again_and_passes_list_until_then(start_agent, agent, repo, remote, namespace,  # noqa: F811,E501
                                                                      objects, cluster, secret_file, proxy, crd,
                                                                      tmp_path):
    running = settled_agent(start_agent, agent, repo, remote, namespace, objects, NAMES, "--interval", "300",
                            "--webhook-secret-file", str(secret_file),
                            kubeconfig=proxy.kubeconfig(cluster.kubeconfig, tmp_path / "proxied"))
    lines = len(log_lines(running))
    service_uid = objects.service(namespace, "db")["metadata"]["uid"]
    proxy.cut()
    try:
        # while the agent cannot watch: a hand edit of an Application and of a child, then the
        # Application kind's resourceVersion expires (new storage and watch cache, etcd compacted)
        # retried: a CRD another test changed on this shared control plane answers 429 "storage is
        # (re)initializing" for a moment
        wait_for(lambda: cluster.kubectl("-n", namespace, "patch", crd, "web", "--type", "merge",
                                         "-p", '{"spec": {"replicas": 2}}', check=False).returncode == 0,
                 timeout=30, interval=1, what="the API server to take the hand edit of the Application")
        cluster.kubectl("-n", namespace, "delete", "service", "db", "--wait=false")
        cluster.kubectl("patch", "crd", crd, "--type", "merge", "-p", '{"spec": {"names": {"categories": ["t410"]}}}')
        cluster.kubectl("get", "applications", "-A")  # served by the new storage
        etcd_compact(cluster)
        # its reconnects back off (0.5, 1, 2, 4 s): the next one comes seconds after the restore,
        # and the relist after the 410 waits as long again
        wait_for(lambda: sum(m.startswith("watch of Application interrupted") for m in messages(running, lines)) >= 3,
                 timeout=30, what="the Application watch to retry")
        listed = lists(cluster)
        proxy.restore()
        gone = wait_for(lambda: [m for m in messages(running, lines) if m.startswith("watch of Application ended (410")],
                        timeout=30, what="the 410")
        assert "too old resource version" in gone[0], gone
        after_410 = len(log_lines(running))
        line = webhook_pass(running)
        assert line["result"] == "success", line
        fallback = ("listing Application: not read from the watch "
                    "(its watch has not listed since it started or lost events)")
        assert fallback in messages(running, after_410), running.output()[-3000:]
        wait_for(lambda: objects.app(namespace, "web")["spec"]["replicas"] == 1
                 and (objects.service(namespace, "db") or {}).get("metadata", {}).get("uid") not in (None, service_uid),
                 timeout=30, what="the hand edits made while the watch was cut to be undone")
        wait_for(lambda: grown(listed, lists(cluster)).get("applications", 0) >= 2, timeout=30,
                 what="the watch's own LIST of Applications, besides the pass's")
        # once the watch has listed again and the others have shown they are back (an event, a
        # bookmark or the end of their 30-s request), passes read the store again
        wait_for(lambda: clean_pass(running), timeout=60, interval=1, what="a pass without a LIST")
    finally:
        proxy.restore()
        cluster.kubectl("patch", "crd", crd, "--type", "json", "-p",
                        '[{"op": "remove", "path": "/spec/names/categories"}]', check=False)
    assert everything_there(objects, namespace, NAMES)


def test_periodic_relist_lists_again_and_passes_go_on(start_agent, agent, repo, remote, namespace, objects,  # noqa: F811
                                                      cluster, secret_file):
    running = settled_agent(start_agent, agent, repo, remote, namespace, objects, NAMES, "--interval", "300",
                            "--relist-interval", "10", "--webhook-secret-file", str(secret_file))
    lines, listed, count = len(log_lines(running)), lists(cluster), passes(running)
    kinds = ("Application", "Deployment", "Service", "Namespace")
    # each watch lists again once its current 30-s request ends after the 10 s
    wait_for(lambda: all(f"watch of {k}: periodic relist" in messages(running, lines) for k in kinds),
             timeout=60, interval=1, what="every watch's periodic relist")
    wait_for(lambda: set(grown(listed, lists(cluster))) == set(WATCHED), timeout=60, what="the relists' LISTs")
    assert passes(running) == count  # a relist that finds nothing new starts no pass
    service_uid = objects.service(namespace, "web")["metadata"]["uid"]
    cluster.kubectl("-n", namespace, "delete", "service", "web", "--wait=false")
    cluster.kubectl("-n", namespace, "scale", "deployment", "db", "--replicas=4")
    wait_for(lambda: (objects.service(namespace, "web") or {}).get("metadata", {}).get("uid") not in (None, service_uid)
             and objects.deployment(namespace, "db")["spec"]["replicas"] == 1,
             timeout=30, what="the hand edits after the relist to be undone")
    assert clean_pass(running) or clean_pass(running)
    assert everything_there(objects, namespace, NAMES)


MANY = tuple(f"app{i:02d}" for i in range(12))


def test_a_watch_cut_mid_pass_fails_closed_and_then_converges(start_agent, agent, repo, remote, namespace,  # noqa: F811
                                                              objects, cluster, secret_file, proxy, tmp_path):
    # a low client-side rate limit stretches the pass that applies a new image to every
    # Application over seconds, so that the cut lands inside it
    running = settled_agent(start_agent, agent, repo, remote, namespace, objects, MANY, "--interval", "300",
                            "--webhook-secret-file", str(secret_file), "--kube-api-qps", "8",
                            "--kube-api-burst", "4",
                            kubeconfig=proxy.kubeconfig(cluster.kubeconfig, tmp_path / "proxied"))
    for name in MANY:
        repo.write(f"{name}.yaml", app_yaml(name, image="nginx:2"))
    head = remote.push()
    lines, count = len(log_lines(running)), len(pass_lines(running))
    assert github(running, push_payload(after=head)) == 202
    wait_for(lambda: any(image_of(objects, namespace, n) == "nginx:2" for n in MANY), timeout=30, interval=0.05,
             what="the pass to start applying")
    proxy.cut()
    assert sum(image_of(objects, namespace, n) == "nginx:2" for n in MANY) < len(MANY), "the pass ended first"
    wait_for(lambda: sum(m.startswith("watch of") and "interrupted" in m for m in messages(running, lines)) >= 4,
             timeout=30, what="the watches to notice the cut")
    assert everything_there(objects, namespace, MANY)  # nothing pruned (read past the proxy)
    proxy.restore()
    wait_for(lambda: len(pass_lines(running)) > count, timeout=60, what="the cut pass to end")
    cut_pass = pass_lines(running)[count]  # it may fail (closed: nothing pruned) or finish on retries
    assert cut_pass["trigger"] == "webhook" and cut_pass["commit"] == head and not cut_pass.get("pruned"), cut_pass
    after_restore = len(log_lines(running))
    # a pass while the watches are still reconnecting lists instead
    webhook_pass(running, head, timeout=60)
    assert any(FALLBACK in m and "its watch is reconnecting" in m for m in messages(running, lines)), \
        running.output()[-3000:]
    wait_for(lambda: all(image_of(objects, namespace, n) == "nginx:2" for n in MANY)
             and {(objects.app(namespace, n).get("status") or {}).get("lastSyncedCommit") for n in MANY} == {head},
             timeout=60, what="every Application at the new commit")
    assert everything_there(objects, namespace, MANY)
    assert not [line for line in pass_lines(running, after_restore) if line.get("pruned")]
    wait_for(lambda: clean_pass(running), timeout=60, interval=1, what="a pass without a LIST")
    assert everything_there(objects, namespace, MANY)
