"""A task of an Application (``spec.tasks.<name>``) as a ``batch/v1`` Job: its render, its name
and digest, its health, and its ``status.tasks[]`` entry. Pure.

A task runs one command to completion in the Application's pod settings (``podspec``): the
task's image (default ``spec.image``), its own ``command`` and ``args``, its ``env`` over
``spec.env``, its ``resources`` (default ``spec.resources``), and the Application's ``envFrom``,
files, ``serviceAccountName``, ``imagePullSecrets``, ``podLabels``, ``podAnnotations``,
``security``, ``placement``, ``terminationGracePeriodSeconds`` and ``volumes``. Its
Job is named after a digest of exactly what the pod runs (``task_digest``), so a change of
anything else (replicas, the Service, the Ingress, the rollout) names the same Job and runs
nothing again, and a change of what it runs names a new one. A Job's pod template is immutable:
the pass creates each Job once and never re-applies it.

A child kind with several objects per Application (``ChildKind.many``): ``render`` answers the Job
of every task at its current digest, but the pass creates only those the task gate lets run
(``engine.taskgate``) and keeps the last ``KEEP`` of each task. ``names`` answers none: a task's
health is not its Job's (a Job deleted after it succeeded is no fault), it is the gate's
(``status.tasks[]``, the ``TaskRunning`` and ``TaskFailed`` reasons). Health follows gitops-engine's
``getBatchv1JobHealth`` (``pkg/health/health_job.go``), with one correction named in ``health``.
"""

from __future__ import annotations

import hashlib
import json

from agent.api.labels import TASK_DIGEST, TASK_LABEL
from agent.api.objects import Obj
from agent.api.schema import TASK_PHASES, TASK_RETRIES, TASK_TIMEOUT, TASK_WHEN
from agent.kinds import podspec
from agent.kinds.health import Health, Status, pending_deletion
from agent.kinds.kind import ChildKind
from agent.kinds.render import child_metadata, ownership_labels, selector_labels

BEFORE_ROLLOUT, AFTER_ROLLOUT = TASK_WHEN
PENDING, RUNNING, SUCCEEDED, FAILED = "Pending", "Running", "Succeeded", "Failed"
"""The phases of a run (``phase``), as ``status.tasks[].phase`` writes them."""
DIGEST_CHARS = 16
"""Hex digits of ``task_digest`` (the ``TASK_DIGEST`` label's value)."""
NAME_DIGEST_CHARS = 8
"""Hex digits of the digest at the end of a Job's name (``job_name``)."""
MAX_NAME = 63
"""The longest Job name: the Job controller copies it into its pods' ``job-name`` label, a label
value of at most 63 characters (``ValidateJob``: "must be no more than 63 characters")."""
KEEP = 3
"""Jobs kept per task: the current digest's and the newest others (by creation time); older ones
and a removed task's are pruned."""
POD_FIELDS = ("envFrom", "files", "serviceAccountName", "imagePullSecrets", "podAnnotations", "security",
              "placement", "terminationGracePeriodSeconds", "volumes")
"""The Application's pod settings a task's pod takes as they are (of ``placement``, all but
``spreadAcross``: ``podspec.spread`` renders none for a pod the Application's selector does not
select)."""


def tasks(spec: Obj, when: str | None = None) -> tuple[str, ...]:
    """The names of ``spec.tasks`` in the order they run: the BeforeRollout ones (``when``
    omitted counts as BeforeRollout), then the AfterRollout ones, each group by name; with
    ``when``, only that group. Empty without ``spec.tasks``."""
    found = spec.get("tasks") or {}
    groups = [w for w in TASK_WHEN if when is None or w == when]
    return tuple(name for w in groups for name in sorted(found) if found[name].get("when", BEFORE_ROLLOUT) == w)


