"""health: one function per child kind, table-tested with objects as the API server returns them
(tests/unit/kinds/fixtures/health, each file says how it was captured), plus edge tables."""

import datetime
from pathlib import Path

import pytest
import yaml

from agent.kinds import (autoscaler, configmap, deployment as deployment_kind, health, ingress, registry,
                         service as service_kind)
from agent.kinds.health import Health, Status

FIXTURES = Path(__file__).parent / "fixtures" / "health"
SEED = {"image": "nginx:latest", "port": 80}
"""An Application with a port: a Deployment and a Service."""


def fixture(name: str) -> dict:
    return yaml.safe_load((FIXTURES / f"{name}.yaml").read_text())


@pytest.mark.parametrize("name, status, message", [
    ("deployment-healthy", Status.HEALTHY, "2/2 replicas available"),
    ("deployment-scaled-to-zero", Status.HEALTHY, "0/0 replicas available"),
    ("deployment-paused", Status.SUSPENDED, "Deployment paused is paused"),
    ("deployment-generation-not-observed", Status.PROGRESSING,
     "waiting for the deployment controller to observe the latest spec"),
    ("deployment-progress-deadline-exceeded", Status.DEGRADED,
     'Deployment deadline exceeded its progress deadline: ReplicaSet "deadline-5755846474" has timed out progressing.'),
    ("deployment-pods-pending", Status.PROGRESSING, "waiting for rollout to finish: 0 of 2 replicas available"),
    ("deployment-rolling-update", Status.PROGRESSING, "waiting for rollout to finish: 1 of 2 new replicas updated"),
    ("deployment-old-replicas-terminating", Status.PROGRESSING,
     "waiting for rollout to finish: 1 old replicas pending termination"),
    ("deployment-replica-failure", Status.PROGRESSING,
     'waiting for rollout to finish: 0 of 2 new replicas updated; FailedCreate: pods "refused-588bb986cb-vhlxp" is '
     'forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "nginx" must '
     'set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "nginx" must set '
     'securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "nginx" must set '
     'securityContext.runAsNonRoot=true), seccompProfile (pod or container "nginx" must set '
     'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'),
    # alone, the Deployment cannot say why its pod is not available: its pods can (deployment.with_pods)
    ("deployment-unschedulable", Status.PROGRESSING, "waiting for rollout to finish: 0 of 1 replicas available"),
])
def test_deployment_fixtures(name, status, message):
    assert deployment_kind.health(fixture(name)) == Health(status, message)


@pytest.mark.parametrize("name, status", [
    ("service-clusterip", Status.HEALTHY),
    ("service-loadbalancer-pending", Status.PROGRESSING),
    ("service-loadbalancer-ready", Status.HEALTHY),
])
def test_service_fixtures(name, status):
    assert service_kind.health(fixture(name)).status == status


def test_every_fixture_is_a_real_api_object_and_in_a_table():
    names = {p.stem for p in FIXTURES.glob("*.yaml")}
    assert len(names) == 27  # 6 of them Jobs: tests/unit/kinds/test_job.py
    for name in names:
        obj = fixture(name)
        assert obj["apiVersion"] in ("apps/v1", "v1", "networking.k8s.io/v1", "autoscaling/v2", "batch/v1")
        assert obj["metadata"]["uid"] and ("status" in obj or obj["kind"] == "ConfigMap")
    assert fixture("pod-unschedulable")["kind"] == "Pod"  # read with deployment-unschedulable (test_admission_health.py)


@pytest.mark.parametrize("name, status, message", [
    ("ingress-no-address", Status.PROGRESSING, "waiting for an ingress controller to give the Ingress an address"),
    ("ingress-with-address", Status.HEALTHY, ""),
    ("hpa-new", Status.PROGRESSING, "waiting to autoscale"),
    ("hpa-missing-target", Status.DEGRADED,
     'the HPA controller was unable to get the target\'s current scale: deployments.apps "nothing-here" not found'),
    ("hpa-no-metrics", Status.DEGRADED, "the HPA was unable to compute the replica count: failed to get cpu "
     "utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the "
     "server could not find the requested resource (get pods.metrics.k8s.io)"),
    ("configmap-files", Status.HEALTHY, ""),
])
def test_new_kind_fixtures(name, status, message):
    obj = fixture(name)
    assert registry.BY_KIND[obj["kind"]].health(obj) == Health(status, message)


