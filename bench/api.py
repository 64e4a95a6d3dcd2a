"""A plain HTTP client for the local control plane: the harness's own requests (metrics, lists,
clean-up, the hand edit) and the plain parallel server-side-apply loop that is the ceiling.

Deliberately not the agent's ``kube`` module: the ceiling must measure the API server, not the
agent's client. urllib3 (a dependency of the ``kubernetes`` client) keeps one connection per
thread alive.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import urllib3

from . import stats

PATHS = {
    "Namespace": ("/api/v1", "namespaces", False),
    "Service": ("/api/v1", "services", True),
    "Deployment": ("/apis/apps/v1", "deployments", True),
    "Application": ("/apis/heumsi.github.io/v1", "applications", True),
}


class Api:
    """Token-authenticated JSON requests to the server named in a kubeconfig written by
    ``tests.cluster`` (TLS verified against its certificate authority)."""

    def __init__(self, kubeconfig: Path, threads: int = 8):
        config = json.loads(Path(kubeconfig).read_text())
        cluster = config["clusters"][0]["cluster"]
        self.server = cluster["server"]
        self.headers = {"Authorization": f"Bearer {config['users'][0]['user']['token']}",
                        "Accept": "application/json"}
        self.pool = urllib3.PoolManager(num_pools=2, maxsize=threads, block=True,
                                        ca_certs=cluster["certificate-authority"], cert_reqs="CERT_REQUIRED",
                                        timeout=urllib3.Timeout(connect=10, read=120))

    def request(self, method: str, path: str, body=None, content_type: str = "application/json",
                ok=(200, 201, 202)) -> dict:
        """One request; returns the decoded JSON answer. RuntimeError naming the request and
        the server's answer for any status outside ``ok``."""
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        resp = self.pool.request(method, self.server + path, body=data,
                                 headers={**self.headers, "Content-Type": content_type})
        if resp.status not in ok:
            raise RuntimeError(f"{method} {path}: {resp.status} {resp.data[:300]!r}")
        return json.loads(resp.data) if resp.data and resp.data[:1] in (b"{", b"[") else {}

    def request_counts(self) -> dict:
        """``apiserver_request_total`` now (see ``stats.parse_request_total``)."""
        resp = self.pool.request("GET", self.server + "/metrics", headers=self.headers)
        return stats.parse_request_total(resp.data.decode())

    def object_path(self, obj: dict, name: bool = True) -> str:
        prefix, plural, namespaced = PATHS[obj["kind"]]
        meta = obj["metadata"]
        parts = [prefix] + (["namespaces", meta["namespace"]] if namespaced else []) + [plural]
        return "/".join(parts + ([meta["name"]] if name else []))

    def apply(self, obj: dict, manager: str) -> dict:
        """Server-side apply of one object (``application/apply-patch+yaml``, force)."""
        return self.request("PATCH", self.object_path(obj) + f"?fieldManager={manager}&force=true",
                            body=obj, content_type="application/apply-patch+yaml")

    def list(self, kind: str, selector: str | None = None) -> list[dict]:
        prefix, plural, _ = PATHS[kind]
        query = f"?labelSelector={selector}" if selector else ""
        return self.request("GET", f"{prefix}/{plural}{query}").get("items", [])

    def events_from(self, component: str) -> list[dict]:
        """Every Event whose ``source.component`` is ``component``, in all namespaces."""
        return self.request("GET", f"/api/v1/events?fieldSelector=source%3D{component}").get("items", [])

    def delete_namespaces(self, names: list[str], timeout: float) -> float:
        """Delete the namespaces (those that exist) and wait until all are gone; returns the
        seconds it took. RuntimeError when they are not gone within ``timeout`` seconds."""
        started = time.monotonic()
        for name in names:
            self.request("DELETE", f"/api/v1/namespaces/{name}", ok=(200, 202, 404))
        while True:
            left = {ns["metadata"]["name"] for ns in self.list("Namespace")} & set(names)
            if not left:
                return time.monotonic() - started
            if time.monotonic() - started > timeout:
                raise RuntimeError(f"namespaces {sorted(left)} still there after {timeout:.0f}s")
            time.sleep(1.0)

    def apply_all(self, objects: list[dict], threads: int, manager: str = "bench-loop") -> None:
        """Server-side apply every object, ``threads`` at a time (the ceiling's inner loop)."""
        with ThreadPoolExecutor(threads) as pool:
            for _ in pool.map(lambda o: self.apply(o, manager), objects):
                pass
