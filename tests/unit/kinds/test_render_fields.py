"""The new fields of the spec rendered, pinned exactly; an Application that uses none of them
renders byte for byte what the agent rendered before them (an upgrade restarts no pod)."""

import json

import pytest

from agent.api import labels as keys
from agent.kinds import autoscaler, configmap, deployment, ingress, podspec, registry, service

SEED = {"image": "nginx:latest", "replicas": 1, "port": 80}
"""The seed operator's Application (its application.yaml)."""
SEED_CHILDREN = [
    '{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "nginx", "namespace": "default", "labels": '
    '{"app.kubernetes.io/name": "nginx", "app.kubernetes.io/instance": "nginx", "app.kubernetes.io/managed-by": '
    '"gitops-agent", "heumsi.github.io/application": "nginx"}, "ownerReferences": [{"apiVersion": '
    '"heumsi.github.io/v1", "kind": "Application", "name": "nginx", "uid": "u", "controller": true, '
    '"blockOwnerDeletion": true}]}, "spec": {"replicas": 1, "selector": {"matchLabels": {"app.kubernetes.io/instance": '
    '"nginx", "heumsi.github.io/application": "nginx"}}, "template": {"metadata": {"labels": {"app.kubernetes.io/name": '
    '"nginx", "app.kubernetes.io/instance": "nginx", "app.kubernetes.io/managed-by": "gitops-agent", '
    '"heumsi.github.io/application": "nginx"}}, "spec": {"containers": [{"name": "nginx", "image": "nginx:latest", '
    '"ports": [{"containerPort": 80, "protocol": "TCP"}]}]}}}}',
    '{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "nginx", "namespace": "default", "labels": '
    '{"app.kubernetes.io/name": "nginx", "app.kubernetes.io/instance": "nginx", "app.kubernetes.io/managed-by": '
    '"gitops-agent", "heumsi.github.io/application": "nginx"}, "ownerReferences": [{"apiVersion": '
    '"heumsi.github.io/v1", "kind": "Application", "name": "nginx", "uid": "u", "controller": true, '
    '"blockOwnerDeletion": true}]}, "spec": {"selector": {"app.kubernetes.io/instance": "nginx", '
    '"heumsi.github.io/application": "nginx"}, "ports": [{"name": "http", "protocol": "TCP", "port": 80, '
    '"targetPort": 80}]}}',
]
"""``json.dumps`` of each child the agent rendered for the seed before the new fields (commit
ac258b8 of main), key order included."""


def test_the_seed_renders_byte_for_byte_as_before():
    assert [json.dumps(c) for c in registry.children("nginx", "default", "u", SEED)] == SEED_CHILDREN


@pytest.mark.parametrize("extra", [{}, {"suspend": False}, {"suspend": True}])
def test_no_new_field_no_new_child_or_field(extra):
    children = registry.children("nginx", "default", "u", {**SEED, **extra})
    assert [json.dumps(c) for c in children] == SEED_CHILDREN
    assert registry.wanted({**SEED, **extra}) == (deployment.KIND, service.KIND)


FULL = {
    "image": "shop:2", "port": 8080, "command": ["/bin/shop"], "args": ["--serve"],
    "env": {"LOG_LEVEL": "info", "DB_URL": {"secretKeyRef": {"name": "db", "key": "url"}},
            "FLAGS": {"configMapKeyRef": {"name": "flags", "key": "all"}}},
    "envFrom": [{"configMapRef": {"name": "common"}, "prefix": "C_"}, {"secretRef": {"name": "extra"}}],
    "resources": {"requests": {"cpu": "0.25", "memory": "128Mi"}, "limits": {"memory": "1024Mi"}},
    "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 5},
    "livenessProbe": {"tcpSocket": {}, "initialDelaySeconds": 10, "failureThreshold": 6},
    "files": {"/etc/shop/config.yaml": {"content": "a: 1\n"},
              "/etc/tls/tls.key": {"secretRef": {"name": "tls", "key": "tls.key"}},
              "/etc/shop/flags": {"configMapRef": {"name": "flags", "key": "all"}}},
    "serviceAccountName": "shop", "imagePullSecrets": ["regcred"],
    "podAnnotations": {"prometheus.io/scrape": "true"}, "podLabels": {"tier": "web"},
    "rollout": {"maxSurge": 1, "maxUnavailable": "0%", "progressDeadlineSeconds": 120},
    "ingress": {"host": "shop.example.com", "tlsSecretName": "shop-tls", "className": "nginx",
                "annotations": {"b.io/x": "1", "a.io/y": "2"}},
    "autoscaling": {"minReplicas": 2, "maxReplicas": 10, "targetCPUUtilizationPercentage": 70,
                    "targetMemoryUtilizationPercentage": 80},
    "disruptionBudget": {"minAvailable": "50%"},
}
META = {"name": "shop", "namespace": "team", "labels": {keys.NAME_LABEL: "shop", keys.INSTANCE_LABEL: "shop",
                                                       keys.MANAGED_BY: keys.AGENT_NAME, keys.APPLICATION_LABEL: "shop"},
        "ownerReferences": [{"apiVersion": "heumsi.github.io/v1", "kind": "Application", "name": "shop", "uid": "u",
                             "controller": True, "blockOwnerDeletion": True}]}
