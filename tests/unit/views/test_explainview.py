"""``explain``'s pure parts: the verdict, kstatus messages, pod reasons, drift, Events."""

import copy
import datetime

import pytest

from agent.cli import explain_cmd
from agent.kinds import registry
from agent.views import explainview as ev

NOW = datetime.datetime(2026, 12, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)


def app(ready=("True", "Healthy", "all children healthy"), synced=("True", "Synced", "ok"), health="Healthy",
        health_message="", generation=1, observed=1, **status):
    conditions = [{"type": "Ready", "status": ready[0], "reason": ready[1], "message": ready[2]},
                  {"type": "Synced", "status": synced[0], "reason": synced[1], "message": synced[2]}]
    return {"metadata": {"name": "web", "namespace": "shop", "generation": generation, "uid": "u1"},
            "spec": {"image": "nginx:1.27", "replicas": 2, "port": 80},
            "status": {"observedGeneration": observed, "health": {"status": health, "message": health_message},
                       "conditions": conditions, **status}}


def text(obj, in_git=None):
    return ev.verdict(obj, NOW, in_git)["text"]


def test_synced_and_healthy_is_the_only_ok_verdict():
    assert ev.verdict(app(), NOW) == {"state": "Synced", "text": "Synced and healthy", "ok": True}
    assert ev.verdict(app(generation=2), NOW) == {"state": "Progressing", "text": "Progressing", "ok": False}


def test_progressing_and_degraded():
    assert text(app(ready=("False", "Progressing", "m"), health="Progressing")) == "Progressing"
    assert text(app(ready=("False", "Degraded", "m"), health="Degraded",
                    health_message="Deployment: progress deadline exceeded")) == \
        "Degraded: Deployment: progress deadline exceeded"
    assert text({"metadata": {"name": "web", "namespace": "shop", "generation": 1}}) == "Progressing"


def test_a_running_task_is_progressing_and_a_failed_one_degraded_never_an_apply_failure():
    """``TaskRunning`` and ``TaskFailed`` are the Synced reason (``engine.taskgate``), not a
    failed apply; a rollout held by its task is Progressing even where the children differ from Git."""
    running = "waiting for task migrate (Job web-migrate-3f2a9c1e) to complete before the rollout"
    held = app(ready=("False", "TaskRunning", running), synced=("False", "TaskRunning", running),
               health="Progressing", health_message=running)
    assert ev.verdict(held, NOW, drifted=1) == {"state": "Progressing", "text": f"Progressing: {running}", "ok": False}
    failed = "task migrate failed (Job web-migrate-3f2a9c1e failed: BackoffLimitExceeded: ...)"
    stalled = app(ready=("False", "TaskFailed", failed), synced=("False", "TaskFailed", failed), health="Degraded",
                  health_message=failed, nextRetryTime="2026-12-01T13:00:00Z")
    assert ev.verdict(stalled, NOW) == {"state": "Degraded", "text": f"Degraded: {failed}", "ok": False}
    assert text(app(ready=("False", "TaskFailed", failed), synced=("False", "TaskFailed", failed),
                    suspended=True)) == "Suspended"


def test_suspended():
    assert text(app(suspended=True)) == "Suspended"
    assert text(app(ready=("False", "Suspended", "m"))) == "Suspended"


def test_not_in_git_and_blocked_pruning():
    kept = ("False", "PruneSkipped", "no longer in Git at commit abc; kept because pruning is off (--no-prune)")
    assert ev.verdict(app(synced=kept), NOW) == {"state": "NotInGit", "text": "Not in Git", "ok": False}
    blocked = ("False", "PruneBlocked", "no longer in Git at commit abc; kept because pruning was blocked this pass")
    assert ev.verdict(app(synced=blocked), NOW) == {"state": "PruneBlocked", "text": "Blocked: pruning held back",
                                                    "ok": False}
    assert text(app(synced=blocked), in_git=False) == "Blocked: pruning held back"
    assert text(app(), in_git=False) == "Not in Git"
    assert text(app(), in_git=True) == "Synced and healthy"


