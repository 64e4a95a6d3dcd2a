"""Test helpers: real Git repositories, the agent as a subprocess, and reading cluster objects."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml


def wait_for(predicate, timeout: float = 60.0, interval: float = 0.25, what: str = "condition"):
    """Poll ``predicate`` until it returns a truthy value (returned); AssertionError on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def json_lines(log: str, event: str | None = None) -> list[dict]:
    """The JSON lines of a log that is still being written (``--log-format json``), oldest first,
    those of ``event`` only when given. A last line without its newline is left out: on a loaded
    machine the test may read it half written."""
    whole = log.split("\n")[:-1]
    found = [json.loads(line) for line in whole if line.startswith("{")]
    return [line for line in found if event is None or line.get("event") == event]


def unprivileged(args: list[str]) -> list[str]:
    """``args`` run so that file permissions hold: as root, without the capabilities that
    bypass them (util-linux ``setpriv``); skips the test when that is not possible."""
    if os.geteuid() != 0:
        return args
    if not shutil.which("setpriv"):
        pytest.skip("running as root without setpriv: file permissions cannot be made to hold")
    caps = "-dac_override,-dac_read_search,-fowner"
    return ["setpriv", f"--bounding-set={caps}", f"--inh-caps={caps}", *args]


ORIGINAL_APPLICATION = """\
apiVersion: heumsi.github.io/v1
kind: Application
metadata:
  name: nginx
spec:
  image: nginx:latest
  replicas: 1
  port: 80
"""
"""The original design's ``application.yaml``, byte for byte: it must keep working unchanged."""


def app_yaml(name: str, image: str = "nginx:latest", replicas: int = 1, port: int = 80,
             namespace: str | None = None) -> str:
    """An Application document as a user writes it."""
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return yaml.safe_dump({"apiVersion": "heumsi.github.io/v1", "kind": "Application", "metadata": meta,
                           "spec": {"image": image, "replicas": replicas, "port": port}}, sort_keys=False)


def tenant_yaml(namespace: str) -> str:
    """deploy/tenants.yaml's team-a block less its Namespace (the ServiceAccount gitops-tenant, its
    Role and RoleBinding), for ``namespace``: what the agent writes that namespace's children as."""
    root = Path(__file__).resolve().parent.parent
    block = (root / "deploy" / "tenants.yaml").read_text().split("\n---\n")[1:4]
    return "\n---\n".join(block).replace("team-a", namespace)


@dataclass
class GitRepo:
    """A real Git repository with a work tree; ``commit`` returns the new HEAD's full SHA."""

    path: Path

    @classmethod
    def create(cls, path: Path) -> "GitRepo":
        path.mkdir(parents=True, exist_ok=True)
        repo = cls(path)
        repo.git("init", "-q", "-b", "main")
        repo.git("config", "user.email", "dev@example.com")
        repo.git("config", "user.name", "Dev")
        return repo

    def git(self, *args: str) -> str:
        return subprocess.run(["git", *args], cwd=self.path, check=True, capture_output=True,
                              text=True).stdout.strip()

    def write(self, rel: str, text: str) -> None:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text) if text.startswith("\n") else text)

    def write_bytes(self, rel: str, data: bytes) -> None:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def remove(self, rel: str) -> None:
        self.git("rm", "-q", "-r", "-f", rel)

    def move(self, src: str, dst: str) -> None:
        (self.path / dst).parent.mkdir(parents=True, exist_ok=True)
        self.git("mv", src, dst)

    def commit(self, message: str = "change") -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.head()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")


