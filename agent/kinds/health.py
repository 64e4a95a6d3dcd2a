"""Health of an Application's children, one pure function per kind. Pure.

The shape and the rules follow Argo CD's gitops-engine ``pkg/health`` (``health_deployment.go``,
``health_service.go``, ``health.go``): each function takes the live object as the API server
returns it (a dict, or None when it does not exist) and answers a :class:`Health` with one of
five statuses. Only the fields named in each docstring are read, so a fixture captured with
``kubectl get -o yaml`` is a complete test input (see ``tests/unit/kinds/fixtures/health``).
"""

from __future__ import annotations

from dataclasses import dataclass

HEALTHY, PROGRESSING, DEGRADED, MISSING, SUSPENDED = "Healthy", "Progressing", "Degraded", "Missing", "Suspended"

ORDER = (HEALTHY, SUSPENDED, PROGRESSING, MISSING, DEGRADED)
"""Statuses from best to worst; an Application takes its worst child's (gitops-engine's
``healthOrder``, without Unknown). Why this order: Degraded needs a person (a rollout gave up);
Missing means a child does not exist at all, which is worse than one still rolling out;
Progressing usually resolves by itself; Suspended is a person's deliberate choice, not a fault,
but it is not Healthy either (nothing rolls out while it lasts), so it ranks just above."""


@dataclass(frozen=True)
class Health:
    """``status``: one of ``ORDER``; ``message``: a sentence naming why (empty when Healthy
    needs no explanation)."""

    status: str
    message: str = ""

    def as_status(self) -> dict:
        """The ``status.health`` object: ``{"status": ..., "message": ...}``."""
        return {"status": self.status, "message": self.message}


def pending_deletion(obj: dict | None, kind: str) -> Health | None:
    """Progressing when ``obj`` (a live object of ``kind``) carries ``metadata.deletionTimestamp``:
    it is being deleted, held by a finalizer or by its namespace's termination, and will be
    gone however healthy its status reads (gitops-engine ``IsHealthy``'s first rule, "Pending
    deletion"). None otherwise."""
    meta = (obj or {}).get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return Health(PROGRESSING, f"{kind} {meta.get('name', '')} is pending deletion (since "
                                   f"{meta['deletionTimestamp']}); a pass after it is gone creates it again")
    return None


def deployment(obj: dict | None) -> Health:
    """Health of an ``apps/v1`` Deployment (gitops-engine ``getAppsv1DeploymentHealth``).

    Reads ``metadata.generation``, ``spec.paused``, ``spec.replicas`` (default 1, as the API
    server defaults it) and ``status`` (``observedGeneration``, ``replicas``,
    ``updatedReplicas``, ``availableReplicas``, ``conditions``). First rule that matches:

    1. None: Missing.
    2. ``metadata.deletionTimestamp``: Progressing (``pending_deletion``).
    3. ``spec.paused``: Suspended.
    4. ``metadata.generation > status.observedGeneration``: Progressing (the controller has not
       seen the latest spec).
    5. condition ``Progressing`` is False with reason ``ProgressDeadlineExceeded``: Degraded.
    6. ``updatedReplicas < spec.replicas``: Progressing (new pods still to be made).
    7. ``status.replicas > updatedReplicas``: Progressing (old pods still terminating).
    8. ``availableReplicas < spec.replicas``: Progressing (updated pods not yet available).
    9. else Healthy.
    """
    if obj is None:
        return Health(MISSING, "Deployment does not exist")
    if (deleting := pending_deletion(obj, "Deployment")) is not None:
        return deleting
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    name = obj.get("metadata", {}).get("name", "")
    if spec.get("paused"):
        return Health(SUSPENDED, f"Deployment {name} is paused")
    if obj.get("metadata", {}).get("generation", 0) > status.get("observedGeneration", 0):
        return Health(PROGRESSING, "waiting for the deployment controller to observe the latest spec")
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Progressing" and condition.get("status") == "False" \
                and condition.get("reason") == "ProgressDeadlineExceeded":
            return Health(DEGRADED, f"Deployment {name} exceeded its progress deadline: "
                                    f"{condition.get('message', '')}".rstrip(": "))
    want = spec.get("replicas", 1)
    updated, total = status.get("updatedReplicas", 0), status.get("replicas", 0)
    available = status.get("availableReplicas", 0)
    if updated < want:
        return Health(PROGRESSING, f"waiting for rollout to finish: {updated} of {want} new replicas updated")
    if total > updated:
        return Health(PROGRESSING, f"waiting for rollout to finish: {total - updated} old replicas "
                                   "pending termination")
    if available < want:
        return Health(PROGRESSING, f"waiting for rollout to finish: {available} of {want} replicas available")
    return Health(HEALTHY, f"{available}/{want} replicas available")


