"""Retries with exponential backoff that a new commit resets. Pure.

Why: an Application whose apply keeps failing (a quota refuses its Service, an admission webhook
denies its Deployment) would otherwise be attempted on every pass, hammering the API server
every interval and every watch event. Argo CD's lesson (argo-cd#11494): the retries of an old
failure must never block a newer commit, so a new commit, a spec change or a sync-now request
resets the backoff at once.

The state lives in the Application's status, so it survives a restart and the agent keeps no
memory of its own: ``status.failures`` (consecutive failed attempts) and
``status.nextRetryTime`` (RFC 3339 UTC, whole seconds). The commit and generation the last
attempt worked from are the ones ``status.lastAttemptedCommit`` and
``status.observedGeneration`` already record; the sync-now token is ``sync_now.pending``.

Numbers (``Policy`` defaults): the n-th consecutive failure waits ``min(5 s * 2**(n-1), 300 s)``
(5, 10, 20, 40, 80, 160, 300, 300, ... seconds), less a jitter of up to 10 % so that many
Applications failing together do not retry in lockstep; the cap is never exceeded.

Which command backs off: ``run`` skips an Application while its ``nextRetryTime`` is in the
future. A one-shot ``sync --once`` (a person or CI asking now) attempts everything; it still
records the failure count and next retry time, so ``run`` and ``sync`` leave the same status.
"""

from __future__ import annotations

import datetime
import random as random_
from dataclasses import dataclass, field
from typing import Callable

from agent.api.objects import Obj
from agent.common import rfc3339
from agent.engine import sync_now

FAILURES, NEXT_RETRY = "failures", "nextRetryTime"
"""Status fields holding the backoff state."""

BASE_SECONDS = 5.0
MAX_SECONDS = 300.0
JITTER = 0.1
_MAX_EXPONENT = 64  # 2**64 * any base is far beyond any cap; keeps the float finite


@dataclass(frozen=True)
class Policy:
    """How long to wait after failures. ``base``: seconds after the first failure;
    ``cap``: the longest wait, seconds; ``jitter``: the share (0 to 1) of a wait that may be
    taken off at random; ``random``: returns a float in [0, 1) (inject a seeded one in tests);
    ``skip``: True for ``run`` (Applications in backoff are skipped), False for ``sync --once``
    (everything is attempted, the state is still recorded)."""

    base: float = BASE_SECONDS
    cap: float = MAX_SECONDS
    jitter: float = JITTER
    random: Callable[[], float] = field(default=random_.random, compare=False)
    skip: bool = False


ONE_SHOT = Policy()
"""The policy of ``sync --once``: default numbers, nothing skipped."""


def delay(failures: int, policy: Policy = ONE_SHOT) -> float:
    """Seconds to wait after ``failures`` (>= 1) consecutive failures, before jitter:
    ``min(base * 2**(failures-1), cap)``. Raises ValueError for ``failures`` < 1."""
    if failures < 1:
        raise ValueError(f"failures must be at least 1, not {failures}")
    return min(policy.base * 2.0 ** min(failures - 1, _MAX_EXPONENT), policy.cap)


def jittered(failures: int, policy: Policy = ONE_SHOT) -> float:
    """``delay`` less a random share of at most ``policy.jitter`` of it: a value in
    ``(delay * (1 - jitter), delay]`` (``policy.random()`` of 0 gives the full delay)."""
    full = delay(failures, policy)
    return full * (1.0 - policy.jitter * policy.random())


def format_time(moment: datetime.datetime) -> str:
    """RFC 3339 UTC with whole seconds, rounded up (a retry is never earlier than computed),
    e.g. ``2026-12-01T10:00:05Z``. ``moment`` must be timezone-aware."""
    utc = moment.astimezone(datetime.timezone.utc)
    if utc.microsecond:
        utc = utc.replace(microsecond=0) + datetime.timedelta(seconds=1)
    return utc.strftime("%Y-%m-%dT%H:%M:%SZ")


parse_time = rfc3339.parse


def failures(app: Obj) -> int:
    """``status.failures`` of ``app`` when it is a positive integer, else 0."""
    value = (app.get("status") or {}).get(FAILURES)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def reset_reason(app: Obj, commit: str | None) -> str | None:
    """Why the backoff of ``app`` (a live Application dict) no longer holds, or None:

    - ``new commit``: ``commit`` (the pass's commit; None for an Application not from Git) is
      not ``status.lastAttemptedCommit``;
    - ``spec changed``: ``metadata.generation`` is not ``status.observedGeneration`` (the
      generation the failed attempt saw);
    - ``sync requested``: a sync-now token not handled yet (``sync_now.pending``).
    """
    status = app.get("status") or {}
    if commit is not None and status.get("lastAttemptedCommit") != commit:
        return "new commit"
    if (app.get("metadata") or {}).get("generation") != status.get("observedGeneration"):
        return "spec changed"
    if sync_now.pending(app):
        return "sync requested"
    return None


@dataclass(frozen=True)
class Waiting:
    """An Application a pass skips: ``failures`` so far and ``next_retry`` (RFC 3339, as
    stored)."""

    failures: int
    next_retry: str

    def message(self) -> str:
        """The report's words, e.g. ``backing off after 3 failures, next retry at T``."""
        plural = "s" if self.failures != 1 else ""
        return f"backing off after {self.failures} failure{plural}, next retry at {self.next_retry}"


def waiting(app: Obj, commit: str | None, now: datetime.datetime) -> Waiting | None:
    """Whether a ``run`` pass skips ``app``: a Waiting when it has failures, its
    ``nextRetryTime`` is later than ``now`` (aware datetime) and no reset rule applies
    (``reset_reason`` with the pass's ``commit``, None for an Application not from Git); None
    when the pass attempts it."""
    count = failures(app)
    status: Obj = app.get("status") or {}
    stored = status.get(NEXT_RETRY)
    at = parse_time(stored)
    if count == 0 or at is None or not isinstance(stored, str) or now >= at or reset_reason(app, commit) is not None:
        return None  # a time was parsed: ``stored`` is its text
    return Waiting(count, stored)


def status_fields(app: Obj, commit: str | None, failed: bool, now: datetime.datetime,
                  policy: Policy = ONE_SHOT) -> Obj:
    """The backoff fields of the status a pass writes for ``app`` after attempting it.

    ``failed``: an apply of the Application or one of its children failed this pass. Then
    ``{"failures": n, "nextRetryTime": now + jittered(n)}`` with n one more than the stored
    count, or 1 when a reset rule applied (``reset_reason``: a new commit, spec or request
    starts the count again). Otherwise ``{}``: a success (or an outcome that applied nothing)
    clears both fields."""
    if not failed:
        return {}
    count = 1 if reset_reason(app, commit) is not None else failures(app) + 1
    wait = jittered(count, policy)
    return {FAILURES: count, NEXT_RETRY: format_time(now + datetime.timedelta(seconds=wait))}


def earliest(current: datetime.datetime | None, stored: str | None) -> datetime.datetime | None:
    """The sooner of ``current`` and the timestamp ``stored`` (either may be None or, for
    ``stored``, unparsable)."""
    at = parse_time(stored)
    if at is None:
        return current
    return at if current is None or at < current else current


def retry_sooner(retry_at: datetime.datetime | None, next_interval: datetime.datetime | None) -> bool:
    """True when the runner should schedule an extra pass at ``retry_at``: there is one and
    it comes before the next interval pass (``next_interval``; None: none scheduled)."""
    return retry_at is not None and (next_interval is None or retry_at < next_interval)
