"""sync_now: the request annotation, when it is pending, what status records; the runner's
watch rule; the reconcile command's result line; the annotation is never taken over."""

import pytest

from agent.api import crd, labels
from agent.cli import reconcile_cmd
from agent.engine import backoff, sync_now
from agent.kinds import fields
from agent.server.endpoints import Health, Metrics
from agent.server.runner import Runner

A = "heumsi.github.io/reconcile-requested-at"


def app(token=None, handled=None, generation=2, observed=2, annotations=None):
    meta = {"name": "web", "namespace": "ns", "generation": generation,
            "annotations": {**(annotations or {}), **({A: token} if token is not None else {})}}
    status = {"observedGeneration": observed, **({"lastHandledReconcileAt": handled} if handled is not None else {})}
    return {"apiVersion": "heumsi.github.io/v1", "kind": "Application", "metadata": meta, "status": status}


def test_names():
    assert labels.RECONCILE_REQUESTED_AT == A
    assert sync_now.STATUS_FIELD == "lastHandledReconcileAt"
    assert sync_now.FIELD_MANAGER == "gitops-agent-reconcile"


@pytest.mark.parametrize("live, token, pending", [
    (app(token="t1"), "t1", True),
    (app(token="t1", handled="t1"), "t1", False),
    (app(token="t2", handled="t1"), "t2", True),
    (app(token="t1", handled="t2"), "t1", True),  # any change is a new request, older-looking or not
    (app(handled="t1"), None, False),  # annotation removed: nothing asked
    (app(), None, False),
    (app(token=""), None, False),  # an empty value asks nothing
    ({"metadata": {"annotations": {A: 5}}}, None, False),
    ({"metadata": {"annotations": None}}, None, False),
    ({"metadata": None}, None, False),
    ({}, None, False),
])
def test_token_and_pending(live, token, pending):
    assert sync_now.token(live) == token
    assert sync_now.pending(live) is pending


@pytest.mark.parametrize("live, handled", [
    (app(handled="t1"), "t1"), (app(), None), ({"status": None}, None),
    ({"status": {"lastHandledReconcileAt": 3}}, None), ({}, None),
])
def test_handled(live, handled):
    assert sync_now.handled(live) == handled


@pytest.mark.parametrize("live, recorded", [
    (app(token="t2", handled="t1"), {"lastHandledReconcileAt": "t2"}),
    (app(token="t1"), {"lastHandledReconcileAt": "t1"}),  # recorded as given
    (app(handled="t1"), {"lastHandledReconcileAt": "t1"}),  # kept after the annotation went
    (app(), {}),
])
def test_status_records_the_token(live, recorded):
    assert sync_now.status_fields(live) == recorded


@pytest.mark.parametrize("ns, token", [
    (0, "1970-01-01T00:00:00.000000000Z"),
    (1_764_583_200_123_456_789, "2025-12-01T10:00:00.123456789Z"),
    (1_764_583_200_000_000_001, "2025-12-01T10:00:00.000000001Z"),
])
def test_new_token_is_rfc3339_with_nanoseconds(ns, token):
    assert sync_now.new_token(ns) == token


def test_a_new_token_is_now():
    import re
    import time

    before = time.time_ns()
    token = sync_now.new_token()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z", token)
    assert sync_now.new_token(before)[:19] <= token[:19] <= sync_now.new_token(time.time_ns())[:19]


def test_the_crd_keeps_the_new_status_fields():
    status = crd.openapi_schema({})["properties"]["status"]["properties"]
    assert status["lastHandledReconcileAt"]["type"] == "string"
    assert status["failures"] == {**status["failures"], "type": "integer", "minimum": 1}
    assert status["nextRetryTime"]["type"] == "string" and status["nextRetryTime"]["format"] == "date-time"


