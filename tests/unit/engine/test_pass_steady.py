"""``run``'s steady state through the whole pass (``sync.run(..., steady=Steady(...))``): what a
pass over an unchanged commit and unchanged objects reuses and skips, which Applications go in the
first wave, what ``remember`` records, offline passes and the read of a new commit from the
files that changed. ``versions`` answers as ``server/runner.py``'s live store does: the
resourceVersion an object has once the pass's own writes are counted. The real-cluster suite
asserts the same in tests/test_run.py and tests/test_read_since.py."""

from __future__ import annotations

import logging
import shutil

import pytest

from agent.engine import backoff, sourceread, statuswrite
from agent.engine.report import CONFIGURED, CREATED, FAILED, SKIPPED, SUSPENDED, UNCHANGED
from agent.engine.steady import Steady
from agent.kinds import registry, render
from agent.kube.cluster import ApiError
from agent.manifests import loader
from tests.unit.engine.passes import NS, World, actions, app_yaml, conditions, rolled_out


class Spies:
    """Counts what a pass reads, parses and renders: ``reads`` (commits ``sourceread.read`` read),
    ``parsed`` (the file names each ``loader.load`` parsed), ``rendered`` (Applications rendered
    from Git) and ``children`` (Applications whose children were rendered)."""

    def __init__(self, monkeypatch):
        self.reads: list[str] = []
        self.parsed: list[list[str]] = []
        self.rendered: list[str] = []
        self.children: list[str] = []
        read, load = sourceread.read, loader.load
        desired, children = render.desired_application, registry.children

        def spy_read(opts, commit, before=None):
            self.reads.append(commit)
            return read(opts, commit, before)

        def spy_load(files, *args, **kwargs):
            self.parsed.append(sorted(files))
            return load(files, *args, **kwargs)

        def spy_desired(body, *args, **kwargs):
            self.rendered.append(body["metadata"]["name"])
            return desired(body, *args, **kwargs)

        def spy_children(name, *args, **kwargs):
            self.children.append(name)
            return children(name, *args, **kwargs)
        monkeypatch.setattr(sourceread, "read", spy_read)
        monkeypatch.setattr(loader, "load", spy_load)
        monkeypatch.setattr(render, "desired_application", spy_desired)
        monkeypatch.setattr(registry, "children", spy_children)

    def clear(self) -> None:
        for seen in (self.reads, self.parsed, self.rendered, self.children):
            seen.clear()


@pytest.fixture
def world(tmp_path):
    return World(tmp_path)


@pytest.fixture
def spies(monkeypatch):
    return Spies(monkeypatch)


def steady_of(world: World) -> Steady:
    """A ``Steady`` whose ``versions`` reads the fake's store: nothing but the pass writes between
    its writes and ``remember``, so the stored resourceVersion is the one after the pass's writes."""
    def versions(kind: str, namespace: str, name: str, read: str | None) -> str | None:
        stored = world.kube.stored(kind, namespace, name) if kind else None
        return stored["metadata"]["resourceVersion"] if stored else read
    return Steady(versions=versions)


def blob(world: World, path: str) -> str:
    return world.repo.git("rev-parse", f"HEAD:{path}").strip()


