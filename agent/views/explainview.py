"""What ``explain`` says of one Application: is it live, and if not, why. Pure.

``explanation`` turns what was read (the Application, its children, their pods, Events, and
what Git says, see ``agent/views/inspect.py``) into one plain dict, the data of
``gitops-agent explain -o json`` and of the status page's Application page::

    {"application": {"namespace": "shop", "name": "web"},
     "verdict": {"state": "Degraded", "text": "Degraded: Deployment/web: ...", "ok": False},
     "source": {"path": "apps/web.yaml", "line": 3, "repository": "github.com/o/r", "ref": "main"},
     "commits": {"synced": COMMIT or None, "changed": COMMIT or None},
     "observed": {"health": "Progressing", "at": "2026-12-01T10:00:00Z", "by": "sync --once"},
     "git": {"available": True, "reason": None, "url": "https://github.com/o/r"},
     "diff": "diff --git ..." or None,
     "children": [{"kind": "Deployment", "name": "web", "exists": True,
                   "health": {"status": "Progressing", "message": "..."}, "message": "Available: 2/3"}],
     "schedules": [status.schedules as written: name, cronJob, lastScheduleTime, lastFailure...],
     "tasks": [status.tasks as written (name, digest, job, phase, commit, startTime,
               completionTime, message), the Failed ones first (``tasks``)],
     "pods": [{"name": "web-5d9c-x", "phase": "Pending", "ready": False,
               "problems": [{"container": "app", "state": "waiting", "reason": "ImagePullBackOff",
                             "message": "...", "exitCode": None, "restarts": 0}]}],
     "drift": [{"object": "Deployment/web", "field": "spec.replicas", "against": "Git", "want": 2,
                "live": 5, "managers": ["kubectl-scale"]}],
     "events": [{"time": "...", "type": "Warning", "reason": "...", "object": "Pod/web-x",
                 "message": "...", "count": 1}],
     "admission": [{"time": "...", "message": "Deployment/shop/web: would violate PodSecurity ..."}],
     "history": [{"digest": "sha256:...", "revision": SHA, "firstSyncedAt": "...",
                  "lastSyncedAt": "...", "passes": 3}],
     "conditions": [status.conditions as written]}

``observed``: ``status.health.status`` with ``status.observedAt`` and ``status.observedBy``, when
and by what command the status was observed (None where absent): the status is as of then.

``admission``: the messages of the agent's ``AdmissionWarning`` Events on the Application (what
the API server warned of its writes: ``agent.engine.events``), newest first, at most
``EVENTS_SHOWN``, whatever the other Events (``events`` shows only the newest few of all).

``drift``: when Git was read, the fields of the live Application's spec that differ from its
spec in Git, then those of its children that differ from what the agent renders from Git's spec
(``against`` ``"Git"``); else those of its children that differ from what the agent renders from
the live Application's spec (``against`` ``"rendered"``). See ``drift``.

A COMMIT is ``{"sha", "short", "author", "date", "subject"}`` (author, date and subject None
when Git was not read). ``verdict.ok`` is True only for ``Synced and healthy``: ``explain``
exits 0 then, 1 otherwise.
"""

from __future__ import annotations

import datetime
import json
import re
from enum import StrEnum

from agent.api.labels import AGENT_NAME, MANAGED_BY, REPOSITORY, SOURCE_COMMIT, SOURCE_PATH
from agent.api.schema import TASK_PHASES
from agent.engine import conditions
from agent.engine.events import ADMISSION_WARNING
from agent.kinds import deployment, health as health_, podspec, registry, selector
from agent.views.appview import condition, parse_time, short, suspended


class Verdict(StrEnum):
    """``verdict.state``: what ``explain``, ``get`` and the status page say of an Application first.
    A ``str``: it compares and serializes as its value."""

    SYNCED = "Synced"
    PROGRESSING = "Progressing"
    DEGRADED = "Degraded"
    SUSPENDED = "Suspended"
    DRIFTED = "Drifted"
    BACKOFF = "Backoff"
    PRUNE_BLOCKED = "PruneBlocked"
    APPLY_FAILED = "ApplyFailed"
    OWNERSHIP = "OwnershipConflict"
    NOT_IN_GIT = "NotInGit"
    INVALID = "InvalidInGit"


