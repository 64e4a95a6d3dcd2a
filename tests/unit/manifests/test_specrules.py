"""specrules: every new field of the spec refused by name, in words, as (path, message); the same
spec checked live (unknown fields allowed)."""

import pytest

from agent.kinds import configmap
from agent.manifests import podrules, specrules
from agent.manifests.metadata import KEY_RULE, VALUE_RULE

BASE = {"image": "nginx:1", "port": 8080}


def problems(**fields):
    return specrules.problems({**BASE, **fields})


SUBDOMAIN = specrules.SUBDOMAIN_RULE


@pytest.mark.parametrize("fields, expected", [
    ({}, []),
    ({"replicas": 2, "autoscaling": {"maxReplicas": 3, "targetCPUUtilizationPercentage": 50}},
     [(("replicas",), "must not be given together with spec.autoscaling: the autoscaler owns the replicas; "
                      "remove one of the two")]),
    ({"command": "run"}, [(("command",), 'must be a list of strings (got "run")')]),
    ({"args": ["a", 1]}, [(("args", 1), "must be a string (got 1)")]),
    ({"env": {"A": "1", "B": {"secretKeyRef": {"name": "db", "key": "url"}},
              "C": {"configMapKeyRef": {"name": "cfg", "key": "k.1"}}}}, []),
    ({"env": {"A": 1}}, [(("env", "A"), f"{specrules.ENV_VALUE_RULE} (got 1)")]),
    ({"env": {"A": None}}, [(("env", "A"), f"{specrules.ENV_VALUE_RULE} (got null)")]),
    ({"env": {"A": {}}}, [(("env", "A"), specrules.ENV_VALUE_RULE)]),
    ({"env": {"A": {"secretKeyRef": {"name": "db", "key": "k"}, "configMapKeyRef": {"name": "c", "key": "k"}}}},
     [(("env", "A"), specrules.ENV_VALUE_RULE)]),
    ({"env": {"A": {"secretKeyRef": {"name": "db"}}}}, [(("env", "A", "secretKeyRef", "key"), "is required")]),
    ({"env": {"A": {"secretKeyRef": {"name": "DB", "key": "k"}}}},
     [(("env", "A", "secretKeyRef", "name"), f'must be {SUBDOMAIN} (got "DB")')]),
    ({"env": {"A": {"secretKeyRef": {"name": "db", "key": "a/b"}}}},
     [(("env", "A", "secretKeyRef", "key"), "must be a key of at most 253 letters, digits, '-', '_' and '.' "
                                             '(got "a/b")')]),
    ({"env": {"A": {"fieldRef": {"fieldPath": "x"}}}},
     [(("env", "A", "fieldRef"), "unknown field (allowed: configMapKeyRef, secretKeyRef)")]),
    ({"env": {"1A": "x", "a.b": "y", "A-B": "z", "_ok": "w"}},
     [(("env", "1A"), "the name must be a C identifier: letters, digits and '_', not starting with a digit "
                      '(got "1A")'),
      (("env", "A-B"), "the name must be a C identifier: letters, digits and '_', not starting with a digit "
                       '(got "A-B")'),
      (("env", "a.b"), "the name must be a C identifier: letters, digits and '_', not starting with a digit "
                       '(got "a.b")')]),
    ({"envFrom": [{"secretRef": {"name": "s"}}, {"configMapRef": {"name": "c"}, "prefix": "C_"}]}, []),
    ({"envFrom": [{"secretRef": {"name": "s"}, "configMapRef": {"name": "c"}}]},
     [(("envFrom", 0), "must have exactly one of secretRef, configMapRef (got secretRef, configMapRef)")]),
    ({"envFrom": [{"prefix": "A"}]}, [(("envFrom", 0), "must have exactly one of secretRef, configMapRef")]),
    ({"envFrom": [{"secret": "s"}]}, [(("envFrom", 0), "must have exactly one of secretRef, configMapRef"),
                                      (("envFrom", 0, "secret"), "unknown field (did you mean spec.envFrom.0."
                                                                 "secretRef?) (allowed: configMapRef, prefix, "
                                                                 "secretRef)")]),
    ({"resources": {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"cpu": 1, "memory": "128Mi"}}}, []),
    ({"resources": {"requests": {"cpu": "1x"}}},
     [(("resources", "requests", "cpu"), "must be a quantity such as 500m, 1.5, 128Mi or 1Gi: a number, then one "
                                         "of the suffixes n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an "
                                         'exponent e3 (got "1x")')]),
    ({"resources": {"requests": {"cpu": 1.5}}},
     [(("resources", "requests", "cpu"), 'must be a quantity: a whole number, or a string such as "0.5" or 500m (quote a fraction) (got 1.5)')]),
    ({"resources": {"requests": {"cpu": "-1"}}},
     [(("resources", "requests", "cpu"), 'must not be negative (got "-1")')]),
    ({"resources": {"requests": {"memory": "2Gi"}, "limits": {"memory": "1Gi"}}},
     [(("resources", "requests", "memory"), 'must be at most the limit resources.limits.memory ("1Gi") '
                                            '(got "2Gi")')]),
    ({"resources": {"requests": {"cpu": "1000m"}, "limits": {"cpu": 1}}}, []),
    ({"resources": {"request": {"cpu": 1}}},
     [(("resources", "request"), "unknown field (did you mean spec.resources.requests?) (allowed: limits, "
                                 "requests)")]),
    ({"resources": {"limits": {"gpu": 1}}},
     [(("resources", "limits", "gpu"), "unknown field (did you mean spec.resources.limits.cpu?) (allowed: cpu, "
                                       "memory)")]),
    ({"resources": {"limits": {"memory": "1e50"}}},
     [(("resources", "limits", "memory"), f'must be at most {2 ** 63 - 1} (got "1e50")')]),
    ({"readinessProbe": {"httpGet": {"path": "/healthz"}, "periodSeconds": 5}}, []),
    ({"readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}}}, []),
    ({"readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}}}, []),
    ({"readinessProbe": {"httpGet": {"port": 9090}}},
     [(("readinessProbe", "httpGet", "port"), "must be the Application's port (8080) or its name http (got 9090)")]),
    ({"livenessProbe": {"tcpSocket": {"port": "metrics"}}},
     [(("livenessProbe", "tcpSocket", "port"), "must be the Application's port (8080) or its name http "
                                               '(got "metrics")')]),
    ({"readinessProbe": {"httpGet": {"path": "healthz"}}},
     [(("readinessProbe", "httpGet", "path"), "must be a path starting with '/' (got \"healthz\")")]),
    ({"readinessProbe": "x"}, [(("readinessProbe",), 'must be a mapping (got "x")')]),
    ({"autoscaling": 3}, [(("autoscaling",), "must be a mapping (got 3)")]),
    ({"envFrom": ["common"]}, [(("envFrom", 0), 'must be a mapping (got "common")')]),
    ({"files": {"/a": "text"}}, [(("files", "/a"), 'must be a mapping (got "text")')]),
    ({"readinessProbe": {"periodSeconds": 5}},
     [(("readinessProbe",), "must have exactly one of httpGet, tcpSocket, exec")]),
    ({"readinessProbe": {"exec": {"command": ["true"]}, "tcpSocket": {}}},
     [(("readinessProbe",), "must have exactly one of httpGet, tcpSocket, exec (got tcpSocket, exec)")]),
    ({"readinessProbe": {"exec": {"command": []}}},
     [(("readinessProbe", "exec", "command"), "must have at least 1 entry")]),
    ({"livenessProbe": {"exec": {"command": ["true"]}, "successThreshold": 2}},
     [(("livenessProbe", "successThreshold"), "must be 1 for a liveness probe (got 2)")]),
    ({"readinessProbe": {"exec": {"command": ["true"]}, "successThreshold": 2}}, []),
    ({"readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 0}},
     [(("readinessProbe", "periodSeconds"), "must be an integer between 1 and 2147483647 (got 0)")]),
    ({"files": {"/etc/app/config.yaml": {"content": "a: 1\n"}, "/etc/tls/key.pem": {"secretRef": {"name": "tls",
                                                                                                    "key": "tls.key"}},
                "/etc/other": {"configMapRef": {"name": "other", "key": "x"}}}}, []),
    ({"files": {"etc/app": {"content": "x"}}},
     [(("files", "etc/app"), "the path must be an absolute path such as /etc/app/config.yaml (no empty segment, "
                             'no trailing \'/\') (got "etc/app")')]),
    ({"files": {"/etc//app/": {"content": "x"}}},
     [(("files", "/etc//app/"), "the path must be an absolute path such as /etc/app/config.yaml (no empty "
                                'segment, no trailing \'/\') (got "/etc//app/")')]),
    ({"files": {"/etc/../passwd": {"content": "x"}}},
     [(("files", "/etc/../passwd"), "the path must not hold a . or .. segment")]),
    ({"files": {"/etc/app": {"content": "x", "secretRef": {"name": "s", "key": "k"}}}},
     [(("files", "/etc/app"), "must have exactly one of content, secretRef, configMapRef (got content, "
                              "secretRef)")]),
    ({"files": {"/etc/app": {"text": "x"}}},
     [(("files", "/etc/app"), "must have exactly one of content, secretRef, configMapRef"),
      (("files", "/etc/app", "text"), "unknown field (allowed: configMapRef, content, secretRef)")]),
    ({"serviceAccountName": "Web"}, [(("serviceAccountName",), f'must be {SUBDOMAIN} (got "Web")')]),
    ({"imagePullSecrets": ["regcred", "regcred"]}, [(("imagePullSecrets", 1), "'regcred' is given twice")]),
    ({"imagePullSecrets": ["Reg"]}, [(("imagePullSecrets", 0), f'must be {SUBDOMAIN} (got "Reg")')]),
    ({"podLabels": {"tier": "web", "app.kubernetes.io/instance": "x"}},
     [(("podLabels", "app.kubernetes.io/instance"), "is one of the agent's own pod labels (its selector and "
                                                     "ownership: app.kubernetes.io/instance, app.kubernetes.io/"
                                                     "managed-by, app.kubernetes.io/name, heumsi.github.io/"
                                                     "application) and cannot be set")]),
    ({"podLabels": {"tier": "a b"}}, [(("podLabels", "tier"), "value 'a b' must be at most 63 letters, digits, "
                                                              "'-', '_' or '.', starting and ending with a letter "
                                                              "or digit (or empty)")]),
    ({"podAnnotations": {"bad key": "x"}},
     [(("podAnnotations", "bad key"), "key 'bad key' must be a qualified name: an optional DNS-1123 subdomain "
                                      "prefix (at most 253 characters) and '/', then a name of at most 63 letters, "
                                      "digits, '-', '_' or '.' starting and ending with a letter or digit")]),
    ({"podAnnotations": {"prometheus.io/scrape": 1}},
     [(("podAnnotations", "prometheus.io/scrape"), "must be a string (got 1)")]),
    ({"rollout": {"maxSurge": "25%", "maxUnavailable": 0, "progressDeadlineSeconds": 120}}, []),
    ({"rollout": {"maxSurge": 0, "maxUnavailable": "0%"}},
     [(("rollout", "maxUnavailable"), "must not be 0 when maxSurge is 0: no pod could be replaced")]),
    ({"rollout": {"maxSurge": 2147483648}}, [(("rollout", "maxSurge"), "must be at most 2147483647 (got 2147483648)")]),
    ({"rollout": {"maxUnavailable": 2147483647}}, []),
    ({"rollout": {"maxSurge": "lots"}},
     [(("rollout", "maxSurge"), 'must be a number >= 0 or a percentage such as 25% (got "lots")')]),
    ({"rollout": {"maxSurge": -1}},
     [(("rollout", "maxSurge"), "must be a number >= 0 or a percentage such as 25% (got -1)")]),
    ({"rollout": {"maxUnavailable": "150%"}}, [(("rollout", "maxUnavailable"), 'must be at most 100% (got "150%")')]),
    ({"rollout": {"failAfterSeconds": 60, "progressDeadlineSeconds": 60}}, []),
    ({"rollout": {"failAfterSeconds": 600}}, []),
    ({"rollout": {"failAfterSeconds": 90, "progressDeadlineSeconds": 60}},
     [(("rollout", "failAfterSeconds"), "must be at most progressDeadlineSeconds (60): past the deadline the "
                                        "rollout is Degraded anyway (got 90)")]),
    ({"rollout": {"failAfterSeconds": 601}},
     [(("rollout", "failAfterSeconds"), "must be at most progressDeadlineSeconds (600): past the deadline the "
                                        "rollout is Degraded anyway (got 601)")]),
    ({"rollout": {"failAfterSeconds": 5}},
     [(("rollout", "failAfterSeconds"), "must be an integer between 10 and 2147483647 (got 5)")]),
    ({"rollout": {"progressDeadlineSeconds": 0}},
     [(("rollout", "progressDeadlineSeconds"), "must be an integer between 1 and 2147483647 (got 0)")]),
    ({"ingress": {"host": "shop.example.com", "path": "/api", "pathType": "Exact", "className": "nginx",
                  "tlsSecretName": "shop-tls", "annotations": {"a.io/b": "c"}}}, []),
    ({"ingress": {}}, []),
    ({"ingress": {"host": "*.example.com"}}, []),
    ({"ingress": {"host": "Shop.example.com"}},
     [(("ingress", "host"), f'must be a host name, {SUBDOMAIN}, optionally starting with \'*.\' '
                            '(got "Shop.example.com")')]),
    ({"ingress": {"pathType": "Regex"}},
     [(("ingress", "pathType"), 'must be one of Prefix, Exact, ImplementationSpecific (got "Regex")')]),
    ({"ingress": {"path": "/a//b"}},
     [(("ingress", "path"), "must not hold //, /./, /../ or %2f, nor end in /. or /.., for pathType Prefix or "
                            'Exact (got "/a//b")')]),
    ({"ingress": {"path": "/a//b", "pathType": "ImplementationSpecific"}}, []),
    ({"ingress": {"path": "/a/.."}},
     [(("ingress", "path"), "must not hold //, /./, /../ or %2f, nor end in /. or /.., for pathType Prefix or "
                            'Exact (got "/a/..")')]),
    ({"ingress": {"annotations": {"x": 1}}}, [(("ingress", "annotations", "x"), "must be a string (got 1)")]),
    ({"autoscaling": {"maxReplicas": 5, "minReplicas": 2, "targetMemoryUtilizationPercentage": 80}}, []),
    ({"autoscaling": {"maxReplicas": 5}},
     [(("autoscaling",), "needs targetCPUUtilizationPercentage or targetMemoryUtilizationPercentage (or both)")]),
    ({"autoscaling": {"targetCPUUtilizationPercentage": 50}}, [(("autoscaling", "maxReplicas"), "is required")]),
    ({"autoscaling": {"maxReplicas": 2, "minReplicas": 3, "targetCPUUtilizationPercentage": 50}},
     [(("autoscaling", "minReplicas"), "must be at most maxReplicas (2) (got 3)")]),
    ({"autoscaling": {"maxReplicas": 0, "targetCPUUtilizationPercentage": 50}},
     [(("autoscaling", "maxReplicas"), "must be an integer between 1 and 2147483647 (got 0)")]),
])
def test_problems(fields, expected):
    assert problems(**fields) == expected


@pytest.mark.parametrize("fields, expected", [
    ({}, []),
    ({"readinessProbe": {"exec": {"command": ["true"]}}, "livenessProbe": {"exec": {"command": ["true"]}}}, []),
    ({"ingress": {"host": "a.io"}}, [(("ingress",), specrules.WORKER_INGRESS_RULE)]),
    ({"ingress": {}}, [(("ingress",), specrules.WORKER_INGRESS_RULE)]),
    ({"readinessProbe": {"httpGet": {}}}, [(("readinessProbe", "httpGet"), specrules.WORKER_PROBE_RULE)]),
    ({"readinessProbe": {"httpGet": {"port": 8080}}}, [(("readinessProbe", "httpGet"), specrules.WORKER_PROBE_RULE)]),
    ({"livenessProbe": {"tcpSocket": {"port": "http"}}},
     [(("livenessProbe", "tcpSocket"), specrules.WORKER_PROBE_RULE)]),
])
def test_a_worker_has_no_ingress_and_no_probe_of_a_port(fields, expected):
    spec = {"image": "worker:1", **fields}
    assert specrules.problems(spec) == specrules.live_problems(spec) == expected
    assert specrules.problems({**spec, "port": 8080}) == []  # with a port, each is fine


def test_image_whitespace_and_top_level_wording_are_kept():
    assert specrules.problems({"image": "a b", "port": 0}) == [
        (("image",), 'must be a container image reference with no whitespace (got "a b")'),
        (("port",), "must be an integer between 1 and 65535 (got 0)")]
    assert specrules.problems([]) == [((), "must be a mapping, not a list")]


def test_files_together_at_most_a_configmaps_size():
    path = "/etc/big"
    size = configmap.MAX_BYTES - len(configmap.key(path))
    assert problems(files={path: {"content": "x" * size}}) == []
    found = problems(files={path: {"content": "x" * (size + 1)}})
    assert found == [(("files",), f"the contents of the files hold {configmap.MAX_BYTES + 1} bytes (with their "
                                  f"keys): a ConfigMap holds at most {configmap.MAX_BYTES} bytes (1 MiB)")]


def test_the_live_check_allows_unknown_fields_but_not_wrong_values():
    assert specrules.live_problems({**BASE, "unknown": 1, "env": {"A": "x"}}) == []
    assert specrules.live_problems({**BASE, "env": {"A": 5}}) == [(("env", "A"), f"{specrules.ENV_VALUE_RULE} (got 5)")]
    assert specrules.problems({**BASE, "unknown": 1})[0][1].startswith("unknown field")


@pytest.mark.parametrize("schema, words", [
    ({"type": "boolean"}, "true or false"),
    ({"type": "integer", "minimum": 1, "maximum": 9}, "an integer between 1 and 9"),
    ({"type": "integer", "minimum": 1}, "an integer >= 1"),
    ({"type": "integer"}, "an integer"),
    ({"type": "string"}, "a string"),
    ({"type": "string", "minLength": 1}, "a non-empty string"),
    ({"type": "string", "minLength": 1, "maxLength": 9}, "a string of 1 to 9 characters"),
    ({"type": "array", "items": {"type": "string"}}, "a list of strings"),
    ({"type": "array", "items": {"type": "object"}}, "a list"),
    ({"type": "object"}, "a mapping"),
    ({"type": "object", "additionalProperties": {"type": "string"}}, "a mapping of strings to strings"),
    ({"type": ["integer", "string"]}, "a whole number or a string"),
    ({"type": "string", "enum": ["A", "B"]}, "one of A, B"),
])
def test_rule_words(schema, words):
    assert specrules.rule(schema) == words


TASK_NAME = specrules.TASK_NAME_RULE
OWN_IMAGE = ("runs the Application's own image with neither command nor args: it would start the server, which "
             "never finishes; give command or args")


@pytest.mark.parametrize("tasks, expected", [
    ({}, []),
    ({"migrate": {"args": ["migrate"]}, "seed": {"command": ["/seed"], "when": "BeforeRollout"},
      "warm": {"image": "curl:8", "when": "AfterRollout", "retries": 0, "timeoutSeconds": 1},
      "m2": {"image": "other:1", "retries": 10, "timeoutSeconds": 86400, "env": {"A": "1"},
             "resources": {"limits": {"cpu": "1"}}}}, []),
    # the Application's own image (none given, or the same) and nothing to run but the server
    ({"migrate": {}}, [(("tasks", "migrate"), OWN_IMAGE)]),
    ({"migrate": {"image": "nginx:1", "env": {"A": "1"}}}, [(("tasks", "migrate"), OWN_IMAGE)]),
    ({"migrate": {"image": "nginx:2"}}, []),
    ({"migrate": {"args": [], "command": []}}, [(("tasks", "migrate"), OWN_IMAGE)]),  # Kubernetes: none given
    ({"migrate": {"args": [""]}}, []),
    # names: DNS labels
    ({"Migrate": {"args": ["x"]}}, [(("tasks", "Migrate"), f'the task name must be {TASK_NAME} (got "Migrate")')]),
    ({"db_migrate": {"args": ["x"]}},
     [(("tasks", "db_migrate"), f'the task name must be {TASK_NAME} (got "db_migrate")')]),
    ({"-x": {"args": ["x"]}}, [(("tasks", "-x"), f'the task name must be {TASK_NAME} (got "-x")')]),
    ({"x-": {"args": ["x"]}}, [(("tasks", "x-"), f'the task name must be {TASK_NAME} (got "x-")')]),
    ({"a.b": {"args": ["x"]}}, [(("tasks", "a.b"), f'the task name must be {TASK_NAME} (got "a.b")')]),
    ({"a" * 64: {"args": ["x"]}}, [(("tasks", "a" * 64), f'the task name must be {TASK_NAME} (got "{"a" * 64}")')]),
    ({"a" * 63: {"args": ["x"]}}, []),  # no Application name given: its Job name is not checked
    ({"1-a": {"args": ["x"]}}, []),
    # when, retries, timeoutSeconds: the schema's
    ({"m": {"args": ["x"], "when": "Later"}},
     [(("tasks", "m", "when"), 'must be one of BeforeRollout, AfterRollout (got "Later")')]),
    ({"m": {"args": ["x"], "retries": 11}}, [(("tasks", "m", "retries"), "must be an integer between 0 and 10 (got 11)")]),
    ({"m": {"args": ["x"], "retries": -1}}, [(("tasks", "m", "retries"), "must be an integer between 0 and 10 (got -1)")]),
    ({"m": {"args": ["x"], "timeoutSeconds": 0}},
     [(("tasks", "m", "timeoutSeconds"), "must be an integer between 1 and 86400 (got 0)")]),
    ({"m": {"args": ["x"], "timeoutSeconds": 86401}},
     [(("tasks", "m", "timeoutSeconds"), "must be an integer between 1 and 86400 (got 86401)")]),
    ({"m": {"args": ["x"], "timeoutSeconds": 1.5}},
     [(("tasks", "m", "timeoutSeconds"), "must be an integer between 1 and 86400 (got 1.5)")]),
    # the task's fields as the Application's
    ({"m": {"args": ["x"], "env": {"1A": "x", "B": 2, "C": {}}}},
     [(("tasks", "m", "env", "1A"), "the name must be a C identifier: letters, digits and '_', not starting with a "
                                    'digit (got "1A")'),
      (("tasks", "m", "env", "B"), f"{specrules.ENV_VALUE_RULE} (got 2)"),
      (("tasks", "m", "env", "C"), specrules.ENV_VALUE_RULE)]),
    ({"m": {"args": ["x"], "env": {"S": {"secretKeyRef": {"name": "db"}}}}},
     [(("tasks", "m", "env", "S", "secretKeyRef", "key"), "is required")]),
    ({"m": {"args": ["x"], "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}},
     [(("tasks", "m", "resources", "requests", "cpu"), 'must be at most the limit resources.limits.cpu ("1") '
                                                       '(got "2")')]),
    ({"m": {"args": ["x"], "image": "a b"}},
     [(("tasks", "m", "image"), 'must be a container image reference with no whitespace (got "a b")')]),
    ({"m": {"args": ["x"], "retry": 1}},
     [(("tasks", "m", "retry"), "unknown field (did you mean spec.tasks.m.retries?) (allowed: args, command, env, "
                                "image, resources, retries, timeoutSeconds, when)")]),
    ({"m": {"command": "migrate"}}, [(("tasks", "m", "command"), 'must be a list of strings (got "migrate")')]),
    ({"m": "migrate"}, [(("tasks", "m"), 'must be a mapping (got "migrate")')]),
    ({"a": "migrate", "b": {}}, [(("tasks", "a"), 'must be a mapping (got "migrate")'), (("tasks", "b"), OWN_IMAGE)]),
    ({"m": {"args": ["x"], "env": {f"V{i}": "x" for i in range(1025)}}},
     [(("tasks", "m", "env"), "must have at most 1024 entries (got 1025)")]),
    ({f"t{i}": {"args": ["x"]} for i in range(17)}, [(("tasks",), "must have at most 16 entries (got 17)")]),
])
def test_task_problems(tasks, expected):
    assert problems(tasks=tasks) == expected


def test_a_valid_task_is_accepted_in_validate_and_live():
    spec = {**BASE, "tasks": {"migrate": {"args": ["migrate"]}}}
    assert specrules.problems(spec) == specrules.live_problems(spec, "shop") == []
    assert specrules.problems({**BASE, "tasks": []}) == [(("tasks",), "must be a mapping (got [])")]


def test_a_task_and_a_schedule_of_one_name_are_refused_at_the_task():
    """Their Jobs could have one name: a schedule's <application>-<name>-<minutes>, a task's
    <application>-<name>-<8 hex digits> (which may all be decimal)."""
    spec = {**BASE, "tasks": {"report": {"args": ["x"]}, "migrate": {"args": ["m"]}},
            "schedules": {"report": {"schedule": "@daily"}, "cleanup": {"schedule": "@hourly"}}}
    assert specrules.problems(spec) == specrules.live_problems(spec) == [
        (("tasks", "report"), specrules.TASK_SCHEDULE_CLASH)]
    assert specrules.TASK_SCHEDULE_CLASH.startswith("a schedule has this name too")
    assert specrules.problems({**spec, "schedules": {"cleanup": {"schedule": "@hourly"}}}) == []


def test_too_many_env_entries_are_counted_not_read_as_one_value():
    assert problems(env={f"V{i}": "x" for i in range(1025)}) == [(("env",), "must have at most 1024 entries (got 1025)")]


def test_a_tasks_job_name_is_at_most_63_characters_with_the_applications_name():
    spec = {**BASE, "tasks": {"b" * 27: {"args": ["x"]}, "c" * 28: {"args": ["x"]}}}
    assert specrules.problems(spec, "a" * 26) == specrules.live_problems(spec, "a" * 26) == [
        (("tasks", "c" * 28), f"the Job name '{'a' * 26}-{'c' * 28}-xxxxxxxx' (<application>-<task>-<8 hex digits>) "
                              "would be 64 characters, over Kubernetes' 63: shorten the task's name by 1")]
    assert specrules.problems(spec) == specrules.problems(spec, "a" * 25) == []
    # a name that is no DNS label is said once, not again for its length
    assert [m for _, m in specrules.problems({**BASE, "tasks": {"B" * 60: {"args": ["x"]}}}, "a")] == [
        f'the task name must be {TASK_NAME} (got "{"B" * 60}")']


@pytest.mark.parametrize("security, expected", [
    ({"profile": "restricted", "runAsUser": 10001, "runAsGroup": 10001, "fsGroup": 10001,
      "readOnlyRootFilesystem": True, "addCapabilities": ["NET_BIND_SERVICE"]}, []),
    ({"profile": "none", "runAsUser": 0}, []),  # root is allowed where the namespace allows it
    ({"runAsUser": 0}, []),  # no profile: validate cannot know the agent's default (the pass checks it)
    ({"profile": "restricted", "runAsUser": 0},
     [(("security", "runAsUser"), f"{specrules.ROOT_RESTRICTED_RULE} (got 0)")]),
    ({"addCapabilities": ["SYS_ADMIN"]},
     [(("security", "addCapabilities", 0), f'{specrules.CAPABILITY_RULE} (got "SYS_ADMIN")')]),
    ({"profile": "restricted", "addCapabilities": ["NET_BIND_SERVICE", "NET_RAW"]},
     [(("security", "addCapabilities"), "must have at most 1 entries (got 2)"),
      (("security", "addCapabilities", 1), f'{specrules.CAPABILITY_RULE} (got "NET_RAW")')]),
    ({"profile": "baseline"}, [(("security", "profile"), 'must be one of restricted, none (got "baseline")')]),
    ({"runAsUser": -1}, [(("security", "runAsUser"), "must be an integer between 0 and 2147483647 (got -1)")]),
    ({"runAsUser": True}, [(("security", "runAsUser"), "must be an integer between 0 and 2147483647 (got true)")]),
    ({"readOnlyRootFilesystem": "yes"}, [(("security", "readOnlyRootFilesystem"), 'must be true or false (got "yes")')]),
    ({"privileged": True}, [(("security", "privileged"), "unknown field (allowed: addCapabilities, fsGroup, profile, "
                                                       "readOnlyRootFilesystem, runAsGroup, runAsUser)")]),
])
def test_security(security, expected):
    assert problems(security=security) == expected
    assert specrules.live_problems({**BASE, "security": security}) == [
        p for p in expected if "unknown field" not in p[1]]


def test_root_is_refused_under_the_agents_default_profile_in_the_pass():
    from agent.kinds import podspec
    spec = {**BASE, "security": {"runAsUser": 0}}
    assert specrules.live_problems(podspec.with_default_profile(spec, "restricted")) == [
        (("security", "runAsUser"), f"{specrules.ROOT_RESTRICTED_RULE} (got 0)")]


DRAIN = specrules.DRAIN_HANGS


@pytest.mark.parametrize("fields, expected", [
    ({"disruptionBudget": {"maxUnavailable": 1}}, []),
    ({"disruptionBudget": {"maxUnavailable": "25%"}}, []),
    ({"disruptionBudget": {"maxUnavailable": "100%"}}, []),
    ({"replicas": 3, "disruptionBudget": {"minAvailable": 2}}, []),
    ({"replicas": 3, "disruptionBudget": {"minAvailable": "99%"}}, []),
    ({"disruptionBudget": {"minAvailable": 0}}, []),
    # replicas not fixed: nobody's (omitted), scaled down to 0, or the autoscaler's
    ({"disruptionBudget": {"minAvailable": 5}}, []),
    ({"replicas": 0, "disruptionBudget": {"minAvailable": 1}}, []),
    ({"autoscaling": {"minReplicas": 2, "maxReplicas": 5, "targetCPUUtilizationPercentage": 70},
      "disruptionBudget": {"minAvailable": 2}}, []),
    # both or neither
    ({"disruptionBudget": {"minAvailable": 1, "maxUnavailable": 1}},
     [(("disruptionBudget",), "must have exactly one of minAvailable, maxUnavailable (got minAvailable, "
                              "maxUnavailable)")]),
    ({"disruptionBudget": {}}, [(("disruptionBudget",), "must have exactly one of minAvailable, maxUnavailable")]),
    ({"disruptionBudget": {"max": 1}},
     [(("disruptionBudget",), "must have exactly one of minAvailable, maxUnavailable"),
      (("disruptionBudget", "max"), "unknown field (allowed: maxUnavailable, minAvailable)")]),
    ({"disruptionBudget": 1}, [(("disruptionBudget",), "must be a mapping (got 1)")]),
    # a budget that lets no eviction through: a drain would hang
    ({"disruptionBudget": {"maxUnavailable": 0}},
     [(("disruptionBudget", "maxUnavailable"), f"must not be 0: {DRAIN}; give at least 1 (got 0)")]),
    ({"disruptionBudget": {"maxUnavailable": "0%"}},
     [(("disruptionBudget", "maxUnavailable"), f'must not be 0: {DRAIN}; give at least 1 (got "0%")')]),
    ({"replicas": 2, "disruptionBudget": {"minAvailable": 2}},
     [(("disruptionBudget", "minAvailable"), f"must be below replicas (2): {DRAIN} (got 2)")]),
    ({"replicas": 1, "disruptionBudget": {"minAvailable": 3}},
     [(("disruptionBudget", "minAvailable"), f"must be below replicas (1): {DRAIN} (got 3)")]),
    ({"disruptionBudget": {"minAvailable": "100%"}},
     [(("disruptionBudget", "minAvailable"), f'must be below 100%: {DRAIN} (got "100%")')]),
    # numbers as the API server reads a PodDisruptionBudget
    ({"disruptionBudget": {"maxUnavailable": -1}},
     [(("disruptionBudget", "maxUnavailable"), "must be a number >= 0 or a percentage such as 25% (got -1)")]),
    ({"disruptionBudget": {"minAvailable": "half"}},
     [(("disruptionBudget", "minAvailable"), 'must be a number >= 0 or a percentage such as 25% (got "half")')]),
    ({"disruptionBudget": {"minAvailable": "1"}},
     [(("disruptionBudget", "minAvailable"), 'must be a number >= 0 or a percentage such as 25% (got "1")')]),
    ({"disruptionBudget": {"maxUnavailable": 2147483648}},
     [(("disruptionBudget", "maxUnavailable"), "must be at most 2147483647 (got 2147483648)")]),
    ({"disruptionBudget": {"minAvailable": 99999999999999999999999}},
     [(("disruptionBudget", "minAvailable"), "must be at most 2147483647 (got 99999999999999999999999)")]),
    ({"disruptionBudget": {"maxUnavailable": 2147483647}}, []),
    ({"disruptionBudget": {"maxUnavailable": "150%"}},
     [(("disruptionBudget", "maxUnavailable"), 'must be at most 100% (got "150%")')]),
    ({"disruptionBudget": {"maxUnavailable": 0.5}},
     [(("disruptionBudget", "maxUnavailable"), "must be a whole number or a string (got 0.5)")]),
    ({"disruptionBudget": {"maxUnavailable": True}},
     [(("disruptionBudget", "maxUnavailable"), "must be a whole number or a string (got true)")]),
])
def test_disruption_budget_problems(fields, expected):
    assert problems(**fields) == expected
    assert specrules.live_problems({**BASE, **fields}) == [p for p in expected if "unknown field" not in p[1]]


def test_disruption_budget_refusals_name_the_file_line_and_field(tmp_path):
    from agent.manifests import loader
    text = ("apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata:\n  name: web\nspec:\n  image: nginx:1\n"
            "  replicas: 2\n  disruptionBudget:\n    minAvailable: 2\n")
    result = loader.load({"web.yaml": text.encode()}, "default")
    assert [str(e) for e in result.errors] == [
        f"web.yaml:9: spec.disruptionBudget.minAvailable: must be below replicas (2): {DRAIN} (got 2)"]


OVERLAP = podrules.OVERLAP_RULE


@pytest.mark.parametrize("fields, expected", [
    ({"placement": {"nodeSelector": {"kubernetes.io/arch": "arm64", "pool": ""},
                    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"},
                                    {"key": "gpu", "operator": "Exists"}, {"operator": "Exists"},
                                    {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                                     "effect": "NoExecute", "tolerationSeconds": 30}],
                    "spreadAcross": ["node", "zone"], "priorityClassName": "high"},
      "terminationGracePeriodSeconds": 60}, []),
    # validate's rules of item 9: one clear problem each, on the field to change
    ({"placement": {"tolerations": [{"key": "gpu", "operator": "Exists", "value": "yes"}]}},
     [(("placement", "tolerations", 0, "value"), f'{podrules.EXISTS_VALUE_RULE} (got "yes")')]),
    ({"placement": {"tolerations": [{"key": "gpu", "effect": "NoSchedule", "tolerationSeconds": 30}]}},
     [(("placement", "tolerations", 0, "tolerationSeconds"), f'{podrules.SECONDS_RULE} (got effect "NoSchedule")')]),
    ({"placement": {"tolerations": [{"key": "gpu", "tolerationSeconds": 30}]}},
     [(("placement", "tolerations", 0, "tolerationSeconds"), f"{podrules.SECONDS_RULE} (got effect omitted)")]),
    ({"placement": {"spreadAcross": ["zone", "rack"]}},
     [(("placement", "spreadAcross", 1), 'must be one of zone, node (got "rack")')]),
    ({"placement": {"spreadAcross": ["node", "node"]}}, [(("placement", "spreadAcross", 1), "'node' is given twice")]),
    # the API server's own rules, said offline
    ({"placement": {"tolerations": [{"value": "x"}]}},
     [(("placement", "tolerations", 0, "operator"), f'{podrules.NO_KEY_RULE} (got "Equal")')]),
    ({"placement": {"tolerations": [{"key": "a b", "operator": "Exists"}]}},
     [(("placement", "tolerations", 0, "key"), f"'a b' {KEY_RULE}")]),
    ({"placement": {"tolerations": [{"key": "a", "value": "-x"}]}},
     [(("placement", "tolerations", 0, "value"), f"'-x' {VALUE_RULE}")]),
    ({"placement": {"tolerations": [{"key": "a", "operator": "In"}]}},
     [(("placement", "tolerations", 0, "operator"), 'must be one of Equal, Exists (got "In")')]),
    ({"placement": {"tolerations": [{"key": "a", "effect": "NoRun"}]}},
     [(("placement", "tolerations", 0, "effect"), 'must be one of NoSchedule, PreferNoSchedule, NoExecute '
                                                  '(got "NoRun")')]),
    ({"placement": {"nodeSelector": {"a b": "x", "ok": "y z"}}},
     [(("placement", "nodeSelector", "a b"), f"key 'a b' {KEY_RULE}"),
      (("placement", "nodeSelector", "ok"), f"value 'y z' {VALUE_RULE}")]),
    ({"placement": {"priorityClassName": "High"}},
     [(("placement", "priorityClassName"), f'must be {SUBDOMAIN} (got "High")')]),
    ({"placement": {"affinity": {}}},
     [(("placement", "affinity"), "unknown field (allowed: nodeSelector, priorityClassName, spreadAcross, "
                                  "tolerations)")]),
    ({"terminationGracePeriodSeconds": -1},
     [(("terminationGracePeriodSeconds",), "must be an integer between 0 and 2147483647 (got -1)")]),
])
def test_placement_problems(fields, expected):
    assert problems(**fields) == expected
    assert specrules.live_problems({**BASE, **fields}) == [p for p in expected if "unknown field" not in p[1]]


@pytest.mark.parametrize("fields, expected", [
    ({"volumes": {"/tmp": {"emptyDir": {}}, "/var/cache/app": {"emptyDir": {"sizeLimit": "1Gi", "medium": "Memory"}}},
      "files": {"/etc/app/config.yaml": {"content": "x"}, "/var/cache-old": {"content": "y"}}}, []),
    ({"volumes": {"tmp": {"emptyDir": {}}}},
     [(("volumes", "tmp"), f'the path must be {podrules.PATH_RULE} (got "tmp")')]),
    ({"volumes": {"/a/../b": {"emptyDir": {}}}},
     [(("volumes", "/a/../b"), f'the path must be {podrules.PATH_RULE} (got "/a/../b")')]),
    ({"volumes": {"/etc/app": {"emptyDir": {}}}, "files": {"/etc/app/config.yaml": {"content": "x"}}},
     [(("volumes", "/etc/app"), f"overlaps the file /etc/app/config.yaml (spec.files): {OVERLAP}")]),
    ({"volumes": {"/etc/app/config.yaml": {"emptyDir": {}}}, "files": {"/etc/app/config.yaml": {"content": "x"}}},
     [(("volumes", "/etc/app/config.yaml"), f"overlaps the file /etc/app/config.yaml (spec.files): {OVERLAP}")]),
    ({"volumes": {"/etc/app/config.yaml/x": {"emptyDir": {}}}, "files": {"/etc/app/config.yaml": {"content": "x"}}},
     [(("volumes", "/etc/app/config.yaml/x"), f"overlaps the file /etc/app/config.yaml (spec.files): {OVERLAP}")]),
    ({"volumes": {"/data": {"emptyDir": {}}, "/data/cache": {"emptyDir": {}}}},
     [(("volumes", "/data/cache"), f"lies under the volume /data: {OVERLAP}")]),
    ({"volumes": {"/data": {}}}, [(("volumes", "/data", "emptyDir"), "is required")]),
    # past the count the schema allows, only the count is said (the overlap check compares every pair)
    ({"volumes": {f"/v{n}": {"emptyDir": {}} for n in range(65)}},
     [(("volumes",), "must have at most 64 entries (got 65)")]),
    ({"volumes": {"/data": {"emptyDir": {"medium": "Disk"}}}},
     [(("volumes", "/data", "emptyDir", "medium"), 'must be one of Memory (got "Disk")')]),
    ({"volumes": {"/data": {"emptyDir": {"sizeLimit": "0"}}}},
     [(("volumes", "/data", "emptyDir", "sizeLimit"), 'must be above 0, e.g. 1Gi; omit it for no limit (got "0")')]),
    ({"volumes": {"/data": {"emptyDir": {"sizeLimit": "1GB"}}}},
     [(("volumes", "/data", "emptyDir", "sizeLimit"), 'must be a quantity such as 500m, 1.5, 128Mi or 1Gi: a '
       'number, then one of the suffixes n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent e3 '
       '(got "1GB")')]),
    ({"volumes": {"/data": {"hostPath": {"path": "/"}, "emptyDir": {}}}},
     [(("volumes", "/data", "hostPath"), "unknown field (allowed: emptyDir)")]),
])
def test_volume_problems(fields, expected):
    assert problems(**fields) == expected
    assert specrules.live_problems({**BASE, **fields}) == [p for p in expected if "unknown field" not in p[1]]


def test_placement_and_volume_refusals_name_the_file_line_and_field():
    from agent.manifests import loader
    text = ("apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata:\n  name: web\nspec:\n  image: nginx:1\n"
            "  placement:\n    tolerations:\n    - key: gpu\n      operator: Exists\n      value: 'yes'\n"
            "  files:\n    /etc/app/a.conf: {content: x}\n  volumes:\n    /etc/app: {emptyDir: {}}\n")
    result = loader.load({"web.yaml": text.encode()}, "default")
    assert [str(e) for e in result.errors] == [
        f'web.yaml:11: spec.placement.tolerations[0].value: {podrules.EXISTS_VALUE_RULE} (got "yes")',
        f"web.yaml:15: spec.volumes./etc/app: overlaps the file /etc/app/a.conf (spec.files): {OVERLAP}"]


def test_many_volumes_are_refused_by_their_count_without_comparing_every_pair():
    """5,000 volume paths: one problem, the count, found without the pairwise overlap check."""
    volumes = {f"/v{n}": {"emptyDir": {}} for n in range(5000)}
    assert podrules.problems({"volumes": volumes}) == []
    assert problems(volumes=volumes) == [(("volumes",), "must have at most 64 entries (got 5000)")]
