"""The CronJob children: one ``batch/v1`` CronJob per entry of ``spec.schedules``, named
``<application>-<schedule>``. Pure.

The first kind with several objects per Application (``ChildKind.many``). Each runs a command
of the Application on a schedule with the Application's pod settings (env, envFrom, files,
serviceAccountName, imagePullSecrets, podLabels, podAnnotations, security, placement but
spreadAcross, terminationGracePeriodSeconds, volumes: ``podspec``) and the schedule's
own image, command, args, env and resources, but never the labels the Application's Service
selects on (``render.selector_labels``): its pods carry the name and managed-by labels and the
schedule's (``labels.SCHEDULE_LABEL``). Its Jobs carry the Application's and the schedule's
labels, never ``managed-by``: they are the CronJob's, not the agent's children.

Health (gitops-engine has no CronJob rule that reads its Jobs): Missing when absent,
Progressing while being deleted, Suspended when ``spec.suspend``, else Healthy. A failed run
does not make the Application Degraded: last night's report must not fail a deploy. It is
told in ``status.schedules[].lastFailure`` (``observed``, from the Jobs the pass reads for it:
``ChildKind.related``).
"""

from __future__ import annotations

from collections.abc import Mapping

from agent.api.labels import APPLICATION_LABEL, AGENT_NAME, MANAGED_BY, NAME_LABEL, SCHEDULE_LABEL
from agent.api.objects import Obj
from agent.kinds import podspec
from agent.kinds.health import Health, Status, pending_deletion
from agent.kinds.kind import ChildKind
from agent.kinds.render import child_metadata

CONCURRENCY = "Forbid"
STARTING_DEADLINE = 300
RETRIES = 2
TIMEOUT = 600
KEEP_SUCCEEDED = 3
KEEP_FAILED = 1
"""The defaults of a schedule's ``concurrencyPolicy``, ``startingDeadlineSeconds`` (seconds),
``retries`` (the Job's ``backoffLimit``), ``timeoutSeconds`` (its ``activeDeadlineSeconds``) and
``keep`` (the CronJob's history limits: Kubernetes' own defaults, 3 and 1)."""
MAX_NAME = 52
"""The longest CronJob name: the CronJob controller appends 11 characters to name its Jobs,
and a Job's name is a DNS label of at most 63 (Kubernetes' CronJob validation)."""
MACROS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
          "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
"""The macros a schedule may be, and their 5 fields (as the CronJob controller reads them)."""
JOB_FIELDS = ("image", "command", "args", "env", "resources")
"""The container fields a schedule sets over the Application's (``env`` merged over it)."""


POD_OWNED = tuple(f"spec.jobTemplate.spec.template.spec.{field}" for field in podspec.OWNED_POD_FIELDS)
"""The pod fields owned in full while rendered (``podspec.OWNED_POD_FIELDS``)."""


def schedules(spec: Obj) -> dict[str, Obj]:
    """``spec.schedules`` (name -> schedule), sorted by name; empty without it."""
    found = spec.get("schedules") or {}
    return {name: found[name] for name in sorted(found)} if isinstance(found, dict) else {}


def wanted(spec: Obj) -> bool:
    """True when ``spec`` has a schedule."""
    return bool(schedules(spec))


def object_name(app: str, schedule: str) -> str:
    """The CronJob of the schedule ``schedule`` of the Application ``app``: ``<app>-<schedule>``."""
    return f"{app}-{schedule}"


def names(app: str, spec: Obj) -> tuple[str, ...]:
    """The CronJob names of the Application ``app`` with ``spec``, sorted by schedule name."""
    return tuple(object_name(app, schedule) for schedule in schedules(spec))


def job_spec(spec: Obj, schedule: Obj) -> Obj:
    """The Application's ``spec`` as its schedule ``schedule`` runs it: the schedule's
    ``image``, ``command``, ``args`` and ``resources`` where given (else the Application's; its
    command and args only together with its image), ``env`` the schedule's over the
    Application's, and no probes and no ``ports`` (its pods serve none)."""
    out = {k: v for k, v in spec.items() if k not in (*podspec.PROBES, "ports")}
    if "image" in schedule:
        out["image"] = schedule["image"]
    for field in ("command", "args"):
        if field in schedule:
            out[field] = schedule[field]
    if "resources" in schedule:
        out["resources"] = schedule["resources"]
    if schedule.get("env"):
        out["env"] = {**(spec.get("env") or {}), **schedule["env"]}
    return out