SYNCED, PROGRESSING, DEGRADED, SUSPENDED, DRIFTED = (Verdict.SYNCED, Verdict.PROGRESSING, Verdict.DEGRADED,
                                                     Verdict.SUSPENDED, Verdict.DRIFTED)
BACKOFF, PRUNE_BLOCKED, APPLY_FAILED, OWNERSHIP, NOT_IN_GIT, INVALID = (
    Verdict.BACKOFF, Verdict.PRUNE_BLOCKED, Verdict.APPLY_FAILED, Verdict.OWNERSHIP, Verdict.NOT_IN_GIT, Verdict.INVALID)
STATES = tuple(Verdict)
"""``verdict.state`` values; the first line of ``explain`` reads ``Synced and healthy``,
``Progressing`` (``Progressing: WHY`` while a task runs), ``Degraded: WHY``, ``Drifted: N fields differ from Git ...``, ``Suspended``, ``In backoff until T``, ``Blocked: pruning
held back``, ``Apply failed at FIELD``, ``Ownership conflict``, ``Invalid in Git: FILE:LINE: FIELD: RULE`` or ``Not in Git``."""

GIT, RENDERED = "Git", "rendered"
"""What a drift entry's ``want`` is: the value in Git (the Application's spec in Git, or a child
rendered from it), or the value the agent renders from the live Application's spec (Git was not
read, so a change to the Application itself cannot be told from Git's)."""


EVENTS_SHOWN = 5
HISTORY_KEYS = ("digest", "revision", "firstSyncedAt", "lastSyncedAt", "passes")
_FIELD = re.compile(r"(?<![\w.])((?:metadata|spec|data)(?:\.[A-Za-z0-9_-]+(?:\[[^\]\s]*\])?)+)")


def field_in(message) -> str | None:
    """The first field path in an error ``message`` (``spec.template.spec.containers[0].image``
    in the API server's 422 text, ``spec.replicas`` in a manifest error); None when none."""
    found = _FIELD.search(message) if isinstance(message, str) else None
    return found.group(1) if found else None


