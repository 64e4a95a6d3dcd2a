"""One bounded HTTP listener of ``run``: probes and metrics, the push webhook, the status page.

Every listener is a waitress server (pure-Python WSGI, no C extension, no dependencies of its own).
Why waitress, not ``http.server`` (documented as not meant for production) and not uvicorn:

- one event-loop thread reads every request's headers and body before a worker thread sees it,
  so a slow client holds a socket for a while, never a thread (``http.server`` ran one thread per
  connection, without a cap: ~10,000 slow connections stopped probes, passes and SIGTERM, issue 42);
- ``connection_limit``: beyond it the listener stops accepting, so file descriptors stay bounded
  (uvicorn's ``limit_concurrency`` answers 503 but keeps accepting, each connection an open file);
- ``max_request_header_size``, ``max_request_body_size``, ``inbuf_overflow`` (bodies beyond it
  spool to a temporary file, not memory), ``channel_timeout`` and ``cleanup_interval`` built in;
- ``log_socket_errors=False``: a client that closed its connection (BrokenPipe, ConnectionReset)
  is no traceback in the log.

What waitress lacks is added here, on its extension points (``channel_class``, ``parser_class``,
``task_class``, ``maintenance``): an absolute deadline for a request's headers (``Limits.header_seconds``
from its first byte; waitress's own ``channel_timeout`` is per read) and for its body (its declared
length at ``Limits.min_rate`` bytes per second, plus ``Limits.body_grace``, at most ``Limits.body_seconds``),
and an early answer from the headers alone (``early``: the webhook refuses a body it would never
read, 411/413/415, without waiting for it). A request whose headers miss their deadline is closed
without an answer; one whose body misses it reaches the application with ``Request.timed_out``.
"""

from __future__ import annotations

import logging
import resource
import socket
import threading
import time
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Callable, Mapping

from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser
from waitress.server import TcpWSGIServer
from waitress.task import WSGITask

logging.getLogger("waitress").setLevel(logging.ERROR)  # per-connection notes (overflow, disconnects): not a log line each


