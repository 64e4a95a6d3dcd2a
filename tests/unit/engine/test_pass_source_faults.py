"""The whole pass (``agent.engine.sync.run``) when its inputs fail: a repository that cannot be
fetched, a ``--path`` the commit does not have, an API server that stops answering mid-pass.
Fail closed (docs/concepts.md, "Fail closed"): nothing is changed or pruned; the only write is
``SourceAvailable=False`` on this source's Applications. The real-cluster suite asserts the same
in tests/test_failsafe.py and tests/test_sync.py."""

from __future__ import annotations

import shutil

import pytest

from agent.engine.report import CONFIGURED, PRUNED, UNCHANGED
from agent.engine.steady import Steady
from agent.kube.cluster import ApiError
from tests.unit.engine.passes import NS, World, actions, app_yaml, conditions

DOWN = ApiError(0, "ConnectionRefused", "dial tcp 127.0.0.1:6443: connect: connection refused")
STOPPED = "; the pass stopped, nothing further was pruned or recorded"


@pytest.fixture
def world(tmp_path):
    world = World(tmp_path)
    world.commit({"web.yaml": app_yaml("web"), "db.yaml": app_yaml("db")})
    world.sync()
    return world


def gone(world: World, tmp_path) -> None:
    """The repository moved away: every fetch fails."""
    shutil.move(str(world.repo.path), str(tmp_path / "away"))


def fetch_error(report, world: World) -> str:
    """The one error of a failed fetch, without its tail; asserts its shape."""
    [error] = report.errors
    assert error.startswith(f"fetching {world.opts.repo} failed: ")
    assert error.endswith("; nothing was changed or pruned")
    return error.removesuffix("; nothing was changed or pruned")


def test_a_failed_fetch_marks_each_application_of_the_source_and_writes_nothing_else(world, tmp_path):
    other = World(tmp_path / "other", source_id="other")  # another source's Application: not this one's business
    other.kube = world.kube
    other.commit({"api.yaml": app_yaml("api")})
    other.sync()
    world.kube.add({"apiVersion": "heumsi.github.io/v1", "kind": "Application",
                    "metadata": {"name": "hand", "namespace": NS}, "spec": {"image": "nginx", "port": 80}})
    before = {name: world.app(name) for name in ("api", "hand")}
    children = {k: o["metadata"]["resourceVersion"] for k, o in world.kube.objects.items() if k[1] != "Application"}
    events = len(world.kube.events)
    gone(world, tmp_path)
    report = world.sync()
    error = fetch_error(report, world)
    assert (report.commit, report.fetch_failed, report.source_seen, report.changes) == (None, True, False, [])
    assert report.notes == ["2 Applications marked SourceAvailable=False (FetchFailed)"]
    assert world.kube.writes == [("patch_status", f"Application/{NS}/db"), ("patch_status", f"Application/{NS}/web")]
    for name in ("db", "web"):
        found = conditions(world.app(name))
        assert found["SourceAvailable"] == ("False", "FetchFailed", error)
        assert found["Synced"][:2] == ("True", "Synced")  # what it said of its last sync stays
    assert {name: world.app(name) for name in ("api", "hand")} == before
    assert {k: o["metadata"]["resourceVersion"] for k, o in world.kube.objects.items() if k[1] != "Application"} \
        == children
    assert len(world.kube.events) == events
    report = world.sync()  # it says so already: nothing is written again
    assert (world.kube.writes, report.notes) == ([], [])
    assert report.summary().splitlines()[-1] == ("sync failed: 0 created, 0 configured, 0 unchanged, 0 pruned, "
                                                 "0 failed")
    shutil.move(str(tmp_path / "away"), str(world.repo.path))
    world.kube.delete(world.app("hand"))
    report = world.sync()  # the source is back: the condition goes
    assert report.errors == [] and report.source_seen
    assert world.kube.writes == [("patch_status", f"Application/{NS}/db"), ("patch_status", f"Application/{NS}/web")]
    assert "SourceAvailable" not in conditions(world.app("web"))


def test_a_status_the_api_server_refuses_is_a_note_and_the_others_are_marked(world, tmp_path):
    world.kube.fail("patch_status", f"Application/{NS}/db", ApiError(403, "Forbidden", "no status for you"))
    gone(world, tmp_path)
    report = world.sync()
    assert report.notes == [f"Application/{NS}/db: could not record that its source is unavailable: 403 Forbidden: "
                            "no status for you", "1 Application marked SourceAvailable=False (FetchFailed)"]
    assert "SourceAvailable" not in conditions(world.app("db"))
    assert conditions(world.app("web"))["SourceAvailable"][:2] == ("False", "FetchFailed")


def test_an_unreachable_api_server_while_marking_is_a_note(world, tmp_path):
    world.kube.fail("patch_status", f"Application/{NS}/db", DOWN)
    gone(world, tmp_path)
    report = world.sync()
    assert report.notes == ["could not record on this source's Applications that the source is unavailable: "
                            f"{DOWN}"]
    assert report.fetch_failed and len(report.errors) == 1


