"""status: conditions, commits and times computed from one pass's outcome."""

import pytest

from agent.engine import status

SHA1, SHA2 = "1" * 40, "2" * 40


def app(old_status=None, generation=3, replicas=2):
    return {"metadata": {"name": "web", "generation": generation}, "spec": {"replicas": replicas, "port": 80},
            "status": old_status or {}}


def deployment(ready=2, replicas=2):
    return {"metadata": {"generation": 1}, "spec": {"replicas": replicas},
            "status": {"observedGeneration": 1, "replicas": replicas, "updatedReplicas": replicas,
                       "readyReplicas": ready, "availableReplicas": ready}}


SERVICE = {"spec": {"type": "ClusterIP"}}


def test_success_records_commit_children_and_ready():
    out = status.compute(app(), status.Outcome(True, True, SHA1, "Synced", "ok", "a.yaml"), {"Deployment": deployment(), "Service": SERVICE}, "T1")
    assert out["lastSyncedCommit"] == out["lastAttemptedCommit"] == SHA1
    assert out["lastSyncedCommitShort"] == SHA1[:7]
    assert (out["deployment"], out["service"], out["observedGeneration"]) == ("web", "web", 3)
    assert (out["replicas"], out["readyReplicas"], out["lastSyncTime"]) == (2, 2, "T1")
    conditions = {c["type"]: c for c in out["conditions"]}
    assert conditions["Ready"]["status"] == conditions["Synced"]["status"] == "True"
    assert conditions["Ready"]["observedGeneration"] == 3


def test_failure_never_advances_the_synced_commit():
    first = status.compute(app(), status.Outcome(True, True, SHA1, "Synced", "ok"), {"Deployment": deployment(), "Service": SERVICE}, "T1")
    out = status.compute(app(first), status.Outcome(False, False, SHA2, "SyncFailed", "boom"), {"Deployment": deployment(), "Service": SERVICE}, "T2")
    assert (out["lastSyncedCommit"], out["lastAttemptedCommit"]) == (SHA1, SHA2)
    assert out["lastSyncTime"] == "T1"
    conditions = {c["type"]: c for c in out["conditions"]}
    assert conditions["Synced"] == {"type": "Synced", "status": "False", "reason": "SyncFailed",
                                    "message": "boom", "lastTransitionTime": "T2", "observedGeneration": 3}


def test_unchanged_pass_computes_the_same_status():
    first = status.compute(app(), status.Outcome(True, True, SHA1, "Synced", "ok"), {"Deployment": deployment(), "Service": SERVICE}, "T1")
    again = status.compute(app(first), status.Outcome(True, False, SHA1, "Synced", "ok"), {"Deployment": deployment(), "Service": SERVICE}, "T2")
    assert not status.differs(first, again)