def test_the_agent_never_takes_the_request_annotation_over():
    live = app(token="t1")
    live["metadata"]["managedFields"] = [
        {"manager": "gitops-agent", "operation": "Apply", "apiVersion": "heumsi.github.io/v1", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:spec": {"f:image": {}}, "f:metadata": {"f:annotations": {"f:heumsi.github.io/content-hash": {}}}}},
        {"manager": sync_now.FIELD_MANAGER, "operation": "Update", "apiVersion": "heumsi.github.io/v1",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:annotations": {f"f:{A}": {}}}}},
        {"manager": "kubectl-annotate", "operation": "Update", "apiVersion": "heumsi.github.io/v1",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:annotations": {f"f:{A}": {}}}}},
    ]
    assert fields.foreign(live) == {}
    assert fields.handover(live, "heumsi.github.io/v1") is None


# -- the runner's watch rule ---------------------------------------------------------------

@pytest.fixture
def runner():
    r = Runner(None, None, interval=60, jitter=0, metrics=Metrics(), health=Health(max_age=60))
    r.health.leading = True
    return r


@pytest.mark.parametrize("event, live, seen, online, offline", [
    ("MODIFIED", app(token="t1"), app(), True, False),  # the reconcile command's patch
    ("MODIFIED", app(token="t2", handled="t1"), app(token="t1", handled="t1"), True, False),
    ("ADDED", app(token="t1"), None, True, False),  # set while no agent ran, seen in the first list
    ("MODIFIED", app(token="t1", handled="t1"), app(token="t1"), False, False),  # the agent's own status write
    ("MODIFIED", app(), app(), False, False),
    ("MODIFIED", app(generation=3), app(), False, True),  # a spec edit: an offline pass as before
    ("MODIFIED", app(annotations={"heumsi.github.io/reconcile": "disabled"}), app(), False, True),  # by hand
    ("ADDED", app(token="t1", handled="t1"), app(token="t1", handled="t1"), False, False),  # a list's replay
    ("ADDED", app(), None, False, True),  # applied by hand
    ("DELETED", app(token="t1"), app(token="t1"), False, True),
    ("DELETED", app(), "gone", False, False),  # the agent's own prune
])
def test_watch_events_that_ask_for_a_pass(runner, event, live, seen, online, offline):
    if seen == "gone":
        runner.known.gone(live)
    elif seen is not None:
        runner.known.seen(seen)
    runner._on_event(event, live)
    assert (runner._online_requested_at is not None) is online
    assert runner._news((runner._events, runner._relists)) is offline
    if online:
        assert runner._online_trigger == "reconcile-request"


def test_a_token_asks_for_one_pass_however_often_it_is_seen(runner):
    runner._on_event("MODIFIED", app(token="t1"))
    runner._online_requested_at = None
    runner.known.seen(app(token="t1", generation=3))  # the online pass applied a new commit
    runner._on_event("MODIFIED", app(token="t1", generation=3))  # its own apply, status not yet written
    assert runner._online_requested_at is None and not runner._news((runner._events, runner._relists))
    runner._on_event("MODIFIED", app(token="t2", generation=3))  # a new request asks again
    assert runner._online_requested_at is not None


def test_the_runner_backs_off_by_default_and_sync_does_not(runner):
    assert runner.retry.skip is True and backoff.ONE_SHOT.skip is False


# -- the reconcile command's result ---------------------------------------------------------

def conditions(ready, reason, message, synced, synced_message="children applied"):
    return [{"type": "Ready", "status": ready, "reason": reason, "message": message},
            {"type": "Synced", "status": synced, "reason": "Synced" if synced == "True" else "SyncFailed",
             "message": synced_message}]


@pytest.mark.parametrize("status, ok, line", [
    ({"conditions": conditions("True", "Healthy", "all replicas ready", "True"), "lastSyncedCommit": "abc"},
     True, "Ready=True (Healthy: all replicas ready); lastSyncedCommit abc"),
    ({"conditions": conditions("False", "Progressing", "1 of 2 updated", "True")},
     True, "Ready=False (Progressing: 1 of 2 updated); lastSyncedCommit none"),
    ({"conditions": conditions("False", "SyncFailed", "quota", "False", "Service: 403 quota"), "lastSyncedCommit": "abc"},
     False, "sync failed: Service: 403 quota; Ready=False (SyncFailed: quota); lastSyncedCommit abc"),
    ({}, False, "sync failed: no Synced condition; Ready=Unknown (NoStatus: no Ready condition); lastSyncedCommit none"),
])
def test_describe(status, ok, line):
    assert reconcile_cmd.describe({"status": status}) == (ok, line)


@pytest.mark.parametrize("handled", [False, True])
@pytest.mark.parametrize("raises", [False, True])
def test_reconcile_wait_ended_by_a_signal_exits_1_in_either_phase(capsys, handled, raises):
    """SIGTERM or Ctrl-C ends ``reconcile --wait``: exit 1 (interrupted), before the request is
    handled too: never 2's "no agent run seems to be handling requests"."""
    import argparse
    import threading

    from agent.kube.client import ApiError

    token = "2026-01-01T00:00:00.000000000Z"
    app = {"metadata": {"annotations": {}}, "status": {
        "lastHandledReconcileAt": token if handled else "old",
        "conditions": [{"type": "Synced", "status": "True"}, {"type": "Ready", "status": "False",
                                                             "reason": "Progressing", "message": "1 of 2"}]}}

    class Kube:
        def request(self, method, url):
            if raises:
                raise ApiError(0, "Interrupted", "interrupted")
            return app

    stop = threading.Event()
    stop.set()
    args = argparse.Namespace(timeout=300.0, namespace="ns")
    code = reconcile_cmd._wait(Kube(), [("Application/ns/web", "/x")], token, args, stop)
    err = capsys.readouterr().err
    assert code == 1, err
    assert "interrupted by a signal" in err and "no agent run" not in err


def test_reconcile_wait_for_several_is_the_worst_of_theirs(capsys):
    """``reconcile -l team=a --wait`` (issue 46): each chosen Application is waited for until it is
    decided; the exit code is the worst (healthy 0, Degraded 1, sync failed 2)."""
    import argparse
    import threading

    token = "2026-01-01T00:00:00.000000000Z"

    def app(ready, synced="True", health="Healthy"):
        return {"metadata": {"annotations": {}}, "status": {
            "lastHandledReconcileAt": token, "health": {"status": health},
            "conditions": [{"type": "Synced", "status": synced, "message": "no"},
                           {"type": "Ready", "status": ready, "reason": health, "message": "m"}]}}

    def waited(apps: dict) -> int:
        class Kube:
            def request(self, method, url):
                return apps[url]
        targets = [(f"Application/ns/{url.strip('/')}", url) for url in apps]
        return reconcile_cmd._wait(Kube(), targets, token, argparse.Namespace(timeout=5.0, namespace="ns"),
                                   threading.Event())

    assert waited({"/a": app("True"), "/b": app("True")}) == 0
    assert waited({"/a": app("True"), "/b": app("False", health="Degraded")}) == 1
    assert waited({"/a": app("True", synced="False"), "/b": app("False", health="Degraded")}) == 2
    out = capsys.readouterr()
    assert "Application/ns/a: healthy: " in out.out and "Application/ns/b: Degraded or Stalled" in out.err