def test_a_pass_over_the_same_commit_and_objects_reads_renders_and_writes_nothing(world, spies):
    head = world.commit({"web.yaml": app_yaml("web"), "db.yaml": app_yaml("db")})
    steady = steady_of(world)
    world.sync(steady=steady)
    assert (spies.reads, spies.parsed, spies.rendered, spies.children) == \
        ([head], [["db.yaml", "web.yaml"]], ["db", "web"], ["db", "web"])
    assert sorted(steady.entries) == [f"{NS}/db", f"{NS}/web"] and steady.source.commit == head
    read = steady.source.read
    health = world.sync().health  # what a full pass says, for comparison (no steady: decides everything)
    assert world.kube.writes == []
    spies.clear()
    report = world.sync(steady=steady)
    assert (spies.reads, spies.parsed, spies.rendered, spies.children) == ([], [], [], [])
    assert steady.source.read is read  # the same commit: the same read
    assert world.kube.writes == [] and report.changed is False and report.ok
    assert actions(report) == [(f"Application/{NS}/db", UNCHANGED), (f"Application/{NS}/web", UNCHANGED),
                               (f"Deployment/{NS}/db", UNCHANGED), (f"Service/{NS}/db", UNCHANGED),
                               (f"Deployment/{NS}/web", UNCHANGED), (f"Service/{NS}/web", UNCHANGED)]
    assert report.health == health  # recorded, not computed again (settled)
    assert report.summary().splitlines()[-1] == ("sync succeeded: 0 created, 0 configured, 6 unchanged, 0 pruned, "
                                                 "0 failed")
    entry = steady.entries[f"{NS}/web"]
    app = world.app("web")
    assert entry.document == ("web.yaml", 1, blob(world, "web.yaml"))
    assert (entry.version, entry.commit, entry.source_seen) == (app["metadata"]["resourceVersion"], head, True)
    assert entry.children == tuple(sorted(
        ((group, kind, NS, "web"), world.child(kind, "web")["metadata"]["resourceVersion"])
        for group, kind in (("apps", "Deployment"), ("", "Service"))))
    assert entry.lines == (f"Deployment/{NS}/web", f"Service/{NS}/web")
    assert entry.health == health[f"{NS}/web"]


def test_an_object_that_moved_is_decided_again(world, spies):
    world.commit({"web.yaml": app_yaml("web"), "db.yaml": app_yaml("db")})
    steady = steady_of(world)
    world.sync(steady=steady)
    rolled_out(world, "web")  # its Deployment's status moved: web is decided again, db is not
    spies.clear()
    report = world.sync(steady=steady)
    assert (spies.rendered, spies.children) == (["web"], ["web"])
    assert world.kube.writes == [("patch_status", f"Application/{NS}/web")]  # Ready turned True
    assert report.readiness[f"{NS}/web"] == ("True", "Healthy")
    spies.clear()
    world.sync(steady=steady)
    assert (spies.rendered, spies.children, world.kube.writes) == ([], [], [])


def test_a_new_commit_reads_only_the_changed_file_and_applies_its_application_in_the_first_wave(world, spies):
    world.commit({"web.yaml": app_yaml("web"), "db.yaml": app_yaml("db"), "api.yaml": app_yaml("api")})
    steady = steady_of(world)
    world.sync(steady=steady)
    spies.clear()
    head = world.commit({"db.yaml": app_yaml("db", replicas=2)})
    report = world.sync(steady=steady)
    assert (spies.reads, spies.parsed, spies.rendered, spies.children) == ([head], [["db.yaml"]], ["db"], ["db"])
    assert steady.source.commit == head
    # db first (applied, its status written), then the sweep of the rest: only their new commit
    assert actions(report) == [(f"Application/{NS}/db", CONFIGURED), (f"Deployment/{NS}/db", CONFIGURED),
                               (f"Service/{NS}/db", UNCHANGED),
                               (f"Application/{NS}/api", UNCHANGED), (f"Application/{NS}/web", UNCHANGED),
                               (f"Deployment/{NS}/api", UNCHANGED), (f"Service/{NS}/api", UNCHANGED),
                               (f"Deployment/{NS}/web", UNCHANGED), (f"Service/{NS}/web", UNCHANGED)]
    assert world.kube.writes == [("apply", f"Application/{NS}/db"), ("apply", f"Deployment/{NS}/db"),
                                 ("patch_status", f"Application/{NS}/db"), ("patch_status", f"Application/{NS}/api"),
                                 ("patch_status", f"Application/{NS}/web")]
    assert world.app("web")["status"]["lastSyncedCommit"] == head
    assert sorted(steady.entries) == [f"{NS}/api", f"{NS}/db", f"{NS}/web"]
    assert {e.commit for e in steady.entries.values()} == {head}
    spies.clear()
    world.sync(steady=steady)
    assert (spies.reads, spies.rendered, world.kube.writes) == ([], [], [])


