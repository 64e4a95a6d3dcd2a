"""``sync --wait``'s rules (``readiness``): what an Application's status says for the wait, the
wait's verdict, and the loop itself against an in-memory cluster whose Deployment becomes ready,
never does, or is past its deadline; plus ``statuswrite.write_source_unavailable``."""

import datetime
import threading

import pytest

from agent.engine import readiness, statuswrite
from agent.engine.report import Report
from agent.engine.status import Outcome

SHA = "a" * 40
OURS = [{"manager": "gitops-agent", "operation": "Apply"}]


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


def deployment(name, available):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "ns", "generation": 1, "managedFields": OURS,
                         "labels": {"app.kubernetes.io/managed-by": "gitops-agent"},
                         "ownerReferences": [{"apiVersion": "heumsi.github.io/v1", "kind": "Application",
                                              "name": name, "controller": True}]},
            "spec": {"replicas": 1},
            "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "readyReplicas": available,
                       "availableReplicas": available}}


def service(name):
    return {"apiVersion": "v1", "kind": "Service", "spec": {"type": "ClusterIP"},
            "metadata": {"name": name, "namespace": "ns", "managedFields": OURS,
                         "labels": {"app.kubernetes.io/managed-by": "gitops-agent"},
                         "ownerReferences": [{"apiVersion": "heumsi.github.io/v1", "kind": "Application",
                                              "name": name, "controller": True}]}}


class Cluster:
    """The few calls the wait makes, against dicts: Applications, and Deployments that become
    ready after ``ready_after`` looks (None: never)."""

    dry_run = False

    def __init__(self, names, ready_after=None, degraded=False):
        self.apps = {n: {"apiVersion": "heumsi.github.io/v1", "kind": "Application",
                         "metadata": {"name": n, "namespace": "ns", "generation": 1}, "spec": {"replicas": 1},
                         "status": {}} for n in names}
        self.looks, self.ready_after, self.degraded, self.writes = 0, ready_after, degraded, []

    def list_in(self, group, kind, namespace, selector=None):
        if kind == "Application":
            self.looks += 1
            return [dict(a) for a in self.apps.values()]
        ready = self.ready_after is not None and self.looks > self.ready_after
        if kind == "Deployment":
            out = [deployment(n, int(ready)) for n in self.apps]
            if self.degraded:
                for d in out:
                    d["status"]["conditions"] = [{"type": "Progressing", "status": "False",
                                                  "reason": "ProgressDeadlineExceeded"}]
            return out
        return [service(n) for n in self.apps] if kind == "Service" else []

    def patch_status(self, app, status):
        self.writes.append((app["metadata"]["name"], status))
        stored = {k: v for k, v in status.items() if v is not None}
        self.apps[app["metadata"]["name"]]["status"] = stored
        return {**app, "status": stored}

    def event(self, *args):
        pass


def report_for(names, **synced):
    report = Report(commit=SHA)
    report.synced = {f"ns/{n}": Outcome(True, False, SHA, "Synced", "ok", "a.yaml") for n in names}
    report.synced.update(synced)
    return report


def test_the_wait_rewrites_status_until_ready_and_reports_each_change():
    cluster, seen = Cluster(["web"], ready_after=2), []
    report = report_for(["web"])
    result = readiness.wait(cluster, report, 30, threading.Event(), poll=0.01,
                            on_change=lambda key, health: seen.append((key, health["status"])))
    assert (result.result, result.ok, result.states, result.not_healthy()) == ("healthy", True, {"ns/web": "healthy"}, [])
    assert seen == [("ns/web", "Progressing"), ("ns/web", "Healthy")]
    assert cluster.looks == 3 and len(cluster.writes) == 2  # the look that changed nothing wrote nothing
    stored = cluster.apps["web"]["status"]
    assert stored["health"] == {"status": "Healthy", "message": "all children healthy"}
    assert [(c["type"], c["status"]) for c in stored["conditions"]] == [("Ready", "True"), ("Synced", "True")]
    assert report.health == {"ns/web": {"status": "Healthy", "message": "all children healthy"}} and report.ok