def _read_whole(condition: dict) -> bool:
    """True for the one condition whose message ``deployment`` reports (Degraded)."""
    return (condition.get("type") == "Progressing" and condition.get("status") == "False"
            and condition.get("reason") == "ProgressDeadlineExceeded")


def trim(obj: dict) -> dict:
    """``obj`` (a listed or applied object, a dict as the API serves it) with a Deployment's
    ``status.conditions`` cut down to what ``deployment`` reads: each condition's ``type``,
    ``status`` and ``reason``, and the whole condition it reports (Progressing False,
    ProgressDeadlineExceeded, with its message). Every other kind, and every other field, is
    left as it is. Modifies and returns ``obj``.

    Why: a pass holds every listed Deployment, and their conditions' messages (naming each
    one's ReplicaSet) and timestamps are what keeps equal statuses from being shared
    (``share``); cut, the statuses of Deployments in one state are one object. Nothing else a
    pass does reads a child's conditions (``status.compute`` reads the replicas,
    ``triggers.fingerprint`` the replicas and ``deployment``'s answer; ``diff`` drops status)."""
    status = obj.get("status") if obj.get("kind") == "Deployment" else None
    found = status.get("conditions") if isinstance(status, dict) else None
    if isinstance(found, list):
        status["conditions"] = [c if not isinstance(c, dict) or _read_whole(c)
                                else {k: c[k] for k in ("type", "status", "reason") if k in c} for c in found]
    return obj


VIEW_METADATA = ("name", "namespace", "generation", "deletionTimestamp")
VIEW_SPEC = ("paused", "replicas", "type")


def view(obj: dict) -> dict:
    """The part of a child (Deployment or Service, a dict as the API serves it) that ``deployment``,
    ``service`` and ``status.compute`` read: ``apiVersion``, ``kind``, ``metadata``'s
    ``VIEW_METADATA``, ``spec``'s ``VIEW_SPEC`` and the whole ``status``, each where present.
    A new dict; ``obj`` is not changed; ``deployment(view(d)) == deployment(d)`` for every ``d``.

    Why: a pass keeps each child it applied until the statuses are written (20,000 children
    at 10,000 Applications), and only their health is read again; the rest of an answer (the
    pod template, managedFields) is most of its size (issue 11: peak RSS)."""
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    out = {key: obj[key] for key in ("apiVersion", "kind") if key in obj}
    out["metadata"] = {key: meta[key] for key in VIEW_METADATA if key in meta}
    out["spec"] = {key: spec[key] for key in VIEW_SPEC if key in spec}
    if "status" in obj:
        out["status"] = obj["status"]
    return out


def service(obj: dict | None) -> Health:
    """Health of a ``v1`` Service (gitops-engine ``getCorev1ServiceHealth``).

    Reads ``metadata.deletionTimestamp``, ``spec.type`` and ``status.loadBalancer.ingress``.
    None: Missing. Being deleted: Progressing (``pending_deletion``). A LoadBalancer without an
    ingress address yet: Progressing. Every other Service (ClusterIP, NodePort, ExternalName,
    headless) is Healthy once it exists.
    """
    if obj is None:
        return Health(MISSING, "Service does not exist")
    if (deleting := pending_deletion(obj, "Service")) is not None:
        return deleting
    if (obj.get("spec") or {}).get("type") == "LoadBalancer":
        if not ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress"):
            return Health(PROGRESSING, "waiting for the load balancer to get an address")
    return Health(HEALTHY)


def worst(children: dict[str, Health]) -> Health:
    """The Application's health from its children's: ``{"Deployment/web": Health, ...}`` ->
    the worst by ``ORDER`` (the first named, in sorted order, on a tie), its message prefixed
    with the child's name. No children, or all Healthy: Healthy, "all children healthy"."""
    if not children:
        return Health(HEALTHY, "no children")
    name, found = max(sorted(children.items()), key=lambda item: ORDER.index(item[1].status))
    if found.status == HEALTHY:
        return Health(HEALTHY, "all children healthy")
    return Health(found.status, f"{name}: {found.message}")


def application(deployment_obj: dict | None, service_obj: dict | None, taken: frozenset[str] = frozenset()) -> Health:
    """Health of an Application from its live Deployment and Service (None when absent): the
    worst of ``deployment`` and ``service``. ``taken``: the kinds ("Deployment", "Service")
    whose name another object holds, so the agent's child is Missing though an object of that
    name exists (the ``AlreadyExists`` failure says whose)."""
    children = {"Deployment": deployment(deployment_obj), "Service": service(service_obj)}
    for kind in taken & children.keys():
        children[kind] = Health(MISSING, f"another {kind} of this name exists and is not the agent's, so the "
                                         "agent's is not created")
    return worst(children)
