"""The task gate (``agent.engine.taskgate``), pure: each task's state from its live Job and its
recorded run, what is created, run again, kept and held, ``status.tasks[]`` and the verdict."""

from __future__ import annotations

import pytest

from agent.api.labels import TASK_LABEL
from agent.engine import taskgate
from agent.engine.taskgate import CREATE, WAITING
from agent.kinds import job

SPEC = {"image": "shop:2", "port": 80, "tasks": {"migrate": {"args": ["migrate"]},
                                                 "warm": {"args": ["warm"], "when": "AfterRollout"}}}
DIGEST = {t: job.task_digest("shop", SPEC, t) for t in SPEC["tasks"]}
NAME = {t: job.job_name("shop", t, DIGEST[t]) for t in SPEC["tasks"]}
C1, C2 = "1" * 40, "2" * 40


def live(task: str, phase: str | None = None, name: str | None = None, created: str = "2026-12-06T10:00:00Z") -> dict:
    """A live Job of ``task`` (named ``name``, default its current one) in ``phase``."""
    conditions = {"Succeeded": [{"type": "Complete", "status": "True"}],
                  "Failed": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                              "lastTransitionTime": "2026-12-06T10:05:00Z"}]}.get(phase or "", [])
    status = {"conditions": conditions, **({"ready": 1} if phase == "Running" else {})}
    return {"metadata": {"name": name or NAME[task], "labels": {TASK_LABEL: task}, "creationTimestamp": created},
            "status": status}


def recorded(task: str, phase: str, commit: str = C1, digest: str | None = None) -> dict:
    return {"name": task, "digest": digest or DIGEST[task], "job": NAME[task], "phase": phase, "commit": commit}


def decide(jobs=(), entries=(), commit=C1, asked=False, rollout_done=False, spec=SPEC, installed=True):
    return taskgate.decide("shop", spec, list(jobs), list(entries), commit, asked=asked, rollout_done=rollout_done,
                           installed=installed)


def states(gate) -> dict[str, str]:
    return {r.task: r.state for r in gate.runs}


def test_a_first_pass_creates_the_before_rollout_job_and_holds():
    gate = decide()
    assert states(gate) == {"migrate": CREATE, "warm": WAITING}
    assert gate.create == {NAME["migrate"]} and gate.holding and gate.rerun == () and gate.keep == frozenset()
    assert [r.commit for r in gate.runs] == [C1, C1]


@pytest.mark.parametrize("phase, state, holding", [
    (None, job.RUNNING, True), ("Running", job.RUNNING, True), ("Succeeded", job.SUCCEEDED, False),
    ("Failed", job.FAILED, True)])
def test_a_live_job_gives_the_state(phase, state, holding):
    gate = decide([live("migrate", phase)], [recorded("migrate", "Pending")])
    assert states(gate)["migrate"] == state and gate.holding is holding and gate.create == frozenset()
    assert gate.keep == {NAME["migrate"]}


def test_a_succeeded_run_recorded_is_done_without_its_job():
    gate = decide([], [recorded("migrate", "Succeeded", commit=C2)], commit=C1)
    assert states(gate)["migrate"] == job.SUCCEEDED and not gate.holding
    assert gate.runs[0].commit == C2  # the run's own commit, not the pass's


def test_a_recorded_run_of_another_digest_does_not_count():
    gate = decide([], [recorded("migrate", "Succeeded", digest="0" * 16)])
    assert states(gate)["migrate"] == CREATE and gate.runs[0].recorded is None


def test_a_failed_run_is_run_again_on_a_request_or_a_new_commit_only():
    failed = live("migrate", "Failed")
    assert states(decide([failed], [recorded("migrate", "Pending", C1)], commit=C1))["migrate"] == job.FAILED
    for gate in (decide([failed], [recorded("migrate", "Failed", C1)], commit=C1, asked=True),
                 decide([failed], [recorded("migrate", "Failed", C1)], commit=C2)):
        assert states(gate)["migrate"] == CREATE and gate.rerun == (failed,) and gate.holding
    gone = decide([], [recorded("migrate", "Failed", C1)], commit=C1)  # its Job deleted: still failed
    assert states(gone)["migrate"] == job.FAILED and gone.create == frozenset()
    assert states(decide([], [recorded("migrate", "Failed", C1)], commit=C2))["migrate"] == CREATE
    assert decide([], [recorded("migrate", "Failed", C1)], commit=C2).rerun == ()
    # no commit known (a hand-applied Application, or a run never recorded): only a request runs it again
    assert states(decide([failed], [recorded("migrate", "Failed", C1)], commit=None))["migrate"] == job.FAILED
    assert states(decide([failed], [], commit=C2))["migrate"] == job.FAILED


def test_a_run_again_is_started_for_the_passs_commit():
    gate = decide([live("migrate", "Failed")], [recorded("migrate", "Failed", C1)], commit=C2)
    assert gate.runs[0].commit == C2


