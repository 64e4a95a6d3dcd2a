"""Which conditions an Application carries after a pass, following kstatus. Pure.

kstatus (``sigs.k8s.io/cli-utils/pkg/kstatus``, the conventions Flux's objects follow) lets
generic tools (``kubectl wait``, Flux's health checks, kstatus-based deployers) read any
custom resource from three conditions:

- ``Ready``, normal-true: True only when the object is fully reconciled and working.
- ``Reconciling``, abnormal-true: True while the controller is still making the object real.
- ``Stalled``, abnormal-true: True when the controller cannot make progress on its own.

kstatus asks that abnormal-true conditions be removed (or set False) when they do not apply;
this agent removes them, as Flux does, so a healthy Application carries only ``Ready`` and
``Synced``. ``Synced`` is this agent's own (kept from before): did the last pass apply the
Application and its children.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from agent.api.objects import Obj
from agent.kinds import health as health_


class ConditionType(StrEnum):
    """The condition types an Application carries (``status.conditions[].type``). A ``str``."""

    READY = "Ready"
    RECONCILING = "Reconciling"
    STALLED = "Stalled"
    SYNCED = "Synced"
    SOURCE_AVAILABLE = "SourceAvailable"
    """Present, ``False``, only while the Application's source cannot be fetched or its commit
    cannot be read (``source_conditions``); removed by the first pass that reads the source again
    (as Flux removes a ``FetchFailed`` condition), so a healthy Application carries only ``Ready``
    and ``Synced``. ``Ready`` is left as the last pass wrote it: the cluster still runs the last
    commit read (Flux's Kustomization keeps its Ready of the last artifact the same way)."""


class Reason(StrEnum):
    """The reasons this agent writes on its own conditions (``Synced``, ``Stalled``, ``Ready`` when the
    pass failed, ``SourceAvailable``). ``Ready`` otherwise carries a health status
    (``health.Status``) as its reason. A ``str``: it compares and serializes as its value."""

    SYNCED = "Synced"
    """``Synced`` True: the pass applied the Application and its children."""
    SYNC_FAILED = "SyncFailed"
    """Any failure retrying may fix: API errors, timeouts, conflicts (``failure_reason``)."""
    SUSPENDED = "Suspended"
    """``Synced`` False of an Application left exactly as it is: ``spec.suspend`` or the reconcile
    annotation (``suspend``)."""
    FETCH_FAILED = "FetchFailed"
    """``SourceAvailable``: the remote could not be fetched."""
    READ_FAILED = "ReadFailed"
    """``SourceAvailable``: the commit could not be read (a missing path, a broken object, a
    submodule that could not be read)."""
    INVALID_MANIFEST = "InvalidManifest"
    """The Application's file in Git failed to parse or validate (sync.py)."""
    INVALID_SPEC = "InvalidSpec"
    """The live Application's spec does not match the schema, so no children are rendered (sync.py)."""
    IMMUTABLE_CONFLICT = "ImmutableConflict"
    """A child's immutable field differs from Git and the child is not the agent's to delete (apply.py)."""
    INVALID = "Invalid"
    """The API server refused an object as invalid (HTTP 422): the same input is refused again."""
    OWNERSHIP_CONFLICT = "OwnershipConflict"
    """An object the Application needs is someone else's: a child's slot holds an object another
    controller controls or that nobody controls and the Application does not opt in to adopt
    (``plan.ownership``), or another source holds the Application (``sources.other_source``). The
    agent never applies over it: only a person (rename, delete, hand over) can fix that."""
    TASK_RUNNING = "TaskRunning"
    """``Ready`` and ``Synced`` False while a task of the current content has not succeeded: a
    BeforeRollout task holds the rollout, an AfterRollout one runs after it (``taskgate``);
    ``Reconciling`` is True."""
    TASK_FAILED = "TaskFailed"
    """A task's Job failed (``taskgate``): ``Stalled`` True, health Degraded; a BeforeRollout task's
    failure keeps the old version serving. A new commit or a sync-now request runs it again."""
    PRUNE_SKIPPED = "PruneSkipped"
    """``Synced`` False of an Application no longer in Git that the pass kept because a person chose
    so: ``--no-prune``, the annotation ``heumsi.github.io/prune: disabled``, or another source still
    has it in Git (sync.py)."""
    PRUNE_BLOCKED = "PruneBlocked"
    """``Synced`` False of an Application no longer in Git that the pass kept although pruning is on:
    a refused file could hide it (``hidden``: the message names the file and line), an Application's
    namespace is not allowed, or the mass-prune guard refused the prune (sync.py, ``guards``).
    ``explain`` says "Blocked: pruning held back" for it; the next clean pass prunes it."""


# the module-level names sync.py and explainview.py read, until they use the enums
SOURCE_AVAILABLE = ConditionType.SOURCE_AVAILABLE
FETCH_FAILED, READ_FAILED = Reason.FETCH_FAILED, Reason.READ_FAILED
INVALID_MANIFEST, INVALID_SPEC = Reason.INVALID_MANIFEST, Reason.INVALID_SPEC
PRUNE_SKIPPED, PRUNE_BLOCKED = Reason.PRUNE_SKIPPED, Reason.PRUNE_BLOCKED

STALLED_REASONS = frozenset({Reason.INVALID_MANIFEST, Reason.INVALID_SPEC, Reason.IMMUTABLE_CONFLICT, Reason.INVALID,
                             Reason.OWNERSHIP_CONFLICT, Reason.TASK_FAILED})
"""Failure reasons retrying cannot fix: only a new commit, or a person, can. Every other failure
(``SyncFailed``: API errors, timeouts, conflicts) may pass on the next attempt;
``PruneSkipped`` is a state a person chose and ``PruneBlocked`` a held-back prune that the next
clean pass resolves."""


def failure_reason(http_status: int, immutable_conflict: bool) -> Reason:
    """The ``Synced``/``Ready`` reason for an object the API server refused: ``ImmutableConflict``
    when the refusal was an immutable field on an object the agent may not delete
    (``apply.ImmutableConflict``), ``Invalid`` for any other HTTP 422, ``SyncFailed`` otherwise."""
    if immutable_conflict:
        return Reason.IMMUTABLE_CONFLICT
    return Reason.INVALID if http_status == 422 else Reason.SYNC_FAILED


@dataclass(frozen=True)
class Condition:
    """One condition before times are attached: ``type``, ``status`` (bool), ``reason``
    (CamelCase), ``message``."""

    type: ConditionType
    status: bool
    reason: str
    message: str


def kstatus(ok: bool, reason: str, message: str, health: health_.Health) -> list[Condition]:
    """The conditions for one Application after a pass, in the order they are written.

    Input: the pass's outcome for it (``ok``, and the failure or success ``reason`` and
    ``message`` of the ``Synced`` condition) and its health (``registry.health``).
    Output, always ``Ready`` first and ``Synced`` last:

    - ``Ready`` True (reason ``Healthy``, the health message) when the pass synced it and its
      health is Healthy; False with the failure's reason and message when the pass failed;
      otherwise False with the health status as reason (``Progressing``, ``Degraded``,
      ``Missing``, ``Suspended``) and the health message.
    - ``Reconciling`` True, reason ``Progressing``, only when the pass synced it and the health
      is Progressing (a rollout under way, or a Deployment whose controller has not yet observed
      its generation), or reason ``TaskRunning`` while a task runs (``taskgate``); absent otherwise.
    - ``Stalled`` True only when retrying cannot help: the pass failed with a reason in
      ``STALLED_REASONS`` (that reason), or it synced and the health is Degraded (reason
      ``Degraded``: kstatus reports a Deployment past its progress deadline as stalled); absent
      otherwise.
    - ``Synced``: ``ok`` with the outcome's reason and message.
    """
    out = []
    if not ok:
        out.append(Condition(ConditionType.READY, False, reason, message))
    elif health.status == health_.Status.HEALTHY:
        out.append(Condition(ConditionType.READY, True, health_.Status.HEALTHY, health.message))
    else:
        out.append(Condition(ConditionType.READY, False, health.status, health.message))
    if ok and health.status == health_.Status.PROGRESSING:
        out.append(Condition(ConditionType.RECONCILING, True, health_.Status.PROGRESSING, health.message))
    elif not ok and reason == Reason.TASK_RUNNING:
        out.append(Condition(ConditionType.RECONCILING, True, reason, message))
    if not ok and reason in STALLED_REASONS:
        out.append(Condition(ConditionType.STALLED, True, reason, message))
    elif ok and health.status == health_.Status.DEGRADED:
        out.append(Condition(ConditionType.STALLED, True, health_.Status.DEGRADED, health.message))
    out.append(Condition(ConditionType.SYNCED, ok, reason, message))
    return out


def source_conditions(old: list[Obj], reason: str, message: str, generation: int, now: str) -> list[Obj] | None:
    """The conditions an Application whose source failed (``reason``: ``FETCH_FAILED`` or
    ``READ_FAILED``; ``message``: the error, already redacted) carries: ``old`` (its stored
    conditions, in order) with ``SourceAvailable`` status ``False`` put before ``Synced`` (last
    when there is none). ``lastTransitionTime`` is ``now`` (RFC 3339) when the condition was not
    ``False`` before, else kept: it says since when. None when ``old`` already says the same
    (status, reason, message): a failing source is written once, not on every pass. Pure."""
    previous = next((c for c in old if c.get("type") == ConditionType.SOURCE_AVAILABLE), None)
    if previous and (previous.get("status"), previous.get("reason"), previous.get("message")) == \
            ("False", reason, message):
        return None
    since = previous.get("lastTransitionTime") if previous and previous.get("status") == "False" else None
    condition = {"type": ConditionType.SOURCE_AVAILABLE, "status": "False", "reason": reason, "message": message,
                 "lastTransitionTime": since or now, "observedGeneration": generation}
    rest = [c for c in old if c.get("type") != ConditionType.SOURCE_AVAILABLE]
    at = next((i for i, c in enumerate(rest) if c.get("type") == ConditionType.SYNCED), len(rest))
    return rest[:at] + [condition] + rest[at:]
