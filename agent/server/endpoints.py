"""HTTP endpoints of ``python -m agent run``: ``/healthz``, ``/readyz`` and ``/metrics``, and the
push webhook beside them on ``--http-addr``; the first three alone on ``--probe-addr``.

Metrics come from ``prometheus-client``; health and readiness from ``Health``, which the runner
tells when each pass starts and ends. Each address is a bounded listener of its own
(``listener``: waitress, with deadlines for headers and bodies).
"""

from __future__ import annotations

import errno
import threading
import time
from typing import Callable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from agent.notify.outbox import Counters
from agent.server import listener
from agent.server.listener import Limits, Listener, Request, Response
from agent.server.webhook import BODY_GRACE, MAX_BODY, MIN_RATE, PATH as WEBHOOK_PATH, READ_TIMEOUT


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


STUCK_MINIMUM = 600.0  # seconds: a pass may run this long whatever the interval before /healthz fails


class Health:
    """Liveness and readiness. Ready when this replica leads and its last pass finished within
    ``max_age`` seconds, or when it is a standby (not leading) whose election loop is alive.
    Live unless a pass has run for longer than ``stuck_after`` seconds (``run`` gives ``--stuck-pass-after``,
    by default 3 intervals, at least ``STUCK_MINIMUM``; issue 42: a pass hung for ever on one commit while ``/healthz``
    answered 200, so nothing restarted the pod). ``clock``: monotonic seconds (a fake in tests)."""

    def __init__(self, max_age: float, stuck_after: float | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.max_age, self.stuck_after, self.clock = max_age, stuck_after, clock
        self.started = clock()
        self.leading = False
        self.last_pass_end: float | None = None
        self.pass_start: float | None = None  # the running pass's, None between passes
        self.lock = threading.Lock()

    def pass_started(self) -> None:
        with self.lock:
            self.pass_start = self.clock()

    def pass_finished(self) -> None:
        with self.lock:
            self.last_pass_end = self.clock()
            self.pass_start = None

    def live(self) -> tuple[bool, str]:
        """(False, why) when the running pass has run for longer than ``stuck_after``."""
        with self.lock:
            if self.stuck_after is None or self.pass_start is None:
                return True, "ok"
            ran = self.clock() - self.pass_start
            if ran > self.stuck_after:
                return False, f"a pass has run for {ran:.0f}s (limit {self.stuck_after:.0f}s): it is stuck"
            return True, "ok"

    def ready(self) -> tuple[bool, str]:
        with self.lock:
            if not self.leading:
                return True, "standby"
            if self.last_pass_end is None:
                return False, "no pass has finished yet"
            age = self.clock() - self.last_pass_end
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
TEXT = "text/plain"

MAIN = Limits(connections=500, threads=4, max_body=MAX_BODY, body_grace=BODY_GRACE, min_rate=MIN_RATE,
              body_seconds=READ_TIMEOUT)
"""``--http-addr``: probes, metrics and the webhook. Bodies up to the webhook's ``MAX_BODY``; at most
500 connections (with 64 KiB of each body in memory: 32 MiB)."""
PROBES = Limits(connections=32, threads=2, max_body=0)
"""``--probe-addr``: probes and metrics only, never exposed: a few connections are plenty."""


def _text(code: int, body: bytes, allow: str | None = None, content_type: str = TEXT) -> Response:
    headers = [("Content-Type", content_type)]
    if allow:
        headers.append(("Allow", allow))  # RFC 9110: a 405 names the methods allowed
    return Response(code, headers, body)


def app(metrics: Metrics, health: Health, webhook=None):
    """The WSGI-free application of the endpoints (``listener.App``): ``/healthz``, ``/readyz``,
    ``/metrics`` for GET and HEAD, 405 for any other method; ``/hooks/git`` for ``webhook`` (an
    ``agent.server.webhook.Webhook``; None: 404); 404 for any other path."""

    def read(path: str) -> Response | None:
        if path == "/healthz":
            ok, why = health.live()
            return _text(200, b"ok\n") if ok else _text(503, (why + "\n").encode())
        if path == "/readyz":
            ok, why = health.ready()
            return _text(200 if ok else 503, (why + "\n").encode())
        if path == "/metrics":
            return _text(200, generate_latest(metrics.registry), content_type=CONTENT_TYPE_LATEST)
        return None

    def answer(request: Request) -> Response:
        hook = webhook is not None and request.path == WEBHOOK_PATH
        if request.method in ("GET", "HEAD"):
            found = read(request.path)
            if found is not None:
                return found
        if request.method == "HEAD":  # GET's status and headers, no body
            return _text(405, b"only POST is allowed\n", allow="POST") if hook else _text(404, b"not found\n")
        if hook:
            return webhook.handle(request)
        if request.path in READ_PATHS:
            return _text(405, b"only GET and HEAD are allowed\n", allow="GET, HEAD")
        return _text(404, b"not found\n")
    return answer


def serve(address: str, metrics: Metrics, health: Health, webhook=None) -> Listener:
    """Start the endpoints on ``address`` (``host:port``; ``:8080`` means all interfaces) within
    ``MAIN``'s limits and return the running ``listener.Listener`` (``.server_address`` holds the
    bound port; port 0 picks one). ``webhook``: an ``agent.server.webhook.Webhook`` answering
    ``/hooks/git`` (None: that path is 404), which answers from the headers alone where it can
    (``Webhook.early``). Raises OSError when it cannot listen, ValueError for a bad address."""
    host, _, port = address.rpartition(":")
    if not port.isdigit():
        raise ValueError(f"--http-addr {address!r} is not HOST:PORT (e.g. :8080 or 127.0.0.1:8080)")
    early = (lambda head: head.path == WEBHOOK_PATH and webhook.early(head)) if webhook is not None else \
        (lambda head: False)
    return listener.serve(address, app(metrics, health, webhook), MAIN, name="http", early=early)


def serve_probes(address: str, metrics: Metrics, health: Health) -> Listener:
    """``--probe-addr``: ``/healthz``, ``/readyz`` and ``/metrics`` on a listener of their own
    (``PROBES``' limits), so that they answer whatever floods ``--http-addr`` or the page.
    Raises OSError when it cannot listen."""
    return listener.serve(address, app(metrics, health), PROBES, name="probes")
