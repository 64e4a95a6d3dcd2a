"""backoff: exact delays, the cap, jitter bounds, every reset rule, what a pass skips and records."""

import datetime
import random

import pytest

from agent.engine import backoff

UTC = datetime.timezone.utc
NOW = datetime.datetime(2026, 12, 1, 10, 0, 0, tzinfo=UTC)
COMMIT = "a" * 40


def fixed(value):
    return lambda: value


def app(failures=None, next_retry=None, commit=COMMIT, generation=3, observed=3, token=None, handled=None):
    status = {"observedGeneration": observed, "lastAttemptedCommit": commit}
    if failures is not None:
        status["failures"] = failures
    if next_retry is not None:
        status["nextRetryTime"] = next_retry
    if handled is not None:
        status["lastHandledReconcileAt"] = handled
    if commit is None:
        del status["lastAttemptedCommit"]
    meta = {"name": "web", "namespace": "ns", "generation": generation}
    if token is not None:
        meta["annotations"] = {"heumsi.github.io/reconcile-requested-at": token}
    return {"metadata": meta, "status": status}


def test_the_documented_numbers():
    assert (backoff.BASE_SECONDS, backoff.MAX_SECONDS, backoff.JITTER) == (5.0, 300.0, 0.1)
    assert backoff.ONE_SHOT.skip is False
    assert (backoff.FAILURES, backoff.NEXT_RETRY) == ("failures", "nextRetryTime")


@pytest.mark.parametrize("failures, seconds", [
    (1, 5.0), (2, 10.0), (3, 20.0), (4, 40.0), (5, 80.0), (6, 160.0),
    (7, 300.0),  # 320 capped
    (8, 300.0), (64, 300.0), (65, 300.0), (10_000, 300.0),  # no overflow
])
def test_default_delays_double_from_5_s_up_to_the_5_minute_cap(failures, seconds):
    assert backoff.delay(failures) == seconds


@pytest.mark.parametrize("failures, seconds", [(1, 2.0), (2, 4.0), (3, 7.0), (4, 7.0)])
def test_a_policy_sets_base_and_cap(failures, seconds):
    assert backoff.delay(failures, backoff.Policy(base=2, cap=7)) == seconds


@pytest.mark.parametrize("failures", [0, -1])
def test_no_delay_before_a_failure(failures):
    with pytest.raises(ValueError, match=f"at least 1, not {failures}"):
        backoff.delay(failures)


@pytest.mark.parametrize("draw, seconds", [(0.0, 20.0), (0.5, 19.0), (0.999, 18.002), (1.0, 18.0)])
def test_jitter_takes_off_at_most_a_tenth(draw, seconds):
    assert backoff.jittered(3, backoff.Policy(random=fixed(draw))) == pytest.approx(seconds, abs=1e-9)


def test_jitter_never_exceeds_the_cap_nor_goes_below_its_share():
    policy = backoff.Policy(random=random.Random(7).random)
    for failures in range(1, 40):
        full = backoff.delay(failures, policy)
        value = backoff.jittered(failures, policy)
        assert full * 0.9 < value <= full <= 300.0


def test_jitter_from_a_seeded_source_is_exact():
    draws = random.Random(42)
    expected = [5.0 * (1 - 0.1 * draws.random()), 10.0 * (1 - 0.1 * draws.random())]
    policy = backoff.Policy(random=random.Random(42).random)
    assert [backoff.jittered(1, policy), backoff.jittered(2, policy)] == expected


def test_a_policy_of_zero_jitter_is_exact():
    assert backoff.jittered(2, backoff.Policy(jitter=0.0, random=fixed(0.9))) == 10.0


