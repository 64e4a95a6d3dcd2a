"""The pod an Application runs, shared by every child kind that runs one (the Deployment today).
Pure.

``container`` renders the one container from the spec's container fields and ``template``
wraps it in a pod template with the pod fields; a kind that runs another command of the same
Application (with its own image, env or resources) passes a spec with those fields replaced.
"""

from __future__ import annotations

import hashlib

from agent.api import quantity
from agent.api.labels import FILES_DIGEST
from agent.api.objects import Obj
from agent.kinds import configmap

PROBE_TIMING = ("initialDelaySeconds", "periodSeconds", "timeoutSeconds", "successThreshold", "failureThreshold")


def container(name: str, spec: Obj, port: int | None) -> Obj:
    """The container ``name`` of ``spec``: ``image``, the ``containerPort`` ``port`` (none when
    None), then, in this order, ``command``, ``args``, ``env`` (sorted by name), ``envFrom``,
    ``resources`` (each quantity as the API server stores it, ``quantity.stored``), the probes
    (the port as a number) and a read-only mount per file of ``spec.files``."""
    out: Obj = {"name": name, "image": spec["image"]}
    if port is not None:
        out["ports"] = [{"containerPort": port, "protocol": "TCP"}]
    for field in ("command", "args"):
        if field in spec:
            out[field] = list(spec[field])
    if spec.get("env"):
        out["env"] = [_env(key, spec["env"][key]) for key in sorted(spec["env"])]
    if spec.get("envFrom"):
        out["envFrom"] = [dict(source) for source in spec["envFrom"]]
    resources = {part: {name_: quantity.stored(value) for name_, value in sorted(found.items())}
                 for part in ("limits", "requests") if (found := (spec.get("resources") or {}).get(part))}
    if resources:
        out["resources"] = resources
    for probe in ("readinessProbe", "livenessProbe"):
        if spec.get(probe):
            out[probe] = _probe(spec[probe], port)
    mounts = _files(name, spec.get("files") or {})[1]
    if mounts:
        out["volumeMounts"] = mounts
    return out


def template(name: str, spec: Obj, main: Obj, labels: dict[str, str]) -> Obj:
    """The pod template of the Application ``name`` running the container ``main``: ``labels``,
    ``podAnnotations`` (sorted) with the files' digest (``labels.FILES_DIGEST``), and a pod
    with ``serviceAccountName``, ``imagePullSecrets`` and a volume per file of ``spec``."""
    volumes = _files(name, spec.get("files") or {})[0]
    pod: Obj = {"containers": [main]}
    if "serviceAccountName" in spec:
        pod["serviceAccountName"] = spec["serviceAccountName"]
    if spec.get("imagePullSecrets"):
        pod["imagePullSecrets"] = [{"name": secret} for secret in spec["imagePullSecrets"]]
    if volumes:
        pod["volumes"] = volumes
    out: Obj = {"metadata": {"labels": labels}}
    annotations = dict(sorted((spec.get("podAnnotations") or {}).items()))
    if (digest := configmap.digest(spec)) is not None:
        annotations[FILES_DIGEST] = digest
    if annotations:
        out["metadata"]["annotations"] = annotations
    out["spec"] = pod
    return out


def _env(name: str, value: str | Obj) -> Obj:
    """One ``env`` entry: a string value, or a ``secretKeyRef``/``configMapKeyRef``."""
    if isinstance(value, str):
        return {"name": name, "value": value}
    (source, ref), = value.items()
    return {"name": name, "valueFrom": {source: {"name": ref["name"], "key": ref["key"]}}}


def _probe(probe: Obj, port: int | None) -> Obj:
    """A container probe: its handler with the Application's port as a number (a probe's port
    is that port or its name, ``http``), then the timing fields given."""
    out: Obj = {}
    if "httpGet" in probe:
        out["httpGet"] = {"path": probe["httpGet"].get("path", "/"), "port": port}
    elif "tcpSocket" in probe:
        out["tcpSocket"] = {"port": port}
    else:
        out["exec"] = {"command": list(probe["exec"]["command"])}
    out.update({field: probe[field] for field in PROBE_TIMING if field in probe})
    return out


def volume_name(path: str) -> str:
    """The pod volume of the file at ``path``: ``file-`` and a digest of the path."""
    return f"file-{hashlib.sha256(path.encode()).hexdigest()[:10]}"


def _files(name: str, files: Obj) -> tuple[list[Obj], list[Obj]]:
    """(volumes, volume mounts) of ``spec.files``, sorted by path: each file one volume holding
    one item, ``file``, mounted read-only at its path (``subPath``); the text ones from the
    Application's ConfigMap, the others from the Secret or ConfigMap they name."""
    volumes, mounts = [], []
    for path in sorted(files):
        file, volume = files[path], volume_name(path)
        if "content" in file:
            source = {"configMap": {"name": name, "items": [{"key": configmap.key(path), "path": "file"}]}}
        elif "secretRef" in file:
            ref = file["secretRef"]
            source = {"secret": {"secretName": ref["name"], "items": [{"key": ref["key"], "path": "file"}]}}
        else:
            ref = file["configMapRef"]
            source = {"configMap": {"name": ref["name"], "items": [{"key": ref["key"], "path": "file"}]}}
        volumes.append({"name": volume, **source})
        mounts.append({"name": volume, "mountPath": path, "subPath": "file", "readOnly": True})
    return volumes, mounts