def verdict(app: dict, now: datetime.datetime, in_git: bool | None = None, drifted: int = 0,
            against: str = GIT) -> dict:
    """``{"state", "text", "ok"}`` for ``app`` at ``now`` (aware). ``in_git``: False when Git
    was read and has no document for it (None: not known); ``drifted``: how many fields of the
    Application and its children differ from Git (``against`` ``GIT``) or from what the agent
    renders from the live Application (``RENDERED``). The first rule that holds wins:

    0. ``Synced`` False with reason ``InvalidManifest`` or ``InvalidSpec``: its document is in Git
       but refused (so a read of Git finds no valid document for it either): ``Invalid in Git:
       MESSAGE`` (the message names the file, line and field);
    1. not in Git (``in_git`` False, or ``Synced`` False with reason ``PruneSkipped`` or
       ``PruneBlocked``): ``Blocked: pruning held back`` when the reason is ``PruneBlocked`` (the
       pass's pruning was blocked: ``conditions.PRUNE_BLOCKED``; keyed on the reason, never on the
       message, which may quote a file or source name; a refused file that could hide it, named
       in the message after ``kept because pruning was blocked:``, is added: ``Blocked: pruning
       held back by FILE:LINE: ...``), else ``Not in Git``;
    2. suspended: ``Suspended``;
    3. ``Synced`` reason ``OwnershipConflict``: ``Ownership conflict``; reason ``TaskFailed`` (a task's
       Job failed, ``engine.taskgate``): ``Degraded: MESSAGE``; reason ``TaskRunning`` (a task has
       not succeeded yet; the rollout it gates is held, so the children may differ from Git):
       ``Progressing: MESSAGE``;
    4. ``Synced`` False and ``status.nextRetryTime`` after ``now`` with a reason retrying may
       fix (``SyncFailed``): ``In backoff until T``;
    5. ``Synced`` False: ``Apply failed at FIELD`` (``field_in`` its message), else
       ``Apply failed: REASON``;
    6. health ``Degraded``: ``Degraded: MESSAGE``;
    7. ``drifted``: ``Drifted: N fields differ from Git (the next pass puts them back)`` (``from
       what the agent renders`` when ``against`` is ``RENDERED``);
    8. ``Ready`` True, and the status describes the current generation: ``Synced and healthy``;
    9. else ``Progressing`` (a rollout, a pass not yet run, a missing child)."""
    synced, ready = condition(app, "Synced"), condition(app, "Ready")
    status = app.get("status") or {}
    failed = synced.get("status") == "False"
    if failed and synced.get("reason") in (conditions.INVALID_MANIFEST, conditions.INVALID_SPEC):
        return _verdict(INVALID, f"Invalid in Git: {synced.get('message') or synced['reason']}")
    if in_git is False or (failed and synced.get("reason") in (conditions.PRUNE_SKIPPED, conditions.PRUNE_BLOCKED)):
        if failed and synced.get("reason") == conditions.PRUNE_BLOCKED:
            detail = (synced.get("message") or "").partition("kept because pruning was blocked: ")[2]
            return _verdict(PRUNE_BLOCKED, f"Blocked: pruning held back by {detail}" if detail else
                            "Blocked: pruning held back")
        return _verdict(NOT_IN_GIT, "Not in Git")
    if suspended(app) or ready.get("reason") == "Suspended":
        return _verdict(SUSPENDED, "Suspended")
    if synced.get("reason") == "OwnershipConflict":
        return _verdict(OWNERSHIP, "Ownership conflict")
    if failed and synced.get("reason") in (conditions.Reason.TASK_FAILED, conditions.Reason.TASK_RUNNING):
        state = DEGRADED if synced["reason"] == conditions.Reason.TASK_FAILED else PROGRESSING
        return _verdict(state, f"{state}: {synced.get('message') or synced['reason']}")
    retry = parse_time(status.get("nextRetryTime"))
    if failed and retry is not None and retry > now and synced.get("reason") == "SyncFailed":
        return _verdict(BACKOFF, f"In backoff until {status['nextRetryTime']}")
    if failed:
        field = field_in(synced.get("message"))
        return _verdict(APPLY_FAILED, f"Apply failed at {field}" if field else
                        f"Apply failed: {synced.get('reason') or 'unknown reason'}")
    health = status.get("health") if isinstance(status.get("health"), dict) else {}
    if health.get("status") == health_.DEGRADED:
        return _verdict(DEGRADED, f"Degraded: {health.get('message') or 'no message'}")
    if drifted:
        what = "Git" if against == GIT else "what the agent renders"
        fields = "field differs" if drifted == 1 else "fields differ"
        return _verdict(DRIFTED, f"Drifted: {drifted} {fields} from {what} (the next pass puts them back)")
    current = status.get("observedGeneration") == (app.get("metadata") or {}).get("generation")
    if ready.get("status") == "True" and current:
        return _verdict(SYNCED, "Synced and healthy", ok=True)
    return _verdict(PROGRESSING, "Progressing")


def _verdict(state: str, text: str, ok: bool = False) -> dict:
    return {"state": state, "text": text, "ok": ok}


def child_message(obj: dict | None) -> str:
    """kstatus's message for a child (``sigs.k8s.io/cli-utils/pkg/kstatus/status``, the rules
    Flux's health checks read): ``not found``; ``Resource scheduled for deletion``; ``KIND
    generation is G, but latest observed generation is O``; for a Deployment ``Progress deadline
    exceeded``, ``Replicas: S/N``, ``Updated: U/N``, ``Pending termination: X``, ``Available:
    A/U``, ``Ready: R/N``, ``Deployment is available. Replicas: S``; for a LoadBalancer Service
    without an IP ``ClusterIP not set. Service type: LoadBalancer``, else ``Service is ready``;
    for a PodDisruptionBudget (``_budget_message``) a warning while it allows 0 disruptions;
    any other kind ``Resource is current``."""
    if obj is None:
        return "not found"
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    if meta.get("deletionTimestamp"):
        return "Resource scheduled for deletion"
    observed = status.get("observedGeneration")
    if isinstance(observed, int) and isinstance(meta.get("generation"), int) and meta["generation"] > observed:
        return f"{obj.get('kind')} generation is {meta['generation']}, but latest observed generation is {observed}"
    if obj.get("kind") == "Deployment":
        return _deployment_message(spec, status)
    if obj.get("kind") == "Service":
        if spec.get("type") == "LoadBalancer" and not spec.get("clusterIP"):
            return "ClusterIP not set. Service type: LoadBalancer"
        return "Service is ready"
    if obj.get("kind") == "PodDisruptionBudget":
        return _budget_message(status)
    return "Resource is current"


