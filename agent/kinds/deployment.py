"""The Deployment child: one container running the Application's image. Pure.

Rendered as the original operator's template: one container named like the Application,
``replicas`` and a ``containerPort`` (none for a worker, an Application without ``port``), plus
what the optional fields of the spec ask for (``render``); health by gitops-engine's Deployment
rule.
"""

from __future__ import annotations

import datetime

from agent.api.objects import Obj
from agent.common import rfc3339
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


def selected(live: Obj | None, name: str) -> dict[str, str]:
    """The pod labels the live Deployment ``live`` of the Application ``name`` selects: its
    ``spec.selector.matchLabels`` (a kept selector, ``kinds.selector``), else the agent's
    (``render.selector_labels``)."""
    found = (((live or {}).get("spec") or {}).get("selector") or {}).get("matchLabels")
    return dict(found) if isinstance(found, dict) and found else selector_labels(name)


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
    5. condition ``RolloutFailing`` True (``FAILING``: only ``with_pods`` adds it, never the API):
       Degraded, ``REASON: MESSAGE`` (the reason first: ``ImagePullBackOff: Back-off pulling
       image "x"``); the rollout cannot succeed by waiting.
    5b. condition ``Progressing`` is False with reason ``ProgressDeadlineExceeded``: Degraded.
    6. ``updatedReplicas < spec.replicas``: Progressing (new pods still to be made).
    7. ``status.replicas > updatedReplicas``: Progressing (old pods still terminating).
    8. ``availableReplicas < spec.replicas``: Progressing (updated pods not yet available).
    9. else Healthy.

    Rules 5b to 8 name why pods are missing when the cluster says so (ours; gitops-engine and
    kubectl's rollout status do not): ``; REASON: MESSAGE (Degraded at TIME if it lasts)`` when
    ``RolloutFailing`` is False (a failure within its grace, ``with_pods``), else
    ``; FailedCreate: MESSAGE`` when condition
    ``ReplicaFailure`` is True (the ReplicaSet controller could not create a pod: PodSecurity,
    a ResourceQuota, a missing ServiceAccount; the deployment controller copies the condition
    from the ReplicaSet), else ``; FailedScheduling: MESSAGE`` when a condition ``PodScheduled``
    is False (never the API's own on a Deployment: ``with_pods`` adds the first unschedulable
    pod's). Such a Deployment stays Progressing (a quota freed, a ServiceAccount created, a node
    added lets it go on; the progress deadline makes it Degraded, rule 5, with the reason too).
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
    why = blocked(status)
    failing = _condition(status, FAILING)
    if failing.get("status") == "True":
        return Health(Status.DEGRADED, f"{failing.get('reason', '')}: {failing.get('message', '')}")
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Progressing" and condition.get("status") == "False" \
                and condition.get("reason") == "ProgressDeadlineExceeded":
            return Health(Status.DEGRADED, f"Deployment {name} exceeded its progress deadline: "
                                           f"{condition.get('message', '')}".rstrip(": ") + blocked(status, False))
    want = spec.get("replicas", 1)
    updated, total = status.get("updatedReplicas", 0), status.get("replicas", 0)
    available = status.get("availableReplicas", 0)
    if updated < want:
        return Health(Status.PROGRESSING, f"waiting for rollout to finish: {updated} of {want} new replicas updated{why}")
    if total > updated:
        return Health(Status.PROGRESSING, f"waiting for rollout to finish: {total - updated} old replicas "
                                          f"pending termination{why}")
    if available < want:
        return Health(Status.PROGRESSING, f"waiting for rollout to finish: {available} of {want} replicas available"
                                          f"{why}")
    return Health(Status.HEALTHY, f"{available}/{want} replicas available")


REPLICA_FAILURE = "ReplicaFailure"
"""The condition the ReplicaSet controller sets when it cannot create or delete a pod (reason
``FailedCreate`` or ``FailedDelete``), and the deployment controller copies to the Deployment."""
POD_SCHEDULED = "PodScheduled"
"""A pod's condition the scheduler sets False (reason ``Unschedulable``) when no node fits it."""
FAILED_SCHEDULING = "FailedScheduling"
"""What ``health`` calls a pod no node fits: the reason of the scheduler's Event about it."""


def blocked(status: Obj, grace: bool = True) -> str:
    """``; REASON: MESSAGE`` naming why a Deployment's pods are not made (condition
    ``ReplicaFailure`` True: its reason, ``FailedCreate``; a ``RolloutFailing`` False that
    ``with_pods`` added, first: the failure and when its grace ends) or not placed (a ``PodScheduled``
    False that ``with_pods`` added: ``FailedScheduling``), or ``""``. The message as one line;
    ``grace`` False: without when a failure's grace ends (the Deployment is Degraded already)."""
    found = {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, dict)}
    failing = found.get(FAILING) or {}
    if failing.get("status") == "False":
        return f"; {failing.get('reason', '')}: {failing.get('message', '')}" + \
            (f" (Degraded at {failing.get('failAt', '')} if it lasts)" if grace else "")
    failure = found.get(REPLICA_FAILURE) or {}
    if failure.get("status") == "True":
        return f"; {failure.get('reason') or 'FailedCreate'}: {' '.join(str(failure.get('message', '')).split())}"
    unscheduled = found.get(POD_SCHEDULED) or {}
    if unscheduled.get("status") == "False":
        return f"; {FAILED_SCHEDULING}: {' '.join(str(unscheduled.get('message', '')).split())}"
    return ""


