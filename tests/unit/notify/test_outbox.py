"""outbox and notifier against real HTTP servers on loopback: retries, Retry-After, drops,
bounded waits, signatures, commit statuses, and no secret in any line."""

import time

import pytest

from agent.engine.news import Notice
from agent.engine.report import Report
from agent.notify import http, outbox
from agent.notify.notifier import Notifier, Settings
from tests.notify_servers import GitHost, Receiver

SHA = "b" * 40
SECRET = b"signing-key-456"


def notice(name="web", reason="Deployed", severity="info"):
    return Notice("ns", name, reason, severity, f"{reason} {name}", SHA, None, "a.yaml", "uid-1")


class Events:
    def __init__(self):
        self.sent = []

    def event(self, obj, type_, reason, message):
        self.sent.append((obj["metadata"]["namespace"], obj["metadata"]["name"], type_, reason, message))


@pytest.fixture
def receiver():
    r = Receiver(SECRET)
    yield r
    r.stop()


def value(counter, destination):
    return counter.labels(destination=destination)._value.get()


def report_of(*notices, readiness=None):
    r = Report(commit=SHA)
    r.notices = list(notices)
    r.readiness = readiness or {}
    return r


def test_signed_notices_arrive_and_the_receiver_refuses_a_replay(receiver):
    n = Notifier(Settings(url=receiver.hook_url, secret=SECRET, timeout=5, source="src"))
    n.finished(report_of(notice("a"), notice("b")))
    assert n.drain() == []
    assert [d["application"]["name"] for d in receiver.notifications()] == ["a", "b"]
    method, path, headers, body = receiver.requests[0]
    assert receiver.check(headers["x-gitops-agent-signature"], body) == "replayed"
    assert receiver.check(headers["x-gitops-agent-signature"], body, now=time.time() + 301) == "too old"
    assert value(n.counters.sent, "webhook") == 2


def test_batch_filters_and_severity(receiver):
    n = Notifier(Settings(url=receiver.hook_url, secret=SECRET, batch=True, severity="error",
                          on=frozenset({"Degraded", "Ready"})))
    n.finished(report_of(notice("a"), notice("b", "Degraded", "error"), notice("c", "Stalled", "error")))
    n.drain()
    assert len(receiver.accepted) == 1
    assert [(d["application"]["name"], d["reason"]) for d in receiver.notifications()] == [("b", "Degraded")]


def test_retry_after_is_honoured(receiver):
    receiver.mode, receiver.failures = "retry", 1
    n = Notifier(Settings(url=receiver.hook_url, secret=SECRET, timeout=5))
    n.finished(report_of(notice()))
    assert n.drain() == []
    assert receiver.times[1] - receiver.times[0] >= 0.9  # a lower bound: a loaded machine only adds to it
    assert len(receiver.notifications()) == 1
    assert (value(n.counters.failed, "webhook"), value(n.counters.sent, "webhook")) == (1, 1)


def test_a_receiver_that_is_down_is_retried_then_dropped_with_one_line_and_an_event(receiver, caplog):
    receiver.mode = "down"
    events = Events()
    n = Notifier(Settings(url=receiver.hook_url, secret=SECRET, timeout=2.5), kube=events)
    n.finished(report_of(notice()))
    dropped = n.drain()
    # the message's own time ran out, not drain's: the thread tried at 0 s and 1 s, and gave up
    # since the next try (2 s later) would end past 2.5 s; load only makes the tries later
    assert dropped == ["dropped 1 notification (Deployed of ns/web) to webhook: HTTP 503 (Service Unavailable)"]
    assert len(receiver.requests) == 2
    assert events.sent == [("ns", "web", "Warning", "NotificationDropped", dropped[0])]
    assert value(n.counters.dropped, "webhook") == 1
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == dropped


def test_a_hanging_receiver_costs_at_most_the_timeout(receiver, caplog):
    receiver.mode = "hang"
    n = Notifier(Settings(url=receiver.hook_url, timeout=1))
    n.finished(report_of(*(notice(f"a{i}") for i in range(5))))
    dropped = n.drain()
    assert len(dropped) == 5
    # drain gave up on the messages at its own 1 s: each in turn would cost 1 s of its own; the
    # thread had time for at most two of them (one taken before drain started), however loaded
    assert sum(line.endswith("not sent within --notify-timeout (1s)") for line in dropped) >= 3, dropped
    assert receiver.path not in caplog.text and "s3cr3t" not in " ".join(dropped)


def test_nothing_listening(caplog):
    n = Notifier(Settings(url="http://127.0.0.1:9/secret-path-token", timeout=0.5))
    n.finished(report_of(notice()))
    [line] = n.drain()
    assert line.startswith("dropped 1 notification (Deployed of ns/web) to webhook: ")
    assert "secret-path-token" not in caplog.text + line


