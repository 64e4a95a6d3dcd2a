"""One Event per Application per pass (agent/engine/events.py)."""

from __future__ import annotations

import pytest

from agent.engine import events


def app(name="web", namespace="ns"):
    return {"apiVersion": "heumsi.github.io/v1", "kind": "Application",
            "metadata": {"name": name, "namespace": namespace, "uid": "u"}}


@pytest.mark.parametrize("changes, text", [
    ([], ""),
    ([("unchanged", "Service/ns/web", "")], ""),
    ([("created", "Deployment/ns/web", ""), ("created", "Service/ns/web", ""),
      ("configured", "Application/ns/web", "")],
     "created Deployment/ns/web, Service/ns/web; configured Application/ns/web"),
    ([("pruned", "Service/ns/web", ""), ("recreated", "Deployment/ns/web", "spec.selector is immutable"),
      ("configured", "Application/ns/web", "")],
     "configured Application/ns/web; recreated Deployment/ns/web (spec.selector is immutable); "
     "pruned Service/ns/web"),
    ([("created", "Service/ns/web", ""), ("created", "Service/ns/web", "")], "created Service/ns/web"),
])
def test_message_lists_objects_per_action_in_a_fixed_order(changes, text):
    assert events.message(changes) == text


@pytest.mark.parametrize("actions, reason", [
    ([], None), (["unchanged"], None), (["pruned"], "Pruned"), (["configured", "pruned"], "Updated"),
    (["pruned", "configured", "created"], "Created"), (["created", "recreated"], "Recreated"),
])
def test_reason_is_the_weightiest_action(actions, reason):
    assert events.reason([(a, "X/ns/n", "") for a in actions]) == reason


class Sent:
    def __init__(self):
        self.sent = []

    def event(self, obj, type_, reason, message):
        self.sent.append((obj["metadata"]["name"], type_, reason, message))


def test_batch_sends_one_event_per_application_with_changes_only():
    kube = Sent()
    batch = events.Batch(kube)
    batch.change(app("web"), "ns/web", "created", "Application/ns/web")
    batch.change(app("web"), "ns/web", "created", "Deployment/ns/web")
    batch.change(app("db"), "ns/db", "unchanged", "Service/ns/db")
    batch.change(None, "ns/gone", "pruned", "Service/ns/gone")  # no object known: nothing to attach to
    assert kube.sent == []  # held until flush
    batch.flush()
    assert kube.sent == [("web", "Normal", "Created", "created Application/ns/web, Deployment/ns/web")]
    batch.flush()
    assert len(kube.sent) == 1  # flushed means forgotten


def test_a_warning_carries_the_changes_and_replaces_the_normal_event():
    kube = Sent()
    batch = events.Batch(kube)
    batch.change(app(), "ns/web", "configured", "Application/ns/web")
    batch.event(app(), "Warning", "SyncFailed", "Service/ns/web: 422 Invalid")
    batch.event(app("db"), "Warning", "InvalidSpec", "bad spec")
    batch.flush()
    assert kube.sent == [("db", "Warning", "InvalidSpec", "bad spec"),
                         ("web", "Warning", "SyncFailed", "Service/ns/web: 422 Invalid; configured Application/ns/web")]


def test_a_pruned_applications_event_goes_to_the_pruned_object_given_last():
    kube = Sent()
    batch = events.Batch(kube)
    batch.change(None, "ns/old", "pruned", "Deployment/ns/old")
    batch.change(app("old"), "ns/old", "pruned", "Application/ns/old")
    batch.flush()
    assert kube.sent == [("old", "Normal", "Pruned", "pruned Deployment/ns/old, Application/ns/old")]


def test_a_normal_event_given_directly_is_appended_and_messages_are_capped():
    kube = Sent()
    batch = events.Batch(kube)
    batch.event(app(), "Normal", "Suspended", "reconciliation is suspended")
    batch.change(app("big"), "ns/big", "created", "Deployment/ns/" + "x" * 2000)
    sent = []
    batch.flush(send=sent.extend)
    assert [(o["metadata"]["name"], t, r, m) for o, t, r, m in sent][1] == \
        ("web", "Normal", "Suspended", "reconciliation is suspended")
    assert len(sent[0][3]) == events.MAX_MESSAGE


def test_an_admission_warning_is_its_own_event_beside_the_others_and_told_once(monkeypatch):
    kube, told = Sent(), {}
    batch = events.Batch(kube, told)
    batch.change(app(), "ns/web", "created", "Deployment/ns/web")
    batch.event(app(), "Warning", "SyncFailed", "Service/ns/web: 422 Invalid")
    batch.warned(app(), "ns/web", "Deployment/ns/web", ("would violate PodSecurity", "deprecated"))
    batch.warned(app(), "ns/web", "Service/ns/web", ())  # a write of another object said nothing
    batch.warned(None, "ns/gone", "Deployment/ns/gone", ("x",))  # no object known: nothing to attach to
    batch.flush()
    assert kube.sent == [
        ("web", "Warning", "AdmissionWarning", "Deployment/ns/web: would violate PodSecurity; Deployment/ns/web: deprecated"),
        ("web", "Warning", "SyncFailed", "Service/ns/web: 422 Invalid; created Deployment/ns/web")]
    batch = events.Batch(kube, told)  # the next pass of the same run
    batch.warned(app(), "ns/web", "Deployment/ns/web", ("deprecated", "new"))
    batch.warned(app("db"), "ns/db", "Deployment/ns/db", ("deprecated",))  # another Application is told
    batch.flush()
    assert kube.sent[2:] == [("db", "Warning", "AdmissionWarning", "Deployment/ns/db: deprecated"),
                             ("web", "Warning", "AdmissionWarning", "Deployment/ns/web: new")]
    assert told["ns/web"] == {"Deployment/ns/web: deprecated", "Deployment/ns/web: new"}  # PodSecurity's went away
    batch = events.Batch(kube, told)
    batch.warned(app(), "ns/web", "Deployment/ns/web", ())  # fixed: a write without warnings
    batch.warned(app("db"), "ns/db", "Deployment/ns/db", ("deprecated",))  # the same again: not told
    batch.flush()
    assert len(kube.sent) == 4 and "ns/web" not in told
    batch = events.Batch(kube, told)
    batch.warned(app(), "ns/web", "Deployment/ns/web", ("deprecated",))  # back: told again
    batch.flush()
    assert kube.sent[4:] == [("web", "Warning", "AdmissionWarning", "Deployment/ns/web: deprecated")]
    monkeypatch.setattr(events, "MAX_TOLD", 2)
    batch = events.Batch(kube, told)
    batch.warned(app("x"), "ns/x", "Deployment/ns/x", ("deprecated",))  # a third Application: all forgotten first
    batch.warned(app(), "ns/web", "Deployment/ns/web", ("deprecated",))
    batch.flush()
    assert [m for _, _, _, m in kube.sent[5:]] == ["Deployment/ns/web: deprecated", "Deployment/ns/x: deprecated"]