def test_after_rollout_waits_for_the_gate_and_the_rollout():
    done = [live("migrate", "Succeeded")]
    assert states(decide(done, rollout_done=False))["warm"] == WAITING
    assert states(decide([live("migrate")], rollout_done=True))["warm"] == WAITING  # migrate still runs
    gate = decide(done, rollout_done=True)
    assert states(gate)["warm"] == CREATE and gate.create == {NAME["warm"]} and not gate.holding
    # once created or done, it no longer waits for anything
    assert states(decide(done + [live("warm")], rollout_done=False))["warm"] == job.RUNNING
    assert states(decide(done, [recorded("warm", "Succeeded")], rollout_done=False))["warm"] == job.SUCCEEDED


def test_three_jobs_are_kept_per_task_the_current_and_the_newest():
    old = [live("migrate", "Succeeded", name=f"shop-migrate-0000000{i}", created=f"2026-12-0{i}T00:00:00Z")
           for i in range(1, 5)]
    other = live("gone", "Succeeded", name="shop-gone-00000000")
    gate = decide(old + [other, live("migrate")])
    assert gate.keep == {NAME["migrate"], "shop-migrate-00000004", "shop-migrate-00000003"}
    gate = decide(old)  # the current one not created yet: the newest two others
    assert gate.keep == {"shop-migrate-00000004", "shop-migrate-00000003"}
    same_time = [live("migrate", "Succeeded", name=n, created="2026-12-01T00:00:00Z") for n in ("shop-migrate-a",
                                                                                                "shop-migrate-b",
                                                                                                "shop-migrate-c")]
    assert decide(same_time).keep == {"shop-migrate-c", "shop-migrate-b"}  # ties by name, newest last


def test_entries_from_the_live_job_else_the_record_else_pending():
    gate = decide([live("migrate", "Running")], [recorded("migrate", "Pending")])
    [migrate, warm] = taskgate.entries(gate, {NAME["migrate"]: live("migrate", "Running")})
    assert (migrate["phase"], migrate["job"], migrate["commit"]) == ("Running", NAME["migrate"], C1)
    assert (warm["phase"], warm["message"]) == ("Pending", f"Job {NAME['warm']} waits for the rollout to finish")
    gate = decide([], [recorded("migrate", "Succeeded", C2)])
    assert taskgate.entries(gate, {})[0] == recorded("migrate", "Succeeded", C2)
    created = taskgate.entries(decide(), {})[0]
    assert (created["phase"], created["message"]) == ("Pending", f"Job {NAME['migrate']} is not created yet")
    assert "commit" not in taskgate.entries(decide(commit=None), {})[0]


def test_the_verdict_names_the_failed_task_first_then_the_running_one():
    gate = decide([live("migrate", "Failed")], [recorded("migrate", "Pending")])
    verdict = taskgate.verdict(gate, taskgate.entries(gate, {NAME["migrate"]: live("migrate", "Failed")}))
    assert verdict.reason == "TaskFailed" and verdict.health.status == "Degraded"
    assert verdict.message.startswith(f"task migrate failed (Job {NAME['migrate']} failed: BackoffLimitExceeded")
    assert "the old version keeps serving; a new commit or a sync-now request" in verdict.message
    first = decide([live("migrate", "Failed")], [recorded("migrate", "Pending")], installed=False)
    message = taskgate.verdict(first, taskgate.entries(first, {NAME["migrate"]: live("migrate", "Failed")})).message
    assert "); nothing else is created; a new commit" in message
    gate = decide()
    verdict = taskgate.verdict(gate, taskgate.entries(gate, {}))
    assert (verdict.reason, verdict.health.status, verdict.message) == (
        "TaskRunning", "Progressing", f"waiting for task migrate (Job {NAME['migrate']}) to complete before the rollout")
    done = [live("migrate", "Succeeded")]
    gate = decide(done)
    assert taskgate.verdict(gate, taskgate.entries(gate, {NAME["migrate"]: done[0]})).message == \
        f"task warm (Job {NAME['warm']}) waits for the rollout to finish"
    gate = decide(done + [live("warm")], rollout_done=True)
    jobs = {NAME["migrate"]: done[0], NAME["warm"]: live("warm")}
    assert taskgate.verdict(gate, taskgate.entries(gate, jobs)).message == \
        f"waiting for task warm (Job {NAME['warm']}) to complete after the rollout"
    failed_after = decide(done + [live("warm", "Failed")], rollout_done=True)
    jobs[NAME["warm"]] = live("warm", "Failed")
    message = taskgate.verdict(failed_after, taskgate.entries(failed_after, jobs)).message
    assert message.startswith("task warm failed") and "old version" not in message
    both = {NAME["migrate"]: done[0], NAME["warm"]: live("warm", "Succeeded")}
    gate = decide(list(both.values()))
    assert taskgate.verdict(gate, taskgate.entries(gate, both)) is None


def test_no_tasks_no_gate():
    gate = decide(spec={"image": "shop:2"})
    assert gate == taskgate.Gate(installed=True) and taskgate.verdict(gate, []) is None


