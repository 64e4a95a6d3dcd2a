"""The rules of an Application's ``spec`` (``schema.STRICT_SPEC_SCHEMA``) and their wording. Pure.

Kept apart from ``manifests`` so that module stays about documents; ``problems`` is what
``manifests`` reports for a document's ``spec``, and what the pass checks a live spec with
(``live_problems``). The schema says most; the rules it cannot say (the API server checks them
outside its OpenAPI schema, or the agent is stricter) are here, each named in ``problems``.
"""

from __future__ import annotations

import re

from agent.api import quantity
from agent.api.schema import (ENV_NAME_PATTERN, FILE_PATH_PATTERN, HOST_PATTERN, HTTP_PATH_PATTERN, KEY_PATTERN,
                              MAIN_PORT_NAME, MAX_INT32, QUANTITY_PATTERN, SPEC_VALIDATOR, STRICT_SPEC_VALIDATOR,
                              SUBDOMAIN_PATTERN, did_you_mean)
from agent.kinds import configmap, job, podspec, render
from agent.manifests import podrules, schedulerules
from agent.manifests.metadata import KEY_RULE, VALUE_RULE, label_value_ok, qualified_name_ok
from agent.manifests.nodes import show as _show, type_name as _type_name

SUBDOMAIN_RULE = ("a DNS-1123 subdomain: at most 253 lowercase letters, digits, '-' and '.', starting and "
                  "ending with a letter or digit")
PATTERN_WORDS = {
    SUBDOMAIN_PATTERN: SUBDOMAIN_RULE,
    KEY_PATTERN: "a key of at most 253 letters, digits, '-', '_' and '.'",
    ENV_NAME_PATTERN: "a C identifier: letters, digits and '_', not starting with a digit",
    HOST_PATTERN: f"a host name, {SUBDOMAIN_RULE}, optionally starting with '*.'",
    FILE_PATH_PATTERN: "an absolute path such as /etc/app/config.yaml (no empty segment, no trailing '/')",
    HTTP_PATH_PATTERN: "a path starting with '/'",
}
"""The words for each pattern of the schema: what a user reads instead of a regular expression."""
ENV_VALUE_RULE = ("must be a string, or a mapping with exactly one of secretKeyRef: {name, key} and "
                  "configMapKeyRef: {name, key}")
PERCENT = re.compile(r"[0-9]+%")
INGRESS_BAD_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")
INGRESS_BAD_SUFFIXES = ("/..", "/.")
"""What the API server refuses in an Ingress path of type Prefix or Exact
(``k8s.io/kubernetes/pkg/apis/networking/validation``)."""
TASK_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
TASK_NAME_RULE = ("a DNS label (RFC 1123): at most 63 lowercase letters, digits and '-', starting and ending with "
                  "a letter or digit")
TASK_SCHEDULE_CLASH = ("a schedule has this name too: a schedule's Jobs are named <application>-<name>-<minutes> and "
                       "a task's <application>-<name>-<8 hex digits>, so they could collide; rename one")
"""Why a task and a schedule may not share a name: their Jobs' names could be the same (a task's
digest may be 8 decimal digits, as a CronJob's Job's scheduled minute is)."""
PROBE_PORT_NAME = MAIN_PORT_NAME
"""The name a probe may give the Application's main port (``spec.port``) by: the Service names it http."""
WORKER_PROBE_RULE = ("needs spec.port: an Application without a port (a worker) has no port to probe; "
                     "use exec")
WORKER_PROBE_PORT_RULE = ("is required without spec.port: an Application without a main port has no port to probe "
                          "by default; name a port of spec.ports")
PORT_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
PORT_NAME_MAX = 15
PORT_NAME_RULE = ("an IANA service name: at most 15 lowercase letters, digits and '-', with at least one letter, "
                  "not starting or ending with '-' and no '--'")
"""A port's name as the API server checks a container port's and a Service port's
(``IsValidPortName``, RFC 6335 section 5.1: IANA_SVC_NAME)."""
MAIN_NAME_RULE = (f"the name {MAIN_PORT_NAME} is spec.port's (the Service's main port) and cannot be given here; "
                  "name this port otherwise")
WORKER_INGRESS_RULE = ("needs spec.port: an Ingress sends traffic to the Service, and an Application without a "
                       "port (a worker) has none")
