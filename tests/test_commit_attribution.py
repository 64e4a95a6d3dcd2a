"""Attribution to the right commit (issue 45 item 3), against the real control plane, ``run``
and the loopback GitHub stand-in (tests/notify_servers.py): a bad image's rollout fails on the
commit that brought it, though a pass at a later, unrelated commit sees it fail; the unrelated
commit gets its own verdict; no commit stays ``pending``. Then the webhook's ``Deployed`` names the
commit now applied and the one before it after ``git revert``, a rewritten commit force-pushed,
and a reset + force-push to an older commit. One Application, one replica."""

from __future__ import annotations

import pytest

from tests.support import app_yaml, wait_for
from tests.test_failfast import GRACE, failing
from tests.test_notify import files, github, receiver  # noqa: F401 (fixtures)
from tests.test_run import remote, start_agent  # noqa: F401 (fixtures)

pytestmark = pytest.mark.usefixtures("crd")
PENDING = ("pending", "applying this commit; waiting for its Applications to be ready")
READY = ("success", "1 Application synced and ready")


def last(github, sha: str) -> tuple[str, str] | None:
    posted = github.posted(sha)
    return posted[-1] if posted else None


def deployed(receiver) -> list[tuple[str, str, str]]:
    """(commit, previousCommit, message) of each Deployed notification, in order."""
    return [(n["commit"], n["previousCommit"], n["message"]) for n in receiver.notifications()
            if n["reason"] == "Deployed"]


def test_a_failed_rollout_fails_its_own_commit_and_deployed_names_the_commits_git_left(
        start_agent, repo, remote, namespace, receiver, github, files):  # noqa: F811
    def publish() -> str:
        """Push the work tree's HEAD as it is (a rewritten history too), its SHA."""
        repo.git("push", "-q", "-f", str(remote.path), "main")
        return repo.head()

    repo.write("web.yaml", app_yaml("web"))
    good = remote.push()
    agent = start_agent(remote.url, "--namespace", namespace, "--interval", "2", *files)
    wait_for(lambda: last(github, good) == READY, timeout=60, what="success on the first commit")

    repo.write("web.yaml", failing("image-pull"))
    bad = remote.push()
    wait_for(lambda: github.posted(bad)[:1] == [PENDING], timeout=30, what="pending on the bad commit")
    repo.write("README.md", "unrelated\n")
    later = remote.push()  # before the rollout is called failed: a pass at this commit sees it fail
    wait_for(lambda: (last(github, bad) or ("",))[0] == "failure" and last(github, later) not in (None, PENDING),
             timeout=GRACE + 60, what="the bad commit's failure and the later commit's verdict")
    state, text = last(github, bad)
    assert "ImagePullBackOff" in text and text.startswith("1 of 1 Application failed: "), text
    assert last(github, later)[0] == "success", github.posted(later)
    assert github.posted(bad) == [PENDING, (state, text)]
    assert deployed(receiver)[-1][:2] == (bad, good)

    repo.git("revert", "--no-edit", bad)  # web's content is the good commit's again, at the revert commit
    reverted = publish()
    wait_for(lambda: last(github, reverted) == READY, timeout=60, what="success on the revert commit")
    assert deployed(receiver)[-1] == (reverted, bad, f"deployed commit {reverted[:7]} (before: {bad[:7]})")
    assert [n["commit"] for n in receiver.notifications() if n["reason"] == "Degraded"] == [bad]

    repo.write("web.yaml", app_yaml("web", image="nginx:1.26"))
    changed = remote.push()
    wait_for(lambda: deployed(receiver)[-1][0] == changed, timeout=60, what="Deployed of the change")
    repo.write("web.yaml", app_yaml("web", image="nginx:1.25"))
    repo.git("commit", "-q", "-a", "--amend", "--no-edit")  # the same commit rewritten, force-pushed
    rewritten = publish()
    wait_for(lambda: deployed(receiver)[-1][0] == rewritten, timeout=60, what="Deployed of the rewritten commit")
    assert deployed(receiver)[-1] == (rewritten, changed, f"deployed commit {rewritten[:7]} (before: {changed[:7]})")

    repo.git("reset", "-q", "--hard", reverted)  # back to an older commit, force-pushed
    assert publish() == reverted
    wait_for(lambda: deployed(receiver)[-1][1] == rewritten, timeout=60, what="Deployed after the reset")
    assert deployed(receiver)[-1] == (reverted, rewritten, f"deployed commit {reverted[:7]} (before: {rewritten[:7]})")

    def none_pending() -> bool:
        return all(last(github, sha) != PENDING for sha in list(github.statuses))
    wait_for(none_pending, timeout=60, what="every commit's final status")
    assert {sha: last(github, sha)[0] for sha in (good, bad, later, reverted)} == {
        good: "success", bad: "failure", later: "success", reverted: "success"}
    assert agent.proc.poll() is None


def test_sync_once_after_sync_once_closes_each_pending(agent, repo, namespace, github, files):  # noqa: F811
    """One ``sync --once`` per commit, as a CI job runs it: each a new process that remembers
    nothing. The pass at an unrelated commit fails the bad commit (its ``Degraded`` is about it);
    a bad commit replaced before its rollout was decided is superseded."""
    def sync() -> int:
        return agent.sync(repo.path, "--namespace", namespace, *files).returncode

    repo.write("web.yaml", app_yaml("web"))
    good = repo.commit()
    assert agent.sync(repo.path, "--namespace", namespace, "--wait=60s", *files).returncode == 0
    assert last(github, good) == READY
    repo.write("web.yaml", failing("image-pull"))
    bad = repo.commit()
    assert sync() == 0 and github.posted(bad) == [PENDING]
    repo.write("README.md", "unrelated\n")
    later = repo.commit()
    wait_for(lambda: sync() == 0 and last(github, bad)[0] == "failure", timeout=GRACE + 60, interval=1,
             what="the bad commit's failure from a pass at the later commit")
    assert "ImagePullBackOff" in last(github, bad)[1]
    assert github.posted(later)[1:] == [("success", "no Application changed at this commit (1 synced; a rollout's "
                                                    "status is on the commit that changed it)")]

    repo.write("web.yaml", failing("image-pull").replace("web:nope", "web:nope-2"))
    again = repo.commit()
    assert sync() == 0 and github.posted(again) == [PENDING]
    repo.write("web.yaml", app_yaml("web", image="nginx:1.26"))  # fixed before the rollout was called failed
    fixed = repo.commit()
    assert sync() == 0
    assert github.posted(again) == [PENDING, ("success", f"superseded by {fixed[:12]} before its rollout was decided")]
    wait_for(lambda: sync() == 0 and last(github, fixed) == READY, timeout=60, interval=1, what="the fix's success")
    assert all(last(github, sha) != PENDING for sha in github.statuses)
