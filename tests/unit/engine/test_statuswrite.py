"""What a status write the API server accepted but did not keep is reported as: the fields it
dropped, by path, and the cause (an older CRD), never "no status subresource"."""

import pytest

from agent.engine import statuswrite
from agent.engine.statuswrite import dropped, not_stored
from tests.unit.fakecluster import FakeCluster

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


APP = {"apiVersion": "heumsi.github.io/v1", "kind": "Application",
       "metadata": {"name": "web", "namespace": "ns"}, "spec": {"image": "nginx", "replicas": 1, "port": 80}}


class _Kube(FakeCluster):
    """The in-memory cluster holding ``ns/web``, whose status writes keep ``stored`` instead of
    what was sent (None: as sent), as an API server with an older CRD prunes fields."""

    def __init__(self, stored=None):
        super().__init__(namespaces=("ns",))
        self.stored, self.sent = stored, []
        self.add(APP)

    def patch_status(self, app, patch):
        self.sent.append(patch)
        written = super().patch_status(app, patch)
        return written if self.stored is None else {**written, "status": self.stored}


def _write(kube, old_status=None, commit="1" * 40, changed=True):
    from agent.engine import status
    from agent.engine.report import Report

    report = Report()
    app = {**kube.get(APP), "status": old_status or {}}
    statuswrite.write(kube, report, "ns/web", app, status.Outcome(True, changed, commit, "Synced", "ok", "a.yaml"), {})
    return report


def test_a_stored_write_records_its_news_and_readiness():
    kube = _Kube()
    report = _write(kube)
    uid = kube.get(APP)["metadata"]["uid"]
    assert [(n.application, n.reason, n.uid) for n in report.notices] == [("ns/web", "Deployed", uid)]
    assert report.readiness == {"ns/web": ("False", "Missing")}


def test_a_write_not_stored_tells_nothing():
    report = _write(_Kube(stored={"other": 1}))
    assert report.notices == []
    assert report.failed == {"ns/web"}


def test_a_status_that_does_not_move_tells_nothing_but_records_readiness():
    kube = _Kube()
    first = _write(kube)
    report = _write(kube, old_status=kube.sent[0], changed=False)
    assert (report.notices, len(kube.sent), first.readiness) == ([], 1, report.readiness)


def test_a_hand_applied_application_has_no_readiness():
    assert _write(_Kube(), commit=None).readiness == {}