def _one(app: str, namespace: str, uid: str, spec: Obj, name: str, schedule: Obj) -> Obj:
    """The CronJob of the schedule ``name`` (see ``render``)."""
    run = job_spec(spec, schedule)
    labels = {NAME_LABEL: app, MANAGED_BY: AGENT_NAME, **(spec.get("podLabels") or {}), SCHEDULE_LABEL: name}
    template = podspec.template(app, run, podspec.container(name, run, None), labels)
    template["spec"]["restartPolicy"] = "Never"
    keep = schedule.get("keep") or {}
    out: Obj = {"schedule": schedule["schedule"]}
    if "timeZone" in schedule:
        out["timeZone"] = schedule["timeZone"]
    out.update({
        "concurrencyPolicy": schedule.get("concurrencyPolicy", CONCURRENCY),
        "startingDeadlineSeconds": schedule.get("startingDeadlineSeconds", STARTING_DEADLINE),
        "suspend": bool(schedule.get("suspend", False)),
        "successfulJobsHistoryLimit": keep.get("succeeded", KEEP_SUCCEEDED),
        "failedJobsHistoryLimit": keep.get("failed", KEEP_FAILED),
        "jobTemplate": {
            "metadata": {"labels": {NAME_LABEL: app, APPLICATION_LABEL: app, SCHEDULE_LABEL: name}},
            "spec": {"backoffLimit": schedule.get("retries", RETRIES),
                     "activeDeadlineSeconds": schedule.get("timeoutSeconds", TIMEOUT),
                     "template": template}}})
    meta = child_metadata(app, namespace, uid)
    meta["name"] = object_name(app, name)
    meta["labels"][SCHEDULE_LABEL] = name
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta, "spec": out}


def render(name: str, namespace: str, uid: str, spec: Obj) -> list[Obj]:
    """The desired ``batch/v1`` CronJobs of the Application ``namespace/name`` with ``uid``, one
    per schedule, sorted by schedule name; empty without ``spec.schedules``.

    Each: ``schedule``, ``timeZone`` when given, ``concurrencyPolicy`` (default ``Forbid``),
    ``startingDeadlineSeconds`` (300), ``suspend`` (false), the history limits ``keep.succeeded``
    (3) and ``keep.failed`` (1), and a Job template: the labels name, application and schedule,
    ``backoffLimit`` ``retries`` (2), ``activeDeadlineSeconds`` ``timeoutSeconds`` (600) and the
    pod (``podspec.template`` of ``job_spec``: one container named like the schedule, no port,
    no probes; ``restartPolicy: Never``)."""
    return [_one(name, namespace, uid, spec, schedule_name, schedule)
            for schedule_name, schedule in schedules(spec).items()]


def health(obj: Obj | None) -> Health:
    """Missing when None; Progressing while being deleted; Suspended when ``spec.suspend``;
    else Healthy (a failed run is told in status, not in health: see the module docstring)."""
    if obj is None:
        return Health(Status.MISSING, "CronJob does not exist")
    if (deleting := pending_deletion(obj, "CronJob")) is not None:
        return deleting
    if (obj.get("spec") or {}).get("suspend"):
        return Health(Status.SUSPENDED, f"CronJob {obj.get('metadata', {}).get('name', '')} is suspended")
    return Health(Status.HEALTHY)


def failed(job: Obj) -> str | None:
    """When the Job ``job`` failed (its ``Failed`` condition's ``lastTransitionTime``), None when
    it has not."""
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Failed" and condition.get("status") == "True":
            return str(condition.get("lastTransitionTime") or "")
    return None


def last_failure(jobs: list[Obj]) -> Obj | None:
    """The last failed Job of ``jobs`` (those of one CronJob): ``{job, time, reason, message}``
    (time, reason and message those of its ``Failed`` condition, each where given), the one that
    failed last; None when none failed."""
    found = [(when, job) for job in jobs if (when := failed(job)) is not None]
    if not found:
        return None
    when, job = max(found, key=lambda pair: (pair[0], pair[1]["metadata"]["name"]))
    condition = next(c for c in job["status"]["conditions"] if c.get("type") == "Failed" and c.get("status") == "True")
    out: Obj = {"job": job["metadata"]["name"]}
    if when:  # a date-time in the CRD: never an empty string
        out["time"] = when
    out.update({k: condition[k] for k in ("reason", "message") if condition.get(k)})
    return out