def test_a_refusal_is_not_retried(receiver):
    n = Notifier(Settings(url=receiver.hook_url, secret=b"wrong", timeout=5))
    n.finished(report_of(notice()))
    [line] = n.drain()
    assert line.endswith("refused: HTTP 401 (Unauthorized)")
    assert len(receiver.requests) == 1


def test_a_message_failing_as_drain_gives_up_is_dropped_once():
    """The thread drops a message that failed while ``drain`` stops the outbox: ``drain`` must
    not drop it again (two warning lines, two Events, the counter +2)."""
    import threading

    dropped, dropping, release = [], threading.Event(), threading.Event()

    def on_drop(message, why):
        dropped.append(why)
        if threading.current_thread().name == "notify":
            dropping.set()
            release.wait(30)  # the thread is dropping it while drain runs

    def send(timeout):
        raise http.Failed("no answer within 3.0s", transient=False)

    counters = outbox.Counters()
    box = outbox.Outbox(1, counters, on_drop)
    box.put(outbox.Message("webhook", "x", send))
    assert dropping.wait(30)  # the thread is in on_drop however late a loaded machine runs it
    assert box.drain(0.3) == 0
    release.set()
    box._thread.join(30)
    assert dropped == ["no answer within 3.0s"]
    assert value(counters.dropped, "webhook") == 1


def test_a_full_queue_drops_at_once():
    dropped = []
    box = outbox.Outbox(1, outbox.Counters(), lambda m, why: dropped.append(why), capacity=1)
    box._stop.set()  # nothing is taken from the queue
    box.put(outbox.Message("webhook", "x", lambda t: None))
    assert dropped == ["the agent is stopping"]


def test_wait_seconds_prefers_retry_after():
    import tenacity

    state = tenacity.RetryCallState(None, None, (), {})
    state.attempt_number = 1
    state.set_exception((http.Failed, http.Failed("x", transient=True, retry_after=7), None))
    assert outbox.wait_seconds(state) == 7
    state.set_exception((http.Failed, http.Failed("x", transient=True), None))
    assert outbox.wait_seconds(state) == 1


@pytest.mark.parametrize("after", [0, 0.2])
def test_a_short_retry_after_never_waits_less_than_the_backoff(after):
    """``Retry-After: 0`` (or a date in the past) must not make hundreds of requests a second."""
    import tenacity

    state = tenacity.RetryCallState(None, None, (), {})
    state.set_exception((http.Failed, http.Failed("x", transient=True, retry_after=after), None))
    for attempt, least in ((1, 1), (2, 2), (3, 4), (6, 4)):
        state.attempt_number = attempt
        assert outbox.wait_seconds(state) == least


def test_a_receiver_told_retry_after_0_is_not_hammered(receiver):
    receiver.mode, receiver.failures, receiver.retry_after = "retry", 1000, "0"
    n = Notifier(Settings(url=receiver.hook_url, secret=SECRET, timeout=2.5))
    n.finished(report_of(notice()))
    assert len(n.drain()) == 1
    assert len(receiver.requests) <= 3  # at 0 s, 1 s, (3 s is past the timeout)


def test_the_documented_receiver_accepts_a_retry(receiver):
    """Each retry is signed again with a new ``t``: a receiver that saw (and remembered) the
    first signature but failed to answer in time still takes the retry."""
    receiver.mode, receiver.failures = "flaky", 1  # checks the signature, then answers 503
    n = Notifier(Settings(url=receiver.hook_url, secret=SECRET, timeout=5))
    n.finished(report_of(notice()))
    assert n.drain() == []
    assert receiver.refused == [] and len(receiver.requests) == 2
    first, second = (r[2]["x-gitops-agent-signature"] for r in receiver.requests)
    assert first.split(",")[0] != second.split(",")[0]
    assert [d["application"]["name"] for d in receiver.notifications()] == ["web"]


def test_retry_after_header_values():
    assert http.retry_after("3") == 3
    assert http.retry_after(None) is None
    assert http.retry_after("soon") is None
    assert http.retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470) == 10
    assert http.retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412490) == 0


@pytest.mark.parametrize("kind", ["github", "gitlab", "gitea"])
def test_commit_status_pending_then_success_once_each(kind):
    host = GitHost(kind)
    try:
        settings = Settings(commit_status=kind, token=host.token, api_url=host.api_url, repository=host.repository,
                            context="gitops-agent/src", status_page_url="https://status.example.com/", timeout=5)
        n = Notifier(settings)
        n.started(SHA)
        n.finished(report_of(readiness={"ns/a": ("False", "Progressing")}))
        n.drain()
        n = Notifier(settings)  # a restart: the host's statuses are the record
        n.started(SHA)
        n.finished(report_of(readiness={"ns/a": ("True", "Healthy")}))
        n.finished(report_of(readiness={"ns/a": ("True", "Healthy")}))
        n.drain()
        pending = "running" if kind == "gitlab" else "pending"
        assert host.posted(SHA) == [(pending, "applying this commit; waiting for its Applications to be ready"),
                                    ("success", "1 Application synced and ready")]
        name = "name" if kind == "gitlab" else "context"
        assert {s[name] for s in host.statuses[SHA]} == {"gitops-agent/src"}
        assert host.statuses[SHA][1]["target_url"] == "https://status.example.com/"
    finally:
        host.stop()