def test_not_ready_until_replicas_are_ready():
    out = status.compute(app(), status.Outcome(True, True, None, "Synced", "ok"), {"Deployment": deployment(ready=1), "Service": SERVICE}, "T1")
    ready = next(c for c in out["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "Progressing")
    assert "lastSyncedCommit" not in out and "lastAttemptedCommit" not in out


OK = status.Outcome(True, False, SHA1, "Synced", "ok")


def kinds(out):
    return {c["type"]: (c["status"], c["reason"]) for c in out["conditions"]}


@pytest.mark.parametrize("dep, svc, health", [
    (deployment(), SERVICE, {"status": "Healthy", "message": "all children healthy"}),
    (deployment(ready=1), SERVICE,
     {"status": "Progressing", "message": "Deployment: waiting for rollout to finish: 1 of 2 replicas available"}),
    (None, SERVICE, {"status": "Missing", "message": "Deployment: Deployment does not exist"}),
    (deployment(), None, {"status": "Missing", "message": "Service: Service does not exist"}),
])
def test_health_is_the_worst_of_deployment_and_service(dep, svc, health):
    assert status.compute(app(), OK, {"Deployment": dep, "Service": svc}, "T1")["health"] == health


@pytest.mark.parametrize("outcome, dep, expected", [
    (OK, deployment(), {"Ready": ("True", "Healthy"), "Synced": ("True", "Synced")}),
    (OK, deployment(ready=1), {"Ready": ("False", "Progressing"), "Reconciling": ("True", "Progressing"),
                               "Synced": ("True", "Synced")}),
    (status.Outcome(False, False, SHA1, "InvalidManifest", "bad"), deployment(),
     {"Ready": ("False", "InvalidManifest"), "Stalled": ("True", "InvalidManifest"),
      "Synced": ("False", "InvalidManifest")}),
    (status.Outcome(False, False, SHA1, "SyncFailed", "boom"), deployment(ready=1),
     {"Ready": ("False", "SyncFailed"), "Synced": ("False", "SyncFailed")}),
])
def test_conditions_follow_kstatus(outcome, dep, expected):
    out = status.compute(app(), outcome, {"Deployment": dep, "Service": SERVICE}, "T1")
    assert kinds(out) == expected
    assert [c["type"] for c in out["conditions"]][0] == "Ready"
    assert [c["type"] for c in out["conditions"]][-1] == "Synced"
    for condition in out["conditions"]:
        assert condition["observedGeneration"] == 3 and condition["lastTransitionTime"] == "T1"
        assert set(condition) == {"type", "status", "reason", "message", "lastTransitionTime", "observedGeneration"}


def test_reconciling_goes_away_when_the_rollout_finishes_and_ready_flips_once():
    rolling = status.compute(app(), OK, {"Deployment": deployment(ready=1), "Service": SERVICE}, "T1")
    still = status.compute(app(rolling), OK, {"Deployment": deployment(ready=1), "Service": SERVICE}, "T2")
    assert not status.differs(rolling, still)
    done = status.compute(app(still), OK, {"Deployment": deployment(), "Service": SERVICE}, "T3")
    assert kinds(done) == {"Ready": ("True", "Healthy"), "Synced": ("True", "Synced")}
    times = {c["type"]: c["lastTransitionTime"] for c in done["conditions"]}
    assert times == {"Ready": "T3", "Synced": "T1"}


def test_stalled_appears_with_the_failure_and_goes_with_the_fix():
    bad = status.Outcome(False, False, SHA2, "ImmutableConflict", "spec.selector is immutable")
    first = status.compute(app(), OK, {"Deployment": deployment(), "Service": SERVICE}, "T1")
    stalled = status.compute(app(first), bad, {"Deployment": deployment(), "Service": SERVICE}, "T2")
    stall = next(c for c in stalled["conditions"] if c["type"] == "Stalled")
    assert (stall["status"], stall["message"], stall["lastTransitionTime"]) == ("True", "spec.selector is immutable", "T2")
    fixed = status.compute(app(stalled), OK, {"Deployment": deployment(), "Service": SERVICE}, "T3")
    assert "Stalled" not in kinds(fixed)


def test_replicas_are_read_from_the_deployment_status():
    out = status.compute(app(replicas=5), OK, {"Deployment": deployment(ready=1, replicas=3), "Service": SERVICE}, "T1")
    assert (out["replicas"], out["readyReplicas"]) == (3, 1)
    empty = status.compute(app(), OK, {"Deployment": None, "Service": None}, "T1")
    assert (empty["replicas"], empty["readyReplicas"]) == (0, 0)


def test_sync_time_moves_when_the_commit_advances_without_a_change():
    first = status.compute(app(), status.Outcome(True, True, SHA1, "Synced", "ok"), {"Deployment": deployment(), "Service": SERVICE}, "T1")
    again = status.compute(app(first), status.Outcome(True, False, SHA2, "Synced", "ok"), {"Deployment": deployment(), "Service": SERVICE}, "T2")
    assert (again["lastSyncTime"], again["lastSyncedCommit"]) == ("T2", SHA2)
    same = "".join(["1"] * 40)  # equal to SHA1, another object: compared by value
    kept = status.compute(app(first), status.Outcome(True, False, same, "Synced", "ok"), {"Deployment": deployment(), "Service": SERVICE}, "T3")
    assert kept["lastSyncTime"] == "T1"


def test_hand_applied_first_pass_gets_a_sync_time_and_no_commit_or_path():
    out = status.compute(app(), status.Outcome(True, False, None, "Synced", "ok"), {"Deployment": deployment(), "Service": SERVICE}, "T1")
    assert out["lastSyncTime"] == "T1"
    assert not {"lastSyncedCommit", "lastAttemptedCommit", "sourcePath"} & set(out)
    with_path = status.compute(app(), status.Outcome(True, False, SHA1, "Synced", "ok", "apps/web.yaml"), {"Deployment": deployment(), "Service": SERVICE}, "T1")
    assert with_path["sourcePath"] == "apps/web.yaml"


def test_an_application_without_generation_is_observed_as_zero():
    bare = {"metadata": {"name": "web"}, "spec": {"replicas": 2}}
    out = status.compute(bare, OK, {"Deployment": deployment(), "Service": SERVICE}, "T1")
    assert out["observedGeneration"] == 0
    assert {c["observedGeneration"] for c in out["conditions"]} == {0}


def test_transition_times_survive_a_status_read_back_from_the_api_server():
    import json

    first = status.compute(app(), OK, {"Deployment": deployment(), "Service": SERVICE}, "T1")
    stored = json.loads(json.dumps(first))  # strings as a client parses them: equal, not identical
    again = status.compute(app(stored), OK, {"Deployment": deployment(), "Service": SERVICE}, "T2")
    assert {c["lastTransitionTime"] for c in again["conditions"]} == {"T1"}
    assert not status.differs(stored, again)
    assert status.differs(stored, status.compute(app(stored), OK, {"Deployment": deployment(ready=1), "Service": SERVICE}, "T2"))
    assert status.differs(None, again) and not status.differs(None, {})


def test_an_application_being_deleted_is_progressing_and_not_ready():
    # a finalizer holds it: however healthy its children, it is about to go (gitops-engine)
    live = app()
    live["metadata"]["deletionTimestamp"] = "2026-12-01T10:00:00Z"
    out = status.compute(live, status.Outcome(True, False, SHA1, "Synced", "ok", "a.yaml"), {"Deployment": deployment(), "Service": SERVICE}, "T1")
    assert out["health"] == {"status": "Progressing", "message": "Application web is pending deletion (since "
                             "2026-12-01T10:00:00Z); a pass after it is gone creates it again"}
    conditions = {c["type"]: c["status"] for c in out["conditions"]}
    assert conditions["Ready"] == "False"
    same = status.Outcome(True, False, SHA1, "Synced", "ok", "a.yaml")
    assert status.compute(app(), same, {"Deployment": deployment(), "Service": SERVICE}, "T1")["health"]["status"] == "Healthy"


@pytest.mark.parametrize("spec, named", [
    ({"image": "i", "replicas": 1, "port": 80}, {"deployment", "service"}),
    ({"image": "i", "port": 80, "ingress": {}, "files": {"/a": {"content": "x"}}},
     {"deployment", "service", "ingress", "configMap"}),
    ({"image": "i", "port": 80, "files": {"/a": {"secretRef": {"name": "s", "key": "k"}}},
      "autoscaling": {"maxReplicas": 2, "targetCPUUtilizationPercentage": 50}},
     {"deployment", "service", "horizontalPodAutoscaler"}),
    ({"image": "i", "replicas": 1}, {"deployment"}),  # a worker: no Service, and its health waits for none
    (None, {"deployment"}),
])
def test_status_names_only_the_children_the_application_has(spec, named):
    live = {**app(), "spec": spec}
    out = status.compute(live, OK, {"Deployment": deployment(), "Service": SERVICE}, "T1")
    children = {"deployment", "service", "configMap", "ingress", "horizontalPodAutoscaler"}
    assert {k for k in out if k in children} == named and all(out[k] == "web" for k in named)
    missing = named - {"deployment", "service"}
    assert out["health"]["status"] == ("Missing" if missing else "Healthy")


def test_the_source_line_goes_with_the_source_path_only():
    children = {"Deployment": deployment(), "Service": SERVICE}
    out = status.compute(app(), status.Outcome(True, True, SHA1, "Synced", "ok", "a.yaml", source_line=7), children, "T")
    assert (out["sourcePath"], out["sourceLine"]) == ("a.yaml", 7)
    out = status.compute(app(), status.Outcome(True, True, SHA1, "Synced", "ok", None, source_line=7), children, "T")
    assert "sourcePath" not in out and "sourceLine" not in out
    out = status.compute(app(), status.Outcome(True, False, SHA1, "Synced", "ok", "a.yaml"), children, "T")
    assert "sourceLine" not in out


SOURCE_DOWN = {"type": "SourceAvailable", "status": "False", "reason": "FetchFailed", "message": "boom",
               "lastTransitionTime": "T0", "observedGeneration": 3}


def test_a_pass_that_read_the_source_drops_source_available():
    out = status.compute(app({"conditions": [SOURCE_DOWN]}), status.Outcome(True, False, SHA1, "Synced", "ok"),
                         {"Deployment": deployment(), "Service": SERVICE}, "T1")
    assert [c["type"] for c in out["conditions"]] == ["Ready", "Synced"]


def test_a_pass_that_did_not_ask_git_keeps_source_available_before_synced():
    out = status.compute(app({"conditions": [SOURCE_DOWN]}),
                         status.Outcome(True, False, SHA1, "Synced", "ok", source_seen=False),
                         {"Deployment": deployment(), "Service": SERVICE}, "T1")
    assert [c["type"] for c in out["conditions"]] == ["Ready", "SourceAvailable", "Synced"]
    assert out["conditions"][1] == SOURCE_DOWN
    out = status.compute(app(), status.Outcome(True, False, SHA1, "Synced", "ok", source_seen=False),
                         {"Deployment": deployment(), "Service": SERVICE}, "T1")
    assert [c["type"] for c in out["conditions"]] == ["Ready", "Synced"]  # none to keep


def test_health_of_is_what_compute_records():
    children = {"Deployment": deployment(ready=1), "Service": SERVICE}
    outcome = status.Outcome(True, False, SHA1, "Synced", "ok")
    health = status.health_of(app(), outcome, children)
    assert (health.status, health.message) == ("Progressing",
                                               "Deployment: waiting for rollout to finish: 1 of 2 replicas available")
    assert status.compute(app(), outcome, children, "T1")["health"] == health.as_status()
    deleting = app()
    deleting["metadata"]["deletionTimestamp"] = "T0"
    assert status.health_of(deleting, outcome, children).as_status() == {
        "status": "Progressing", "message": "Application web is pending deletion (since T0); a pass after it is gone creates it again"}


def test_the_source_line_moves_only_on_a_write_made_anyway():
    """An upgrade from an agent that did not write sourceLine writes nothing for it."""
    children = {"Deployment": deployment(), "Service": SERVICE}
    synced = {"lastSyncedCommit": SHA1, "sourcePath": "a.yaml"}
    out = status.compute(app(synced), status.Outcome(True, False, SHA1, "Synced", "ok", "a.yaml", source_line=7),
                         children, "T")
    assert "sourceLine" not in out
    kept = status.compute(app({**synced, "sourceLine": 3}),
                          status.Outcome(True, False, SHA1, "Synced", "ok", "a.yaml", source_line=7), children, "T")
    assert kept["sourceLine"] == 3
    moved = status.compute(app({**synced, "sourceLine": 3}),
                           status.Outcome(True, False, SHA2, "Synced", "ok", "a.yaml", source_line=7), children, "T")
    assert moved["sourceLine"] == 7
