"""One HTTP request to a notification destination, with errors that never name the URL.

Why a module of its own: the URL of a webhook may hold a token (a Slack or Teams incoming
webhook is nothing but a secret URL), and a Git host's token rides in a header. ``urllib``'s
errors name neither, but its ``URLError`` reasons and a redirect's ``Location`` can hold the
URL; so every failure is turned into ``Failed`` with a message built here from the status code
and the kind of fault only. Redirects are not followed (a redirect could carry the token's
header to another host).
"""

from __future__ import annotations

import base64
import email.utils
import http.client
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from agent.common import values

USER_AGENT = "gitops-agent"


class Failed(Exception):
    """A request that did not succeed. ``transient``: worth retrying (no answer, a timeout,
    HTTP 429, 5xx); ``retry_after``: seconds the server asked to wait (``Retry-After``), None
    when it did not say; ``status``: the HTTP status (0 without an answer). The message names
    no URL, header or body."""

    def __init__(self, message: str, *, transient: bool, status: int = 0, retry_after: float | None = None):
        super().__init__(message)
        self.transient, self.status, self.retry_after = transient, status, retry_after


@dataclass(frozen=True)
class Answer:
    """A 2xx answer: ``status`` and ``body`` (bytes)."""

    status: int
    body: bytes


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds a ``Retry-After`` header value asks for (RFC 9110 10.2.3: delay-seconds or an
    HTTP-date), never below 0; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be requested (words that do not repeat it), or None: an ``http://`` or
    ``https://`` URL with a host, a port (when given) from 1 to 65535, and no blank or control
    character (``http.client`` refuses those at every request). A ``user:password@`` part is
    allowed (``split_userinfo``). Pure."""
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
        return "it holds a blank or a control character"
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as err:
        return "its host is not valid (an unclosed '[')" if "IPv6" in str(err) else "its port is not a number from 1 to 65535"
    if parts.scheme not in ("http", "https"):
        return "it is not an http:// or https:// URL"
    if not parts.hostname:
        return "it has no host"
    if port == 0:
        return "its port is not a number from 1 to 65535"
    return None


def split_userinfo(url: str) -> tuple[str, str | None]:
    """(``url`` without its ``user:password@`` part, the ``Authorization`` header value for HTTP
    Basic auth with them, or None when it has none). ``urllib`` would take them as part of the
    host. Pure."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    pair = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}".encode()
    return urllib.parse.urlunsplit(parts._replace(netloc=host)), "Basic " + base64.b64encode(pair).decode("ascii")


def transient(status: int) -> bool:
    """True for an HTTP status worth retrying: 408, 429 and every 5xx."""
    return status in (408, 429) or status >= 500


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # noqa: D401 (urllib API)
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def request(method: str, url: str, *, body: bytes | None = None, headers: dict[str, str] | None = None,
            timeout: float) -> Answer:
    """Send one request; ``timeout``: seconds for connecting and for each read. Returns the
    2xx ``Answer``; raises ``Failed`` otherwise (never ``urllib``'s errors)."""
    req = urllib.request.Request(url, data=body, method=method,
                                 headers={"User-Agent": USER_AGENT, **(headers or {})})
    try:
        with _OPENER.open(req, timeout=max(0.05, timeout)) as resp:
            return Answer(resp.status, resp.read())
    except urllib.error.HTTPError as err:
        status = err.code
        try:
            err.read()
        except (OSError, http.client.HTTPException):
            pass
        reason = http.client.responses.get(status, "")
        raise Failed(f"HTTP {status}{f' ({reason})' if reason else ''}", transient=transient(status), status=status,
                     retry_after=retry_after(err.headers.get("Retry-After") if err.headers else None)) from None
    except (socket.timeout, TimeoutError):
        raise Failed(f"no answer within {values.duration(timeout)}", transient=True) from None
    except urllib.error.URLError as err:
        why = err.reason
        text = "no answer within the timeout" if isinstance(why, (socket.timeout, TimeoutError)) else \
            f"cannot connect ({why.strerror or type(why).__name__})" if isinstance(why, OSError) else "cannot connect"
        raise Failed(text, transient=True) from None
    except (http.client.InvalidURL, ValueError) as err:  # retrying cannot help
        raise Failed(f"the URL is not valid ({type(err).__name__})", transient=False) from None
    except (OSError, http.client.HTTPException) as err:
        raise Failed(f"the connection failed ({type(err).__name__})", transient=True) from None
