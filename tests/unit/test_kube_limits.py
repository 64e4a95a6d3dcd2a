"""The Kube client's connection pool and rate limit settings (no cluster: nothing is sent)."""

from __future__ import annotations

import time

import pytest

from agent.kube import Kube

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


def test_defaults_are_fluxs_rate_limit(kubeconfig):
    kube = Kube(kubeconfig)
    assert (kube.limiter.qps, kube.limiter.burst) == (50.0, 300)


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
    assert time.monotonic() - started < 1


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
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from agent.kube import ApiError

    class Handler(BaseHTTPRequestHandler):
        def do_PATCH(self):  # noqa: N802 (http.server naming)
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        path = tmp_path / "kubeconfig"
        path.write_text(KUBECONFIG.replace("https://127.0.0.1:1", f"http://127.0.0.1:{server.server_address[1]}"))
        kube = Kube(str(path), retry_seconds=0)
        with pytest.raises(ApiError) as err:
            kube.request("PATCH", "/apis/heumsi.github.io/v1/namespaces/default/applications/web", body={},
                         content_type="application/merge-patch+json")
    finally:
        server.shutdown()
    assert (err.value.status, err.value.reason, err.value.message) == (status, reason, message)
    assert str(err.value) == (f"PATCH /apis/heumsi.github.io/v1/namespaces/default/applications/web: {status}"
                              f"{' ' + reason if reason else ''}: {message}")
