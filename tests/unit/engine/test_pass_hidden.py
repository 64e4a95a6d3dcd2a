"""The whole pass (``agent.engine.sync.run``) with a refused file: it holds back only the prunes
it could hide (``agent.engine.hidden``), with real Git commits and the in-memory cluster. No
Application moved into a refused file is pruned, whatever the order of the commits and passes;
every other prune goes ahead; unreadable history holds back every prune. The real-cluster test is
tests/test_prune_guards.py."""

from __future__ import annotations

import pytest

from agent.engine import hidden
from agent.engine.report import KEPT, PRUNED
from agent.views import explainview
from tests.unit.engine.passes import NS, World, actions, app_yaml, conditions

BROKEN = "  replicas: [\n"
"""Appended to a document, this makes its file fail to parse: line ``len(doc lines) + 1``."""


def broken(*names: str) -> str:
    """A file of the Applications ``names`` whose last line does not parse: nothing in it is read."""
    return "---\n".join(app_yaml(n) for n in names) + BROKEN


def where(report, path: str) -> str:
    """The first error the pass reported for the file ``path`` (``file:line: ...``)."""
    return next(e for e in report.errors if e.startswith(f"{path}:"))


@pytest.fixture
def world(tmp_path):
    world = World(tmp_path)
    world.commit({"team-a/x.yaml": app_yaml("x"), "team-a/y.yaml": app_yaml("y"), "team-b/b.yaml": app_yaml("b"),
                  "team-c/c.yaml": app_yaml("c")})
    world.sync()
    return world


def kept(world: World, name: str) -> str:
    """The ``Synced`` message of the Application ``name``, asserting it was kept (``PruneBlocked``)."""
    assert all(world.trio(name))
    status, reason, message = conditions(world.app(name))["Synced"]
    assert (status, reason) == ("False", "PruneBlocked")
    return message


def test_an_older_refused_file_does_not_block_another_teams_prune(world):
    world.commit({"team-b/b.yaml": broken("b")})
    report = world.sync()
    held = [f"pruning held back for 1 Application a refused file could hide: {NS}/b"]  # its own file
    assert report.errors == [where(report, "team-b/b.yaml")] and report.notes == held
    assert conditions(world.app("b"))["Synced"] == ("False", "InvalidManifest", where(report, "team-b/b.yaml"))
    world.commit({"team-a/y.yaml": None})
    report = world.sync()
    assert (f"Application/{NS}/y", PRUNED) in actions(report) and world.trio("y") == (None, None, None)
    assert report.notes == held and all(world.trio("x")) and all(world.trio("b"))


def test_moved_into_a_refused_file_in_one_commit_is_kept_and_its_status_names_the_file(world):
    head = world.commit({"team-a/x.yaml": None, "team-b/b.yaml": broken("b", "x")})
    report = world.sync()
    error = where(report, "team-b/b.yaml")
    assert error.startswith("team-b/b.yaml:19: invalid YAML: ")  # the line that does not parse
    assert (f"Application/{NS}/x", KEPT) in actions(report) and not [a for a in actions(report) if a[1] == PRUNED]
    message = kept(world, "x")
    assert message.startswith(f"no longer in Git at commit {head}; kept because pruning was blocked: {error}; "
                              "that file changed since commit ")
    assert report.notes == [f"pruning held back for 2 Applications a refused file could hide: {NS}/b, {NS}/x"]
    text = explainview.verdict(world.app("x"), explainview.parse_time("2026-01-01T00:00:00Z"))["text"]
    assert text.startswith(f"Blocked: pruning held back by {error}; that file changed since commit ")
    world.sync()
    assert all(world.trio("x"))  # the next pass of the same commit too
    world.commit({"team-b/b.yaml": app_yaml("b")})  # fixed, without x: x left Git for good
    world.sync()
    assert world.trio("x") == (None, None, None)


@pytest.mark.parametrize("pass_between", [True, False])
def test_moved_then_broken_in_two_commits_is_kept(world, pass_between):
    world.commit({"team-a/x.yaml": None, "team-b/b.yaml": app_yaml("b") + "---\n" + app_yaml("x")})
    if pass_between:
        world.sync()
        assert world.app("x")["status"]["sourcePath"] == "team-b/b.yaml"
    world.commit({"team-b/b.yaml": broken("b", "x")})
    report = world.sync()
    assert not [a for a in actions(report) if a[1] == PRUNED] and all(world.trio("x"))
    assert where(report, "team-b/b.yaml") in kept(world, "x")


@pytest.mark.parametrize("pass_between", [True, False])
def test_broken_then_moved_in_two_commits_is_kept(world, pass_between):
    world.commit({"team-b/b.yaml": broken("b")})
    if pass_between:
        world.sync()
    world.commit({"team-a/x.yaml": None, "team-b/b.yaml": broken("b", "x")})
    report = world.sync()
    assert not [a for a in actions(report) if a[1] == PRUNED]
    assert where(report, "team-b/b.yaml") in kept(world, "x")