CONFIG_KEY = configmap.key("/etc/shop/config.yaml")


def test_every_field_rendered_exactly():
    cm, dep, svc, ing, hpa, pdb = registry.children("shop", "team", "u", FULL)
    assert CONFIG_KEY == "config.yaml-" + CONFIG_KEY[-8:] and len(CONFIG_KEY) == 20
    assert cm == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": META, "data": {CONFIG_KEY: "a: 1\n"}}
    vol = {p: podspec.volume_name(p) for p in FULL["files"]}
    assert dep == {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": META, "spec": {
        "selector": {"matchLabels": {keys.INSTANCE_LABEL: "shop", keys.APPLICATION_LABEL: "shop"}},
        "template": {
            "metadata": {"labels": {**META["labels"], "tier": "web"},
                         "annotations": {"prometheus.io/scrape": "true", keys.FILES_DIGEST: configmap.digest(FULL)}},
            "spec": {
                "containers": [{
                    "name": "shop", "image": "shop:2", "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                    "command": ["/bin/shop"], "args": ["--serve"],
                    "env": [{"name": "DB_URL", "valueFrom": {"secretKeyRef": {"name": "db", "key": "url"}}},
                            {"name": "FLAGS", "valueFrom": {"configMapKeyRef": {"name": "flags", "key": "all"}}},
                            {"name": "LOG_LEVEL", "value": "info"}],
                    "envFrom": [{"configMapRef": {"name": "common"}, "prefix": "C_"}, {"secretRef": {"name": "extra"}}],
                    "resources": {"limits": {"memory": "1Gi"}, "requests": {"cpu": "250m", "memory": "128Mi"}},
                    "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 5},
                    "livenessProbe": {"tcpSocket": {"port": 8080}, "initialDelaySeconds": 10, "failureThreshold": 6},
                    "volumeMounts": [
                        {"name": vol["/etc/shop/config.yaml"], "mountPath": "/etc/shop/config.yaml", "subPath": "file",
                         "readOnly": True},
                        {"name": vol["/etc/shop/flags"], "mountPath": "/etc/shop/flags", "subPath": "file",
                         "readOnly": True},
                        {"name": vol["/etc/tls/tls.key"], "mountPath": "/etc/tls/tls.key", "subPath": "file",
                         "readOnly": True}],
                }],
                "serviceAccountName": "shop",
                "imagePullSecrets": [{"name": "regcred"}],
                "volumes": [
                    {"name": vol["/etc/shop/config.yaml"],
                     "configMap": {"name": "shop", "items": [{"key": CONFIG_KEY, "path": "file"}]}},
                    {"name": vol["/etc/shop/flags"], "configMap": {"name": "flags", "items": [{"key": "all",
                                                                                                 "path": "file"}]}},
                    {"name": vol["/etc/tls/tls.key"], "secret": {"secretName": "tls", "items": [{"key": "tls.key",
                                                                                                   "path": "file"}]}}],
            }},
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": "0%"}},
        "progressDeadlineSeconds": 120}}
    assert svc == service.render("shop", "team", "u", {"port": 8080})
    assert ing == {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                   "metadata": {**META, "annotations": {"a.io/y": "2", "b.io/x": "1"}}, "spec": {
                       "ingressClassName": "nginx",
                       "rules": [{"host": "shop.example.com", "http": {"paths": [{
                           "path": "/", "pathType": "Prefix",
                           "backend": {"service": {"name": "shop", "port": {"number": 8080}}}}]}}],
                       "tls": [{"hosts": ["shop.example.com"], "secretName": "shop-tls"}]}}
    assert hpa == {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": META, "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "shop"},
        "minReplicas": 2, "maxReplicas": 10,
        "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                                "averageUtilization": 70}}},
                    {"type": "Resource", "resource": {"name": "memory", "target": {"type": "Utilization",
                                                                                   "averageUtilization": 80}}}]}}
    assert pdb == {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": META, "spec": {
        "minAvailable": "50%", "selector": {"matchLabels": {keys.INSTANCE_LABEL: "shop", keys.APPLICATION_LABEL: "shop"}},
        "unhealthyPodEvictionPolicy": "AlwaysAllow"}}
    assert registry.wanted(FULL) == tuple(k for k in registry.CHILD_KINDS if k.kind not in ("CronJob", "Job"))
    assert registry.wanted({**FULL, "schedules": {"n": {"schedule": "@daily"}}, "tasks": {"m": {"args": ["m"]}}}) \
        == registry.CHILD_KINDS