@pytest.mark.parametrize("moment, text", [
    (datetime.datetime(2026, 12, 1, 10, 0, 5, tzinfo=UTC), "2026-12-01T10:00:05Z"),
    (datetime.datetime(2026, 12, 1, 10, 0, 5, 1, tzinfo=UTC), "2026-12-01T10:00:06Z"),  # rounded up
    (datetime.datetime(2026, 12, 1, 10, 59, 59, 999999, tzinfo=UTC), "2026-12-01T11:00:00Z"),
    (datetime.datetime(2026, 12, 1, 12, 0, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
     "2026-12-01T10:00:00Z"),
])
def test_format_time(moment, text):
    assert backoff.format_time(moment) == text


@pytest.mark.parametrize("text, moment", [
    ("2026-12-01T10:00:05Z", datetime.datetime(2026, 12, 1, 10, 0, 5, tzinfo=UTC)),
    ("2026-12-01T10:00:05z", datetime.datetime(2026, 12, 1, 10, 0, 5, tzinfo=UTC)),
    ("2026-12-01T12:00:05+02:00", datetime.datetime(2026, 12, 1, 10, 0, 5, tzinfo=UTC)),
    ("2026-12-01T10:00:05", None),  # no zone
    ("soon", None), ("", None), (None, None), (5, None),
])
def test_parse_time(text, moment):
    assert backoff.parse_time(text) == moment


@pytest.mark.parametrize("value, count", [(3, 3), (1, 1), (0, 0), (-2, 0), (True, 0), ("3", 0), (None, 0)])
def test_failures_reads_only_positive_integers(value, count):
    assert backoff.failures({"status": {"failures": value}}) == count
    assert backoff.failures({}) == 0


@pytest.mark.parametrize("live, commit, reason", [
    (app(), COMMIT, None),
    (app(), "b" * 40, "new commit"),
    (app(commit=None), COMMIT, "new commit"),  # never attempted from Git
    (app(), None, None),  # not from Git: the commit does not matter
    (app(commit="c" * 40), None, None),
    (app(generation=4), COMMIT, "spec changed"),
    (app(generation=4), "b" * 40, "new commit"),  # the first rule that applies is named
    (app(token="t1"), COMMIT, "sync requested"),
    (app(token="t1", handled="t1"), COMMIT, None),  # that request was handled
    (app(token="t2", handled="t1"), COMMIT, "sync requested"),
    (app(generation=4, token="t1"), COMMIT, "spec changed"),
])
def test_reset_rules(live, commit, reason):
    assert backoff.reset_reason(live, commit) == reason


def test_reset_rule_without_status_or_metadata():
    assert backoff.reset_reason({}, None) is None  # generation None == observedGeneration None
    assert backoff.reset_reason({}, COMMIT) == "new commit"
    assert backoff.reset_reason({"metadata": {"generation": 1}}, None) == "spec changed"


@pytest.mark.parametrize("live, commit, skipped", [
    (app(failures=2, next_retry="2026-12-01T10:00:01Z"), COMMIT, backoff.Waiting(2, "2026-12-01T10:00:01Z")),
    (app(failures=2, next_retry="2026-12-01T10:00:00Z"), COMMIT, None),  # the time has come
    (app(failures=2, next_retry="2026-12-01T09:59:59Z"), COMMIT, None),
    (app(failures=2, next_retry="2026-12-01T10:00:01Z"), "b" * 40, None),  # new commit
    (app(failures=2, next_retry="2026-12-01T10:00:01Z", generation=4), COMMIT, None),  # spec changed
    (app(failures=2, next_retry="2026-12-01T10:00:01Z", token="t"), COMMIT, None),  # sync now
    (app(failures=2, next_retry="2026-12-01T10:00:01Z", token="t", handled="t"), COMMIT,
     backoff.Waiting(2, "2026-12-01T10:00:01Z")),
    (app(failures=2, next_retry="2026-12-01T10:00:01Z"), None, backoff.Waiting(2, "2026-12-01T10:00:01Z")),
    (app(failures=0, next_retry="2026-12-01T10:00:01Z"), COMMIT, None),  # no failures recorded
    (app(failures=None, next_retry="2026-12-01T10:00:01Z"), COMMIT, None),
    (app(failures=2, next_retry=None), COMMIT, None),
    (app(failures=2, next_retry="garbage"), COMMIT, None),
    (app(), COMMIT, None),
])
def test_which_applications_a_run_pass_skips(live, commit, skipped):
    assert backoff.waiting(live, commit, NOW) == skipped


def test_the_report_words():
    assert backoff.Waiting(3, "T").message() == "backing off after 3 failures, next retry at T"
    assert backoff.Waiting(1, "T").message() == "backing off after 1 failure, next retry at T"


@pytest.mark.parametrize("live, commit, count, seconds", [
    (app(), COMMIT, 1, 5),  # first failure
    (app(failures=1, next_retry="x"), COMMIT, 2, 10),
    (app(failures=3, next_retry="x"), COMMIT, 4, 40),
    (app(failures=6, next_retry="x"), COMMIT, 7, 300),  # capped
    (app(failures=3, next_retry="x"), "b" * 40, 1, 5),  # a new commit starts again
    (app(failures=3, next_retry="x", generation=4), COMMIT, 1, 5),  # so does a spec change
    (app(failures=3, next_retry="x", token="t"), COMMIT, 1, 5),  # and a sync-now request
    (app(failures=3, next_retry="x", token="t", handled="t"), COMMIT, 4, 40),
    (app(failures=3, next_retry="x"), None, 4, 40),  # hand-applied: commits do not matter
])
def test_a_failed_attempt_counts_and_schedules_the_retry(live, commit, count, seconds):
    fields = backoff.status_fields(live, commit, True, NOW, backoff.Policy(random=fixed(0.0)))
    assert fields == {"failures": count,
                      "nextRetryTime": backoff.format_time(NOW + datetime.timedelta(seconds=seconds))}


def test_a_failed_attempt_with_jitter_rounds_the_retry_up_to_a_second():
    fields = backoff.status_fields(app(failures=1, next_retry="x"), COMMIT, True, NOW,
                                   backoff.Policy(random=fixed(0.5)))  # 10 s less 5 %: 9.5 s
    assert fields == {"failures": 2, "nextRetryTime": "2026-12-01T10:00:10Z"}
    fields = backoff.status_fields(app(), COMMIT, True, NOW, backoff.Policy(random=fixed(0.999)))  # 4.5005 s
    assert fields == {"failures": 1, "nextRetryTime": "2026-12-01T10:00:05Z"}


def test_a_success_clears_the_state():
    assert backoff.status_fields(app(failures=4, next_retry="2026-12-01T10:00:01Z"), COMMIT, False, NOW) == {}


@pytest.mark.parametrize("current, stored, result", [
    (None, None, None),
    (None, "2026-12-01T10:00:05Z", datetime.datetime(2026, 12, 1, 10, 0, 5, tzinfo=UTC)),
    (NOW, "2026-12-01T10:00:05Z", NOW),
    (NOW, "2026-12-01T09:00:05Z", datetime.datetime(2026, 12, 1, 9, 0, 5, tzinfo=UTC)),
    (NOW, "2026-12-01T10:00:00Z", NOW),
    (NOW, "garbage", NOW),
    (NOW, None, NOW),
])
def test_earliest(current, stored, result):
    assert backoff.earliest(current, stored) == result


@pytest.mark.parametrize("retry_at, next_interval, sooner", [
    (None, NOW, False),
    (None, None, False),
    (NOW, None, True),
    (NOW, NOW + datetime.timedelta(seconds=1), True),
    (NOW, NOW, False),  # the interval pass serves it
    (NOW + datetime.timedelta(seconds=1), NOW, False),
])
def test_a_retry_pass_is_scheduled_only_before_the_interval_pass(retry_at, next_interval, sooner):
    assert backoff.retry_sooner(retry_at, next_interval) is sooner
