"""Health: the five statuses, their order, and the rules every kind shares. Pure.

The shape and the rules follow Argo CD's gitops-engine ``pkg/health`` (``health_deployment.go``,
``health_service.go``, ``health.go``): each function takes the live object as the API server
returns it (a dict, or None when it does not exist) and answers a :class:`Health` with one of
five statuses. Only the fields named in each docstring are read, so a fixture captured with
``kubectl get -o yaml`` is a complete test input (see ``tests/unit/kinds/fixtures/health``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from agent.api.objects import Obj, ObjectMeta


class Status(StrEnum):
    """A health status, as written to ``status.health.status`` (gitops-engine's ``HealthStatusCode``).
    A ``str``: it compares, hashes and serializes as its value."""

    HEALTHY = "Healthy"
    PROGRESSING = "Progressing"
    DEGRADED = "Degraded"
    MISSING = "Missing"
    SUSPENDED = "Suspended"
    UNKNOWN = "Unknown"
    """What a reader shows for an Application with no ``status.health`` yet; no rule answers it."""


HEALTHY, DEGRADED = Status.HEALTHY, Status.DEGRADED  # the names explainview reads, until it uses Status

ORDER = (Status.HEALTHY, Status.SUSPENDED, Status.PROGRESSING, Status.MISSING, Status.DEGRADED)
"""Statuses from best to worst; an Application takes its worst child's (gitops-engine's
``healthOrder``, without Unknown). Why this order: Degraded needs a person (a rollout gave up);
Missing means a child does not exist at all, which is worse than one still rolling out;
Progressing usually resolves by itself; Suspended is a person's deliberate choice, not a fault,
but it is not Healthy either (nothing rolls out while it lasts), so it ranks just above."""


@dataclass(frozen=True)
class Health:
    """``status``: one of ``ORDER``; ``message``: a sentence naming why (empty when Healthy
    needs no explanation)."""

    status: Status
    message: str = ""

    def as_status(self) -> Obj:
        """The ``status.health`` object: ``{"status": ..., "message": ...}``."""
        return {"status": self.status, "message": self.message}


def pending_deletion(obj: Obj | None, kind: str) -> Health | None:
    """Progressing when ``obj`` (a live object of ``kind``) carries ``metadata.deletionTimestamp``:
    it is being deleted, held by a finalizer or by its namespace's termination, and will be
    gone however healthy its status reads (gitops-engine ``IsHealthy``'s first rule, "Pending
    deletion"). None otherwise."""
    meta: ObjectMeta = (obj or {}).get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return Health(Status.PROGRESSING, f"{kind} {meta.get('name', '')} is pending deletion (since "
                                          f"{meta['deletionTimestamp']}); a pass after it is gone creates it again")
    return None




VIEW_METADATA = ("name", "namespace", "generation", "deletionTimestamp", "resourceVersion")
VIEW_SPEC = ("paused", "replicas", "type", "suspend")


def view(obj: Obj) -> Obj:
    """The part of a child (a dict as the API serves it) that the kinds' ``health`` (a
    Deployment's, a Service's, a CronJob's ``spec.suspend``) and ``status.compute`` read: ``apiVersion``, ``kind``, ``metadata``'s
    ``VIEW_METADATA``, ``spec``'s ``VIEW_SPEC`` and the whole ``status``, each where present.
    A new dict; ``obj`` is not changed; ``deployment(view(d)) == deployment(d)`` for every ``d``.

    Why: a pass keeps each child it applied until the statuses are written (20,000 children
    at 10,000 Applications), and only their health is read again; the rest of an answer (the
    pod template, managedFields) is most of its size (issue 11: peak RSS)."""
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    out: Obj = {key: obj[key] for key in ("apiVersion", "kind") if key in obj}
    out["metadata"] = {key: meta[key] for key in VIEW_METADATA if key in meta}
    out["spec"] = {key: spec[key] for key in VIEW_SPEC if key in spec}
    if "status" in obj:
        out["status"] = obj["status"]
    return out




def worst(children: dict[str, Health]) -> Health:
    """The Application's health from its children's: ``{"Deployment/web": Health, ...}`` ->
    the worst by ``ORDER`` (the first named, in sorted order, on a tie), its message prefixed
    with the child's name. No children, or all Healthy: Healthy, "all children healthy"."""
    if not children:
        return Health(Status.HEALTHY, "no children")
    name, found = max(sorted(children.items()), key=lambda item: ORDER.index(item[1].status))
    if found.status == Status.HEALTHY:
        return Health(Status.HEALTHY, "all children healthy")
    return Health(found.status, f"{name}: {found.message}")


