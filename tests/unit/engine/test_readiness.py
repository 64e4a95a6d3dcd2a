"""``sync --wait``'s rules (``readiness``): what an Application's status says for the wait, the
wait's verdict, and the loop itself against the in-memory cluster (``tests/unit/fakecluster.py``)
whose Deployment becomes ready, never does, or is past its deadline, whose pods no node fits or
cannot pull their image, or which cannot be reached; plus
``statuswrite.write_source_unavailable``."""

import datetime
import threading

import pytest

from agent.api.labels import APPLICATION_LABEL
from agent.api.schema import GROUP, KIND, VERSION
from agent.engine import readiness, statuswrite
from agent.engine.report import Report
from agent.engine.status import Outcome
from agent.kinds import registry
from agent.kube.cluster import ApiError
from tests.unit.fakecluster import FakeCluster

SHA = "a" * 40


def cond(type_, status):
    return {"type": type_, "status": status}


@pytest.mark.parametrize("status, state", [
    ({"conditions": [cond("Ready", "True"), cond("Synced", "True")]}, "healthy"),
    ({"conditions": [cond("Ready", "False"), cond("Reconciling", "True")], "health": {"status": "Progressing"}},
     "waiting"),
    ({"conditions": [cond("Ready", "False")], "health": {"status": "Degraded"}}, "failed"),
    ({"conditions": [cond("Ready", "False"), cond("Stalled", "True")], "health": {"status": "Missing"}}, "failed"),
    ({"conditions": [cond("Ready", "False"), cond("Stalled", "False")]}, "waiting"),
    ({"health": {"status": "Missing"}}, "waiting"), ({}, "waiting"), (None, "waiting"),
    ({"conditions": ["junk", cond("Ready", "True")]}, "healthy"),
])
def test_state(status, state):
    assert readiness.state(status) == state


@pytest.mark.parametrize("states, verdict", [
    ({}, "healthy"), ({"a": "healthy"}, "healthy"), ({"a": "healthy", "b": "waiting"}, "waiting"),
    ({"a": "waiting", "b": "failed"}, "failed"), ({"a": "healthy", "b": "failed"}, "failed"),
])
def test_verdict(states, verdict):
    assert readiness.verdict(states) == verdict


def test_count_ready():
    health = {"a/x": {"status": "Healthy"}, "a/y": {"status": "Healthy"}, "a/z": {"status": "Progressing"}}
    assert readiness.count_ready(health, ["a/y"]) == 1
    assert readiness.count_ready(health, []) == 2 and readiness.count_ready({}, []) == 0


NS = "ns"
SPEC = {"image": "nginx:1.27", "replicas": 1}


def world(names, ready=(), degraded=()) -> FakeCluster:
    """The in-memory cluster after a pass of the Applications ``names`` in ``ns`` (each with its
    Deployment, applied by the agent), their Deployments as their controller left them: available
    when named in ``ready``, past their progress deadline when named in ``degraded``. Its
    ``writes`` and ``requests`` start empty."""
    kube = FakeCluster(namespaces=(NS,))
    for name in names:
        app = kube.add({"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND, "metadata": {"name": name, "namespace": NS},
                        "spec": dict(SPEC)})
        for child in registry.children(name, NS, app["metadata"]["uid"], SPEC):
            kube.apply(child)
        roll(kube, name, name in ready, name in degraded)
    kube.writes.clear()  # the pass's writes: what the wait sends is what is left to see
    kube.requests.clear()
    return kube


def roll(kube: FakeCluster, name: str, available: bool, degraded: bool = False) -> None:
    """The Deployment ``name``'s status as ``kube-controller-manager`` writes it (status
    subresource): its one replica available or not; past its progress deadline."""
    live = kube.stored("Deployment", NS, name)
    live["status"] = {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "readyReplicas": int(available),
                      "availableReplicas": int(available)}
    if degraded:
        live["status"]["conditions"] = [{"type": "Progressing", "status": "False",
                                         "reason": "ProgressDeadlineExceeded"}]
    kube.put(live, manager="kube-controller-manager", subresource="status")


def ready_after(kube: FakeCluster, looks: int) -> None:
    """Every Deployment becomes available during look ``looks + 1`` (a look lists the
    Applications, then their children), as its controller would between two looks."""
    def hook(request):
        if len(lists(kube, KIND)) == looks + 1:
            for name in sorted(d["metadata"]["name"] for d in kube.of_kind("Deployment")):
                roll(kube, name, True)
    kube.on("list_in", KIND, hook)


def lists(kube: FakeCluster, kind: str) -> list[tuple[str, str | None]]:
    """(namespace, label selector) of each LIST of ``kind`` in a namespace sent so far."""
    return [(r.namespace, r.selector) for r in kube.requests if (r.verb, r.kind) == ("list_in", kind)]