def test_blocked_is_the_reason_not_a_word_in_the_message():
    """A kept Application's message may quote a source or file name with "blocked" in it: only
    the reason ``PruneBlocked`` says the prune was held back."""
    elsewhere = ("False", "PruneSkipped", "no longer in Git at commit abc; kept because source "
                 "'https://git.example/team/blocked-apps.git' ('apps/blocked.yaml') still has it in Git; hand it over")
    assert text(app(synced=elsewhere)) == "Not in Git"
    assert text(app(synced=elsewhere), in_git=False) == "Not in Git"
    assert text(app(synced=("False", "PruneBlocked", "kept"))) == "Blocked: pruning held back"


def test_an_invalid_document_in_git_is_invalid_not_absent():
    """A refused document is not loaded, so a read of Git finds no valid document for it: the
    status's reason tells it apart from one Git no longer has."""
    why = "apps/web.yaml:7: spec.replicas: must be at least 0 (got -1)"
    for reason in ("InvalidManifest", "InvalidSpec"):
        broken = app(ready=("False", "Stalled", why), synced=("False", reason, why))
        assert ev.verdict(broken, NOW, in_git=False) == {"state": "InvalidInGit", "text": f"Invalid in Git: {why}",
                                                         "ok": False}
        assert text(broken) == f"Invalid in Git: {why}"
    assert text(app(synced=("False", "InvalidManifest", ""))) == "Invalid in Git: InvalidManifest"
    assert text(app(synced=("True", "InvalidManifest", why)), in_git=False) == "Not in Git"


def test_ownership_conflict():
    assert text(app(synced=("False", "OwnershipConflict", "Deployment/shop/web: exists ..."))) == "Ownership conflict"


def test_backoff_only_for_a_failure_retrying_may_fix_and_a_retry_ahead():
    failed = ("False", "SyncFailed", "Deployment/shop/web: 500 InternalError: etcd timeout")
    assert ev.verdict(app(synced=failed, nextRetryTime="2026-12-01T12:00:40Z"), NOW) == \
        {"state": "Backoff", "text": "In backoff until 2026-12-01T12:00:40Z", "ok": False}
    assert text(app(synced=failed, nextRetryTime="2026-12-01T11:59:00Z")) == "Apply failed: SyncFailed"
    assert text(app(synced=failed)) == "Apply failed: SyncFailed"


def test_apply_failed_names_the_field():
    invalid = ("False", "Invalid", 'Deployment.apps "web" is invalid: spec.template.spec.containers[0].image: '
                                   "Required value")
    assert ev.verdict(app(synced=invalid, nextRetryTime="2026-12-01T12:00:40Z"), NOW) == \
        {"state": "ApplyFailed", "text": "Apply failed at spec.template.spec.containers[0].image", "ok": False}
    manifest = ("False", "InvalidManifest", "apps/web.yaml:5: spec.replicas: must be at least 0")
    assert text(app(synced=manifest)) == "Invalid in Git: apps/web.yaml:5: spec.replicas: must be at least 0"


@pytest.mark.parametrize("message, field", [
    ("metadata.namspace: unknown field", "metadata.namspace"),
    ("x.spec.replicas: no", None),
    ('"web" is invalid: data.key-1: Invalid value', "data.key-1"),
    ("nothing here", None), (None, None),
])
def test_field_in(message, field):
    assert ev.field_in(message) == field


def deployment(want=3, generation=1, observed=1, **status):
    return {"kind": "Deployment", "metadata": {"name": "web", "generation": generation},
            "spec": {"replicas": want}, "status": {"observedGeneration": observed, **status}}


