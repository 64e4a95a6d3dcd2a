"""A real single-node Kubernetes control plane for the tests and the demo.

Built from Go modules (no Docker, no release downloads): one multi-call binary (``main.go`` beside
this file: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl) and kwok (a
fake node whose pods become Ready without a kubelet). Builds are cached outside the repository,
in ``$GITOPS_AGENT_BUILD_CACHE`` (default ``~/.cache/gitops-agent-cluster``), keyed by a hash of
the Go sources and toolchain, so a second start does not rebuild.

``up(state_dir)`` starts every component as its own background process on loopback ports chosen
at start, writes ``state_dir/kubeconfig`` (token auth, TLS verified against the apiserver's
serving certificate) and returns once the API answers and the fake node is Ready.
``down(state_dir)`` stops the processes recorded in ``state_dir/pids.json`` and removes the state.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
KUBERNETES_VERSION = "v1.36.3"
KWOK_MODULE = "sigs.k8s.io/kwok"
KWOK_VERSION = "v0.8.0"
# Default kwok stages (shipped in its module): node initialize + heartbeat, pod ready,
# complete and delete. Without pod-delete, terminating pods never go away.
KWOK_STAGES = (
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat/node-heartbeat.yaml",
    "kustomize/stage/pod/fast/pod-ready.yaml",
    "kustomize/stage/pod/fast/pod-complete.yaml",
    "kustomize/stage/pod/fast/pod-delete.yaml",
)
TEST_STAGES = HERE / "stages.yaml"
"""The tests' own kwok stages: pods labelled ``FAIL_LABEL`` fail to pull or crash (see the file)."""
FAIL_LABEL = "kwok.gitops-agent.test/fail"
"""Pod label choosing a failing stage: ``image-pull`` (ImagePullBackOff), ``crash-loop``
(CrashLoopBackOff) or, for a Job's pod, ``job-fail`` (Failed, exit code 1). Unlabelled pods
become Ready (a Job's: Succeeded) as before."""
NODE_NAME = "kwok-node-0"
TOKEN = "gitops-agent-test-admin-token"
START_TIMEOUT = 120.0  # seconds, per wait


