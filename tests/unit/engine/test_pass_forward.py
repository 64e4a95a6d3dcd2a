"""Commits only move forward (``agent.engine.forward``, issue 46), against the in-memory cluster
and real Git repositories: a pass that would take the cluster back from a commit another writer
applied (CI's checkout of an older commit on the branch, ``run`` behind) changes nothing at all,
not an apply, a create, a prune or a status; a ref moved back is applied; a commit off the branch
(asked for by itself) is applied."""

from __future__ import annotations

import subprocess

import pytest

from agent.engine import steady
from agent.kube.cluster import ApiError
from tests.support import GitRepo
from tests.unit.engine.passes import World, app_yaml, image

SOURCE = "shared"


@pytest.fixture
def world(tmp_path):
    return World(tmp_path, source_id=SOURCE)


def two_commits(world: World, extra: dict | None = None) -> tuple[str, str]:
    older = world.commit({"web.yaml": app_yaml("web", image="nginx:1.26")})
    newer = world.commit({"web.yaml": app_yaml("web", image="nginx:1.27"), **(extra or {})})
    world.sync()
    assert image(world.child("Deployment", "web")) == "nginx:1.27"
    return older, newer


def checkout(world: World, tmp_path, at: str) -> str:
    """A CI checkout of the repository (``origin``) at ``at``, detached."""
    path = tmp_path / "ci"
    subprocess.run(["git", "clone", "-q", str(world.repo.path), str(path)], check=True)
    GitRepo(path).git("checkout", "-q", "--detach", at)
    return str(path)


def nothing_applied(report, commit: str, recorded: str, tip: str) -> None:
    assert report.ok and report.commit == commit and report.changes == []
    assert (f"nothing applied: the ref is at {tip[:12]}, and this pass's commit {commit[:12]} would take the "
            f"cluster back from {recorded[:12]}, which another writer applied") in report.notes


def test_an_old_pipeline_run_again_changes_nothing(world, tmp_path):
    older, newer = two_commits(world, {"fresh.yaml": app_yaml("fresh")})
    report = world.sync(repo=checkout(world, tmp_path, older))
    nothing_applied(report, older, newer, newer)
    assert world.kube.writes == []  # fresh, added by the newer commit, is not pruned; no status moves
    assert image(world.child("Deployment", "web")) == "nginx:1.27" and world.app("fresh") is not None
    assert world.app("web")["status"]["lastSyncedCommit"] == newer


def test_a_pinned_older_commit_is_judged_by_the_branch(world):
    older, newer = two_commits(world)
    nothing_applied(world.sync(ref=older), older, newer, newer)  # CI's --ref "$COMMIT_SHA" run again
    assert image(world.child("Deployment", "web")) == "nginx:1.27"


def test_run_behind_asks_for_a_pass_at_once_and_never_recreates_what_was_pruned(world):
    older = world.commit({"web.yaml": app_yaml("web", image="nginx:1.26"), "gone.yaml": app_yaml("gone")})
    world.sync()
    newer = world.commit({"web.yaml": app_yaml("web", image="nginx:1.27"), "gone.yaml": None})
    world.sync()  # another writer (CI) applies the newer commit: gone is pruned
    assert world.app("gone") is None
    report = world.sync(known_commit=older, offline=True, steady=steady.Steady())  # run, on a watch event
    nothing_applied(report, older, newer, newer)
    assert report.retry_at is not None and world.app("gone") is None and world.kube.writes == []
    report = world.sync(known_commit=older, steady=steady.Steady())  # the pass asked for: online, at the tip
    assert report.commit == newer and image(world.child("Deployment", "web")) == "nginx:1.27"


