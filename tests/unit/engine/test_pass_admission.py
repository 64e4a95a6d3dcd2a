"""What admission says, in the pass against the in-memory cluster: the API server's warnings of a
write (``FakeCluster.warn``, as PodSecurity's ``warn`` mode answers) in the report (text, json,
markdown) and one ``AdmissionWarning`` Event per distinct text (per pass in ``sync --once``,
per process in ``run``); a Deployment whose pods no node fits read with its pods (one LIST, only
then) so that its health names ``FailedScheduling``. The real-cluster suite is
tests/test_admission.py."""

from __future__ import annotations

import datetime

import jsonschema
import pytest

from agent.cli import output
from agent.common import rfc3339
from agent.engine import statuses, steady as steady_
from agent.engine.report import CONFIGURED, CREATED
from tests.unit.cli.test_ci import SCHEMA
from tests.unit.engine.passes import NS, World, app_yaml, rolled_out
from tests.unit.fakecluster import FakeCluster

PSA = 'would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "web" must set ...)'
UNSCHEDULABLE = "0/1 nodes are available: 1 Insufficient cpu."


def pod_reads(world: World) -> int:
    """How many pod lists the passes so far sent (``FakeCluster.requests``)."""
    return sum((r.verb, r.kind) == ("list_in", "Pod") for r in world.kube.requests)


@pytest.fixture
def world(tmp_path):
    world = World(tmp_path)
    world.kube = FakeCluster()
    world.kube.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    return world


def told(world: World) -> list[str]:
    return [e["message"] for e in world.kube.events if e["reason"] == "AdmissionWarning"]


def test_a_warning_of_an_apply_is_reported_and_told_once_per_pass(world):
    world.kube.warn("Deployment", PSA, "second")
    world.commit({"web.yaml": app_yaml("web")})
    report = world.sync()
    [change] = [c for c in report.changes if c.subject == f"Deployment/{NS}/web"]
    assert (change.action, change.warnings) == (CREATED, (PSA, "second"))
    assert all(not c.warnings for c in report.changes if c is not change)  # the Service was not warned of
    assert f"  Deployment/{NS}/web created\n    warning: {PSA}\n    warning: second\n" in report.summary()
    assert told(world) == [f"Deployment/{NS}/web: {PSA}; Deployment/{NS}/web: second"]
    [event] = [e for e in world.kube.events if e["reason"] == "AdmissionWarning"]
    assert (event["type"], event["kind"], event["name"]) == ("Warning", "Application", "web")

    doc = output.pass_document(report, command="sync", dry_run=False, exit_code=0,
                               source={"repo": "r", "ref": None, "path": "."})
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    objects = {o["subject"]: o for a in doc["applications"] for o in a["objects"]}
    assert objects[f"Deployment/{NS}/web"]["warnings"] == [PSA, "second"]
    assert "warnings" not in objects[f"Service/{NS}/web"]  # absent when nothing was said
    assert f"    warning: {PSA}" in output.text(doc).splitlines()
    assert f"> **Warning** `Deployment/{NS}/web`: {PSA}" in output.markdown(doc)

    world.sync()  # nothing applied: nothing warned of, nothing told
    assert len(told(world)) == 1
    world.commit({"web.yaml": app_yaml("web", replicas=2)})
    report = world.sync()  # sync --once: a new pass that applies tells again
    assert [c.warnings for c in report.changes if c.subject.startswith("Deployment/")] == [(PSA, "second")]
    assert len(told(world)) == 2


def test_run_tells_each_text_once_and_a_new_one_when_it_comes(world):
    steady = steady_.Steady()
    world.kube.warn("Deployment", PSA)
    world.commit({"web.yaml": app_yaml("web")})
    world.sync(steady=steady)
    world.commit({"web.yaml": app_yaml("web", replicas=2)})
    report = world.sync(steady=steady)
    assert [(c.action, c.warnings) for c in report.changes if c.subject.startswith("Deployment/")] == [
        (CONFIGURED, (PSA,))]  # the report says it each time
    assert told(world) == [f"Deployment/{NS}/web: {PSA}"]  # the Event once
    world.kube.warn("Deployment", PSA, "new")
    world.commit({"web.yaml": app_yaml("web", replicas=3)})
    world.sync(steady=steady)
    assert told(world) == [f"Deployment/{NS}/web: {PSA}", f"Deployment/{NS}/web: new"]


def test_a_warning_of_a_failed_write_is_not_kept_for_the_next_one(world):
    world.kube.warn("Service", "of the service")
    world.commit({"web.yaml": app_yaml("web")})
    report = world.sync()
    warned = {c.subject: c.warnings for c in report.changes if c.warnings}
    assert warned == {f"Service/{NS}/web": ("of the service",)}


