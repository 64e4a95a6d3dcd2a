"""The generic webhook: a JSON body per notice (or one per pass, ``--notify-batch``), signed.

The signature (issue 32) is Stripe's scheme: ``X-Gitops-Agent-Signature: t=<t>,v1=<hex>``, where
``t`` is the unix time in seconds when the request is sent and ``hex`` is HMAC-SHA256 with the
secret over ``<t>.<body>`` (the decimal ``t``, a dot, the raw body bytes). Binding the time lets
a receiver refuse a replayed request (an old ``t``, or a signature it has seen); Flux's
notification-controller signs the body alone, which can be replayed for ever.
docs/guides/notifications.md shows the check in Python and in shell.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time

from agent.engine.news import Notice
from agent.notify import http

HEADER = "X-Gitops-Agent-Signature"
KIND = "gitops-agent.notification"


def sign(secret: bytes, body: bytes, t: int) -> str:
    """The header value ``t=<t>,v1=<hex>`` for ``body`` sent at unix time ``t`` (seconds)."""
    digest = hmac.new(secret, str(t).encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"t={t},v1={digest}"


def verify(secret: bytes, body: bytes, header: str, now: int, tolerance: int = 300) -> bool:
    """True when ``header`` (``t=<t>,v1=<hex>``) signs ``body`` with ``secret`` and ``t`` is within
    ``tolerance`` seconds of ``now``: the receiver's side, as the guide shows it."""
    parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
    if not parts.get("t", "").isdigit() or abs(now - int(parts["t"])) > tolerance:
        return False
    return hmac.compare_digest(sign(secret, body, int(parts["t"])), f"t={parts['t']},v1={parts.get('v1', '')}")


def item(notice: Notice, source: str, status_page_url: str | None) -> dict:
    """One notice as JSON: kind, source (the source id), application {namespace, name}, reason,
    severity, message, commit, previousCommit, sourcePath, and statusPageUrl when one is set."""
    out = {"kind": KIND, "source": source, "application": {"namespace": notice.namespace, "name": notice.name},
           "reason": notice.reason, "severity": notice.severity, "message": notice.message,
           "commit": notice.commit, "previousCommit": notice.previous_commit, "sourcePath": notice.source_path}
    if status_page_url:
        out["statusPageUrl"] = status_page_url
    return out


def bodies(notices: list[Notice], source: str, status_page_url: str | None, batch: bool) -> list[tuple[bytes, list]]:
    """The request bodies for one pass's ``notices`` with the notices each is about: one per
    notice, or with ``batch`` one holding them all (``{"kind", "source", "count",
    "notifications": [...]}``); [] for no notices. JSON, keys in a fixed order, UTF-8."""
    if not notices:
        return []
    if batch:
        doc = {"kind": KIND + "s", "source": source, "count": len(notices),
               "notifications": [item(n, source, status_page_url) for n in notices]}
        return [(json.dumps(doc).encode(), list(notices))]
    return [(json.dumps(item(n, source, status_page_url)).encode(), [n]) for n in notices]


class Webhook:
    """The destination ``webhook``: ``send(body, timeout)`` POSTs ``body`` to ``url``, signed
    with ``secret`` when given (a fresh ``t`` per attempt). A ``user:password@`` in ``url`` is
    sent as HTTP Basic auth (``http.split_userinfo``). ``clock``: unix seconds."""

    name = "webhook"

    def __init__(self, url: str, secret: bytes | None, clock=time.time):
        self._url, self._auth = http.split_userinfo(url)
        self._secret, self._clock = secret, clock

    def send(self, body: bytes, timeout: float) -> None:
        headers = {"Content-Type": "application/json"}
        if self._auth is not None:
            headers["Authorization"] = self._auth
        if self._secret is not None:
            headers[HEADER] = sign(self._secret, body, int(self._clock()))
        http.request("POST", self._url, body=body, headers=headers, timeout=timeout)
