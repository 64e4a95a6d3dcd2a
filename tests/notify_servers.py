"""Stand-ins on loopback for what the agent notifies: a webhook receiver and the commit status
APIs of GitHub, GitLab and Gitea. Real HTTP servers speaking the documented paths, payloads
and errors; each records what it accepted."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.cluster import free_port


class _Server:
    """A ThreadingHTTPServer on 127.0.0.1 in a thread; ``mode``: ``ok``, ``down`` (503),
    ``hang`` (never answers), ``slow`` (answers after ``delay`` s), ``retry`` (429 with
    Retry-After ``retry_after`` for the first ``failures`` requests), ``flaky`` (handles the
    first ``failures`` requests, then answers 503 all the same), ``cut`` (closes the connection
    without an answer for the first ``failures`` requests: a connection error).
    ``down_after``: when set, the mode becomes ``down`` once that many POSTs were accepted (an
    outage that starts at a known point)."""

    def __init__(self):
        self.port = free_port()
        self.mode, self.delay, self.failures, self.lock = "ok", 0.0, 0, threading.Lock()
        self.retry_after = "1"  # the Retry-After of mode ``retry``
        self.down_after: int | None = None
        self.requests: list[tuple[str, str, dict, bytes]] = []  # every request: method, path, headers (lower-case names), body
        self.times: list[float] = []  # time.monotonic() of each request, as ``requests``
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _do(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with owner.lock:
                    owner.requests.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                    owner.times.append(time.monotonic())
                    mode = owner.mode
                    if mode == "cut" and owner.failures > 0:
                        owner.failures -= 1
                        self.close_connection = True  # no answer at all: the client sees the connection closed
                        return None
                    if mode == "retry" and owner.failures > 0:
                        owner.failures -= 1
                        return self._send(429, {"message": "slow down"}, {"Retry-After": owner.retry_after})
                    flaky = mode == "flaky" and owner.failures > 0
                    if flaky:
                        owner.failures -= 1
                if flaky:  # took the request (a receiver remembers its signature), then failed
                    owner.handle(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    owner.accepted.pop()
                    return self._send(503, {"message": "try again"})
                if mode == "hang":
                    time.sleep(3600)
                if mode == "down":
                    return self._send(503, {"message": "down"})
                if mode == "slow":
                    time.sleep(owner.delay)
                code, doc = owner.handle(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with owner.lock:
                    if self.command == "POST" and code < 300 and owner.down_after is not None:
                        owner.down_after -= 1
                        if owner.down_after <= 0:
                            owner.mode, owner.down_after = "down", None
                self._send(code, doc)

            def _send(self, code, doc, headers=None):
                data = json.dumps(doc).encode()
                self.send_response(code)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _do

        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class Receiver(_Server):
    """A webhook receiver that checks ``X-Gitops-Agent-Signature: t=<t>,v1=<hex>`` over
    ``<t>.<body>`` with ``secret`` (when set) and refuses replays: ``t`` older than
    ``tolerance`` seconds, or a signature seen before (401). ``accepted``: the JSON bodies it
    took; ``refused``: why each refused request was refused. ``path``: the secret path."""

    def __init__(self, secret: bytes | None = None, path: str = "/hook/s3cr3t-path-token", tolerance: int = 300):
        self.secret, self.path, self.tolerance = secret, path, tolerance
        self.accepted: list = []
        self.refused: list[str] = []
        self._seen: set[str] = set()
        super().__init__()

    @property
    def hook_url(self) -> str:
        return self.url + self.path

    def check(self, header: str, body: bytes, now: float | None = None) -> str | None:
        """Why a request is refused (None: accepted), as a receiver following the guide does."""
        if self.secret is None:
            return None
        parts = dict(p.split("=", 1) for p in (header or "").split(",") if "=" in p)
        if not parts.get("t", "").isdigit() or not parts.get("v1"):
            return "no signature"
        if abs((now or time.time()) - int(parts["t"])) > self.tolerance:
            return "too old"
        want = hmac.new(self.secret, parts["t"].encode() + b"." + body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(want, parts["v1"]):
            return "bad signature"
        if parts["v1"] in self._seen:
            return "replayed"
        self._seen.add(parts["v1"])
        return None

    def handle(self, method, path, headers, body):
        if method != "POST" or path != self.path:
            return 404, {"message": "not found"}
        why = self.check(headers.get("x-gitops-agent-signature", ""), body)
        if why:
            self.refused.append(why)
            return 401, {"message": why}
        self.accepted.append(json.loads(body))
        return 200, {"ok": True}

    def notifications(self) -> list[dict]:
        """Every notification accepted, batches unpacked."""
        out = []
        for doc in self.accepted:
            out += doc["notifications"] if "notifications" in doc else [doc]
        return out


class GitHost(_Server):
    """The commit status API of ``kind`` (github, gitlab, gitea) for ``repository`` with
    ``token``: POST a status (GitHub: 422 past ``limit`` statuses per sha and context), GET the
    commit's statuses newest first. ``statuses``: sha -> list of posted bodies, oldest first."""

    STATES = {"github": {"error", "failure", "pending", "success"},
              "gitlab": {"pending", "running", "success", "failed", "canceled"},
              "gitea": {"pending", "success", "error", "failure", "warning"}}

    def __init__(self, kind: str, repository: str = "team/apps", token: str = "host-token-123", limit: int = 1000):
        self.kind, self.repository, self.token, self.limit = kind, repository, token, limit
        self.statuses: dict[str, list[dict]] = {}
        super().__init__()

    @property
    def api_url(self) -> str:
        return self.url + {"github": "", "gitlab": "/api/v4", "gitea": "/api/v1"}[self.kind]

    def _authorized(self, headers) -> bool:
        if self.kind == "gitlab":
            return headers.get("private-token") == self.token
        scheme = "Bearer" if self.kind == "github" else "token"
        return headers.get("authorization") == f"{scheme} {self.token}"

    def _route(self, path: str):
        path = urllib.parse.urlsplit(path).path
        if self.kind == "gitlab":
            project = urllib.parse.quote(self.repository, safe="")
            post = re.fullmatch(rf"/api/v4/projects/{re.escape(project)}/statuses/([0-9a-f]{{40}})", path)
            get = re.fullmatch(rf"/api/v4/projects/{re.escape(project)}/repository/commits/([0-9a-f]{{40}})/statuses",
                               path)
        else:
            base = "" if self.kind == "github" else "/api/v1"
            post = re.fullmatch(rf"{base}/repos/{re.escape(self.repository)}/statuses/([0-9a-f]{{40}})", path)
            get = re.fullmatch(rf"{base}/repos/{re.escape(self.repository)}/commits/([0-9a-f]{{40}})/statuses", path)
        return post, get

    def handle(self, method, path, headers, body):
        if not self._authorized(headers):
            return 401, {"message": "Bad credentials"}
        post, get = self._route(path)
        name = "name" if self.kind == "gitlab" else "context"
        if method == "GET" and get:
            items = list(reversed(self.statuses.get(get.group(1), [])))
            key = "status" if self.kind in ("gitlab", "gitea") else "state"
            return 200, [{key: i["state"], name: i.get(name), "description": i.get("description"),
                          "target_url": i.get("target_url")} for i in items]
        if method == "POST" and post:
            doc = json.loads(body)
            if doc.get("state") not in self.STATES[self.kind]:
                return (400 if self.kind == "gitlab" else 422), {"message": "state is invalid"}
            same = [s for s in self.statuses.get(post.group(1), []) if s.get(name) == doc.get(name)]
            if self.kind == "github" and len(same) >= self.limit:
                return 422, {"message": "Validation Failed", "errors": [{"resource": "Status", "code": "custom",
                             "message": "This SHA and context has reached the maximum number of statuses."}]}
            self.statuses.setdefault(post.group(1), []).append(doc)
            return 201, {**doc, "id": len(self.statuses[post.group(1)])}
        return 404, {"message": "Not Found"}

    def posted(self, sha: str) -> list[tuple[str, str]]:
        """(state, description) of each status posted for ``sha``, oldest first."""
        return [(s["state"], s.get("description", "")) for s in self.statuses.get(sha, [])]
