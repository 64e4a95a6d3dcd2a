"""The status page's HTTP server (``--ui-address``): routes of ``ui`` answered with ``pages``,
``detailpage`` and JSON; every answer with ``ui.HEADERS``, every 200 with an ETag. A bounded listener of its own
(``listener``), beside ``endpoints``' (probes and metrics stay reachable whatever the page does)."""

from __future__ import annotations

import datetime
import hashlib
import json
import urllib.parse

from agent.server import detailpage, listener, pages, ui, views
from agent.server.listener import Limits, Listener, Request, Response

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


PAGE = Limits(connections=200, threads=4, max_body=1024)
"""The page's listener: GET and HEAD carry no body (any other method is answered 405 unread)."""


def app(source: ui.Source, token: str | None, check_host: bool):
    """The page's ``listener.App``: ``token`` required of every GET and HEAD when set; with
    ``check_host``, only loopback ``Host`` names are answered (DNS rebinding)."""
    static = ui.static_files()

    def send(code, body, kind, extra=None, cache="no-store") -> Response:
        return Response(code, [*ui.HEADERS.items(), ("Content-Type", kind), ("Cache-Control", cache),
                               *(extra or {}).items()], body)

    def refused(request: Request) -> Response | None:
        if token is not None and not ui.authorized(request.headers.get("Authorization"), token):
            return send(401, b"a token is needed (Authorization: Bearer TOKEN)\n", "text/plain; charset=utf-8",
                        extra={"WWW-Authenticate": 'Basic realm="gitops-agent", charset="UTF-8"'})
        if check_host and not ui.is_loopback(ui.host_of(request.headers.get("Host") or "")):
            return send(421, b"this server answers loopback host names only\n", "text/plain; charset=utf-8")
        return None

    def answer_request(request: Request) -> Response:
        if request.method not in ("GET", "HEAD"):
            return send(405, b"the status page is read-only: only GET and HEAD are allowed\n",
                        "text/plain; charset=utf-8", extra={"Allow": "GET, HEAD"})
        refusal = refused(request)
        if refusal is not None:
            return refusal
        path = request.path
        if path in static:
            return send(200, static[path], ui.STATIC[path], cache="max-age=300")
        if path == "/favicon.ico":  # the page names /static/favicon.svg; other clients get no icon, no 404
            return send(204, b"", TEXT, cache="max-age=86400")
        code, body, kind = answer(source, path, request.query)
        if code == 200:  # pages, their parts and the API: the script polls with If-None-Match
            tag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
            if tag in (request.headers.get("If-None-Match") or ""):
                return send(304, b"", kind, extra={"ETag": tag})
            return send(code, body, kind, extra={"ETag": tag}, cache="no-cache")
        return send(code, body, kind)
    return answer_request


def serve(address: str, source: ui.Source, token: str | None, anonymous: bool) -> Listener:
    """Start the page's server on ``address`` (``HOST:PORT``, port 0 picks one) within ``PAGE``'s
    limits. ``token``: required of every request when set. Without one, a server on a loopback
    address checks ``Host`` (DNS rebinding), ``--ui-anonymous`` or not; ``anonymous`` lifts the
    check only on other addresses (any name may reach those). Raises OSError when it cannot listen."""
    host = address.rpartition(":")[0].strip("[]")
    check_host = token is None and (not anonymous or (bool(host) and ui.is_loopback(host)))
    return listener.serve(address, app(source, token, check_host), PAGE, name="ui",
                          early=lambda head: head.method not in ("GET", "HEAD"))
