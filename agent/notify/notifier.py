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
OPEN = 100
"""Commits a notifier keeps looking at for a final status after their ``pending`` (the oldest
are forgotten first): a pass's verdicts look at no more than these besides its own commit."""


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
        self._queued: dict[str, tuple] = {}  # sha -> the last commit status queued for it: (state, description)
        self._queued_message: dict[str, outbox.Message] = {}  # ... and its message
        self._open: dict[str, None] = {}  # commits a pending was queued for, no final status yet (oldest first)
        self._lock = threading.Lock()  # _queued: set by passes, cleared by the outbox's thread

    def started(self, commit: str | None, applications=()) -> None:
        """A pass starts applying ``commit``: queue ``pending`` unless that commit has a status.
        ``applications``: the commit's (anything with ``namespace`` and ``name``, sorted); the
        first is the one a Warning Event names when the status is dropped (none: the agent's
        own Pod, ``_on_drop``)."""
        if self._poster is not None and commit and self._poster.wanted(commit, commitstatus.PENDING,
                                                                        commitstatus.PENDING_TEXT):
            about = [_Ref(a.namespace, a.name) for a in applications[:1]]
            self._status(commitstatus.Post(commit, commitstatus.PENDING, commitstatus.PENDING_TEXT), about)

    def finished(self, report) -> None:
        """Queue the pass's wanted notices (``news.wanted``) for the webhook, and its commit
        statuses (``commitstatus.verdicts``: the pass's commit, and each commit a rollout's
        outcome is about) unless each is known to be posted already. The commits looked at
        besides the pass's: those this notifier queued a ``pending`` for and no final status
        yet (at most ``OPEN``), those the pass's notices are about (a rollout's outcome moved),
        and those whose rollout a new content ended undecided (``report.replaced``). So a
        commit's ``pending`` is followed by its final state, after a restart too, and no pass
        reads the statuses of every commit its Applications came from."""
        s = self.settings
        notices = [n for n in report.notices if news.wanted(n, s.on, s.severity)]
        if self._webhook is not None:
            for body, about in webhook.bodies(notices, s.source, s.status_page_url, s.batch):
                what = f"{len(about)} notification{'s' if len(about) != 1 else ''} ({about[0].reason} of " \
                       f"{about[0].application}{' and others' if len(about) > 1 else ''})"
                self._outbox.put(outbox.Message("webhook", what, lambda t, b=body: self._webhook.send(b, t), about))
        if self._poster is None:
            return
        named = [n.commit for n in report.notices if n.commit] + sorted(report.replaced)
        with self._lock:
            candidates = [*self._open, *named]
        for post in commitstatus.verdicts(report, candidates):
            if not self._poster.wanted(post.sha, post.state, post.description):
                if post.state != commitstatus.PENDING:
                    self._done(post.sha)
                continue
            mine = [k for k in sorted(report.readiness) if (report.attributed.get(k) or report.commit) == post.sha]
            first = (report.failing() if post.sha == report.commit else []) or mine or sorted(report.readiness)
            self._status(post, [_Ref(*k.split("/", 1)) for k in first[:1]])

    def _done(self, sha: str) -> None:
        """``sha`` has its final status: no pass looks at it again for it."""
        with self._lock:
            self._open.pop(sha, None)

    def _send(self, post: commitstatus.Post, timeout: float) -> bool:
        """Post ``post`` (the outbox's thread); a final state posted, or found there, closes its commit."""
        posted = self._poster.post(post.sha, post.state, post.description, timeout, over_pending=post.over_pending)
        if post.state != commitstatus.PENDING:
            self._done(post.sha)
        return posted

    def _status(self, post: commitstatus.Post, about: list) -> None:
        """Queue one commit status (``post``) unless the same is on its way already (queued, in flight, or
        refused by the host in this process: retrying cannot help). ``Poster.wanted`` has said
        it is not posted; a status dropped for a timeout, a full queue or ``drain`` is forgotten
        here (``_on_drop``), so the next pass with the same verdict queues it again."""
        sha, key = post.sha, (post.state, post.description)
        what = f"commit status {post.state} for {sha[:12]}"
        message = outbox.Message(self._poster.host.name, what, lambda t: self._send(post, t), about)
        with self._lock:
            if self._queued.get(sha) == key:
                return
            self._queued[sha], self._queued_message[sha] = key, message
            for kept in (self._queued, self._queued_message):
                while len(kept) > OPEN:
                    kept.pop(next(iter(kept)))
            if post.state == commitstatus.PENDING:
                self._open[sha] = None
                while len(self._open) > OPEN:
                    self._open.pop(next(iter(self._open)))
        self._outbox.put(message)

    def _on_drop(self, message: outbox.Message, why: str) -> None:
        """One warning line, one Warning Event on the first Application the message is about, or
        on the agent's own Pod (``Settings.agent_pod``) when it is about none (a commit status
        of a pass with no Application: issue 32 allows "the agent's own object"). A commit
        status dropped without a refusal is wanted again (``_status``)."""
        with self._lock:
            for sha, queued in list(self._queued_message.items()):
                if message is queued and not message.refused:
                    del self._queued[sha], self._queued_message[sha]
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