def hpa(*conditions):
    return {"kind": "HorizontalPodAutoscaler", "metadata": {"name": "a"},
            "status": {"conditions": [dict(zip(("type", "status", "reason", "message"), c)) for c in conditions]}}


@pytest.mark.parametrize("obj, expected", [
    (None, Health(Status.MISSING, "HorizontalPodAutoscaler does not exist")),
    (hpa(), Health(Status.PROGRESSING, "waiting to autoscale")),
    ({"metadata": {}}, Health(Status.PROGRESSING, "waiting to autoscale")),
    (hpa(("AbleToScale", "True", "SucceededGetScale", "ok")), Health(Status.HEALTHY, "ok")),
    (hpa(("AbleToScale", "False", "FailedGetScale", "no target")), Health(Status.DEGRADED, "no target")),
    (hpa(("AbleToScale", "False", "FailedUpdateScale", "x")), Health(Status.DEGRADED, "x")),
    (hpa(("AbleToScale", "False", "BackoffBoth", "x")), Health(Status.PROGRESSING, "waiting to autoscale")),
    (hpa(("ScalingActive", "False", "FailedGetResourceMetric", "m")), Health(Status.DEGRADED, "m")),
    (hpa(("ScalingActive", "False", "InvalidSelector", "s")), Health(Status.DEGRADED, "s")),
    (hpa(("ScalingActive", "True", "ValidMetricFound", "v")), Health(Status.PROGRESSING, "waiting to autoscale")),
    (hpa(("ScalingLimited", "True", "TooFewReplicas", "l")), Health(Status.HEALTHY, "l")),
    (hpa(("ScalingLimited", "False", "DesiredWithinRange", "l")), Health(Status.PROGRESSING, "waiting to autoscale")),
    # a failure wins wherever it is listed (Argo CD 3.5, argo-cd PR 26274); before, the first deciding one
    (hpa(("AbleToScale", "True", "SucceededGetScale", "ok"), ("ScalingActive", "False", "FailedGetResourceMetric",
                                                             "m")), Health(Status.DEGRADED, "m")),
    (hpa(("ScalingLimited", "True", "TooFewReplicas", "l"), ("ScalingActive", "False", "FailedGetObjectMetric", "o")),
     Health(Status.DEGRADED, "o")),
    *[(hpa(("AbleToScale", "True", "SucceededGetScale", "ok"), ("ScalingActive", "False", reason, reason)),
       Health(Status.DEGRADED, reason)) for reason in (
        "FailedGetResourceMetric", "FailedGetContainerResourceMetric", "FailedGetPodsMetric", "FailedGetObjectMetric",
        "FailedGetExternalMetric", "FailedComputeMetricsReplicas", "InvalidSelector", "InvalidMetricSourceType")],
    # the Deployment at 0 replicas: autoscaling is off, no failure
    (hpa(("AbleToScale", "True", "SucceededGetScale", "ok"), ("ScalingActive", "False", "ScalingDisabled", "d")),
     Health(Status.HEALTHY, "ok")),
    # an unknown reason is no failure; a condition that is not an object is skipped
    (hpa(("ScalingActive", "False", "SomethingNew", "n")), Health(Status.PROGRESSING, "waiting to autoscale")),
    ({"status": {"conditions": ["junk", {"type": "AbleToScale", "status": "True", "message": "ok"}]}},
     Health(Status.HEALTHY, "ok")),
    (hpa(("ScalingActive", "False", "FailedGetResourceMetric", "m"), ("AbleToScale", "True", "x", "ok")),
     Health(Status.DEGRADED, "m")),
    (hpa(("AbleToScale", "True", "x", None)), Health(Status.HEALTHY, None)),
    ({"metadata": {"name": "a", "deletionTimestamp": "2026-01-01T00:00:00Z"}},
     Health(Status.PROGRESSING, "HorizontalPodAutoscaler a is pending deletion (since 2026-01-01T00:00:00Z); a pass after "
                         "it is gone creates it again")),
])
def test_autoscaler_health(obj, expected):
    assert autoscaler.health(obj) == expected


