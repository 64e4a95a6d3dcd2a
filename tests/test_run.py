"""`python -m agent run` as the in-cluster Deployment runs it: a subprocess against the real
control plane, fed by real remotes (a bare repository over file:// and over git daemon)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.cluster import free_port
from tests.support import app_yaml, json_lines, wait_for

pytestmark = pytest.mark.usefixtures("crd")
ROOT = Path(__file__).resolve().parent.parent


@dataclass
class RunningAgent:
    """One ``python -m agent run`` process; its combined output goes to ``log``."""

    proc: subprocess.Popen
    port: int
    log: Path

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=3) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()
        except OSError:
            return 0, ""

    def metric(self, name: str, **labels) -> float:
        """Value of one sample from /metrics (0 when absent)."""
        _, text = self.get("/metrics")
        want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        for line in text.splitlines():
            if line.startswith("#"):
                continue
            sample, _, value = line.rpartition(" ")
            sname, _, rest = sample.partition("{")
            got = ",".join(sorted(rest.rstrip("}").split(","))) if rest else ""
            if sname == name and got == want:
                return float(value)
        return 0.0

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self, sig=signal.SIGTERM, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout=timeout)


@pytest.fixture
def start_agent(cluster, tmp_path, namespaces):
    """Factory: ``start_agent(repo_url, *flags, env=None)`` -> RunningAgent, once its /healthz
    answers 200 (``wait=False``: at once, for processes started together); all are killed after
    the test, before its namespaces are deleted."""
    started: list[RunningAgent] = []

    def start(repo_url: str, *flags: str, env: dict | None = None, kubeconfig: Path | None = None,
              cache: str = "cache", wait: bool = True) -> RunningAgent:
        port = free_port()
        log = tmp_path / f"agent-{len(started)}.log"
        cmd = [sys.executable, "-m", "agent", "run", "--repo", repo_url,
               "--kubeconfig", str(kubeconfig or cluster.kubeconfig), "--cache-dir", str(tmp_path / cache),
               "--http-addr", f"127.0.0.1:{port}", *flags]
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("GITOPS_AGENT_")}
        full_env.update(env or {})
        proc = subprocess.Popen(cmd, cwd=ROOT, env=full_env, stdout=open(log, "wb"), stderr=subprocess.STDOUT)
        agent = RunningAgent(proc, port, log)
        started.append(agent)
        if not wait:
            return agent
        wait_for(lambda: agent.get("/healthz")[0] == 200 or proc.poll() is not None, timeout=30,
                 what="/healthz")
        assert proc.poll() is None, agent.output()
        return agent

    yield start
    for agent in started:
        if agent.proc.poll() is None:
            agent.proc.kill()
            agent.proc.wait()
        print(f"--- agent log {agent.log.name}\n{agent.output()[-4000:]}")


@pytest.fixture
def remote(repo, tmp_path):
    """A bare repository the work tree pushes to; ``push()`` returns the pushed SHA."""
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)

    class Remote:
        path = bare
        url = f"file://{bare}"

        def push(self) -> str:
            sha = repo.commit()
            repo.git("push", "-q", "-f", str(bare), "main")
            return sha
    return Remote()


@pytest.fixture
def git_daemon(remote):
    """``git daemon`` serving the bare remote on loopback; yields its git:// URL."""
    port = free_port()
    proc = subprocess.Popen(["git", "daemon", "--reuseaddr", "--export-all", f"--base-path={remote.path.parent}",
                             "--listen=127.0.0.1", f"--port={port}", str(remote.path.parent)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: _connectable(port), timeout=10, what="git daemon")
    yield f"git://127.0.0.1:{port}/{remote.path.name}"
    proc.terminate()
    proc.wait()


def _connectable(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def passes_logged(agent) -> list[dict]:
    """The ``pass`` lines ``run`` logged so far (``--log-format json``), in order."""
    return json_lines(agent.output(), "pass")


def image_of(objects, namespace, name):
    deployment = objects.deployment(namespace, name)
    return deployment and deployment["spec"]["template"]["spec"]["containers"][0]["image"]


@pytest.mark.parametrize("transport", ["file", "git-daemon"])
def test_pushed_commit_is_applied_within_one_interval(transport, request, start_agent, repo, remote, namespace,
                                                       objects):
    url = remote.url if transport == "file" else request.getfixturevalue("git_daemon")
    repo.write("a.yaml", app_yaml("web", image="nginx:1"))
    remote.push()
    interval = 4
    agent = start_agent(url, "--interval", str(interval), "--namespace", namespace, "--no-watch",
                        "--log-format", "json")
    wait_for(lambda: image_of(objects, namespace, "web") == "nginx:1", timeout=30, what="first sync")
    repo.write("a.yaml", app_yaml("web", image="nginx:2"))
    head = remote.push()
    pushed = len(passes_logged(agent))  # passes ended by now
    wait_for(lambda: image_of(objects, namespace, "web") == "nginx:2", timeout=60, what="the push")
    wait_for(lambda: (objects.app(namespace, "web").get("status") or {}).get("lastSyncedCommit") == head,
             timeout=60, what="status to record the pushed commit")
    # within one interval, counted in passes rather than seconds (a loaded machine stretches
    # those): the pass under way when the push was done may have fetched before it; the one
    # after it started after the push, so it has the commit
    def commits():
        found = [p["commit"] for p in passes_logged(agent)]
        return found if head in found else None

    found = wait_for(commits, timeout=60, what="the pass line with the pushed commit")
    assert found.index(head) <= pushed + 1, (pushed, found)


def test_idle_intervals_do_not_fetch_but_still_undo_drift(start_agent, repo, remote, namespace, objects, cluster):
    repo.write("a.yaml", app_yaml("web", replicas=1))
    remote.push()
    interval = 2
    agent = start_agent(remote.url, "--interval", str(interval), "--namespace", namespace, "--no-watch")
    wait_for(lambda: agent.metric("gitops_agent_passes_total", result="success") >= 1, timeout=30, what="a pass")
    wait_for(lambda: (objects.deployment(namespace, "web")["status"].get("readyReplicas") or 0) == 1)
    fetches = agent.metric("gitops_agent_git_fetch_duration_seconds_count")
    passes = agent.metric("gitops_agent_passes_total", result="success")
    wait_for(lambda: agent.metric("gitops_agent_passes_total", result="success") >= passes + 2, timeout=60,
             what="two idle passes")  # counted, not timed: a loaded machine may space them wider
    assert agent.metric("gitops_agent_git_fetch_duration_seconds_count") == fetches  # ls-remote only
    cluster.kubectl("-n", namespace, "scale", "deployment/web", "--replicas=4")
    wait_for(lambda: objects.deployment(namespace, "web")["spec"]["replicas"] == 1, timeout=60,
             what="drift to be undone by the interval pass")  # --no-watch: only an interval pass can


def test_watch_restores_a_deleted_child_within_seconds(start_agent, repo, remote, namespace, objects, cluster):
    repo.write("a.yaml", app_yaml("web"))
    remote.push()
    start_agent(remote.url, "--interval", "300", "--namespace", namespace)
    wait_for(lambda: objects.deployment(namespace, "web") is not None, timeout=30, what="first sync")
    old_uid = objects.deployment(namespace, "web")["metadata"]["uid"]
    cluster.kubectl("-n", namespace, "delete", "deployment", "web", "--wait=false")
    # the next interval pass is 300 s away: anything within 60 s (however loaded the machine) is the watch's
    wait_for(lambda: (objects.deployment(namespace, "web") or {}).get("metadata", {}).get("uid") not in (None, old_uid),
             timeout=60, interval=0.1, what="the Deployment to be recreated")
    # a hand-applied Application gets its children at once, too
    manual = Path(cluster.state_dir) / f"manual-{namespace}.yaml"
    manual.write_text(app_yaml("manual", namespace=namespace))
    cluster.kubectl("apply", "-f", str(manual))
    wait_for(lambda: objects.service(namespace, "manual") is not None, timeout=60, interval=0.1,
             what="children of a hand-applied Application")


def test_endpoints_and_metrics(start_agent, repo, remote, namespace):
    repo.write("a.yaml", app_yaml("web"))
    remote.push()
    began = time.time()
    agent = start_agent(remote.url, "--interval", "30", "--namespace", namespace)
    assert agent.get("/healthz")[0] == 200
    wait_for(lambda: agent.get("/readyz")[0] == 200, timeout=30, what="/readyz")
    wait_for(lambda: agent.metric("gitops_agent_objects_total", kind="Deployment", action="created") >= 1,
             timeout=30, what="objects metric")
    assert agent.metric("gitops_agent_passes_total", result="success") >= 1
    assert agent.metric("gitops_agent_leader") == 1
    assert agent.metric("gitops_agent_git_fetch_duration_seconds_count") >= 1
    assert agent.metric("gitops_agent_last_synced_commit_timestamp_seconds") >= int(began)  # this agent's sync
    assert agent.get("/nope")[0] == 404


def test_json_log_has_one_line_per_pass(start_agent, repo, remote, namespace):
    repo.write("a.yaml", app_yaml("web"))
    head = remote.push()
    agent = start_agent(remote.url, "--interval", "2", "--namespace", namespace, "--no-watch",
                        "--log-format", "json")
    wait_for(lambda: agent.metric("gitops_agent_passes_total", result="success") >= 2, timeout=30, what="2 passes")
    assert agent.stop() == 0
    lines = [json.loads(line) for line in agent.output().splitlines() if line.startswith("{")]
    passes = [line for line in lines if line.get("event") == "pass"]
    assert len(passes) >= 2 and passes[0]["commit"] == head and passes[0]["result"] == "success"
    assert passes[0]["created"] == 3


def test_two_agents_one_lease_failover(start_agent, repo, remote, namespace, objects):
    repo.write("a.yaml", app_yaml("web", image="nginx:1"))
    remote.push()
    flags = ["--interval", "2", "--namespace", namespace, "--leader-elect", "--lease-namespace", namespace,
             "--lease-duration", "4", "--no-watch"]
    first = start_agent(remote.url, *flags, "--identity", "first", cache="cache-1")
    wait_for(lambda: first.metric("gitops_agent_leader") == 1, timeout=30, what="first to lead")
    second = start_agent(remote.url, *flags, "--identity", "second", cache="cache-2")
    wait_for(lambda: image_of(objects, namespace, "web") == "nginx:1", timeout=30, what="first sync")
    time.sleep(4)
    assert second.metric("gitops_agent_leader") == 0
    assert second.metric("gitops_agent_passes_total", result="success") == 0  # the standby never writes
    assert second.get("/readyz")[0] == 200  # a healthy standby is ready
    first.stop(signal.SIGKILL)
    repo.write("a.yaml", app_yaml("web", image="nginx:2"))
    head = remote.push()
    # two lease durations and one interval (10 s) on an idle machine; 60 s leaves a loaded one room
    wait_for(lambda: image_of(objects, namespace, "web") == "nginx:2", timeout=60, what="the standby to take over")
    assert second.metric("gitops_agent_leader") == 1
    wait_for(lambda: objects.app(namespace, "web")["status"]["lastSyncedCommit"] == head, timeout=60,
             what="the status write at the end of that pass")  # children are applied before it


def test_sigterm_during_a_pass_exits_0_and_the_next_start_converges(start_agent, agent, repo, remote, namespace,
                                                                    objects):
    for i in range(8):
        repo.write(f"a{i}.yaml", app_yaml(f"app{i}"))
    head = remote.push()
    running = start_agent(remote.url, "--interval", "60", "--namespace", namespace)
    wait_for(lambda: objects.deployment(namespace, "app0") is not None, timeout=30, interval=0.05,
             what="the pass to be under way")
    assert running.stop(signal.SIGTERM, timeout=60) == 0  # how soon: tests/test_shutdown.py
    for i in range(8):  # status is either not written yet or whole, never a mixture
        status = (objects.app(namespace, f"app{i}") or {}).get("status") or {}
        if status:
            assert status["lastSyncedCommit"] == status["lastAttemptedCommit"] == head
            assert {"Ready", "Synced"} <= {c["type"] for c in status["conditions"]} <= {"Ready", "Synced", "Reconciling"}
    proc = agent.sync(remote.url, "--namespace", namespace)
    assert proc.returncode == 0
    for i in range(8):
        app, deployment, service = objects.trio(namespace, f"app{i}")
        assert app["status"]["lastSyncedCommit"] == head and deployment and service


def test_credentials_never_appear_in_output_status_or_events(start_agent, repo, remote, namespace, objects):
    repo.write("a.yaml", app_yaml("web"))
    remote.push()
    good = start_agent(remote.url, "--interval", "60", "--namespace", namespace, cache="good")
    wait_for(lambda: objects.app(namespace, "web") is not None and "status" in objects.app(namespace, "web"),
             timeout=30, what="a synced Application")
    good.stop()
    token, env_token = "SECRET-TOKEN-in-url-1234", "SECRET-TOKEN-in-env-5678"
    url = f"http://{token}@127.0.0.1:{free_port()}/missing.git"  # a token as the URL's user, the password from env
    bad = start_agent(url, "--interval", "1", "--namespace", namespace, "--fetch-timeout", "2",
                      env={"GITOPS_AGENT_GIT_TOKEN": env_token}, cache="bad")
    wait_for(lambda: bad.metric("gitops_agent_git_fetch_failures_total") >= 2, timeout=30, what="failed fetches")
    _, metrics_text = bad.get("/metrics")
    bad.stop()
    texts = [bad.output(), metrics_text, json.dumps(objects.app(namespace, "web")), json.dumps(objects.events(namespace))]
    assert "fetching http://***@127.0.0.1" in bad.output()
    for text in texts:
        assert token not in text and env_token not in text


def test_least_privilege_rbac_from_deploy(cluster, agent, start_agent, repo, remote, namespace, objects, tmp_path):
    for name in ("namespace.yaml", "serviceaccount.yaml", "rbac.yaml"):
        cluster.kubectl("apply", "-f", str(ROOT / "deploy" / name))
    token = cluster.kubectl("create", "token", "gitops-agent", "-n", "gitops-agent").stdout.strip()
    config = json.loads(Path(cluster.kubeconfig).read_text())
    config["users"][0]["user"] = {"token": token}
    kubeconfig = tmp_path / "agent-kubeconfig"
    kubeconfig.write_text(json.dumps(config))
    denied = cluster.kubectl("--kubeconfig", str(kubeconfig), "get", "secrets", "-A", check=False)
    assert denied.returncode != 0 and "forbidden" in denied.stderr.lower()
    repo.write("a.yaml", app_yaml("web"))
    repo.write("b.yaml", app_yaml("other", namespace=f"{namespace}-x"))
    remote.push()
    # as deploy/ runs it: children written as each namespace's tenant ServiceAccount (tenants.yaml's team-a block)
    tenant = "\n---\n".join((ROOT / "deploy" / "tenants.yaml").read_text().split("\n---\n")[1:4])
    cluster.kubectl("create", "namespace", f"{namespace}-x", check=False)
    for ns in (namespace, f"{namespace}-x"):
        (tmp_path / f"tenant-{ns}.yaml").write_text(tenant.replace("team-a", ns))
        cluster.kubectl("apply", "-f", str(tmp_path / f"tenant-{ns}.yaml"))
    try:
        proc = agent.run([sys.executable, "-m", "agent", "sync", "--once", "--repo", remote.url,
                          "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "c"), "--namespace", namespace,
                          "--tenant-service-account", "gitops-tenant"])
        assert proc.returncode == 0, proc.stderr
        assert all(objects.trio(namespace, "web")) and all(objects.trio(f"{namespace}-x", "other"))
        assert "could not record event" not in proc.stderr
        running = start_agent(remote.url, "--interval", "30", "--namespace", namespace, "--leader-elect",
                              "--lease-namespace", "gitops-agent", "--tenant-service-account", "gitops-tenant",
                              kubeconfig=kubeconfig)
        wait_for(lambda: running.metric("gitops_agent_passes_total", result="success") >= 1, timeout=30,
                 what="a pass under the agent's own RBAC")
        assert running.metric("gitops_agent_leader") == 1
        assert "Forbidden" not in running.output()
    finally:
        cluster.kubectl("delete", "namespace", f"{namespace}-x", "--timeout=120s", check=False)


@pytest.mark.parametrize("source", ["token-file", "env"])
def test_private_https_repository_with_a_token(source, agent, repo, namespace, objects, tmp_path):
    import base64

    from tests import faults

    token = "private-token-0042"
    repo.write("a.yaml", app_yaml("web"))
    head = repo.commit()
    faults.bare_clone(repo.path, tmp_path / "srv" / "apps.git")
    with faults.GitHttpServer(tmp_path / "srv") as server:
        server.required_auth = "Basic " + base64.b64encode(f"deploy:{token}".encode()).decode()
        url = server.url("apps.git")
        denied = agent.sync(url, "--namespace", namespace, "--fetch-timeout", "5")
        assert denied.returncode == 2 and objects.app(namespace, "web") is None
        if source == "token-file":
            (tmp_path / "token").write_text(token + "\n")
            args, env = ["--git-token-file", str(tmp_path / "token")], {}
        else:
            args, env = [], {"GITOPS_AGENT_GIT_TOKEN": token}
        proc = agent.sync(url, "--namespace", namespace, "--git-username", "deploy", *args, env=env)
        assert proc.returncode == 0, proc.stderr
        assert objects.app(namespace, "web")["status"]["lastSyncedCommit"] == head
        assert token not in proc.stdout + proc.stderr
        assert not faults.files_containing(agent.cache_dir, token.encode())


def test_watch_recovers_from_dropped_connections(start_agent, repo, remote, namespace, objects, cluster, tmp_path):
    from tests.proxy import FaultProxy

    proxy = FaultProxy(int(cluster.server.rsplit(":", 1)[1]))
    try:
        kubeconfig = proxy.kubeconfig(cluster.kubeconfig, tmp_path / "proxied")
        repo.write("a.yaml", app_yaml("web"))
        remote.push()
        start_agent(remote.url, "--interval", "300", "--namespace", namespace, kubeconfig=kubeconfig)
        wait_for(lambda: objects.deployment(namespace, "web") is not None, timeout=30, what="first sync")
        proxy.cut()  # every watch connection drops, and reconnects are refused for 3 s
        time.sleep(3)
        proxy.restore()
        time.sleep(12)  # the watches back off at most 10 s between attempts
        old_uid = objects.deployment(namespace, "web")["metadata"]["uid"]
        cluster.kubectl("-n", namespace, "delete", "deployment", "web", "--wait=false")
        wait_for(lambda: (objects.deployment(namespace, "web") or {}).get("metadata", {}).get("uid")
                 not in (None, old_uid), timeout=60, interval=0.1,  # the interval pass is 300 s away
                 what="the Deployment to be recreated")
    finally:
        proxy.close()


def test_deploy_directory_renders_with_kustomize(cluster):
    rendered = cluster.kubectl("kustomize", str(ROOT / "deploy")).stdout
    kinds = re.findall(r"^kind: (\w+)", rendered, re.M)
    # the agent's own objects (namespaced RBAC, the default: its leader-election and Events Roles, one
    # ClusterRole that lists Ingresses), and per tenant namespace (team-a, team-b: tenants.yaml and the
    # component's roles.yaml) a Namespace, the tenant's ServiceAccount and Role, and the agent's Role
    assert sorted(kinds) == sorted(["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "Role",
                                    "RoleBinding", "RoleBinding", "Deployment", "Service", "NetworkPolicy"]
                                   + ["Namespace", "ServiceAccount", "Role", "RoleBinding", "Role", "RoleBinding"] * 2)
    cluster_role = rendered.split("kind: ClusterRole\n", 1)[1].split("---", 1)[0]
    assert "secrets" not in cluster_role and "ingresses" in cluster_role


@pytest.fixture
def sshd(tmp_path):
    """An OpenSSH server on loopback that lets this user in with a fresh key; yields
    (port, client_key, known_hosts_line)."""
    import getpass
    import shutil as _shutil

    if not Path("/usr/sbin/sshd").exists():
        pytest.skip("openssh-server is not installed (scripts/test-deps.sh installs it)")
    d = tmp_path / "sshd"
    d.mkdir()
    for name in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / name)], check=True)
    _shutil.copy(d / "client_key.pub", d / "authorized_keys")
    port = free_port()
    (d / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d / 'host_key'}\nPidFile {d / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {d / 'authorized_keys'}\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n"
        f"KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nAllowUsers {getpass.getuser()}\n")
    Path("/run/sshd").mkdir(exist_ok=True)
    proc = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", str(d / "sshd_config")],
                            stdout=subprocess.DEVNULL, stderr=open(d / "sshd.log", "wb"))
    wait_for(lambda: _connectable(port) or proc.poll() is not None, timeout=10, what="sshd")
    assert proc.poll() is None, (d / "sshd.log").read_text()
    host_key = (d / "host_key.pub").read_text().split()
    yield port, d / "client_key", f"[127.0.0.1]:{port} {host_key[0]} {host_key[1]}\n"
    proc.terminate()
    proc.wait()