MAX_MESSAGE = 512
"""Characters of a pod's ``PodScheduled`` message, or of a failure's message, that ``with_pods`` keeps."""
FAILING = "RolloutFailing"
"""The condition ``with_pods`` adds (ours, never the API's): the rollout fails for a reason
waiting will not fix; status False within its grace, True after it (``health`` rule 5)."""
FAIL_AFTER_SECONDS = 120
"""``spec.rollout.failAfterSeconds`` when absent: the grace before such a failure is Degraded."""
HOPELESS = frozenset({"ImagePullBackOff", "ErrImagePull", "InvalidImageName", "CreateContainerConfigError",
                      "CreateContainerError"})
"""Container waiting reasons the kubelet keeps retrying but that waiting will not fix (a wrong
image, a missing Secret or ConfigMap key, a refused container config): a person must act."""
CRASH_LOOP = "CrashLoopBackOff"
CRASH_RESTARTS = 3
"""Restarts from which a container in ``CrashLoopBackOff`` counts as failing (a slow start may
crash once or twice while a dependency comes up; three crashes in a row rarely heal alone)."""
FAILED_CREATE = "FailedCreate"


def fail_after(spec: Obj | None) -> int:
    """Seconds of ``spec.rollout.failAfterSeconds`` of an Application's ``spec``, else
    ``FAIL_AFTER_SECONDS``."""
    value = ((spec or {}).get("rollout") or {}).get("failAfterSeconds")
    return value if isinstance(value, int) and not isinstance(value, bool) else FAIL_AFTER_SECONDS


def _condition(status: Obj, kind: str) -> Obj:
    found = [c for c in status.get("conditions") or [] if isinstance(c, dict) and c.get("type") == kind]
    return found[-1] if found else {}


def _rolling(obj: Obj | None) -> bool:
    """True when the Deployment ``obj`` exists, is not paused or being deleted, its controller
    has seen its spec, and its pods are not all updated and available (``health`` rules 6 to 8)."""
    if obj is None or (obj.get("metadata") or {}).get("deletionTimestamp"):
        return False
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if spec.get("paused") or (obj.get("metadata") or {}).get("generation", 0) > status.get("observedGeneration", 0):
        return False
    want = spec.get("replicas", 1)
    updated, total = status.get("updatedReplicas", 0), status.get("replicas", 0)
    return bool(updated < want or total > updated or status.get("availableReplicas", 0) < want)


def waits_for_pods(obj: Obj | None) -> bool:
    """True when the Deployment ``obj`` is in a rollout (``health`` rules 6 to 8: pods to update
    or not available) and nothing on it says why (no ``ReplicaFailure``): only then can its pods
    tell more (a pod no node fits, a container that cannot start). What a pass reads the pods of
    (``agent.engine.statuses``); an available Deployment reads none."""
    return _rolling(obj) and not blocked((obj or {}).get("status") or {})


def failed_create(obj: Obj | None) -> bool:
    """True when the Deployment ``obj`` is in a rollout and says its pods could not be made
    (``ReplicaFailure`` True, reason ``FailedCreate``): ``with_pods`` judges it with no pods."""
    failure = _condition((obj or {}).get("status") or {}, REPLICA_FAILURE)
    return _rolling(obj) and failure.get("status") == "True" and failure.get("reason", FAILED_CREATE) == FAILED_CREATE


def _one_line(text: object) -> str:
    return " ".join(str(text or "").split())[:MAX_MESSAGE]


def pod_failure(pod: Obj) -> tuple[str, str] | None:
    """``(reason, message)`` of the first container of ``pod`` (init containers first, then by
    order) waiting for a reason waiting will not fix (``HOPELESS``, or ``CrashLoopBackOff`` with
    ``restartCount`` >= ``CRASH_RESTARTS``); None for a ready pod, one being deleted, or none
    such. ``message``: ``container NAME: MESSAGE``, one line, at most ``MAX_MESSAGE``."""
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    if meta.get("deletionTimestamp") or _condition(status, "Ready").get("status") == "True":
        return None
    for container in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]:
        if not isinstance(container, dict):
            continue
        waiting = (container.get("state") or {}).get("waiting") or {}
        reason = waiting.get("reason")
        if reason in HOPELESS or (reason == CRASH_LOOP and (container.get("restartCount") or 0) >= CRASH_RESTARTS):
            return str(reason), _one_line(f"container {container.get('name', '')}: {waiting.get('message') or reason}")
    return None


