"""Read what ``get`` and ``explain`` show: Applications, children, pods and Events from the
cluster, and an Application's commits from Git. The reading half of ``appview`` and
``explainview`` (which are pure); writes nothing anywhere but the Git cache.

Objects are read whole with plain GETs (``Kube.request``), not through ``Kube.list``, which
trims what a pass does not read (managedFields, a Deployment's conditions): ``explain`` reads
both. ``managedFields`` is dropped from what ``get`` prints, as kubectl drops it.
"""

from __future__ import annotations

import os

from agent.api.labels import APPLICATION_LABEL, REPOSITORY
from agent.api.schema import API_VERSION, GROUP, KIND, TASK_PHASES
from agent.kinds import registry
from agent.kube.client import path
from agent.kube.cluster import ApiError
from agent.manifests import loader
from agent.source import history, mirror, snapshot
from agent.views.explainview import changed_commit

GIT_TIMEOUT = 30.0
"""Seconds a fetch for ``explain`` may take before Git is said to be unreachable."""


def without_managed_fields(obj: dict) -> dict:
    """``obj`` without ``metadata.managedFields`` (kubectl's default output), with apiVersion and
    kind set (list items omit them). Modifies and returns ``obj``."""
    obj.setdefault("apiVersion", API_VERSION)
    obj.setdefault("kind", KIND)
    (obj.get("metadata") or {}).pop("managedFields", None)
    return obj


def applications(kube, namespace: str | None, selector: str | None = None) -> tuple[list[dict], str | None]:
    """(every Application in ``namespace`` (None: all namespaces) matching the label
    ``selector``, sorted by namespace and name; the list's resourceVersion). Raises ApiError
    (404 NotFound when the CRD is not installed)."""
    data = kube.request("GET", path(GROUP, KIND, namespace), query={"labelSelector": selector} if selector else None)
    if data is None:
        raise ApiError(404, "NotFound", 'the server doesn\'t have a resource type "applications"', "listing")
    items = [without_managed_fields(i) for i in data.get("items") or []]
    items.sort(key=lambda a: (a["metadata"].get("namespace", ""), a["metadata"].get("name", "")))
    return items, (data.get("metadata") or {}).get("resourceVersion")


def application(kube, namespace: str, name: str) -> dict | None:
    """The Application ``namespace/name`` whole (managedFields kept), or None. Raises ApiError."""
    return kube.request("GET", path(GROUP, KIND, namespace, name))


JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
"""The label the Job controller puts on each pod of a Job (Kubernetes 1.27 and later)."""


def task_pod_selector(app: dict) -> str | None:
    """The label selector of the pods of ``app``'s task runs not yet succeeded (its
    ``status.tasks[]`` entries of another phase): ``batch.kubernetes.io/job-name in (JOB,...)``;
    None without any. A task's pods never carry ``heumsi.github.io/application`` (the Service
    selects on it), so they are read apart, and only while they can say why a task is not done."""
    jobs = sorted({e["job"] for e in (app.get("status") or {}).get("tasks") or []
                   if isinstance(e, dict) and isinstance(e.get("job"), str) and e.get("phase") != TASK_PHASES[2]})
    return f"{JOB_NAME_LABEL} in ({','.join(jobs)})" if jobs else None


def cluster_parts(kube, app: dict) -> tuple[dict, list[dict], list[dict]]:
    """(its children ``{slot: live object or None}`` (``registry.members``: every child kind, each
    CronJob its spec names), its pods (label ``heumsi.github.io/application``, then those of its
    task runs not yet succeeded: ``task_pod_selector``), the Events of its namespace) for the
    live Application ``app``. Raises ApiError."""
    meta = app["metadata"]
    namespace, name = meta["namespace"], meta["name"]
    spec = app.get("spec") if isinstance(app.get("spec"), dict) else {}
    children = {slot: kube.request("GET", path(k.group, k.kind, namespace, child))
                for k, child, slot in registry.members(name, spec)}
    pods = []
    for selector in (f"{APPLICATION_LABEL}={name}", task_pod_selector(app)):
        if selector is not None:
            pods += (kube.request("GET", path("", "Pod", namespace), query={"labelSelector": selector})
                     or {}).get("items") or []
    events = (kube.request("GET", path("", "Event", namespace)) or {}).get("items") or []
    return children, pods, events