AVAILABLE = [{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
             {"type": "Available", "status": "True"}]


@pytest.mark.parametrize("obj, message", [
    (None, "not found"),
    ({"kind": "Deployment", "metadata": {"deletionTimestamp": "x"}}, "Resource scheduled for deletion"),
    (deployment(generation=3, observed=2), "Deployment generation is 3, but latest observed generation is 2"),
    (deployment(conditions=[{"type": "Progressing", "reason": "ProgressDeadlineExceeded"}]),
     "Progress deadline exceeded"),
    (deployment(replicas=2), "Replicas: 2/3"),
    (deployment(replicas=3, updatedReplicas=1), "Updated: 1/3"),
    (deployment(want=3, replicas=4, updatedReplicas=3), "Pending termination: 1"),
    (deployment(replicas=3, updatedReplicas=3, availableReplicas=2), "Available: 2/3"),
    (deployment(replicas=3, updatedReplicas=3, availableReplicas=3, readyReplicas=2), "Ready: 2/3"),
    (deployment(replicas=3, updatedReplicas=3, availableReplicas=3, readyReplicas=3), "ReplicaSet not Available"),
    (deployment(replicas=3, updatedReplicas=3, availableReplicas=3, readyReplicas=3, conditions=AVAILABLE[:1]),
     "Deployment not Available"),
    (deployment(replicas=3, updatedReplicas=3, availableReplicas=3, readyReplicas=3, conditions=AVAILABLE),
     "Deployment is available. Replicas: 3"),
    ({"kind": "Service", "spec": {"type": "LoadBalancer"}}, "ClusterIP not set. Service type: LoadBalancer"),
    ({"kind": "Service", "spec": {"type": "LoadBalancer", "clusterIP": "10.0.0.1"}}, "Service is ready"),
    ({"kind": "ConfigMap", "metadata": {}}, "Resource is current"),
    ({"kind": "PodDisruptionBudget", "metadata": {"generation": 1}, "status": {}},
     "Warning: allows 0 disruptions: an eviction (a node drain) waits until more pods are healthy; "
     "healthy replicas: 0/0"),
    ({"kind": "PodDisruptionBudget", "metadata": {"generation": 2}, "status": {"observedGeneration": 1}},
     "PodDisruptionBudget generation is 2, but latest observed generation is 1"),
    ({"kind": "PodDisruptionBudget", "status": {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1}},
     "Warning: allows 0 disruptions: an eviction (a node drain) waits until more pods are healthy; "
     "healthy replicas: 1/1"),
    ({"kind": "PodDisruptionBudget", "status": {"disruptionsAllowed": 1, "currentHealthy": 1, "desiredHealthy": 2}},
     "Budget not met. healthy replicas: 1/2"),
    ({"kind": "PodDisruptionBudget", "status": {"disruptionsAllowed": 1, "currentHealthy": 2, "desiredHealthy": 1}},
     "AllowedDisruptions has been computed. Allows 1"),
])
def test_child_message_is_kstatus(obj, message):
    assert ev.child_message(obj) == message


def test_a_deployment_without_spec_replicas_wants_one():
    obj = deployment(replicas=1, updatedReplicas=1, availableReplicas=0)
    del obj["spec"]["replicas"]
    assert ev.child_message(obj) == "Available: 0/1"


def test_child_reads_health_by_kind():
    assert ev.child("Service", "web", None) == {"kind": "Service", "name": "web", "exists": False,
                                                "health": registry.BY_KIND["Service"].health(None).as_status(),
                                                "message": "not found"}
    assert ev.child("Service", "web", None)["health"]["status"] == "Missing"
    assert ev.child("Unknown", "web", {"kind": "Unknown"})["health"] == {"status": "Healthy", "message": ""}


def test_a_deployments_health_names_a_pod_no_node_fits_as_the_pass_does():
    from tests.unit.kinds.test_health import fixture

    live, unscheduled = fixture("deployment-unschedulable"), fixture("pod-unschedulable")
    health = ev.child("Deployment", "unschedulable", live, [unscheduled])["health"]
    assert health["status"] == "Progressing"
    assert health["message"].startswith("waiting for rollout to finish: 0 of 1 replicas available; FailedScheduling: "
                                        "0/1 nodes are available: 1 Insufficient cpu.")
    assert ev.child("Deployment", "unschedulable", live)["health"]["message"] == \
        "waiting for rollout to finish: 0 of 1 replicas available"
    assert ev.child("Service", "web", {"kind": "Service"}, [unscheduled])["health"]["status"] == "Healthy"


def test_a_deployments_health_names_a_container_that_cannot_start_degraded_past_the_grace():
    from tests.unit.kinds.test_health import fixture

    live = fixture("deployment-unschedulable")
    pulling = {"metadata": {"name": "unschedulable-1", "creationTimestamp": "2026-12-06T16:00:00Z"},
               "status": {"containerStatuses": [{"name": "web", "restartCount": 0, "state": {"waiting": {
                   "reason": "ImagePullBackOff", "message": 'Back-off pulling image "x"'}}}]}}
    at = datetime.datetime(2026, 12, 6, 16, 1, 0, tzinfo=datetime.timezone.utc)
    within = ev.child("Deployment", "unschedulable", live, [pulling], at, 120)["health"]
    assert within == {"status": "Progressing", "message": "waiting for rollout to finish: 0 of 1 replicas available; "
                      'ImagePullBackOff: container web: Back-off pulling image "x" (Degraded at 2026-12-06T16:02:00Z if '
                      "it lasts)"}
    assert ev.child("Deployment", "unschedulable", live, [pulling], at, 60)["health"] == {
        "status": "Degraded", "message": 'ImagePullBackOff: container web: Back-off pulling image "x"'}


def pod(phase="Pending", ready="False", conditions=(), statuses=(), init=()):
    return {"metadata": {"name": "web-1"},
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": ready}, *conditions],
                       "containerStatuses": list(statuses), "initContainerStatuses": list(init)}}


