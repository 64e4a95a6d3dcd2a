"""The notifier of one source: what ``sync --once`` and ``run`` call around a pass.

``started(commit)`` when a pass has read a commit and starts applying it (a commit status
``pending``), ``finished(report)`` when the pass is done (its notices to the webhook, filtered;
the commit status ``verdict``), ``drain()`` at the end of ``sync --once`` (waits at most
``--notify-timeout``), ``close()`` when ``run`` stops. Nothing here blocks a pass: every
request is made by the outbox's thread (``outbox``).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from agent.engine import news
from agent.notify import commitstatus, outbox, webhook

log = logging.getLogger("agent.notify")
DEFAULT_TIMEOUT = 5.0
DROPPED_REASON = "NotificationDropped"


@dataclass(frozen=True)
class Settings:
    """What to tell and where. ``url``: the webhook (a secret: never shown); ``secret``: its
    HMAC key; ``on``: reasons to send (None: all); ``severity``: ``error`` to send errors only;
    ``batch``: one request per pass; ``timeout``: seconds per message and for ``drain``;
    ``status_page_url``: put in bodies and as ``target_url``; ``commit_status``: ``github``,
    ``gitlab`` or ``gitea`` (None: none); ``token``, ``context``, ``api_url``, ``repository``:
    the commit status's; ``source``: the source id; ``agent_pod``: (namespace, name, uid) of the
    agent's own Pod (the downward API's ``POD_NAMESPACE``, ``POD_NAME``, ``POD_UID``; uid may be
    ""), where the Warning Event of a dropped message about no Application goes (None: outside a
    Pod, no Event for such a message)."""

    url: str | None = None
    secret: bytes | None = None
    on: frozenset[str] | None = None
    severity: str | None = None
    batch: bool = False
    timeout: float = DEFAULT_TIMEOUT
    status_page_url: str | None = None
    commit_status: str | None = None
    token: str | None = None
    context: str = "gitops-agent"
    api_url: str | None = None
    repository: str | None = None
    source: str = "default"
    agent_pod: tuple[str, str, str] | None = None

    @property
    def enabled(self) -> bool:
        return bool(self.url or self.commit_status)


class Notifier:
    """Sends what ``settings`` asks for. ``kube``: for the Warning Event of a dropped message
    (anything with ``event(obj, type, reason, message)``; None: no Event); ``counters``:
    ``outbox.Counters`` (its metrics)."""

    def __init__(self, settings: Settings, kube=None, counters: outbox.Counters | None = None):
        self.settings, self.kube = settings, kube
        self.counters = counters or outbox.Counters()
        self.dropped: list[str] = []  # what could not be sent, one line each (for sync --once's stderr)
        self._outbox = outbox.Outbox(settings.timeout, self.counters, self._on_drop)
        self._webhook = webhook.Webhook(settings.url, settings.secret) if settings.url else None
        self._poster = None
        if settings.commit_status:
            host = commitstatus.HOST_CLASSES[settings.commit_status](settings.api_url, settings.repository,
                                                                     settings.token)
            self._poster = commitstatus.Poster(host, settings.context, settings.status_page_url)
        self._queued: tuple | None = None  # the last commit status queued: (sha, state, description)
        self._queued_message: outbox.Message | None = None  # ... and its message
        self._lock = threading.Lock()  # _queued: set by passes, cleared by the outbox's thread

    def started(self, commit: str | None, applications=()) -> None:
        """A pass starts applying ``commit``: queue ``pending`` unless that commit has a status.
        ``applications``: the commit's (anything with ``namespace`` and ``name``, sorted); the
        first is the one a Warning Event names when the status is dropped (none: the agent's
        own Pod, ``_on_drop``)."""
        if self._poster is not None and commit and self._poster.wanted(commit, commitstatus.PENDING,
                                                                        commitstatus.PENDING_TEXT):
            about = [_Ref(a.namespace, a.name) for a in applications[:1]]
            self._status(commit, commitstatus.PENDING, commitstatus.PENDING_TEXT, about)

    def finished(self, report) -> None:
        """Queue the pass's wanted notices (``news.wanted``) for the webhook, and its commit
        status (``commitstatus.verdict``) unless it is known to be posted already."""
        s = self.settings
        notices = [n for n in report.notices if news.wanted(n, s.on, s.severity)]
        if self._webhook is not None:
            for body, about in webhook.bodies(notices, s.source, s.status_page_url, s.batch):
                what = f"{len(about)} notification{'s' if len(about) != 1 else ''} ({about[0].reason} of " \
                       f"{about[0].application}{' and others' if len(about) > 1 else ''})"
                self._outbox.put(outbox.Message("webhook", what, lambda t, b=body: self._webhook.send(b, t), about))
        found = commitstatus.verdict(report) if self._poster is not None else None
        if found and self._poster.wanted(report.commit, *found):
            about = [_Ref(*k.split("/", 1)) for k in (report.failing() or sorted(report.readiness))[:1]]
            self._status(report.commit, *found, about)

    def _status(self, sha: str, state: str, description: str, about: list) -> None:
        """Queue one commit status unless the same is on its way already (queued, in flight, or
        refused by the host in this process: retrying cannot help). ``Poster.wanted`` has said
        it is not posted; a status dropped for a timeout, a full queue or ``drain`` is forgotten
        here (``_on_drop``), so the next pass with the same verdict queues it again."""
        key = (sha, state, description)
        what = f"commit status {state} for {sha[:12]}"
        message = outbox.Message(self._poster.host.name, what,
                                 lambda t: self._poster.post(sha, state, description, t), about)
        with self._lock:
            if self._queued == key:
                return
            self._queued, self._queued_message = key, message
        self._outbox.put(message)

    def _on_drop(self, message: outbox.Message, why: str) -> None:
        """One warning line, one Warning Event on the first Application the message is about, or
        on the agent's own Pod (``Settings.agent_pod``) when it is about none (a commit status
        of a pass with no Application: issue 32 allows "the agent's own object"). A commit
        status dropped without a refusal is wanted again (``_status``)."""
        with self._lock:
            if message is self._queued_message and not message.refused:
                self._queued = self._queued_message = None
        line = f"dropped {message.what} to {message.destination}: {why}"
        self.dropped.append(line)
        log.warning("%s", line, extra={"fields": {"event": "notification-dropped", "destination": message.destination}})
        if self.kube is None:
            return
        if message.about:
            ref = message.about[0]
            obj = {"apiVersion": "heumsi.github.io/v1", "kind": "Application",
                   "metadata": {"name": ref.name, "namespace": ref.namespace, "uid": getattr(ref, "uid", "")}}
        elif self.settings.agent_pod:
            namespace, name, uid = self.settings.agent_pod
            obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "uid": uid}}
        else:
            return
        self.kube.event(obj, "Warning", DROPPED_REASON, line)

    def drain(self) -> list[str]:
        """Wait up to ``timeout`` seconds for the queue (``sync --once``); returns every message
        dropped in this process, one line each (no secret)."""
        self._outbox.drain(self.settings.timeout)
        return list(self.dropped)

    def close(self) -> None:
        self._outbox.close()


@dataclass(frozen=True)
class _Ref:
    namespace: str
    name: str
    uid: str = ""
