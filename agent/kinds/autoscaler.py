"""The HorizontalPodAutoscaler child: ``spec.autoscaling`` as an ``autoscaling/v2`` autoscaler of the
Application's Deployment. Pure, but for the clock its health reads (``health``'s ``now``).

With it, the Deployment is rendered without ``spec.replicas`` and the agent lets go of the field
(``deployment.KIND.released``): the autoscaler's changes are not drift.

Health by Argo CD 3.5's rule (argo-cd PR 26274, "add missing HPA degraded states for metric
failures", in ``gitops-engine/pkg/health/health_hpa.go``): every condition is looked at for a
failure first, then for a sign of health. A failure is ``AbleToScale`` with reason
``FailedGetScale`` or ``FailedUpdateScale``, or ``ScalingActive`` with a reason of
``METRIC_FAILURES`` (the controller could not read a metric or compute replicas from it),
``InvalidSelector`` or ``InvalidMetricSourceType``: the first such is Degraded with its message,
whatever other condition says True (an autoscaler that cannot read its metrics does not
autoscale; before 3.5 the first deciding condition won, and ``AbleToScale=True`` listed first
hid the failure). Without one, the first ``AbleToScale`` or ``ScalingLimited`` that is True is
Healthy with its message; none: Progressing ("waiting to autoscale"). ``ScalingActive=False``
with ``ScalingDisabled`` (the Deployment at 0 replicas) is no failure.

The grace (ours, not upstream's): metrics lag new pods, so a metric failure is Progressing, not
Degraded, for ``GRACE`` seconds after the later of the autoscaler's ``creationTimestamp`` and the
failing condition's ``lastTransitionTime`` (it turns False when a rollout of the Deployment
brings pods without metrics yet). A failure of the scale target or the selector has no grace.
"""

from __future__ import annotations

import datetime

from agent.api.objects import Obj
from agent.common import rfc3339
from agent.kinds.health import Health, Status, pending_deletion
from agent.kinds.kind import ChildKind
from agent.kinds.render import child_metadata

METRIC_FAILURES = frozenset({"FailedGetResourceMetric", "FailedGetContainerResourceMetric", "FailedGetPodsMetric",
                             "FailedGetObjectMetric", "FailedGetExternalMetric", "FailedComputeMetricsReplicas"})
"""Reasons of ``ScalingActive=False`` for a metric the controller could not read or use (the
reasons of Kubernetes' ``pkg/controller/podautoscaler``): Degraded after ``GRACE``."""
DEGRADED_CONDITIONS = frozenset({("AbleToScale", "FailedGetScale"), ("AbleToScale", "FailedUpdateScale"),
                                 ("ScalingActive", "InvalidSelector"), ("ScalingActive", "InvalidMetricSourceType"),
                                 *(("ScalingActive", reason) for reason in METRIC_FAILURES)})
"""(type, reason) of the conditions Argo CD 3.5 counts as Degraded."""
GRACE = 120
"""Seconds a metric failure reads Progressing after the autoscaler is created or the failure began."""
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


def health(obj: Obj | None, now: datetime.datetime | None = None) -> Health:
    """Health of an ``autoscaling/v2`` HorizontalPodAutoscaler (see the module docstring) at
    ``now`` (an aware datetime; None: the clock); None: Missing; being deleted: Progressing."""
    if obj is None:
        return Health(Status.MISSING, "HorizontalPodAutoscaler does not exist")
    if (deleting := pending_deletion(obj, "HorizontalPodAutoscaler")) is not None:
        return deleting
    conditions = [c for c in (obj.get("status") or {}).get("conditions") or [] if isinstance(c, dict)]
    for condition in conditions:
        if (condition.get("type"), condition.get("reason")) in DEGRADED_CONDITIONS:
            return _failing(obj, condition, now or datetime.datetime.now(datetime.timezone.utc))
    for condition in conditions:
        if condition.get("type") in HEALTHY_TYPES and condition.get("status") == "True":
            return Health(Status.HEALTHY, condition.get("message", ""))
    return Health(Status.PROGRESSING, "waiting to autoscale")


def _failing(obj: Obj, condition: Obj, now: datetime.datetime) -> Health:
    """Degraded with the message of ``condition`` (a failing condition of ``obj``), or Progressing
    while a metric failure is within ``GRACE`` (a timestamp that does not parse counts as absent:
    no grace from it)."""
    message = condition.get("message", "")
    if condition.get("reason") in METRIC_FAILURES:
        stamps = [rfc3339.parse((obj.get("metadata") or {}).get("creationTimestamp")),
                  rfc3339.parse(condition.get("lastTransitionTime"))]
        since = max((s for s in stamps if s is not None), default=None)
        if since is not None and (now - since).total_seconds() < GRACE:
            return Health(Status.PROGRESSING, f"metrics not read yet ({condition['reason']}; Degraded if it lasts "
                                              f"{GRACE} s, since {_stamp(since)}): {message}")
    return Health(Status.DEGRADED, message)


def _stamp(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def news(obj: Obj) -> object:
    """What of a watched autoscaler a pass reports: its conditions' (type, status, reason, message),
    which decide its health (not the health itself, which the clock turns at the end of ``GRACE``:
    the watch's fingerprint stays a function of the object)."""
    return [[c.get(key) for key in ("type", "status", "reason", "message")]
            for c in (obj.get("status") or {}).get("conditions") or [] if isinstance(c, dict)]


KIND = ChildKind(group="autoscaling", version="v2", kind="HorizontalPodAutoscaler",
                 plural="horizontalpodautoscalers", render=render, health=health,
                 status_field="horizontalPodAutoscaler", news=news, wanted=wanted,
                 authoritative=("spec.metrics", "spec.scaleTargetRef"),
                 status_schema={"horizontalPodAutoscaler": {
                     "type": "string",
                     "description": "Name of the child HorizontalPodAutoscaler; absent without spec.autoscaling."}})