"""What a worker (an Application without ``port``, issue 43) may not have: an httpGet or tcpSocket
probe, or an Ingress; the agent would render a probe of no port, or a backend of no Service."""
ROOT_RESTRICTED_RULE = ("must not be 0 with profile restricted (spec.security.profile, or the agent's "
                        "--default-security-profile): the restricted Pod Security Standard refuses a pod that runs "
                        "as root; give a user ID above 0")
CAPABILITY_RULE = ("must be NET_BIND_SERVICE, the one capability the restricted Pod Security Standard lets a container "
                   "add back")
"""What ``spec.security`` may not say: ``runAsUser: 0`` under the restricted profile (its rule
"Running as Non-root user", https://kubernetes.io/docs/concepts/security/pod-security-standards/#restricted),
and a capability other than NET_BIND_SERVICE (its rule "Capabilities"; the schema's enum)."""
DRAIN_HANGS = "a node drain would wait forever: no pod could ever be evicted"
"""Why a disruption budget that no eviction can pass is refused (``_disruption_budget``)."""


def problems(spec, name: str | None = None) -> list[tuple[tuple, str]]:
    """(path inside spec, message) for every violation of STRICT_SPEC_SCHEMA, and of the rules
    the schema cannot say: an ``image`` holding whitespace; env names (a C identifier, the
    narrower of Kubernetes' rules, so a shell can read every variable); quantities as the API
    server parses them (``agent.api.quantity``), not negative, a request at most its limit;
    ``ports`` (``_ports``: names, no name or number twice); probe ports, one of the
    Application's, and a liveness or startup probe's ``successThreshold`` of 1 (``_probes``);
    the disruption budget (``_disruption_budget``); without ``port`` (a worker), no httpGet or
    tcpSocket probe but of a port of ``ports``, and no ``ingress``; file paths (no ``.`` or ``..`` segment) and their total size
    (a ConfigMap's 1 MiB); pod labels that are not the agent's own; label and annotation keys
    and values; Ingress paths; ``minReplicas`` at most ``maxReplicas``; rollout numbers; each
    schedule's image, env and resources as the Application's, and ``schedulerules.problems``
    (its name, cron expression and time zone; the CronJob name's length when the Application's
    ``name`` is given); tasks (``_tasks``; a task's Job name at most 63 characters when ``name``
    is given); ``security.runAsUser`` not 0 with the profile ``restricted``; ``placement`` and
    ``volumes`` (``podrules.problems``). ``name``:
    the Application's name (a DNS label), for the rules that need it; None leaves them out."""
    return _problems(spec, STRICT_SPEC_VALIDATOR, name)


def live_problems(spec, name: str | None = None) -> list[tuple[tuple, str]]:
    """``problems`` of a live Application's spec: unknown fields are not refused (the API
    server pruned or kept them; ``SPEC_VALIDATOR``)."""
    return _problems(spec, SPEC_VALIDATOR, name)


def _problems(spec, validator, name: str | None = None) -> list[tuple[tuple, str]]:
    out: list[tuple[tuple, str]] = []
    for e in validator.iter_errors(spec):
        out += _word(e, spec)
    if isinstance(spec, dict):
        out += _extra(spec) + _tasks(spec, name) + podrules.problems(spec)
        out += _schedules(spec.get("schedules"))
        out += schedulerules.problems(spec.get("schedules"), name)
    return sorted(set(out), key=lambda p: (list(map(str, p[0])), p[1]))


