"""HTTP endpoints of ``python -m agent run``: ``/healthz``, ``/readyz`` and ``/metrics``.

Metrics come from ``prometheus-client``; health and readiness from ``Health``, which the runner
updates after every pass.
"""

from __future__ import annotations

import errno
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from agent.notify.outbox import Counters
from agent.server.webhook import PATH as WEBHOOK_PATH


class Metrics:
    """The agent's Prometheus metrics, in their own registry (names prefixed ``gitops_agent_``)."""

    def __init__(self):
        self.registry = CollectorRegistry()
        r = self.registry
        self.pass_duration = Histogram("gitops_agent_pass_duration_seconds", "Duration of a reconcile pass.",
                                       registry=r, buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120))
        self.passes = Counter("gitops_agent_passes_total", "Reconcile passes by result (success, failure).",
                              ["result"], registry=r)
        self.objects = Counter("gitops_agent_objects_total",
                               "Objects acted on by kind and action (created, configured, pruned, failed).",
                               ["kind", "action"], registry=r)
        self.last_synced = Gauge("gitops_agent_last_synced_commit_timestamp_seconds",
                                 "Unix time when a commit was last fully synced.", registry=r)
        self.source_last_success = Gauge(
            "gitops_agent_source_last_success_timestamp_seconds",
            "Unix time when the source was last fetched and its commit read, by source id (0 until the first time: "
            "alert on its age; see deploy/components/alerts/).", ["source"], registry=r)
        self.applications = Gauge(
            "gitops_agent_applications",
            "Applications whose status the last pass that read the source wrote, by source id and Ready (true: synced "
            "and healthy; false: failed, progressing, degraded, missing or suspended).", ["source", "ready"], registry=r)
        self.leader = Gauge("gitops_agent_leader", "1 when this replica leads and syncs, else 0.", registry=r)
        self.fetch_duration = Histogram("gitops_agent_git_fetch_duration_seconds", "Duration of a Git fetch.",
                                        registry=r, buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
        self.fetch_failures = Counter("gitops_agent_git_fetch_failures_total", "Git fetches that failed.",
                                      registry=r)
        self.webhook_requests = Counter("gitops_agent_webhook_requests_total",
                                        "POST /hooks/git requests by result (accepted, ignored, unauthorized, ...).",
                                        ["result"], registry=r)
        self.notifications = Counters(r)  # the notifier's (agent/notify/outbox.py), named here for the reference
        self.notifications_sent = self.notifications.sent
        self.notifications_failed = self.notifications.failed
        self.notifications_dropped = self.notifications.dropped
        self.rate_limit_wait = Histogram(
            "gitops_agent_kube_api_rate_limit_wait_seconds",
            "Seconds each API request waited for the client-side rate limit (--kube-api-qps, --kube-api-burst).",
            registry=r, buckets=(0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))


class Health:
    """Liveness and readiness. Ready when this replica leads and its last pass finished within
    ``max_age`` seconds, or when it is a standby (not leading) whose election loop is alive."""

    def __init__(self, max_age: float):
        self.max_age = max_age
        self.started = time.monotonic()
        self.leading = False
        self.last_pass_end: float | None = None
        self.lock = threading.Lock()

    def pass_finished(self) -> None:
        with self.lock:
            self.last_pass_end = time.monotonic()

    def ready(self) -> tuple[bool, str]:
        with self.lock:
            if not self.leading:
                return True, "standby"
            if self.last_pass_end is None:
                return False, "no pass has finished yet"
            age = time.monotonic() - self.last_pass_end
            if age > self.max_age:
                return False, f"last pass finished {age:.0f}s ago (limit {self.max_age:.0f}s)"
            return True, f"last pass finished {age:.0f}s ago"


def listen_problem(address: str, err: OSError) -> str:
    """Why the server cannot listen on ``address`` (``HOST:PORT``), in words, from the error
    ``serve`` raised binding it: no errno, no OS message in brackets."""
    host, _, port = address.rpartition(":")
    if err.errno == errno.EADDRINUSE:
        return "the address is already in use (another process listens on it)"
    if err.errno == errno.EADDRNOTAVAIL:
        return f"{host} is not an address of this machine (give one of its addresses, or none for every interface)"
    if err.errno in (errno.EACCES, errno.EPERM) and port.isdigit() and int(port) < 1024:
        return (f"this user may not listen on port {int(port)}: ports below 1024 need root or the "
                "CAP_NET_BIND_SERVICE capability")
    return (err.strerror or str(err)).lower()


READ_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})  # GET and HEAD only


