"""The read-only status page of ``run`` (``--ui-address``): what it reads, and its guards.
The HTTP server is ``uiserver``.

Routes (GET and HEAD; any other method answers 405 and changes nothing; there is no write):

- ``/``: the list (``pages.list_page``); query ``namespace``, ``health``, ``sync``, ``name``,
  ``sort``, ``order=desc``, ``page``, ``per`` (``views.Query``);
- ``/applications/NS/NAME``: one Application (``detailpage``): what ``explain`` says;
- ``/api/v1/applications`` (same query): the Applications as ``get -o json`` prints them
  (``Source.applications``); ``/api/v1/applications/NS/NAME``: ``explain -o json``'s answer
  (``explainview.explanation``);
- ``/_parts/`` and ``/_parts/applications/NS/NAME`` (same query): internal, the parts of those
  two pages that change, rendered and escaped by the server as the pages are
  (``pages.list_parts``, ``detailpage.parts``); the page's script polls them and swaps them in.
  Every one of these answers has an ETag (``If-None-Match`` answers 304);
- ``/static/page.js``, ``/static/page.css``: the page's only script and style (package data,
  read once at start).

Why it never asks the API server: it reads ``Source`` only, which holds ``run``'s watch cache
(``cache.Cache``), its last pass and its Git mirror; ``Source`` has no ``Kube`` to ask with.

Guards: every answer carries a Content-Security-Policy that allows only this origin's script and
style (no inline script), ``frame-ancestors 'none'``, ``nosniff`` and no referrer. With a token
(``--ui-token-file``), every request needs ``Authorization: Bearer TOKEN`` or Basic with the token
as password (a browser asks for it); without one (loopback or ``--ui-anonymous``), a loopback
server answers only requests whose ``Host`` is a loopback name, so a web page that rebinds its
DNS name to 127.0.0.1 cannot read it.
"""

from __future__ import annotations

import base64
import datetime
import hmac
import ipaddress
import threading
import urllib.parse
from importlib import resources

from agent.api.labels import APPLICATION_LABEL
from agent.kinds import registry
from agent.server import gitinfo, views
from agent.views import explainview

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
           "Referrer-Policy": "no-referrer", "Cross-Origin-Opener-Policy": "same-origin",
           "Cross-Origin-Resource-Policy": "same-origin"}
STATIC = {"/static/page.js": "text/javascript; charset=utf-8", "/static/page.css": "text/css; charset=utf-8",
          "/static/favicon.svg": "image/svg+xml"}
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP addresses (``127.0.0.0/8``, ``::1``; brackets allowed)."""
    host = host.strip("[]").lower()
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_of(host_header: str) -> str:
    """The host of a ``Host`` header (``name:port``, ``[v6]:port``) without the port."""
    if host_header.startswith("["):
        return host_header[1:host_header.find("]")] if "]" in host_header else host_header
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


def authorized(header: str | None, token: str) -> bool:
    """True when ``header`` (Authorization) carries ``token`` as Bearer or as Basic's password."""
    scheme, _, value = (header or "").partition(" ")
    given = value.strip()
    if scheme.lower() == "basic":
        try:
            given = base64.b64decode(given, validate=True).decode("utf-8").partition(":")[2]
        except (ValueError, UnicodeDecodeError):
            return False
    elif scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.encode(), token.encode())