def repository_url(app: dict, given: str | None) -> str | None:
    """The repository to read ``app``'s commits from: ``given`` (``--repo``), else the
    repository its annotation ``heumsi.github.io/repository`` names (an identity,
    ``agent/source/repository.py``): a local path as it is when it exists, ``host/path`` as
    ``https://host/path``; None when neither names one."""
    if given:
        return given
    identity = ((app.get("metadata") or {}).get("annotations") or {}).get(REPOSITORY)
    if not isinstance(identity, str) or not identity:
        return None
    if identity.startswith("/"):
        return identity if os.path.isdir(identity) else None
    return f"https://{identity}"


def read_git(app: dict, url: str | None, ref: str | None, cache_dir: str,
             credentials: mirror.Credentials | None = None, timeout: float = GIT_TIMEOUT) -> dict:
    """What Git says of ``app`` (the ``git`` argument of ``explainview.explanation``): fetch
    ``url`` at ``ref`` (None: the remote's HEAD) into the mirror in ``cache_dir``; the author,
    date and subject of its synced and last-changed commits; the diff of its file in the
    change; whether ``ref`` still has it (``in_git``), at which line of its file and its
    ``spec`` there (what its drift is read against). Never
    raises: ``{"available": False, "reason": why}`` when there is no URL or Git fails."""
    if not url:
        return {"available": False, "reason": "no repository known: give --repo (the Application has no "
                                              f"{REPOSITORY} annotation naming a reachable one)", "url": None}
    shown = mirror.redact(url)
    try:
        head = mirror.fetch(url, ref, cache_dir, timeout, credentials=credentials).commit
        changed = changed_commit(app)
        repo, _ = mirror.mirror(mirror.effective(url, credentials)[0], cache_dir, timeout,
                                credentials=mirror.effective(url, credentials)[1],
                                what=f"fetching {shown}", want=changed or head)
        return from_mirror(app, repo, shown, ref, head,
                           lambda file: find(repo, url, head, cache_dir, app, file, credentials, timeout))
    except mirror.SourceError as err:
        return {"available": False, "reason": str(err), "url": shown}


def from_mirror(app: dict, repo, shown: str, ref: str | None, head: str, locate) -> dict:
    """``read_git``'s answer from a mirror already fetched (``repo``, a ``git.Repo``) at
    commit ``head`` of ``ref``; ``shown``: the URL without credentials; ``locate(file)``:
    ``(in_git, line, spec)`` (``find``). Fetches nothing: the status page reads ``run``'s own mirror
    with it. Raises SourceError when the mirror lacks a commit."""
    status = app.get("status") or {}
    changed, synced = changed_commit(app), status.get("lastSyncedCommit")
    out = {"available": True, "reason": None, "url": shown, "ref": ref or "HEAD", "head": head,
           "synced": history.commit_info(repo, synced) if synced else None,
           "changed": history.commit_info(repo, changed) if changed else None}
    file = status.get("sourcePath")
    out["diff"] = history.file_diff(repo, changed, file) if changed and file else None
    out["in_git"], out["line"], out["spec"] = locate(file)
    return out


def find(repo, url, head: str, cache_dir: str, app: dict, file: str | None, credentials,
         timeout) -> tuple[bool, int | None, dict | None]:
    """(whether commit ``head`` has a document for ``app``, its line in ``file`` there, its
    ``spec`` there (None when not found)): its file first, then every manifest of the commit
    (a file moved)."""
    meta = app["metadata"]
    found = _in(loader.load({file: data}, meta["namespace"]).manifests, meta) if file and (
        data := history.file_at(repo, head, file)) is not None else None
    if found is not None:
        return True, found.line, _spec(found)
    try:
        shot = snapshot.read(url, head, cache_dir, ".", credentials=credentials, timeout=timeout)
    except mirror.SourceError:
        return False, None, None
    found = _in(loader.load(shot.files, meta["namespace"]).manifests, meta)
    return found is not None, None, _spec(found)


def _spec(manifest) -> dict | None:
    spec = manifest.body.get("spec") if manifest is not None else None
    return spec if isinstance(spec, dict) else None


def _in(manifests, meta: dict):
    return next((m for m in manifests if m.name == meta["name"] and m.namespace == meta["namespace"]), None)

