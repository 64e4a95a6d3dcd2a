"""The pod an Application runs, shared by every child kind that runs one (the Deployment, each
schedule's CronJob, each task's Job). Pure.

``container`` renders the one container from the spec's container fields and ``template``
wraps it in a pod template with the pod fields; a kind that runs another command of the same
Application (with its own image, env or resources) passes a spec with those fields replaced.

``spec.security`` is rendered here, once for every pod (``pod_security``, ``container_security``);
``with_default_profile`` gives a spec without ``security.profile`` the agent's
``--default-security-profile`` before any render. So are ``spec.placement`` and
``terminationGracePeriodSeconds`` (``placement``: pod fields) and ``spec.volumes`` (``_volumes``:
an emptyDir volume in the pod and its mount in the container).
"""

from __future__ import annotations

import hashlib

from agent.api import quantity
from agent.api.labels import FILES_DIGEST
from agent.api.objects import Obj
from agent.api.schema import MAIN_PORT_NAME, SECURITY_PROFILES, SPREAD_KEYS
from agent.kinds import configmap
from agent.kinds.render import selector_labels

PROBES = ("readinessProbe", "livenessProbe", "startupProbe")
"""The probes of ``spec``, in the order the container renders them (Kubernetes' ``Container`` has
liveness, readiness, startup: the first two kept in the order they were rendered before
startupProbe, which comes last either way)."""
PROBE_TIMING = ("initialDelaySeconds", "periodSeconds", "timeoutSeconds", "successThreshold", "failureThreshold")
RESTRICTED, NONE = SECURITY_PROFILES
POD_IDS = ("runAsUser", "runAsGroup", "fsGroup")
"""The fields of ``spec.security`` that go into the pod's ``securityContext`` as they are."""
OWNED_POD_FIELDS = ("securityContext", "nodeSelector", "tolerations", "topologySpreadConstraints",
                    "priorityClassName", "terminationGracePeriodSeconds")
"""The pod fields the agent owns in full while its render sets them (``ChildKind.authoritative``
and ``whole_when_rendered`` of every kind with a pod template): a value someone else adds there
(a nodeSelector key, a toleration) is drift the next pass removes; without the Application's
field the pod field is others' to set, as before the field. Not ``volumes``: the files' volumes
set it since before ``spec.volumes``, so owning it whole would take volumes others added to
Applications that never asked for it; the agent's own volumes are still corrected by its apply."""
TOLERATION_FIELDS = ("key", "operator", "value", "effect", "tolerationSeconds")
"""A toleration's fields, in the order Kubernetes lists them; each rendered only when given."""


def container(name: str, spec: Obj, port: int | None) -> Obj:
    """The container ``name`` of ``spec``: ``image``, the ports (``ports``: the unnamed
    ``containerPort`` ``port``, none when None, then each of ``spec.ports``), then, in this
    order, ``command``, ``args``, ``env`` (sorted by name), ``envFrom``, ``resources`` (each
    quantity as the API server stores it, ``quantity.stored``), the probes of ``PROBES`` (each
    port as a number, ``probe_port``), a read-only mount per file of ``spec.files``, a mount per
    volume of ``spec.volumes`` (``_volumes``) and the ``securityContext`` of ``spec.security``
    (``container_security``). A kind whose container serves no port (a schedule's, a task's)
    passes None and a spec without ``ports`` or probes."""
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
    mounts = _files(name, spec.get("files") or {})[1] + _volumes(spec.get("volumes") or {})[1]
    if mounts:
        out["volumeMounts"] = mounts
    if (context := container_security(spec)) is not None:
        out["securityContext"] = context
    return out


def template(name: str, spec: Obj, main: Obj, labels: dict[str, str]) -> Obj:
    """The pod template of the Application ``name`` running the container ``main``: ``labels``,
    ``podAnnotations`` (sorted) with the files' digest (``labels.FILES_DIGEST``), and a pod
    with ``serviceAccountName``, ``imagePullSecrets``, a volume per file of ``spec`` then one per
    ``spec.volumes`` entry, the ``securityContext`` of ``spec.security`` (``pod_security``) and
    the fields of ``placement``."""
    volumes = _files(name, spec.get("files") or {})[0] + _volumes(spec.get("volumes") or {})[0]
    pod: Obj = {"containers": [main]}
    if "serviceAccountName" in spec:
        pod["serviceAccountName"] = spec["serviceAccountName"]
    if spec.get("imagePullSecrets"):
        pod["imagePullSecrets"] = [{"name": secret} for secret in spec["imagePullSecrets"]]
    if volumes:
        pod["volumes"] = volumes
    if (context := pod_security(spec)) is not None:
        pod["securityContext"] = context
    pod.update(placement(name, spec, labels))
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