def test_a_dry_run_marks_nothing_when_the_fetch_fails(world, tmp_path):
    gone(world, tmp_path)
    world.kube.dry_run = True
    report = world.sync()
    assert report.fetch_failed and (world.kube.writes, report.notes) == ([], [])
    assert "SourceAvailable" not in conditions(world.app("web"))


def test_an_application_being_deleted_is_not_marked(world, tmp_path):
    live = world.app("db")
    live["metadata"]["finalizers"] = ["example.com/hold"]
    world.kube.put(live)
    world.kube.delete(world.app("db"))  # held by its finalizer: a deletionTimestamp
    gone(world, tmp_path)
    report = world.sync()
    assert world.kube.writes == [("patch_status", f"Application/{NS}/web")]
    assert report.notes == ["1 Application marked SourceAvailable=False (FetchFailed)"]


def test_a_missing_path_fails_the_pass_and_marks_the_applications_read_failed(world):
    report = world.sync(path="apps")
    message = (f"--path 'apps' does not exist in commit {world.repo.head()} (with --allow-empty a missing path "
               "counts as no Applications)")
    assert report.errors == [f"{message}; nothing was changed or pruned"]
    # the fetch worked, the commit could not be read: the source is not seen either
    assert (report.commit, report.fetch_failed, report.source_seen, report.changes) == \
        (world.repo.head(), True, False, [])
    assert report.notes == ["2 Applications marked SourceAvailable=False (ReadFailed)"]
    assert world.kube.writes == [("patch_status", f"Application/{NS}/db"), ("patch_status", f"Application/{NS}/web")]
    assert conditions(world.app("web"))["SourceAvailable"] == ("False", "ReadFailed", message)
    assert all(world.trio("web")) and all(world.trio("db"))


def test_a_missing_path_with_allow_empty_is_a_note_and_no_applications(world):
    head = world.repo.head()
    report = world.sync(path="apps", allow_empty=True)
    assert report.errors == [] and report.commit == head
    assert report.notes == [f"--path 'apps' does not exist in commit {head}; --allow-empty: treated as no Applications"]
    assert actions(report) == [(f"Service/{NS}/db", PRUNED), (f"Service/{NS}/web", PRUNED),
                               (f"Deployment/{NS}/db", PRUNED), (f"Deployment/{NS}/web", PRUNED),
                               (f"Application/{NS}/db", PRUNED), (f"Application/{NS}/web", PRUNED)]
    assert world.kube.of_kind("Application") == []


def test_an_unreachable_api_server_mid_pass_stops_it_before_anything_is_pruned(world):
    world.commit({"db.yaml": None, "web.yaml": app_yaml("web", image="nginx:1.28")})
    world.kube.fail("apply", f"Deployment/{NS}/web", DOWN)
    steady = Steady(entries={"stale": None})
    events = len(world.kube.events)
    report = world.sync(steady=steady)
    assert report.errors == [f"{DOWN}{STOPPED}"]
    assert str(DOWN) == "ConnectionRefused: dial tcp 127.0.0.1:6443: connect: connection refused"  # no HTTP status
    assert world.kube.writes == [("apply", f"Application/{NS}/web"), ("apply", f"Deployment/{NS}/web")]
    assert actions(report) == [(f"Application/{NS}/web", CONFIGURED)]
    assert all(world.trio("db")) and (steady.entries, steady.facts) == ({}, {})
    assert len(world.kube.events) == events  # the Events of a stopped pass are not sent
    report = world.sync()  # the API server answers again: the pass completes, and prunes
    assert (f"Deployment/{NS}/web", CONFIGURED) in actions(report)
    assert (f"Application/{NS}/db", PRUNED) in actions(report)


def test_an_unreachable_api_server_during_the_prunes_stops_before_the_applications(world):
    world.commit({"db.yaml": None})
    world.kube.fail("delete", f"Service/{NS}/db", DOWN)
    report = world.sync()
    assert report.errors == [f"{DOWN}{STOPPED}"]
    assert world.kube.writes == [("delete", f"Service/{NS}/db")]
    assert all(world.trio("db"))
    assert [a for _, a in actions(report)] == [UNCHANGED] * 3


def test_an_unreachable_api_server_at_a_status_write_stops_the_pass_before_the_prunes(world):
    world.commit({"web.yaml": app_yaml("web", replicas=2), "db.yaml": None})
    world.kube.fail("patch_status", f"Application/{NS}/web", DOWN)  # the first wave's status write
    report = world.sync()
    assert world.kube.writes == [("apply", f"Application/{NS}/web"), ("apply", f"Deployment/{NS}/web"),
                                 ("patch_status", f"Application/{NS}/web")]
    assert report.errors == [f"{DOWN}{STOPPED}"] and report.stopped  # its healths are some, not all
    assert all(world.trio("db"))
    assert not world.sync().stopped