def test_ssh_repository_with_key_and_strict_known_hosts(sshd, agent, repo, remote, namespace, objects, tmp_path):
    import getpass

    port, key, known_line = sshd
    repo.write("a.yaml", app_yaml("web"))
    head = remote.push()
    url = f"ssh://{getpass.getuser()}@127.0.0.1:{port}{remote.path}"
    wrong = tmp_path / "wrong_known_hosts"
    other_key = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other_key)], check=True)
    kind, blob = other_key.with_suffix(".pub").read_text().split()[:2]
    wrong.write_text(f"[127.0.0.1]:{port} {kind} {blob}\n")
    refused = agent.sync(url, "--namespace", namespace, "--ssh-key-file", str(key), "--known-hosts-file", str(wrong))
    assert refused.returncode == 2 and objects.app(namespace, "web") is None  # a host key mismatch is fatal
    known = tmp_path / "known_hosts"
    known.write_text(known_line)
    proc = agent.sync(url, "--namespace", namespace, "--ssh-key-file", str(key), "--known-hosts-file", str(known))
    assert proc.returncode == 0, proc.stderr
    assert objects.app(namespace, "web")["status"]["lastSyncedCommit"] == head


def test_run_rolls_out_once_the_task_completes_by_its_job_watch_alone(start_agent, agent, cluster, repo, remote,
                                                                     namespace, objects):
    """Issue 43: with --interval 3600 only watch events drive passes. The first pass creates the
    task's Job and holds the Deployment; the Job controller and the fake node complete it; the Job's
    watch event starts the pass that rolls out. An image change (asked for with ``reconcile``, a
    sync-now request) runs the task once more first."""
    import yaml

    def doc(image: str) -> str:
        body = yaml.safe_load(app_yaml("web", image=image))
        body["spec"]["tasks"] = {"migrate": {"command": ["./migrate"]}}
        return yaml.safe_dump(body, sort_keys=False)

    repo.write("web.yaml", doc("nginx:1.27"))
    remote.push()
    running = start_agent(remote.url, "--interval", "3600", "--namespace", namespace)

    from kubernetes import client

    def jobs() -> list[dict]:
        found = client.BatchV1Api(objects.api_client).list_namespaced_job(namespace).items
        return [j for j in objects.api_client.sanitize_for_serialization(found)
                if j["metadata"]["name"].startswith("web-migrate-")]

    wait_for(lambda: objects.deployment(namespace, "web") is not None, timeout=120, what="the rollout after the task")
    assert len(jobs()) == 1
    # the pass that created the Deployment writes the status after it: read on until it has
    wait_for(lambda: objects.app(namespace, "web")["status"]["tasks"][0]["phase"] == "Succeeded", timeout=30,
             what="the task's phase in the status of the pass that rolled out")
    repo.write("web.yaml", doc("nginx:1.28"))
    remote.push()
    asked = agent.run([sys.executable, "-m", "agent", "reconcile", "web", "--namespace", namespace,
                       "--kubeconfig", str(cluster.kubeconfig)])
    assert asked.returncode == 0, asked.stdout + asked.stderr
    wait_for(lambda: objects.deployment(namespace, "web")["spec"]["template"]["spec"]["containers"][0]["image"]
             == "nginx:1.28", timeout=180, what="the upgrade after its task")
    assert len(jobs()) == 2 and all((j.get("status") or {}).get("succeeded") for j in jobs())
    assert running.stop() == 0