def at(stamp: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


NO_METRICS = ("the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics "
              "for resource cpu: unable to fetch metrics from resource metrics API: the server could not find the "
              "requested resource (get pods.metrics.k8s.io)")
EXTERNAL = ("the HPA was unable to compute the replica count: unable to get external metric e2e/queue_depth/nil: "
            "unable to fetch metrics from external metrics API: the server is currently unable to handle the request "
            "(get queue_depth.external.metrics.k8s.io)")


@pytest.mark.parametrize("name, now, expected", [
    # created at 16:28:21, failing since 16:28:22: the grace runs from the later, 120 s
    ("hpa-no-metrics", "2026-12-04T16:28:30Z", Health(Status.PROGRESSING, (
        "metrics not read yet (FailedGetResourceMetric; Degraded if it lasts 120 s, since 2026-12-04T16:28:22Z): "
        + NO_METRICS))),
    ("hpa-no-metrics", "2026-12-04T16:30:21.900000Z", Health(Status.PROGRESSING, (
        "metrics not read yet (FailedGetResourceMetric; Degraded if it lasts 120 s, since 2026-12-04T16:28:22Z): "
        + NO_METRICS))),
    ("hpa-no-metrics", "2026-12-04T16:30:22Z", Health(Status.DEGRADED, NO_METRICS)),
    # a year-old autoscaler whose metric failed when its Deployment rolled: the grace runs from the transition
    ("hpa-external-metric-after-rollout", "2026-12-04T10:01:00Z", Health(Status.PROGRESSING, (
        "metrics not read yet (FailedGetExternalMetric; Degraded if it lasts 120 s, since 2026-12-04T10:00:30Z): "
        + EXTERNAL))),
    ("hpa-external-metric-after-rollout", "2026-12-04T10:02:30Z", Health(Status.DEGRADED, EXTERNAL)),
    # a missing target has no grace: it is no lag of metrics
    ("hpa-missing-target", "2026-12-04T16:38:57Z", Health(Status.DEGRADED, (
        "the HPA controller was unable to get the target's current scale: deployments.apps "
        '"nothing-here" not found'))),
])
def test_autoscaler_grace(name, now, expected):
    assert autoscaler.health(fixture(name), now=at(now)) == expected


def test_autoscaler_grace_reads_only_timestamps_it_can_parse():
    failing = ("ScalingActive", "False", "FailedGetPodsMetric", "p")
    now = at("2026-12-04T10:00:00Z")
    garbled = hpa(failing)
    garbled["metadata"]["creationTimestamp"] = "yesterday"
    garbled["status"]["conditions"][0]["lastTransitionTime"] = 7
    assert autoscaler.health(garbled, now=now) == Health(Status.DEGRADED, "p")
    offset = hpa(failing)
    offset["status"]["conditions"][0]["lastTransitionTime"] = "2026-12-04T11:59:30+02:00"  # 09:59:30 UTC
    assert autoscaler.health(offset, now=now) == Health(Status.PROGRESSING, (
        "metrics not read yet (FailedGetPodsMetric; Degraded if it lasts 120 s, since 2026-12-04T09:59:30Z): p"))
    created = hpa(failing)
    created["metadata"]["creationTimestamp"] = "2026-12-04T09:58:01Z"
    assert autoscaler.health(created, now=now).status == Status.PROGRESSING
    created["metadata"]["creationTimestamp"] = "2026-12-04T09:58:00Z"
    assert autoscaler.health(created, now=now).status == Status.DEGRADED


@pytest.mark.parametrize("obj, expected", [
    (None, Health(Status.MISSING, "Ingress does not exist")),
    ({}, Health(Status.PROGRESSING, "waiting for an ingress controller to give the Ingress an address")),
    ({"status": {"loadBalancer": {"ingress": []}}},
     Health(Status.PROGRESSING, "waiting for an ingress controller to give the Ingress an address")),
    ({"status": {"loadBalancer": {"ingress": [{"hostname": "lb.example.com"}]}}}, Health(Status.HEALTHY)),
    ({"metadata": {"name": "a", "deletionTimestamp": "t"}, "status": {"loadBalancer": {"ingress": [{"ip": "1"}]}}},
     Health(Status.PROGRESSING, "Ingress a is pending deletion (since t); a pass after it is gone creates it again")),
])
def test_ingress_health(obj, expected):
    assert ingress.health(obj) == expected


def test_configmap_health():
    assert configmap.health(None) == Health(Status.MISSING, "ConfigMap does not exist")
    assert configmap.health({"metadata": {"name": "a", "deletionTimestamp": "t"}}).status == Status.PROGRESSING
    assert configmap.health({"data": {}}) == Health(Status.HEALTHY)


def test_an_application_counts_only_the_kinds_it_has():
    dep, svc = fixture("deployment-healthy"), fixture("service-clusterip")
    assert registry.health({"Deployment": dep, "Service": svc}, spec=SEED).status == Status.HEALTHY
    with_ingress = {"image": "i", "port": 80, "ingress": {}}
    assert registry.health({"Deployment": dep, "Service": svc}, spec=with_ingress) == Health(
        Status.MISSING, "Ingress: Ingress does not exist")
    found = registry.health({"Deployment": dep, "Service": svc, "Ingress": fixture("ingress-no-address")},
                            spec=with_ingress)
    assert found.status == Status.PROGRESSING
    # a child of a kind the spec no longer has (pruned in this pass) does not count
    assert registry.health({"Deployment": dep, "Service": svc, "Ingress": None}, spec=SEED).status == Status.HEALTHY
    assert [k.kind for k in registry.wanted(SEED)] == ["Deployment", "Service"]
    # a worker (no port) has no Service: its health waits for none, and one still live does not count
    assert [k.kind for k in registry.wanted({"image": "i"})] == [k.kind for k in registry.wanted(None)] == ["Deployment"]
    assert registry.health({"Deployment": dep}, spec={"image": "i"}) == Health(Status.HEALTHY, "all children healthy")
    assert registry.health({"Deployment": dep, "Service": None}, spec={"image": "i"}).status == Status.HEALTHY


def test_news_of_the_new_kinds():
    assert configmap.news({"data": {"a": "1"}}) == {"a": "1"}
    assert ingress.news({"spec": {"rules": []}}) == ({"rules": []}, ingress.health({}).as_status())
    assert autoscaler.news(hpa()) == []
    assert autoscaler.news({}) == []
    assert autoscaler.news(hpa(("ScalingActive", "False", "FailedGetPodsMetric", "p"))) == [
        ["ScalingActive", "False", "FailedGetPodsMetric", "p"]]


def dep(generation=1, observed=1, replicas=2, updated=2, total=2, available=2, paused=None,
        conditions=None, spec_replicas="given"):
    spec = {} if spec_replicas is None else {"replicas": replicas}
    if paused is not None:
        spec["paused"] = paused
    return {"metadata": {"name": "web", "generation": generation}, "spec": spec,
            "status": {"observedGeneration": observed, "replicas": total, "updatedReplicas": updated,
                       "availableReplicas": available, "conditions": conditions or []}}


DEADLINE = {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "timed out"}


@pytest.mark.parametrize("obj, status", [
    (None, Status.MISSING),
    (dep(), Status.HEALTHY),
    (dep(paused=True), Status.SUSPENDED),
    (dep(paused=False), Status.HEALTHY),
    (dep(paused=True, generation=5, conditions=[DEADLINE]), Status.SUSPENDED),  # paused wins
    (dep(generation=2, observed=1), Status.PROGRESSING),
    (dep(generation=2, observed=2), Status.HEALTHY),
    (dep(generation=1, observed=2), Status.HEALTHY),
    (dep(generation=2, observed=1, conditions=[DEADLINE]), Status.PROGRESSING),  # deadline of an old spec
    (dep(conditions=[DEADLINE]), Status.DEGRADED),
    (dep(updated=0, available=0, conditions=[DEADLINE]), Status.DEGRADED),
    (dep(conditions=[{**DEADLINE, "status": "True"}]), Status.HEALTHY),
    (dep(conditions=[{**DEADLINE, "reason": "ReplicaSetUpdated"}]), Status.HEALTHY),
    (dep(conditions=[{**DEADLINE, "type": "Available"}]), Status.HEALTHY),
    (dep(conditions=[{**DEADLINE, "type": "ReplicaFailure"}]), Status.HEALTHY),
    (dep(conditions=[{**DEADLINE, "reason": "NewReplicaSetAvailable"}]), Status.HEALTHY),
    (dep(conditions=[{k: v for k, v in DEADLINE.items() if k != "status"}]), Status.HEALTHY),
    (dep(conditions=[{**DEADLINE, "status": "Unknown"}]), Status.HEALTHY),
    (dep(conditions=[{"type": "Available", "status": "True"}, DEADLINE]), Status.DEGRADED),
    (dep(updated=1), Status.PROGRESSING),
    (dep(updated=3, total=3, available=3), Status.HEALTHY),
    (dep(total=3), Status.PROGRESSING),
    (dep(total=1), Status.HEALTHY),  # fewer pods than updated ones: nothing old left to go
    (dep(available=1), Status.PROGRESSING),
    (dep(available=3), Status.HEALTHY),
    (dep(replicas=0, updated=0, total=0, available=0), Status.HEALTHY),
    (dep(spec_replicas=None, updated=1, total=1, available=1), Status.HEALTHY),  # default 1
    (dep(spec_replicas=None, updated=0, total=0, available=0), Status.PROGRESSING),
    (dep(spec_replicas=None, updated=1, total=1, available=0), Status.PROGRESSING),
    ({"metadata": {"name": "web"}, "spec": {"replicas": 1}}, Status.PROGRESSING),  # no status yet
    ({"metadata": {"name": "web"}, "spec": {"replicas": 0}, "status": {}}, Status.HEALTHY),  # no generations at all
    ({"metadata": {"generation": 1}, "spec": {"replicas": 0}, "status": {}}, Status.PROGRESSING),  # none observed
    ({"metadata": {}, "spec": {"replicas": 1}, "status": {"availableReplicas": 1}}, Status.PROGRESSING),  # none updated
    ({"metadata": {"name": "web", "generation": 1}, "spec": {"replicas": 1}}, Status.PROGRESSING),
])
def test_deployment_rules(obj, status):
    assert deployment_kind.health(obj).status == status


@pytest.mark.parametrize("obj, message", [
    (None, "Deployment does not exist"),
    (dep(updated=1), "waiting for rollout to finish: 1 of 2 new replicas updated"),
    (dep(total=5), "waiting for rollout to finish: 3 old replicas pending termination"),
    (dep(available=1), "waiting for rollout to finish: 1 of 2 replicas available"),
    (dep(conditions=[DEADLINE]), "Deployment web exceeded its progress deadline: timed out"),
    (dep(conditions=[{k: v for k, v in DEADLINE.items() if k != "message"}]),
     "Deployment web exceeded its progress deadline"),
])
def test_deployment_messages(obj, message):
    assert deployment_kind.health(obj).message == message


@pytest.mark.parametrize("obj, status, message", [
    (None, Status.MISSING, "Service does not exist"),
    ({"spec": {"type": "ClusterIP"}}, Status.HEALTHY, ""),
    ({"spec": {}}, Status.HEALTHY, ""),
    ({}, Status.HEALTHY, ""),
    ({"spec": {"type": "NodePort"}}, Status.HEALTHY, ""),
    ({"spec": {"type": "LoadBalancer"}}, Status.PROGRESSING, "waiting for the load balancer to get an address"),
    ({"spec": {"type": "LoadBalancer"}, "status": {"loadBalancer": {}}}, Status.PROGRESSING,
     "waiting for the load balancer to get an address"),
    ({"spec": {"type": "LoadBalancer"}, "status": {"loadBalancer": {"ingress": []}}}, Status.PROGRESSING,
     "waiting for the load balancer to get an address"),
    ({"spec": {"type": "LoadBalancer"}, "status": {"loadBalancer": {"ingress": [{"hostname": "lb"}]}}},
     Status.HEALTHY, ""),
])
def test_service_rules(obj, status, message):
    assert service_kind.health(obj) == Health(status, message)


def test_order_is_documented_worst_last():
    assert health.ORDER == (Status.HEALTHY, Status.SUSPENDED, Status.PROGRESSING, Status.MISSING, Status.DEGRADED)


@pytest.mark.parametrize("children, expected", [
    ({}, Health(Status.HEALTHY, "no children")),
    ({"A": Health(Status.HEALTHY, "x")}, Health(Status.HEALTHY, "all children healthy")),
    ({"A": Health(Status.HEALTHY), "B": Health(Status.SUSPENDED, "s")}, Health(Status.SUSPENDED, "B: s")),
    ({"A": Health(Status.SUSPENDED, "s"), "B": Health(Status.PROGRESSING, "p")}, Health(Status.PROGRESSING, "B: p")),
    ({"A": Health(Status.MISSING, "m"), "B": Health(Status.PROGRESSING, "p")}, Health(Status.MISSING, "A: m")),
    ({"A": Health(Status.MISSING, "m"), "B": Health(Status.DEGRADED, "d")}, Health(Status.DEGRADED, "B: d")),
    ({"A": Health(Status.DEGRADED, "d"), "B": Health(Status.HEALTHY)}, Health(Status.DEGRADED, "A: d")),
    ({"B": Health(Status.PROGRESSING, "b"), "A": Health(Status.PROGRESSING, "a")}, Health(Status.PROGRESSING, "A: a")),  # tie: first name
    ({"A": Health(Status.PROGRESSING, "a"), "B": Health(Status.SUSPENDED, "s"), "C": Health(Status.HEALTHY)}, Health(Status.PROGRESSING, "A: a")),
])
def test_worst_child_wins(children, expected):
    assert health.worst(children) == expected


@pytest.mark.parametrize("deployment, service, expected", [
    ("deployment-healthy", "service-clusterip", Health(Status.HEALTHY, "all children healthy")),
    ("deployment-healthy", None, Health(Status.MISSING, "Service: Service does not exist")),
    (None, "service-clusterip", Health(Status.MISSING, "Deployment: Deployment does not exist")),
    ("deployment-progress-deadline-exceeded", None, Health(Status.DEGRADED, "Deployment: Deployment deadline exceeded "
                                                            'its progress deadline: ReplicaSet "deadline-5755846474" '
                                                            "has timed out progressing.")),
    ("deployment-paused", "service-loadbalancer-pending",
     Health(Status.PROGRESSING, "Service: waiting for the load balancer to get an address")),
    ("deployment-paused", "service-clusterip", Health(Status.SUSPENDED, "Deployment: Deployment paused is paused")),
])
def test_application_is_the_worst_of_its_children(deployment, service, expected):
    got = registry.health({"Deployment": deployment and fixture(deployment), "Service": service and fixture(service)},
                          spec=SEED)
    assert got == expected


def test_as_status_is_the_status_health_object():
    assert Health(Status.PROGRESSING, "p").as_status() == {"status": "Progressing", "message": "p"}
    assert Health(Status.HEALTHY).as_status() == {"status": "Healthy", "message": ""}


@pytest.mark.parametrize("obj, expected", [
    # an object without metadata (a bare template) is judged by its spec and status alone
    ({"spec": {"replicas": 1}, "status": {"replicas": 1, "updatedReplicas": 1, "availableReplicas": 1}},
     Health(Status.HEALTHY, "1/1 replicas available")),
    ({"spec": {"replicas": 1}}, Health(Status.PROGRESSING, "waiting for rollout to finish: 0 of 1 new replicas updated")),
    # without a name the messages leave the name out rather than print a placeholder
    ({"spec": {"paused": True}}, Health(Status.SUSPENDED, "Deployment  is paused")),
    ({"metadata": {}, "spec": {"paused": True}}, Health(Status.SUSPENDED, "Deployment  is paused")),
    ({"metadata": {"generation": 2}, "status": {"observedGeneration": 1}},
     Health(Status.PROGRESSING, "waiting for the deployment controller to observe the latest spec")),
])
def test_deployment_without_metadata_or_name(obj, expected):
    assert deployment_kind.health(obj) == expected


@pytest.mark.parametrize("message, expected", [
    # the controller's message is kept whole, whatever characters it ends with
    ("deadline hit for ReplicaSet web-7cX", "Deployment web exceeded its progress deadline: "
                                            "deadline hit for ReplicaSet web-7cX"),
    ("", "Deployment web exceeded its progress deadline"),
])
def test_progress_deadline_message_is_the_controllers(message, expected):
    cond = {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": message}
    assert deployment_kind.health(dep(conditions=[cond])) == Health(Status.DEGRADED, expected)


def deleting(obj: dict, name: str = "web", at: str = "2026-12-01T10:00:00Z") -> dict:
    return {**obj, "metadata": {**obj.get("metadata", {}), "name": name, "deletionTimestamp": at}}


@pytest.mark.parametrize("check, obj, kind", [
    (deployment_kind.health, dep(), "Deployment"),
    (deployment_kind.health, dep(paused=True, conditions=[DEADLINE]), "Deployment"),  # deletion wins over all
    (service_kind.health, {"spec": {"type": "ClusterIP"}}, "Service"),
    (service_kind.health, {"spec": {"type": "LoadBalancer"}}, "Service"),
])
def test_a_child_being_deleted_is_progressing_however_healthy_its_status(check, obj, kind):
    # gitops-engine's first rule: a finalizer or a terminating namespace holds it, and it will go
    assert check(deleting(obj)) == Health(
        Status.PROGRESSING, f"{kind} web is pending deletion (since 2026-12-01T10:00:00Z); "
                     "a pass after it is gone creates it again")


@pytest.mark.parametrize("meta", [{}, {"deletionTimestamp": None}, {"deletionTimestamp": ""}])
def test_without_a_deletion_timestamp_nothing_is_pending(meta):
    assert health.pending_deletion({"metadata": meta}, "Service") is None
    assert health.pending_deletion(None, "Service") is None
    assert health.pending_deletion({}, "Service") is None


def test_the_application_of_a_child_being_deleted_is_progressing_with_the_childs_name():
    found = registry.health({"Deployment": deleting(dep()), "Service": {"spec": {}}}, spec=SEED)
    assert found.status == Status.PROGRESSING and found.message.startswith("Deployment: Deployment web is pending deletion")


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.yaml")), ids=lambda p: p.stem)
def test_trim_keeps_every_answer_of_health_and_everything_but_conditions(path):
    import copy

    from agent.server import triggers

    obj = yaml.safe_load(path.read_text())
    trimmed = registry.trim(copy.deepcopy(obj))
    assert deployment_kind.health(trimmed) == deployment_kind.health(obj)
    assert service_kind.health(trimmed) == service_kind.health(obj)
    assert triggers.fingerprint(trimmed) == triggers.fingerprint(obj)
    without = lambda o: {**o, "status": {k: v for k, v in (o.get("status") or {}).items() if k != "conditions"}}
    assert without(trimmed) == without(obj)


def test_trim_cuts_a_deployments_conditions_to_what_health_reads():
    obj = fixture("deployment-progress-deadline-exceeded")
    deadline = next(c for c in obj["status"]["conditions"] if c["type"] == "Progressing")
    trimmed = registry.trim(fixture("deployment-progress-deadline-exceeded"))["status"]["conditions"]
    assert deadline in trimmed  # the condition health reports stays whole, message and all
    assert all(set(c) == {"type", "status", "reason"} for c in trimmed if c != deadline)
    healthy = registry.trim(fixture("deployment-healthy"))["status"]["conditions"]
    assert healthy == [{k: c[k] for k in ("type", "status", "reason")}
                       for c in fixture("deployment-healthy")["status"]["conditions"]]
    service = fixture("service-loadbalancer-ready")
    assert registry.trim(fixture("service-loadbalancer-ready")) == service


def test_a_child_whose_name_another_object_holds_is_missing_and_says_so():
    taken = registry.health({}, frozenset({"Service"}), SEED)
    assert (taken.status, taken.message) == (
        health.Status.MISSING, "Deployment: Deployment does not exist")  # the worst, first by name, on a tie
    only = registry.health({"Deployment": fixture("deployment-healthy")}, frozenset({"Service"}), SEED)
    assert (only.status, only.message) == (
        health.Status.MISSING, "Service: another Service of this name exists and is not the agent's, so the agent's "
                        "is not created")
    assert registry.health({"Deployment": fixture("deployment-healthy"), "Service": fixture("service-clusterip")}, frozenset({"ConfigMap"}), SEED).status == health.Status.HEALTHY


# -- view: what a pass keeps of each child it applied ----------------------------------------------

FULL_DEPLOYMENT = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "ns", "generation": 3, "uid": "u-1", "resourceVersion": "9",
                 "deletionTimestamp": "2026-01-01T00:00:00Z", "labels": {"a": "b"},
                 "managedFields": [{"manager": "gitops-agent"}]},
    "spec": {"replicas": 2, "paused": True, "selector": {"matchLabels": {"a": "b"}},
             "template": {"spec": {"containers": [{"name": "app", "image": "nginx"}]}}},
    "status": {"observedGeneration": 3, "replicas": 2, "conditions": [{"type": "Available", "status": "True"}]},
}


