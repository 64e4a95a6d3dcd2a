"""What is worth telling about an Application: the change of its persisted status. Pure.

Why a module of its own (issue 32): a notification is about a change of an Application's state,
never about a pass. Flux re-sends the same error every few minutes and Argo CD re-notifies after
a restart because they remember what they told somewhere else (or nowhere). Here the record of
what was told is the status itself: ``news`` compares the status an Application had before its
status write with the status that write stored, and is called only when the write succeeded
(``statuswrite.write``). So a restart of ``run``, a re-run of ``sync --once`` or a second replica
sees the old status equal to the new one and says nothing; nothing else is written to the
Application; an Application a commit did not change has nothing to tell.

The reasons, each on a transition (old -> new):

- ``Deployed`` (info): what the Application deploys changed: ``status.history[0].digest`` moved,
  else ``status.lastChangedCommit`` moved; when the stored status has neither (a first sync, or
  a status an agent without history wrote: an upgrade tells nothing), the pass's own
  ``changed`` (it created or updated an object for it); and ``Synced`` True. It names the
  commit now applied and the one applied before (``deployed``): after a ``git revert`` the revert
  commit, not the older commit that first brought the same content (issue 45).
- ``Ready`` (info): condition ``Ready`` became True, from a state that was not a failure.
- ``Recovered`` (info): it was failing (``failing``) and is not any more.
- ``Degraded`` (error): health became ``Degraded``.
- ``Stalled`` (error): condition ``Stalled`` became True for any reason but ``Degraded`` and
  ``TaskFailed`` (its health is Degraded: told as ``Degraded``, naming the task and its Job).
- ``ApplyFailed`` (error): condition ``Synced`` became False with a failure reason (not
  ``PruneSkipped``, ``PruneBlocked`` or ``Suspended``) and it is not ``Stalled``.
- ``ScheduleFailed`` (error): a schedule's last failed Job (``status.schedules[].lastFailure.job``)
  is one the status did not name before: a scheduled run failed. It never makes the Application
  failing (``failing``): no ``Recovered`` follows, and commit statuses do not count it.
- ``Pruned`` (info): made by the prune step (``pruned``), not from a status.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from agent.api.objects import Obj
from agent.engine.conditions import ConditionType, Reason
from agent.kinds.health import Status


class NoticeReason(StrEnum):
    """What a notice tells (see the module's list). A ``str``: it compares and serializes as its value."""

    DEPLOYED = "Deployed"
    READY = "Ready"
    RECOVERED = "Recovered"
    DEGRADED = "Degraded"
    STALLED = "Stalled"
    APPLY_FAILED = "ApplyFailed"
    SCHEDULE_FAILED = "ScheduleFailed"
    PRUNED = "Pruned"


class Severity(StrEnum):
    """How bad a notice is: ``info`` or ``error``."""

    INFO = "info"
    ERROR = "error"


REASONS = tuple(NoticeReason)
SEVERITY = {NoticeReason.DEPLOYED: Severity.INFO, NoticeReason.READY: Severity.INFO,
            NoticeReason.RECOVERED: Severity.INFO, NoticeReason.PRUNED: Severity.INFO,
            NoticeReason.DEGRADED: Severity.ERROR, NoticeReason.STALLED: Severity.ERROR,
            NoticeReason.APPLY_FAILED: Severity.ERROR, NoticeReason.SCHEDULE_FAILED: Severity.ERROR}
NOT_FAILURES = frozenset({Reason.SYNCED, Reason.PRUNE_SKIPPED, Reason.PRUNE_BLOCKED, Reason.SUSPENDED,
                          Reason.TASK_RUNNING})
"""``Synced`` condition reasons that are no failure of the Application's own: a state a person
chose, a prune held back (what blocked it is told as its own failure), a task still running
before or after the rollout (``taskgate``), or the success."""


@dataclass(frozen=True, slots=True)
class Notice:
    """One thing worth telling. ``namespace``/``name``: the Application; ``uid``: its uid (for
    a Warning Event about the notice; "" when unknown); ``reason``: one of ``REASONS``;
    ``severity``: ``info`` or ``error``; ``message``: one sentence, the same for the same
    transition (no times, no durations); ``commit``: the full SHA it is about (None for a
    hand-applied Application); ``previous_commit``: the commit of the content before (None when
    unknown); ``source_path``: its file in Git (None when unknown)."""

    namespace: str
    name: str
    reason: NoticeReason
    severity: Severity
    message: str
    commit: str | None = None
    previous_commit: str | None = None
    source_path: str | None = None
    uid: str = ""

    @property
    def application(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"


def _condition(status: Obj, type_: str) -> Obj:
    """The condition ``type_`` of ``status`` ({} when absent)."""
    return next((c for c in status.get("conditions") or [] if isinstance(c, dict) and c.get("type") == type_), {})


def _is(status: Obj, type_: str) -> bool:
    return _condition(status, type_).get("status") == "True"


def _health(status: Obj) -> str | None:
    health = status.get("health")
    return health.get("status") if isinstance(health, dict) else None


def failing(status: Obj) -> bool:
    """True when ``status`` says the Application needs attention: ``Synced`` False with a failure
    reason (``NOT_FAILURES`` are none), ``Stalled`` True, or health ``Degraded``."""
    synced = _condition(status, ConditionType.SYNCED)
    return (synced.get("status") == "False" and synced.get("reason") not in NOT_FAILURES) \
        or _is(status, ConditionType.STALLED) or _health(status) == Status.DEGRADED


def content(status: Obj) -> tuple[str | None, str | None]:
    """(marker of what the Application deploys, the commit it came from) read from ``status``:
    ``history[0]``'s (digest, revision) when there is a history, else (``lastChangedCommit``,
    ``lastChangedCommit``), else (None, None): unknown."""
    history = status.get("history")
    if isinstance(history, list) and history and isinstance(history[0], dict):
        return history[0].get("digest"), history[0].get("revision")
    changed = status.get("lastChangedCommit")
    return changed, changed


def deployed(status: Obj) -> str | None:
    """The commit whose content the Application deploys now: ``lastChangedCommit`` (the commit at
    which its content last changed, a rollback included: a revert commit, or the older commit a
    reset and force-push went back to), else ``history[0].revision`` (the commit that first
    brought that content), else None. Not ``history[0].revision`` first: after ``git revert`` that
    is the old commit the revert restored, which is not what was deployed now."""
    changed = status.get("lastChangedCommit")
    if isinstance(changed, str) and changed:
        return changed
    revision = content(status)[1]
    return revision if isinstance(revision, str) and revision else None


def about(status: Obj) -> str | None:
    """The commit a notice of ``status`` is about: the deployed one (``deployed``) while
    ``Synced`` is True (a rollout's outcome is that commit's, whatever later commit the pass
    was at), else the commit the pass attempted (``lastAttemptedCommit``, then
    ``lastSyncedCommit``): an apply that failed is the attempted commit's."""
    if _is(status, ConditionType.SYNCED) and (commit := deployed(status)):
        return commit
    return status.get("lastAttemptedCommit") or status.get("lastSyncedCommit")


def replaced(old: Obj | None, new: Obj) -> str | None:
    """The commit whose rollout ``new`` ended undecided: ``deployed(old)`` when ``new`` deploys
    another commit's content and ``old`` was neither ``Ready`` nor ``failing`` (its rollout was
    still going on), else None. Its commit status may still say ``pending``: the notifier gives
    it a final one (``commitstatus.verdicts``, "superseded")."""
    old = old or {}
    before = deployed(old)
    if before is None or deployed(new) in (None, before) or _is(old, ConditionType.READY) or failing(old):
        return None
    return before


def _before(old: Obj, new: Obj, commit: str | None) -> str | None:
    """The commit deployed before ``commit``: the one ``old`` deployed (``deployed``, else its
    ``lastSyncedCommit``) when it is another; else (``commit`` was already deployed) the revision
    of the content before it in ``new``'s history (``history[1]``), else None."""
    before = deployed(old) or old.get("lastSyncedCommit")
    if before != commit:
        return before
    history = new.get("history")
    second = history[1] if isinstance(history, list) and len(history) > 1 else None
    return second.get("revision") if isinstance(second, dict) else None


def _deployed(old: Obj, new: Obj, changed: bool) -> bool:
    """Did what the Application deploys change (see the module's ``Deployed``)?"""
    if not _is(new, ConditionType.SYNCED):
        return False
    before = content(old)[0]
    if before is None:  # first sync, or a status written before the history existed (an upgrade)
        return changed
    return content(new)[0] != before


def _short(sha: str | None) -> str:
    return sha[:7] if sha else "none"


def news(old: Obj | None, new: Obj, *, namespace: str, name: str, uid: str = "",
         changed: bool = False) -> list[Notice]:
    """The notices the write of ``new`` over ``old`` (the Application's status before; None or
    {} when it had none) is worth, in the order of ``REASONS``; [] when nothing worth telling
    moved. ``changed``: the pass created or updated an object for it (used for ``Deployed`` only
    when the status has no content marker, see ``content``). Messages name the condition's
    reason and message as stored, e.g. ``Degraded: Deployment: progress deadline exceeded``."""
    old = old or {}
    commit = about(new)
    previous = _before(old, new, commit)
    where: dict[str, Any] = {"namespace": namespace, "name": name, "uid": uid, "commit": commit,
                             "previous_commit": previous, "source_path": new.get("sourcePath")}
    out: list[Notice] = []

    def tell(reason: NoticeReason, message: str) -> None:
        out.append(Notice(reason=reason, severity=SEVERITY[reason], message=message, **where))

    if _deployed(old, new, changed):
        tell(NoticeReason.DEPLOYED, f"deployed commit {_short(commit)} (before: {_short(previous)})")
    was_failing, is_failing = failing(old), failing(new)
    ready = _condition(new, ConditionType.READY)
    if _is(new, ConditionType.READY) and not _is(old, ConditionType.READY) and not was_failing:
        tell(NoticeReason.READY, f"ready: {ready.get('message') or 'healthy'}")
    if was_failing and not is_failing:
        tell(NoticeReason.RECOVERED, "recovered: " + (f"ready: {ready.get('message') or 'healthy'}"
                                                      if _is(new, ConditionType.READY)
                                         else f"synced, {ready.get('reason') or 'not ready yet'}"))
    found = new.get("health")
    health: Obj = found if isinstance(found, dict) else {}
    if _health(new) == Status.DEGRADED and _health(old) != Status.DEGRADED:
        tell(NoticeReason.DEGRADED, f"Degraded: {health.get('message') or 'a child is degraded'}")
    stalled = _condition(new, ConditionType.STALLED)
    if stalled.get("status") == "True" and stalled.get("reason") not in (Status.DEGRADED, Reason.TASK_FAILED) \
            and not _is(old, ConditionType.STALLED):  # a failed task is Degraded too: told once, as Degraded
        tell(NoticeReason.STALLED, f"{stalled.get('reason')}: {stalled.get('message', '')}")
    synced, old_synced = _condition(new, ConditionType.SYNCED), _condition(old, ConditionType.SYNCED)
    if synced.get("status") == "False" and synced.get("reason") not in NOT_FAILURES \
            and not (old_synced.get("status") == "False" and old_synced.get("reason") not in NOT_FAILURES) \
            and stalled.get("status") != "True":
        tell(NoticeReason.APPLY_FAILED, f"{synced.get('reason')}: {synced.get('message', '')}")
    for message in failed_runs(old, new):
        tell(NoticeReason.SCHEDULE_FAILED, message)
    return out


def _failures(status: Obj) -> dict[str, Obj]:
    """Schedule name -> its ``lastFailure`` in ``status.schedules`` (only those with one)."""
    return {e["name"]: e["lastFailure"] for e in status.get("schedules") or []
            if isinstance(e, dict) and isinstance(e.get("lastFailure"), dict) and isinstance(e.get("name"), str)}


def failed_runs(old: Obj, new: Obj) -> list[str]:
    """One message per schedule of ``new`` whose last failed Job is not the one ``old`` named
    (a run failed since), in the order of ``new``'s schedules, e.g. ``schedule nightly-report:
    Job shop-nightly-report-29412180 failed (BackoffLimitExceeded: Job has reached the specified
    backoff limit)``."""
    before = _failures(old)
    out = []
    for name, failure in _failures(new).items():
        if (before.get(name) or {}).get("job") == failure.get("job"):
            continue
        why = ": ".join(str(failure[k]) for k in ("reason", "message") if failure.get(k))
        out.append(f"schedule {name}: Job {failure.get('job')} failed" + (f" ({why})" if why else ""))
    return out


def pruned(namespace: str, name: str, *, commit: str | None, previous_commit: str | None = None,
           source_path: str | None = None, uid: str = "") -> Notice:
    """The ``Pruned`` notice of an Application the prune step deleted at ``commit``."""
    return Notice(namespace, name, NoticeReason.PRUNED, SEVERITY[NoticeReason.PRUNED],
                  f"pruned: no longer in Git at commit {_short(commit)}",
                  commit, previous_commit, source_path, uid)


def wanted(notice: Notice, reasons: frozenset[str] | None, severity: str | None) -> bool:
    """True when ``notice`` passes the filters: its reason is in ``reasons`` (None: every
    reason) and, with ``severity`` ``error``, it is an error (``info``: everything)."""
    return (reasons is None or notice.reason in reasons) and \
        (severity != Severity.ERROR or notice.severity == Severity.ERROR)
