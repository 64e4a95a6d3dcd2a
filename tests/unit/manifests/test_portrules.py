"""specrules of spec.ports and the probes' ports (issue 44 items 5 and 9): one problem per rule,
as (path, message); live specs checked the same way."""

import pytest

from agent.manifests import specrules

BASE = {"image": "nginx:1", "port": 8080}
NAME_RULE = f"the port name must be {specrules.PORT_NAME_RULE}"
HTTP_GET = {"httpGet": {"path": "/healthz"}}


def problems(spec):
    found = specrules.problems(spec)
    assert specrules.live_problems(spec) == found
    return found


@pytest.mark.parametrize("ports, expected", [
    ({"metrics": 9090, "admin": 9091, "grpc-web": 1, "a1": 65535, "x" * 15: 2}, []),
    ({"Metrics": 9090}, [(("ports", "Metrics"), f'{NAME_RULE} (got "Metrics")')]),
    ({"m" * 16: 9090}, [(("ports", "m" * 16), f'{NAME_RULE} (got "{"m" * 16}")')]),
    ({"-metrics": 9090}, [(("ports", "-metrics"), f'{NAME_RULE} (got "-metrics")')]),
    ({"metrics-": 9090}, [(("ports", "metrics-"), f'{NAME_RULE} (got "metrics-")')]),
    ({"prom--metrics": 9090}, [(("ports", "prom--metrics"), f'{NAME_RULE} (got "prom--metrics")')]),
    ({"9090": 9090}, [(("ports", "9090"), f'{NAME_RULE} (got "9090")')]),
    ({"my_port": 9090}, [(("ports", "my_port"), f'{NAME_RULE} (got "my_port")')]),
    ({"http": 9090}, [(("ports", "http"), specrules.MAIN_NAME_RULE)]),
    ({"metrics": 8080}, [(("ports", "metrics"), "is spec.port's number (8080): each port number is given once; "
                                                "spec.ports holds only the other ports")]),
    ({"metrics": 9090, "admin": 9090},
     [(("ports", "metrics"), "has the number of spec.ports.admin (9090): each port number is given once")]),
    ({"metrics": 0}, [(("ports", "metrics"), "must be an integer between 1 and 65535 (got 0)")]),
    ({"metrics": 65536}, [(("ports", "metrics"), "must be an integer between 1 and 65535 (got 65536)")]),
    ({"metrics": "9090"}, [(("ports", "metrics"), 'must be an integer between 1 and 65535 (got "9090")')]),
    ({"metrics": True}, [(("ports", "metrics"), "must be an integer between 1 and 65535 (got true)")]),
    ([9090], [(("ports",), "must be a mapping (got [9090])")]),
    ({f"p{i}": 1000 + i for i in range(65)}, [(("ports",), "must have at most 64 entries (got 65)")]),
])
def test_ports(ports, expected):
    assert problems({**BASE, "ports": ports}) == expected


def test_a_worker_may_have_ports_but_not_the_name_http():
    assert problems({"image": "i", "ports": {"metrics": 9090}}) == []
    assert problems({"image": "i", "ports": {"http": 80}}) == [(("ports", "http"), specrules.MAIN_NAME_RULE)]


@pytest.mark.parametrize("probe, port, expected", [
    ("readinessProbe", "metrics", []),
    ("livenessProbe", 9090, []),
    ("startupProbe", "http", []),
    ("startupProbe", 8080, []),
    ("startupProbe", None, []),
    ("readinessProbe", "admin", [(("readinessProbe", "httpGet", "port"),
                                  "must be the Application's port (8080) or its name http or a port of spec.ports "
                                  'by name or number (metrics 9090) (got "admin")')]),
    ("startupProbe", 9091, [(("startupProbe", "httpGet", "port"),
                             "must be the Application's port (8080) or its name http or a port of spec.ports by "
                             "name or number (metrics 9090) (got 9091)")]),
])
def test_a_probe_names_a_port_of_the_application(probe, port, expected):
    handler = {"path": "/healthz", **({} if port is None else {"port": port})}
    assert problems({**BASE, "ports": {"metrics": 9090}, probe: {"httpGet": handler}}) == expected


def test_without_ports_a_probe_names_the_main_port_as_before():
    assert problems({**BASE, "startupProbe": {"tcpSocket": {"port": "metrics"}}}) == [
        (("startupProbe", "tcpSocket", "port"), 'must be the Application\'s port (8080) or its name http '
                                                '(got "metrics")')]


@pytest.mark.parametrize("probe, expected", [
    ({"httpGet": {"path": "/m", "port": "metrics"}}, []),
    ({"tcpSocket": {"port": 9100}}, []),
    ({"exec": {"command": ["true"]}}, []),
    ({"tcpSocket": {}}, [(("startupProbe", "tcpSocket", "port"), f"{specrules.WORKER_PROBE_PORT_RULE} (metrics 9100)")]),
    ({"httpGet": {"port": "http"}}, [(("startupProbe", "httpGet", "port"),
                                      'must be a port of spec.ports by name or number (metrics 9100) (got "http")')]),
])
def test_a_worker_probes_a_port_of_spec_ports_by_name_or_number(probe, expected):
    assert problems({"image": "i", "ports": {"metrics": 9100}, "startupProbe": probe}) == expected


def test_a_worker_without_ports_still_probes_by_exec_only():
    assert problems({"image": "i", "startupProbe": {"tcpSocket": {}}}) == [
        (("startupProbe", "tcpSocket"), specrules.WORKER_PROBE_RULE)]
    assert problems({"image": "i", "ports": {"metrics": 9100}, "ingress": {}}) == [
        (("ingress",), specrules.WORKER_INGRESS_RULE)]


@pytest.mark.parametrize("probe, threshold, expected", [
    ("startupProbe", 2, [(("startupProbe", "successThreshold"), "must be 1 for a startup probe (got 2)")]),
    ("livenessProbe", 3, [(("livenessProbe", "successThreshold"), "must be 1 for a liveness probe (got 3)")]),
    ("readinessProbe", 3, []),
    ("startupProbe", 1, []),
])
def test_success_threshold(probe, threshold, expected):
    assert problems({**BASE, probe: {**HTTP_GET, "successThreshold": threshold}}) == expected


def test_a_startup_probe_is_a_probe_like_the_others():
    assert problems({**BASE, "startupProbe": {"periodSeconds": 5}}) == [
        (("startupProbe",), "must have exactly one of httpGet, tcpSocket, exec")]
    assert problems({**BASE, "startupProbe": {**HTTP_GET, "failureThreshold": 0}}) == [
        (("startupProbe", "failureThreshold"), "must be an integer between 1 and 2147483647 (got 0)")]
