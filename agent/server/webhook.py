"""Push webhooks: ``POST /hooks/git`` asks ``run`` for a pass now instead of at the next interval.

Why it is shaped like this: webhook endpoints face the internet, and the ones in Flux and Argo CD
have had denial-of-service and authentication bugs (unauthenticated large bodies, malformed
payloads, a token compared with ``!=``). So here:

- it is off (404) unless a secret is configured; every secret comparison is constant time
  (``hmac.compare_digest``), and a plain token is compared as digests so its length leaks too;
- the body is bounded before it is read (``Content-Length`` at most ``MAX_BODY``, 413 beyond);
  the listener (``listener``) reads it against a deadline of its own (its declared length at
  a sane rate, at most ``READ_TIMEOUT``; 408 when the client is too slow) before the handler
  sees it, so a slow sender holds a socket, never one of the handful of slots in which whole
  requests are judged (503 beyond, issue 42: four slow bodies held every slot);
- an authenticated hit only *requests* a pass (``Runner.request_pass``): the handler never waits
  for a pass, requests coalesce with each other, the watches and the schedule, and a pass
  always fetches from Git itself. Nothing from the payload is trusted except the pushed ref's
  name, used only to ignore pushes to branches this agent does not sync;
- with leader election, a standby that receives a verified push hands it to the leader through
  the Lease (``forward``, see ``kube.election``) and answers 202 ``forwarded``: behind one
  Service, a hit lands on any replica and none is lost. Only when the API server refuses that
  write does it answer 503, so the sender's redelivery can retry.

Pure parts (``authenticate``, ``parse_payload``, ``event_kind``, ``ref_wanted``) are unit-tested
in ``tests/unit/server/test_webhook.py``; ``Webhook.handle`` is the transport around them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import threading
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

from agent.common import values

if TYPE_CHECKING:
    from agent.server.listener import Response

log = logging.getLogger("agent.webhook")

PATH = "/hooks/git"
FLAG = "--webhook-secret-file"  # named by every secret error
MAX_BODY = 1_048_576  # bytes (1 MiB); GitHub caps its payloads at 25 MB, but a push payload is small
READ_TIMEOUT = 10.0  # seconds: the longest any body may take to arrive
BODY_GRACE = 2.0  # seconds a body may take beyond its declared length at MIN_RATE
MIN_RATE = 65_536  # bytes per second: slower senders are cut off (a 1 MiB body: 2 s + 16 s, so READ_TIMEOUT)
MAX_CONCURRENT = 4  # hook requests handled at once; more answer 503
HEAD_REFRESH = 600.0  # seconds between look-ups of the remote's default branch (no --ref)
JSON_TYPES = ("application/json",)
FORM_TYPES = ("application/x-www-form-urlencoded",)  # GitHub's "Content type" default


class Malformed(ValueError):
    """The body is not a payload we accept (bad JSON, not an object, a ``ref`` that is not a
    string, a form without exactly one ``payload`` field). Answered with 400."""


# -- configuration -------------------------------------------------------------------------------

def load_secret(secret_file: str | None, env_secret: str | None) -> bytes | None:
    """The webhook secret as bytes, or None when the webhook is off.

    ``secret_file``: the ``--webhook-secret-file`` path (wins; a ``values.EnvValue`` when it came
    from ``GITOPS_AGENT_WEBHOOK_SECRET_FILE``); its content with surrounding whitespace (a
    trailing newline) stripped. ``env_secret``: the value of ``GITOPS_AGENT_WEBHOOK_SECRET``.
    Raises ``values.UsageError`` (a ValueError; ``flag`` is ``--webhook-secret-file``) naming the
    path or variable when the file cannot be read or either is empty (an empty HMAC key would
    let anyone sign). A secret itself is never shown.
    """
    if secret_file is not None:
        try:
            secret = Path(secret_file).read_bytes().strip()
        except OSError as err:
            raise values.UsageError(f"{values.shown(secret_file)} is not allowed: must be a readable file "
                                   f"({err.strerror or err})", flag=FLAG) from None
        if not secret:
            raise values.UsageError(f"{values.shown(secret_file)} is not allowed: must be a file holding a "
                                   "non-empty secret (it is empty)", flag=FLAG)
        return secret
    if env_secret is not None:
        if not env_secret.strip():  # blank, so showing it shows no secret
            raise values.UsageError(f"GITOPS_AGENT_WEBHOOK_SECRET={env_secret!r} is not allowed: must be a "
                                   "non-empty secret (or unset, for no webhook)", flag=FLAG)
        return env_secret.strip().encode()
    return None


# -- pure checks ---------------------------------------------------------------------------------

def _header(headers: Mapping[str, str], name: str) -> str | None:
    """Case-insensitive header look-up for both ``email.message.Message`` and plain dicts."""
    value = headers.get(name)
    if value is None:
        lowered = name.lower()
        value = next((v for k, v in headers.items() if k.lower() == lowered), None)
    return value


def _raw(text: str) -> bytes:
    # http.server decodes header bytes as latin-1: encoding back gives the bytes that were sent
    return text.strip().encode("latin-1", "replace")


def _signature_ok(secret: bytes, body: bytes, header: str) -> bool:
    """``header`` is ``sha256=<hex HMAC-SHA256 of body>`` (hex in either case)."""
    algorithm, _, given = header.strip().partition("=")
    expected = hmac.new(secret, body, hashlib.sha256).hexdigest().encode()
    ok = hmac.compare_digest(expected, _raw(given).lower())
    return ok and algorithm.strip().lower() == "sha256"


def authenticate(secret: bytes, body: bytes, headers: Mapping[str, str]) -> str | None:
    """Which presented credential is valid for ``secret``: ``"github"`` (``X-Hub-Signature-256:
    sha256=<hex>``), ``"gitlab"`` (``X-Gitlab-Token: <secret>``) or ``"generic"``
    (``X-Signature: sha256=<hex>``); None when none is presented or none is valid.

    ``body``: the raw request body, exactly as received (the HMAC is over these bytes).
    Every comparison is ``hmac.compare_digest``; the token is compared as SHA-256 digests so
    that its length does not leak either.
    """
    github = _header(headers, "X-Hub-Signature-256")
    if github is not None and _signature_ok(secret, body, github):
        return "github"
    gitlab = _header(headers, "X-Gitlab-Token")
    if gitlab is not None and hmac.compare_digest(hashlib.sha256(secret).digest(),
                                                  hashlib.sha256(_raw(gitlab)).digest()):
        return "gitlab"
    generic = _header(headers, "X-Signature")
    if generic is not None and _signature_ok(secret, body, generic):
        return "generic"
    return None


def media_type(content_type: str | None) -> str:
    """``application/json`` from ``application/json; charset=utf-8`` (lower case; "" if absent)."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def parse_payload(body: bytes, content_type: str | None) -> dict:
    """The payload as a dict from an authenticated ``body`` (at most ``MAX_BODY`` bytes).

    ``application/json``: the body is one JSON object. ``application/x-www-form-urlencoded``
    (GitHub's form delivery): exactly one field, ``payload``, holding the JSON object.
    Raises Malformed for anything else (bad UTF-8, bad JSON, nesting too deep, not an object).
    """
    kind = media_type(content_type)
    try:
        text = body.decode("utf-8")
        if kind in FORM_TYPES:
            fields = urllib.parse.parse_qs(text, keep_blank_values=True, strict_parsing=True, max_num_fields=1)
            if list(fields) != ["payload"] or len(fields["payload"]) != 1:
                raise Malformed("a form body must hold exactly one field, payload")
            text = fields["payload"][0]
        payload = json.loads(text)
    except Malformed:
        raise
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise Malformed(f"the body is not valid JSON: {type(err).__name__}") from None
    if not isinstance(payload, dict):
        raise Malformed("the payload is not a JSON object")
    return payload