def task_spec(spec: Obj, task_name: str) -> Obj:
    """The spec the pod of the task ``task_name`` of ``spec`` is rendered from (``podspec``):
    ``POD_FIELDS`` of ``spec``, the task's ``image`` (default ``spec.image``), the task's own
    ``command`` and ``args`` (never the Application's: those start the server), ``env``:
    ``spec.env`` with the task's ``env`` over it, ``resources``: the task's (default
    ``spec.resources``). No port, no probes. Raises KeyError when there is no such task."""
    task = spec["tasks"][task_name]
    out: Obj = {"image": task.get("image", spec["image"])}
    for field in ("command", "args"):
        if field in task:
            out[field] = task[field]
    env = {**(spec.get("env") or {}), **(task.get("env") or {})}
    if env:
        out["env"] = env
    resources = task["resources"] if "resources" in task else spec.get("resources")
    if resources:
        out["resources"] = resources
    out.update({field: spec[field] for field in POD_FIELDS if field in spec})
    return out


def pod_labels(app_name: str, spec: Obj, task_name: str) -> dict[str, str]:
    """The labels of a task's pod: the Application's ``app.kubernetes.io/name`` and
    ``managed-by`` labels, ``spec.podLabels``, and ``TASK_LABEL`` naming the task; never a key
    the Service and the Deployment select on (``render.selector_labels``), whatever
    ``podLabels`` says, so the Service never sends traffic to a task and no ReplicaSet counts it."""
    selected = selector_labels(app_name)
    labels = {**ownership_labels(app_name), **(spec.get("podLabels") or {}), TASK_LABEL: task_name}
    return {key: value for key, value in labels.items() if key not in selected}


def job_spec(app_name: str, spec: Obj, task_name: str) -> Obj:
    """The ``spec`` of the task's Job: ``backoffLimit`` (the task's ``retries``, default 2),
    ``activeDeadlineSeconds`` (its ``timeoutSeconds``, default 600) and the pod ``template``
    (``podspec.template`` of ``task_spec``'s one container, named like the task, with
    ``pod_labels`` and ``restartPolicy: Never``: a failed pod is a retry of the Job's)."""
    task, pod = spec["tasks"][task_name], task_spec(spec, task_name)
    template = podspec.template(app_name, pod, podspec.container(task_name, pod, None),
                                pod_labels(app_name, spec, task_name))
    template["spec"]["restartPolicy"] = "Never"
    return {"backoffLimit": task.get("retries", TASK_RETRIES[2]),
            "activeDeadlineSeconds": task.get("timeoutSeconds", TASK_TIMEOUT[2]), "template": template}


def task_digest(app_name: str, spec: Obj, task_name: str) -> str:
    """``DIGEST_CHARS`` hex digits of the SHA-256 of ``job_spec`` as canonical JSON (sorted keys):
    exactly what the task's pod runs (image, command, args, env, envFrom, resources, the files
    and their contents' digest, serviceAccountName, imagePullSecrets, podLabels,
    podAnnotations, security, placement, terminationGracePeriodSeconds, volumes) and its retries
    and timeout. Nothing else of ``spec`` (replicas, port,
    probes, ingress, rollout, autoscaling, other tasks, ``when``) changes it."""
    text = json.dumps(job_spec(app_name, spec, task_name), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:DIGEST_CHARS]


def job_name(app_name: str, task_name: str, digest: str) -> str:
    """``<app>-<task>-<the first 8 hex digits of digest>``, e.g. ``shop-migrate-3f2a9c1e``; may
    exceed ``MAX_NAME`` (``validate`` refuses such names: ``name_overflow``)."""
    return f"{app_name}-{task_name}-{digest[:NAME_DIGEST_CHARS]}"


def name_overflow(app_name: str, task_name: str) -> int:
    """How many characters the Job names of ``task_name`` of the Application ``app_name`` have
    beyond ``MAX_NAME`` (0: none)."""
    return max(0, len(app_name) + len(task_name) + 2 + NAME_DIGEST_CHARS - MAX_NAME)


