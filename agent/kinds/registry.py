"""The child kinds an Application has, in one place. Pure.

A new kind is its module (``ChildKind``), one line in ``CHILD_KINDS`` and its fields in the
schema (``agent/api/schema.py``); ``make docs`` writes its status fields into the CRD and its
RBAC rules into ``deploy/`` (``agent/kinds/install.py``). docs/development.md lists every file
it touches. Order matters: children are rendered, applied and reported in this order (and so
are their status fields in the CRD and their RBAC rules).
"""

from __future__ import annotations

from collections.abc import Mapping

from agent.api.objects import Obj
from agent.kinds import autoscaler, configmap, cronjob, deployment, disruptionbudget, ingress, job, service
from agent.kinds.health import Health, Status, worst
from agent.kinds.kind import ChildKind

CHILD_KINDS: tuple[ChildKind, ...] = (
    configmap.KIND,  # before the Deployment and the tasks' Jobs that mount it
    job.KIND,  # a task's Job runs before the rollout it gates (engine.taskgate)
    deployment.KIND,
    service.KIND,
    ingress.KIND,
    autoscaler.KIND,
    disruptionbudget.KIND,
    cronjob.KIND,  # several per Application (ChildKind.many)
)
BY_KIND: dict[str, ChildKind] = {k.kind: k for k in CHILD_KINDS}


def children(name: str, namespace: str, uid: str, spec: Obj) -> list[Obj]:
    """The desired children of the Application ``namespace/name`` with ``uid`` and ``spec``,
    as apply-ready dicts in ``CHILD_KINDS`` order (a kind whose render answers None is left out;
    a kind with ``many`` adds each of its objects, in its render's order)."""
    return [obj for k in CHILD_KINDS for obj in k.objects(name, namespace, uid, spec)]


def slot(obj: Obj) -> str:
    """Where the pass keeps the child ``obj`` (desired or live) among its Application's children
    (``ChildKind.slot``): its kind, or ``Kind/name`` for a kind with ``many``."""
    return slot_of(obj.get("kind", ""), obj["metadata"]["name"])


def slot_of(kind: str, name: str) -> str:
    """``slot`` of the child of ``kind`` named ``name`` (a kind not registered: the kind)."""
    found = BY_KIND.get(kind)
    return found.slot(name) if found else kind


def members(name: str, spec: Obj | None) -> list[tuple[ChildKind, str, str]]:
    """(kind, object name, slot) of every child the Application ``name`` with ``spec`` may have:
    one per kind without ``many`` (whether wanted or not: its name is the Application's), and
    each of ``names`` of a kind with ``many``, in ``CHILD_KINDS`` order. What ``explain`` and the
    status page read of the cluster."""
    return [(k, n, k.slot(n)) for k in CHILD_KINDS for n in (k.names(name, spec or {}) if k.many else (name,))]


def healths(live: Mapping[str, Obj | None], spec: Obj | None = None, name: str = "") -> dict[str, Health]:
    """Slot -> health of each child the Application ``name`` with ``spec`` has (``wanted``;
    a kind with ``many``: each of its ``names``), from ``live`` (slot -> object or None; a slot
    missing from it counts as absent)."""
    found = {}
    for k in wanted(spec):
        for slot_ in ([k.slot(n) for n in k.names(name, spec or {})] if k.many else [k.kind]):
            found[slot_] = k.health(live.get(slot_))
    return found


def observed(name: str, spec: Obj | None, live: Mapping[str, Obj | None]) -> Obj:
    """The status fields the kinds read from the live children ``live`` (slot -> object or
    None) of the Application ``name`` with ``spec``, in ``CHILD_KINDS`` order: each kind's
    ``observed`` of its object, or a kind with ``many``'s ``observed_all``."""
    out: Obj = {}
    for k in CHILD_KINDS:
        out.update(k.observed_all(name, spec or {}, live) if k.observed_all is not None else k.observed(live.get(k.kind)))
    return out


def wanted(spec: Obj | None) -> tuple[ChildKind, ...]:
    """The kinds an Application with ``spec`` has children of (``ChildKind.wanted``), in
    ``CHILD_KINDS`` order; None (a spec not known) counts as ``{}``: a Deployment alone (a Service
    only with ``port``)."""
    return tuple(k for k in CHILD_KINDS if k.wanted(spec or {}))


def health(live: Mapping[str, Obj | None], taken: frozenset[str] = frozenset(), spec: Obj | None = None,
           name: str = "") -> Health:
    """Health of the Application ``name`` with ``spec`` from its live children, ``{slot: object
    or None}`` (``slot``; one missing from the mapping counts as absent): the worst of the
    children it has (``healths``). ``taken``: the slots whose name another object holds, so the
    agent's child is Missing though an object of that name exists (the ``OwnershipConflict``
    failure says whose)."""
    found = healths(live, spec, name)
    for slot_ in taken & found.keys():
        found[slot_] = Health(Status.MISSING, f"another {slot_.partition('/')[0]} of this name exists and is not the "
                                              "agent's, so the agent's is not created")
    return worst(found)


def trim(obj: Obj) -> Obj:
    """``obj`` (a listed or applied object) cut by its kind's ``trim``; other kinds as they are."""
    kind = BY_KIND.get(obj.get("kind", ""))
    return kind.trim(obj) if kind else obj