def test_a_ready_pod_has_no_problems():
    assert ev.pod(pod("Running", "True")) == {"name": "web-1", "phase": "Running", "ready": True, "problems": []}


def test_an_unscheduled_pod_carries_the_schedulers_message():
    unscheduled = pod(conditions=[{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                   "message": "0/1 nodes are available: 1 Insufficient cpu."}])
    assert ev.pod(unscheduled)["problems"] == [
        {"container": None, "state": "unscheduled", "reason": "Unschedulable",
         "message": "0/1 nodes are available: 1 Insufficient cpu.", "exitCode": None, "restarts": 0}]


def test_waiting_and_terminated_containers():
    pulling = {"name": "app", "ready": False, "restartCount": 0,
               "state": {"waiting": {"reason": "ImagePullBackOff", "message": 'Back-off pulling image "x"'}}}
    crashing = {"name": "app", "ready": False, "restartCount": 4,
                "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}},
                "lastState": {"terminated": {"reason": "Error", "exitCode": 1, "message": "boom"}}}
    done = {"name": "init", "ready": False, "state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}
    assert ev.pod(pod(statuses=[pulling]))["problems"] == [
        {"container": "app", "state": "waiting", "reason": "ImagePullBackOff", "message": 'Back-off pulling image "x"',
         "exitCode": None, "restarts": 0}]
    assert ev.pod(pod("Running", statuses=[crashing], init=[done]))["problems"] == [
        {"container": "init", "state": "terminated", "reason": "OOMKilled", "message": None, "exitCode": 137,
         "restarts": 0},
        {"container": "app", "state": "waiting", "reason": "CrashLoopBackOff", "message": "back-off 40s",
         "exitCode": None, "restarts": 4, "last": {"reason": "Error", "exitCode": 1, "message": "boom"}}]


def test_a_running_container_not_ready_and_a_bare_pending_pod():
    running = {"name": "app", "ready": False, "restartCount": 1, "state": {"running": {}}}
    assert ev.pod(pod("Running", statuses=[running]))["problems"] == [
        {"container": "app", "state": "running", "reason": "NotReady",
         "message": "running, not ready (its readiness probe fails)", "exitCode": None, "restarts": 1}]
    assert ev.pod(pod())["problems"] == [
        {"container": None, "state": "pod", "reason": "Pending", "message": None, "exitCode": None, "restarts": 0}]


def test_drift_names_the_field_and_the_manager_that_took_it():
    desired = registry.children("web", "shop", "u1", {"image": "nginx:1.27", "replicas": 2, "port": 80})[0]
    live = copy.deepcopy(desired)
    live["spec"]["replicas"] = 5
    live["metadata"]["managedFields"] = [
        {"manager": "gitops-agent", "operation": "Apply", "fieldsV1": {"f:spec": {"f:selector": {}}}},
        {"manager": "kubectl-scale", "operation": "Update", "subresource": "scale",
         "fieldsV1": {"f:spec": {"f:replicas": {}}}},
        {"manager": "kube-controller-manager", "operation": "Update", "subresource": "status",
         "fieldsV1": {"f:spec": {"f:replicas": {}}}}]
    found = ev.drift(live, desired)
    assert {"object": "Deployment/web", "field": "spec.replicas", "against": "Git", "want": 2, "live": 5,
            "managers": ["kubectl-scale"]} in found


def test_drift_matches_keyed_list_entries_and_reads_no_drift_in_an_equal_object():
    desired = {"kind": "Deployment", "metadata": {"name": "web"},
               "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}}}
    live = copy.deepcopy(desired)
    live["metadata"]["managedFields"] = [{"manager": "gitops-agent", "operation": "Apply", "fieldsV1": {
        "f:metadata": {"f:name": {}}, "f:spec": {"f:template": {"f:spec": {"f:containers": {
            'k:{"name":"app"}': {".": {}, "f:image": {}, "f:name": {}}}}}}}}]
    assert ev.drift(live, desired) == []
    live["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:evil"
    live["metadata"]["managedFields"].append({"manager": "kubectl-edit", "operation": "Update", "fieldsV1": {
        "f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"app"}': {"f:image": {}}}}}}}})
    assert ev.drift(live, desired) == [{"object": "Deployment/web", "field": "spec.template.spec.containers[app].image",
                                        "against": "Git", "want": "nginx:1.27", "live": "nginx:evil",
                                        "managers": ["kubectl-edit"]}]
    assert ev.drift(None, desired) == [] and ev.drift(live, None) == []


def test_events_newest_first_of_the_applications_objects_only():
    items = [
        {"involvedObject": {"kind": "Pod", "name": "web-1"}, "type": "Warning", "reason": "FailedScheduling",
         "message": "m1", "lastTimestamp": "2026-12-01T11:00:00Z", "count": 3},
        {"involvedObject": {"kind": "Pod", "name": "other"}, "type": "Normal", "reason": "X", "message": "no",
         "lastTimestamp": "2026-12-01T11:59:00Z"},
        {"involvedObject": {"kind": "Application", "name": "web"}, "type": "Normal", "reason": "Created",
         "message": "m2", "eventTime": "2026-12-01T11:30:00.123456Z"},
        {"involvedObject": {"kind": "Deployment", "name": "web"}, "type": "Normal", "reason": "Scaled",
         "message": "m3", "metadata": {"creationTimestamp": "2026-12-01T10:00:00Z"}},
    ]
    objects = {("Application", "web"), ("Deployment", "web"), ("Pod", "web-1")}
    assert [(e["reason"], e["object"], e["count"]) for e in ev.events(items, objects)] == [
        ("Created", "Application/web", 1), ("FailedScheduling", "Pod/web-1", 3), ("Scaled", "Deployment/web", 1)]
    assert len(ev.events(items * 3, objects)) == 5
    assert len(ev.events(items, objects, limit=1)) == 1


def test_history_and_the_changed_commit():
    entry = {"digest": "sha256:ab", "revision": "c" * 40, "firstSyncedAt": "a", "lastSyncedAt": "b", "passes": 2,
             "extra": 1}
    assert ev.history(app(history=[entry, "junk"])) == [{k: entry[k] for k in ev.HISTORY_KEYS}]
    assert ev.history(app()) == []
    assert ev.changed_commit(app(lastChangedCommit="d" * 40)) == "d" * 40
    annotated = app()
    annotated["metadata"]["annotations"] = {"heumsi.github.io/source-commit": "e" * 40}
    assert ev.changed_commit(annotated) == "e" * 40
    assert ev.changed_commit(app()) is None
    assert ev.commit(None) is None
    assert ev.commit("f" * 40, {"author": "A", "date": "D", "subject": "S"}) == {
        "sha": "f" * 40, "short": "ffffffff", "author": "A", "date": "D", "subject": "S"}


def test_an_explanation_gathers_everything():
    found = ev.explanation(app(sourcePath="apps/web.yaml"), {"Deployment": None, "Service": None}, [], [], NOW,
                           {"available": False, "reason": "no repository", "url": None})
    assert found["verdict"]["text"] == "Synced and healthy"
    assert found["source"] == {"path": "apps/web.yaml", "line": None, "repository": None, "ref": None}
    assert [c["kind"] for c in found["children"]] == ["Deployment", "Service"]
    assert found["git"] == {"available": False, "reason": "no repository", "url": None}
    assert sorted(found) == ["admission", "application", "children", "commits", "conditions", "diff", "drift", "events",
                             "git", "history", "observed", "pods", "schedules", "source", "tasks", "verdict"]
    assert found["observed"] == {"health": "Healthy", "at": None, "by": None}
    assert "Health       Healthy" in explain_cmd.render(found, NOW)  # written before observedAt: no age to say


def test_explain_says_when_and_by_what_the_health_was_observed():
    found = ev.explanation(app(health="Progressing", observedAt="2026-12-01T11:48:00Z", observedBy="sync --once"),
                           {"Deployment": None, "Service": None}, [], [], NOW, None)
    assert found["observed"] == {"health": "Progressing", "at": "2026-12-01T11:48:00Z", "by": "sync --once"}
    lines = explain_cmd.render(found, NOW)
    assert lines[lines.index("Health       Progressing, 12m ago, by sync --once") - 1].startswith("Changed ")
    later = NOW + datetime.timedelta(hours=2)  # the age is the reader's: the same status, read later
    assert "Health       Progressing, 132m ago, by sync --once" in explain_cmd.render(found, later)


def test_admission_warnings_are_kept_whatever_the_other_events():
    def event(n, reason, kind="Application", name="web"):
        return {"involvedObject": {"kind": kind, "name": name}, "reason": reason, "type": "Warning",
                "message": f"m{n}", "lastTimestamp": f"2026-12-01T10:00:{n:02d}Z"}
    items = [event(1, "AdmissionWarning"), event(2, "AdmissionWarning", name="other"),
             *[event(n, "FailedCreate", "Deployment") for n in range(10, 20)], event(3, "AdmissionWarning")]
    found = ev.explanation(app(), {"Deployment": None, "Service": None}, [], items, NOW)
    assert all(e["reason"] == "FailedCreate" for e in found["events"])  # the newest five
    assert found["admission"] == [{"time": "2026-12-01T10:00:03Z", "message": "m3"},
                                  {"time": "2026-12-01T10:00:01Z", "message": "m1"}]


def test_an_explanation_shows_each_cronjob_and_the_schedules_status():
    shop = app(sourcePath="apps/web.yaml", schedules=[{"name": "a", "cronJob": "web-a", "active": 0,
                                                       "lastFailure": {"job": "web-a-1", "time": "t"}}])
    shop["spec"]["schedules"] = {"a": {"schedule": "@daily"}, "b": {"schedule": "@hourly", "suspend": True}}
    live_b = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "web-b"},
              "spec": {"schedule": "@daily", "suspend": True}}
    found = ev.explanation(shop, {"Deployment": None, "Service": None, "CronJob/web-b": live_b}, [], [], NOW)
    assert [(c["kind"], c["name"], c["exists"]) for c in found["children"]][2:] == [
        ("CronJob", "web-a", False), ("CronJob", "web-b", True)]
    assert found["children"][3]["health"]["status"] == "Suspended"
    assert {"object": "CronJob/web-b", "field": "spec.schedule", "want": "@hourly", "live": "@daily"}.items() <= \
        next(d for d in found["drift"] if d["object"] == "CronJob/web-b" and d["field"] == "spec.schedule").items()
    assert found["schedules"][0]["lastFailure"]["job"] == "web-a-1"


def _synced_app(spec: dict) -> dict:
    return {"kind": "Application", "metadata": {"name": "api", "namespace": "shop", "uid": "u1", "generation": 2,
                                                "managedFields": [
        {"manager": "gitops-agent", "operation": "Apply", "fieldsV1": {"f:spec": {"f:image": {}}}},
        {"manager": "kubectl-patch", "operation": "Update", "fieldsV1": {"f:spec": {"f:replicas": {}}}}]},
            "spec": spec, "status": {"observedGeneration": 2, "health": {"status": "Healthy"}, "conditions": [
                {"type": "Synced", "status": "True", "reason": "Synced"},
                {"type": "Ready", "status": "True", "reason": "Healthy"}]}}


def test_drift_of_the_application_is_against_its_spec_in_git_and_the_verdict_says_drifted():
    """``kubectl patch app api`` to 4 replicas (Git: 1), its Deployment already at 4: the
    Application and its Deployment both differ from Git, and the verdict says so (exit 1)."""
    app = _synced_app({"image": "nginx:1.27", "port": 80, "replicas": 4})
    children = {c["kind"]: c for c in registry.children("api", "shop", "u1", app["spec"])}
    git = {"available": True, "in_git": True, "spec": {"image": "nginx:1.27", "port": 80, "replicas": 1}}
    e = ev.explanation(app, children, [], [], NOW, git)
    assert e["drift"][0] == {"object": "Application/api", "field": "spec.replicas", "against": "Git", "want": 1,
                             "live": 4, "managers": ["kubectl-patch"]}
    assert {"object": "Deployment/api", "field": "spec.replicas", "against": "Git", "want": 1, "live": 4,
            "managers": []} in e["drift"]
    assert e["verdict"] == {"state": ev.DRIFTED, "ok": False,
                            "text": "Drifted: 2 fields differ from Git (the next pass puts them back)"}
    lines = explain_cmd.render(e, NOW)
    assert "  Application/api spec.replicas: Git 1, live 4 (changed by kubectl-patch)" in lines
    assert "Drift from Git:" in lines


def test_without_git_children_drift_is_against_what_the_live_application_renders():
    app = _synced_app({"image": "nginx:1.27", "port": 80, "replicas": 4})
    children = {c["kind"]: c for c in registry.children("api", "shop", "u1", app["spec"])}
    assert ev.explanation(app, children, [], [], NOW, None)["verdict"]["text"] == "Synced and healthy"
    children["Deployment"]["spec"]["replicas"] = 1  # scaled by hand
    e = ev.explanation(app, children, [], [], NOW, {"available": False, "reason": "no repository"})
    assert [(d["object"], d["against"], d["want"], d["live"]) for d in e["drift"]] == [
        ("Deployment/api", "rendered", 4, 1)]
    assert e["verdict"]["text"] == "Drifted: 1 field differs from what the agent renders (the next pass puts them back)"
    lines = explain_cmd.render(e, NOW)
    assert "  Deployment/api spec.replicas: rendered 4, live 1" in lines
    assert "Drift from what the agent renders from the live Application (Git not read):" in lines
    assert not any("Git 4" in line for line in lines)


def test_a_field_only_another_manager_owns_is_listed_but_not_drifted():
    app = _synced_app({"image": "nginx:1.27", "port": 80, "replicas": 1})
    children = {c["kind"]: c for c in registry.children("api", "shop", "u1", app["spec"])}
    children["Deployment"]["metadata"]["managedFields"] = [
        {"manager": "kubectl-scale", "operation": "Update", "fieldsV1": {"f:spec": {"f:replicas": {}}}}]
    e = ev.explanation(app, children, [], [], NOW, {"available": True, "in_git": True, "spec": dict(app["spec"])})
    assert e["drift"] and e["verdict"]["ok"]


def test_explain_prints_each_schedule_with_its_last_failure():
    from agent.cli import explain_cmd

    shop = app(schedules=[{"name": "report", "cronJob": "web-report", "active": 1,
                           "lastScheduleTime": "2026-12-01T11:00:00Z", "lastSuccessfulTime": "2026-12-01T10:00:00Z",
                           "lastFailure": {"job": "web-report-1", "time": "2026-12-01T11:30:00Z",
                                           "reason": "BackoffLimitExceeded", "message": "backoff limit"}},
                          {"name": "idle", "cronJob": "web-idle", "active": 0, "suspended": True}])
    lines = explain_cmd.render(ev.explanation(shop, {}, [], [], NOW), NOW)
    at = lines.index("Schedules:")
    assert lines[at + 1:at + 3] == [
        "  report  CronJob/web-report  last run 60m ago, last success 120m ago, 1 running; last failure "
        "Job/web-report-1 30m ago (BackoffLimitExceeded: backoff limit)",
        "  idle  CronJob/web-idle  suspended  last run never, last success never, 0 running"]


TASK_RUNS = [
    {"name": "migrate", "digest": "3f2a9c1e00000000", "job": "web-migrate-3f2a9c1e", "phase": "Succeeded",
     "commit": "c" * 40, "startTime": "2026-12-01T11:50:00Z", "completionTime": "2026-12-01T11:55:00Z"},
    {"name": "seed", "digest": "7b7b7b7b00000000", "job": "web-seed-7b7b7b7b", "phase": "Failed", "commit": "c" * 40,
     "startTime": "2026-12-01T11:55:00Z", "completionTime": "2026-12-01T11:58:00Z",
     "message": "Job web-seed-7b7b7b7b failed: BackoffLimitExceeded: Job has reached the specified backoff limit"},
    {"name": "warm", "digest": "9d9d9d9d00000000", "job": "web-warm-9d9d9d9d", "phase": "Pending",
     "message": "Job web-warm-9d9d9d9d waits for the rollout to finish"}]


def test_an_explanation_lists_the_tasks_a_failed_one_first_and_their_jobs_events():
    shop = app(tasks=TASK_RUNS + ["junk"])
    shop["spec"]["tasks"] = {"migrate": {"args": ["migrate"]}, "seed": {"args": ["seed"]},
                             "warm": {"args": ["warm"], "when": "AfterRollout"}}
    event = {"involvedObject": {"kind": "Job", "name": "web-seed-7b7b7b7b"}, "type": "Warning",
             "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit",
             "lastTimestamp": "2026-12-01T11:58:00Z"}
    other = {**event, "involvedObject": {"kind": "Job", "name": "other-seed-7b7b7b7b"}}
    found = ev.explanation(shop, {"Deployment": None, "Service": None}, [], [event, other], NOW)
    assert [e["name"] for e in found["tasks"]] == ["seed", "migrate", "warm"]
    assert found["tasks"][0] == TASK_RUNS[1]
    assert [e["object"] for e in found["events"]] == ["Job/web-seed-7b7b7b7b"]
    assert [c["kind"] for c in found["children"]] == ["Deployment", "Service"]  # no Job: the tasks say
    assert ev.explanation(app(), {}, [], [], NOW)["tasks"] == []


def test_explain_prints_each_task_with_its_phase_job_times_and_message():
    from agent.cli import explain_cmd

    lines = explain_cmd.render(ev.explanation(app(tasks=TASK_RUNS), {}, [], [], NOW), NOW)
    at = lines.index("Tasks:")
    assert lines[at + 1:] == [
        "  seed  Failed  Job/web-seed-7b7b7b7b  started 5m ago, finished 2m ago  Job web-seed-7b7b7b7b failed: "
        "BackoffLimitExceeded: Job has reached the specified backoff limit",
        "  migrate  Succeeded  Job/web-migrate-3f2a9c1e  started 10m ago, finished 5m ago",
        "  warm  Pending  Job/web-warm-9d9d9d9d  Job web-warm-9d9d9d9d waits for the rollout to finish"]
    assert "Tasks:" not in explain_cmd.render(ev.explanation(app(), {}, [], [], NOW), NOW)


def test_a_worker_explains_its_deployment_alone():
    """An Application without a port (issue 43) has no Service: ``explain`` and the status page
    list its Deployment alone, and a Service left live from before is no child of it."""
    worker = app()
    del worker["spec"]["port"]
    deployment = registry.children("web", "shop", "u1", worker["spec"])[0]
    found = ev.explanation(worker, {"Deployment": deployment, "Service": {"kind": "Service"}}, [], [], NOW)
    assert [(c["kind"], c["exists"]) for c in found["children"]] == [("Deployment", True)]
    assert found["drift"] == []


def test_drift_is_against_the_children_rendered_with_the_agents_default_security_profile():
    app = _synced_app({"image": "nginx:1.27", "port": 80, "replicas": 4})
    children = {c["kind"]: c for c in registry.children("api", "shop", "u1", app["spec"])}  # under the default none
    assert ev.explanation(app, children, [], [], NOW, None)["drift"] == []
    found = ev.explanation(app, children, [], [], NOW, None, default_profile="restricted")["drift"]
    assert {"object": "Deployment/api", "field": "spec.template.spec.securityContext.runAsNonRoot",
            "against": ev.RENDERED, "want": True, "live": None, "managers": []} in found
