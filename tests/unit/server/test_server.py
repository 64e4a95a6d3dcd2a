"""The agent's HTTP endpoints (``agent.server``): probes and metrics answer GET and HEAD, and
say which methods they allow to any other (a real server on a free loopback port)."""

from __future__ import annotations

import http.client

import pytest

from agent.server import endpoints as server


@pytest.fixture
def address():
    health = server.Health(max_age=60)
    health.leading = True  # a standby is always ready
    running = server.serve("127.0.0.1:0", server.Metrics(), health)
    try:
        yield running.server_address, health
    finally:
        running.shutdown()
        running.server_close()


def ask(address, method, path):
    conn = http.client.HTTPConnection(*address[0], timeout=10)
    try:
        conn.request(method, path)
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


@pytest.mark.parametrize("path, code", [("/healthz", 200), ("/readyz", 503), ("/metrics", 200)])
def test_head_answers_what_get_answers_without_the_body(address, path, code):
    """Load balancers and uptime checkers probe with HEAD; it was 501."""
    status, headers, body = ask(address, "GET", path)
    head_status, head_headers, head_body = ask(address, "HEAD", path)
    assert status == head_status == code
    assert head_body == b"" and body
    assert head_headers["Content-Type"] == headers["Content-Type"]
    assert int(head_headers["Content-Length"]) > 0


def test_ready_after_a_pass_and_query_strings_are_ignored(address):
    address[1].pass_finished()
    assert ask(address, "GET", "/readyz?verbose")[0] == 200
    assert ask(address, "HEAD", "/readyz")[0] == 200


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "FOO"])
@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics"])
def test_other_methods_on_an_endpoint_are_405_naming_get_and_head(address, method, path):
    status, headers, body = ask(address, method, path)
    assert (status, headers.get("Allow"), body) == (405, "GET, HEAD", b"only GET and HEAD are allowed\n")


@pytest.mark.parametrize("method", ["GET", "HEAD", "POST"])
def test_unknown_paths_are_404(address, method):
    assert ask(address, method, "/nope")[0] == 404
    assert ask(address, method, "/hooks/git")[0] == 404  # no webhook configured
