"""Make one planned object live: take kubectl's fields over, server-side apply, and recreate a
child whose immutable field differs from Git; before children are created, check that their
names are not someone else's objects (``claim``).

Why a module of its own: these are the writes of a pass that change objects, and each needs a
rule that plain server-side apply does not give. Fields other managers own where the agent
renders in full are handed to the agent first (``fields.handover``), so the apply removes
what Git does not have. A field the API server refuses to change in place (a Deployment's
``spec.selector``) is fixed by deleting and recreating the object, and only when it is the
agent's own (``plan.not_ours``, the rule that also decides which objects are applied over);
someone else's object is never deleted.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, replace
from typing import Callable, Mapping, cast

from agent.api.labels import ADOPT_ANNOTATION
from agent.api.objects import Obj
from agent.api.schema import KIND
from agent.engine import conditions, diff, hostclaim, plan
from agent.engine.report import ADOPTED, CONFIGURED, CREATED, FAILED, RECREATED, UNCHANGED, Action, Report
from agent.kinds import fields, registry
from agent.kube.cluster import ApiError, Cluster

log = logging.getLogger("agent.apply")
RECREATE_WAIT = 60.0  # seconds to wait for the old object to be gone before creating it again
TAKE_OVER_ATTEMPTS = 3
_IMMUTABLE = re.compile(r"([\w.\[\]-]+): (?:Invalid value|Forbidden)\b.*?(?:field is immutable|"
                        r"may not change once set|is immutable)", re.S)


class ImmutableConflict(ApiError):
    """A child's immutable field differs from Git and the child is not the agent's, so it is
    not deleted: retrying cannot help (the Application's ``Stalled`` condition)."""


@dataclass(frozen=True, slots=True)  # a pass makes one per object: no __dict__
class Applied:
    """The outcome for one object: ``live`` as the API server returned it; ``action`` one of
    created, configured, unchanged, recreated, adopted; ``message`` says why it was recreated
    or adopted; ``warnings``: what the API server's ``Warning`` headers said of its writes
    (``Cluster.take_warnings``: PodSecurity's ``warn`` mode, a deprecated API)."""

    live: Obj
    action: Action
    message: str = ""
    warnings: tuple[str, ...] = ()


def immutable_field(err: ApiError) -> str | None:
    """The field path (``spec.selector``) an API error refused as immutable, or None. The API
    server answers 422 Invalid with ``<field>: Invalid value: ...: field is immutable``."""
    if err.status != 422:
        return None
    match = _IMMUTABLE.search(err.message or "")
    return match.group(1) if match else None


def converge(kube: Cluster, step: plan.Step) -> Applied:
    """Carry out a create, update or unchanged ``step`` (see ``plan.plan``).

    Update: when the live object is the agent's and other managers own fields the agent
    renders in full, hand those to the agent (a managedFields patch), then apply. The action
    is ``configured`` only when the object or its field ownership changed (a no-op apply, such
    as one whose value the server alters back, is ``unchanged``). A child refused for an
    immutable field is deleted (UID precondition), awaited and created again: ``recreated``.
    Raises ApiError (prefixed with the object's subject) when a call fails, when the refused
    object is not the agent's, or when the old object does not go within RECREATE_WAIT s.
    """
    if step.action == plan.Op.UNCHANGED:
        return Applied(cast(Obj, step.live), UNCHANGED)  # an unchanged step has a live object
    desired = cast(Obj, step.desired)  # every step but a prune has one
    mine = step.live is not None and (step.adopting or plan.not_ours(step.live) is None)
    let_go = mine and step.live is not None and fields.releasable(step.live, desired) and _release(kube, step)
    if step.adopting:
        adopted = _adopt(kube, step)
        took = True
    else:
        adopted, took = "", step.live is not None and plan.drifted_ownership(step.live, desired) \
            and _take_over(kube, step)
    try:
        live = kube.apply(desired)
    except ApiError as err:
        field = immutable_field(err) if step.identity[1] != KIND else None
        if field is None:
            raise
        done = _recreate(kube, step, field, err)
        return replace(done, action=ADOPTED, message=f"{adopted}; {done.message}, so recreated") if adopted else done
    if step.live is None:
        return Applied(live, CREATED)
    if adopted:
        return Applied(live, ADOPTED, adopted)
    return Applied(live, CONFIGURED if took or let_go or _moved(kube, step.live, live) else UNCHANGED)


def _moved(kube: Cluster, before: Obj, after: Obj) -> bool:
    """True when an apply changed the object: its resourceVersion moved. A dry run stores
    nothing and keeps the resourceVersion, so there the objects are compared without the
    server-managed fields (``diff.strip``)."""
    if kube.dry_run:
        return diff.strip(before) != diff.strip(after)
    return bool(before["metadata"].get("resourceVersion") != after["metadata"].get("resourceVersion"))


def _take_over(kube: Cluster, step: plan.Step) -> bool:
    """Hand other managers' fields in the authoritative subtrees to the agent; True when the
    managedFields were rewritten (``_rewrite``)."""
    desired = cast(Obj, step.desired)
    return _rewrite(kube, step, lambda live: fields.handover(live, desired["apiVersion"], desired=desired),
                    "field ownership not taken over")


def _adopt(kube: Cluster, step: plan.Step) -> str:
    """Take over the Application's child that someone else wrote (``step.adopting``): every
    field the agent renders is handed to its manager (``fields.adoption``) before the apply.
    Returns the message of the adoption: why it is the Application's and the managers its
    fields were taken from."""
    taken: list[str] = []

    def entries_of(live: Obj) -> list[Obj] | None:
        entries, names = fields.adoption(live, cast(Obj, step.desired))
        taken[:] = names
        return entries

    _rewrite(kube, step, entries_of, "not adopted")
    return f"{step.why}; fields taken from {', '.join(taken)}" if taken else step.why


def _release(kube: Cluster, step: plan.Step) -> bool:
    """Let go of the fields the agent owns that Git now leaves to others (``fields.release``:
    a Deployment's replicas once an autoscaler owns them), before the apply that leaves them
    out, so that apply keeps their value. True when the managedFields were rewritten."""
    return _rewrite(kube, step, lambda live: fields.release(live, cast(Obj, step.desired)), "fields not let go of")


def _rewrite(kube: Cluster, step: plan.Step, entries_of: Callable[[Obj], list[Obj] | None], failed: str) -> bool:
    """Replace the live object's managedFields with ``entries_of(live)`` (None: nothing to
    change, False returned). Reads the object in full first (listed objects carry compacted
    managedFields, ``fields.compact``, and the patch replaces the whole list) and again when
    another write raced it; raises ApiError 409 (``failed``) after ``TAKE_OVER_ATTEMPTS``."""
    current = kube.get(cast(Obj, step.live))  # only a step with a live object is rewritten
    for _ in range(TAKE_OVER_ATTEMPTS):
        if current is None:
            return False
        entries = entries_of(current)
        if entries is None:
            return False
        try:
            kube.patch_managed_fields(current, entries)
            return True
        except ApiError as err:
            if err.status not in (409, 422, 500):
                raise
        current = kube.get(current)
    raise ApiError(409, "Conflict", f"other writers kept changing it; {failed} after {TAKE_OVER_ATTEMPTS} attempts",
                   step.subject)


def _recreate(kube: Cluster, step: plan.Step, field: str, refused: ApiError) -> Applied:
    why_not = ("appeared after this pass listed its kind, so it is not known to be the agent's"
               if step.live is None else None if step.adopting else plan.not_ours(step.live))
    if why_not is not None:
        raise ImmutableConflict(refused.status, refused.reason,
                                f"{field} is immutable and differs from Git, and this object {why_not}, so it "
                                "is not deleted; delete or rename it to let the agent create its own",
                                step.subject)
    why = f"{field} is immutable and differs from Git"
    log.info("recreating %s: %s", step.subject, why,
             extra={"fields": {"event": "recreate", "object": step.subject, "field": field}})
    live = cast(Obj, step.live)  # why_not says so when there is none
    kube.delete(live)
    if not kube.wait_gone(live, RECREATE_WAIT):
        raise ApiError(408, "Timeout", f"deleted to recreate it ({why}), but it was still there after "
                                       f"{RECREATE_WAIT:g}s (a finalizer?)", step.subject)
    return Applied(kube.apply(cast(Obj, step.desired)), RECREATED, why)


def claim(kube: Cluster, report: Report, steps: list[plan.Step], failures: dict[str, str],
          reasons: dict[str, str], taken: dict[str, set[str]] | None = None,
          listed: dict[tuple[str, str, str], list[Obj]] | None = None,
          opted: frozenset[str] | set[str] = frozenset(), denied: Mapping[str, str] | None = None) -> list[plan.Step]:
    """Children whose slot may hold someone else's object: one list per kind and namespace
    that has a create (no label selector), then ``plan.claim`` (``opted``: the Applications
    that opted in to adopt, ``plan.opted_in``, where the operator consents; ``denied``: why it
    does not, for the others that opted in). A child the agent made that lost its
    ``managed-by`` label, or the Application's child someone else made, is updated in place
    (``converge``); someone else's object fails its Application (reason
    ``OwnershipConflict``, Stalled) with one message naming the object, its controller, its
    field managers and what to do (every such object of one Application, joined by ``; ``),
    and is never applied over or pruned; ``taken`` (app key -> kinds) records which child. ``listed`` ((group, kind, namespace) -> objects), when given,
    keeps each list for the next call: a pass that claims its children in batches lists each
    kind and namespace once, before it created any of them, as one call for all would. Then an
    Ingress that would take over a host and path another namespace's Ingress serves fails its
    Application the same way (``hostclaim``: one cluster-wide list of Ingresses, kept in ``listed``)."""
    listed = {} if listed is None else listed
    wanted = sorted({(s.identity[0], s.identity[1], s.identity[2]) for s in steps if s.action == plan.Op.CREATE})
    for where in wanted:
        if where not in listed:
            listed[where] = kube.list_in(*where)
    found = [obj for where in wanted for obj in listed[where]]
    steps, conflicts = plan.claim(steps, found, opted, denied)
    steps, hosts = hostclaim.check(kube, steps, listed)
    refused = [(step, f"exists and {reason}; field managers: {', '.join(plan.managers(cast(Obj, step.live))) or 'none'}; "
                f"{_remedy(step)}") for step, reason in conflicts] + hosts
    for n, (step, why) in enumerate(refused):
        key = plan.owner_key(cast(Obj, step.desired))  # a conflict has both objects, a claimed host its desired one
        line = f"{step.subject}: {why}"
        # one message naming every such object of the Application (a ConfigMap and an autoscaler)
        failures[key] = f"{failures[key]}; {line}" \
            if reasons.get(key) == conditions.Reason.OWNERSHIP_CONFLICT and key in failures else line
        reasons[key] = conditions.Reason.OWNERSHIP_CONFLICT
        if taken is not None and n < len(conflicts):  # someone else's object holds the slot
            taken.setdefault(key, set()).add(registry.slot_of(step.identity[1], step.identity[3]))
        report.add(key, step.subject, FAILED, why)
    return steps


def _remedy(step: plan.Step) -> str:
    """What a person can do about someone else's object in a child's slot."""
    if plan.controller(cast(Obj, step.live)) is None and "--adopt-namespaces" in step.why:
        return ("left alone. To hand it to the agent, the operator adds its namespace to --adopt-namespaces; or "
                "delete or rename it, or rename the Application")
    if plan.controller(cast(Obj, step.live)) is None:
        return (f'left alone. To hand it to the agent, set the annotation {ADOPT_ANNOTATION}: "true" on the '
                "Application in Git; or delete or rename it, or rename the Application")
    return "left alone. Delete or rename it to let the agent create its own, or rename the Application"
