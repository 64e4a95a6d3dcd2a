"""Commits only move forward (``agent.engine.forward``, issue 46), against the in-memory cluster
and real Git repositories: a pass of an older commit than the one the cluster has leaves the
Application as it is while the ref is at or past that commit (CI's checkout of an older commit,
``run`` behind), and applies it when the ref itself went back (a reset and force-push)."""

from __future__ import annotations

import subprocess

import pytest

from agent.engine import steady
from agent.engine.report import CONFIGURED, UNCHANGED
from tests.support import GitRepo
from tests.unit.engine.passes import World, app_yaml, image

SOURCE = "shared"


@pytest.fixture
def world(tmp_path):
    return World(tmp_path, source_id=SOURCE)


def two_commits(world: World) -> tuple[str, str]:
    older = world.commit({"web.yaml": app_yaml("web", image="nginx:1.26")})
    newer = world.commit({"web.yaml": app_yaml("web", image="nginx:1.27")})
    world.sync()
    assert image(world.child("Deployment", "web")) == "nginx:1.27"
    return older, newer


def kept_line(report) -> str:
    [change] = [c for c in report.changes if c.subject.startswith("Application/")]
    assert change.action == UNCHANGED, change
    return change.message


def test_a_checkout_of_an_older_commit_leaves_the_application_as_it_is(world, tmp_path):
    older, newer = two_commits(world)
    checkout = tmp_path / "ci"
    subprocess.run(["git", "clone", "-q", str(world.repo.path), str(checkout)], check=True)
    GitRepo(checkout).git("checkout", "-q", "--detach", older)
    report = world.sync(repo=str(checkout))
    assert report.ok and report.commit == older
    assert kept_line(report) == (f"kept at {newer[:12]}: the ref is at {newer[:12]}, not at this pass's commit "
                                 f"{older[:12]}")
    assert image(world.child("Deployment", "web")) == "nginx:1.27"
    assert world.app("web")["metadata"]["annotations"]["heumsi.github.io/source-commit"] == newer
    assert world.app("web")["status"]["lastSyncedCommit"] == newer
    assert world.kube.writes == []


def test_run_behind_the_cluster_asks_for_a_pass_at_once_and_never_goes_back(world):
    older, newer = two_commits(world)
    report = world.sync(known_commit=older, offline=True, steady=steady.Steady())
    assert report.retry_at is not None
    assert kept_line(report).startswith(f"kept at {newer[:12]}")
    assert image(world.child("Deployment", "web")) == "nginx:1.27"
    report = world.sync(known_commit=older, steady=steady.Steady())  # the pass asked for: online, at the tip
    assert report.commit == newer and image(world.child("Deployment", "web")) == "nginx:1.27"


def test_a_ref_moved_back_is_applied(world):
    older, newer = two_commits(world)
    world.repo.git("reset", "-q", "--hard", older)  # a reset and force-push: a deliberate rollback
    report = world.sync()
    assert report.commit == older and report.ok
    assert image(world.child("Deployment", "web")) == "nginx:1.26"
    assert (f"Application/{world.opts.namespace}/web", CONFIGURED) in [(c.subject, c.action) for c in report.changes]


def test_a_history_rewritten_by_a_force_push_is_applied(world):
    _, newer = two_commits(world)
    world.repo.git("checkout", "-q", "--orphan", "rewritten")
    rewritten = world.commit({"web.yaml": app_yaml("web", image="nginx:1.25")}, "rewritten")
    world.repo.git("branch", "-q", "-f", "main", rewritten)
    world.repo.git("checkout", "-q", "main")
    report = world.sync()
    assert report.commit == rewritten and report.ok
    assert image(world.child("Deployment", "web")) == "nginx:1.25"


def test_the_same_commit_or_a_newer_one_costs_no_git_call(world, monkeypatch):
    from agent.source import ancestry

    calls = []
    monkeypatch.setattr(ancestry, "tip", lambda *a, **k: calls.append(a))
    two_commits(world)
    world.commit({"web.yaml": app_yaml("web", image="nginx:1.28")})
    world.sync()
    world.sync()
    assert calls == []


def test_run_behind_a_rollback_does_not_undo_it(world):
    older, newer = two_commits(world)
    world.repo.git("reset", "-q", "--hard", older)
    world.sync()  # another writer applies the rollback
    assert image(world.child("Deployment", "web")) == "nginx:1.26"
    report = world.sync(known_commit=newer, offline=True, steady=steady.Steady())  # run, not yet told
    assert kept_line(report).startswith(f"kept at {older[:12]}") and report.retry_at is not None
    assert image(world.child("Deployment", "web")) == "nginx:1.26"


def test_a_pinned_older_commit_is_judged_by_the_branch(world):
    older, newer = two_commits(world)
    report = world.sync(ref=older)  # CI's --ref "$COMMIT_SHA" of a pipeline run again
    assert kept_line(report).startswith(f"kept at {newer[:12]}: the ref is at {newer[:12]}")
    assert image(world.child("Deployment", "web")) == "nginx:1.27"