def _budget_message(status: dict) -> str:
    """A PodDisruptionBudget's: while it allows 0 disruptions, a warning that evictions (a node
    drain) wait (ours); else kstatus's ``Budget not met. healthy replicas: H/D`` or
    ``AllowedDisruptions has been computed.``, with how many it allows."""
    allowed, healthy, desired = (status.get(k, 0) for k in ("disruptionsAllowed", "currentHealthy", "desiredHealthy"))
    if allowed == 0:
        return (f"Warning: allows 0 disruptions: an eviction (a node drain) waits until more pods are healthy; "
                f"healthy replicas: {healthy}/{desired}")
    if desired > healthy:
        return f"Budget not met. healthy replicas: {healthy}/{desired}"
    return f"AllowedDisruptions has been computed. Allows {allowed}"


def _deployment_message(spec: dict, status: dict) -> str:
    """kstatus's ``deploymentConditions``, in its order."""
    for item in status.get("conditions") or []:
        if item.get("type") == "Progressing" and item.get("reason") == "ProgressDeadlineExceeded":
            return "Progress deadline exceeded"
    want = spec.get("replicas", 1)
    have, updated = status.get("replicas", 0), status.get("updatedReplicas", 0)
    ready, available = status.get("readyReplicas", 0), status.get("availableReplicas", 0)
    if want > have:
        return f"Replicas: {have}/{want}"
    if want > updated:
        return f"Updated: {updated}/{want}"
    if have > updated:
        return f"Pending termination: {have - updated}"
    if updated > available:
        return f"Available: {available}/{updated}"
    if want > ready:
        return f"Ready: {ready}/{want}"
    found = {c.get("type"): c for c in status.get("conditions") or []}
    progressing = found.get("Progressing") or {}
    if not (progressing.get("status") == "True" and progressing.get("reason") == "NewReplicaSetAvailable"):
        return "ReplicaSet not Available"
    if (found.get("Available") or {}).get("status") != "True":
        return "Deployment not Available"
    return f"Deployment is available. Replicas: {have}"


def child(kind: str, name: str, obj: dict | None, pods: list[dict] | None = None,
          now: datetime.datetime | None = None, seconds: int = deployment.FAIL_AFTER_SECONDS) -> dict:
    """``{"kind", "name", "exists", "health", "message"}`` of one child: its health by the
    agent's rule for the kind (``registry.BY_KIND``) and ``child_message``. ``pods``: the
    Application's, read with a Deployment in a rollout (``deployment.with_pods`` at ``now``, with
    the Application's ``failAfterSeconds`` ``seconds``: its health names a pod no node fits,
    ``FailedScheduling``, or a container that cannot start, ``ImagePullBackOff``, Degraded past
    the grace, as the pass's does)."""
    rule = registry.BY_KIND.get(kind)
    if kind == deployment.KIND.kind and obj is not None and \
            (deployment.failed_create(obj) or (pods and deployment.waits_for_pods(obj))):
        obj = deployment.with_pods(obj, pods or [], now, seconds)
    health = rule.health(obj) if rule else health_.Health(health_.HEALTHY)
    return {"kind": kind, "name": name, "exists": obj is not None, "health": health.as_status(),
            "message": child_message(obj)}


def kept_note(view: dict, kept: dict[str, str] | None) -> dict:
    """``view`` (``child``) with, for a Deployment that keeps the selector ``kept`` of a take-over
    (``kinds.selector``), ``; keeps selector app=web`` after its message."""
    if kept is None or view["kind"] != deployment.KIND.kind:
        return view
    return {**view, "message": f"{view['message']}; keeps selector {selector.described(kept)}"}


