"""What a status write the API server accepted but did not keep is reported as: the fields it
dropped, by path, and the cause (an older CRD), never "no status subresource"."""

import pytest

from agent.engine.statuswrite import dropped, not_stored

SENT = {"health": {"status": "Healthy", "message": "ok"}, "replicas": 1,
        "conditions": [{"type": "Ready", "observedGeneration": 2}, {"type": "Synced", "observedGeneration": 2}]}


@pytest.mark.parametrize("stored, paths", [
    (SENT, []),
    ({**SENT, "health": {"status": "Healthy"}}, ["status.health.message"]),
    ({"replicas": 1, "conditions": [{"type": "Ready"}, {"type": "Synced"}]},
     ["status.health", "status.conditions[].observedGeneration"]),  # one path for every item
    ({}, ["status.health", "status.replicas", "status.conditions"]),
    (None, ["status.health", "status.replicas", "status.conditions"]),
])
def test_dropped_names_each_missing_field_by_path(stored, paths):
    assert dropped(SENT, stored) == paths


def test_the_message_names_the_dropped_fields_and_the_older_crd():
    message = not_stored(SENT, {"replicas": 1, "conditions": SENT["conditions"], "health": {"status": "Healthy"}})
    assert message == ("the API server accepted the status write but dropped status.health.message: the "
                       "CustomResourceDefinition applications.heumsi.github.io in the cluster is older than this "
                       "agent's crd.yaml (its status schema lacks this field, so the API server prunes it); apply "
                       "this agent's crd.yaml (kubectl apply -f crd.yaml)")
    assert "subresource" not in message


def test_values_stored_otherwise_are_not_called_dropped():
    message = not_stored(SENT, {**SENT, "replicas": 3})
    assert message == ("the API server accepted the status write but stored other values for status.replicas "
                       "than were sent")