def test_broken_first_and_moved_into_much_later_is_kept(world):
    world.commit({"team-b/b.yaml": broken("b")})
    world.sync()
    for n in range(3):  # other work, each synced
        world.commit({"team-a/y.yaml": app_yaml("y", replicas=n)})
        world.sync()
    world.commit({"team-a/x.yaml": None, "team-b/b.yaml": broken("b", "x")})
    world.sync()
    assert "team-b/b.yaml:" in kept(world, "x")


def test_copied_into_a_refused_file_then_removed_is_kept(world):
    world.commit({"team-b/b.yaml": broken("b", "x")})  # x is still valid in team-a: applied from there
    world.sync()
    assert world.app("x")["status"]["sourcePath"] == "team-a/x.yaml"
    world.commit({"team-a/x.yaml": None})
    report = world.sync()
    assert not [a for a in actions(report) if a[1] == PRUNED]
    assert kept(world, "x").endswith("that file names it, so it may hold it")


def test_one_commit_removing_one_and_moving_another_into_a_refused_file_keeps_both(world):
    """The pass cannot tell which of the two moved: the file changed since both were last synced."""
    world.commit({"team-a/x.yaml": None, "team-a/y.yaml": None, "team-b/b.yaml": broken("b", "x")})
    report = world.sync()
    assert not [a for a in actions(report) if a[1] == PRUNED]  # b.yaml changed since y's last sync too
    assert "team-b/b.yaml:" in kept(world, "x") and "team-b/b.yaml:" in kept(world, "y")


def test_a_force_push_that_rewrites_history_blocks_every_prune(world):
    world.commit({"team-b/b.yaml": broken("b")})
    world.sync()
    repo = world.repo  # the same files, y removed, on a history with no common commit
    repo.git("checkout", "-q", "--orphan", "rewritten")
    repo.remove("team-a/y.yaml")
    head = repo.commit("rewritten")
    repo.git("branch", "-q", "-M", "main")
    report = world.sync()
    assert report.commit == head and not [a for a in actions(report) if a[1] == PRUNED] and all(world.trio("y"))
    assert report.notes == [f"pruning skipped: not every file could be read and validated, and the history from "
                            f"commit {world.app('b')['status']['lastSyncedCommit'][:7]} ({NS}/b was last synced "
                            "from it) to this commit cannot be read (rewritten by a force-push, another ref, or not "
                            "in the mirror)"]
    assert "cannot be read" in kept(world, "y") and "team-b/b.yaml:" in kept(world, "y")
    world.commit({"team-b/b.yaml": app_yaml("b")})  # the whole truth again: the prune happens
    world.sync()
    assert world.trio("y") == (None, None, None)


def test_an_application_with_no_record_of_its_commit_blocks_every_prune(world):
    world.commit({"team-b/b.yaml": broken("b")})
    world.sync()
    live = world.app("y")
    live["metadata"]["annotations"].pop("heumsi.github.io/source-commit")
    world.kube.put(live)
    live = world.app("y")
    live["status"].pop("lastSyncedCommit")
    world.kube.put(live, subresource="status")
    world.commit({"team-a/y.yaml": None})
    report = world.sync()
    assert all(world.trio("y")) and report.notes[0].endswith(f"{NS}/y records no commit it was synced from, so "
                                                             "what moved since cannot be told")


def test_without_a_refused_file_nothing_is_read_and_the_prune_goes_ahead(world):
    world.commit({"team-a/y.yaml": None})
    report = world.sync()
    assert (f"Application/{NS}/y", PRUNED) in actions(report) and report.notes == []


def test_a_commit_the_mirror_does_not_hold_blocks_every_prune(world):
    world.commit({"team-b/b.yaml": broken("b")})
    world.sync()
    live = world.app("y")
    live["metadata"]["annotations"].pop("heumsi.github.io/source-commit")
    world.kube.put(live)
    live = world.app("y")
    live["status"]["lastSyncedCommit"] = "0" * 40  # Git cannot tell: fail closed
    world.kube.put(live, subresource="status")
    world.commit({"team-a/y.yaml": None})
    report = world.sync()
    assert all(world.trio("y")) and report.notes[0].endswith(
        f"the history from commit 0000000 ({NS}/y was last synced from it) to this commit cannot be read "
        "(rewritten by a force-push, another ref, or not in the mirror)")


def test_more_commits_than_a_pass_reads_block_every_prune(world, monkeypatch):
    monkeypatch.setattr(hidden, "MAX_COMMITS", 0)
    world.commit({"team-b/b.yaml": broken("b")})
    world.sync()
    world.commit({"team-a/y.yaml": None})
    report = world.sync()
    assert all(world.trio("y")) and report.notes[0].endswith(
        "the Applications to prune were last synced from 2 commits, more than the 0 a pass reads")