def test_only_cleanly_synced_applications_are_remembered(world):
    world.kube.fail("apply", f"Service/{NS}/bad", ApiError(403, "Forbidden", 'services "bad" is forbidden: quota'),
                    times=None)
    world.commit({"ok.yaml": app_yaml("ok"), "bad.yaml": app_yaml("bad"), "held.yaml": app_yaml("held", suspend=True)})
    steady, policy = steady_of(world), backoff.Policy(base=300, cap=600, jitter=0, skip=True)
    report = world.sync(steady=steady, retry=policy)
    assert (f"Service/{NS}/bad", FAILED) in actions(report)
    assert (f"Deployment/{NS}/held", SUSPENDED) in actions(report)
    assert sorted(steady.entries) == [f"{NS}/ok"]  # not the failed one, not the suspended one
    report = world.sync(steady=steady, retry=policy)  # bad backs off: skipped, and still not remembered
    assert actions(report)[0] == (f"Application/{NS}/bad", SKIPPED)
    assert sorted(steady.entries) == [f"{NS}/ok"]
    assert world.kube.writes == []


def test_an_offline_pass_reuses_the_known_commit_without_asking_the_remote(world, spies, tmp_path):
    head = world.commit({"web.yaml": app_yaml("web")})
    steady = steady_of(world)
    world.sync(steady=steady)
    shutil.move(str(world.repo.path), str(tmp_path / "away"))  # any fetch would fail now
    spies.clear()
    report = world.sync(steady=steady, offline=True, known_commit=head)
    assert (report.commit, report.source_seen, report.fetch_seconds, report.errors) == (head, False, None, [])
    assert (spies.reads, world.kube.writes) == ([], [])
    assert [a for _, a in actions(report)] == [UNCHANGED] * 3
    assert sorted(steady.entries) == [f"{NS}/web"]
    report = world.sync(steady=steady)  # online: the fetch fails
    assert report.fetch_failed and report.commit is None


def test_an_offline_pass_without_a_previous_read_reads_the_known_commit_from_the_mirror(world, spies, tmp_path):
    head = world.commit({"web.yaml": app_yaml("web")})
    world.sync()
    shutil.move(str(world.repo.path), str(tmp_path / "away"))
    spies.clear()
    steady = steady_of(world)
    report = world.sync(steady=steady, offline=True, known_commit=head)
    assert (report.commit, report.source_seen, report.errors) == (head, False, [])
    assert spies.reads == [head] and steady.source.commit == head
    assert world.kube.writes == []  # SourceAvailable stays as it is: Git was not asked
    assert actions(report) == [(f"Application/{NS}/web", UNCHANGED), (f"Deployment/{NS}/web", UNCHANGED),
                               (f"Service/{NS}/web", UNCHANGED)]


def test_a_first_pass_with_steady_creates_what_a_first_pass_creates(world):
    world.commit({"web.yaml": app_yaml("web")})
    steady = steady_of(world)
    report = world.sync(steady=steady)
    assert actions(report) == [(f"Application/{NS}/web", CREATED), (f"Deployment/{NS}/web", CREATED),
                               (f"Service/{NS}/web", CREATED)]
    assert sorted(steady.entries) == [f"{NS}/web"]


def test_without_versions_nothing_is_remembered(world, spies):
    """``Steady()`` without ``versions`` (a caller that cannot tell resourceVersions after its
    writes): every pass decides everything; only the read of the same commit is reused."""
    world.commit({"web.yaml": app_yaml("web")})
    steady = Steady()
    world.sync(steady=steady)
    assert steady.entries == {}
    spies.clear()
    world.sync(steady=steady)
    assert (spies.reads, spies.rendered, spies.children) == ([], ["web"], ["web"])