def pod(kube: FakeCluster, name: str, application: str, status: dict, created: str | None = None) -> None:
    """A pod of the Deployment ``web``'s template (labelled for ``application``), its status as
    the kubelet or the scheduler writes it; ``created``: its creationTimestamp."""
    template = kube.stored("Deployment", NS, "web")["spec"]["template"]
    labels = {**template["metadata"]["labels"], APPLICATION_LABEL: application}
    kube.add({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS, "labels": labels},
              "spec": {"containers": [{"name": "web", "image": "nope"}]}}, manager="kube-controller-manager",
             created=created)
    live = kube.stored("Pod", NS, name)
    kube.put({**live, "status": status}, manager="kubelet", subresource="status")


def report_for(names, **synced):
    report = Report(commit=SHA)
    report.synced = {f"ns/{n}": Outcome(True, False, SHA, "Synced", "ok", "a.yaml") for n in names}
    report.synced.update(synced)
    return report


def test_the_wait_rewrites_status_until_ready_and_reports_each_change():
    kube, seen = world(["web"]), []
    ready_after(kube, 2)
    report = report_for(["web"])
    result = readiness.wait(kube, report, 30, threading.Event(), poll=0.01,
                            on_change=lambda key, health: seen.append((key, health["status"])))
    assert (result.result, result.ok, result.states) == ("healthy", True, {"ns/web": "healthy"})
    assert result.not_healthy() == [] and seen == [("ns/web", "Progressing"), ("ns/web", "Healthy")]
    # the look that changed nothing wrote nothing
    assert len(lists(kube, KIND)) == 3 and kube.writes == [("patch_status", "Application/ns/web")] * 2
    stored = kube.stored(KIND, NS, "web")["status"]
    assert stored["health"] == {"status": "Healthy", "message": "all children healthy"}
    assert [(c["type"], c["status"]) for c in stored["conditions"]] == [("Ready", "True"), ("Synced", "True")]
    assert report.health == {"ns/web": {"status": "Healthy", "message": "all children healthy"}} and report.ok


def test_the_wait_times_out_and_names_who_is_not_healthy():
    report = report_for(["web", "api"], **{"ns/held": None})
    result = readiness.wait(world(["web", "api"]), report, 0.05, threading.Event(), poll=0.01)
    assert result.result == "timeout" and not result.ok and result.not_healthy() == ["ns/api", "ns/web"]
    assert result.skipped == ["ns/held"] and result.timeout == 0.05 and result.seconds >= 0.05


def test_a_degraded_deployment_ends_the_wait_at_once():
    kube = world(["web"], degraded={"web"})
    result = readiness.wait(kube, report_for(["web"]), 30, threading.Event(), poll=0.01)
    assert result.result == "failed" and len(lists(kube, KIND)) == 1  # one look, not a poll until the 30 s


def test_a_deleted_application_fails_and_a_set_stop_interrupts():
    result = readiness.wait(world(["web"]), report_for(["web", "gone"]), 30, threading.Event(), poll=0.01)
    assert result.result == "failed" and result.states["ns/gone"] == "failed"
    stop = threading.Event()
    stop.set()
    result = readiness.wait(world(["web"]), report_for(["web"]), 30, stop, poll=0.01)
    assert result.result == "interrupted" and result.not_healthy() == ["ns/web"]


def test_an_api_error_ends_the_wait_with_error():
    kube = world(["web"])

    def down(request):
        raise ApiError(0, "Unreachable", "connection refused")

    kube.on("list_in", None, down)
    result = readiness.wait(kube, report_for(["web"]), 30, threading.Event(), poll=0.01)
    assert result.result == "error" and "connection refused" in result.error


def test_nothing_to_wait_for_is_healthy_at_once():
    result = readiness.wait(world([]), report_for([]), 30, threading.Event(), poll=0.01)
    assert result.result == "healthy" and result.states == {}


def test_write_source_unavailable_writes_once_and_keeps_since_when():
    kube = world(["web"])
    report, app = Report(), kube.stored(KIND, NS, "web")
    assert statuswrite.write_source_unavailable(kube, report, "ns/web", app, "FetchFailed", "gone") is True
    [condition] = kube.stored(KIND, NS, "web")["status"]["conditions"]
    assert {k: condition[k] for k in ("type", "status", "reason", "message")} == {
        "type": "SourceAvailable", "status": "False", "reason": "FetchFailed", "message": "gone"}
    assert statuswrite.write_source_unavailable(kube, report, "ns/web", kube.stored(KIND, NS, "web"), "FetchFailed",
                                                "gone") is False
    assert kube.writes == [("patch_status", "Application/ns/web")] and report.notes == []


