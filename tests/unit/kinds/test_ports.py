"""spec.ports and spec.startupProbe rendered, pinned exactly: each named port is a container
port and a Service port, probes name ports and render them as numbers, startupProbe comes after
the other two; a worker with ports has a Service of those alone; schedules and tasks serve no
port and probe nothing. An Application without the fields renders what it rendered before
(``test_render_fields.test_the_seed_renders_byte_for_byte_as_before``)."""

import json

import pytest

from agent.kinds import cronjob, deployment, job, podspec, registry, service

SPEC = {"image": "shop:2", "port": 8080, "ports": {"metrics": 9090, "admin": 9091},
        "readinessProbe": {"httpGet": {"path": "/ready", "port": "admin"}},
        "livenessProbe": {"tcpSocket": {"port": 9090}},
        "startupProbe": {"httpGet": {"path": "/started"}, "periodSeconds": 2, "failureThreshold": 30}}


def container(spec: dict) -> dict:
    [main] = deployment.render("shop", "team", "u", spec)["spec"]["template"]["spec"]["containers"]
    return main


def test_named_ports_follow_the_unnamed_main_port_in_name_order_and_probes_render_numbers():
    found = container(SPEC)
    assert found == {
        "name": "shop", "image": "shop:2",
        "ports": [{"containerPort": 8080, "protocol": "TCP"},
                  {"name": "admin", "containerPort": 9091, "protocol": "TCP"},
                  {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
        "readinessProbe": {"httpGet": {"path": "/ready", "port": 9091}},
        "livenessProbe": {"tcpSocket": {"port": 9090}},
        "startupProbe": {"httpGet": {"path": "/started", "port": 8080}, "periodSeconds": 2, "failureThreshold": 30}}
    assert list(found) == ["name", "image", "ports", "readinessProbe", "livenessProbe", "startupProbe"]


def test_the_service_has_http_first_then_each_named_port_to_the_same_target_port():
    assert service.render("shop", "team", "u", SPEC)["spec"]["ports"] == [
        {"name": "http", "protocol": "TCP", "port": 8080, "targetPort": 8080},
        {"name": "admin", "protocol": "TCP", "port": 9091, "targetPort": 9091},
        {"name": "metrics", "protocol": "TCP", "port": 9090, "targetPort": 9090}]


@pytest.mark.parametrize("given, number", [
    (None, 8080), ("http", 8080), (8080, 8080), ("metrics", 9090), (9090, 9090), ("admin", 9091), ("nope", None),
])
def test_probe_port(given, number):
    assert podspec.probe_port(given, SPEC, 8080) == number


@pytest.mark.parametrize("extra", [{"ports": {}}, {"startupProbe": None}, {"ports": None}])
def test_empty_ports_or_no_startup_probe_render_as_without_them(extra):
    seed = {"image": "nginx:latest", "replicas": 1, "port": 80}
    assert [json.dumps(c) for c in registry.children("nginx", "default", "u", {**seed, **extra})] == [
        json.dumps(c) for c in registry.children("nginx", "default", "u", seed)]


def test_a_startup_probe_alone_changes_the_container_by_that_field_only():
    seed = {"image": "nginx:latest", "port": 80}
    probe = {"tcpSocket": {}, "failureThreshold": 60}
    found = container({**seed, "startupProbe": probe})
    assert found.pop("startupProbe") == {"tcpSocket": {"port": 80}, "failureThreshold": 60}
    assert found == container(seed)
    assert service.render("a", "n", "u", {**seed, "startupProbe": probe}) == service.render("a", "n", "u", seed)


WORKER = {"image": "queue:3", "replicas": 2, "ports": {"metrics": 9100},
          "livenessProbe": {"httpGet": {"path": "/healthz", "port": "metrics"}}}
"""A worker (no spec.port) with a metrics port."""


def test_a_worker_with_ports_has_only_named_container_ports_and_a_service_of_them():
    assert container(WORKER) == {
        "name": "shop", "image": "queue:3", "ports": [{"name": "metrics", "containerPort": 9100, "protocol": "TCP"}],
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": 9100}}}
    assert service.wanted(WORKER) and registry.wanted(WORKER) == (deployment.KIND, service.KIND)
    svc = service.render("shop", "team", "u", WORKER)
    assert svc["spec"] == {"selector": service.selector_labels("shop"),
                           "ports": [{"name": "metrics", "protocol": "TCP", "port": 9100, "targetPort": 9100}]}
    without = {k: v for k, v in WORKER.items() if k not in ("ports", "livenessProbe")}
    assert not service.wanted(without) and service.render("shop", "team", "u", without) is None


def test_schedules_and_tasks_serve_no_port_and_probe_nothing():
    spec = {**SPEC, "schedules": {"report": {"schedule": "@daily", "command": ["report"]}},
            "tasks": {"migrate": {"command": ["migrate"]}}}
    [cron] = cronjob.render("shop", "team", "u", spec)
    [pod] = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert not {"ports", *podspec.PROBES} & set(pod)
    assert cron == cronjob.render("shop", "team", "u", {k: v for k, v in spec.items()
                                                          if k not in ("ports", "startupProbe")})[0]
    [task] = job.render("shop", "team", "u", spec)
    assert not {"ports", *podspec.PROBES} & set(task["spec"]["template"]["spec"]["containers"][0])
    # what a task runs is unchanged by ports and probes: its Job (named by that digest) is not run again
    plain = {k: v for k, v in spec.items() if k not in ("ports", "startupProbe")}
    assert job.task_digest("shop", spec, "migrate") == job.task_digest("shop", plain, "migrate")