def pending_pod(world: World, name: str, scheduled: dict | None) -> None:
    labels = world.child("Deployment", "web")["spec"]["selector"]["matchLabels"]
    world.kube.add({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS, "labels": labels},
                    "status": {"phase": "Pending", "conditions": [scheduled] if scheduled else []}})


def waiting(world: World, available: int = 0) -> None:
    """The Deployment ``web`` with its one pod made and not available, as its controller says."""
    live = world.child("Deployment", "web")
    live["status"] = {"observedGeneration": live["metadata"]["generation"], "replicas": 1, "updatedReplicas": 1,
                      "availableReplicas": available, "unavailableReplicas": 1 - available}
    world.kube.put(live, manager="kube-controller-manager", subresource="status")


def test_a_pod_no_node_fits_is_named_in_the_health_the_pass_writes(world):
    world.commit({"web.yaml": app_yaml("web")})
    world.sync()
    assert pod_reads(world) == 0  # nothing made yet: nothing to read
    pending_pod(world, "web-1", {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                 "message": UNSCHEDULABLE})
    pending_pod(world, "other", None)
    waiting(world)
    report = world.sync()
    assert pod_reads(world) == 1
    assert report.health[f"{NS}/web"] == {
        "status": "Progressing", "message": "Deployment: waiting for rollout to finish: 0 of 1 replicas available; "
                                            f"FailedScheduling: {UNSCHEDULABLE}"}
    assert world.app("web")["status"]["health"] == report.health[f"{NS}/web"]
    rolled_out(world, "web")
    report = world.sync()
    assert pod_reads(world) == 1  # healthy: no read
    assert report.health[f"{NS}/web"]["status"] == "Healthy"


def test_a_steady_pass_reads_no_pod_and_reads_are_bounded(world, monkeypatch):
    monkeypatch.setattr(statuses, "MAX_POD_READS", 2)
    world.commit({f"{n}.yaml": app_yaml(n) for n in ("a", "b", "c")})
    def versions(kind, namespace, name, read):  # as the live store answers (test_pass_steady.py)
        stored = world.kube.stored(kind, namespace, name) if kind else None
        return stored["metadata"]["resourceVersion"] if stored else read
    steady = steady_.Steady(versions=versions)
    world.sync(steady=steady)
    for n in ("a", "b", "c"):
        live = world.child("Deployment", n)
        live["status"] = {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "unavailableReplicas": 1}
        world.kube.put(live, manager="kube-controller-manager", subresource="status")
    report = world.sync(steady=steady)
    assert pod_reads(world) == 2
    # in a rollout not yet decided: looked at again (run's retry pass), never kept steady
    assert sorted(report.rechecks) == [f"{NS}/{n}" for n in ("a", "b", "c")]
    assert report.retry_at == min(report.rechecks.values())
    world.sync(steady=steady)
    assert pod_reads(world) == 4
    for n in ("a", "b", "c"):
        rolled_out(world, n)
    report = world.sync(steady=steady)  # available: no read, nothing to look at again
    assert pod_reads(world) == 4 and not report.rechecks
    world.sync(steady=steady)  # nothing moved: its statuses are not even computed
    assert pod_reads(world) == 4


def test_statuses_written_in_batches_count_pod_reads_across_them_and_say_what_one_batch_says(world, monkeypatch):
    names = ("a", "b", "c", "d", "e")
    world.commit({f"{n}.yaml": app_yaml(n) for n in names})
    world.sync()
    for n in names:
        live = world.child("Deployment", n)
        live["status"] = {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "unavailableReplicas": 1}
        world.kube.put(live, manager="kube-controller-manager", subresource="status")
    monkeypatch.setattr(statuses, "MAX_POD_READS", 3)
    monkeypatch.setattr(statuses, "STATUS_BATCH", 2)
    batched = world.sync()
    assert pod_reads(world) == 3  # the budget of the pass, not of each batch
    monkeypatch.setattr(statuses, "STATUS_BATCH", 128)
    whole = world.sync()
    assert pod_reads(world) == 6
    assert list(batched.health.items()) == list(whole.health.items())
    assert [(c.subject, c.action) for c in batched.changes] == [(c.subject, c.action) for c in whole.changes]
    assert sorted(batched.rechecks) == sorted(whole.rechecks) == [f"{NS}/{n}" for n in names]
    assert whole.health[f"{NS}/d"] is whole.health[f"{NS}/e"]  # equal healths: one dict (d, e: no pod read)


IMAGE_PULL = 'Back-off pulling image "registry.example/web:nope"'


def later(monkeypatch, seconds: float) -> None:
    """The pass's clock ``seconds`` from now (the fake cluster stamps each pod's creation now)."""
    moment = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=seconds)
    monkeypatch.setattr(statuses, "clock", lambda: moment)