RELATED = ("batch", "Job", SCHEDULE_LABEL)
"""The schedules' Jobs (their label): what the pass reads for ``observed`` (``ChildKind.related``)."""
RUN_SLOT = "Job/"
"""The slot prefix of a schedule's Jobs among an Application's children as ``observed`` reads
them (``Job/<name>``)."""


def observed(app: str, spec: Obj, children: Mapping[str, Obj | None]) -> Obj:
    """``{"schedules": [...]}`` of the Application ``app`` with ``spec``: one entry per schedule,
    sorted by name, from ``children`` (its live children by slot: ``CronJob/<name>`` each
    CronJob, ``Job/<name>`` each Job of them the pass read). Each entry: ``name`` (the
    schedule's), ``cronJob``, ``suspended`` when the live CronJob is, ``lastScheduleTime`` and
    ``lastSuccessfulTime`` where it says, ``active`` (its running Jobs, 0 when none or absent)
    and ``lastFailure`` (``last_failure`` of its Jobs). Empty without any schedule."""
    jobs: dict[str, list[Obj]] = {}
    for slot, job in children.items():
        if slot.startswith(RUN_SLOT) and job is not None:
            owner = next((r.get("name") for r in job["metadata"].get("ownerReferences") or []
                          if r.get("kind") == "CronJob" and r.get("controller")), None)
            jobs.setdefault(owner or "", []).append(job)
    entries = []
    for schedule in schedules(spec):
        name = object_name(app, schedule)
        live = children.get(KIND.slot(name)) or {}
        status, live_spec = live.get("status") or {}, live.get("spec") or {}
        entry: Obj = {"name": schedule, "cronJob": name}
        if live_spec.get("suspend"):
            entry["suspended"] = True
        entry.update({k: status[k] for k in ("lastScheduleTime", "lastSuccessfulTime") if status.get(k)})
        entry["active"] = len(status.get("active") or [])
        if (failure := last_failure(jobs.get(name, []))) is not None:
            entry["lastFailure"] = failure
        entries.append(entry)
    return {"schedules": entries} if entries else {}


def news(obj: Obj) -> object:
    """What of a watched CronJob a pass acts on or reports: its spec, when it last ran and
    succeeded, how many Jobs run, and its health."""
    status = obj.get("status") or {}
    return (obj.get("spec"), status.get("lastScheduleTime"), status.get("lastSuccessfulTime"),
            len(status.get("active") or []), health(obj).as_status())


_TIME = {"type": "string", "format": "date-time"}
STATUS_SCHEMA: Obj = {"schedules": {
    "type": "array",
    "description": "The Application's schedules (spec.schedules), one entry per CronJob; absent without any.",
    "items": {"type": "object", "required": ["name", "cronJob"], "properties": {
        "name": {"type": "string", "description": "The schedule's name."},
        "cronJob": {"type": "string", "description": "Name of its CronJob (<application>-<schedule>)."},
        "suspended": {"type": "boolean", "description": "true when the schedule is suspended."},
        "lastScheduleTime": {**_TIME, "description": "When a Job of it was last started."},
        "lastSuccessfulTime": {**_TIME, "description": "When a Job of it last succeeded."},
        "active": {"type": "integer", "description": "How many Jobs of it run now."},
        "lastFailure": {"type": "object", "description": "The last Job of it that failed, while the CronJob "
                        "keeps it (keep.failed); a failed run does not make the Application Degraded.",
                        "properties": {
                            "job": {"type": "string", "description": "The Job's name."},
                            "time": {**_TIME, "description": "When it failed."},
                            "reason": {"type": "string", "description": "Why (its Failed condition's reason, "
                                                                        "e.g. BackoffLimitExceeded)."},
                            "message": {"type": "string", "description": "Its Failed condition's message."}}},
    }}}}


KIND = ChildKind(group="batch", version="v1", kind="CronJob", plural="cronjobs", render=render, health=health,
                 status_field="schedules", news=news, wanted=wanted, many=True, names=names, observed_all=observed,
                 related=RELATED,
                 authoritative=("spec.jobTemplate.spec.template.metadata.labels",
                                "spec.jobTemplate.spec.template.spec.containers", *POD_OWNED),
                 whole_when_rendered=POD_OWNED,
                 status_schema=STATUS_SCHEMA)
