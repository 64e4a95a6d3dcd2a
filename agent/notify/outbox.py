"""Delivery that never hurts the pass: a bounded queue sent from a background thread.

Why a module of its own (issue 32): a pass must never wait for a chat service or a Git host.
``Outbox.put`` returns at once; one daemon thread sends the messages in order. Each message gets
at most ``timeout`` seconds, retries included: connection errors, timeouts, HTTP 408, 429 and
5xx are retried with exponential backoff (tenacity, at least 1 s apart), honouring a longer
``Retry-After``; a wait that would end past the message's time, or any other refusal, drops
it. A dropped message (also one the full queue refused, and one ``drain`` gave up on) costs one
warning line, a Warning Event and ``gitops_agent_notifications_dropped_total`` (``on_drop``). ``drain`` is ``sync --once``'s end:
it waits for the queue at most ``timeout`` seconds.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import tenacity
from prometheus_client import CollectorRegistry, Counter

from agent.common import values
from agent.notify import http

log = logging.getLogger("agent.notify")
CAPACITY = 1000  # messages waiting at once; a pass of ``--notify-batch`` makes one per destination
BACKOFF = tenacity.wait_exponential(multiplier=1, min=1, max=4)
"""1 s, 2 s, 4 s, then every 4 s. Never below 1 s: a webhook signs each attempt with the unix
second it is sent (``webhook.sign``), so attempts a second apart carry a new ``t`` and a new
signature, which a receiver that remembers the signatures it saw does not refuse as a replay."""


class Counters:
    """``gitops_agent_notifications_{sent,failed,dropped}_total{destination}`` in ``registry``:
    messages delivered, attempts that failed (retried or not), messages given up on."""

    def __init__(self, registry: CollectorRegistry | None = None):
        r = registry if registry is not None else CollectorRegistry()
        self.sent = Counter("gitops_agent_notifications_sent_total",
                            "Notifications and commit statuses delivered, by destination.", ["destination"], registry=r)
        self.failed = Counter("gitops_agent_notifications_failed_total",
                              "Delivery attempts that failed (retried or not), by destination.", ["destination"],
                              registry=r)
        self.dropped = Counter("gitops_agent_notifications_dropped_total",
                               "Notifications and commit statuses given up on, by destination.", ["destination"],
                               registry=r)


@dataclass
class Message:
    """One thing to deliver. ``destination``: its name in metrics (``webhook``, ``github``, ...);
    ``what``: words for a log line, no secret (``3 notifications``); ``send(timeout)``: one
    attempt with at most ``timeout`` seconds, raising ``http.Failed``; ``about``: the notices
    (or anything with namespace, name, uid) whose Application a Warning Event goes to when it is
    dropped; ``refused``: set when it is dropped because retrying cannot help (a 4xx other than
    408 and 429, an invalid URL), as opposed to a timeout, a full queue or ``drain``."""

    destination: str
    what: str
    send: Callable[[float], None]
    about: list = field(default_factory=list)
    refused: bool = False


def wait_seconds(state: tenacity.RetryCallState) -> float:
    """Seconds before the next attempt: exponential backoff (``BACKOFF``: 1 s, 2 s, 4 s, ...,
    at most 4 s), or the server's ``Retry-After`` when it asks for longer (``Retry-After: 0``
    or a date in the past never makes a tight loop)."""
    err = state.outcome.exception() if state.outcome else None
    after = getattr(err, "retry_after", None)
    backoff = BACKOFF(state)
    return max(float(after), backoff) if after is not None else backoff


def _worth_retrying(err: BaseException) -> bool:
    return isinstance(err, http.Failed) and err.transient


class Outbox:
    """The queue and its thread. ``timeout``: seconds per message, retries included;
    ``on_drop(message, why)``: called once per dropped message (the warning, the Event);
    ``counters``: ``Counters``. Thread-safe."""

    def __init__(self, timeout: float, counters: Counters, on_drop: Callable[[Message, str], None],
                 capacity: int = CAPACITY):
        self.timeout, self.counters, self._on_drop = timeout, counters, on_drop
        self._queue: queue.Queue = queue.Queue(capacity)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._current: Message | None = None
        self._thread = threading.Thread(target=self._work, name="notify", daemon=True)
        self._thread.start()

    def put(self, message: Message) -> None:
        """Queue ``message``; never blocks. A full queue drops it."""
        if self._stop.is_set():
            self._drop(message, "the agent is stopping")
            return
        try:
            self._queue.put_nowait(message)
        except queue.Full:
            self._drop(message, f"{self._queue.maxsize} messages are waiting already")

    def _drop(self, message: Message, why: str) -> None:
        self.counters.dropped.labels(destination=message.destination).inc()
        try:
            self._on_drop(message, why)
        except Exception:  # noqa: BLE001 (a report of a drop never stops delivery)
            log.exception("could not report a dropped notification")

    def _work(self) -> None:
        while not self._stop.is_set():
            try:
                message = self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
            with self._lock:
                if self._stop.is_set():
                    self._queue.task_done()
                    break
                self._current = message
            try:
                self._deliver(message)
            finally:
                with self._lock:
                    self._current = None
                self._queue.task_done()

    def _deliver(self, message: Message) -> None:
        """Send ``message`` with retries within ``timeout`` seconds; count and drop on failure."""
        deadline = time.monotonic() + self.timeout

        def give_up(state: tenacity.RetryCallState) -> bool:
            return self._stop.is_set() or time.monotonic() + wait_seconds(state) >= deadline

        def failed(state: tenacity.RetryCallState) -> None:
            self.counters.failed.labels(destination=message.destination).inc()

        retrying = tenacity.Retrying(retry=tenacity.retry_if_exception(_worth_retrying), stop=give_up,
                                     wait=wait_seconds, sleep=self._stop.wait, reraise=True, after=failed)
        try:
            retrying(lambda: message.send(max(0.05, deadline - time.monotonic())))
        except http.Failed as err:
            if not err.transient:
                self.counters.failed.labels(destination=message.destination).inc()
                message.refused = True
            if self._settle():
                self._drop(message, str(err) if err.transient or not err.status else f"refused: {err}")
            return
        except Exception as err:  # noqa: BLE001 (a bug in a sender drops its message, not the thread)
            log.exception("sending %s failed", message.what)
            if self._settle():
                self._drop(message, f"internal error: {type(err).__name__}")
            return
        if self._settle():
            self.counters.sent.labels(destination=message.destination).inc()

    def _settle(self) -> bool:
        """True when the message in flight is still the thread's to count (sent or dropped):
        ``drain`` has not stopped the outbox, and now never will drop it. One lock for both, so a
        message is dropped once, by the thread or by ``drain``, never by both."""
        with self._lock:
            if self._stop.is_set():
                return False
            self._current = None
            return True

    def drain(self, timeout: float) -> int:
        """Wait up to ``timeout`` seconds for every queued message to be delivered or dropped,
        then stop the thread; what is still waiting or in flight then is dropped (``on_drop``,
        why: not sent within the timeout). Returns how many were dropped so."""
        end = time.monotonic() + timeout
        while self._queue.unfinished_tasks and time.monotonic() < end:
            time.sleep(0.02)
        with self._lock:
            self._stop.set()
            left = ([self._current] if self._current is not None else []) + self._take_all()
        for message in left:
            self._drop(message, f"not sent within --notify-timeout ({values.duration(timeout)})")
        return len(left)

    def close(self) -> None:
        """Stop the thread without waiting (``run``'s shutdown); queued messages are not sent."""
        self._stop.set()

    def _take_all(self) -> list[Message]:
        out = []
        while True:
            try:
                out.append(self._queue.get_nowait())
                self._queue.task_done()
            except queue.Empty:
                return out
