"""news: what a status transition is worth telling, once per change (issue 32)."""

import pytest

from agent.engine import news
from agent.engine.news import Notice

SHA1, SHA2 = "1" * 40, "2" * 40


def cond(type_, status, reason, message=""):
    return {"type": type_, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": "T", "observedGeneration": 1}


def status(ready=("True", "Healthy", "all 1 ready"), synced=("True", "Synced", "applied"), stalled=None,
           health="Healthy", health_message="", commit=SHA1, synced_commit=None, **extra):
    conditions = [cond("Ready", *ready)]
    if stalled:
        conditions.append(cond("Stalled", "True", *stalled))
    conditions.append(cond("Synced", *synced))
    out = {"lastAttemptedCommit": commit, "lastSyncedCommit": synced_commit or commit, "sourcePath": "apps/web.yaml",
           "health": {"status": health, "message": health_message}, "conditions": conditions}
    out.update(extra)
    return out


PROGRESSING = dict(ready=("False", "Progressing", "0 of 1 ready"), health="Progressing")
FAILED = dict(ready=("False", "SyncFailed", "boom"), synced=("False", "SyncFailed", "boom"))


def tell(old, new, changed=False):
    return [(n.reason, n.severity, n.message) for n in news.news(old, new, namespace="ns", name="web", changed=changed)]


def hist(digest, revision):
    return [{"digest": digest, "revision": revision, "firstSyncedAt": "T", "lastSyncedAt": "T", "passes": 1}]


def test_the_same_status_again_tells_nothing():
    assert tell(status(), status()) == []
    assert tell(status(**FAILED), status(**FAILED)) == []


def test_first_status_ready_at_once():
    assert tell(None, status()) == [("Ready", "info", "ready: all 1 ready")]
    assert tell({}, status(**PROGRESSING)) == []


def test_becoming_ready_after_a_rollout():
    assert tell(status(**PROGRESSING), status()) == [("Ready", "info", "ready: all 1 ready")]
    assert tell(status(), status(**PROGRESSING)) == []


def test_ready_with_no_message_says_healthy():
    assert tell(status(**PROGRESSING), status(ready=("True", "Healthy", ""))) == [("Ready", "info", "ready: healthy")]


def test_a_new_commit_that_changes_nothing_tells_nothing():
    assert tell(status(commit=SHA1), status(commit=SHA2)) == []


def test_deployed_by_the_history_digest():
    old = status(history=hist("sha256:a", SHA1))
    new = status(commit=SHA2, history=hist("sha256:b", SHA2))
    assert tell(old, new) == [("Deployed", "info", "deployed commit 2222222 (before: 1111111)")]
    assert tell(old, status(commit=SHA2, history=hist("sha256:a", SHA1))) == []
    # the digest is the truth: the pass's own changed does not count then
    assert tell(old, status(commit=SHA2, history=hist("sha256:a", SHA1)), changed=True) == []


def test_history_appearing_tells_only_what_the_pass_changed():
    """An upgrade from an agent without history writes the first entry: nothing new is deployed."""
    assert tell(status(), status(history=hist("sha256:a", SHA1))) == []
    # what was deployed before the first entry is unknown: not the commit now deployed
    assert tell(status(), status(history=hist("sha256:a", SHA1)), changed=True) == [
        ("Deployed", "info", "deployed commit 1111111 (before: none)")]


def test_deployed_by_last_changed_commit():
    new = status(commit=SHA2, lastChangedCommit=SHA2)
    assert tell(status(lastChangedCommit=SHA1), new) == [
        ("Deployed", "info", "deployed commit 2222222 (before: 1111111)")]
    assert tell(status(commit=SHA1, lastChangedCommit=SHA1), status(commit=SHA2, lastChangedCommit=SHA1)) == []


def test_deployed_without_a_marker_falls_back_to_changed():
    assert tell(status(), status(commit=SHA2), changed=True) == [
        ("Deployed", "info", "deployed commit 2222222 (before: 1111111)")]
    assert tell(None, status(), changed=True) == [("Deployed", "info", "deployed commit 1111111 (before: none)"),
                                                  ("Ready", "info", "ready: all 1 ready")]


def test_not_deployed_when_the_sync_failed():
    assert [r for r, *_ in tell(status(), status(**FAILED), changed=True)] == ["ApplyFailed"]
    assert tell(status(history=hist("a", SHA1)), status(**FAILED, history=hist("b", SHA2))) == [
        ("ApplyFailed", "error", "SyncFailed: boom")]


def test_apply_failed_once_then_recovered():
    assert tell(status(), status(**FAILED)) == [("ApplyFailed", "error", "SyncFailed: boom")]
    assert tell(status(**FAILED), status()) == [("Recovered", "info", "recovered: ready: all 1 ready")]
    assert tell(status(**FAILED), status(**PROGRESSING)) == [("Recovered", "info", "recovered: synced, Progressing")]


def test_recovered_without_a_ready_reason():
    new = status(ready=("False", "", ""), health="Progressing")
    assert tell(status(**FAILED), new) == [("Recovered", "info", "recovered: synced, not ready yet")]


def test_prune_skipped_prune_blocked_and_suspended_are_no_failures():
    for reason in ("PruneSkipped", "PruneBlocked", "Suspended"):
        new = status(ready=("False", reason, "x"), synced=("False", reason, "x"))
        assert tell(status(), new) == []
        assert tell(new, status()) == [("Ready", "info", "ready: all 1 ready")]


def test_stalled_reason_is_told_as_stalled_not_apply_failed():
    new = status(ready=("False", "InvalidManifest", "bad"), synced=("False", "InvalidManifest", "bad"),
                 stalled=("InvalidManifest", "bad"))
    assert tell(status(), new) == [("Stalled", "error", "InvalidManifest: bad")]
    assert tell(new, new) == []
    # already failing to apply: stalled is still news, a second apply failure is not
    assert tell(status(**FAILED), new) == [("Stalled", "error", "InvalidManifest: bad")]
    assert tell(new, status(**FAILED)) == []


def test_degraded_once_and_recovered():
    new = status(ready=("False", "Degraded", "deadline"), stalled=("Degraded", "deadline"), health="Degraded",
                 health_message="Deployment: progress deadline exceeded")
    assert tell(status(**PROGRESSING), new) == [("Degraded", "error", "Degraded: Deployment: progress deadline exceeded")]
    assert tell(new, new) == []
    assert tell(new, status()) == [("Recovered", "info", "recovered: ready: all 1 ready")]


def test_degraded_with_no_message():
    new = status(ready=("False", "Degraded", ""), health="Degraded")
    assert tell(status(), new) == [("Degraded", "error", "Degraded: a child is degraded")]


def test_failing():
    assert news.failing(status(**FAILED))
    assert news.failing(status(stalled=("Invalid", "x")))
    assert news.failing(status(health="Degraded"))
    assert not news.failing(status())
    assert not news.failing({})
    assert not news.failing({"health": "Degraded", "conditions": ["x"]})


def test_notice_fields():
    [notice] = news.news(status(commit=SHA1, history=hist("a", SHA1)), status(commit=SHA2, history=hist("b", SHA2)),
                         namespace="ns", name="web", uid="u-1")
    assert notice == Notice("ns", "web", "Deployed", "info", "deployed commit 2222222 (before: 1111111)",
                            commit=SHA2, previous_commit=SHA1, source_path="apps/web.yaml", uid="u-1")
    assert notice.application == "ns/web"


def test_previous_commit_comes_from_the_old_content():
    old = status(commit=SHA2, synced_commit=SHA2, history=hist("a", SHA1))
    [notice] = news.news(old, status(commit=SHA2, history=hist("b", SHA2)), namespace="ns", name="web")
    assert notice.previous_commit == SHA1


def test_commit_prefers_the_attempted_one():
    [notice] = news.news(status(), status(**FAILED, commit=SHA2, synced_commit=SHA1), namespace="ns", name="web")
    assert (notice.commit, notice.previous_commit) == (SHA2, SHA1)
    [notice] = news.news(None, {"lastSyncedCommit": SHA1, "conditions": [cond("Ready", "True", "Healthy")]},
                         namespace="ns", name="web")
    assert notice.commit == SHA1


def test_content():
    assert news.content({}) == (None, None)
    assert news.content({"history": []}) == (None, None)
    assert news.content({"history": hist("d", SHA1), "lastChangedCommit": SHA2}) == ("d", SHA1)
    assert news.content({"lastChangedCommit": SHA2}) == (SHA2, SHA2)


def test_pruned():
    notice = news.pruned("ns", "web", commit=SHA2, previous_commit=SHA1, source_path="a.yaml", uid="u")
    assert notice == Notice("ns", "web", "Pruned", "info", "pruned: no longer in Git at commit 2222222", SHA2, SHA1,
                            "a.yaml", "u")
    assert news.pruned("ns", "web", commit=None).message == "pruned: no longer in Git at commit none"


@pytest.mark.parametrize("reasons, severity, reason, want", [
    (None, None, "Ready", True),
    (frozenset({"Ready"}), None, "Ready", True),
    (frozenset({"Deployed"}), None, "Ready", False),
    (None, "error", "Ready", False),
    (None, "error", "Degraded", True),
    (None, "info", "Degraded", True),
    (frozenset({"Degraded"}), "error", "Degraded", True),
])
def test_wanted(reasons, severity, reason, want):
    notice = Notice("ns", "web", reason, news.SEVERITY[reason], "m")
    assert news.wanted(notice, reasons, severity) is want


def test_severities():
    assert {r for r, s in news.SEVERITY.items() if s == "error"} == {"Degraded", "Stalled", "ApplyFailed",
                                                                          "ScheduleFailed"}
    assert set(news.SEVERITY) == set(news.REASONS)


def test_a_failed_scheduled_run_is_told_once_and_never_counts_as_failing():
    ok = {"name": "report", "cronJob": "web-report", "active": 0, "lastSuccessfulTime": "T1"}
    failed = {**ok, "lastFailure": {"job": "web-report-2", "time": "T2", "reason": "BackoffLimitExceeded",
                                    "message": "Job has reached the specified backoff limit"}}
    again = {**ok, "lastFailure": {"job": "web-report-3", "time": "T3"}}
    assert tell(status(schedules=[ok]), status(schedules=[failed])) == [
        ("ScheduleFailed", "error", "schedule report: Job web-report-2 failed (BackoffLimitExceeded: Job has reached "
                                    "the specified backoff limit)")]
    assert tell(status(schedules=[failed]), status(schedules=[failed])) == []  # told once
    assert tell(status(schedules=[failed]), status(schedules=[{**failed, "lastSuccessfulTime": "T4"}])) == []
    assert tell(status(schedules=[failed]), status(schedules=[again])) == [
        ("ScheduleFailed", "error", "schedule report: Job web-report-3 failed")]
    assert not news.failing(status(schedules=[failed]))
    assert news.SEVERITY[news.NoticeReason.SCHEDULE_FAILED] == news.Severity.ERROR


def test_a_running_task_is_no_failure_and_a_failed_one_is_told_once_as_degraded():
    """taskgate: ``TaskRunning`` holds the rollout (Synced False) but fails nothing; ``TaskFailed``
    is Stalled and Degraded at once: one Degraded notice names the task."""
    waiting = ("False", "TaskRunning", "waiting for task migrate (Job web-migrate-1) to complete before the rollout")
    running = status(ready=waiting, synced=waiting, health="Progressing")
    assert tell(status(), running) == [] and not news.failing(running)
    why = "task migrate failed (Job web-migrate-1 failed: BackoffLimitExceeded)"
    failed = status(ready=("False", "TaskFailed", why), synced=("False", "TaskFailed", why),
                    stalled=("TaskFailed", why), health="Degraded", health_message=why)
    assert tell(running, failed) == [("Degraded", "error", f"Degraded: {why}")]
    assert news.failing(failed)


# issue 45 item 3: the Deployed notice names the commit now applied and the one applied before, whatever
# Git did in between. The statuses are made by history.fields, as the pass makes them.
A, B, R, B2 = "a" * 40, "b" * 40, "c" * 40, "d" * 40


def synced_at(old, spec, commit):
    """The status a pass at ``commit`` stores for ``spec`` over ``old`` (Synced and Ready)."""
    from agent.engine import history

    new = status(commit=commit)
    new.update(history.fields(old, spec, commit, True, True, "T"))
    return new


def deployed_notice(old, new):
    return next((n.message, n.commit, n.previous_commit) for n in news.news(old, new, namespace="ns", name="web")
                if n.reason == "Deployed")


def test_a_revert_is_told_as_the_revert_commit_not_the_old_one():
    good, bad = {"image": "web:1"}, {"image": "web:2"}
    at_a = synced_at({}, good, A)
    at_b = synced_at(at_a, bad, B)
    at_r = synced_at(at_b, good, R)  # git revert B: A's content again, at the revert commit R
    assert at_r["history"][0]["revision"] == A  # the history keeps the commit that first brought it
    assert deployed_notice(at_b, at_r) == ("deployed commit ccccccc (before: bbbbbbb)", R, B)
    later = synced_at(at_r, {"image": "web:3"}, B2)
    assert deployed_notice(at_r, later) == ("deployed commit ddddddd (before: ccccccc)", B2, R)


def test_a_reset_and_force_push_names_the_older_commit_now_applied():
    good, bad = {"image": "web:1"}, {"image": "web:2"}
    at_b = synced_at(synced_at({}, good, A), bad, B)
    back = synced_at(at_b, good, A)  # git reset --hard A; git push --force
    assert deployed_notice(at_b, back) == ("deployed commit aaaaaaa (before: bbbbbbb)", A, B)


def test_a_rewritten_commit_is_told_as_the_new_one():
    at_b = synced_at(synced_at({}, {"image": "web:1"}, A), {"image": "web:2"}, B)
    amended = synced_at(at_b, {"image": "web:2b"}, B2)  # git commit --amend; git push --force
    assert deployed_notice(at_b, amended) == ("deployed commit ddddddd (before: bbbbbbb)", B2, B)
    # the same content under a rewritten commit deploys nothing: nothing is told
    same = synced_at(at_b, {"image": "web:2"}, B2)
    assert news.news(at_b, same, namespace="ns", name="web") == []


def test_a_rollouts_outcome_is_about_the_commit_that_deployed_it():
    """A later, unrelated pass that sees the rollout fail tells it of the commit that changed the
    Application, and the one before; an apply that failed is of the commit attempted."""
    at_b = synced_at(synced_at({}, {"image": "web:1"}, A), {"image": "web:2"}, B)
    degraded = {**at_b, **status(commit=R, ready=("False", "Degraded", "pull"), stalled=("Degraded", "pull"),
                                 health="Degraded", health_message="Deployment: ImagePullBackOff")}
    [notice] = news.news(at_b, degraded, namespace="ns", name="web")
    assert (notice.reason, notice.commit, notice.previous_commit) == ("Degraded", B, A)
    [failed] = news.news(at_b, {**at_b, **status(commit=R, synced_commit=B, **FAILED)}, namespace="ns", name="web")
    assert (failed.reason, failed.commit, failed.previous_commit) == ("ApplyFailed", R, B)


def test_deployed_and_about():
    assert news.deployed({}) is None
    assert news.deployed({"history": hist("d", A), "lastChangedCommit": R}) == R
    assert news.deployed({"history": hist("d", A)}) == A
    assert news.about(status(commit=R, lastChangedCommit=B)) == B
    assert news.about(status(commit=R, lastChangedCommit=B, **FAILED)) == R
    assert news.about(status(commit=R)) == R


def test_replaced_names_a_commit_whose_rollout_a_new_content_ended_undecided():
    rolling = synced_at({}, {"image": "web:1"}, A)
    rolling.update(PROGRESSING)
    rolling["conditions"] = status(**PROGRESSING)["conditions"]
    assert news.replaced(rolling, synced_at(rolling, {"image": "web:2"}, B)) == A
    assert news.replaced(rolling, synced_at(rolling, {"image": "web:1"}, B)) is None  # the same content
    ready = synced_at({}, {"image": "web:1"}, A)
    assert news.replaced(ready, synced_at(ready, {"image": "web:2"}, B)) is None  # A's rollout was decided
    failed = {**ready, **status(commit=A, ready=("False", "Degraded", "x"), health="Degraded")}
    assert news.replaced(failed, synced_at(failed, {"image": "web:2"}, B)) is None
    assert news.replaced(None, ready) is None and news.replaced({}, ready) is None