def pushed_ref(payload: dict) -> str | None:
    """The ``ref`` of a push payload (``refs/heads/main``), None when it names none. Raises
    Malformed when ``ref`` is not a non-empty string of at most 1024 characters."""
    ref = payload.get("ref")
    if ref is None:
        return None
    if not isinstance(ref, str) or not ref or len(ref) > 1024:
        raise Malformed("ref is not a non-empty string")
    return ref


def event_kind(headers: Mapping[str, str]) -> str | None:
    """None for a push (GitHub ``X-GitHub-Event: push``, GitLab ``Push Hook``/``Tag Push Hook``,
    or no event header at all: a generic sender); otherwise the event's name (``ping``, ...),
    which is accepted and ignored."""
    github = _header(headers, "X-GitHub-Event")
    if github is not None:
        return None if github.strip().lower() == "push" else (github.strip()[:64] or "unknown")
    gitlab = _header(headers, "X-Gitlab-Event")
    if gitlab is not None:
        return None if gitlab.strip() in ("Push Hook", "Tag Push Hook") else (gitlab.strip()[:64] or "unknown")
    return None


def ref_wanted(pushed: str | None, configured: str | None, head_branch: str | None) -> bool:
    """Whether a push to ``pushed`` (``refs/heads/main``, ``refs/tags/v1``) can change what this
    agent syncs.

    ``configured``: ``--ref`` (a branch or tag name, a full ``refs/...`` name, or a SHA, which
    never moves so no push matches it). ``head_branch``: the remote HEAD's branch, used when
    there is no ``--ref``. With neither, or a payload without a ref, every push is wanted.
    """
    if pushed is None:
        return True
    target = configured or head_branch
    if not target:
        return True
    if target.startswith("refs/"):
        return pushed == target
    return pushed in (target, f"refs/heads/{target}", f"refs/tags/{target}")