def test_github_over_the_limit_is_dropped_with_its_reason():
    host = GitHost("github", limit=0)
    try:
        n = Notifier(Settings(commit_status="github", token=host.token, api_url=host.api_url,
                              repository=host.repository, timeout=5))
        n.finished(report_of(readiness={"ns/a": ("True", "Healthy")}))
        assert n.drain() == ["dropped commit status success for bbbbbbbbbbbb to github: refused: HTTP 422 "
                             "(Unprocessable Entity)"]
    finally:
        host.stop()


def test_a_wrong_token_never_shows(caplog):
    host = GitHost("gitea")
    try:
        n = Notifier(Settings(commit_status="gitea", token="wrong-token-789", api_url=host.api_url,
                              repository=host.repository, timeout=5))
        n.finished(report_of(readiness={"ns/a": ("True", "Healthy")}))
        [line] = n.drain()
        assert line.endswith("refused: HTTP 401 (Unauthorized)") and "wrong-token-789" not in caplog.text
    finally:
        host.stop()


def test_user_and_password_in_the_url_are_sent_as_basic_auth_and_never_shown(receiver, caplog):
    import base64

    url = receiver.hook_url.replace("http://", "http://hook%40user:pa%3Ass@")
    n = Notifier(Settings(url=url, secret=SECRET, timeout=5))
    n.finished(report_of(notice()))
    assert n.drain() == []
    [(method, path, headers, body)] = receiver.requests
    assert path == receiver.path and headers["authorization"] == "Basic " + base64.b64encode(b"hook@user:pa:ss").decode()
    assert "pa%3Ass" not in caplog.text


def test_an_invalid_url_is_not_retried():
    n = Notifier(Settings(url="http://127.0.0.1:8080/a b", timeout=5))
    n.finished(report_of(notice()))
    [line] = n.drain()
    assert "the URL is not valid" in line
    assert value(n.counters.failed, "webhook") == 1  # one try: each retried failure counts once more


def test_a_dropped_commit_status_is_posted_by_a_later_pass_once():
    """``pending`` posted, then the host answers 503 until the ``success`` is dropped: the next
    pass with the same verdict posts it (it was never posted), once. A refused one (HTTP 4xx)
    is not queued again: retrying cannot help."""
    pending = ("pending", "applying this commit; waiting for its Applications to be ready")

    def until(what, seconds=10):
        end = time.monotonic() + seconds
        while not what() and time.monotonic() < end:
            time.sleep(0.05)

    host = GitHost("github")
    try:
        events = Events()
        # 2.9 s: tries at 0 s and 1 s while the host is down (the next would end past 2.9 s), and
        # time to spare for the six posts of the passes after the outage, however loaded the machine
        n = Notifier(Settings(commit_status="github", token=host.token, api_url=host.api_url,
                              repository=host.repository, timeout=2.9), kube=events)
        n.started(SHA)
        until(lambda: host.posted(SHA) == [pending])
        host.mode = "down"
        ready = report_of(readiness={"ns/a": ("True", "Healthy")})
        n.finished(ready)
        until(lambda: n.dropped)
        assert n.dropped == ["dropped commit status success for bbbbbbbbbbbb to github: HTTP 503 (Service Unavailable)"]
        host.mode = "ok"
        for _ in range(3):  # the passes after the outage
            n.started(SHA)
            n.finished(ready)
        assert n.drain() == n.dropped[:1]
        assert host.posted(SHA) == [pending, ("success", "1 Application synced and ready")]
        assert events.sent == [("ns", "a", "Warning", "NotificationDropped", n.dropped[0])]
    finally:
        host.stop()

    host = GitHost("github", limit=0)
    try:
        n = Notifier(Settings(commit_status="github", token=host.token, api_url=host.api_url,
                              repository=host.repository, timeout=5))
        n.finished(ready)
        until(lambda: n.dropped)
        n.finished(ready)
        assert len(n.drain()) == 1
        assert [m for m, *_ in host.requests].count("POST") == 1
    finally:
        host.stop()