def test_a_settled_application_keeps_its_recorded_health_and_readiness_and_computes_no_status(world, monkeypatch):
    world.commit({"web.yaml": app_yaml("web")})
    steady = steady_of(world)
    world.sync(steady=steady)
    rolled_out(world, "web")
    first = world.sync(steady=steady)  # decided again: Ready turned True, recorded
    assert first.readiness[f"{NS}/web"] == ("True", "Healthy")
    computed = []
    new_status = statuswrite.new_status

    def spy(app, *args, **kwargs):
        computed.append(app["metadata"]["name"])
        return new_status(app, *args, **kwargs)
    monkeypatch.setattr(statuswrite, "new_status", spy)
    report = world.sync(steady=steady)
    assert (computed, world.kube.writes) == ([], [])  # settled: its status is not even computed
    assert report.readiness == {f"{NS}/web": ("True", "Healthy")} and report.health == first.health


def test_an_online_pass_after_an_offline_one_says_again_that_the_source_is_available(world, tmp_path):
    head = world.commit({"web.yaml": app_yaml("web")})
    steady = steady_of(world)
    world.sync(steady=steady)
    shutil.move(str(world.repo.path), str(tmp_path / "away"))
    assert world.sync(steady=steady).fetch_failed  # SourceAvailable=False on web
    world.sync(steady=steady, offline=True, known_commit=head)  # Git not asked: it stays False
    assert conditions(world.app("web"))["SourceAvailable"][:2] == ("False", "FetchFailed")
    shutil.move(str(tmp_path / "away"), str(world.repo.path))
    report = world.sync(steady=steady)  # the same commit, nothing moved, but Git was seen again
    assert report.ok and report.source_seen
    assert "SourceAvailable" not in conditions(world.app("web"))  # dropped once the source is seen


def test_a_new_application_leaves_the_unchanged_ones_after_it_undecided(world, spies, caplog):
    world.commit({"db.yaml": app_yaml("db"), "web.yaml": app_yaml("web")})
    steady = steady_of(world)
    world.sync(steady=steady)
    world.commit({"api.yaml": app_yaml("api")})  # sorts first, and is not live yet
    spies.clear()
    with caplog.at_level(logging.DEBUG, logger="agent.sync"):
        report = world.sync(steady=steady)
    assert (spies.rendered, spies.children) == (["api"], ["api"])
    assert "2 of 3 Applications unchanged since the previous pass (steady.py)" in caplog.messages
    assert report.ok and world.app("api") is not None


def test_each_outcome_is_attributed_to_the_commit_that_changed_its_application(world):
    """``report.attributed`` (issue 45 item 3): the commit that deployed each Application's
    content, whatever later commit the pass is at, settled or not; an apply that failed is the
    pass's commit."""
    first = world.commit({"web.yaml": app_yaml("web"), "db.yaml": app_yaml("db")})
    steady = steady_of(world)
    assert world.sync(steady=steady).attributed == {f"{NS}/db": first, f"{NS}/web": first}
    assert world.sync(steady=steady).attributed == {f"{NS}/db": first, f"{NS}/web": first}  # settled
    second = world.commit({"db.yaml": app_yaml("db", image="postgres:16"), "README.md": "x"})
    report = world.sync(steady=steady)
    assert report.attributed == {f"{NS}/db": second, f"{NS}/web": first}
    assert report.replaced == {first}  # db's rollout of the first commit was not decided: its status may be pending
    third = world.commit({"README.md": "y"})
    assert world.sync().attributed == {f"{NS}/db": second, f"{NS}/web": first} and third
    world.kube.fail("apply", f"Deployment/{NS}/web", ApiError(422, "Invalid", "refused"), times=None)
    fourth = world.commit({"web.yaml": app_yaml("web", image="nginx:1.28")})
    assert world.sync().attributed[f"{NS}/web"] == fourth