def _word(e, spec) -> list[tuple[tuple, str]]:
    """The problems of one jsonschema error ``e``, in words."""
    sub = tuple(e.absolute_path)
    schema = e.schema if isinstance(e.schema, dict) else {}
    if e.validator == "required":
        return [(sub + (k,), "is required") for k in e.validator_value if k not in e.instance]
    if e.validator == "additionalProperties":
        known = schema.get("properties", {})
        allowed = ", ".join(sorted(known))
        prefix = "spec." + "".join(f"{p}." for p in sub)
        return [(sub + (k,), f"unknown field{did_you_mean(k, known, prefix)} (allowed: {allowed})")
                for k in e.instance if k not in known]
    if not sub and e.validator == "type":
        return [((), f"must be a mapping, not {_type_name(spec)}")]
    if not sub and e.validator == "not":
        return [] if not isinstance(e.instance, dict) else [(("replicas",), "must not be given together with spec.autoscaling: the autoscaler owns the "
                                "replicas; remove one of the two")]
    if e.validator == "pattern" and schema.get("pattern") in ("^\\S+$", QUANTITY_PATTERN):
        return []  # said below, in words: the image's whitespace, the quantity's grammar
    if e.validator == "oneOf":
        choices = [r["required"][0] for r in e.validator_value]
        if not isinstance(e.instance, dict):
            return []  # not a mapping: its type error says so
        given = [c for c in choices if c in e.instance]
        return [(sub, f"must have exactly one of {', '.join(choices)}"
                      f"{' (got ' + ', '.join(given) + ')' if given else ''}")]
    if e.validator == "anyOf" and _env_value(sub):
        if isinstance(e.instance, dict):  # a reference: its own errors
            found = [err for err in e.context if err.relative_schema_path[0] == 1]
            if found:
                return [p for err in found for p in _word(err, spec)]
        return [(sub, f"{ENV_VALUE_RULE} (got {_show(e.instance)})")]
    if e.validator == "anyOf":
        if not isinstance(e.instance, dict):
            return []  # not a mapping: its type error says so
        choices = [r["required"][0] for r in e.validator_value]
        return [(sub, f"needs {' or '.join(choices)} (or both)")]
    if e.validator in ("minProperties", "maxProperties") and _env_value(sub):
        return [(sub, ENV_VALUE_RULE)]
    if e.validator in ("maxProperties", "maxItems"):
        return [(sub, f"must have at most {e.validator_value} entries (got {len(e.instance)})")]
    if e.validator == "minItems":
        return [(sub, f"must have at least {e.validator_value} entry")]
    if e.validator == "enum" and sub[:2] == ("security", "addCapabilities"):
        return [(sub, f"{CAPABILITY_RULE} (got {_show(e.instance)})")]
    if e.validator in ("type", "minimum", "maximum", "minLength", "maxLength", "pattern", "enum"):
        return [(sub, f"must be {rule(schema)} (got {_show(e.instance)})")]
    return [(sub, e.message)]


def _env_value(sub: tuple) -> bool:
    """True when ``sub`` is the path of one env value: ``env.NAME``, ``schedules.S.env.NAME`` or
    ``tasks.T.env.NAME``."""
    return (len(sub) == 2 and sub[0] == "env") or (len(sub) == 4 and sub[0] in ("schedules", "tasks")
                                                   and sub[2] == "env")


def rule(schema: dict) -> str:
    """Human wording of a property schema, e.g. 'an integer between 1 and 65535', 'true or
    false', 'one of Prefix, Exact, ImplementationSpecific' or 'a DNS-1123 subdomain: ...'."""
    kind = schema.get("type")
    lo, hi = schema.get("minimum"), schema.get("maximum")
    if "enum" in schema:
        return "one of " + ", ".join(schema["enum"])
    if kind == "boolean":
        return "true or false"
    if kind == ["integer", "string"]:
        if schema.get("pattern") == QUANTITY_PATTERN:  # int-or-string: a YAML 0.5 is a float, which the CRD refuses
            return 'a quantity: a whole number, or a string such as "0.5" or 500m (quote a fraction)'
        return "a whole number or a string"
    if kind == "string":
        words = PATTERN_WORDS.get(schema.get("pattern"))
        if words:
            return words
        if schema.get("maxLength"):
            return f"a string of 1 to {schema['maxLength']} characters"
        return "a non-empty string" if schema.get("minLength", 0) >= 1 else "a string"
    if kind == "array":
        return "a list of strings" if (schema.get("items") or {}).get("type") == "string" else "a list"
    if kind == "object":
        additional = schema.get("additionalProperties")
        if isinstance(additional, dict) and additional.get("type") == "string":
            return "a mapping of strings to strings"
        return "a mapping"
    if lo is not None and hi is not None:
        return f"an integer between {lo} and {hi}"
    return f"an integer >= {lo}" if lo is not None else "an integer"