def pod(obj: dict) -> dict:
    """``{"name", "phase", "ready", "problems"}`` of a pod. ``problems`` (empty for a ready pod):
    the scheduler's ``PodScheduled=False`` condition (state ``unscheduled``, e.g. reason
    ``Unschedulable`` with "0/1 nodes are available: ..."), then each container (init containers
    first) that is not ready, with its waiting (``ImagePullBackOff``, ``CrashLoopBackOff``) or
    terminated (``Error``, ``OOMKilled``, with ``exitCode``) reason and message; a waiting
    container's last termination is added as ``last``; else the pod's own phase and reason."""
    status = obj.get("status") or {}
    conditions = {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, dict)}
    ready = (conditions.get("Ready") or {}).get("status") == "True"
    problems: list[dict] = []
    if not ready:
        scheduled = conditions.get("PodScheduled") or {}
        if scheduled.get("status") == "False":
            problems.append(_problem(None, "unscheduled", scheduled.get("reason"), scheduled.get("message")))
        for item in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
            if not item.get("ready"):
                problems += _container(item)
        if not problems and status.get("phase") != "Running":
            problems.append(_problem(None, "pod", status.get("reason") or status.get("phase") or "Pending",
                                     status.get("message")))
    return {"name": (obj.get("metadata") or {}).get("name"), "phase": status.get("phase"), "ready": ready,
            "problems": problems}


def _container(item: dict) -> list[dict]:
    state = item.get("state") or {}
    restarts = item.get("restartCount", 0)
    for name in ("waiting", "terminated"):
        if isinstance(state.get(name), dict):
            found = state[name]
            out = _problem(item.get("name"), name, found.get("reason"), found.get("message"),
                           found.get("exitCode"), restarts)
            last = (item.get("lastState") or {}).get("terminated")
            if name == "waiting" and isinstance(last, dict):
                out["last"] = {"reason": last.get("reason"), "exitCode": last.get("exitCode"),
                               "message": last.get("message")}
            return [out]
    return [] if state.get("running") and item.get("started") is not False else \
        [_problem(item.get("name"), "running", "NotReady", "running, not ready (its readiness probe fails)",
                  None, restarts)]


def _problem(container, state, reason, message, exit_code=None, restarts=0) -> dict:
    return {"container": container, "state": state, "reason": reason, "message": message,
            "exitCode": exit_code, "restarts": restarts}


def drift(live: dict | None, desired: dict | None, against: str = GIT, taken: bool = True) -> list[dict]:
    """The fields of ``desired`` that differ in ``live`` or (``taken``) that a field manager
    other than ``gitops-agent`` owns while the agent does not (read from
    ``metadata.managedFields``; the ``status`` subresource's entries left out):
    ``[{"object", "field", "against", "want", "live", "managers"}]``: ``want`` is ``desired``'s
    value, ``against`` says what ``desired`` is (``GIT`` or ``RENDERED``), ``managers`` the
    other managers that own the field, sorted. A list of mappings with a ``name`` is compared
    entry by entry (a container), any other list whole. Empty when either object is None."""
    if live is None or desired is None:
        return []
    entries = [e for e in (live.get("metadata") or {}).get("managedFields") or []
               if isinstance(e, dict) and e.get("subresource", "") != "status"]
    subject = f"{live.get('kind')}/{(live.get('metadata') or {}).get('name')}"
    out = []
    for path, want, now in _leaves({k: desired[k] for k in ("metadata", "spec", "data") if desired.get(k)}, live):
        owners = sorted({e.get("manager") or "?" for e in entries if _owns(e.get("fieldsV1") or {}, path)})
        foreign = [m for m in owners if m != AGENT_NAME]
        if want != now or (taken and foreign and AGENT_NAME not in owners):
            out.append({"object": subject, "field": _readable(path), "against": against, "want": want, "live": now,
                        "managers": foreign})
    return out


def differing(found: list[dict]) -> int:
    """How many drift entries have a live value other than the wanted one (not only another owner)."""
    return sum(1 for d in found if d["want"] != d["live"])


def _leaves(desired, live, at: tuple = ()):
    """(path, desired value, live value) of every leaf ``desired`` sets; a path is a tuple of
    ``("f", key)`` and ``("k", name, live entry or None)``."""
    if isinstance(desired, dict) and desired:
        for key, value in desired.items():
            if value is not None:
                yield from _leaves(value, live.get(key) if isinstance(live, dict) else None, at + (("f", key),))
    elif isinstance(desired, list) and desired and all(isinstance(i, dict) and "name" in i for i in desired):
        by_name = {i.get("name"): i for i in live if isinstance(i, dict)} if isinstance(live, list) else {}
        for item in desired:
            yield from _leaves(item, by_name.get(item["name"]), at + (("k", item["name"], by_name.get(item["name"])),))
    else:
        yield at, desired, live