def test_view_keeps_exactly_what_health_and_status_read_and_leaves_the_object_alone():
    before = yaml.safe_load(yaml.safe_dump(FULL_DEPLOYMENT))
    assert health.view(FULL_DEPLOYMENT) == {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns", "generation": 3, "deletionTimestamp": "2026-01-01T00:00:00Z",
                     "resourceVersion": "9"},
        "spec": {"replicas": 2, "paused": True},
        "status": FULL_DEPLOYMENT["status"],
    }
    assert FULL_DEPLOYMENT == before


def test_view_of_a_service_keeps_its_type_and_leaves_out_what_is_absent():
    svc = {"kind": "Service", "metadata": {"name": "web", "uid": "u"}, "spec": {"type": "LoadBalancer", "ports": []}}
    assert health.view(svc) == {"kind": "Service", "metadata": {"name": "web"}, "spec": {"type": "LoadBalancer"}}
    assert health.view({}) == {"metadata": {}, "spec": {}}


@pytest.mark.parametrize("change", [
    {}, {"metadata": {"name": "web", "generation": 4}}, {"spec": {"replicas": 5}}, {"spec": {"paused": True}},
    {"status": {"observedGeneration": 1, "replicas": 3, "updatedReplicas": 1, "availableReplicas": 1}},
    {"metadata": {"name": "web", "deletionTimestamp": "2026-01-01T00:00:00Z"}},
    {"status": {"conditions": [{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                                "message": "too slow"}]}},
])
def test_health_of_a_view_is_the_health_of_the_whole_object(change):
    obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "generation": 1},
           "spec": {"replicas": 1, "template": {}}, "status": {"observedGeneration": 1, "replicas": 1,
                                                              "updatedReplicas": 1, "availableReplicas": 1}}
    obj.update(change)
    assert deployment_kind.health(health.view(obj)) == deployment_kind.health(obj)
    svc = {"kind": "Service", "metadata": obj["metadata"], "spec": {"type": "LoadBalancer"}, "status": obj["status"]}
    assert service_kind.health(health.view(svc)) == service_kind.health(svc)