def _extra(spec: dict) -> list[tuple[tuple, str]]:
    """The rules the schema cannot say (see ``problems``); each looks only at values of the
    right type (a wrong type is the schema's problem, said once)."""
    out = _container(spec) + _ports(spec) + _probes(spec)
    out += _files(spec.get("files"))
    out += _maps(spec)
    ingress = spec.get("ingress")
    if ingress is not None and "port" not in spec:
        out.append((("ingress",), WORKER_INGRESS_RULE))
    if isinstance(ingress, dict):
        path = ingress.get("path")
        if isinstance(path, str) and ingress.get("pathType", "Prefix") in ("Prefix", "Exact") and (
                any(s in path for s in INGRESS_BAD_SEQUENCES) or path.endswith(INGRESS_BAD_SUFFIXES)):
            out.append((("ingress", "path"), f"must not hold //, /./, /../ or %2f, nor end in /. or /.., for "
                                             f"pathType Prefix or Exact (got {_show(path)})"))
    scaling = spec.get("autoscaling")
    if isinstance(scaling, dict):
        low, high = scaling.get("minReplicas", 1), scaling.get("maxReplicas")
        if isinstance(low, int) and isinstance(high, int) and not isinstance(high, bool) and low > high >= 1:
            out.append((("autoscaling", "minReplicas"), f"must be at most maxReplicas ({high}) (got {low})"))
    out += _rollout(spec.get("rollout"))
    security = spec.get("security")
    if isinstance(security, dict) and security.get("profile") == "restricted" and security.get("runAsUser") == 0 \
            and not isinstance(security.get("runAsUser"), bool):
        out.append((("security", "runAsUser"), f"{ROOT_RESTRICTED_RULE} (got 0)"))
    out += _disruption_budget(spec)
    secrets = spec.get("imagePullSecrets")
    if isinstance(secrets, list):
        seen = set()
        for i, name in enumerate(secrets):
            if isinstance(name, str) and name in seen:
                out.append((("imagePullSecrets", i), f"{name!r} is given twice"))
            seen.add(name if isinstance(name, str) else None)
    return out


def _ports(spec: dict) -> list[tuple[tuple, str]]:
    """``spec.ports``, one problem per entry, as the API server checks a container's and a
    Service's ports (an IANA service name, ``PORT_NAME_RULE``; no name and no number twice) with
    ``spec.port`` among them: not the name ``http`` (``MAIN_PORT_NAME``, spec.port's), not
    spec.port's number, no number of an entry before it (by name). The numbers' range is the
    schema's."""
    out: list[tuple[tuple, str]] = []
    ports, main = spec.get("ports"), spec.get("port")
    if not isinstance(ports, dict):
        return out
    seen: dict[int, str] = {}
    for name in sorted(ports, key=str):
        number, where = ports[name], ("ports", name)
        if not isinstance(name, str) or len(name) > PORT_NAME_MAX or not PORT_NAME.fullmatch(name) \
                or "--" in name or not any(c.isalpha() for c in name):
            out.append((where, f"the port name must be {PORT_NAME_RULE} (got {_show(name)})"))
        elif name == MAIN_PORT_NAME:
            out.append((where, MAIN_NAME_RULE))
        if isinstance(number, bool) or not isinstance(number, int):
            continue  # the schema's type error
        if number == main and not isinstance(main, bool):
            out.append((where, f"is spec.port's number ({number}): each port number is given once; spec.ports "
                               "holds only the other ports"))
        elif number in seen:
            out.append((where, f"has the number of spec.ports.{seen[number]} ({number}): each port number is "
                               "given once"))
        else:
            seen[number] = name
    return out


