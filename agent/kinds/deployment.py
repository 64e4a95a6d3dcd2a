"""The Deployment child: one container running the Application's image. Pure.

Rendered as the original operator's template: one container named like the Application,
``replicas`` and a ``containerPort`` (none for a worker, an Application without ``port``), plus
what the optional fields of the spec ask for (``render``); health by gitops-engine's Deployment
rule.
"""

from __future__ import annotations

from agent.api.objects import Obj
from agent.kinds import podspec
from agent.kinds.health import Health, Status, pending_deletion
from agent.kinds.kind import ChildKind
from agent.kinds.render import child_metadata, ownership_labels, selector_labels


POD_OWNED = tuple(f"spec.template.spec.{field}" for field in podspec.OWNED_POD_FIELDS)
"""The pod fields owned in full while rendered (``podspec.OWNED_POD_FIELDS``)."""


def render(name: str, namespace: str, uid: str, spec: Obj) -> Obj:
    """The desired ``apps/v1`` Deployment of the Application ``namespace/name`` with ``uid``;
    ``spec`` holds ``image`` (str), ``port`` (int, 1-65535; absent for a worker: the container
    has no unnamed port), and any of the optional fields of the schema (``ports``: named
    container ports after it, ``podspec.ports``). An Application with none
    of them renders exactly the original template: one container (name, image, the port),
    ``replicas``, the selector and the pod labels, in that order, so an agent that learnt new
    fields restarts no pod.

    ``replicas`` is left out when the spec has none or has ``autoscaling``: the agent then
    does not own it (``KIND.released``). The container takes, in this order, ``command``,
    ``args``, ``env`` (sorted by name), ``envFrom``, ``resources`` (each quantity as the API
    server stores it, ``quantity.stored``), the probes (the port as a number) and a read-only
    mount per file; the pod takes ``serviceAccountName``, ``imagePullSecrets``, a volume per
    file, ``podLabels`` after the agent's labels and ``podAnnotations`` with the files' digest
    (``labels.FILES_DIGEST``); the Deployment ``rollout``'s strategy and progress deadline."""
    port = spec.get("port")
    labels = {**ownership_labels(name), **(spec.get("podLabels") or {})}
    template = podspec.template(name, spec, podspec.container(name, spec, port), labels)
    out: Obj = {}
    if "replicas" in spec and spec.get("autoscaling") is None:
        out["replicas"] = spec["replicas"]
    out["selector"] = {"matchLabels": selector_labels(name)}
    out["template"] = template
    rollout = spec.get("rollout") or {}
    surge = {k: rollout[k] for k in ("maxSurge", "maxUnavailable") if k in rollout}
    if surge:
        out["strategy"] = {"type": "RollingUpdate", "rollingUpdate": surge}
    if "progressDeadlineSeconds" in rollout:
        out["progressDeadlineSeconds"] = rollout["progressDeadlineSeconds"]
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": child_metadata(name, namespace, uid),
            "spec": out}


def health(obj: Obj | None) -> Health:
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
        return Health(Status.MISSING, "Deployment does not exist")
    if (deleting := pending_deletion(obj, "Deployment")) is not None:
        return deleting
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    name = obj.get("metadata", {}).get("name", "")
    if spec.get("paused"):
        return Health(Status.SUSPENDED, f"Deployment {name} is paused")
    if obj.get("metadata", {}).get("generation", 0) > status.get("observedGeneration", 0):
        return Health(Status.PROGRESSING, "waiting for the deployment controller to observe the latest spec")
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Progressing" and condition.get("status") == "False" \
                and condition.get("reason") == "ProgressDeadlineExceeded":
            return Health(Status.DEGRADED, f"Deployment {name} exceeded its progress deadline: "
                                           f"{condition.get('message', '')}".rstrip(": "))
    want = spec.get("replicas", 1)
    updated, total = status.get("updatedReplicas", 0), status.get("replicas", 0)
    available = status.get("availableReplicas", 0)
    if updated < want:
        return Health(Status.PROGRESSING, f"waiting for rollout to finish: {updated} of {want} new replicas updated")
    if total > updated:
        return Health(Status.PROGRESSING, f"waiting for rollout to finish: {total - updated} old replicas "
                                          "pending termination")
    if available < want:
        return Health(Status.PROGRESSING, f"waiting for rollout to finish: {available} of {want} replicas available")
    return Health(Status.HEALTHY, f"{available}/{want} replicas available")


def _read_whole(condition: Obj) -> bool:
    """True for the one condition whose message ``health`` reports (Degraded)."""
    return (condition.get("type") == "Progressing" and condition.get("status") == "False"
            and condition.get("reason") == "ProgressDeadlineExceeded")


def trim(obj: Obj) -> Obj:
    """``obj`` (a listed or applied object, a dict as the API serves it) (a Deployment) with its
    ``status.conditions`` cut down to what ``health`` reads: each condition's ``type``,
    ``status`` and ``reason``, and the whole condition it reports (Progressing False,
    ProgressDeadlineExceeded, with its message). Every other field is left as it is. Modifies
    and returns ``obj``.

    Why: a pass holds every listed Deployment, and their conditions' messages (naming each
    one's ReplicaSet) and timestamps are what keeps equal statuses from being shared
    (``share``); cut, the statuses of Deployments in one state are one object. Nothing else a
    pass does reads a child's conditions (``status.compute`` reads the replicas,
    ``triggers.fingerprint`` the replicas and ``deployment``'s answer; ``diff`` drops status)."""
    status = obj.get("status")
    found = status.get("conditions") if isinstance(status, dict) else None
    if isinstance(status, dict) and isinstance(found, list):
        status["conditions"] = [c if not isinstance(c, dict) or _read_whole(c)
                                else {k: c[k] for k in ("type", "status", "reason") if k in c} for c in found]
    return obj



def observed(obj: Obj | None) -> Obj:
    """What of the live Deployment the Application's status shows: ``replicas`` and
    ``readyReplicas`` (0 when absent)."""
    status = (obj or {}).get("status") or {}
    return {"replicas": status.get("replicas", 0), "readyReplicas": status.get("readyReplicas", 0)}


def news(obj: Obj) -> object:
    """What of a watched Deployment's status a pass reports: replicas, ready replicas, health."""
    status = obj.get("status") or {}
    return (status.get("replicas", 0), status.get("readyReplicas", 0), health(obj).as_status())


KIND = ChildKind(group="apps", version="v1", kind="Deployment", plural="deployments", render=render,
                 health=health, status_field="deployment", trim=trim, observed=observed, news=news,
                 authoritative=("spec.replicas", "spec.selector", "spec.template.metadata.labels",
                                "spec.template.spec.containers", *POD_OWNED),
                 released=("spec.replicas",), whole_when_rendered=POD_OWNED,
                 status_schema={
                     "deployment": {"type": "string", "description": "Name of the child Deployment."},
                     "replicas": {"type": "integer", "description": "Replicas of the child Deployment, as observed."},
                     "readyReplicas": {"type": "integer",
                                       "description": "Ready replicas of the child Deployment, as observed."}})
