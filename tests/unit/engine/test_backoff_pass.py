"""Backoff in a pass and in the runner: which live Applications a run pass skips (and reports),
and the retry pass the runner schedules before the interval pass."""

import datetime
from types import SimpleNamespace

import pytest

from agent.engine import appplan, backoff, livestate, sync
from agent.engine.passvalues import LiveState
from agent.engine.report import SKIPPED, Change, Report
from agent.server.endpoints import Health, Metrics
from agent.server.runner import Runner

UTC = datetime.timezone.utc
COMMIT = "a" * 40
FUTURE = (datetime.datetime.now(UTC) + datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
LATER = (datetime.datetime.now(UTC) + datetime.timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
PAST = "2020-01-01T00:00:00Z"
OURS = [{"manager": "gitops-agent", "operation": "Apply"}]


def live(name, next_retry=FUTURE, failures=2, commit=COMMIT, source="src", managed=True, generation=1):
    labels = {"app.kubernetes.io/managed-by": "gitops-agent", "heumsi.github.io/source": source} if managed else {}
    return {"apiVersion": "heumsi.github.io/v1", "kind": "Application",
            "metadata": {"name": name, "namespace": "ns", "generation": generation, "labels": labels,
                         "managedFields": OURS if managed else []},
            "status": {"observedGeneration": 1, "failures": failures, "nextRetryTime": next_retry,
                       "lastAttemptedCommit": commit}}


def waiting(report, apps, git, retry, former=()):
    """``appplan.waiting`` over ``apps`` as the live state, their facts derived for source ``src``."""
    derive = livestate.deriver(SimpleNamespace(source_id="src", former_source_ids=former))
    return appplan.waiting(report, LiveState(apps, [derive(a) for a in apps], [], [], {}, set()), git, retry)


def test_a_run_pass_skips_and_reports_only_what_is_backing_off():
    report = Report(commit=COMMIT)
    apps = [live("waits"), live("due", next_retry=PAST), live("newer", commit="b" * 40),
            live("other", source="elsewhere"), live("hand", managed=False, commit="b" * 40),
            live("later", next_retry=LATER)]
    git = {"ns/waits": "a.yaml", "ns/due": "a.yaml", "ns/newer": "a.yaml"}
    skipped = waiting(report, apps, git, backoff.Policy(skip=True))
    # "hand" is not from Git: a commit does not reset it; "other" is another source's business
    assert skipped == {"ns/waits": backoff.Waiting(2, FUTURE), "ns/hand": backoff.Waiting(2, FUTURE),
                       "ns/later": backoff.Waiting(2, LATER)}
    assert report.changes == [
        Change("ns/waits", "Application/ns/waits", SKIPPED, f"backing off after 2 failures, next retry at {FUTURE}"),
        Change("ns/hand", "Application/ns/hand", SKIPPED, f"backing off after 2 failures, next retry at {FUTURE}"),
        Change("ns/later", "Application/ns/later", SKIPPED, f"backing off after 2 failures, next retry at {LATER}")]
    assert report.notes == [] and report.errors == [] and report.failing() == []  # not a fresh failure
    assert report.retry_at == backoff.parse_time(FUTURE)
    assert report.backing_off == skipped
    assert report.counts() == {"skipped": 3} and report.skipping() == ["ns/hand", "ns/later", "ns/waits"]
    assert not report.ok  # but never a success: they are still failing
    assert report.summary().splitlines()[-1] == ("sync failed: 0 created, 0 configured, 0 unchanged, 0 pruned, 0 failed, "
                                                 "3 skipped; 3 Applications skipped: ns/hand, ns/later, ns/waits")


def test_an_owned_application_kept_out_of_git_resets_on_a_new_commit():
    report = Report(commit="b" * 40)
    assert waiting(report, [live("kept")], {}, backoff.Policy(skip=True)) == {}


def test_only_an_application_whose_status_counts_failures_is_read_and_a_former_ids_is_not_this_passes():
    report = Report(commit=COMMIT)
    clean = live("clean", failures=0)
    facts = livestate.deriver(SimpleNamespace(source_id="src", former_source_ids=()))(clean)
    assert not facts.failing and facts.this and facts.mine
    # a former id's Application in backoff is left to the pass, as another source id's (its status is not this id's)
    assert waiting(report, [clean, live("old", source="before")], {"ns/clean": "a.yaml", "ns/old": "a.yaml"},
                   backoff.Policy(skip=True), former=("before",)) == {}
    assert waiting(report, [live("old", source="before")], {}, backoff.Policy(skip=True)) == {}


def test_sync_once_skips_nothing():
    report = Report(commit=COMMIT)
    assert waiting(report, [live("waits")], {"ns/waits": "a.yaml"}, backoff.ONE_SHOT) == {}
    assert report.notes == [] and report.retry_at is None and report.backing_off == {}


@pytest.fixture
def runner():
    r = Runner(None, None, interval=600, jitter=0, metrics=Metrics(), health=Health(max_age=60))
    r._scheduler.start(paused=True)
    yield r
    r._scheduler.shutdown(wait=False)


def interval_job(runner, at):
    runner._scheduler.add_job(runner.scheduled_pass, "interval", id="interval", seconds=600, next_run_time=at)


def test_the_runner_schedules_a_retry_before_the_interval_pass(runner):
    now = datetime.datetime.now(UTC)
    interval_job(runner, now + datetime.timedelta(seconds=600))
    runner._schedule_retry(Report(retry_at=now + datetime.timedelta(seconds=5)))
    assert runner._scheduler.get_job("retry").next_run_time == now + datetime.timedelta(seconds=5)
    runner._schedule_retry(Report(retry_at=now + datetime.timedelta(seconds=9)))  # the newest answer wins
    assert runner._scheduler.get_job("retry").next_run_time == now + datetime.timedelta(seconds=9)
    runner._schedule_retry(Report(fetch_failed=True))  # saw nothing: keeps the plan
    assert runner._scheduler.get_job("retry").next_run_time == now + datetime.timedelta(seconds=9)
    runner._schedule_retry(Report(retry_at=now + datetime.timedelta(seconds=900)))  # the interval pass first
    assert runner._scheduler.get_job("retry") is None
    runner._schedule_retry(Report())  # nothing waits: nothing scheduled, no error
    assert runner._scheduler.get_job("retry") is None
    assert runner._scheduler.get_job("interval") is not None


@pytest.mark.parametrize("args, says", [
    (["--min-retry-delay", "0"], "argument --min-retry-delay: '0' is not allowed: must be a number of seconds > 0 "
                                 "and <= 3600"),
    (["--max-retry-delay", "86401"], "argument --max-retry-delay: '86401' is not allowed"),
    (["--min-retry-delay", "10", "--max-retry-delay", "5"],
     " run: error: argument --min-retry-delay: 10 is not allowed: must not be more than "
     "--max-retry-delay 5 (the first retry cannot wait longer than the longest) (see "),  # the program's name varies
])
def test_retry_delay_flags_are_checked_with_one_line(capsys, args, says):
    from agent.cli import main as cli

    assert cli.main(["run", "--repo", "/nowhere", "--kubeconfig", "/nonexistent", *args]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and lines[0].endswith(" run --help)"), lines


def test_retry_delay_flags_reach_the_runner_policy():
    from agent.cli import main as cli

    args = cli.build_parser().parse_args(["run", "--repo", "x", "--min-retry-delay", "2", "--max-retry-delay", "30"])
    assert (args.min_retry_delay, args.max_retry_delay) == (2.0, 30.0)
    args = cli.build_parser().parse_args(["run", "--repo", "x"])
    assert (args.min_retry_delay, args.max_retry_delay) == (5.0, 300.0)


def test_a_pass_that_raises_is_a_counted_logged_failure_and_the_next_pass_runs(monkeypatch, caplog):
    """A bug in a pass used to escape into APScheduler's log: no pass counted, /readyz never 200,
    and nothing said so but a traceback there."""
    calls = []

    def broken(*args, **kwargs):
        calls.append(1)
        raise TypeError("list_in() takes 4 positional arguments but 5 were given")

    monkeypatch.setattr(sync, "run", broken)
    r = Runner(None, None, interval=600, jitter=0, metrics=Metrics(), health=Health(max_age=60))
    r.health.leading = True
    caplog.set_level("INFO", logger="agent.run")
    for _ in range(2):
        report = r.run_pass(offline=False, trigger="interval")
        assert not report.ok and report.errors == [
            "internal error: TypeError: list_in() takes 4 positional arguments but 5 were given; the pass "
            "stopped, nothing further was changed, pruned or recorded"]
    assert len(calls) == 2 and r.last_commit is None
    assert r.metrics.passes.labels(result="failure")._value.get() == 2
    assert r.health.ready()[0]  # a finished pass, if a failed one: the metric and the log say so
    assert any(rec.exc_info and "internal error" in rec.getMessage() for rec in caplog.records)