def _probes(spec: dict) -> list[tuple[tuple, str]]:
    """Each probe's port, one of the Application's (``podspec.probe_port``): ``spec.port`` or its
    name ``http``, or an entry of ``spec.ports`` by name or number; without ``spec.port`` (a
    worker) an httpGet or tcpSocket probe names a port of ``spec.ports``, and with none of
    those is refused (``WORKER_PROBE_RULE``). A liveness or startup probe's
    ``successThreshold`` is 1 (the API server's rule)."""
    out: list[tuple[tuple, str]] = []
    port = spec.get("port")
    ports = spec.get("ports") if isinstance(spec.get("ports"), dict) else {}
    numbers = {n for n in ports.values() if isinstance(n, int) and not isinstance(n, bool)}
    for probe in podspec.PROBES:
        found = spec.get(probe)
        if not isinstance(found, dict):
            continue
        for how in ("httpGet", "tcpSocket"):
            if how in found and "port" not in spec and not ports:
                out.append(((probe, how), WORKER_PROBE_RULE))
                continue
            given = (found.get(how) or {}).get("port") if isinstance(found.get(how), dict) else None
            if how in found and given is None and "port" not in spec:
                out.append(((probe, how, "port"), f"{WORKER_PROBE_PORT_RULE} ({_known(ports)})"))
            if given is None or isinstance(given, bool):
                continue
            if "port" in spec and given in (port, PROBE_PORT_NAME):
                continue
            if given in ports or given in numbers:
                continue
            main = f"the Application's port ({_show(port)}) or its name {PROBE_PORT_NAME}" if "port" in spec else ""
            known = f"a port of spec.ports by name or number ({_known(ports)})" if ports else ""
            out.append(((probe, how, "port"), f"must be {' or '.join(filter(None, (main, known)))} "
                                              f"(got {_show(given)})"))
        threshold = found.get("successThreshold")
        if probe in ("livenessProbe", "startupProbe") and isinstance(threshold, int) \
                and not isinstance(threshold, bool) and threshold != 1:
            kind = "liveness" if probe == "livenessProbe" else "startup"
            out.append(((probe, "successThreshold"), f"must be 1 for a {kind} probe (got {_show(threshold)})"))
    return out


def _known(ports: dict) -> str:
    """The entries of ``spec.ports`` as a problem lists them: ``metrics 9090, admin 9091``."""
    return ", ".join(f"{name} {_show(number)}" for name, number in sorted(ports.items(), key=lambda i: str(i[0])))


def _container(spec: dict) -> list[tuple[tuple, str]]:
    """The container fields' rules of ``spec`` (the Application's, one schedule's or one
    task's): an image without whitespace, env names, quantities."""
    out: list[tuple[tuple, str]] = []
    image = spec.get("image")
    if isinstance(image, str) and any(c.isspace() for c in image):
        # the API server refuses leading or trailing whitespace; no image reference holds any
        out.append((("image",), f"must be a container image reference with no whitespace (got {_show(image)})"))
    env = spec.get("env")
    if isinstance(env, dict):
        for name in env:
            if not isinstance(name, str) or not re.fullmatch(ENV_NAME_PATTERN, name):
                out.append((("env", name), f"the name must be {PATTERN_WORDS[ENV_NAME_PATTERN]} (got {_show(name)})"))
    return out + _resources(spec.get("resources"))


def _schedules(schedules) -> list[tuple[tuple, str]]:
    """``_container`` of each schedule, under its path."""
    if not isinstance(schedules, dict):
        return []
    return [(("schedules", name) + sub, why) for name, schedule in schedules.items() if isinstance(schedule, dict)
            for sub, why in _container(schedule)]


def _tasks(spec: dict, app_name: str | None) -> list[tuple[tuple, str]]:
    """The rules of ``spec.tasks`` the schema cannot say: each name a DNS label, and with
    ``app_name`` one whose Job name (``<app>-<task>-`` and 8 hex digits, ``job.job_name``) is at
    most 63 characters; a task that runs the Application's own image (no ``image``, or
    ``spec.image``) gives a non-empty ``command`` or ``args`` (else it starts the server, which
    never finishes, and the rollout it gates never comes; Kubernetes reads an empty list as
    none given, so the image's own runs); no schedule of the same name
    (``TASK_SCHEDULE_CLASH``); its image, env names and quantities as the Application's
    (``_container``; ``when``, ``retries`` and ``timeoutSeconds`` are the schema's)."""
    out: list[tuple[tuple, str]] = []
    tasks, schedules = spec.get("tasks"), spec.get("schedules")
    if not isinstance(tasks, dict):
        return out
    for name, task in tasks.items():
        if not isinstance(name, str) or len(name) > job.MAX_NAME or not TASK_NAME.fullmatch(name):
            out.append((("tasks", name), f"the task name must be {TASK_NAME_RULE} (got {_show(name)})"))
        elif app_name is not None and (over := job.name_overflow(app_name, name)):
            out.append((("tasks", name), f"the Job name {job.job_name(app_name, name, 'x' * 8)!r} "
                                         f"(<application>-<task>-<8 hex digits>) would be {job.MAX_NAME + over} "
                                         f"characters, over Kubernetes' {job.MAX_NAME}: shorten the task's name "
                                         f"by {over}"))
        if not isinstance(task, dict):
            continue
        if task.get("image", spec.get("image")) == spec.get("image") and not task.get("command") \
                and not task.get("args"):
            out.append((("tasks", name), "runs the Application's own image with neither command nor args: it "
                                         "would start the server, which never finishes; give command or args"))
        if isinstance(schedules, dict) and name in schedules:
            out.append((("tasks", name), TASK_SCHEDULE_CLASH))
        out += [(("tasks", name) + sub, message) for sub, message in _container(task)]
    return out


