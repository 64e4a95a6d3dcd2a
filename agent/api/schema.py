"""Schema and identity constants of the Application custom resource.

The resource is ``applications.heumsi.github.io``, version ``v1``, kind
``Application``, namespaced.
"""

import copy
import difflib

from jsonschema import Draft202012Validator, validators

GROUP = "heumsi.github.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "Application"
PLURAL = "applications"

QUANTITY_PATTERN = (r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
                    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$")
"""A Kubernetes quantity (``k8s.io/apimachinery/pkg/api/resource``), as the API server's own
OpenAPI writes it: the grammar of ``quantity.go``'s comment (``<signedNumber><suffix>``, suffix
one of ``Ki Mi Gi Ti Pi Ei``, ``n u m k M G T P E`` or ``e``/``E`` and a signed number).
``agent.api.quantity`` parses it as ``ParseQuantity`` does."""
SUBDOMAIN_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
"""A DNS-1123 subdomain (``IsDNS1123Subdomain``): names of Secrets, ConfigMaps, service accounts."""
KEY_PATTERN = r"^[-._a-zA-Z0-9]+$"
"""A key of a Secret or ConfigMap (``IsConfigMapKey``)."""
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
"""An environment variable name as C and POSIX shells read it (a C identifier), the narrower of
Kubernetes' rules: every API server accepts it and ``sh`` can expand it."""
HOST_PATTERN = r"^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
"""An Ingress host: a DNS-1123 subdomain, optionally a wildcard ``*.`` first label."""
FILE_PATH_PATTERN = r"^(/[^/\x00]+)+$"
"""An absolute file path without an empty segment or a trailing ``/``."""
HTTP_PATH_PATTERN = r"^/"
MAX_INT32 = 2147483647


def _string(description: str, pattern: str | None = None, max_length: int | None = None) -> dict:
    out: dict = {"type": "string", "minLength": 1}
    if max_length:
        out["maxLength"] = max_length
    if pattern:
        out["pattern"] = pattern
    out["description"] = description
    return out


def _integer(description: str, minimum: int = 0, maximum: int = MAX_INT32) -> dict:
    return {"type": "integer", "minimum": minimum, "maximum": maximum, "description": description}


def _ref(what: str) -> dict:
    return {"type": "object", "required": ["name", "key"], "description": f"A key of a {what} in the "
            "Application's namespace.",
            "properties": {"name": _string(f"Name of the {what}.", SUBDOMAIN_PATTERN, 253),
                           "key": _string(f"Key in the {what}.", KEY_PATTERN, 253)}}


def _strings(description: str, max_items: int = 1024) -> dict:
    return {"type": "array", "maxItems": max_items, "items": {"type": "string"}, "description": description}


def _string_map(description: str) -> dict:
    return {"type": "object", "additionalProperties": {"type": "string"}, "description": description}


_QUANTITY = {"x-kubernetes-int-or-string": True, "pattern": QUANTITY_PATTERN,
             "description": "A Kubernetes quantity, e.g. 250m or \"0.5\" (CPU; a fraction is quoted), 128Mi or 1Gi (memory)."}
_RESOURCE_LIST = {"type": "object", "properties": {"cpu": _QUANTITY, "memory": _QUANTITY}}
MAIN_PORT_NAME = "http"
"""The name of the Application's main port (``spec.port``): the Service's port of that name, and
what a probe may call it by. No entry of ``spec.ports`` has it."""
MAX_PORTS = 64
"""The most entries of ``spec.ports``."""
_PORT_REF = {"x-kubernetes-int-or-string": True,
             "description": "The port probed: spec.port as a number or by its name http, or an entry of "
                            "spec.ports by its name or number; omitted means spec.port. Rendered as the number."}
_PROBE = {
    "type": "object",
    "description": "A probe of the container: exactly one of httpGet, tcpSocket or exec, and the usual timing "
                   "fields (omitted ones take Kubernetes' defaults).",
    "oneOf": [{"required": ["httpGet"]}, {"required": ["tcpSocket"]}, {"required": ["exec"]}],
    "properties": {
        "httpGet": {"type": "object", "description": "An HTTP GET of path on the container's port; 200-399 is "
                    "success.", "properties": {
                        "path": _string("The path, starting with /; omitted means /.", HTTP_PATH_PATTERN, 2048),
                        "port": _PORT_REF}},
        "tcpSocket": {"type": "object", "description": "A TCP connection to the container's port.",
                      "properties": {"port": _PORT_REF}},
        "exec": {"type": "object", "required": ["command"], "description": "A command run in the container; "
                 "exit status 0 is success.", "properties": {"command": {**_strings(
                     "The command and its arguments (not run in a shell)."), "minItems": 1}}},
        "initialDelaySeconds": _integer("Seconds after the container starts before the first probe."),
        "periodSeconds": _integer("Seconds between probes (Kubernetes' default 10).", 1),
        "timeoutSeconds": _integer("Seconds after which a probe fails (default 1).", 1),
        "successThreshold": _integer("Successes in a row that count as passing after a failure (default 1; "
                                     "a liveness probe's must be 1).", 1),
        "failureThreshold": _integer("Failures in a row that count as failing (default 3).", 1),
    },
}

_SCHEDULE = {
    "type": "object",
    "required": ["schedule"],
    "description": "One schedule: when, and what it runs.",
    "properties": {
        "schedule": _string("When: 5 cron fields (minute hour day-of-month month day-of-week, e.g. \"0 3 * * *\") "
                            "or a macro (@yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly); "
                            "no TZ= prefix (set timeZone).", max_length=256),
        "timeZone": _string("The IANA time zone the schedule is read in, e.g. Europe/Berlin (default: the "
                            "kube-controller-manager's, usually UTC).", max_length=64),
        "image": {"type": "string", "minLength": 1, "pattern": "^\\S+$",
                  "description": "The container image (default spec.image); no whitespace anywhere."},
        "command": _strings("The entrypoint (default spec.command); not run in a shell."),
        "args": _strings("Arguments to the entrypoint (default spec.args)."),
        "env": {"type": "object", "maxProperties": 1024, "description": "Environment variables set over "
                "spec.env, as spec.env sets them.", "additionalProperties": {
                    "x-kubernetes-preserve-unknown-fields": True,
                    "description": "A string, or exactly one of secretKeyRef and configMapKeyRef.",
                    "minProperties": 1, "maxProperties": 1,
                    "properties": {"secretKeyRef": _ref("Secret"), "configMapKeyRef": _ref("ConfigMap")}}},
        "resources": {"type": "object", "description": "CPU and memory of its container, as spec.resources "
                      "(default spec.resources).",
                      "properties": {"requests": {**_RESOURCE_LIST, "description": "What the scheduler reserves."},
                                     "limits": {**_RESOURCE_LIST, "description": "The most the container may use."}}},
        "concurrencyPolicy": {"type": "string", "enum": ["Allow", "Forbid", "Replace"],
                              "description": "When a run is due while the last one still runs: Forbid (default: "
                                             "skip it), Allow (run both) or Replace (stop the running one)."},
        "startingDeadlineSeconds": _integer("Seconds after its time a missed run may still start (default 300).", 1),
        "retries": _integer("Times a failed run's pod is retried before the run fails (the Job's backoffLimit; "
                            "default 2).", 0, 100),
        "timeoutSeconds": _integer("Seconds a run may take before it fails (the Job's activeDeadlineSeconds; "
                                   "default 600).", 1),
        "keep": {"type": "object", "description": "How many finished Jobs the CronJob keeps.", "properties": {
            "succeeded": _integer("Succeeded Jobs kept (default 3).", 0, 100),
            "failed": _integer("Failed Jobs kept (default 1; 0 keeps none, and status.schedules cannot tell a "
                               "failure).", 0, 100)}},
        "suspend": {"type": "boolean", "description": "true: no new run starts (a running one goes on). "
                    "Omitted means false."},
    },
}


_IMAGE = {
    "type": "string",
    "minLength": 1,
    "pattern": "^\\S+$",
    "description": "Container image reference, e.g. nginx:latest; no whitespace anywhere.",
}
_ENV = {
    "type": "object",
    "maxProperties": 1024,
    "description": "Environment variables by name (a C identifier: letters, digits and _, not starting "
    "with a digit). Each value is a string, or a reference to a key of a Secret "
    "({secretKeyRef: {name, key}}) or a ConfigMap ({configMapKeyRef: {name, key}}): secret values "
    "never live in Git. Set in the container in the order of their names.",
    "additionalProperties": {
        "x-kubernetes-preserve-unknown-fields": True,
        "description": "A string, or exactly one of secretKeyRef and configMapKeyRef.",
        "minProperties": 1,
        "maxProperties": 1,
        "properties": {"secretKeyRef": _ref("Secret"), "configMapKeyRef": _ref("ConfigMap")},
    },
}
_RESOURCES = {
    "type": "object",
    "description": "CPU and memory the container requests (what the scheduler reserves) and its "
    "limits, as Kubernetes quantities; a request is at most its limit.",
    "properties": {"requests": {**_RESOURCE_LIST, "description": "What the scheduler reserves."},
                   "limits": {**_RESOURCE_LIST, "description": "The most the container may use."}},
}

TASK_WHEN = ("BeforeRollout", "AfterRollout")
"""When a task runs: before the other children roll out (the default, the first) or once the
Deployment is healthy at the new template."""
TASK_RETRIES = (0, 10, 2)
"""A task's ``retries`` (the Job's ``backoffLimit``): the fewest, the most, the default."""
TASK_TIMEOUT = (1, 86400, 600)
"""A task's ``timeoutSeconds`` (the Job's ``activeDeadlineSeconds``): the fewest, the most
(a day), the default (10 minutes)."""
MAX_TASKS = 16
"""The most tasks one Application has."""
TASK_PHASES = ("Pending", "Running", "Succeeded", "Failed")
"""The phases of a task's run, as ``status.tasks[].phase`` writes them."""

SECURITY_PROFILES = ("restricted", "none")
"""``spec.security.profile``: the Pod Security Standard "restricted" rendered in full, or only the
fields given. Omitted: the agent's ``--default-security-profile`` (itself default ``none``)."""
SECURITY_CAPABILITIES = ("NET_BIND_SERVICE",)
"""The capabilities ``spec.security.addCapabilities`` may add: the only one the restricted Pod
Security Standard lets a container add back after dropping ALL."""

_SECURITY = {
    "type": "object",
    "description": "How the pods run: as which user and group, and under which Pod Security Standard. "
    "Every pod the agent renders takes it (the Deployment's, each schedule's and each task's).",
    "properties": {
        "profile": {"type": "string", "enum": list(SECURITY_PROFILES), "description": "restricted: what the "
                    "Pod Security Standard restricted requires (runAsNonRoot, the RuntimeDefault seccomp "
                    "profile, no privilege escalation, every capability dropped); none: only the fields given "
                    "here. Omitted: the agent's --default-security-profile (default none)."},
        "runAsUser": _integer("The user ID the containers run as (not 0 with restricted).", 0, MAX_INT32),
        "runAsGroup": _integer("The primary group ID of the containers' processes.", 0, MAX_INT32),
        "fsGroup": _integer("The group that owns the pod's volumes.", 0, MAX_INT32),
        "readOnlyRootFilesystem": {"type": "boolean", "description": "true mounts each container's root "
                                   "filesystem read-only."},
        "addCapabilities": {"type": "array", "maxItems": len(SECURITY_CAPABILITIES), "description": "Linux "
                            "capabilities added to each container: only NET_BIND_SERVICE (to listen on a port "
                            "below 1024 as a user other than root).",
                            "items": {"type": "string", "enum": list(SECURITY_CAPABILITIES)}},
    },
}

SPREAD_KEYS = {"zone": "topology.kubernetes.io/zone", "node": "kubernetes.io/hostname"}
"""``spec.placement.spreadAcross``: each word and the well-known node label its topology spread
constraint counts pods by (https://kubernetes.io/docs/reference/labels-annotations-taints/)."""
TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
"""A toleration's ``operator`` (Kubernetes' default Equal) and ``effect`` (omitted: every effect),
as the API server's ``validateTolerations`` allows them."""
VOLUME_MEDIA = ("Memory",)
"""``spec.volumes.PATH.emptyDir.medium``: the only medium besides the node's disk (the default)."""

_TOLERATION = {
    "type": "object",
    "description": "A taint the pods tolerate: a node with it may run them (a toleration only allows; "
    "nodeSelector chooses).",
    "properties": {
        "key": _string("The taint's key (a label key, e.g. dedicated); omitted: every key, with operator "
                       "Exists."),
        "operator": {"type": "string", "enum": list(TOLERATION_OPERATORS), "description": "Equal (default): "
                     "the taint's value is value; Exists: any value (then give no value)."},
        "value": {"type": "string", "maxLength": 63, "description": "The taint's value, with operator Equal."},
        "effect": {"type": "string", "enum": list(TAINT_EFFECTS), "description": "The taint's effect; "
                   "omitted: every effect."},
        "tolerationSeconds": {"type": "integer", "minimum": 0, "maximum": MAX_INT32, "description": "With "
                              "effect NoExecute only: seconds the pod stays on a node after the taint is added, "
                              "then it is evicted; omitted: forever."},
    },
}

_PLACEMENT = {
    "type": "object",
    "description": "Which nodes the pods run on, and how they spread. The Deployment's pods take all of it; "
    "each task's and schedule's pods take all but spreadAcross.",
    "properties": {
        "nodeSelector": _string_map("Labels a node must have to run the pods, e.g. "
                                    "kubernetes.io/arch: arm64 (a label key and a label value each)."),
        "tolerations": {"type": "array", "maxItems": 64, "description": "Taints the pods tolerate, in "
                        "Kubernetes' shape (key, operator, value, effect, tolerationSeconds).",
                        "items": _TOLERATION},
        "spreadAcross": {"type": "array", "maxItems": len(SPREAD_KEYS), "description": "Spread the "
                         "Application's pods evenly over zones (the node label topology.kubernetes.io/zone) "
                         "and/or nodes (kubernetes.io/hostname): a topology spread constraint each, on the "
                         "Application's own pods, with maxSkew 1, never blocking scheduling "
                         "(ScheduleAnyway). Each at most once.",
                         "items": {"type": "string", "enum": list(SPREAD_KEYS)}},
        "priorityClassName": _string("The PriorityClass of the pods (it must exist): who is scheduled first "
                                     "and evicted last.", SUBDOMAIN_PATTERN, 253),
    },
}

MAX_VOLUMES = 64
"""Entries of ``spec.volumes`` at most (the schema's ``maxProperties``)."""
_VOLUMES = {
    "type": "object",
    "maxProperties": MAX_VOLUMES,
    "description": "Scratch directories in the container, by absolute mount path, each {emptyDir: {sizeLimit: "
    "QUANTITY, medium: Memory}} (both optional): empty when a pod starts and gone with it, writable even with "
    "security.readOnlyRootFilesystem. A path may not be, hold or lie in a path of files or of another volume.",
    "additionalProperties": {
        "type": "object",
        "required": ["emptyDir"],
        "description": "The volume: emptyDir.",
        "properties": {"emptyDir": {
            "type": "object",
            "description": "An empty directory on the node ({} for no limit).",
            "properties": {
                "sizeLimit": {**_QUANTITY, "description": "The most it may hold, e.g. 1Gi: a pod above it is "
                              "evicted. With medium Memory it counts toward the container's memory."},
                "medium": {"type": "string", "enum": list(VOLUME_MEDIA), "description": "Memory: a tmpfs in the "
                           "node's memory; omitted: the node's disk."}}}},
    },
}

_TASK = {
    "type": "object",
    "description": "A command run to completion as a batch/v1 Job, once per content: before the rollout "
    "(a database migration) or after it. It runs in the Application's pod settings (envFrom, files, "
    "serviceAccountName, imagePullSecrets, podLabels, podAnnotations, security, placement but spreadAcross, "
    "terminationGracePeriodSeconds, volumes), never selected by the Service.",
    "properties": {
        "when": {"type": "string", "enum": list(TASK_WHEN), "description": "BeforeRollout (default): the "
                 "other children wait until it succeeded; AfterRollout: it starts once the Deployment is "
                 "healthy at the new template."},
        "command": _strings("The task's entrypoint (replaces the image's ENTRYPOINT); not run in a shell. Not "
                            "taken from spec.command."),
        "args": _strings("Arguments to the entrypoint (replace the image's CMD). Not taken from spec.args. "
                         "With the Application's own image, command or args is needed (else the task would "
                         "start the server, which never finishes)."),
        "image": {**_IMAGE, "description": "Container image reference; omitted: spec.image. No whitespace."},
        "env": {**copy.deepcopy(_ENV), "description": "Environment variables over spec.env (a name given "
                "in both takes this value), in the same shapes."},
        "resources": {**copy.deepcopy(_RESOURCES), "description": "CPU and memory, in the shape of "
                      "spec.resources; omitted: spec.resources."},
        "retries": _integer(f"Retries after a failed pod (the Job's backoffLimit); default {TASK_RETRIES[2]}.",
                            TASK_RETRIES[0], TASK_RETRIES[1]),
        "timeoutSeconds": _integer(f"Seconds the whole run may take, retries included (the Job's "
                                   f"activeDeadlineSeconds); default {TASK_TIMEOUT[2]}.", TASK_TIMEOUT[0],
                                   TASK_TIMEOUT[1]),
    },
}


SPEC_SCHEMA: dict = {
    "type": "object",
    "description": "Desired state of an Application: one container image run as a "
    "Deployment and, with a port, exposed on it by a Service; optionally its configuration, files, "
    "an Ingress, an autoscaler, schedules and tasks.",
    "required": ["image"],
    "not": {"required": ["replicas", "autoscaling"]},
    "properties": {
        "image": _IMAGE,
        "replicas": {
            "type": "integer",
            "minimum": 0,
            "maximum": 2147483647,
            "description": "Number of pod replicas (0 scales the application down; at most 2147483647, a "
            "Deployment's int32). Omitted: the agent does not own the Deployment's replicas (1 at "
            "creation, then whoever scales it). Not together with autoscaling.",
        },
        "port": {
            "type": "integer",
            "minimum": 1,
            "maximum": 65535,
            "description": "TCP port the container listens on; also the Service port, named http. Omitted: a "
            "worker, with no main container port and no Service unless spec.ports gives other ports (removing "
            "both prunes the Service); its probes are exec only or name a port of spec.ports, and it has no "
            "ingress.",
        },
        "ports": {
            "type": "object",
            "maxProperties": MAX_PORTS,
            "description": "More TCP ports the container listens on, by name (an IANA service name: at most 15 "
            "lowercase letters, digits and '-', with a letter; not http, spec.port's name), e.g. {metrics: 9090}. "
            "Each is a named container port and a Service port of that name and number (a worker with ports has "
            "a Service of these alone). A probe may name one. Neither a name nor a number is given twice, nor "
            "spec.port's number.",
            "additionalProperties": {"type": "integer", "minimum": 1, "maximum": 65535,
                                     "description": "The port's number, 1-65535 (container port, Service port "
                                                    "and its targetPort)."},
        },
        "suspend": {
            "type": "boolean",
            "description": "true stops the agent from applying, correcting, recreating or pruning the "
            "children; the Application is still applied and is never pruned. Omitted means false.",
        },
        "command": _strings("The container's entrypoint (replaces the image's ENTRYPOINT); not run in a shell."),
        "args": _strings("Arguments to the entrypoint (replace the image's CMD)."),
        "env": _ENV,
        "envFrom": {
            "type": "array",
            "maxItems": 64,
            "description": "Secrets and ConfigMaps whose every key becomes an environment variable; a later "
            "source wins over an earlier one, and env wins over all.",
            "items": {
                "type": "object",
                "description": "Exactly one of secretRef and configMapRef.",
                "oneOf": [{"required": ["secretRef"]}, {"required": ["configMapRef"]}],
                "properties": {
                    "secretRef": {"type": "object", "required": ["name"], "description": "A Secret.",
                                  "properties": {"name": _string("Name of the Secret.", SUBDOMAIN_PATTERN, 253)}},
                    "configMapRef": {"type": "object", "required": ["name"], "description": "A ConfigMap.",
                                     "properties": {"name": _string("Name of the ConfigMap.", SUBDOMAIN_PATTERN,
                                                                    253)}},
                    "prefix": _string("Prepended to every name from this source.", ENV_NAME_PATTERN, 253),
                },
            },
        },
        "resources": _RESOURCES,
        "readinessProbe": {**_PROBE, "description": "When the pod receives traffic. " + _PROBE["description"]},
        "livenessProbe": {**_PROBE, "description": "When the container is restarted. " + _PROBE["description"]},
        "startupProbe": {**_PROBE, "description": "When the container has started: the other probes wait until "
                         "it passes, and failing failureThreshold times restarts the container (for a slow start; "
                         "successThreshold must be 1). " + _PROBE["description"]},
        "files": {
            "type": "object",
            "maxProperties": 64,
            "description": "Files in the container, by absolute path, each mounted read-only: text from Git "
            "({content: TEXT}; all of them together at most 1 MiB, one ConfigMap's limit, and a change rolls "
            "the pods), or a key of a Secret ({secretRef: {name, key}}) or ConfigMap "
            "({configMapRef: {name, key}}).",
            "additionalProperties": {
                "type": "object",
                "description": "Exactly one of content, secretRef and configMapRef.",
                "oneOf": [{"required": ["content"]}, {"required": ["secretRef"]}, {"required": ["configMapRef"]}],
                "properties": {"content": {"type": "string", "description": "The file's text (UTF-8)."},
                               "secretRef": _ref("Secret"), "configMapRef": _ref("ConfigMap")},
            },
        },
        "serviceAccountName": _string("The service account the pods run as (default: the namespace's "
                                      "default).", SUBDOMAIN_PATTERN, 253),
        "imagePullSecrets": {"type": "array", "maxItems": 64, "description": "Names of Secrets holding "
                             "registry credentials for pulling the image.",
                             "items": {"type": "string", "minLength": 1, "maxLength": 253,
                                       "pattern": SUBDOMAIN_PATTERN}},
        "podAnnotations": _string_map("Annotations on every pod."),
        "podLabels": _string_map("Labels on every pod, besides the agent's own (which they may not set)."),
        "security": _SECURITY,
        "placement": _PLACEMENT,
        "terminationGracePeriodSeconds": _integer("Seconds a pod has to stop after SIGTERM before it is killed "
                                                  "(Kubernetes' default 30); every pod the agent renders takes "
                                                  "it.", 0, MAX_INT32),
        "volumes": _VOLUMES,
        "rollout": {
            "type": "object",
            "description": "How a new version replaces pods (a rolling update).",
            "properties": {
                "maxSurge": {"x-kubernetes-int-or-string": True, "description": "Pods above the "
                             "desired count during a rollout: a number or a percentage such as 25% (Kubernetes' "
                             "default)."},
                "maxUnavailable": {"x-kubernetes-int-or-string": True, "description": "Pods below the "
                                   "desired count during a rollout: a number or a percentage (default 25%)."},
                "progressDeadlineSeconds": _integer("Seconds a rollout may make no progress before the "
                                                    "Deployment, and the Application, report Degraded "
                                                    "(Kubernetes' default 600).", 1),
                "failAfterSeconds": _integer("Seconds a new pod may fail for a reason waiting will not fix "
                                             "(ImagePullBackOff, ErrImagePull, InvalidImageName, "
                                             "CreateContainerConfigError, CreateContainerError, CrashLoopBackOff "
                                             "from 3 restarts, or the pod refused: FailedCreate) before the "
                                             "Application reports Degraded with that reason (default 120); at "
                                             "most progressDeadlineSeconds.", 10),
            },
        },
        "ingress": {
            "type": "object",
            "description": "A way in from outside: an Ingress (networking.k8s.io/v1) sending host and path to "
            "the Service. Removing it removes the Ingress.",
            "properties": {
                "host": _string("The host name, e.g. shop.example.com (a leading *. is a wildcard); omitted: "
                                "every host.", HOST_PATTERN, 253),
                "path": _string("The path, starting with / (default /).", HTTP_PATH_PATTERN, 2048),
                "pathType": {"type": "string", "enum": ["Prefix", "Exact", "ImplementationSpecific"],
                             "description": "How path matches: Prefix (default), Exact or "
                                            "ImplementationSpecific."},
                "className": _string("The IngressClass (omitted: the cluster's default class).",
                                     SUBDOMAIN_PATTERN, 253),
                "tlsSecretName": _string("A Secret of type kubernetes.io/tls for host: TLS is then terminated "
                                         "with it.", SUBDOMAIN_PATTERN, 253),
                "annotations": _string_map("Annotations on the Ingress (ingress controllers read them)."),
            },
        },
        "autoscaling": {
            "type": "object",
            "required": ["maxReplicas"],
            "anyOf": [{"required": ["targetCPUUtilizationPercentage"]},
                      {"required": ["targetMemoryUtilizationPercentage"]}],
            "description": "A HorizontalPodAutoscaler (autoscaling/v2) between minReplicas and maxReplicas, "
            "on average CPU and/or memory use as a percentage of the requests (set resources.requests). "
            "The autoscaler then owns the Deployment's replicas; not together with replicas.",
            "properties": {
                "minReplicas": _integer("The fewest pods (default 1).", 1),
                "maxReplicas": _integer("The most pods.", 1),
                "targetCPUUtilizationPercentage": _integer("Average CPU use, in % of the CPU request.", 1),
                "targetMemoryUtilizationPercentage": _integer("Average memory use, in % of the memory "
                                                              "request.", 1),
            },
        },
        "disruptionBudget": {
            "type": "object",
            "oneOf": [{"required": ["minAvailable"]}, {"required": ["maxUnavailable"]}],
            "description": "A PodDisruptionBudget (policy/v1) on the Application's pods: how many a voluntary "
            "eviction (a node drain) must leave, or may take. Exactly one of minAvailable and maxUnavailable. "
            "A pod that is not Ready may always be evicted (unhealthyPodEvictionPolicy AlwaysAllow).",
            "properties": {
                "minAvailable": {"x-kubernetes-int-or-string": True, "description": "Pods that must stay "
                                 "available: a number or a percentage such as 50%; below replicas (fixed), below "
                                 "100%."},
                "maxUnavailable": {"x-kubernetes-int-or-string": True, "description": "Pods that may be "
                                   "unavailable at once: a number or a percentage such as 25%; not 0."},
            },
        },
        "schedules": {
            "type": "object",
            "maxProperties": 64,
            "description": "Commands of the Application run on a schedule, by name (a DNS label; the CronJob "
            "<application>-<name> is at most 52 characters): each a CronJob (batch/v1) whose pods have the "
            "Application's env, envFrom, files, serviceAccountName, imagePullSecrets, podLabels, "
            "podAnnotations, security, placement (but spreadAcross), terminationGracePeriodSeconds and volumes but "
            "are never selected by its Service. A failed run is told in "
            "status.schedules but does not make the Application Degraded. Removing one removes its CronJob.",
            "additionalProperties": _SCHEDULE,
        },
        "tasks": {
            "type": "object",
            "maxProperties": MAX_TASKS,
            "description": "Commands run to completion as Jobs, by name (a DNS label; the Job is named "
            "<application>-<task>-<8 hex of a digest of what it runs>, at most 63 characters): each runs once "
            "per content (status.tasks records each run); while a BeforeRollout one has not succeeded, the other "
            "children but the ConfigMap stay as they are, and a failed one holds them until a new commit or a "
            "sync-now request (docs/applications.md#tasks).",
            "additionalProperties": _TASK,
        },
    },
}
"""OpenAPI v3 schema of ``spec``, copied verbatim into the CRD's openAPIV3Schema.

Deliberately has no ``additionalProperties``: Kubernetes structural schemas forbid
``additionalProperties`` next to ``properties`` ("additionalProperties and properties
are mutual exclusive", apiextensions validation). The API server instead prunes unknown
fields. Use ``STRICT_SPEC_SCHEMA`` for client-side validation that rejects them.
"""



def typed(schema: dict, closed: bool) -> dict:
    """``schema`` as jsonschema checks it locally, with what the API server checks besides the
    OpenAPI schema, or cannot say in a structural schema: a node ``x-kubernetes-int-or-string``
    is an integer or a string; a node ``x-kubernetes-preserve-unknown-fields`` with
    ``properties`` (an ``env`` value) is a string or such an object; with ``closed``, every
    object node with ``properties`` also gets ``additionalProperties: false`` (unknown fields
    are refused by name instead of being pruned). A new dict; ``schema`` is not changed."""
    out = dict(schema)
    if out.get("x-kubernetes-int-or-string"):
        out["type"] = ["integer", "string"]
    for key in ("properties",):
        if key in out:
            out[key] = {name: typed(sub, closed) for name, sub in out[key].items()}
    for key in ("additionalProperties", "items"):
        if isinstance(out.get(key), dict):
            out[key] = typed(out[key], closed)
    if closed and "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    if out.get("x-kubernetes-preserve-unknown-fields") and "properties" in out:
        as_object = {k: v for k, v in out.items() if k not in ("x-kubernetes-preserve-unknown-fields", "description")}
        return {"description": out.get("description", ""), "anyOf": [{"type": "string"},
                                                                      {**as_object, "type": "object"}]}
    return out


STRICT_SPEC_SCHEMA: dict = typed(SPEC_SCHEMA, closed=True)
"""``SPEC_SCHEMA`` closed (``additionalProperties: false`` at every level) and typed as the API
server types it (``typed``); for local (jsonschema) validation only, never for the CRD."""


def did_you_mean(key, known, prefix: str = "") -> str:
    """The hint for an unknown field ``key``: ``" (did you mean spec.replicas?)"`` naming the
    field of ``known`` (an iterable of names, shown after ``prefix``) closest to it by
    ``difflib.get_close_matches`` (its default cutoff, 0.6), or ``""`` when none is close or
    ``key`` is not a string. E.g. ``did_you_mean("replica", ("image", "replicas"), "spec.")``."""
    if not isinstance(key, str):
        return ""
    match = difflib.get_close_matches(key, list(known), n=1)
    return f" (did you mean {prefix}{match[0]}?)" if match else ""


_Validator = validators.extend(Draft202012Validator, type_checker=Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda _checker, v: isinstance(v, int) and not isinstance(v, bool)))


def validator(schema: dict):
    """The one validator of the agent: a JSON Schema (draft 2020-12) validator of ``schema``
    whose integers are Kubernetes integers (``true`` and ``3.0`` are not integers, where
    jsonschema's default accepts an integral float). ``validate``, the pass and the CRD all
    check through it."""
    Draft202012Validator.check_schema(schema)
    return _Validator(schema)


SPEC_VALIDATOR = validator(typed(SPEC_SCHEMA, closed=False))
"""``SPEC_SCHEMA`` as the API server checks it (unknown fields are pruned there, not refused):
what the pass checks a live Application's ``spec`` with before rendering its children."""
STRICT_SPEC_VALIDATOR = validator(STRICT_SPEC_SCHEMA)
"""``STRICT_SPEC_SCHEMA``: what ``validate`` and the pass check a ``spec`` from Git with."""