# -- the remote's default branch -----------------------------------------------------------------

class RemoteHead:
    """The branch the remote's HEAD names, looked up by ``lookup()`` (a Git call: str or None) in
    a daemon thread at ``start()`` and every ``refresh`` seconds, never in a request. Calling the
    object returns the last answer (None until one arrives, or when the remote does not say)."""

    def __init__(self, lookup: Callable[[], str | None], refresh: float = HEAD_REFRESH):
        self._lookup, self._refresh = lookup, refresh
        self._branch: str | None = None
        self._stop = threading.Event()

    def __call__(self) -> str | None:
        return self._branch

    def start(self) -> "RemoteHead":
        threading.Thread(target=self._loop, name="remote-head", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                branch = self._lookup()
            except Exception:  # noqa: BLE001 - a failed look-up keeps the last answer
                branch = None
            if branch:
                self._branch = branch
            self._stop.wait(self._refresh)


# -- the endpoint --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Outcome:
    """An answer: HTTP ``code``, metric ``result`` label and a short ``message`` for the client."""

    code: int
    result: str
    message: str


class Webhook:
    """``POST /hooks/git`` for one ``secret``.

    ``ref``: ``--ref`` (None: follow ``head_branch()``, the remote HEAD's branch, when known).
    ``request_pass()``: asks the runner for an online pass and returns at once; False when this
    replica does not sync (a standby, or stopping). ``forward()``: then hands the hit to the
    leader and returns None (answered 202 ``forwarded``) or why it could not (503
    ``forward_failed``); None (set once leader election starts) answers 503 ``standby``.
    ``counter``: a prometheus Counter with a ``result`` label. Thread-safe.
    """

    def __init__(self, secret: bytes, *, ref: str | None, request_pass: Callable[[], bool], counter,
                 head_branch: Callable[[], str | None] = lambda: None, max_body: int = MAX_BODY,
                 read_timeout: float = READ_TIMEOUT, max_concurrent: int = MAX_CONCURRENT,
                 forward: Callable[[], str | None] | None = None):
        if not secret:
            raise ValueError("an empty webhook secret would let anyone sign")
        self._secret, self._ref, self._request_pass, self.forward = secret, ref, request_pass, forward
        self._counter, self._head_branch = counter, head_branch
        self.max_body, self.read_timeout = max_body, read_timeout
        self._slots = threading.BoundedSemaphore(max_concurrent)

    def early(self, head) -> bool:
        """Whether ``head`` (a ``listener.Head``) is answered from its headers alone, its body never
        read (wrong method, chunked or no or a bad ``Content-Length``, too large, a media type
        not accepted): the listener then does not wait for the body."""
        return self._refused(head.method, head.headers, {}) is not None

    def handle(self, request) -> "Response":
        """Answer one ``listener.Request`` to ``PATH``: returns the ``listener.Response``, counts it
        and logs one line without the body. The listener has read the body already, within its
        deadline (``request.timed_out``: it was late, answered 408); an answer judged from the
        headers alone (``early``) never waited for it. Only the judging of a whole body holds one
        of ``max_concurrent`` slots, so slow senders never hold them."""
        started = time.monotonic()
        details: dict = {}
        outcome = self._refused(request.method, request.headers, details)
        close = outcome is not None or request.timed_out  # the body was not read, or is late
        if outcome is None and request.timed_out:
            outcome = Outcome(408, "timeout", f"the body did not arrive in time ({BODY_GRACE:g}s plus 1s per "
                                              f"{MIN_RATE // 1024} KiB declared, at most {self.read_timeout:g}s)")
        elif outcome is None and not self._slots.acquire(blocking=False):
            outcome = Outcome(503, "busy", "too many webhook requests at once; retry later")
        elif outcome is None:
            try:
                outcome = self._receive(request, details)
            except Exception:  # noqa: BLE001 - a bug must not kill the server thread
                log.exception("webhook handler failed")
                outcome = Outcome(500, "error", "internal error")
            finally:
                self._slots.release()
        self._counter.labels(result=outcome.result).inc()
        headers = request.headers
        fields = {"event": "webhook", "result": outcome.result, "code": outcome.code,
                  "method": request.method, "remote": request.remote,
                  "hook_event": (_header(headers, "X-GitHub-Event") or _header(headers, "X-Gitlab-Event") or "")[:64],
                  "delivery": (_header(headers, "X-GitHub-Delivery") or _header(headers, "X-Gitlab-Event-UUID")
                               or "")[:64],
                  "duration_ms": round((time.monotonic() - started) * 1000, 1), **details}
        log.log(logging.INFO if outcome.code < 400 else logging.WARNING, "webhook %s: %s", outcome.result,
                outcome.message, extra={"fields": fields})
        return self._respond(outcome, close)

    def _refused(self, method: str, headers: Mapping[str, str], details: dict) -> Outcome | None:
        """The answer judged from the method and headers alone, None when the body must be read."""
        if method != "POST":
            return Outcome(405, "method_not_allowed", "only POST is allowed")
        if _header(headers, "Transfer-Encoding") is not None:
            return Outcome(411, "length_required", "send the body with a Content-Length (no chunked encoding)")
        length_header = _header(headers, "Content-Length")
        if length_header is None:
            return Outcome(411, "length_required", "Content-Length is required")
        if not (length_header.strip().isascii() and length_header.strip().isdigit()):  # int() takes "١٢" too
            return Outcome(400, "malformed", "Content-Length is not a number")
        length = int(length_header)
        details["bytes"] = length
        if length > self.max_body:  # the body is never read
            return Outcome(413, "too_large", f"the body is larger than {self.max_body} bytes")
        if media_type(_header(headers, "Content-Type")) not in JSON_TYPES + FORM_TYPES:
            return Outcome(415, "unsupported_media_type",
                           "send application/json (or GitHub's application/x-www-form-urlencoded)")
        return None

    def _receive(self, request, details: dict) -> Outcome:
        """The answer to a whole request that passed ``_refused``."""
        body = request.body
        scheme = authenticate(self._secret, body, request.headers)
        if scheme is None:
            return Outcome(401, "unauthorized", "missing or invalid signature or token")
        details["auth"] = scheme
        try:
            payload = parse_payload(body, _header(request.headers, "Content-Type"))
            ref = pushed_ref(payload)
        except Malformed as err:
            return Outcome(400, "malformed", str(err))
        details["ref"] = ref
        other = event_kind(request.headers)
        if other is not None:
            return Outcome(202, "ignored", f"{other} event: nothing to do")
        if not ref_wanted(ref, self._ref, self._head_branch()):
            return Outcome(202, "ignored", "a push to a ref this agent does not sync")
        if self._request_pass():
            return Outcome(202, "accepted", "a pass was requested")
        return self._hand_over()

    def _hand_over(self) -> Outcome:
        """The answer of a replica that does not sync now: the leader was asked (202), or not."""
        forward = self.forward
        if forward is None:  # no leader election (so stopping), or it has not started yet
            return Outcome(503, "standby", "this replica does not sync now (stopping or starting); retry later")
        problem = forward()
        if problem is None:
            return Outcome(202, "forwarded", "this replica stands by; the leader was asked for a pass")
        return Outcome(503, "forward_failed", f"this replica stands by and could not ask the leader for a pass: "
                                              f"{problem}; retry later")

    @staticmethod
    def _respond(outcome: Outcome, close: bool) -> "Response":
        from agent.server.listener import Response

        body = (json.dumps({"result": outcome.result, "message": outcome.message}) + "\n").encode()
        headers = [("Content-Type", "application/json")]
        if outcome.code == 405:
            headers.append(("Allow", "POST"))
        if outcome.code == 503:
            headers.append(("Retry-After", "5"))
        return Response(outcome.code, headers, body, close=close)


def create(secret: bytes, opts, runner, metrics) -> Webhook:
    """The endpoint for a ``run`` process: ``opts`` (sync.Options: ``ref``, ``repo``,
    ``fetch_timeout``, ``credentials``), ``runner`` (its ``request_pass``), ``metrics`` (its
    ``webhook_requests`` counter). Without ``--ref`` the remote HEAD's branch is looked up in the
    background (and refreshed every ``HEAD_REFRESH`` seconds); until it is known, every branch
    is accepted."""
    from agent.source import mirror as source

    head: Callable[[], str | None] = lambda: None  # noqa: E731
    if not opts.ref:
        head = RemoteHead(lambda: source.remote_head_branch(opts.repo, opts.fetch_timeout,
                                                            credentials=opts.credentials)).start()
    return Webhook(secret, ref=opts.ref, request_pass=runner.request_pass, counter=metrics.webhook_requests,
                   head_branch=head)