def failing_pod(world: World, name: str, reason: str = "ImagePullBackOff", restarts: int = 0) -> None:
    labels = world.child("Deployment", "web")["spec"]["selector"]["matchLabels"]
    world.kube.add({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": name, "namespace": NS, "labels": labels},
                    "status": {"phase": "Pending", "containerStatuses": [
                        {"name": "web", "ready": False, "restartCount": restarts,
                         "state": {"waiting": {"reason": reason, "message": IMAGE_PULL}}}]}})


def test_a_pod_that_cannot_start_is_degraded_after_fail_after_seconds(world):
    world.commit({"web.yaml": app_yaml("web") + "  rollout:\n    failAfterSeconds: 30\n"})
    world.sync()
    waiting(world)
    failing_pod(world, "web-1")
    report = world.sync()
    health = report.health[f"{NS}/web"]
    assert health["status"] == "Progressing"
    assert f"; ImagePullBackOff: container web: {IMAGE_PULL} (Degraded at " in health["message"]
    due = report.rechecks[f"{NS}/web"]  # the end of the grace: run's next pass then
    created = world.child("Pod", "web-1")["metadata"]["creationTimestamp"]  # the failure's since, in whole seconds
    assert report.retry_at == due and due == rfc3339.parse(created) + datetime.timedelta(seconds=30)


def test_past_the_grace_the_reason_is_the_health_message_everywhere(world, monkeypatch):
    world.commit({"web.yaml": app_yaml("web")})
    world.sync()
    waiting(world)
    failing_pod(world, "web-1")
    later(monkeypatch, 121)
    report = world.sync()
    degraded = {"status": "Degraded", "message": f"Deployment: ImagePullBackOff: container web: {IMAGE_PULL}"}
    assert report.health[f"{NS}/web"] == degraded
    assert world.app("web")["status"]["health"] == degraded
    assert f"{NS}/web" not in report.rechecks  # decided: nothing to look at again
    assert report.readiness[f"{NS}/web"][0] == "False"


@pytest.mark.parametrize("restarts, status", [(2, "Progressing"), (3, "Degraded")])
def test_a_crash_loop_counts_from_three_restarts(world, monkeypatch, restarts, status):
    world.commit({"web.yaml": app_yaml("web")})
    world.sync()
    waiting(world)
    failing_pod(world, "web-1", "CrashLoopBackOff", restarts=restarts)
    later(monkeypatch, 121)
    health = world.sync().health[f"{NS}/web"]
    assert health["status"] == status
    assert ("CrashLoopBackOff" in health["message"]) is (status == "Degraded")


def test_a_refused_pod_is_degraded_from_the_conditions_transition_without_a_pod_read(world):
    world.commit({"web.yaml": app_yaml("web") + "  rollout:\n    failAfterSeconds: 60\n"})
    world.sync()
    live = world.child("Deployment", "web")
    live["status"] = {"observedGeneration": 1, "replicas": 0, "updatedReplicas": 0, "conditions": [
        {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "lastTransitionTime": "2020-01-01T00:00:00Z",
         "message": 'pods "web-1" is forbidden: violates PodSecurity "restricted:latest"'}]}
    world.kube.put(live, manager="kube-controller-manager", subresource="status")
    report = world.sync()
    assert pod_reads(world) == 0
    assert report.health[f"{NS}/web"] == {"status": "Degraded", "message": 'Deployment: FailedCreate: pods "web-1" is '
                                          'forbidden: violates PodSecurity "restricted:latest"'}


def test_run_judges_a_pending_grace_again_without_any_object_moving(world, monkeypatch):
    def versions(kind, namespace, name, read):
        stored = world.kube.stored(kind, namespace, name) if kind else None
        return stored["metadata"]["resourceVersion"] if stored else read
    steady = steady_.Steady(versions=versions)
    world.commit({"web.yaml": app_yaml("web")})
    world.sync(steady=steady)
    waiting(world)
    failing_pod(world, "web-1")
    report = world.sync(steady=steady)
    assert report.health[f"{NS}/web"]["status"] == "Progressing" and f"{NS}/web" in report.rechecks
    later(monkeypatch, 121)  # run's retry pass at the grace's end: nothing watched moved
    report = world.sync(steady=steady)
    assert report.health[f"{NS}/web"]["status"] == "Degraded" and not report.rechecks
    assert world.app("web")["status"]["health"]["message"].startswith("Deployment: ImagePullBackOff: ")
    reads = pod_reads(world)
    report = world.sync(steady=steady)  # decided: kept steady, no pod read
    assert pod_reads(world) == reads and report.health[f"{NS}/web"]["status"] == "Degraded"