def _resources(resources) -> list[tuple[tuple, str]]:
    """Quantities as the API server parses them, not negative, each request at most its limit."""
    out: list[tuple[tuple, str]] = []
    if not isinstance(resources, dict):
        return out
    values: dict[tuple[str, str], object] = {}
    for part in ("requests", "limits"):
        found = resources.get(part)
        if not isinstance(found, dict):
            continue
        for name in ("cpu", "memory"):
            if name not in found or isinstance(found[name], bool) or not isinstance(found[name], (int, str)):
                continue
            try:
                value, _ = quantity.parse(found[name])
            except quantity.Invalid as err:
                out.append(((("resources", part, name)), f"{err} (got {_show(found[name])})"))
                continue
            if value < 0:
                out.append(((("resources", part, name)), f"must not be negative (got {_show(found[name])})"))
                continue
            values[(part, name)] = value
    for name in ("cpu", "memory"):
        request, limit = values.get(("requests", name)), values.get(("limits", name))
        if request is not None and limit is not None and request > limit:
            out.append((("resources", "requests", name), f"must be at most the limit resources.limits.{name} "
                                                         f"({_show(resources['limits'][name])}) (got "
                                                         f"{_show(resources['requests'][name])})"))
    return out


def _files(files) -> list[tuple[tuple, str]]:
    """File paths without ``.`` or ``..`` segments; the contents together at most a ConfigMap's
    1 MiB (counted as the API server counts it: each key and its value, in bytes)."""
    out: list[tuple[tuple, str]] = []
    if not isinstance(files, dict):
        return out
    size = 0
    for path, file in files.items():
        if not isinstance(path, str) or not re.fullmatch(FILE_PATH_PATTERN, path):
            out.append((("files", path), f"the path must be {PATTERN_WORDS[FILE_PATH_PATTERN]} (got {_show(path)})"))
        elif any(part in (".", "..") for part in path.split("/")):
            out.append((("files", path), "the path must not hold a . or .. segment"))
        if isinstance(path, str) and isinstance(file, dict) and isinstance(file.get("content"), str):
            size += len(configmap.key(path).encode()) + len(file["content"].encode())
    if size > configmap.MAX_BYTES:
        out.append((("files",), f"the contents of the files hold {size} bytes (with their keys): a ConfigMap holds "
                                f"at most {configmap.MAX_BYTES} bytes (1 MiB)"))
    return out


def _maps(spec: dict) -> list[tuple[tuple, str]]:
    """Keys and values of podLabels, podAnnotations and ingress.annotations as the API server
    checks labels and annotations; pod labels never the agent's own."""
    out: list[tuple[tuple, str]] = []
    ingress = spec.get("ingress")
    maps = [(("podLabels",), spec.get("podLabels"), True), (("podAnnotations",), spec.get("podAnnotations"), False),
            (("ingress", "annotations"), ingress.get("annotations") if isinstance(ingress, dict) else None, False)]
    ours = render.ownership_labels("x")
    for where, mapping, labels in maps:
        if not isinstance(mapping, dict):
            continue
        for key, value in mapping.items():
            if labels and key in ours:
                out.append((where + (key,), "is one of the agent's own pod labels (its selector and ownership: "
                                            f"{', '.join(sorted(ours))}) and cannot be set"))
            elif not qualified_name_ok(str(key)):
                out.append((where + (key,), f"key {key!r} {KEY_RULE}"))
            if labels and isinstance(value, str) and not label_value_ok(value):
                out.append((where + (key,), f"value {value!r} {VALUE_RULE}"))
    return out


INT32_RULE = f"must be at most {MAX_INT32}"
"""A number the API server stores as int32 (``intstr.IntOrString``: a rolling update's and a
PodDisruptionBudget's numbers) and refuses above it."""


