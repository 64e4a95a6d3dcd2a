"""The pod an Application runs, shared by every child kind that runs one (the Deployment, each
schedule's CronJob, each task's Job). Pure.

``container`` renders the one container from the spec's container fields and ``template``
wraps it in a pod template with the pod fields; a kind that runs another command of the same
Application (with its own image, env or resources) passes a spec with those fields replaced.

``spec.security`` is rendered here, once for every pod (``pod_security``, ``container_security``);
``with_default_profile`` gives a spec without ``security.profile`` the agent's
``--default-security-profile`` before any render.
"""

from __future__ import annotations

import hashlib

from agent.api import quantity
from agent.api.labels import FILES_DIGEST
from agent.api.objects import Obj
from agent.api.schema import MAIN_PORT_NAME, SECURITY_PROFILES
from agent.kinds import configmap

PROBES = ("readinessProbe", "livenessProbe", "startupProbe")
"""The probes of ``spec``, in the order the container renders them (Kubernetes' ``Container`` has
liveness, readiness, startup: the first two kept in the order they were rendered before
startupProbe, which comes last either way)."""
PROBE_TIMING = ("initialDelaySeconds", "periodSeconds", "timeoutSeconds", "successThreshold", "failureThreshold")
RESTRICTED, NONE = SECURITY_PROFILES
POD_IDS = ("runAsUser", "runAsGroup", "fsGroup")
"""The fields of ``spec.security`` that go into the pod's ``securityContext`` as they are."""


def container(name: str, spec: Obj, port: int | None) -> Obj:
    """The container ``name`` of ``spec``: ``image``, the ports (``ports``: the unnamed
    ``containerPort`` ``port``, none when None, then each of ``spec.ports``), then, in this
    order, ``command``, ``args``, ``env`` (sorted by name), ``envFrom``, ``resources`` (each
    quantity as the API server stores it, ``quantity.stored``), the probes of ``PROBES`` (each
    port as a number, ``probe_port``), a read-only mount per file of ``spec.files`` and the
    ``securityContext`` of ``spec.security`` (``container_security``). A kind whose container
    serves no port (a schedule's, a task's) passes None and a spec without ``ports`` or probes."""
    out: Obj = {"name": name, "image": spec["image"]}
    if container_ports := ports(spec, port):
        out["ports"] = container_ports
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
    for probe in PROBES:
        if spec.get(probe):
            out[probe] = _probe(spec[probe], spec, port)
    mounts = _files(name, spec.get("files") or {})[1]
    if mounts:
        out["volumeMounts"] = mounts
    if (context := container_security(spec)) is not None:
        out["securityContext"] = context
    return out


def template(name: str, spec: Obj, main: Obj, labels: dict[str, str]) -> Obj:
    """The pod template of the Application ``name`` running the container ``main``: ``labels``,
    ``podAnnotations`` (sorted) with the files' digest (``labels.FILES_DIGEST``), and a pod
    with ``serviceAccountName``, ``imagePullSecrets``, a volume per file of ``spec`` and the
    ``securityContext`` of ``spec.security`` (``pod_security``)."""
    volumes = _files(name, spec.get("files") or {})[0]
    pod: Obj = {"containers": [main]}
    if "serviceAccountName" in spec:
        pod["serviceAccountName"] = spec["serviceAccountName"]
    if spec.get("imagePullSecrets"):
        pod["imagePullSecrets"] = [{"name": secret} for secret in spec["imagePullSecrets"]]
    if volumes:
        pod["volumes"] = volumes
    if (context := pod_security(spec)) is not None:
        pod["securityContext"] = context
    out: Obj = {"metadata": {"labels": labels}}
    annotations = dict(sorted((spec.get("podAnnotations") or {}).items()))
    if (digest := configmap.digest(spec)) is not None:
        annotations[FILES_DIGEST] = digest
    if annotations:
        out["metadata"]["annotations"] = annotations
    out["spec"] = pod
    return out


def pod_security(spec: Obj) -> Obj | None:
    """The pod ``securityContext`` of ``spec.security``: ``runAsUser``, ``runAsGroup`` and
    ``fsGroup`` as given, and with the profile ``restricted`` ``runAsNonRoot: true`` and
    ``seccompProfile: {type: RuntimeDefault}``. None when it sets nothing (no ``security``, or
    ``none`` with no ID): the template then has no ``securityContext``, as before the field.

    The restricted Pod Security Standard (https://kubernetes.io/docs/concepts/security/
    pod-security-standards/#restricted, as the PodSecurity admission enforces it) asks of the
    pod: "Running as Non-root": ``runAsNonRoot`` true on the pod or every container; "Running as
    Non-root user": ``runAsUser`` not 0 (``specrules`` refuses 0 with restricted); "Seccomp":
    ``seccompProfile.type`` RuntimeDefault or Localhost on the pod or every container. Its volume
    rule (configMap, secret, emptyDir, projected, ...) holds for every volume the agent renders,
    and the agent renders no host namespace, host path, host port or privileged container."""
    security = spec.get("security") or {}
    out: Obj = {field: security[field] for field in POD_IDS if field in security}
    if security.get("profile") == RESTRICTED:
        out["runAsNonRoot"] = True
        out["seccompProfile"] = {"type": "RuntimeDefault"}
    return out or None