@dataclass
class Agent:
    """Runs ``python -m agent ARGS`` the way a user types it; returns CompletedProcess."""

    kubeconfig: Path
    cache_dir: Path
    cwd: Path

    def sync(self, repo: str | Path, *args: str, timeout: float = 120, env: dict | None = None):
        cmd = [sys.executable, "-m", "agent", "sync", "--once", "--repo", str(repo),
               "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.cache_dir), *args]
        return self.run(cmd, timeout=timeout, env=env)

    def run(self, cmd: list[str], timeout: float = 120, env: dict | None = None):
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("GITOPS_AGENT_")}
        full_env.update(env or {})
        proc = subprocess.run(cmd, cwd=self.cwd, capture_output=True, text=True, timeout=timeout, env=full_env)
        print(f"$ {' '.join(cmd)}\nexit {proc.returncode}\n{proc.stdout}{proc.stderr}")
        assert "Traceback" not in proc.stdout + proc.stderr, "the agent printed a traceback"
        return proc


class Objects:
    """Reads live objects as plain dicts through the official client (None when absent)."""

    def __init__(self, api_client):
        from kubernetes import client

        self.apps = client.AppsV1Api(api_client)
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.api_client = api_client

    def _get(self, call, *args):
        from kubernetes.client.exceptions import ApiException

        try:
            result = call(*args)
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        return result if isinstance(result, dict) else self.api_client.sanitize_for_serialization(result)

    def app(self, namespace: str, name: str) -> dict | None:
        return self._get(self.custom.get_namespaced_custom_object, "heumsi.github.io", "v1", namespace,
                         "applications", name)

    def deployment(self, namespace: str, name: str) -> dict | None:
        return self._get(self.apps.read_namespaced_deployment, name, namespace)

    def service(self, namespace: str, name: str) -> dict | None:
        return self._get(self.core.read_namespaced_service, name, namespace)

    def trio(self, namespace: str, name: str) -> tuple:
        return self.app(namespace, name), self.deployment(namespace, name), self.service(namespace, name)

    def events(self, namespace: str) -> list[dict]:
        return self.api_client.sanitize_for_serialization(self.core.list_namespaced_event(namespace).items)

    def versions(self, namespace: str, names: list[str]) -> dict:
        """resourceVersion of every trio object, keyed by ``Kind/name``."""
        out = {}
        for name in names:
            for kind, obj in zip(("Application", "Deployment", "Service"), self.trio(namespace, name)):
                out[f"{kind}/{name}"] = obj["metadata"]["resourceVersion"] if obj else None
        return out


WRITE_VERBS = frozenset({"POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"})


def api_writes(cluster, resources=("applications", "deployments", "services", "events")) -> dict:
    """Write requests the API server has served so far, from its own ``apiserver_request_total``
    counter: {(verb, resource, subresource): count} for ``resources``, dry-run requests left
    out. Take it before and after a step and compare (see ``new_writes``)."""
    import re

    text = cluster.kubectl("get", "--raw", "/metrics").stdout
    out: dict = {}
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line[:line.rindex("}")]))
        if labels.get("verb") in WRITE_VERBS and labels.get("resource") in resources and not labels.get("dry_run"):
            key = (labels["verb"], labels["resource"], labels.get("subresource", ""))
            out[key] = out.get(key, 0) + float(line.rsplit(" ", 1)[1])
    return out


def new_writes(before: dict, after: dict) -> dict:
    """The write counts that grew between two ``api_writes`` readings."""
    return {k: v - before.get(k, 0) for k, v in after.items() if v > before.get(k, 0)}


def established(cluster, manifest, name: str, timeout: float = 120) -> None:
    """Apply the CRD ``manifest`` (a path) and wait until ``name`` is Established. Polled, not
    ``kubectl wait``: right after the control plane starts, that command now and then exited 1 at
    once (its watch cut), taking a whole worker's session with it. Applied again while not found."""
    def ready() -> bool:
        got = cluster.kubectl("get", f"crd/{name}", "-o",
                              'jsonpath={.status.conditions[?(@.type=="Established")].status}', check=False)
        if got.returncode != 0:
            cluster.kubectl("apply", "-f", str(manifest), check=False)
            return False
        return got.stdout.strip() == "True"

    cluster.kubectl("apply", "-f", str(manifest), check=False)
    wait_for(ready, timeout=timeout, interval=0.5, what=f"the CRD {name} to be Established")
