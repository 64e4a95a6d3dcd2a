"""The PodDisruptionBudget child: ``spec.disruptionBudget`` as a ``policy/v1`` PodDisruptionBudget
on the Application's pods. Pure.

A disruption budget limits voluntary evictions (a node drain, the cluster autoscaler taking a
node away): the API server refuses an eviction (HTTP 429) that would leave fewer healthy pods
than ``minAvailable``, or more unavailable than ``maxUnavailable``. The budget selects the pods
the Deployment and the Service select (``render.selector_labels``), so a task's or a schedule's
pods never count. ``unhealthyPodEvictionPolicy: AlwaysAllow`` lets a pod that is not Ready (a
crash loop) be evicted whatever the budget says: a broken pod never blocks a drain (Kubernetes
1.27+, KEP-3017).

Health: gitops-engine has no rule for the kind. Ours: Progressing until the disruption controller
has observed the budget's spec (``status.observedGeneration`` at least ``metadata.generation``),
then Healthy. A budget that allows 0 disruptions now (too few healthy pods) is still Healthy:
it does what it was asked; ``explain`` warns (``agent/views/explainview.py``).
"""

from __future__ import annotations

from agent.api.objects import Obj
from agent.kinds.health import Health, Status, pending_deletion
from agent.kinds.kind import ChildKind
from agent.kinds.render import child_metadata, selector_labels

FIELDS = ("minAvailable", "maxUnavailable")
"""The two ways of saying a budget; an Application gives exactly one (``specrules``)."""


def wanted(spec: Obj) -> bool:
    return spec.get("disruptionBudget") is not None


def render(name: str, namespace: str, uid: str, spec: Obj) -> Obj | None:
    """The desired ``policy/v1`` PodDisruptionBudget of the Application ``namespace/name``:
    ``minAvailable`` or ``maxUnavailable`` as given (an integer or a percentage string such as
    ``"25%"``), the Application's selector and ``unhealthyPodEvictionPolicy: AlwaysAllow``. None
    without ``spec.disruptionBudget``."""
    budget = spec.get("disruptionBudget")
    if budget is None:
        return None
    out: Obj = {field: budget[field] for field in FIELDS if field in budget}
    out["selector"] = {"matchLabels": selector_labels(name)}
    out["unhealthyPodEvictionPolicy"] = "AlwaysAllow"
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": child_metadata(name, namespace, uid),
            "spec": out}


def health(obj: Obj | None) -> Health:
    """Health of a ``policy/v1`` PodDisruptionBudget (see the module docstring): None: Missing;
    being deleted: Progressing; ``status.observedGeneration`` absent or below
    ``metadata.generation``: Progressing; else Healthy, saying how many disruptions it allows."""
    if obj is None:
        return Health(Status.MISSING, "PodDisruptionBudget does not exist")
    if (deleting := pending_deletion(obj, "PodDisruptionBudget")) is not None:
        return deleting
    status = obj.get("status") or {}
    observed, generation = status.get("observedGeneration"), (obj.get("metadata") or {}).get("generation", 0)
    if not isinstance(observed, int) or (isinstance(generation, int) and observed < generation):
        return Health(Status.PROGRESSING, "waiting for the disruption controller to observe the budget")
    return Health(Status.HEALTHY, allowance(obj))


def allowance(obj: Obj) -> str:
    """How many evictions the live budget ``obj`` allows now, and why, from its status:
    ``"allows 1 disruption (2 healthy pods, 1 needed)"``."""
    status = obj.get("status") or {}
    allowed = status.get("disruptionsAllowed", 0)
    return (f"allows {allowed} disruption{'' if allowed == 1 else 's'} ({status.get('currentHealthy', 0)} healthy "
            f"pod{'' if status.get('currentHealthy', 0) == 1 else 's'}, {status.get('desiredHealthy', 0)} needed)")


def observed(obj: Obj | None) -> Obj:
    """What of the live budget the Application's status shows: ``disruptionsAllowed``, once the
    disruption controller has written it (else nothing)."""
    allowed = ((obj or {}).get("status") or {}).get("disruptionsAllowed")
    return {"disruptionsAllowed": allowed} if isinstance(allowed, int) and not isinstance(allowed, bool) else {}


def news(obj: Obj) -> object:
    """What of a watched budget a pass reports: its health and how many disruptions it allows."""
    return (health(obj).as_status(), observed(obj))


KIND = ChildKind(group="policy", version="v1", kind="PodDisruptionBudget", plural="poddisruptionbudgets",
                 render=render, health=health, status_field="disruptionBudget", observed=observed, news=news,
                 wanted=wanted, authoritative=("spec.selector",),
                 status_schema={
                     "disruptionBudget": {
                         "type": "string",
                         "description": "Name of the child PodDisruptionBudget; absent without spec.disruptionBudget."},
                     "disruptionsAllowed": {
                         "type": "integer",
                         "description": "How many of the Application's pods may be evicted now (the budget's "
                                        "status.disruptionsAllowed); absent without spec.disruptionBudget."}})