def container_security(spec: Obj) -> Obj | None:
    """A container's ``securityContext`` of ``spec.security``: with the profile ``restricted``
    ``allowPrivilegeEscalation: false`` and ``capabilities: {drop: [ALL]}``; ``add`` the
    ``addCapabilities`` given (any profile); ``readOnlyRootFilesystem`` as given. None when it
    sets nothing.

    The restricted Pod Security Standard (https://kubernetes.io/docs/concepts/security/
    pod-security-standards/#restricted) asks of every container: "Privilege Escalation":
    ``allowPrivilegeEscalation`` false; "Capabilities": ``drop`` holds ALL and ``add`` at most
    NET_BIND_SERVICE (the schema's only ``addCapabilities``)."""
    security = spec.get("security") or {}
    out: Obj = {}
    capabilities: Obj = {}
    if security.get("profile") == RESTRICTED:
        out["allowPrivilegeEscalation"] = False
        capabilities["drop"] = ["ALL"]
    if security.get("addCapabilities"):
        capabilities["add"] = sorted(set(security["addCapabilities"]))
    if capabilities:
        out["capabilities"] = capabilities
    if "readOnlyRootFilesystem" in security:
        out["readOnlyRootFilesystem"] = security["readOnlyRootFilesystem"]
    return out or None


def with_default_profile(spec: Obj, default: str) -> Obj:
    """``spec`` as the agent renders it under ``--default-security-profile`` ``default``: a spec
    without ``security.profile`` takes ``default``; with ``default`` ``none`` or a profile given,
    ``spec`` itself (the same object: an Application without ``security`` renders exactly what it
    rendered before the flag). A new dict otherwise; ``spec`` is not changed. A spec that is not a
    mapping, or whose ``security`` is not one, is returned as it is (the schema refuses it)."""
    if default == NONE or not isinstance(spec, dict):
        return spec
    security = spec.get("security", {})
    if not isinstance(security, dict) or "profile" in security:
        return spec
    return {**spec, "security": {**security, "profile": default}}


def _env(name: str, value: str | Obj) -> Obj:
    """One ``env`` entry: a string value, or a ``secretKeyRef``/``configMapKeyRef``."""
    if isinstance(value, str):
        return {"name": name, "value": value}
    (source, ref), = value.items()
    return {"name": name, "valueFrom": {source: {"name": ref["name"], "key": ref["key"]}}}


def ports(spec: Obj, port: int | None) -> list[Obj]:
    """The container's ports: ``{containerPort: port, protocol: TCP}`` (unnamed, as before
    ``spec.ports``; none when ``port`` is None), then ``{name, containerPort, protocol: TCP}`` of
    each entry of ``spec.ports``, sorted by name. Empty when there are none."""
    out: list[Obj] = [] if port is None else [{"containerPort": port, "protocol": "TCP"}]
    named = spec.get("ports") or {}
    return out + [{"name": key, "containerPort": named[key], "protocol": "TCP"} for key in sorted(named)]


def probe_port(given: int | str | None, spec: Obj, port: int | None) -> int | None:
    """The number of the port a probe gives as ``given``: ``port`` (the main one) when omitted or
    ``http`` (``MAIN_PORT_NAME``), the number of the entry of ``spec.ports`` a name names, a
    number as it is. None for a name ``spec.ports`` lacks (``specrules`` refuses it first)."""
    if given is None or given == MAIN_PORT_NAME:
        return port
    if isinstance(given, str):
        found = (spec.get("ports") or {}).get(given)
        return found if isinstance(found, int) else None
    return given


def _probe(probe: Obj, spec: Obj, port: int | None) -> Obj:
    """A container probe: its handler with its port as a number (``probe_port``), then the
    timing fields given."""
    out: Obj = {}
    if "httpGet" in probe:
        given = probe["httpGet"].get("port")
        out["httpGet"] = {"path": probe["httpGet"].get("path", "/"), "port": probe_port(given, spec, port)}
    elif "tcpSocket" in probe:
        out["tcpSocket"] = {"port": probe_port(probe["tcpSocket"].get("port"), spec, port)}
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