def render_task(app_name: str, namespace: str, uid: str, spec: Obj, task_name: str) -> Obj:
    """The ``batch/v1`` Job running the task ``task_name`` of the Application ``namespace/app_name``
    with ``uid``: named ``job_name`` of ``task_digest``; metadata as every child's
    (``render.child_metadata``: ownership labels, a controller ownerReference to the
    Application) with ``TASK_LABEL`` and ``TASK_DIGEST`` (the whole digest); spec ``job_spec``.
    Raises KeyError when ``spec`` has no such task."""
    digest = task_digest(app_name, spec, task_name)
    meta = child_metadata(app_name, namespace, uid)
    meta["name"] = job_name(app_name, task_name, digest)
    meta["labels"] = {**meta["labels"], TASK_LABEL: task_name, TASK_DIGEST: digest}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": job_spec(app_name, spec, task_name)}


def _condition(obj: Obj, kind: str) -> Obj | None:
    """The condition of type ``kind`` with status ``"True"`` of the Job ``obj``, or None."""
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind and condition.get("status") == "True":
            found: Obj = condition
            return found
    return None


def health(obj: Obj | None) -> Health:
    """Health of a ``batch/v1`` Job (gitops-engine ``getBatchv1JobHealth``). Reads
    ``metadata.name``, ``metadata.deletionTimestamp`` and ``status`` (``conditions``, ``failed``).
    First rule that matches:

    1. None: Missing.
    2. ``metadata.deletionTimestamp``: Progressing (``pending_deletion``).
    3. condition ``Failed`` True: Degraded, with its reason and message (``BackoffLimitExceeded``,
       ``DeadlineExceeded``, ...).
    4. condition ``Suspended`` True: Suspended.
    5. condition ``Complete`` True: Healthy, with its message.
    6. else Progressing: a running Job is never current.

    The correction: a condition counts only when its status is ``"True"``. gitops-engine counts
    any ``Suspended`` condition as finished, so a resumed Job (which keeps ``Suspended`` with
    status ``"False"``) reads Healthy while its pod still runs; here it is Progressing."""
    if obj is None:
        return Health(Status.MISSING, "Job does not exist")
    if (deleting := pending_deletion(obj, "Job")) is not None:
        return deleting
    name = (obj.get("metadata") or {}).get("name", "")
    if (failed := _condition(obj, "Failed")) is not None:
        return Health(Status.DEGRADED, f"Job {name} failed: {failed.get('reason', '')}: "
                                       f"{failed.get('message', '')}".rstrip(": "))
    if _condition(obj, "Suspended") is not None:
        return Health(Status.SUSPENDED, f"Job {name} is suspended")
    if (complete := _condition(obj, "Complete")) is not None:
        return Health(Status.HEALTHY, complete.get("message", ""))
    retried = (obj.get("status") or {}).get("failed", 0)
    return Health(Status.PROGRESSING, f"waiting for Job {name} to complete" +
                  (f" ({retried} failed pod{'s' if retried != 1 else ''} so far)" if retried else ""))


def phase(obj: Obj | None) -> str:
    """The phase of a task's run from its Job (None: not created, or gone): ``Succeeded`` when
    it is Complete, ``Failed`` when it Failed (``health``'s conditions); ``Running`` once a pod
    of it ran (``status.ready``, ``failed`` or ``succeeded`` above 0; on an API server too old
    to count ready pods, ``status.active`` above 0); else ``Pending`` (no Job, a Job whose pod
    waits to be scheduled or for its image, or a suspended Job)."""
    if obj is None:
        return PENDING
    if _condition(obj, "Complete") is not None:
        return SUCCEEDED
    if _condition(obj, "Failed") is not None:
        return FAILED
    status = obj.get("status") or {}
    if _condition(obj, "Suspended") is None and (
            any(status.get(count, 0) > 0 for count in ("ready", "failed", "succeeded"))
            or ("ready" not in status and status.get("active", 0) > 0)):
        return RUNNING
    return PENDING