def placement(name: str, spec: Obj, labels: dict[str, str]) -> Obj:
    """The pod fields of ``spec.placement`` and ``spec.terminationGracePeriodSeconds`` for a pod
    of the Application ``name`` with ``labels``, each only when given, in this order:
    ``nodeSelector`` (sorted by key), ``tolerations`` (in the order given, each with the fields
    given, ``TOLERATION_FIELDS``, but an empty ``value``: the API server drops an empty string
    there, and "" is what an omitted value means), ``topologySpreadConstraints`` (``spread``),
    ``priorityClassName``, ``terminationGracePeriodSeconds``. Empty without them: the pod then
    renders as before the fields."""
    given = spec.get("placement") or {}
    out: Obj = {}
    if given.get("nodeSelector"):
        out["nodeSelector"] = dict(sorted(given["nodeSelector"].items()))
    if given.get("tolerations"):
        out["tolerations"] = [{field: toleration[field] for field in TOLERATION_FIELDS
                               if toleration.get(field, "") != ""} for toleration in given["tolerations"]]
    if constraints := spread(name, given.get("spreadAcross") or [], labels):
        out["topologySpreadConstraints"] = constraints
    if "priorityClassName" in given:
        out["priorityClassName"] = given["priorityClassName"]
    if "terminationGracePeriodSeconds" in spec:
        out["terminationGracePeriodSeconds"] = spec["terminationGracePeriodSeconds"]
    return out


def spread(name: str, across: list[str], labels: dict[str, str]) -> list[Obj]:
    """The ``topologySpreadConstraints`` of ``spreadAcross`` ``across`` for a pod with ``labels``:
    one per word, zone before node (``SPREAD_KEYS``'s order, whatever the order given: the
    template does not change with it), each ``maxSkew: 1`` over the word's node label
    (``topologyKey``), ``whenUnsatisfiable: ScheduleAnyway`` (a preference of the scheduler's
    scoring, never a pod left Pending) and ``labelSelector`` the Application's own selector
    (``render.selector_labels``: the pods its Deployment and Service select). Empty for a pod
    that selector does not select (a task's, a schedule's): the constraint counts the
    Application's serving pods, so it would not spread that pod with them.

    Kubernetes: https://kubernetes.io/docs/concepts/scheduling-eviction/topology-spread-constraints/
    (a node without the label counts for no domain and is left out)."""
    selector = selector_labels(name)
    if any(labels.get(key) != value for key, value in selector.items()):
        return []
    return [{"maxSkew": 1, "topologyKey": SPREAD_KEYS[word], "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": {"matchLabels": dict(selector)}} for word in SPREAD_KEYS if word in across]


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


def scratch_name(path: str) -> str:
    """The pod volume of ``spec.volumes`` at ``path``: ``scratch-`` and a digest of the path (never
    a file's ``volume_name``, whatever the paths)."""
    return f"scratch-{hashlib.sha256(path.encode()).hexdigest()[:10]}"


def _volumes(volumes: Obj) -> tuple[list[Obj], list[Obj]]:
    """(volumes, volume mounts) of ``spec.volumes``, sorted by path: each an ``emptyDir`` with
    ``medium`` and ``sizeLimit`` (as the API server stores a quantity, ``quantity.stored``) when
    given, mounted read-write at its path."""
    out, mounts = [], []
    for path in sorted(volumes):
        given = volumes[path].get("emptyDir") or {}
        empty_dir: Obj = {}
        if "medium" in given:
            empty_dir["medium"] = given["medium"]
        if "sizeLimit" in given:
            empty_dir["sizeLimit"] = quantity.stored(given["sizeLimit"])
        out.append({"name": scratch_name(path), "emptyDir": empty_dir})
        mounts.append({"name": scratch_name(path), "mountPath": path})
    return out, mounts


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
