"""The Kube client's connection pool and rate limit settings (no cluster: nothing is sent)."""

from __future__ import annotations

import contextlib
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agent.kube.client import ApiError, Kube

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


@pytest.fixture
def kubeconfig(tmp_path):
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    return str(path)


@pytest.mark.parametrize("concurrency", [1, 16, 64])
def test_the_connection_pool_holds_every_parallel_request_and_the_watches(kubeconfig, concurrency):
    kube = Kube(kubeconfig, concurrency=concurrency)
    assert kube.concurrency == concurrency
    assert kube.api.rest_client.pool_manager.connection_pool_kw["maxsize"] >= concurrency + 4


def test_defaults_are_fluxs_rate_limit_until_the_server_shows_flow_control(kubeconfig):
    kube = Kube(kubeconfig)
    assert (kube.limiter.qps, kube.limiter.burst) == (50.0, 300)
    assert kube.limit_auto and not kube.limiter.lifted


@contextlib.contextmanager
def answering(tmp_path, status=200, body=b'{"kind": "NamespaceList", "items": []}', headers=(),
              content_type="application/json"):
    """A local HTTP server answering every GET and PATCH with ``status``, ``body`` and the
    ``headers`` (name, value) pairs; yields the path of a kubeconfig pointing at it."""
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server naming)
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_PATCH(self):  # noqa: N802 (http.server naming)
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.do_GET()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        path = tmp_path / "kubeconfig"
        path.write_text(KUBECONFIG.replace("https://127.0.0.1:1", f"http://127.0.0.1:{server.server_address[1]}"))
        yield str(path)
    finally:
        server.shutdown()
        server.server_close()


FLOW_CONTROL = (("X-Kubernetes-PF-FlowSchema-UID", "79d53d38"), ("X-Kubernetes-PF-PriorityLevel-UID", "93320c6c"))


@pytest.mark.parametrize("status", [200, 403, 404])
def test_an_answer_with_the_servers_flow_control_headers_lifts_the_default_limit(tmp_path, status, caplog):
    """Flux's runtime/client drops its limit when the server has API Priority and Fairness; the
    filter sets its headers on every answer it classifies, refusals included."""
    caplog.set_level("INFO", logger="agent.kube")
    with answering(tmp_path, status=status, headers=FLOW_CONTROL) as kubeconfig:
        kube = Kube(kubeconfig, retry_seconds=0)
        with contextlib.suppress(ApiError):
            kube.request("GET", "/api/v1/namespaces")
        with contextlib.suppress(ApiError):
            kube.request("GET", "/api/v1/namespaces")
    assert kube.limiter.lifted and not kube.limit_auto
    assert [kube.limiter.reserve() for _ in range(400)] == [0.0] * 400
    lines = [r.getMessage() for r in caplog.records if "Priority and Fairness" in r.getMessage()]
    assert lines == ["the API server has API Priority and Fairness: no client-side rate limit "
                     "(--kube-api-qps or --kube-api-burst sets one)"]


def test_without_the_headers_the_default_limit_holds(tmp_path):
    with answering(tmp_path, headers=(("X-Kubernetes-PF-PriorityLevel", "x"),)) as kubeconfig:
        kube = Kube(kubeconfig, retry_seconds=0)
        kube.request("GET", "/api/v1/namespaces")
        kube.request("GET", "/api/v1/namespaces")
    assert kube.limit_auto and not kube.limiter.lifted
    assert (kube.limiter.qps, kube.limiter.burst) == (50.0, 300)


@pytest.mark.parametrize("limits, expected", [({"qps": 5}, (5.0, 300)), ({"burst": 7}, (50.0, 7)),
                                              ({"qps": 5, "burst": 7}, (5.0, 7))])
def test_a_limit_the_user_set_holds_whatever_the_server_has(tmp_path, limits, expected):
    with answering(tmp_path, headers=FLOW_CONTROL) as kubeconfig:
        kube = Kube(kubeconfig, retry_seconds=0, **limits)
        kube.request("GET", "/api/v1/namespaces")
    assert not kube.limit_auto and not kube.limiter.lifted
    assert (kube.limiter.qps, kube.limiter.burst) == expected


def test_throttle_waits_for_the_limit_and_reports_each_wait(kubeconfig):
    kube = Kube(kubeconfig, qps=4, burst=1)
    waits = []
    kube.on_wait = waits.append
    kube.throttle()
    kube.throttle()
    assert waits[0] == 0.0 and waits[1] >= 0.2


def test_throttle_ends_at_once_on_interrupt(kubeconfig):
    kube = Kube(kubeconfig, qps=0.01, burst=1)
    kube.throttle()
    kube.interrupt.set()
    started = time.monotonic()
    kube.throttle()
    assert time.monotonic() - started < 50  # not the token's 100 s, however loaded the machine


def test_a_request_passes_the_limit_before_it_is_sent(kubeconfig):
    kube = Kube(kubeconfig, retry_seconds=0)
    waits = []
    kube.on_wait = waits.append
    with pytest.raises(Exception):
        kube.request("GET", "/api/v1/namespaces")  # port 1: refused, not retried
    assert waits == [0.0]


@pytest.mark.parametrize("status, body, reason, message", [
    (404, b"404 page not found\n", "", "404 page not found"),  # the API server, for a group it does not serve
    (502, b"<html><body>Bad Gateway</body></html>", "", "<html><body>Bad Gateway</body></html>"),  # a proxy
    (200, b"not json", "Unreadable", "the answer is not JSON: not json"),
])
def test_an_answer_that_is_not_json_is_an_api_error_naming_the_request(tmp_path, status, body, reason, message):
    """It used to end the command in a JSONDecodeError traceback."""
    with answering(tmp_path, status=status, body=body, content_type="text/plain") as kubeconfig:
        kube = Kube(kubeconfig, retry_seconds=0)
        with pytest.raises(ApiError) as err:
            kube.request("PATCH", "/apis/heumsi.github.io/v1/namespaces/default/applications/web", body={},
                         content_type="application/merge-patch+json")
    assert (err.value.status, err.value.reason, err.value.message) == (status, reason, message)
    assert str(err.value) == (f"PATCH /apis/heumsi.github.io/v1/namespaces/default/applications/web: {status}"
                              f"{' ' + reason if reason else ''}: {message}")
