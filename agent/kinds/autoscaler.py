"""The HorizontalPodAutoscaler child: ``spec.autoscaling`` as an ``autoscaling/v2`` autoscaler of the
Application's Deployment. Pure.

With it, the Deployment is rendered without ``spec.replicas`` and the agent lets go of the field
(``deployment.KIND.released``): the autoscaler's changes are not drift. Health by gitops-engine's
rule (``pkg/health/health_hpa.go``, ``getAutoScalingV2HPAHealth``): the conditions in order, the
first that is degraded (``AbleToScale`` with reason ``FailedGetScale`` or ``FailedUpdateScale``,
``ScalingActive`` with ``FailedGetResourceMetric`` or ``InvalidSelector``) makes it Degraded, the
first ``AbleToScale`` or ``ScalingLimited`` that is True makes it Healthy, each with the
condition's message; none of these: Progressing ("waiting to autoscale").
"""

from __future__ import annotations

from agent.api.objects import Obj
from agent.kinds.health import Health, Status, pending_deletion
from agent.kinds.kind import ChildKind
from agent.kinds.render import child_metadata

DEGRADED_CONDITIONS = frozenset({("AbleToScale", "FailedGetScale"), ("AbleToScale", "FailedUpdateScale"),
                                 ("ScalingActive", "FailedGetResourceMetric"), ("ScalingActive", "InvalidSelector")})
"""(type, reason) of the conditions gitops-engine counts as Degraded."""
HEALTHY_TYPES = frozenset({"AbleToScale", "ScalingLimited"})
"""Condition types whose status True gitops-engine counts as Healthy."""
TARGETS = (("targetCPUUtilizationPercentage", "cpu"), ("targetMemoryUtilizationPercentage", "memory"))


def wanted(spec: Obj) -> bool:
    return spec.get("autoscaling") is not None


def render(name: str, namespace: str, uid: str, spec: Obj) -> Obj | None:
    """The desired ``autoscaling/v2`` HorizontalPodAutoscaler of the Deployment ``name``:
    ``minReplicas`` (when given), ``maxReplicas`` and one Resource metric of average
    utilization per target given (CPU first). None without ``spec.autoscaling``."""
    scaling = spec.get("autoscaling")
    if scaling is None:
        return None
    out: Obj = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}}
    if "minReplicas" in scaling:
        out["minReplicas"] = scaling["minReplicas"]
    out["maxReplicas"] = scaling["maxReplicas"]
    out["metrics"] = [{"type": "Resource", "resource": {"name": resource, "target": {
        "type": "Utilization", "averageUtilization": scaling[field]}}} for field, resource in TARGETS if field in scaling]
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": child_metadata(name, namespace, uid), "spec": out}


def health(obj: Obj | None) -> Health:
    """Health of an ``autoscaling/v2`` HorizontalPodAutoscaler (see the module docstring);
    None: Missing; being deleted: Progressing."""
    if obj is None:
        return Health(Status.MISSING, "HorizontalPodAutoscaler does not exist")
    if (deleting := pending_deletion(obj, "HorizontalPodAutoscaler")) is not None:
        return deleting
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if (condition.get("type"), condition.get("reason")) in DEGRADED_CONDITIONS:
            return Health(Status.DEGRADED, condition.get("message", ""))
        if condition.get("type") in HEALTHY_TYPES and condition.get("status") == "True":
            return Health(Status.HEALTHY, condition.get("message", ""))
    return Health(Status.PROGRESSING, "waiting to autoscale")


def news(obj: Obj) -> object:
    """What of a watched autoscaler a pass reports: its health."""
    return health(obj).as_status()


KIND = ChildKind(group="autoscaling", version="v2", kind="HorizontalPodAutoscaler",
                 plural="horizontalpodautoscalers", render=render, health=health,
                 status_field="horizontalPodAutoscaler", news=news, wanted=wanted,
                 authoritative=("spec.metrics", "spec.scaleTargetRef"),
                 status_schema={"horizontalPodAutoscaler": {
                     "type": "string",
                     "description": "Name of the child HorizontalPodAutoscaler; absent without spec.autoscaling."}})