class ClusterError(RuntimeError):
    """A build or start-up step failed; the message names the step and shows its output tail."""


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def cache_root() -> Path:
    """Directory holding built binaries and Go's caches; outside the repository."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "gitops-agent-cluster"
    return Path(os.environ.get("GITOPS_AGENT_BUILD_CACHE", default))


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(GOTOOLCHAIN="local", GOFLAGS="-mod=mod")
    return env


def _run(cmd: list[str], cwd: Path | None = None) -> str:
    """Run a build command; on failure raise ClusterError with the command and its output tail."""
    proc = subprocess.run(cmd, cwd=cwd, env=_go_env(), capture_output=True, text=True)
    if proc.returncode != 0:
        raise ClusterError(
            f"build step failed (exit {proc.returncode}): {' '.join(cmd)}\n"
            f"{_tail(proc.stdout + proc.stderr)}"
        )
    return proc.stdout


def _build_key() -> str:
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum", "main.go"):
        digest.update((HERE / name).read_bytes())
    digest.update(_run(["go", "version"]).encode())
    return f"{KUBERNETES_VERSION}-{digest.hexdigest()[:12]}"


@dataclass(frozen=True)
class Binaries:
    """Paths of the built programs: ``cluster`` (multi-call), ``kwok`` and its stage config."""

    cluster: Path
    kwok: Path
    stages: Path


def build(log=sys.stderr) -> Binaries:
    """Build (or reuse from the cache) the control-plane binary and kwok.

    Returns the paths. Raises ClusterError naming the failing command and its output tail.
    A cold build takes tens of minutes on 2 cores; a cached one returns in about a second.
    """
    root = cache_root()
    out = root / _build_key()
    binary = out / "cluster"
    if not binary.exists():
        out.mkdir(parents=True, exist_ok=True)
        print(f"building the control plane ({KUBERNETES_VERSION}) into {out}; "
              "a cold build takes tens of minutes", file=log, flush=True)
        minor = KUBERNETES_VERSION.split(".")[1]
        ldflags = ("-s -w -X k8s.io/component-base/version.gitVersion=" + KUBERNETES_VERSION
                   + " -X k8s.io/component-base/version.gitMajor=1"
                   + f" -X k8s.io/component-base/version.gitMinor={minor}")
        _run(["go", "build", "-trimpath", "-ldflags", ldflags, "-o", str(binary) + ".tmp", "."], cwd=HERE)
        os.replace(str(binary) + ".tmp", binary)
    kwok_dir = root / f"kwok-{KWOK_VERSION}"
    kwok = kwok_dir / "kwok"
    stages = kwok_dir / "stages.yaml"
    if not kwok.exists() or not stages.exists():
        kwok_dir.mkdir(parents=True, exist_ok=True)
        print(f"building kwok {KWOK_VERSION}", file=log, flush=True)
        env_gobin = {"GOBIN": str(kwok_dir)}
        cmd = ["go", "install", f"{KWOK_MODULE}/cmd/kwok@{KWOK_VERSION}"]
        proc = subprocess.run(cmd, env={**_go_env(), **env_gobin}, capture_output=True, text=True)
        if proc.returncode != 0:
            raise ClusterError(f"build step failed: {' '.join(cmd)}\n{_tail(proc.stdout + proc.stderr)}")
        info = json.loads(_run(["go", "mod", "download", "-json", f"{KWOK_MODULE}@{KWOK_VERSION}"]))
        docs = [(Path(info["Dir"]) / rel).read_text() for rel in KWOK_STAGES]
        stages.write_text("\n---\n".join(d.strip() for d in docs) + "\n")
    return Binaries(cluster=binary, kwok=kwok, stages=stages)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (bind to port 0, read it back, release it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Cluster:
    """A running control plane: its state directory, kubeconfig path and API server URL."""

    state_dir: Path
    kubeconfig: Path
    server: str
    binaries: Binaries

    def kubectl(self, *args: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
        """Run the built kubectl against this cluster; returns the CompletedProcess (text mode).
        Its discovery cache is this cluster's own (``forget_discovery``), not ``~/.kube/cache``:
        that one is kept per host and port for hours, across runs that reuse a port."""
        cmd = [str(self.binaries.cluster), "kubectl", "--kubeconfig", str(self.kubeconfig),
               "--cache-dir", str(self.state_dir / "kubectl-cache"), *args]
        return subprocess.run(cmd, check=check, capture_output=True, text=True, **kwargs)

    def forget_discovery(self) -> None:
        """Drop ``kubectl``'s discovery cache: after a test removed a kind, a short name such as
        ``application`` could still resolve to it."""
        shutil.rmtree(self.state_dir / "kubectl-cache", ignore_errors=True)


class _Processes:
    """Starts components in the background, records their PIDs, reports early deaths with logs."""

    def __init__(self, state: Path):
        self.state = state
        self.logs = state / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, cmd: list[str]) -> None:
        log = open(self.logs / f"{name}.log", "wb")
        self.procs[name] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        pids = {n: p.pid for n, p in self.procs.items()}
        (self.state / "pids.json").write_text(json.dumps(pids))

    def check(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                log = (self.logs / f"{name}.log").read_text(errors="replace")
                raise ClusterError(f"{name} exited with code {proc.returncode} during start-up; "
                                   f"log tail:\n{_tail(log)}")

    def wait_for(self, what: str, probe, timeout: float = START_TIMEOUT, component: str | None = None) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check()
            try:
                if probe():
                    return
            except (OSError, urllib.error.URLError, ValueError):
                pass
            time.sleep(0.2)
        name = component or list(self.procs)[-1]
        log = (self.logs / f"{name}.log").read_text(errors="replace")
        raise ClusterError(f"timed out after {timeout:.0f}s waiting for {what}; logs in {self.logs}; "
                           f"{name} log tail:\n{_tail(log)}")


def _api(server: str, ca: Path, path: str, method: str = "GET", body: dict | None = None, raw: bool = False):
    ctx = ssl.create_default_context(cafile=str(ca))
    req = urllib.request.Request(server + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": f"Bearer {TOKEN}",
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, context=ctx, timeout=5) as resp:
        data = resp.read()
        return data if raw else json.loads(data or b"{}")


def _write_kubeconfig(path: Path, server: str, ca: Path) -> None:
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "local",
        "clusters": [{"name": "local", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": "admin", "user": {"token": TOKEN}}],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": "admin"}}],
    }, indent=2))


def _node_ready(server: str, ca: Path) -> bool:
    node = _api(server, ca, f"/api/v1/nodes/{NODE_NAME}")
    conditions = node.get("status", {}).get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def up(state_dir: Path | str, log=sys.stderr) -> Cluster:
    """Build if needed, start the control plane and return once the fake node is Ready.

    Components (each its own process, loopback only, free ports): etcd, kube-apiserver,
    kube-controller-manager (garbage collector, deployment, replicaset, namespace, horizontal pod
    autoscaler, job, cronjob and disruption controllers),
    kube-scheduler and kwok with one node. Raises ClusterError naming a component that died
    during start-up with its log tail; processes already started are stopped first.
    """
    state = Path(state_dir).resolve()
    if (state / "pids.json").exists():
        raise ClusterError(f"{state} already holds a running cluster; run 'down' first")
    binaries = build(log)
    bin_ = str(binaries.cluster)
    state.mkdir(parents=True, exist_ok=True)
    certs = state / "certs"
    certs.mkdir(exist_ok=True)
    sa_key = certs / "service-account.key"
    subprocess.run(["openssl", "genrsa", "-out", str(sa_key), "2048"], check=True, capture_output=True)
    (state / "tokens.csv").write_text(f'{TOKEN},admin,admin-uid,"system:masters"\n')
    procs = _Processes(state)
    try:
        etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
        etcd_url = f"http://127.0.0.1:{etcd_port}"
        procs.start("etcd", [
            bin_, "etcd", "--name=default", f"--data-dir={state / 'etcd'}", "--unsafe-no-fsync",
            f"--listen-client-urls={etcd_url}", f"--advertise-client-urls={etcd_url}",
            f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}",
            f"--initial-cluster=default=http://127.0.0.1:{peer_port}",
        ])
        procs.wait_for("etcd", lambda: urllib.request.urlopen(etcd_url + "/health", timeout=2).status == 200)
        procs.start("kube-apiserver", [
            bin_, "kube-apiserver", f"--etcd-servers={etcd_url}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--secure-port={api_port}", f"--cert-dir={certs}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={sa_key}", f"--service-account-signing-key-file={sa_key}",
            # A /16 holds 65,534 Service IPs (the benchmark makes 10,000 Services; a /24 held 253),
            # clear of kwok's pod CIDR 10.244.0.0/16.
            "--service-cluster-ip-range=10.0.0.0/16", "--authorization-mode=RBAC",
            f"--token-auth-file={state / 'tokens.csv'}",
            # No serviceaccount controller and no node-lifecycle controller run here.
            "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
        ])
        server = f"https://127.0.0.1:{api_port}"
        ca = certs / "apiserver.crt"
        procs.wait_for("kube-apiserver", lambda: ca.exists() and _api(server, ca, "/readyz", raw=True) == b"ok")
        kubeconfig = state / "kubeconfig"
        _write_kubeconfig(kubeconfig, server, ca)
        procs.start("kube-controller-manager", [
            bin_, "kube-controller-manager", f"--kubeconfig={kubeconfig}", "--leader-elect=false",
            "--secure-port=0",
            # The default client limit (20 requests/s) needs minutes to give 1,000 new Deployments
            # their ReplicaSets and status, which the benchmark waits for.
            "--kube-api-qps=500", "--kube-api-burst=1000",
            "--controllers=garbage-collector-controller,deployment-controller,"
            "replicaset-controller,namespace-controller,horizontal-pod-autoscaler-controller,"
            "job-controller,cronjob-controller,disruption-controller",
            # no metrics server: an autoscaler is created and reports why it cannot scale
        ])
        procs.start("kube-scheduler", [
            bin_, "kube-scheduler", f"--kubeconfig={kubeconfig}", "--leader-elect=false",
            "--bind-address=127.0.0.1", f"--secure-port={free_port()}",
        ])
        procs.start("kwok", [
            str(binaries.kwok), f"--kubeconfig={kubeconfig}", "--manage-all-nodes=true",
            "--cidr=10.244.0.0/16", "--node-ip=127.0.0.1", f"--config={_stages(binaries.stages, state)}",
            f"--server-address=127.0.0.1:{free_port()}",
        ])
        _api(server, ca, "/api/v1/nodes", "POST", {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": NODE_NAME, "labels": {"type": "kwok", "kubernetes.io/hostname": NODE_NAME},
                         "annotations": {"kwok.x-k8s.io/node": "fake"}},
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "500"},
                       "capacity": {"cpu": "64", "memory": "256Gi", "pods": "500"}},
        })
        procs.wait_for("the fake node to become Ready", lambda: _node_ready(server, ca))
        procs.wait_for("namespace default",
                       lambda: _api(server, ca, "/api/v1/namespaces/default") is not None)
    except BaseException:
        down(state, remove=False)  # keep the logs for the error's reader
        raise
    return Cluster(state_dir=state, kubeconfig=kubeconfig, server=server, binaries=binaries)


def _stages(defaults: Path, state: Path) -> Path:
    """``state/stages.yaml``: kwok's default stages (``defaults``, built by ``build``) with its
    ``pod-ready`` and ``pod-complete`` stages kept off pods labelled ``FAIL_LABEL``, then ``TEST_STAGES``. kwok picks
    one stage at random among those that match a pod, so the failing ones must be alone."""
    import yaml

    docs = [d for d in yaml.safe_load_all(defaults.read_text()) if d]
    for doc in docs:
        if doc["metadata"]["name"] in ("pod-ready", "pod-complete"):
            doc["spec"]["selector"]["matchExpressions"].append(
                {"key": f'.metadata.labels["{FAIL_LABEL}"]', "operator": "DoesNotExist"})
    target = state / "stages.yaml"
    target.write_text(yaml.safe_dump_all(docs, sort_keys=False) + "---\n" + TEST_STAGES.read_text())
    return target


def down(state_dir: Path | str, timeout: float = 15.0, remove: bool = True) -> None:
    """Stop every process recorded in ``state_dir/pids.json`` in reverse start order, each
    (SIGTERM) once the one started after it is gone, SIGKILL for what is left after ``timeout``
    seconds in all, and remove the state directory (with ``remove=False`` only the PID record,
    keeping logs). One at a time, etcd goes last and the API server ends in about a second;
    stopped together with etcd, the API server outlasted any timeout and was killed."""
    state = Path(state_dir).resolve()
    pids_file = state / "pids.json"
    pids = json.loads(pids_file.read_text()) if pids_file.exists() else {}
    deadline = time.monotonic() + timeout
    for pid in reversed(list(pids.values())):
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.05)
    for pid in pids.values():
        if _alive(pid):
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    if remove:
        shutil.rmtree(state, ignore_errors=True)
    else:
        pids_file.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
        if waited == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # not our child (``down`` from another process): an exited one waits for init as a zombie
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def attach(state_dir: Path | str) -> Cluster:
    """Return a Cluster handle for a control plane started earlier by ``up`` in ``state_dir``."""
    state = Path(state_dir).resolve()
    kubeconfig = state / "kubeconfig"
    if not kubeconfig.exists():
        raise ClusterError(f"no cluster in {state}; run 'up' first")
    server = json.loads(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    return Cluster(state_dir=state, kubeconfig=kubeconfig, server=server, binaries=build())