def task_status(task_name: str, digest: str, name: str, obj: Obj | None, commit: str) -> Obj:
    """One ``status.tasks[]`` entry: the task ``task_name`` whose run of ``digest`` is the Job
    ``name`` (live ``obj``, None when not created or gone), started for ``commit``: ``name``,
    ``digest``, ``job``, ``phase`` (``phase``), ``commit``, then where known ``startTime`` (the
    Job's), ``completionTime`` (the Job's when it succeeded; the ``Failed`` condition's
    ``lastTransitionTime`` when it failed) and ``message`` (``health``'s, unless the run
    succeeded; for a Job not there, that it is not created)."""
    run = phase(obj)
    out: Obj = {"name": task_name, "digest": digest, "job": name, "phase": run, "commit": commit}
    status = (obj or {}).get("status") or {}
    if "startTime" in status:
        out["startTime"] = status["startTime"]
    if run == SUCCEEDED and "completionTime" in status:
        out["completionTime"] = status["completionTime"]
    failed = _condition(obj, "Failed") if obj is not None else None
    if failed is not None and "lastTransitionTime" in failed:
        out["completionTime"] = failed["lastTransitionTime"]
    if obj is None:
        out["message"] = f"Job {name} is not created yet"
    elif run != SUCCEEDED:
        out["message"] = health(obj).message
    return out


def render(app_name: str, namespace: str, uid: str, spec: Obj) -> list[Obj]:
    """The Job of every task of ``spec`` at its current digest (``render_task``), in the order the
    tasks run (``tasks``); empty without tasks. Which of them a pass creates is the gate's."""
    return [render_task(app_name, namespace, uid, spec, name) for name in tasks(spec)]


def wanted(spec: Obj) -> bool:
    """True when ``spec`` has a task."""
    return bool(spec.get("tasks"))


def no_names(app_name: str, spec: Obj) -> tuple[str, ...]:
    """None: no Job counts for the Application's health (see the module docstring)."""
    return ()


def news(obj: Obj) -> object:
    """What of a watched Job a pass acts on: its conditions' types and statuses and its pod counts
    (a Job that completed or failed opens or holds its Application's gate)."""
    status = obj.get("status") or {}
    return (sorted((c.get("type", ""), c.get("status", "")) for c in status.get("conditions") or []),
            status.get("active", 0), status.get("ready"), status.get("succeeded", 0), status.get("failed", 0))


_TIME = {"type": "string", "format": "date-time"}
STATUS_SCHEMA: Obj = {"tasks": {
    "description": "The last run of each task of spec.tasks, in the order they run (BeforeRollout ones, then "
                   "AfterRollout ones, each by name): the digest of what it ran, its Job and how it went. A "
                   "Succeeded entry of the current digest means the task is done for this content, even when its "
                   "Job is gone.",
    "type": "array",
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["name"],
    "items": {"type": "object", "required": ["name", "digest", "phase"], "properties": {
        "name": {"type": "string", "description": "The task's name (a key of spec.tasks)."},
        "digest": {"type": "string", "description": "Digest of what the run runs (its pod template, retries and "
                                                    "timeout); the Job's name ends in its first 8 characters."},
        "job": {"type": "string", "description": "Name of the Job of this run."},
        "phase": {"type": "string", "enum": list(TASK_PHASES),
                  "description": "Pending (the Job is created, no pod runs yet), Running, Succeeded or Failed."},
        "commit": {"type": "string", "description": "Full SHA of the commit the run was started for."},
        "startTime": {**_TIME, "description": "When the Job started (its status.startTime)."},
        "completionTime": {**_TIME, "description": "When the run succeeded or failed."},
        "message": {"type": "string", "description": "Why it failed, or what it waits for."}}}}}


KIND = ChildKind(group="batch", version="v1", kind="Job", plural="jobs", render=render, health=health,
                 status_field="tasks", news=news, wanted=wanted, many=True, names=no_names,
                 status_schema=STATUS_SCHEMA)