def serve(address: str, metrics: Metrics, health: Health, webhook=None) -> ThreadingHTTPServer:
    """Start the HTTP server on ``address`` (``host:port``; ``:8080`` means all interfaces) in a
    daemon thread and return it (``.server_address`` holds the bound port; port 0 picks one).
    ``webhook``: an ``agent.server.webhook.Webhook`` answering ``/hooks/git`` (None: that path is 404)."""
    host, _, port = address.rpartition(":")
    if not port.isdigit():
        raise ValueError(f"--http-addr {address!r} is not HOST:PORT (e.g. :8080 or 127.0.0.1:8080)")

    class Handler(BaseHTTPRequestHandler):
        def _read(self) -> tuple[int, bytes, str] | None:
            """(code, body, content type) of a read-only endpoint, None for any other path."""
            path = self.path.split("?", 1)[0]
            if path == "/healthz":
                return 200, b"ok\n", "text/plain"
            if path == "/readyz":
                ok, why = health.ready()
                return 200 if ok else 503, (why + "\n").encode(), "text/plain"
            if path == "/metrics":
                return 200, generate_latest(metrics.registry), CONTENT_TYPE_LATEST
            return None

        def do_GET(self):  # noqa: N802 (http.server naming)
            answer = self._read()
            if answer is None:
                self.do_POST()  # /hooks/git answers 405 to a GET; anything else 404
            else:
                self._send(*answer)

        def do_HEAD(self):  # noqa: N802 (http.server naming): GET's status and headers, no body
            answer = self._read()
            if answer is None:
                webhook_path = webhook is not None and self.path.split("?", 1)[0] == WEBHOOK_PATH
                answer = (405, b"only POST is allowed\n", "text/plain") if webhook_path else \
                    (404, b"not found\n", "text/plain")
            self._send(*answer, head=True, allow="POST" if answer[0] == 405 else None)

        def do_POST(self):  # noqa: N802 (http.server naming); other methods only reach the webhook
            path = self.path.split("?", 1)[0]
            if webhook is not None and path == WEBHOOK_PATH:
                webhook.handle(self)
            elif path in READ_PATHS:
                self._send(405, b"only GET and HEAD are allowed\n", "text/plain", allow="GET, HEAD")
            else:
                self._send(404, b"not found\n", "text/plain")

        do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_TRACE = do_POST  # noqa: N815 (405, or 404)

        def __getattr__(self, name):  # any other method (``FOO``): as POST, not http.server's 501
            if name.startswith("do_"):
                return self.do_POST
            raise AttributeError(name)

        def _send(self, code: int, body: bytes, content_type: str, head: bool = False,
                  allow: str | None = None) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            if allow:
                self.send_header("Allow", allow)  # RFC 9110: a 405 names the methods allowed
            self.end_headers()
            if not head:
                self.wfile.write(body)

        timeout = 30  # seconds: a client that stalls while sending its request is dropped

        def log_message(self, *args):  # probes every few seconds: keep the log for passes
            pass

    server = ThreadingHTTPServer((host or "0.0.0.0", int(port)), Handler)
    # shutdown() waits for the loop's next poll: 0.1 s keeps SIGTERM's exit prompt
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="http", daemon=True).start()
    return server
