"""The bounded listeners (``agent.server.listener``) on real loopback sockets, ``Health``'s stuck
pass on a fake clock, and the page's Host check with ``--ui-anonymous`` (issue 42)."""

from __future__ import annotations

import http.client
import logging
import socket
import struct
import time

import pytest

from agent.server import endpoints, listener, uiserver
from agent.server.listener import Limits, Response
from tests.unit.server.test_ui import source_with


def hello(request):
    return Response(200, [("Content-Type", "text/plain"), ("ETag", '"x"')], b"hello " + request.body)


@pytest.fixture
def serve():
    running = []

    def start(limits=Limits(header_seconds=1, body_grace=1, threads=2), early=lambda head: False, app=hello):
        server = listener.serve("127.0.0.1:0", app, limits, name="test", early=early)
        running.append(server)
        return server.server_address[1]
    yield start
    for server in running:
        server.shutdown()


def ask(port, method="GET", path="/", body=None, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.getheaders(), resp.read()
    finally:
        conn.close()


def closed_within(sock: socket.socket, seconds: float) -> float | None:
    """Seconds until the server closed ``sock`` (EOF or reset), None if it did not within ``seconds``."""
    began = time.monotonic()
    sock.settimeout(seconds)
    try:
        while sock.recv(4096):
            pass
    except socket.timeout:
        return None
    except ConnectionResetError:
        pass
    return time.monotonic() - began


def test_headers_that_never_end_are_cut_off_at_the_deadline_however_they_trickle(serve):
    port = serve()
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(b"GET / HTTP/1.1\r\n")
    began = time.monotonic()
    for _ in range(6):  # a byte every 0.3 s: each read is recent, the request is not
        time.sleep(0.3)
        try:
            sock.sendall(b"X")
        except OSError:
            break
    took = closed_within(sock, 10)
    assert took is not None and time.monotonic() - began < 1 + 1 + 3  # the deadline, a maintenance tick, slack
    sock.close()
    assert ask(port)[0] == 200  # others are still served


def test_a_late_body_reaches_the_app_as_timed_out(serve):
    seen = []

    def app(request):
        seen.append((request.timed_out, request.body))
        return Response(408 if request.timed_out else 200, [("Content-Type", "text/plain")], b"")
    port = serve(app=app)
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
    assert sock.recv(4096).startswith(b"HTTP/1.1 408 ")
    sock.close()
    assert seen == [(True, b"")]


def test_an_early_answer_does_not_wait_for_the_body_and_header_names_keep_their_spelling(serve):
    port = serve(early=lambda head: head.headers.get("Transfer-Encoding") == "chunked")
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")  # no chunk ever
    answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 200 ") and b"\r\nETag: " in answer and b"Connection: close" in answer
    sock.close()


def test_a_client_that_resets_leaves_nothing_in_the_log(serve, caplog):
    big = Response(200, [("Content-Type", "text/plain")], b"x" * 4_000_000)
    port = serve(app=lambda request: big)
    with caplog.at_level(logging.INFO):
        for _ in range(10):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
        time.sleep(0.5)
        assert ask(port)[0] == 200
    assert [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info] == []


def test_connections_beyond_the_limit_wait_and_the_listener_stops_within_a_second(serve):
    port = serve(Limits(connections=8, header_seconds=1, threads=1))
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(20)]  # 12 beyond the limit: backlog
    for sock in held:
        sock.sendall(b"GET / HTTP/1.1\r\n")
    assert ask(port)[0] == 200  # served once the held ones miss their deadline
    for sock in held:
        sock.close()


def test_a_pass_running_past_its_bound_fails_healthz():
    now = [1000.0]
    health = endpoints.Health(max_age=60, stuck_after=600, clock=lambda: now[0])
    assert health.live() == (True, "ok")
    health.pass_started()
    now[0] += 600
    assert health.live()[0] is True
    now[0] += 1
    ok, why = health.live()
    assert not ok and why == "a pass has run for 601s (limit 600s): it is stuck"
    health.pass_finished()
    assert health.live() == (True, "ok")
    app = endpoints.app(endpoints.Metrics(), health)
    health.pass_started()
    now[0] += 10_000
    answer = app(listener.Request("GET", "/healthz", "", {}))
    assert (answer.code, answer.body) == (503, b"a pass has run for 10000s (limit 600s): it is stuck\n")


def test_anonymous_on_loopback_still_answers_loopback_host_names_only():
    """``--ui-anonymous`` with a loopback ``--ui-address`` turned the Host check off: a page a
    browser could reach by DNS rebinding (issue 42)."""
    server = uiserver.serve("127.0.0.1:0", source_with(), None, anonymous=True)
    try:
        port = server.server_address[1]
        assert ask(port, headers={"Host": "evil.example"})[0] == 421
        assert ask(port, headers={"Host": f"127.0.0.1:{port}"})[0] == 200
    finally:
        server.shutdown()


def test_an_answer_that_closes_says_so_and_closes(serve):
    """WSGI may not name ``Connection``: ``Response.close`` reaches waitress another way (it was a 500)."""
    port = serve(app=lambda request: Response(413, [("Content-Type", "application/json")], b"{}", close=True))
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 413 ") and b"\r\nConnection: close\r\n" in answer
    assert closed_within(sock, 5) is not None
    sock.close()