@pytest.mark.parametrize("spec, replicas", [
    ({"image": "i", "port": 80, "replicas": 3}, 3),
    ({"image": "i", "port": 80, "replicas": 0}, 0),
    ({"image": "i", "port": 80}, None),
    ({"image": "i", "port": 80, "autoscaling": {"maxReplicas": 3, "targetCPUUtilizationPercentage": 5}}, None),
    ({"image": "i", "port": 80, "replicas": 2, "autoscaling": {"maxReplicas": 3}}, None),  # refused, never rendered
])
def test_replicas_only_when_git_owns_them(spec, replicas):
    rendered = deployment.render("a", "n", "u", spec)["spec"]
    assert rendered.get("replicas") == replicas and ("replicas" in rendered) is (replicas is not None)


@pytest.mark.parametrize("probe, rendered", [
    ({"httpGet": {}}, {"httpGet": {"path": "/", "port": 80}}),
    ({"httpGet": {"path": "/h", "port": 80}}, {"httpGet": {"path": "/h", "port": 80}}),
    ({"tcpSocket": {"port": "http"}}, {"tcpSocket": {"port": 80}}),
    ({"exec": {"command": ["true"]}, "timeoutSeconds": 2, "successThreshold": 1},
     {"exec": {"command": ["true"]}, "timeoutSeconds": 2, "successThreshold": 1}),
])
def test_probes(probe, rendered):
    container = deployment.render("a", "n", "u", {"image": "i", "port": 80, "readinessProbe": probe})[
        "spec"]["template"]["spec"]["containers"][0]
    assert container["readinessProbe"] == rendered


def test_env_is_rendered_in_name_order_and_empty_fields_render_nothing():
    env = {"B": "2", "A": "1", "C": "3"}
    container = deployment.render("a", "n", "u", {"image": "i", "port": 80, "env": env})["spec"]["template"]["spec"][
        "containers"][0]
    assert [e["name"] for e in container["env"]] == ["A", "B", "C"]
    empty = {"image": "i", "port": 80, "replicas": 1, "env": {}, "envFrom": [], "resources": {}, "files": {},
             "imagePullSecrets": [], "podAnnotations": {}, "podLabels": {}, "rollout": {}}
    assert deployment.render("a", "n", "u", empty) == deployment.render("a", "n", "u", {"image": "i", "port": 80,
                                                                                       "replicas": 1})


def test_a_file_content_change_changes_the_pod_template_digest_only():
    one = {"image": "i", "port": 80, "files": {"/a": {"content": "1"}}}
    two = {"image": "i", "port": 80, "files": {"/a": {"content": "2"}}}
    d1, d2 = (deployment.render("a", "n", "u", s) for s in (one, two))
    assert d1["spec"]["template"]["metadata"]["annotations"][keys.FILES_DIGEST] != \
        d2["spec"]["template"]["metadata"]["annotations"][keys.FILES_DIGEST]
    d2["spec"]["template"]["metadata"]["annotations"] = d1["spec"]["template"]["metadata"]["annotations"]
    assert d1 == d2
    assert configmap.digest({"files": {"/a": {"secretRef": {"name": "s", "key": "k"}}}}) is None
    assert configmap.render("a", "n", "u", {"files": {"/a": {"secretRef": {"name": "s", "key": "k"}}}}) is None
    assert configmap.wanted({"files": {"/a": {"content": ""}}}) and not configmap.wanted({})


@pytest.mark.parametrize("path, key", [
    ("/etc/app/config.yaml", "config.yaml-"), ("/x/a b", "a_b-"), ("/x/ü", "_-"), ("/x/A-1_b.c", "A-1_b.c-"),
])
def test_configmap_keys_are_valid_and_distinct(path, key):
    found = configmap.key(path)
    assert found.startswith(key) and len(found) == len(key) + 8
    assert configmap.key("/a/b") != configmap.key("/a_b") != configmap.key("/c/b")