class Source:
    """What the page reads: ``cache`` (``cache.Cache``), ``runner`` (its ``last_pass`` and
    ``last_commit``; None in tests), ``commits`` (``gitinfo.Commits``: the list's subjects),
    ``git`` (``gitinfo.Explained``: an Application's commits and diff), ``repo_url`` (for
    links; credentials are never shown: ``--repo``'s user-info is dropped by
    ``repository.identity``) and ``default_profile`` (``run``'s ``--default-security-profile``,
    which ``explain`` renders the children with)."""

    def __init__(self, cache, runner=None, commits: gitinfo.Commits | None = None, repo_url: str | None = None,
                 git: gitinfo.Explained | None = None, default_profile: str = "none"):
        self.cache, self.runner, self.repo_url = cache, runner, repo_url
        self.default_profile = default_profile
        self.commits = commits or gitinfo.Commits(None)
        self.git = git or gitinfo.Explained(None, None, None)
        self._lock = threading.Lock()
        self._rows: tuple[int, list[dict]] = (-1, [])
        self._memo: dict[int, tuple[dict, dict]] = {}  # id(Application) -> (it, its row)

    def rows(self, now: datetime.datetime) -> list[dict]:
        """Every Application's row (``views.row``). The list is rebuilt only when the cache
        changed, and then only the rows of Applications that changed are made again (the cache
        replaces an object's dict when it changes), so a watch event costs one row, not N."""
        version = self.cache.version
        with self._lock:
            if self._rows[0] != version:
                memo, rows = {}, []
                for app in self.cache.of_kind("Application"):
                    kept = self._memo.get(id(app))
                    row = kept[1] if kept is not None and kept[0] is app else views.row(app, now)
                    memo[id(app)] = (app, row)
                    rows.append(row)
                self._memo, self._rows = memo, (version, rows)
            return self._rows[1]

    def last_pass(self) -> dict:
        return dict(getattr(self.runner, "last_pass", None) or {})

    def listing(self, q: views.Query, now: datetime.datetime) -> dict:
        """``views.listing`` with the page's rows copied, their age made current and their subject read."""
        out = views.listing(self.rows(now), q)
        items = [dict(r) for r in out["items"]]
        info = self.commits.info(r["changedSha"] for r in items)
        for r in items:
            r["age"] = views.appview.age_since(r["created"], now) if r["created"] else r["age"]
            r["subject"] = (info.get(r["changedSha"]) or {}).get("subject")
        out["items"] = items
        return out

    def applications(self, q: views.Query, now: datetime.datetime) -> dict:
        """``/api/v1/applications``: the Applications of ``q``'s page as ``get -o json`` prints them
        (a v1 ``List``, managedFields dropped), filtered, sorted and paged as the list is. Its
        ``metadata`` says what remains as the API server's chunked lists do: ``continue`` (the next
        page's number, for ``page=``) and ``remainingItemCount``, when more follow. A page past the
        end has no items."""
        out = views.listing(self.rows(now), q, clamp=False)
        items = [self.cache.get("Application", r["namespace"] or "", r["name"] or "") for r in out["items"]]
        meta: dict = {"resourceVersion": ""}
        remaining = out["total"] - out["page"] * out["per"]
        if remaining > 0:
            meta.update({"continue": str(out["page"] + 1), "remainingItemCount": remaining})
        return {"apiVersion": "v1", "kind": "List", "items": [i for i in items if i is not None], "metadata": meta}

    def explain(self, namespace: str, name: str, now: datetime.datetime) -> tuple[dict, dict] | None:
        """(``explain -o json``'s answer for the Application, the Application), or None when the
        cache has none: ``explainview.explanation`` of the cache's Application, children (with
        their managedFields, for drift), pods and Events, and of what ``run``'s mirror says at the
        commit of its last pass (``gitinfo.Explained``)."""
        app = self.cache.whole("Application", namespace, name)
        if app is None:
            return None
        spec = app.get("spec") if isinstance(app.get("spec"), dict) else {}
        children = {slot: self.cache.whole(k.kind, namespace, child) for k, child, slot in registry.members(name, spec)}
        pods = self.cache.where("Pod", namespace, APPLICATION_LABEL, name)
        events = self.cache.in_namespace("Event", namespace)
        git = self.git.of(app, getattr(self.runner, "last_commit", None))
        found = explainview.explanation(app, children, pods, events, now, git, self.default_profile)
        (app.get("metadata") or {}).pop("managedFields", None)
        return found, app


def static_files() -> dict[str, bytes]:
    root = resources.files("agent.server") / "static"
    return {path: (root / path.rsplit("/", 1)[1]).read_bytes() for path in STATIC}