def _failure(obj: Obj, pods: list[Obj]) -> tuple[str, str, datetime.datetime] | None:
    """``(reason, message, since)``: the ``ReplicaFailure`` FailedCreate of ``obj`` (since its
    ``lastTransitionTime``), else the first failing pod by name (``pod_failure``; since its
    ``creationTimestamp``); None when neither, or its timestamp does not parse."""
    failure = _condition(obj.get("status") or {}, REPLICA_FAILURE)
    if failed_create(obj):
        since = rfc3339.parse(failure.get("lastTransitionTime"))
        return (FAILED_CREATE, _one_line(failure.get("message")), since) if since is not None else None
    for pod in sorted(pods, key=lambda p: (p.get("metadata") or {}).get("name", "")):
        found = pod_failure(pod)
        since = rfc3339.parse((pod.get("metadata") or {}).get("creationTimestamp"))
        if found is not None and since is not None:
            return (*found, since)
    return None


def _stamp(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def with_pods(obj: Obj, pods: list[Obj], now: datetime.datetime | None = None,
              seconds: int = FAIL_AFTER_SECONDS) -> Obj:
    """``obj`` (a Deployment) as ``health`` reads it with its ``pods`` known (those matching its
    selector: any of its ReplicaSets', the newest not being known from the Deployment alone; a
    ready pod never counts as failing) at ``now`` (an aware datetime; None: no failure judged).
    A copy whose ``status.conditions`` ends with, when found:

    - ``RolloutFailing`` (``FAILING``): the rollout fails for a reason waiting will not fix
      (``_failure``: FailedCreate, or a pod's ``pod_failure``); status True once it has lasted
      ``seconds`` (``spec.rollout.failAfterSeconds``) from its ``since``, else False; ``failAt``:
      when the grace ends (RFC 3339);
    - else ``PodScheduled`` False of the first pod by name no node fits (type, status, reason and
      its message cut to ``MAX_MESSAGE``).

    Else ``obj`` itself. ``obj`` is not changed. Pure: the clock is ``now``."""
    added: list[Obj] = []
    failure = _failure(obj, pods) if now is not None else None
    if failure is not None and now is not None:
        reason, message, since = failure
        due = since + datetime.timedelta(seconds=seconds)
        added.append({"type": FAILING, "status": "True" if now >= due else "False", "reason": reason,
                      "message": message, "lastTransitionTime": _stamp(since), "failAt": _stamp(due)})
    for pod in sorted(pods, key=lambda p: (p.get("metadata") or {}).get("name", "")):
        if added:
            break
        for condition in (pod.get("status") or {}).get("conditions") or []:
            if isinstance(condition, dict) and condition.get("type") == POD_SCHEDULED \
                    and condition.get("status") == "False":
                added.append({"type": POD_SCHEDULED, "status": "False", "reason": condition.get("reason", ""),
                              "message": str(condition.get("message", ""))[:MAX_MESSAGE]})
                break
    if not added:
        return obj
    status = dict(obj.get("status") or {})
    status["conditions"] = list(status.get("conditions") or []) + added
    return {**obj, "status": status}


def recheck_at(judged: Obj, now: datetime.datetime, later: float) -> datetime.datetime | None:
    """When a pass should look at the Deployment ``judged`` (``with_pods``' answer) again though
    nothing of it changes (its pods are not watched): at the end of a failure's grace
    (``RolloutFailing`` False), or ``later`` seconds from ``now`` while it is in a rollout with
    nothing named yet (its pods may start failing); None once its health is decided (Degraded)
    or its rollout is over."""
    if health(judged).status == Status.DEGRADED:
        return None
    failing = _condition(judged.get("status") or {}, FAILING)
    if failing.get("status") == "False":
        return rfc3339.parse(failing.get("failAt"))
    return now + datetime.timedelta(seconds=later) if _rolling(judged) else None


def _read_whole(condition: Obj) -> bool:
    """True for the conditions whose message ``health`` reports: Progressing False with
    ProgressDeadlineExceeded (Degraded), ReplicaFailure True (why pods are not created)."""
    return (condition.get("type") == "Progressing" and condition.get("status") == "False"
            and condition.get("reason") == "ProgressDeadlineExceeded") or \
        (condition.get("type") == REPLICA_FAILURE and condition.get("status") == "True")


def trim(obj: Obj) -> Obj:
    """``obj`` (a listed or applied object, a dict as the API serves it) (a Deployment) with its
    ``status.conditions`` cut down to what ``health`` reads: each condition's ``type``,
    ``status`` and ``reason``, and the whole conditions it reports (Progressing False,
    ProgressDeadlineExceeded, and ReplicaFailure True, with their messages). Every other field is left as it is. Modifies
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