@pytest.mark.parametrize("spec, rule", [
    ({}, {"http": {"paths": [{"path": "/", "pathType": "Prefix",
                              "backend": {"service": {"name": "a", "port": {"number": 80}}}}]}}),
    ({"host": "h.io", "path": "/x", "pathType": "Exact"},
     {"host": "h.io", "http": {"paths": [{"path": "/x", "pathType": "Exact",
                                          "backend": {"service": {"name": "a", "port": {"number": 80}}}}]}}),
])
def test_ingress_rules(spec, rule):
    rendered = ingress.render("a", "n", "u", {"port": 80, "ingress": spec})
    assert rendered["spec"] == {"rules": [rule]} and "annotations" not in rendered["metadata"]
    assert ingress.render("a", "n", "u", {"port": 80}) is None
    tls = ingress.render("a", "n", "u", {"port": 80, "ingress": {"tlsSecretName": "t"}})["spec"]["tls"]
    assert tls == [{"secretName": "t"}]


def test_autoscaler_defaults_and_absence():
    hpa = autoscaler.render("a", "n", "u", {"autoscaling": {"maxReplicas": 4, "targetMemoryUtilizationPercentage": 60}})
    assert hpa["spec"] == {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "a"},
                           "maxReplicas": 4, "metrics": [{"type": "Resource", "resource": {
                               "name": "memory", "target": {"type": "Utilization", "averageUtilization": 60}}}]}
    assert autoscaler.render("a", "n", "u", {}) is None


def test_each_kind_renders_exactly_when_it_is_wanted():
    for spec in (SEED, FULL, {**SEED, "files": {"/a": {"secretRef": {"name": "s", "key": "k"}}}},
                 {**SEED, "ingress": {}}, {"image": "i", "port": 1, "autoscaling": {"maxReplicas": 1}}, WORKER,
                 {**SEED, "schedules": {"n": {"schedule": "@daily"}}}, {**SEED, "schedules": {}}):
        for kind in registry.CHILD_KINDS:
            assert bool(kind.objects("a", "n", "u", spec)) is kind.wanted(spec)


WORKER = {"image": "queue:3", "replicas": 2, "command": ["worker"], "readinessProbe": {"exec": {"command": ["ready"]}}}
"""An Application without a port: a queue worker."""


def test_a_worker_has_a_deployment_with_no_container_port_and_no_service():
    dep, = registry.children("jobs", "team", "u", WORKER)
    assert registry.wanted(WORKER) == (deployment.KIND,) and service.render("jobs", "team", "u", WORKER) is None
    assert dep["spec"]["template"]["spec"]["containers"] == [
        {"name": "jobs", "image": "queue:3", "command": ["worker"], "readinessProbe": {"exec": {"command": ["ready"]}}}]
    # the same Application with a port renders the port and the Service, and nothing else differs
    served = registry.children("jobs", "team", "u", {**WORKER, "port": 80})
    assert [c["kind"] for c in served] == ["Deployment", "Service"]
    assert served[0]["spec"]["template"]["spec"]["containers"][0].pop("ports") == [
        {"containerPort": 80, "protocol": "TCP"}]
    assert served[0] == dep


def test_configmap_keys_and_digest_exactly():
    import hashlib

    def sha(text, n):
        return hashlib.sha256(text.encode()).hexdigest()[:n]

    assert configmap.key("/etc/app/config.yaml") == f"config.yaml-{sha('/etc/app/config.yaml', 8)}"
    assert configmap.key("/etc/a-b_c.d") == f"a-b_c.d-{sha('/etc/a-b_c.d', 8)}"
    assert configmap.key("/a/b/c") == f"c-{sha('/a/b/c', 8)}"
    long = "/x/" + "n" * 300
    assert configmap.key(long) == "n" * 200 + f"-{sha(long, 8)}"
    files = {"/b": {"content": "2"}, "/a": {"content": "1"}, "/s": {"secretRef": {"name": "s", "key": "k"}}}
    assert configmap.contents({"files": files}) == {"/a": "1", "/b": "2"}
    assert list(configmap.contents({"files": files})) == ["/a", "/b"]
    assert configmap.digest({"files": files}) == sha('{"/a": "1", "/b": "2"}', 16)
    assert configmap.health({"metadata": {"name": "a", "deletionTimestamp": "t"}}) == configmap.Health(
        "Progressing", "ConfigMap a is pending deletion (since t); a pass after it is gone creates it again")