def _owns(trie: dict, path: tuple) -> bool:
    """True when the FieldsV1 ``trie`` holds the field at ``path`` (or fields under it). A
    keyed list entry ``k:{...}`` matches the live entry whose fields hold the key's values."""
    node = trie
    for step in path:
        if not isinstance(node, dict):
            return False
        if step[0] == "f":
            node = node.get(f"f:{step[1]}")
        else:
            node = next((sub for key, sub in node.items() if key.startswith("k:") and _matches(key, step[2])), None)
        if node is None:
            return False
    return True


def _matches(key: str, entry: dict | None) -> bool:
    try:
        fields = json.loads(key[2:])
    except ValueError:
        return False
    return isinstance(entry, dict) and isinstance(fields, dict) and all(entry.get(k) == v for k, v in fields.items())


def _readable(path: tuple) -> str:
    """``spec.template.spec.containers[app].image`` for a path of ``_leaves``."""
    out = ""
    for step in path:
        out += f".{step[1]}" if step[0] == "f" else f"[{step[1]}]"
    return out.lstrip(".")


def events(items: list[dict], objects: set[tuple[str, str]], limit: int = EVENTS_SHOWN) -> list[dict]:
    """The newest ``limit`` Events of ``items`` whose involvedObject (kind, name) is in
    ``objects``, newest first (then by object, reason and message):
    ``[{"time", "type", "reason", "object", "message", "count"}]``;
    the time is ``lastTimestamp``, else ``eventTime``, else the Event's creation time, in one
    format whichever it is: UTC to the second (``2026-12-01T11:00:00Z``; an ``eventTime``'s
    fraction dropped)."""
    found = []
    for item in items:
        involved = item.get("involvedObject") or {}
        if (involved.get("kind"), involved.get("name")) not in objects:
            continue
        when = item.get("lastTimestamp") or item.get("eventTime") or (item.get("metadata") or {}).get(
            "creationTimestamp")
        moment = parse_time(when)
        when = moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if moment else when
        found.append({"time": when, "type": item.get("type"), "reason": item.get("reason"),
                      "object": f"{involved.get('kind')}/{involved.get('name')}",
                      "message": item.get("message"), "count": item.get("count") or 1})
    epoch = datetime.datetime.min.replace(tzinfo=datetime.timezone.utc)
    found.sort(key=lambda e: (parse_time(e["time"]) or epoch, e["object"], str(e["reason"]), str(e["message"])),
               reverse=True)  # ties (times are to the second) in one order whatever order they were read in
    return found[:limit]


def admission(items: list[dict], name: str, limit: int = EVENTS_SHOWN) -> list[dict]:
    """``[{"time", "message"}]`` of the ``AdmissionWarning`` Events (``events.ADMISSION_WARNING``)
    on the Application ``name`` among ``items``, newest first, at most ``limit``."""
    found = [e for e in events(items, {("Application", name)}, limit=len(items)) if e["reason"] == ADMISSION_WARNING]
    return [{"time": e["time"], "message": e["message"]} for e in found[:limit]]


def history(app: dict) -> list[dict]:
    """``status.history`` (newest first), each entry cut to ``HISTORY_KEYS``; ``[]`` when absent."""
    items = (app.get("status") or {}).get("history")
    return [{k: e.get(k) for k in HISTORY_KEYS} for e in items if isinstance(e, dict)] if isinstance(items, list) \
        else []


def changed_commit(app: dict) -> str | None:
    """The commit that last changed what ``app`` deploys: ``status.lastChangedCommit``, else
    (before a pass wrote one) the ``heumsi.github.io/source-commit`` annotation, the commit the
    Application's current content was applied from; None for a hand-applied Application."""
    sha = (app.get("status") or {}).get("lastChangedCommit")
    sha = sha or ((app.get("metadata") or {}).get("annotations") or {}).get(SOURCE_COMMIT)
    return sha if isinstance(sha, str) and sha else None


def tasks(app: dict) -> list[dict]:
    """The entries of ``status.tasks`` as written, the ``Failed`` ones first (what holds the
    Application is read first), else in the order the tasks run (the status's order)."""
    found = [e for e in (app.get("status") or {}).get("tasks") or [] if isinstance(e, dict)]
    return sorted(found, key=lambda e: e.get("phase") != TASK_PHASES[3])