def test_the_wait_times_out_and_names_who_is_not_healthy():
    cluster = Cluster(["web", "api"], ready_after=None)
    report = report_for(["web", "api"], **{"ns/held": None})
    result = readiness.wait(cluster, report, 0.05, threading.Event(), poll=0.01)
    assert result.result == "timeout" and not result.ok and result.not_healthy() == ["ns/api", "ns/web"]
    assert result.skipped == ["ns/held"] and result.timeout == 0.05 and result.seconds >= 0.05


def test_a_degraded_deployment_ends_the_wait_at_once():
    cluster = Cluster(["web"], degraded=True)
    result = readiness.wait(cluster, report_for(["web"]), 30, threading.Event(), poll=0.01)
    assert result.result == "failed" and cluster.looks == 1  # one look, not a poll until the 30 s


def test_a_deleted_application_fails_and_a_set_stop_interrupts():
    cluster = Cluster(["web"])
    result = readiness.wait(cluster, report_for(["web", "gone"]), 30, threading.Event(), poll=0.01)
    assert result.result == "failed" and result.states["ns/gone"] == "failed"
    stop = threading.Event()
    stop.set()
    result = readiness.wait(Cluster(["web"]), report_for(["web"]), 30, stop, poll=0.01)
    assert result.result == "interrupted" and result.not_healthy() == ["ns/web"]


def test_an_api_error_ends_the_wait_with_error():
    from agent.kube.client import ApiError

    class Down(Cluster):
        def list_in(self, *args, **kwargs):
            raise ApiError(0, "Unreachable", "connection refused")

    result = readiness.wait(Down(["web"]), report_for(["web"]), 30, threading.Event(), poll=0.01)
    assert result.result == "error" and "connection refused" in result.error


def test_nothing_to_wait_for_is_healthy_at_once():
    result = readiness.wait(Cluster([]), report_for([]), 30, threading.Event(), poll=0.01)
    assert result.result == "healthy" and result.states == {}


def test_write_source_unavailable_writes_once_and_keeps_since_when():
    cluster = Cluster(["web"])
    report, app = Report(), cluster.apps["web"]
    assert statuswrite.write_source_unavailable(cluster, report, "ns/web", app, "FetchFailed", "gone") is True
    [(_, sent)] = cluster.writes
    [condition] = sent["conditions"]
    assert {k: condition[k] for k in ("type", "status", "reason", "message")} == {
        "type": "SourceAvailable", "status": "False", "reason": "FetchFailed", "message": "gone"}
    assert statuswrite.write_source_unavailable(cluster, report, "ns/web", cluster.apps["web"], "FetchFailed",
                                                "gone") is False
    assert len(cluster.writes) == 1 and report.notes == []


def test_write_source_unavailable_notes_a_refusal_and_ignores_a_gone_application():
    from agent.kube.client import ApiError

    class Refuses(Cluster):
        def __init__(self, status):
            super().__init__(["web"])
            self.status = status

        def patch_status(self, app, status):
            raise ApiError(self.status, "Forbidden", "no")

    report = Report()
    app = Cluster(["web"]).apps["web"]
    assert statuswrite.write_source_unavailable(Refuses(403), report, "ns/web", app, "FetchFailed", "x") is False
    assert report.notes == ["Application/ns/web: could not record that its source is unavailable: "
                            + str(ApiError(403, "Forbidden", "no"))]
    assert statuswrite.write_source_unavailable(Refuses(404), Report(), "ns/web", app, "FetchFailed", "x") is False
    with pytest.raises(ApiError):
        statuswrite.write_source_unavailable(Refuses(0), Report(), "ns/web", app, "FetchFailed", "x")