def _rollout(rollout) -> list[tuple[tuple, str]]:
    """maxSurge and maxUnavailable: a number >= 0 or a percentage (maxUnavailable at most
    100%), not both 0, as the API server checks a rolling update; failAfterSeconds at most
    progressDeadlineSeconds (default 600): a grace past the deadline would never end first."""
    out: list[tuple[tuple, str]] = []
    if not isinstance(rollout, dict):
        return out
    zero = []
    for name in ("maxSurge", "maxUnavailable"):
        value = rollout.get(name)
        if value is None or isinstance(value, bool):
            continue
        if isinstance(value, int):
            if value < 0:
                out.append((("rollout", name), f"must be a number >= 0 or a percentage such as 25% (got {value})"))
            elif value > MAX_INT32:
                out.append((("rollout", name), f"{INT32_RULE} (got {value})"))
            zero.append(value == 0)
        elif isinstance(value, str):
            if not PERCENT.fullmatch(value):
                out.append((("rollout", name), f"must be a number >= 0 or a percentage such as 25% "
                                               f"(got {_show(value)})"))
                continue
            if name == "maxUnavailable" and int(value[:-1]) > 100:
                out.append((("rollout", name), f"must be at most 100% (got {_show(value)})"))
            zero.append(int(value[:-1]) == 0)
    if zero == [True, True]:
        out.append((("rollout", "maxUnavailable"), "must not be 0 when maxSurge is 0: no pod could be replaced"))
    fail, deadline = rollout.get("failAfterSeconds"), rollout.get("progressDeadlineSeconds", PROGRESS_DEADLINE)
    if _whole(fail) and _whole(deadline) and fail > deadline:
        out.append((("rollout", "failAfterSeconds"), f"must be at most progressDeadlineSeconds ({deadline}): past "
                                                     f"the deadline the rollout is Degraded anyway (got {fail})"))
    return out


PROGRESS_DEADLINE = 600
"""A Deployment's ``progressDeadlineSeconds`` when the spec sets none (Kubernetes' default)."""


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _disruption_budget(spec: dict) -> list[tuple[tuple, str]]:
    """``disruptionBudget``'s numbers, as the API server checks a PodDisruptionBudget (a number
    >= 0 or a percentage of at most 100%), and what would make every eviction wait (the agent is
    stricter): ``maxUnavailable`` 0 or 0%, ``minAvailable`` 100%, or ``minAvailable`` at or above
    a fixed ``replicas`` (given, at least 1, no autoscaler). Exactly one of the two is the
    schema's ``oneOf``."""
    out: list[tuple[tuple, str]] = []
    budget = spec.get("disruptionBudget")
    if not isinstance(budget, dict):
        return out
    for name in ("minAvailable", "maxUnavailable"):
        value = budget.get(name)
        where = ("disruptionBudget", name)
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            continue  # absent, or the schema's type error
        if (isinstance(value, int) and value < 0) or (isinstance(value, str) and not PERCENT.fullmatch(value)):
            out.append((where, f"must be a number >= 0 or a percentage such as 25% (got {_show(value)})"))
            continue
        percent, number = isinstance(value, str), int(value[:-1]) if isinstance(value, str) else value
        replicas = _fixed(spec)
        if not percent and number > MAX_INT32:
            out.append((where, f"{INT32_RULE} (got {value})"))
        elif percent and number > 100:
            out.append((where, f"must be at most 100% (got {_show(value)})"))
        elif name == "maxUnavailable" and number == 0:
            out.append((where, f"must not be 0: {DRAIN_HANGS}; give at least 1 (got {_show(value)})"))
        elif name == "minAvailable" and percent and number == 100:
            out.append((where, f"must be below 100%: {DRAIN_HANGS} (got {_show(value)})"))
        elif name == "minAvailable" and not percent and replicas is not None and number >= replicas:
            out.append((where, f"must be below replicas ({replicas}): {DRAIN_HANGS} (got {value})"))
    return out


def _fixed(spec: dict) -> int | None:
    """``spec.replicas`` when it is fixed: an integer of at least 1, without an autoscaler."""
    replicas = spec.get("replicas")
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 1 or "autoscaling" in spec:
        return None
    return replicas