def explanation(app: dict, children: dict, pods: list[dict], event_items: list[dict], now: datetime.datetime,
                git: dict | None = None, default_profile: str = "none") -> dict:
    """The whole explanation (module docstring) of ``app`` at ``now`` from what was read:
    ``children`` ``{slot: live object or None}`` (``registry.members``), ``pods`` (the Application's), ``event_items``
    (Events of its namespace) and ``git`` (``agent/views/inspect.py``'s ``read_git``: keys
    ``available``, ``reason``, ``url``, ``ref``, ``line``, ``in_git``, ``synced``, ``changed``
    (author, date, subject), ``diff``; None: not read). ``default_profile``: the agent's
    ``--default-security-profile``, which the children are rendered with
    (``podspec.with_default_profile``)."""
    meta, spec, status = app.get("metadata") or {}, app.get("spec") or {}, app.get("status") or {}
    name, namespace = meta.get("name"), meta.get("namespace")
    annotations = meta.get("annotations") or {}
    git = git or {}
    git_spec = git.get("spec") if isinstance(git.get("spec"), dict) else None
    against = GIT if git_spec is not None else RENDERED
    spec = spec if isinstance(spec, dict) else {}
    kinds = registry.wanted(spec)
    shown = [(k, child_name, slot) for k, child_name, slot in registry.members(name, spec) if k in kinds]
    try:
        rendered = podspec.with_default_profile(spec if git_spec is None else git_spec, default_profile)
        desired = {registry.slot(o): o for o in registry.children(name, namespace, meta.get("uid", ""), rendered)}
    except (KeyError, TypeError, ValueError, AttributeError):  # a spec the schema refuses: nothing rendered
        desired = {}
    dep = deployment.KIND.kind
    kept = selector.kept(children.get(dep), desired.get(dep), adopting=MANAGED_BY not in (
        ((children.get(dep) or {}).get("metadata") or {}).get("labels") or {}))  # not the agent's yet
    if kept is not None:  # a Deployment taken over keeps its selector: its followers render with it
        desired = {slot: selector.keep(obj, kept) for slot, obj in desired.items()}
    in_git = {"metadata": {"name": name}, "spec": git_spec} if git_spec is not None else None
    drifted = drift(app, in_git, GIT, taken=False) + [
        d for slot, want in desired.items() for d in drift(children.get(slot), want, against)]
    pod_views = sorted((pod(p) for p in pods), key=lambda p: p["name"] or "")
    task_runs = tasks(app)
    involved = ({("Application", name)} | {(k.kind, n) for k, n, _ in shown} | {("Pod", p["name"]) for p in pod_views}
                | {("Job", e["job"]) for e in task_runs if isinstance(e.get("job"), str)})
    return {
        "application": {"namespace": namespace, "name": name},
        "verdict": verdict(app, now, git.get("in_git"), differing(drifted), against),
        "source": {"path": status.get("sourcePath") or annotations.get(SOURCE_PATH), "line": git.get("line"),
                   "repository": annotations.get(REPOSITORY), "ref": git.get("ref")},
        "commits": {"synced": commit(status.get("lastSyncedCommit"), git.get("synced")),
                    "changed": commit(changed_commit(app), git.get("changed"))},
        "observed": {"health": (status.get("health") or {}).get("status") if isinstance(status.get("health"), dict)
                     else None, "at": status.get("observedAt"), "by": status.get("observedBy")},
        "git": {"available": bool(git.get("available")), "reason": git.get("reason"), "url": git.get("url")},
        "diff": git.get("diff"),
        "children": [kept_note(child(k.kind, child_name, children.get(slot), pods, now,
                                     deployment.fail_after(app.get("spec"))), kept) for k, child_name, slot in shown],
        "schedules": [entry for entry in status.get("schedules") or [] if isinstance(entry, dict)],
        "tasks": task_runs,
        "pods": pod_views,
        "drift": drifted,
        "events": events(event_items, involved),
        "admission": admission(event_items, name),
        "history": history(app),
        "conditions": [c for c in status.get("conditions") or [] if isinstance(c, dict)],
    }


def commit(sha, info: dict | None = None) -> dict | None:
    """A COMMIT (see the module docstring) for ``sha`` with Git's ``info`` (``author``,
    ``date``, ``subject``) when known; None without a SHA."""
    if not isinstance(sha, str) or not sha:
        return None
    info = info or {}
    return {"sha": sha, "short": short(sha), "author": info.get("author"), "date": info.get("date"),
            "subject": info.get("subject")}