class Unschedulable(Cluster):
    """``Cluster`` whose Deployment's pod no node fits, until it is ready; counts the pod lists."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.pod_lists = []

    def list_in(self, group, kind, namespace, selector=None):
        if kind != "Pod":
            return super().list_in(group, kind, namespace, selector)
        self.pod_lists.append((namespace, selector))
        labels = {"app.kubernetes.io/instance": "web", "heumsi.github.io/application": "web"}
        return [{"metadata": {"name": "web-1", "labels": labels},
                 "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                            "message": "0/1 nodes are available: 1 Insufficient cpu."}]}},
                {"metadata": {"name": "other-1", "labels": {**labels, "heumsi.github.io/application": "other"}},
                 "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                            "message": "not web's"}]}}]


def test_the_wait_keeps_naming_a_pod_no_node_fits_and_reads_pods_only_while_one_waits():
    cluster = Unschedulable(["web"], ready_after=2)
    report = report_for(["web"])
    seen = []
    result = readiness.wait(cluster, report, 30, threading.Event(), poll=0.01,
                            on_change=lambda key, health: seen.append(health))
    assert result.result == "healthy"
    assert seen[0] == {"status": "Progressing", "message": "Deployment: waiting for rollout to finish: 0 of 1 replicas "
                                                           "available; FailedScheduling: 0/1 nodes are available: 1 "
                                                           "Insufficient cpu."}
    assert cluster.pod_lists == [("ns", "app.kubernetes.io/managed-by=gitops-agent")] * 2  # not at the ready look


class Failing(Cluster):
    """``Cluster`` whose Deployment's one pod cannot pull its image, created ``age`` seconds ago."""

    def __init__(self, *args, age: float, **kwargs):
        super().__init__(*args, **kwargs)
        self.created = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=age)) \
            .strftime("%Y-%m-%dT%H:%M:%SZ")

    def list_in(self, group, kind, namespace, selector=None):
        if kind != "Pod":
            return super().list_in(group, kind, namespace, selector)
        labels = {"app.kubernetes.io/instance": "web", "heumsi.github.io/application": "web"}
        return [{"metadata": {"name": "web-1", "labels": labels, "creationTimestamp": self.created},
                 "status": {"containerStatuses": [{"name": "web", "restartCount": 0, "state": {"waiting": {
                     "reason": "ErrImagePull", "message": 'pull access denied for "nope"'}}}]}}]


def test_the_wait_ends_failed_as_soon_as_the_grace_of_a_pod_that_cannot_start_is_over():
    cluster = Failing(["web"], age=118.5)
    seen = []
    result = readiness.wait(cluster, report_for(["web"]), 30, threading.Event(), poll=0.1,
                            on_change=lambda key, health: seen.append(health))
    assert result.result == "failed" and 0.3 <= result.seconds <= 5
    assert seen[0]["status"] == "Progressing" and "; ErrImagePull: container web: " in seen[0]["message"]
    assert seen[-1] == {"status": "Degraded",
                        "message": "Deployment: ErrImagePull: container web: pull access denied for \"nope\""}
    assert cluster.apps["web"]["status"]["health"] == seen[-1]


def test_the_wait_reads_the_grace_of_the_applications_spec():
    cluster = Failing(["web"], age=30)
    cluster.apps["web"]["spec"]["rollout"] = {"failAfterSeconds": 20}
    result = readiness.wait(cluster, report_for(["web"]), 30, threading.Event(), poll=0.01)
    assert result.result == "failed" and cluster.looks == 1


def test_the_wait_for_chosen_keys_ends_healthy_while_another_is_degraded():
    """``sync --wait -l team=a`` (issue 46): only the chosen Applications are waited for and written."""

    class Mixed(Cluster):
        def list_in(self, group, kind, namespace, selector=None):
            out = super().list_in(group, kind, namespace, selector)
            if kind == "Deployment":
                out = [deployment(d["metadata"]["name"], int(d["metadata"]["name"] == "web")) for d in out]
                out[[d["metadata"]["name"] for d in out].index("broken")]["status"]["conditions"] = [
                    {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}]
            return out

    cluster = Mixed(["web", "broken"])
    report = report_for(["web", "broken"], **{"ns/held": None})
    result = readiness.wait(cluster, report, 30, threading.Event(), poll=0.01, keys=frozenset({"ns/web", "ns/x"}))
    assert (result.result, result.states, result.skipped) == ("healthy", {"ns/web": "healthy"}, [])
    assert [name for name, _ in cluster.writes] == ["web"] and list(report.health) == ["ns/web"]
    result = readiness.wait(Mixed(["web", "broken"]), report_for(["web", "broken"]), 30, threading.Event(), poll=0.01)
    assert result.result == "failed" and result.not_healthy() == ["ns/broken"]  # without a choice: both