def refusing(status: int) -> FakeCluster:
    """``world(["web"])`` whose every status write of ``web`` is answered ``status``."""
    kube = world(["web"])
    kube.fail("patch_status", "Application/ns/web", ApiError(status, "Forbidden", "no"), times=None)
    return kube


def test_write_source_unavailable_notes_a_refusal_and_ignores_a_gone_application():
    report = Report()
    kube = refusing(403)
    app = kube.stored(KIND, NS, "web")
    assert statuswrite.write_source_unavailable(kube, report, "ns/web", app, "FetchFailed", "x") is False
    assert report.notes == ["Application/ns/web: could not record that its source is unavailable: "
                            + str(ApiError(403, "Forbidden", "no"))]
    assert statuswrite.write_source_unavailable(refusing(404), Report(), "ns/web", app, "FetchFailed", "x") is False
    with pytest.raises(ApiError):
        statuswrite.write_source_unavailable(refusing(0), Report(), "ns/web", app, "FetchFailed", "x")


def unschedulable(message: str) -> dict:
    return {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}]}


def test_the_wait_keeps_naming_a_pod_no_node_fits_and_reads_pods_only_while_one_waits():
    kube = world(["web"])
    ready_after(kube, 2)
    pod(kube, "web-1", "web", unschedulable("0/1 nodes are available: 1 Insufficient cpu."))
    pod(kube, "other-1", "other", unschedulable("not web's"))
    report = report_for(["web"])
    seen = []
    result = readiness.wait(kube, report, 30, threading.Event(), poll=0.01,
                            on_change=lambda key, health: seen.append(health))
    assert result.result == "healthy"
    assert seen[0] == {"status": "Progressing", "message": "Deployment: waiting for rollout to finish: 0 of 1 replicas "
                                                           "available; FailedScheduling: 0/1 nodes are available: 1 "
                                                           "Insufficient cpu."}
    assert lists(kube, "Pod") == [("ns", "app.kubernetes.io/managed-by=gitops-agent")] * 2  # not at the ready look


def failing(age: float) -> FakeCluster:
    """``world(["web"])`` whose Deployment's one pod cannot pull its image, created ``age``
    seconds ago."""
    kube = world(["web"])
    created = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=age)) \
        .strftime("%Y-%m-%dT%H:%M:%SZ")
    pod(kube, "web-1", "web", {"containerStatuses": [{"name": "web", "restartCount": 0, "state": {"waiting": {
        "reason": "ErrImagePull", "message": 'pull access denied for "nope"'}}}]}, created=created)
    return kube


def test_the_wait_ends_failed_as_soon_as_the_grace_of_a_pod_that_cannot_start_is_over():
    kube = failing(age=118.5)
    seen = []
    result = readiness.wait(kube, report_for(["web"]), 30, threading.Event(), poll=0.1,
                            on_change=lambda key, health: seen.append(health))
    # the grace ends 0.5 to 1.5 s in (creationTimestamp is in whole seconds); a lower bound holds under load, and
    # the upper one is half the 30 s the wait would have taken had it not ended then (the policy in development.md)
    assert result.result == "failed" and 0.3 <= result.seconds < 15
    assert seen[0]["status"] == "Progressing" and "; ErrImagePull: container web: " in seen[0]["message"]
    assert seen[-1] == {"status": "Degraded",
                        "message": "Deployment: ErrImagePull: container web: pull access denied for \"nope\""}
    assert kube.stored(KIND, NS, "web")["status"]["health"] == seen[-1]


def test_the_wait_reads_the_grace_of_the_applications_spec():
    kube = failing(age=30)
    app = kube.stored(KIND, NS, "web")
    kube.put({**app, "spec": {**app["spec"], "rollout": {"failAfterSeconds": 20}}})
    result = readiness.wait(kube, report_for(["web"]), 30, threading.Event(), poll=0.01)
    assert result.result == "failed" and len(lists(kube, KIND)) == 1


def test_the_wait_for_chosen_keys_ends_healthy_while_another_is_degraded():
    """``sync --wait -l team=a`` (issue 46): only the chosen Applications are waited for and written."""
    kube = world(["web", "broken"], ready={"web"}, degraded={"broken"})
    report = report_for(["web", "broken"], **{"ns/held": None})
    result = readiness.wait(kube, report, 30, threading.Event(), poll=0.01, keys=frozenset({"ns/web", "ns/x"}))
    assert (result.result, result.states, result.skipped) == ("healthy", {"ns/web": "healthy"}, [])
    assert kube.writes == [("patch_status", "Application/ns/web")] and list(report.health) == ["ns/web"]
    kube = world(["web", "broken"], ready={"web"}, degraded={"broken"})
    result = readiness.wait(kube, report_for(["web", "broken"]), 30, threading.Event(), poll=0.01)
    assert result.result == "failed" and result.not_healthy() == ["ns/broken"]  # without a choice: both
