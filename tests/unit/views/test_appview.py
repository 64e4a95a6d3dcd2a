"""``get``'s rows: kubectl's AGE, the columns, the table."""

import datetime

import pytest

from agent.views import appview

NOW = datetime.datetime(2026, 12, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)


@pytest.mark.parametrize("seconds, shown", [
    (-5, "<invalid>"), (-2, "<invalid>"), (-1, "0s"), (-0.5, "0s"), (0, "0s"), (5, "5s"), (59, "59s"),
    (119, "119s"), (120, "2m"), (182, "3m2s"), (599, "9m59s"), (600, "10m"), (10799, "179m"),
    (10800, "3h"), (4 * 3600 + 5 * 60, "4h5m"), (4 * 3600, "4h"), (8 * 3600 - 1, "7h59m"), (8 * 3600, "8h"),
    (47 * 3600 + 3599, "47h"), (48 * 3600, "2d"), (2 * 86400 + 3 * 3600, "2d3h"), (8 * 86400 - 1, "7d23h"),
    (8 * 86400, "8d"), (729 * 86400, "729d"), (730 * 86400, "2y"), (735 * 86400, "2y5d"),
    (8 * 365 * 86400, "8y"), (20 * 365 * 86400, "20y"),
])
def test_age_is_kubectls_human_duration(seconds, shown):
    assert appview.age(seconds) == shown


def test_age_since_a_timestamp_or_none():
    assert appview.age_since("2026-12-01T11:56:58Z", NOW) == "3m2s"
    assert appview.age_since("2026-12-01T13:56:58+02:00", NOW) == "3m2s"
    assert appview.age_since(None, NOW) == "<unknown>"
    assert appview.age_since("yesterday", NOW) == "<unknown>"


def app(**status):
    return {"apiVersion": "heumsi.github.io/v1", "kind": "Application",
            "metadata": {"name": "web", "namespace": "shop", "creationTimestamp": "2026-12-01T08:00:00Z"},
            "spec": {"image": "nginx:1.27", "replicas": 3, "port": 80}, "status": status}


FULL = dict(lastSyncedCommit="5f0c2e3d9a1b4c6d8e7f00112233445566778899",
            lastChangedCommit="9a1b4c6d8e7f001122334455667788995f0c2e3d", sourcePath="apps/web.yaml",
            readyReplicas=2, health={"status": "Progressing", "message": "Deployment: 2 of 3"},
            observedAt="2026-12-01T11:48:00Z", observedBy="sync --once",
            conditions=[{"type": "Ready", "status": "False", "reason": "Progressing",
                         "message": "Deployment: waiting\nfor rollout\t(2/3)"},
                        {"type": "Synced", "status": "True", "reason": "Synced", "message": "ok"}])


def test_a_row_reads_the_status():
    assert appview.row(app(**FULL), NOW) == {
        "namespace": "shop", "name": "web", "health": "Progressing", "ready": "False", "reason": "Progressing",
        "commit": "5f0c2e3d", "changed": "9a1b4c6d", "suspended": "False", "created": "2026-12-01T08:00:00Z",
        "age": "4h", "observed": "12m ago by sync --once", "message": "Deployment: waiting for rollout (2/3)",
        "source": "apps/web.yaml",
        "image": "nginx:1.27", "replicas": "2/3", "schedules": None,
        "tasks": None}


def test_a_row_of_an_application_without_status_shows_nothing_it_does_not_know():
    bare = app()
    del bare["status"]
    assert appview.row(bare, NOW) == {
        "namespace": "shop", "name": "web", "health": None, "ready": "Unknown", "reason": None, "commit": None,
        "changed": None, "suspended": "False", "created": "2026-12-01T08:00:00Z", "age": "4h", "observed": None,
        "message": None,
        "source": None, "image": "nginx:1.27", "replicas": "0/3", "schedules": None,
        "tasks": None}


def test_the_schedules_column_counts_them_and_those_whose_last_run_failed():
    ok = {"name": "a", "cronJob": "web-a", "lastSuccessfulTime": "2026-12-01T03:00:00Z", "active": 0}
    failed = {"name": "b", "cronJob": "web-b", "active": 0, "lastSuccessfulTime": "2026-12-01T03:00:00Z",
              "lastFailure": {"job": "web-b-1", "time": "2026-12-01T04:00:00Z"}}
    healed = {**failed, "lastSuccessfulTime": "2026-12-01T05:00:00Z"}
    never = {"name": "c", "cronJob": "web-c", "active": 0, "lastFailure": {"job": "web-c-1", "time": "t"}}
    assert appview.row(app(schedules=[ok]), NOW)["schedules"] == "1"
    assert appview.row(app(schedules=[ok, failed, never]), NOW)["schedules"] == "3 (2 failed)"
    assert appview.row(app(schedules=[healed]), NOW)["schedules"] == "1"
    assert appview.schedules(app()) is None


