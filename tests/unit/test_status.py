"""status: conditions, commits and times computed from one pass's outcome."""

from agent import status

SHA1, SHA2 = "1" * 40, "2" * 40


def app(old_status=None, generation=3, replicas=2):
    return {"metadata": {"name": "web", "generation": generation}, "spec": {"replicas": replicas},
            "status": old_status or {}}


def deployment(ready=2, replicas=2):
    return {"metadata": {"generation": 1},
            "status": {"observedGeneration": 1, "replicas": replicas, "updatedReplicas": replicas,
                       "readyReplicas": ready}}


def test_success_records_commit_children_and_ready():
    out = status.compute(app(), status.Outcome(True, True, SHA1, "Synced", "ok", "a.yaml"), deployment(), "T1")
    assert out["lastSyncedCommit"] == out["lastAttemptedCommit"] == SHA1
    assert out["lastSyncedCommitShort"] == SHA1[:7]
    assert (out["deployment"], out["service"], out["observedGeneration"]) == ("web", "web", 3)
    assert (out["replicas"], out["readyReplicas"], out["lastSyncTime"]) == (2, 2, "T1")
    conditions = {c["type"]: c for c in out["conditions"]}
    assert conditions["Ready"]["status"] == conditions["Synced"]["status"] == "True"
    assert conditions["Ready"]["observedGeneration"] == 3


def test_failure_never_advances_the_synced_commit():
    first = status.compute(app(), status.Outcome(True, True, SHA1, "Synced", "ok"), deployment(), "T1")
    out = status.compute(app(first), status.Outcome(False, False, SHA2, "SyncFailed", "boom"), deployment(), "T2")
    assert (out["lastSyncedCommit"], out["lastAttemptedCommit"]) == (SHA1, SHA2)
    assert out["lastSyncTime"] == "T1"
    conditions = {c["type"]: c for c in out["conditions"]}
    assert conditions["Synced"] == {"type": "Synced", "status": "False", "reason": "SyncFailed",
                                    "message": "boom", "lastTransitionTime": "T2", "observedGeneration": 3}


def test_unchanged_pass_computes_the_same_status():
    first = status.compute(app(), status.Outcome(True, True, SHA1, "Synced", "ok"), deployment(), "T1")
    again = status.compute(app(first), status.Outcome(True, False, SHA1, "Synced", "ok"), deployment(), "T2")
    assert not status.differs(first, again)


def test_not_ready_until_replicas_are_ready():
    out = status.compute(app(), status.Outcome(True, True, None, "Synced", "ok"), deployment(ready=1), "T1")
    ready = next(c for c in out["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "Progressing")
    assert "lastSyncedCommit" not in out and "lastAttemptedCommit" not in out