def test_a_new_digest_waits_for_the_tasks_unfinished_earlier_run():
    earlier = live("migrate", "Running", name="shop-migrate-00000001")
    gate = decide([earlier])
    run = gate.runs[0]
    assert (run.state, run.after) == (taskgate.PREVIOUS, "shop-migrate-00000001")
    assert gate.create == frozenset() and gate.holding and "shop-migrate-00000001" in gate.keep
    [entry, _] = taskgate.entries(gate, {})
    assert entry["message"] == f"Job {NAME['migrate']} waits for Job shop-migrate-00000001 (an earlier run of the task) " \
                               "to finish" and "commit" not in entry
    assert taskgate.verdict(gate, taskgate.entries(gate, {})).message == (
        f"task migrate (Job {NAME['migrate']}) waits for Job shop-migrate-00000001, an earlier run of it, to finish "
        "before the rollout")
    finished = live("migrate", "Failed", name="shop-migrate-00000001")
    assert states(decide([finished]))["migrate"] == CREATE  # a finished one, failed or not, does not hold it


def test_an_unfinished_job_is_never_pruned_as_history():
    old = [live("migrate", "Running" if i == 1 else "Succeeded", name=f"shop-migrate-0000000{i}",
                created=f"2026-12-0{i}T00:00:00Z") for i in range(1, 5)]
    assert decide(old + [live("migrate")]).keep == {NAME["migrate"], "shop-migrate-00000004", "shop-migrate-00000003",
                                                   "shop-migrate-00000001"}


def test_a_run_whose_job_was_deleted_before_it_finished_failed():
    gate = decide([], [recorded("migrate", "Running", C1)], commit=C1)
    assert states(gate)["migrate"] == job.FAILED and gate.create == frozenset() and gate.holding
    entry = taskgate.entries(gate, {})[0]
    assert (entry["phase"], entry["message"]) == ("Failed", f"Job {NAME['migrate']} {taskgate.DELETED}")
    assert taskgate.verdict(gate, taskgate.entries(gate, {})).reason == "TaskFailed"
    assert states(decide([], [recorded("migrate", "Pending", C1)], commit=C1, asked=True))["migrate"] == CREATE
    # an entry never started (no commit: AfterRollout waiting, an earlier run) is no run at all
    waiting = {**recorded("warm", "Pending")}
    waiting.pop("commit")
    done = [live("migrate", "Succeeded")]
    assert states(decide(done, [waiting], rollout_done=True))["warm"] == CREATE


def test_the_oldest_unfinished_earlier_run_is_the_one_waited_for_and_order_is_by_creation():
    newer = live("migrate", "Running", name="shop-migrate-aaaaaaaa", created="2026-12-06T10:00:00Z")
    older = live("migrate", None, name="shop-migrate-zzzzzzzz", created="2026-12-05T10:00:00Z")
    assert decide([newer, older]).runs[0].after == "shop-migrate-zzzzzzzz"
    assert decide([older, newer]).runs[0].after == "shop-migrate-zzzzzzzz"
    untimed = {**older, "metadata": {k: v for k, v in older["metadata"].items() if k != "creationTimestamp"}}
    assert decide([newer, untimed]).runs[0].after == "shop-migrate-zzzzzzzz"  # no time: the oldest
    # the current run itself running never waits for the earlier ones
    assert states(decide([live("migrate", "Running"), older]))["migrate"] == job.RUNNING


def test_history_is_kept_by_creation_time_not_by_name():
    by_time = [live("migrate", "Succeeded", name=f"shop-migrate-{n}", created=f"2026-12-0{i}T00:00:00Z")
               for i, n in enumerate(("zzzzzzzz", "yyyyyyyy", "bbbbbbbb", "aaaaaaaa"), start=1)]
    assert decide(by_time).keep == {"shop-migrate-aaaaaaaa", "shop-migrate-bbbbbbbb"}
    untimed = [{**j, "metadata": {k: v for k, v in j["metadata"].items() if k != "creationTimestamp"}}
               for j in by_time[:2]]
    assert decide(untimed + by_time[2:]).keep == {"shop-migrate-aaaaaaaa", "shop-migrate-bbbbbbbb"}


def test_entries_name_their_task_and_no_commit_when_none_is_known():
    gate = decide([live("migrate", "Running")], commit=None)
    [migrate, warm] = taskgate.entries(gate, {NAME["migrate"]: live("migrate", "Running")})
    assert "commit" not in migrate and (migrate["name"], warm["name"]) == ("migrate", "warm")
    earlier = live("migrate", "Running", name="shop-migrate-00000001")
    assert [e["name"] for e in taskgate.entries(decide([earlier]), {})] == ["migrate", "warm"]


def test_an_after_rollout_run_waiting_for_its_earlier_run_says_no_rollout():
    done = live("migrate", "Succeeded")
    earlier = live("warm", "Running", name="shop-warm-00000001")
    gate = decide([done, earlier], rollout_done=True)
    assert states(gate)["warm"] == taskgate.PREVIOUS
    message = taskgate.verdict(gate, taskgate.entries(gate, {NAME["migrate"]: done})).message
    assert message == f"task warm (Job {NAME['warm']}) waits for Job shop-warm-00000001, an earlier run of it, to finish"