def test_a_dropped_pending_status_is_a_warning_event_on_the_first_application():
    """As every other dropped message: one line, one Warning Event on the Application."""
    from types import SimpleNamespace

    host = GitHost("gitlab")
    host.mode = "down"
    try:
        events = Events()
        # 0.9 s: one try, then the next (1 s later) would end past it; drain's own 0.9 s is the
        # slack for the one request on a loaded machine
        n = Notifier(Settings(commit_status="gitlab", token=host.token, api_url=host.api_url,
                              repository=host.repository, timeout=0.9), kube=events)
        n.started(SHA, [SimpleNamespace(namespace="ns", name="a"), SimpleNamespace(namespace="ns", name="b")])
        [line] = n.drain()
        assert line == "dropped commit status pending for bbbbbbbbbbbb to gitlab: HTTP 503 (Service Unavailable)"
        assert events.sent == [("ns", "a", "Warning", "NotificationDropped", line)]
    finally:
        host.stop()


def test_a_drop_about_no_application_is_a_warning_event_on_the_agents_pod():
    """A commit status of a pass with no Application: the Event goes to the agent's own Pod;
    outside a Pod (no ``agent_pod``) there is none, the line and the counter only."""
    host = GitHost("github", limit=0)
    try:
        for pod in (("agents", "gitops-agent-7c9", "uid-9"), None):
            events = Events()
            n = Notifier(Settings(commit_status="github", token=host.token, api_url=host.api_url,
                                  repository=host.repository, timeout=5, agent_pod=pod), kube=events)
            n.started(SHA, [])
            [line] = n.drain()
            assert line.endswith("refused: HTTP 422 (Unprocessable Entity)")
            want = [("agents", "gitops-agent-7c9", "Warning", "NotificationDropped", line)] if pod else []
            assert events.sent == want
            assert value(n.counters.dropped, "github") == 1
    finally:
        host.stop()


def attributed_report(commit, readiness, attributed, notices=(), health=None):
    r = Report(commit=commit)
    r.readiness, r.attributed, r.notices, r.health = readiness, attributed, list(notices), health or {}
    return r


def test_a_rollout_that_fails_after_a_later_commit_fails_its_own_commit_and_none_stays_pending():
    """Issue 45 item 3: the bad commit's pending becomes failure when a pass at an unrelated later
    commit sees its rollout fail; the later commit gets its own verdict; a commit superseded before
    its rollout was decided gets a final state too, after a restart as well."""
    bad, later, fix, fix2 = "1" * 40, "2" * 40, "3" * 40, "4" * 40
    host = GitHost("github")
    try:
        settings = Settings(commit_status="github", token=host.token, api_url=host.api_url,
                            repository=host.repository, timeout=5)
        n = Notifier(settings)
        n.started(bad)
        n.finished(attributed_report(bad, {"ns/web": ("False", "Progressing")}, {"ns/web": bad}))
        n.started(later)
        degraded = {"ns/web": {"status": "Degraded", "message": "Deployment: ImagePullBackOff: x"}}
        n.finished(attributed_report(later, {"ns/web": ("False", "Degraded")}, {"ns/web": bad}, health=degraded))
        n.drain()
        assert host.posted(bad) == [PENDING, ("failure", "1 of 1 Application failed: ns/web: Deployment: "
                                                         "ImagePullBackOff: x")]
        assert host.posted(later) == [PENDING, ("success", "no Application changed at this commit (1 synced; a "
                                                           "rollout's status is on the commit that changed it)")]
        n = Notifier(settings)  # drain ends a notifier (sync --once): the next part is one run's passes
        n.started(fix)
        n.finished(attributed_report(fix, {"ns/web": ("False", "Progressing")}, {"ns/web": fix}))
        n.started(fix2)  # pushed before fix's rollout was decided
        n.finished(attributed_report(fix2, {"ns/web": ("True", "Healthy")}, {"ns/web": fix2}))
        n.drain()
        assert host.posted(fix) == [PENDING, ("success", "superseded by 444444444444 before its rollout was decided")]
        assert host.posted(fix2) == [PENDING, ("success", "1 Application synced and ready")]
        assert host.posted(bad)[-1][0] == "failure"  # a final state is never replaced by "superseded"

        n = Notifier(settings)
        n.started("5" * 40)
        n.finished(attributed_report("5" * 40, {"ns/web": ("False", "Progressing")}, {"ns/web": "5" * 40}))
        n.drain()
        n = Notifier(settings)  # a restart: the pending is found through the content that replaced it
        r = attributed_report("6" * 40, {"ns/web": ("True", "Healthy")}, {"ns/web": "6" * 40})
        r.replaced = {"5" * 40}  # its content replaced before its rollout was decided (news.replaced)
        n.finished(r)
        n.drain()
        assert host.posted("5" * 40) == [PENDING, ("success", "superseded by 666666666666 before its rollout "
                                                                    "was decided")]
    finally:
        host.stop()


PENDING = ("pending", "applying this commit; waiting for its Applications to be ready")
