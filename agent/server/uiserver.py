"""The status page's HTTP server (``--ui-address``): routes of ``ui`` answered with ``pages``,
``detailpage`` and JSON; every answer with ``ui.HEADERS``, every 200 with an ETag. A ``ThreadingHTTPServer`` of its own,
beside ``endpoints``' (probes and metrics stay reachable whatever the page does)."""

from __future__ import annotations

import datetime
import hashlib
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from agent.server import detailpage, pages, ui, views

API = "/api/v1/applications"
PARTS = "/_parts"  # internal: the parts of a page its script swaps in
HTML, JSON, TEXT = "text/html; charset=utf-8", "application/json", "text/plain; charset=utf-8"


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def _split_app(rest: str) -> tuple[str, str] | None:
    """(namespace, name) of ``NS/NAME`` (percent-decoded), None for any other shape."""
    parts = rest.split("/")
    if len(parts) != 2 or not all(parts):
        return None
    return urllib.parse.unquote(parts[0]), urllib.parse.unquote(parts[1])


def answer(source: ui.Source, path: str, query: str) -> tuple[int, bytes, str]:
    """(status, body, content type) of a GET of ``path`` with ``query`` (raw query string)."""
    now = _now()
    params = urllib.parse.parse_qs(query)
    q, problems = views.Query.parse(params), views.Query.problems(params)
    if path == "/":
        return 200, pages.list_page(source.listing(q, now), q, source.last_pass(), problems).encode(), HTML
    if path == PARTS + "/":
        return 200, pages.list_parts(source.listing(q, now), q, source.last_pass()).encode(), HTML
    if path == API:
        if problems:
            return 400, json.dumps({"error": problems[0]}).encode() + b"\n", JSON
        return 200, json.dumps(source.applications(q, now), separators=(",", ":")).encode(), JSON
    for prefix, kind in (("/applications/", "page"), (PARTS + "/applications/", "parts"), (API + "/", "api")):
        if path.startswith(prefix) and (key := _split_app(path[len(prefix):])) is not None:
            return _application(source, key, kind, now)
    return 404, b"not found\n", TEXT


def _application(source: ui.Source, key: tuple[str, str], kind: str, now: datetime.datetime) -> tuple[int, bytes, str]:
    """One Application's answer: ``explain -o json``'s for ``api``, else its page or its parts."""
    found = source.explain(*key, now)
    if found is None:
        return (404, b'{"error":"no such Application"}', JSON) if kind == "api" else \
            (404, b"no such Application\n", TEXT)
    explained, app = found
    if kind == "api":
        return 200, json.dumps(explained, separators=(",", ":"), ensure_ascii=False).encode(), JSON
    render = detailpage.detail_page if kind == "page" else detailpage.parts
    return 200, render(explained, app, views.row(app, now), source.repo_url).encode(), HTML


def serve(address: str, source: ui.Source, token: str | None, anonymous: bool) -> ThreadingHTTPServer:
    """Start the page's server on ``address`` (``HOST:PORT``, port 0 picks one) in a daemon
    thread. ``token``: required of every request when set; else a loopback server checks ``Host``.
    Raises OSError when it cannot listen."""
    host, _, port = address.rpartition(":")
    static = ui.static_files()
    check_host = token is None and not anonymous

    class Handler(BaseHTTPRequestHandler):
        def _allowed(self) -> bool:
            if token is not None and not ui.authorized(self.headers.get("Authorization"), token):
                self._send(401, b"a token is needed (Authorization: Bearer TOKEN)\n", "text/plain; charset=utf-8",
                           extra={"WWW-Authenticate": 'Basic realm="gitops-agent", charset="UTF-8"'})
                return False
            if check_host and not ui.is_loopback(ui.host_of(self.headers.get("Host") or "")):
                self._send(421, b"this server answers loopback host names only\n", "text/plain; charset=utf-8")
                return False
            return True

        def do_GET(self, head: bool = False):  # noqa: N802 (http.server naming)
            if not self._allowed():
                return
            path, _, query = self.path.partition("?")
            if path in static:
                return self._send(200, static[path], ui.STATIC[path], head=head, cache="max-age=300")
            if path == "/favicon.ico":  # the page names /static/favicon.svg; other clients get no icon, no 404
                return self._send(204, b"", TEXT, head=head, cache="max-age=86400")
            code, body, kind = answer(source, path, query)
            if code == 200:  # pages, their parts and the API: the script polls with If-None-Match
                tag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
                if tag in (self.headers.get("If-None-Match") or ""):
                    return self._send(304, b"", kind, head=True, extra={"ETag": tag})
                return self._send(code, body, kind, head=head, extra={"ETag": tag}, cache="no-cache")
            self._send(code, body, kind, head=head)

        def do_HEAD(self):  # noqa: N802
            self.do_GET(head=True)

        def refuse(self):
            self._send(405, b"the status page is read-only: only GET and HEAD are allowed\n",
                       "text/plain; charset=utf-8", extra={"Allow": "GET, HEAD"})

        do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_TRACE = do_CONNECT = refuse  # noqa: N815

        def __getattr__(self, name):  # any other method (``FOO``): 405 as well, not http.server's 501
            if name.startswith("do_"):
                return self.refuse
            raise AttributeError(name)

        def _send(self, code, body, kind, head=False, extra=None, cache="no-store"):
            self.send_response(code)
            for name, value in {**ui.HEADERS, "Content-Type": kind, "Content-Length": str(len(body)),
                                "Cache-Control": cache, **(extra or {})}.items():
                self.send_header(name, value)
            self.end_headers()
            if not head:
                self.wfile.write(body)

        timeout = 30

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer((host or "0.0.0.0", int(port)), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="ui", daemon=True).start()
    return server
