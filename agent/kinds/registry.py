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
from agent.kinds import autoscaler, configmap, deployment, ingress, service
from agent.kinds.health import Health, Status, worst
from agent.kinds.kind import ChildKind

CHILD_KINDS: tuple[ChildKind, ...] = (
    configmap.KIND,  # before the Deployment that mounts it
    deployment.KIND,
    service.KIND,
    ingress.KIND,
    autoscaler.KIND,
)
BY_KIND: dict[str, ChildKind] = {k.kind: k for k in CHILD_KINDS}


def children(name: str, namespace: str, uid: str, spec: Obj) -> list[Obj]:
    """The desired children of the Application ``namespace/name`` with ``uid`` and ``spec``,
    as apply-ready dicts in ``CHILD_KINDS`` order (a kind whose render answers None is left out)."""
    return [obj for k in CHILD_KINDS if (obj := k.render(name, namespace, uid, spec)) is not None]


def wanted(spec: Obj | None) -> tuple[ChildKind, ...]:
    """The kinds an Application with ``spec`` has children of (``ChildKind.wanted``), in
    ``CHILD_KINDS`` order; None (a spec not known) counts as ``{}``: a Deployment alone (a Service
    only with ``port``)."""
    return tuple(k for k in CHILD_KINDS if k.wanted(spec or {}))


def health(live: Mapping[str, Obj | None], taken: frozenset[str] = frozenset(), spec: Obj | None = None) -> Health:
    """Health of an Application with ``spec`` from its live children, ``{kind: object or
    None}`` (a kind missing from the mapping counts as absent): the worst of the kinds it has
    (``wanted``). ``taken``: the kinds whose name another object holds, so the agent's child is
    Missing though an object of that name exists (the ``OwnershipConflict`` failure says whose)."""
    found = {k.kind: k.health(live.get(k.kind)) for k in wanted(spec)}
    for kind in taken & found.keys():
        found[kind] = Health(Status.MISSING, f"another {kind} of this name exists and is not the agent's, so the "
                                             "agent's is not created")
    return worst(found)


def trim(obj: Obj) -> Obj:
    """``obj`` (a listed or applied object) cut by its kind's ``trim``; other kinds as they are."""
    kind = BY_KIND.get(obj.get("kind", ""))
    return kind.trim(obj) if kind else obj
