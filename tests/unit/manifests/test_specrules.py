"""specrules: every new field of the spec refused by name, in words, as (path, message); the same
spec checked live (unknown fields allowed)."""

import pytest

from agent.kinds import configmap
from agent.manifests import specrules

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
    ({"rollout": {"maxSurge": "lots"}},
     [(("rollout", "maxSurge"), 'must be a number >= 0 or a percentage such as 25% (got "lots")')]),
    ({"rollout": {"maxSurge": -1}},
     [(("rollout", "maxSurge"), "must be a number >= 0 or a percentage such as 25% (got -1)")]),
    ({"rollout": {"maxUnavailable": "150%"}}, [(("rollout", "maxUnavailable"), 'must be at most 100% (got "150%")')]),
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