@dataclass(frozen=True)
class Limits:
    """How much one listener takes. ``connections``: open connections at most (more wait in the
    kernel's backlog; at most a quarter of the process's open-file limit); ``threads``: requests
    handled at once; ``header_seconds``: from a request's first byte to the end of its headers,
    and the most a connection may idle between requests; ``body_grace`` and ``min_rate``: a body
    may take ``body_grace`` seconds plus its length at ``min_rate`` bytes per second;
    ``body_seconds``: the longest any body may take; ``max_body``: bytes (a larger
    declared length is refused before its body is read); ``in_memory``: bytes of a body kept in
    memory (the rest spools to a temporary file)."""

    connections: int = 200
    threads: int = 4
    header_seconds: int = 10
    body_grace: float = 2.0
    min_rate: int = 65_536
    body_seconds: float = 10.0
    max_body: int = 65_536
    in_memory: int = 65_536

    def body_deadline(self, length: int) -> float:
        """Seconds a body of ``length`` bytes may take to arrive once the headers are in
        (``body_grace`` + its time at ``min_rate``, at most ``body_seconds``)."""
        return min(self.body_seconds, self.body_grace + length / self.min_rate)

    def connection_limit(self) -> int:
        """``connections``, at most a quarter of the soft open-file limit (the passes need files too)."""
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        return self.connections if soft == resource.RLIM_INFINITY else max(8, min(self.connections, soft // 4))


@dataclass(frozen=True)
class Head:
    """A request's start line and headers (names as sent, looked up case-insensitively by callers)."""

    method: str
    path: str  # the raw request target before ``?``
    headers: Mapping[str, str]


@dataclass(frozen=True)
class Request:
    """A whole request. ``query``: the raw query string; ``body``: empty when not read (an early
    answer) or cut short (``timed_out``: the body missed its deadline); ``remote``: the peer's address."""

    method: str
    path: str
    query: str
    headers: Mapping[str, str]
    body: bytes = b""
    remote: str = ""
    timed_out: bool = False


@dataclass
class Response:
    """An answer: ``code``, ``headers`` (in order; Content-Length is added), ``body``."""

    code: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    close: bool = False  # close the connection after it


App = Callable[[Request], Response]


def _head(parser: HTTPRequestParser) -> Head:
    headers = {name.replace("_", "-").title(): value for name, value in parser.headers.items()}
    return Head(parser.command, parser.request_uri.partition("?")[0], headers)


class _Parser(HTTPRequestParser):
    """Waitress's parser with the deadlines' clock and the early answer (class attributes set per listener)."""

    limits: Limits = Limits()
    early: Callable[[Head], bool] = staticmethod(lambda head: False)

    def __init__(self, adj):
        super().__init__(adj)
        self.deadline = time.monotonic() + self.limits.header_seconds  # from the request's first byte
        self.timed_out = False

    def parse_header(self, header_plus):
        super().parse_header(header_plus)
        if self.chunked:  # waitress hides it from the application; the early answer must see it
            self.headers["TRANSFER_ENCODING"] = "chunked"
        if self.early(_head(self)):  # answered from the headers: the body is never read
            self.body_rcv, self.chunked, self.content_length, self.connection_close = None, False, 0, True
            self.headers["CONNECTION"] = "close"  # what waitress reads to close after the answer
        else:
            if self.chunked:
                del self.headers["TRANSFER_ENCODING"]
            length = self.content_length if not self.chunked else self.limits.max_body
            self.deadline = time.monotonic() + self.limits.body_deadline(length)


class _Task(WSGITask):
    """Waitress's task, telling the application of a late body, and sending header names as the
    application spelled them (waitress writes ``Etag``, ``Www-Authenticate``; clients matching
    names exactly, as the agent's tests and some scripts do, saw them change)."""

    def build_response_header(self):
        spelled = {"-".join(part.capitalize() for part in name.split("-")): name for name, _ in self.response_headers}
        if self.environ is not None and self.environ.get("gitops_agent.close"):  # Response.close (WSGI may not say it)
            self.set_close_on_finish()
        head = super().build_response_header()
        for normal, name in spelled.items():
            if normal != name:
                head = head.replace(f"\r\n{normal}: ".encode("latin-1"), f"\r\n{name}: ".encode("latin-1"))
        return head

    def get_environment(self):
        environ = super().get_environment()
        environ["gitops_agent.timed_out"] = getattr(self.request, "timed_out", False)
        return environ


class _Channel(HTTPChannel):
    task_class = _Task


class _Server(TcpWSGIServer):
    """Waitress's server with the absolute deadlines of ``_Parser``, checked every second."""

    def maintenance(self, now):
        """Close connections idle for ``channel_timeout`` between requests and those whose request's
        headers are late; hand a late body to the application (``timed_out``). ``now``: ``time.time()``."""
        idle_since, clock = now - self.adj.channel_timeout, time.monotonic()
        for channel in list(self.active_channels.values()):
            request = channel.request
            if channel.requests or channel.will_close:  # being answered
                continue
            if request is None:
                if channel.last_activity < idle_since:
                    channel.will_close = True
            elif clock >= request.deadline and not request.headers_finished:
                channel.will_close = True  # headers too slow: closed without an answer
            elif clock >= request.deadline:
                self._late(channel, request)

    def _late(self, channel, request) -> None:
        """The body is late: the application answers it (408), then the connection closes."""
        with channel.requests_lock:
            request.timed_out, request.completed, request.connection_close = True, True, True
            request.headers["CONNECTION"] = "close"
            request.close()
            request.body_rcv = None
            channel.request = None
            channel.requests.append(request)
            if len(channel.requests) == 1:
                self.add_task(channel)


def _wsgi(app: App):
    def application(environ, start_response):
        headers = {}
        for key, value in environ.items():
            if key.startswith("HTTP_"):
                headers[key[5:].replace("_", "-").title()] = value
        for key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            if environ.get(key):
                headers[key.replace("_", "-").title()] = environ[key]
        timed_out = environ.get("gitops_agent.timed_out", False)
        length = environ.get("CONTENT_LENGTH") or "0"
        body = b"" if timed_out or not length.isdigit() else environ["wsgi.input"].read(int(length))
        path, _, query = environ.get("REQUEST_URI", "/").partition("?")
        request = Request(environ["REQUEST_METHOD"], path, query, headers, body, environ.get("REMOTE_ADDR", ""),
                          timed_out)
        response = app(request)
        out = [*response.headers, ("Content-Length", str(len(response.body)))]
        environ["gitops_agent.close"] = response.close  # _Task closes the connection after the answer
        start_response(f"{response.code} {HTTPStatus(response.code).phrase}", out)
        return [response.body] if request.method != "HEAD" else [b""]
    return application


class Listener:
    """A running listener: ``server_address`` is (host, port); ``shutdown()`` stops it within
    about a second whatever its connections do (``server_close()``: the same, for callers of
    ``http.server``'s interface)."""

    def __init__(self, server: _Server, thread: threading.Thread):
        self._server, self._thread = server, thread
        self._lock, self._stopped = threading.Lock(), False
        self.server_address = (server.effective_host, int(server.effective_port))

    def shutdown(self) -> None:
        server = self._server
        with self._lock:
            if self._stopped:
                return
            self._stopped = True

        def close_all():
            for dispatcher in list(server._map.values()):
                try:
                    dispatcher.close()
                except OSError:
                    pass

        try:
            server.trigger.pull_trigger(close_all)  # run in the loop's thread: the map is its own
        except OSError:  # the loop already ended
            pass
        self._thread.join(timeout=1.0)
        server.task_dispatcher.shutdown(cancel_pending=True, timeout=1)

    server_close = shutdown


def serve(address: str, app: App, limits: Limits, *, name: str,
          early: Callable[[Head], bool] = lambda head: False) -> Listener:
    """Listen on ``address`` (``HOST:PORT``; an empty host: every interface; port 0 picks one)
    and answer with ``app`` (called in one of ``limits.threads`` worker threads) until
    ``shutdown()``. ``early(head)``: True when ``app`` answers from the headers alone (the body is
    then never read; ``app`` sees an empty one). ``name``: the loop thread's. Raises OSError when
    the address cannot be bound; ValueError when ``address`` has no numeric port."""
    host, _, port = address.rpartition(":")
    if not port.isdigit():
        raise ValueError(f"{address!r} is not HOST:PORT")
    host = host.strip("[]")
    if host and ":" not in host and not host.replace(".", "").isdigit():  # a name: its IPv4 address, as before
        host = socket.getaddrinfo(host, int(port), socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
    parser = type("Parser", (_Parser,), {"limits": limits, "early": staticmethod(early)})
    channel = type("Channel", (_Channel,), {"parser_class": parser})
    server = type("Server", (_Server,), {"channel_class": channel})(
        _wsgi(app), host=host or "0.0.0.0", port=int(port), threads=limits.threads,
        connection_limit=limits.connection_limit(), channel_timeout=limits.header_seconds, cleanup_interval=1,
        max_request_body_size=limits.max_body + 1, inbuf_overflow=limits.in_memory, max_request_header_size=65_536,
        log_socket_errors=False, expose_tracebacks=False, ident="gitops-agent", asyncore_loop_timeout=1,
        clear_untrusted_proxy_headers=False)
    thread = threading.Thread(target=server.run, name=name, daemon=True)
    thread.start()
    return Listener(server, thread)