def test_run_behind_another_writers_pass_before_its_status_write_changes_nothing(world):
    older = world.commit({"web.yaml": app_yaml("web", image="nginx:1.26")})
    world.sync()
    newer = world.commit({"web.yaml": app_yaml("web", image="nginx:1.27")})
    world.kube.fail("patch_status", f"Application/{world.opts.namespace}/web", ApiError(500, "InternalError", "x"),
                    times=None)  # CI's pass, seen between its apply and its status write
    world.sync()
    app = world.app("web")
    assert app["status"]["lastAttemptedCommit"] == older and app["metadata"]["generation"] == 2
    world.kube.hooks.clear()
    report = world.sync(known_commit=older, offline=True, steady=steady.Steady())  # run, on the apply's event
    nothing_applied(report, older, newer, newer)
    assert image(world.child("Deployment", "web")) == "nginx:1.27" and world.kube.writes == []


def test_a_ref_moved_back_is_applied_and_run_behind_does_not_undo_it(world):
    older, newer = two_commits(world)
    world.repo.git("reset", "-q", "--hard", older)  # a reset and force-push: a deliberate rollback
    report = world.sync()
    assert report.commit == older and report.ok and image(world.child("Deployment", "web")) == "nginx:1.26"
    report = world.sync(known_commit=newer, offline=True, steady=steady.Steady())  # run, not yet told
    nothing_applied(report, newer, older, older)
    assert image(world.child("Deployment", "web")) == "nginx:1.26"


def test_a_commit_off_the_branch_is_applied_as_asked(world, tmp_path):
    older, newer = two_commits(world)
    ci = checkout(world, tmp_path, newer)  # a job of the commit a rollback abandons, or a pull request's
    world.repo.git("reset", "-q", "--hard", older)
    world.sync()
    report = world.sync(repo=ci)
    assert report.commit == newer and image(world.child("Deployment", "web")) == "nginx:1.27"


def test_a_history_rewritten_by_a_force_push_is_applied(world):
    two_commits(world)
    world.repo.git("checkout", "-q", "--orphan", "rewritten")
    rewritten = world.commit({"web.yaml": app_yaml("web", image="nginx:1.25")}, "rewritten")
    world.repo.git("branch", "-q", "-f", "main", rewritten)
    world.repo.git("checkout", "-q", "main")
    report = world.sync()
    assert report.commit == rewritten and report.ok
    assert image(world.child("Deployment", "web")) == "nginx:1.25"


def test_a_commit_off_the_branch_over_another_off_the_branch_is_applied(world, tmp_path):
    base = world.commit({"web.yaml": app_yaml("web", image="nginx:1.26")})
    world.repo.git("checkout", "-q", "-b", "preview")
    first = world.commit({"web.yaml": app_yaml("web", image="nginx:1.27")})
    world.sync(ref="preview")
    second = world.commit({"web.yaml": app_yaml("web", image="nginx:1.28")})
    world.repo.git("checkout", "-q", "main")
    assert base and first
    report = world.sync(repo=checkout(world, tmp_path, second))  # a preview of the branch's next commit
    assert report.commit == second and image(world.child("Deployment", "web")) == "nginx:1.28"


def test_the_same_commit_or_a_newer_one_costs_no_look_at_the_ref(world, monkeypatch):
    from agent.source import ancestry

    calls = []
    monkeypatch.setattr(ancestry, "tip", lambda *a, **k: calls.append(a))
    two_commits(world)
    world.commit({"web.yaml": app_yaml("web", image="nginx:1.28")})
    world.sync()
    world.sync(offline=True, known_commit=world.repo.head(), steady=steady.Steady())
    assert calls == []



def test_a_dry_run_of_a_commit_off_the_branch_shows_its_changes(world, tmp_path):
    two_commits(world)
    ci = checkout(world, tmp_path, "HEAD")
    GitRepo(ci).git("checkout", "-q", "-b", "pull-request")
    (tmp_path / "ci" / "web.yaml").write_text(app_yaml("web", image="nginx:1.28"))
    GitRepo(ci).git("commit", "-qam", "1.28")
    world.kube.dry_run = True  # diff: what a pull request's commit would change
    report = world.sync(repo=ci)
    assert not [n for n in report.notes if n.startswith("nothing applied")]
    assert any(c.subject.startswith("Deployment/") and c.action == "configured" for c in report.changes)