def test_the_tasks_column_counts_the_done_ones_or_names_the_failed_one():
    def run(name, phase):
        return {"name": name, "digest": "0" * 16, "job": f"web-{name}-00000000", "phase": phase}
    assert appview.row(app(tasks=[run("migrate", "Succeeded"), run("warm", "Pending")]), NOW)["tasks"] == "1/2 done"
    assert appview.row(app(tasks=[run("migrate", "Running")]), NOW)["tasks"] == "0/1 done"
    assert appview.row(app(tasks=[run("migrate", "Succeeded")]), NOW)["tasks"] == "1/1 done"
    assert appview.row(app(tasks=[run("a", "Succeeded"), run("migrate", "Failed")]), NOW)["tasks"] == "migrate failed"
    assert appview.tasks(app(tasks=[run("a", "Failed"), run("b", "Failed"), run("c", "Failed")])) == "a failed +2"
    assert appview.tasks(app(tasks=["junk"])) is None
    assert appview.tasks(app()) is None


def test_suspended_by_status_or_spec_and_a_source_line():
    assert appview.row(app(suspended=True), NOW)["suspended"] == "True"
    spec_suspended = app()
    spec_suspended["spec"]["suspend"] = True
    assert appview.row(spec_suspended, NOW)["suspended"] == "True"
    assert appview.source(app(sourcePath="a.yaml", sourceLine=12)) == "a.yaml:12"
    assert appview.source(app(sourcePath="a.yaml", sourceLine=True)) == "a.yaml"


def test_replicas_without_spec_replicas_take_the_observed_count():
    autoscaled = app(replicas=4, readyReplicas=1)
    del autoscaled["spec"]["replicas"]
    assert appview.replicas(autoscaled) == "1/4"
    del autoscaled["status"]["replicas"]
    assert appview.replicas(autoscaled) is None


def test_one_line_escapes_control_characters():
    assert appview.one_line("a\x1b[31mb") == "a\\x1b[31mb"
    assert appview.one_line("  \n ") is None
    assert appview.one_line(None) is None


def test_columns_in_order():
    assert appview.columns(False, False) == ("name", "health", "ready", "reason", "commit", "changed", "suspended",
                                             "age", "observed", "message")
    assert appview.columns(True, True) == ("namespace", "name", "health", "ready", "reason", "commit", "changed",
                                           "suspended", "age", "observed", "source", "image", "replicas", "schedules",
                                           "tasks", "message")


def test_the_table_pads_every_column_but_the_last():
    rows = [{"name": "web", "health": "Healthy", "message": None},
            {"name": "a-long-name", "health": None, "message": "m"}]
    assert appview.table(rows, ("name", "health", "message")) == [
        "NAME          HEALTH    MESSAGE",
        "web           Healthy   -",
        "a-long-name   -         m"]
    assert appview.table(rows, ("name", "health", "message"), headers=False)[0] == "web           Healthy   -"
    assert appview.table([], ("name",), headers=False) == []
    assert appview.table([], ("name",)) == ["NAME"]


@pytest.mark.parametrize("at, by, shown", [
    ("2026-12-01T11:48:00Z", "sync --once", "12m ago by sync --once"),
    ("2026-12-01T11:59:30Z", "run", "30s ago by run"),
    ("2026-12-01T08:55:00+01:00", "reconcile", "4h5m ago by reconcile"),
    ("2026-12-01T11:48:00Z", None, "12m ago"),
    ("2026-12-01T11:48:00Z", "a\nb", "12m ago by a b"),
    ("2026-12-01T12:00:05Z", "run", "<invalid> ago by run"),  # a clock 5 s ahead: kubectl's word for it
    (None, "run", None), ("yesterday", "run", None), (12, "run", None),
])
def test_the_observed_age_says_when_and_by_what(at, by, shown):
    assert appview.ago(at, by, NOW) == shown
    assert appview.observed(app(observedAt=at, observedBy=by), NOW) == shown


@pytest.mark.parametrize("health, at, by, shown", [
    ("Progressing", "2026-12-01T11:48:00Z", "sync --once", "Progressing, 12m ago, by sync --once"),
    ("Healthy", "2026-11-30T12:00:00Z", "run", "Healthy, 24h ago, by run"),
    ("Healthy", "2026-12-01T11:48:00Z", None, "Healthy, 12m ago"),
    ("Degraded", None, None, "Degraded"),  # written before the agent wrote observedAt
    (None, "2026-12-01T11:48:00Z", "run", None),
])
def test_the_health_with_when_it_was_observed(health, at, by, shown):
    assert appview.health_text(health, at, by, NOW) == shown
