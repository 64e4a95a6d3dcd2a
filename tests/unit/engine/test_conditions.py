"""conditions: kstatus's Ready / Reconciling / Stalled plus Synced, from a pass's outcome and health."""

import pytest

from agent.engine import conditions
from agent.engine.conditions import Condition
from agent.kinds.health import Health

HEALTHY, PROGRESSING = Health("Healthy", "all children healthy"), Health("Progressing", "Deployment: rolling")
DEGRADED, MISSING = Health("Degraded", "Deployment: deadline"), Health("Missing", "Service: gone")
SUSPENDED = Health("Suspended", "Deployment: paused")


def table(ok, reason, message, health):
    return [(c.type, c.status, c.reason, c.message) for c in conditions.kstatus(ok, reason, message, health)]


@pytest.mark.parametrize("ok, reason, health, expected", [
    # synced and healthy: only Ready and Synced (abnormal-true conditions removed, as kstatus asks)
    (True, "Synced", HEALTHY, [("Ready", True, "Healthy", "all children healthy"),
                               ("Synced", True, "Synced", "msg")]),
    # synced, rolling out: Reconciling
    (True, "Synced", PROGRESSING, [("Ready", False, "Progressing", "Deployment: rolling"),
                                   ("Reconciling", True, "Progressing", "Deployment: rolling"),
                                   ("Synced", True, "Synced", "msg")]),
    # synced, rollout past its deadline: Stalled (kstatus: ProgressDeadlineExceeded is stalled)
    (True, "Synced", DEGRADED, [("Ready", False, "Degraded", "Deployment: deadline"),
                                ("Stalled", True, "Degraded", "Deployment: deadline"),
                                ("Synced", True, "Synced", "msg")]),
    (True, "Synced", MISSING, [("Ready", False, "Missing", "Service: gone"), ("Synced", True, "Synced", "msg")]),
    (True, "Synced", SUSPENDED, [("Ready", False, "Suspended", "Deployment: paused"),
                                 ("Synced", True, "Synced", "msg")]),
    # failures that a retry may fix: Ready False with the failure, nothing else
    (False, "SyncFailed", HEALTHY, [("Ready", False, "SyncFailed", "msg"), ("Synced", False, "SyncFailed", "msg")]),
    (False, "SyncFailed", PROGRESSING, [("Ready", False, "SyncFailed", "msg"),
                                        ("Synced", False, "SyncFailed", "msg")]),
    (False, "SyncFailed", DEGRADED, [("Ready", False, "SyncFailed", "msg"), ("Synced", False, "SyncFailed", "msg")]),
    (False, "PruneSkipped", HEALTHY, [("Ready", False, "PruneSkipped", "msg"),
                                      ("Synced", False, "PruneSkipped", "msg")]),
    # failures retrying cannot fix: Stalled with the failure's reason
    (False, "InvalidManifest", HEALTHY, [("Ready", False, "InvalidManifest", "msg"),
                                         ("Stalled", True, "InvalidManifest", "msg"),
                                         ("Synced", False, "InvalidManifest", "msg")]),
    (False, "ImmutableConflict", DEGRADED, [("Ready", False, "ImmutableConflict", "msg"),
                                            ("Stalled", True, "ImmutableConflict", "msg"),
                                            ("Synced", False, "ImmutableConflict", "msg")]),
])
def test_conditions_table(ok, reason, health, expected):
    assert table(ok, reason, "msg", health) == expected


@pytest.mark.parametrize("reason", ["InvalidManifest", "InvalidSpec", "ImmutableConflict", "Invalid"])
def test_every_stalled_reason_stalls(reason):
    assert ("Stalled", True, reason, "m") in table(False, reason, "m", MISSING)


@pytest.mark.parametrize("reason", ["SyncFailed", "PruneSkipped", "Synced", "Timeout"])
def test_other_failures_do_not_stall(reason):
    assert [c[0] for c in table(False, reason, "m", PROGRESSING)] == ["Ready", "Synced"]


def test_stalled_reasons_are_exactly_these():
    assert conditions.STALLED_REASONS == {"InvalidManifest", "InvalidSpec", "ImmutableConflict", "Invalid", "OwnershipConflict",
                                          "TaskFailed"}


@pytest.mark.parametrize("http_status, immutable, reason", [
    (422, True, "ImmutableConflict"),
    (409, True, "ImmutableConflict"),
    (422, False, "Invalid"),
    (409, False, "SyncFailed"),
    (403, False, "SyncFailed"),
    (500, False, "SyncFailed"),
    (404, False, "SyncFailed"),
])
def test_failure_reason(http_status, immutable, reason):
    assert conditions.failure_reason(http_status, immutable) == reason


def test_condition_is_a_plain_record():
    assert conditions.kstatus(True, "Synced", "m", HEALTHY)[0] == Condition("Ready", True, "Healthy",
                                                                           "all children healthy")


READY = {"type": "Ready", "status": "True", "reason": "Healthy", "message": "ok", "lastTransitionTime": "T0",
         "observedGeneration": 1}
SYNCED = {"type": "Synced", "status": "True", "reason": "Synced", "message": "m", "lastTransitionTime": "T0",
          "observedGeneration": 1}


def unavailable(reason="FetchFailed", message="boom", since="T1", generation=2):
    return {"type": "SourceAvailable", "status": "False", "reason": reason, "message": message,
            "lastTransitionTime": since, "observedGeneration": generation}


def test_a_failing_source_is_put_before_synced_since_now():
    assert conditions.source_conditions([READY, SYNCED], "FetchFailed", "boom", 2, "T1") == [
        READY, unavailable(), SYNCED]


def test_without_synced_it_goes_last_and_with_none_it_is_alone():
    assert conditions.source_conditions([READY], "ReadFailed", "x", 2, "T1") == [READY, unavailable("ReadFailed", "x")]
    assert conditions.source_conditions([], "FetchFailed", "boom", 2, "T1") == [unavailable()]


def test_the_same_failure_again_writes_nothing():
    assert conditions.source_conditions([READY, unavailable(since="T0"), SYNCED], "FetchFailed", "boom", 2, "T9") is None


@pytest.mark.parametrize("reason, message", [("ReadFailed", "boom"), ("FetchFailed", "other")])
def test_another_failure_keeps_since_when_and_replaces_the_condition(reason, message):
    out = conditions.source_conditions([READY, unavailable(since="T0"), SYNCED], reason, message, 2, "T9")
    assert out == [READY, unavailable(reason, message, since="T0"), SYNCED]


def test_a_condition_that_was_true_moves_its_transition_time():
    old = {**unavailable(since="T0"), "status": "True"}
    assert conditions.source_conditions([old, SYNCED], "FetchFailed", "boom", 2, "T5") == [
        unavailable(since="T5"), SYNCED]
