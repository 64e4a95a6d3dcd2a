"""Notifications and commit status against the real control plane (issue 32): ``sync --once``
and ``run`` tell each change once, through a signed webhook and a commit status on a stand-in
GitHub, GitLab or Gitea (real HTTP servers on loopback, tests/notify_servers.py); a restart
tells nothing again; a commit touching 1 of 500 Applications sends 1 message; a receiver that
is down or hangs costs a pass at most --notify-timeout; no secret shows anywhere."""

from __future__ import annotations

import time

import pytest

from tests.notify_servers import GitHost, Receiver
from tests.support import app_yaml, wait_for
from tests.test_backoff import allow_services, refuse_services
from tests.test_health import TOO_BIG
from tests.test_run import remote, start_agent  # noqa: F401 (fixtures)

pytestmark = pytest.mark.usefixtures("crd")
SECRET = "webhook-signing-key-5f2"


@pytest.fixture
def receiver():
    r = Receiver(SECRET.encode())
    yield r
    r.stop()


@pytest.fixture
def github(request):
    """The stand-in Git host: GitHub, or the kind a test parametrizes it with (indirect)."""
    host = GitHost(getattr(request, "param", "github"))
    yield host
    host.stop()


@pytest.fixture
def files(tmp_path, receiver, github):
    """The secret files, and the flags that name them."""
    (tmp_path / "url").write_text(receiver.hook_url + "\n")
    (tmp_path / "secret").write_text(SECRET + "\n")
    (tmp_path / "token").write_text(github.token + "\n")
    return ["--notify-url-file", str(tmp_path / "url"), "--notify-secret-file", str(tmp_path / "secret"),
            "--commit-status", github.kind, "--commit-status-token-file", str(tmp_path / "token"),
            "--commit-status-api-url", github.api_url, "--commit-status-repository", github.repository,
            "--commit-status-context", "gitops-agent/test", "--status-page-url", "https://status.example.com/agent"]


def observed(objects, namespace, *names):
    """Wait until each Deployment's controller observed its generation (then it is Healthy)."""
    def done():
        deps = [objects.deployment(namespace, n) for n in names]
        return all(d and d.get("status", {}).get("observedGeneration") == d["metadata"]["generation"] for d in deps)
    wait_for(done, timeout=30, what="the Deployments observed")


PENDING = ("pending", "applying this commit; waiting for its Applications to be ready")


def told(receiver) -> list[tuple[str, str]]:
    return [(n["application"]["name"], n["reason"]) for n in receiver.notifications()]


def no_secret(text: str, receiver, github) -> None:
    for secret in (receiver.path, SECRET, github.token):
        assert secret not in text


def test_sync_once_tells_each_change_once_with_a_commit_status(agent, repo, namespace, receiver, github, files,
                                                               objects):
    repo.write("a.yaml", app_yaml("a", replicas=0))
    repo.write("b.yaml", app_yaml("b", replicas=0))
    first = repo.commit()
    proc = agent.sync(repo.path, "--namespace", namespace, *files)
    assert proc.returncode == 0, proc.stderr
    assert sorted(told(receiver)) == [("a", "Deployed"), ("b", "Deployed")]  # rolling out: not Ready yet
    doc = receiver.notifications()[0]
    assert (doc["commit"], doc["previousCommit"], doc["statusPageUrl"]) == (first, None, "https://status.example.com/agent")
    assert doc["source"] and doc["severity"] == "info" and doc["sourcePath"] in ("a.yaml", "b.yaml")
    assert receiver.refused == []
    pending = ("pending", "applying this commit; waiting for its Applications to be ready")
    assert github.posted(first) == [pending]
    observed(objects, namespace, "a", "b")
    ready = agent.sync(repo.path, "--namespace", namespace, *files)  # the pass that sees them ready
    assert sorted(told(receiver)[2:]) == [("a", "Ready"), ("b", "Ready")]
    assert github.posted(first) == [pending, ("success", "2 Applications synced and ready")]
    assert github.statuses[first][1]["target_url"] == "https://status.example.com/agent"

    versions, events = objects.versions(namespace, ["a", "b"]), len(objects.events(namespace))
    again = agent.sync(repo.path, "--namespace", namespace, *files)  # a re-run (or a second replica's pass)
    assert again.returncode == 0 and len(receiver.notifications()) == 4 and len(github.posted(first)) == 2
    # nothing was written for what it did not send: no status write, no annotation, no Event
    assert objects.versions(namespace, ["a", "b"]) == versions and len(objects.events(namespace)) == events

    repo.remove("b.yaml")
    repo.write("a.yaml", app_yaml("a", replicas=0, image="nginx:1.27"))
    second = repo.commit()
    third = agent.sync(repo.path, "--namespace", namespace, *files)
    assert third.returncode == 0, third.stderr
    assert sorted(told(receiver)[4:]) == [("a", "Deployed"), ("b", "Pruned")]
    deployed = next(n for n in receiver.notifications()[4:] if n["reason"] == "Deployed")
    assert (deployed["commit"], deployed["previousCommit"]) == (second, first)
    assert github.posted(second)[0][0] == "pending"
    for p in (proc, ready, again, third):
        no_secret(p.stdout + p.stderr, receiver, github)
    no_secret(str(objects.app(namespace, "a")) + str(objects.events(namespace)), receiver, github)


@pytest.mark.parametrize("github", ["github", "gitlab", "gitea"], indirect=True)
def test_sync_once_wait_tells_ready_and_posts_success_in_the_same_run(agent, repo, namespace, receiver, github,
                                                                      files, objects):
    """The CI gate: with --wait the run that applies a commit also tells each Application's
    readiness and moves the commit status from pending to success; a re-run tells nothing. On
    GitLab (pending is ``running`` there; with ``--notify-on Ready``: only Ready is told) and
    Gitea without --commit-status-context: the default context ``gitops-agent/<source id>``."""
    repo.write("a.yaml", app_yaml("a"))
    repo.write("b.yaml", app_yaml("b", replicas=2))
    head = repo.commit()
    flags = list(files)
    if github.kind != "github":
        at = flags.index("--commit-status-context")
        del flags[at:at + 2]
    if github.kind == "gitlab":
        flags += ["--notify-on", "Ready"]
    proc = agent.sync(repo.path, "--namespace", namespace, "--wait=60s", *flags)
    assert proc.returncode == 0, proc.stderr
    reasons = ["Ready"] if github.kind == "gitlab" else ["Deployed", "Ready"]
    assert sorted(told(receiver)) == [(n, r) for n in ("a", "b") for r in reasons]
    pending = ("running", PENDING[1]) if github.kind == "gitlab" else PENDING
    assert github.posted(head) == [pending, ("success", "2 Applications synced and ready")]
    source = objects.app(namespace, "a")["metadata"]["labels"]["heumsi.github.io/source"]
    context = "gitops-agent/test" if github.kind == "github" else f"gitops-agent/{source}"
    assert {s["name" if github.kind == "gitlab" else "context"] for s in github.statuses[head]} == {context}
    again = agent.sync(repo.path, "--namespace", namespace, "--wait=60s", *flags)
    assert again.returncode == 0 and len(receiver.notifications()) == len(reasons) * 2
    assert len(github.posted(head)) == 2


def test_a_failure_is_told_once_and_fails_the_commit_status(agent, repo, namespace, receiver, github, files):
    repo.write("a.yaml", app_yaml("a", replicas=0))
    repo.commit()
    assert agent.sync(repo.path, "--namespace", namespace, *files).returncode == 0
    before = len(receiver.notifications())
    repo.write("a.yaml", app_yaml("a", replicas=0, port=70000))  # valid YAML the schema refuses: stalled
    bad = repo.commit()
    for _ in range(2):
        assert agent.sync(repo.path, "--namespace", namespace, *files).returncode == 2
    assert [r for _, r in told(receiver)[before:]] == ["Stalled"]
    assert [n["severity"] for n in receiver.notifications()[before:]] == ["error"]
    state, text = github.posted(bad)[-1]
    assert state == "failure" and len(text) <= 140 and "failed" in text
    assert len(github.posted(bad)) == 2  # pending, failure: never the same twice


def test_a_receiver_that_hangs_costs_sync_at_most_the_timeout(agent, repo, namespace, receiver, github, files,
                                                              objects):
    repo.write("a.yaml", app_yaml("a", replicas=0))
    repo.commit()
    assert agent.sync(repo.path, "--namespace", namespace).returncode == 0
    receiver.mode = github.mode = "hang"
    repo.write("a.yaml", app_yaml("a", replicas=0, image="nginx:1.26"))
    repo.commit()
    # the receivers never answer: without --notify-timeout the sync would never end; with it, it
    # ends (killed at 60 s otherwise, however loaded the machine). That drain gives up at its own
    # timeout, not at each message's, is the unit tests' (tests/unit/notify/test_outbox.py).
    started = time.monotonic()
    proc = agent.sync(repo.path, "--namespace", namespace, *files, "--notify-timeout", "2", timeout=60)
    print(f"{time.monotonic() - started:.1f}s with hanging receivers")
    assert proc.returncode == 0, proc.stderr
    dropped = [line for line in proc.stderr.splitlines() if "dropped" in line]
    # the notification, the pending status (the verdict is pending too) and the first commit's "superseded"
    # (its rollout was not decided when this commit replaced it: its status is read, and replaced if pending)
    assert len(dropped) == 3, proc.stderr
    assert any("to webhook" in line for line in dropped) and any("to github" in line for line in dropped)
    no_secret(proc.stdout + proc.stderr, receiver, github)
    dropped_events = [e for e in objects.events(namespace) if e["reason"] == "NotificationDropped"]
    assert len(dropped_events) == 3 and all(e["message"] in proc.stderr for e in dropped_events)  # the statuses' too
    assert {(e["type"], e["involvedObject"]["kind"], e["involvedObject"]["name"]) for e in dropped_events} == {
        ("Warning", "Application", "a")}


def test_run_tells_once_across_a_restart_and_counts_drops(start_agent, repo, remote, namespace, receiver,  # noqa: F811
                                                          github, files, tmp_path):
    repo.write("a.yaml", app_yaml("a", replicas=0))
    sha = remote.push()
    agent = start_agent(remote.url, "--namespace", namespace, "--interval", "2", *files)
    wait_for(lambda: len(told(receiver)) >= 2 and github.posted(sha)[-1:] == [("success", "1 Application synced and "
                                                                                           "ready")],
             timeout=60, what="Deployed, Ready and the success status")
    wait_for(lambda: agent.metric("gitops_agent_passes_total", result="success") >= 3, timeout=30, what="3 passes")
    assert sorted(told(receiver)) == [("a", "Deployed"), ("a", "Ready")]
    assert agent.metric("gitops_agent_notifications_sent_total", destination="webhook") == 2
    assert agent.stop() == 0
    again = start_agent(remote.url, "--namespace", namespace, "--interval", "2", *files)
    wait_for(lambda: again.metric("gitops_agent_passes_total", result="success") >= 3, timeout=30, what="3 passes")
    assert sorted(told(receiver)) == [("a", "Deployed"), ("a", "Ready")]
    assert len(github.posted(sha)) == 2  # pending and success, each once, across the restart
    assert again.stop() == 0

    receiver.mode = "down"
    repo.write("a.yaml", app_yaml("a", replicas=0, image="nginx:1.26"))
    remote.push()
    third = start_agent(remote.url, "--namespace", namespace, "--interval", "2", *files, "--notify-timeout", "2.5")
    wait_for(lambda: third.metric("gitops_agent_notifications_dropped_total", destination="webhook") >= 1,
             timeout=60, what="a dropped notification")
    assert third.metric("gitops_agent_notifications_failed_total", destination="webhook") >= 2
    assert third.stop() == 0
    for a in (agent, again, third):
        no_secret(a.output() + a.get("/metrics")[1], receiver, github)
    assert "dropped 1 notification (Deployed of" in third.output()


def test_one_of_500_applications_changed_sends_one_message(agent, repo, namespace, receiver, files, objects):
    for i in range(500):
        repo.write(f"apps/app-{i:03}.yaml", app_yaml(f"app-{i:03}", replicas=0))
    repo.commit()
    assert agent.sync(repo.path, "--namespace", namespace, "--concurrency", "16", timeout=600).returncode == 0

    def all_observed():
        items = objects.apps.list_namespaced_deployment(namespace).items
        return len(items) == 500 and all(d.status.observed_generation == d.metadata.generation for d in items)
    wait_for(all_observed, timeout=120, what="500 Deployments observed")
    # the pass that records them Ready (a monorepo's steady state)
    assert agent.sync(repo.path, "--namespace", namespace, "--concurrency", "16", timeout=600).returncode == 0
    repo.write("apps/app-123.yaml", app_yaml("app-123", replicas=0, image="nginx:1.27"))
    sha = repo.commit()
    proc = agent.sync(repo.path, "--namespace", namespace, "--concurrency", "16", *files[:4], "--notify-batch",
                      timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert len(receiver.accepted) == 1
    assert [(n["application"]["name"], n["reason"], n["commit"]) for n in receiver.notifications()] == [
        ("app-123", "Deployed", sha)]


@pytest.mark.parametrize("fault", ["cut", "limit"])
def test_retry_after_a_cut_connection_and_githubs_limit(agent, repo, namespace, receiver, github, files, objects,
                                                       fault):
    """The receiver answers 429 with ``Retry-After: 2`` once: the retry comes 2 s later (longer
    than the backoff's 1 s). ``cut``: GitHub closes the connection without an answer once: the
    first request (the read of the commit's statuses) is retried, the status posted. ``limit``:
    GitHub holds 1,000 statuses of this commit and context and answers 422: dropped at once (one
    request, no retry), one line, a Warning Event on the Application; the sync still exits 0."""
    receiver.mode, receiver.failures, receiver.retry_after = "retry", 1, "2"
    if fault == "cut":
        github.mode, github.failures = "cut", 1
    else:
        github.limit = 0
    repo.write("a.yaml", app_yaml("a", replicas=0))
    head = repo.commit()
    proc = agent.sync(repo.path, "--namespace", namespace, *files, "--notify-timeout", "8")
    assert proc.returncode == 0, proc.stderr
    assert told(receiver) == [("a", "Deployed")]
    assert receiver.times[1] - receiver.times[0] >= 1.9 and len(receiver.requests) == 2
    posts = [r for r in github.requests if r[0] == "POST"]
    if fault == "cut":
        assert [r[0] for r in github.requests] == ["GET", "GET", "POST"]  # the read was cut, then retried
        assert github.posted(head) == [PENDING] and "dropped" not in proc.stderr
        return
    assert github.posted(head) == [] and len(posts) == 1
    [line] = [x for x in proc.stderr.splitlines() if "dropped" in x]
    assert f"dropped commit status pending for {head[:12]} to github: refused: HTTP 422 (Unprocessable Entity)" in line
    [event] = [e for e in objects.events(namespace) if e["reason"] == "NotificationDropped"]
    assert (event["type"], event["involvedObject"]["name"]) == ("Warning", "a") and "HTTP 422" in event["message"]


def test_run_posts_a_status_dropped_in_an_outage_once_the_host_is_back(start_agent, repo, remote,  # noqa: F811
                                                                       namespace, github, files):
    """The pending status is posted, then GitHub answers 503 until the success is dropped:
    once it is back, a later pass posts the success, once (no restart needed)."""
    repo.write("a.yaml", app_yaml("a", replicas=0))
    sha = remote.push()
    github.down_after = 1  # down from the first status accepted on
    agent = start_agent(remote.url, "--namespace", namespace, "--interval", "2", *files, "--notify-timeout", "1.5")
    wait_for(lambda: agent.metric("gitops_agent_notifications_dropped_total", destination="github") >= 1,
             timeout=60, what="a dropped commit status")
    assert github.posted(sha) == [PENDING]
    github.mode = "ok"
    success = ("success", "1 Application synced and ready")
    wait_for(lambda: github.posted(sha)[1:] == [success], timeout=30, what="the success status")
    passes = agent.metric("gitops_agent_passes_total", result="success")
    wait_for(lambda: agent.metric("gitops_agent_passes_total", result="success") >= passes + 2, timeout=30,
             what="two more passes")
    assert github.posted(sha) == [PENDING, success]
    assert agent.stop() == 0
    assert f"dropped commit status success for {sha[:12]} to github: HTTP 503" in agent.output()


@pytest.mark.parametrize("failure", ["Degraded", "ApplyFailed"])
def test_a_failure_and_its_recovery_are_told_once_each(agent, repo, namespace, receiver, files, objects, cluster,
                                                       failure):
    """``Degraded``: pods that never schedule (the LimitRange of test_health.py) past a progress
    deadline shortened by hand; ``sync --once --wait=2m`` ends as soon as the Application is
    Degraded (exit 1), not at the timeout; with ``--notify-severity error`` Degraded is all that
    is told (not the Deployed before it). ``ApplyFailed``: a ResourceQuota allowing no Service
    (test_backoff.py) refuses the apply; lifting it tells ``Recovered``. Each once over the
    runs."""
    flags = ["--namespace", namespace, *files[:4]]  # the signed webhook only
    if failure == "Degraded":
        flags += ["--notify-severity", "error"]
        cluster.kubectl("-n", namespace, "apply", "-f", "-", input=TOO_BIG)
    else:
        refuse_services(cluster, namespace)
    repo.write("web.yaml", app_yaml("web", replicas=1))
    repo.commit()
    first = agent.sync(repo.path, *flags)
    assert first.returncode == (0 if failure == "Degraded" else 2), first.stderr
    if failure == "Degraded":
        cluster.kubectl("-n", namespace, "patch", "deployment", "web", "--type=merge",
                        "-p", '{"spec": {"progressDeadlineSeconds": 1}}')
        wait_for(lambda: {c["type"]: c for c in (objects.deployment(namespace, "web").get("status") or {}).get(
            "conditions") or []}.get("Progressing", {}).get("reason") == "ProgressDeadlineExceeded",
            timeout=120, what="the rollout past its deadline")
        waited = agent.sync(repo.path, *flags, "--wait=2m")
        assert waited.returncode == 1, waited.stderr
        assert "(Degraded or Stalled: waiting cannot help)" in waited.stdout  # ended by Degraded, not the 2 minutes
        assert f"{namespace}/web: Degraded" in waited.stderr + waited.stdout
    again = agent.sync(repo.path, *flags)  # the same state: nothing new to tell
    assert again.returncode == (0 if failure == "Degraded" else 2), again.stderr  # no --wait: applied is 0
    if failure == "Degraded":
        assert told(receiver) == [("web", "Degraded")]
        assert [n["severity"] for n in receiver.notifications()] == ["error"]
        return
    assert told(receiver) == [("web", "ApplyFailed")]
    allow_services(cluster, namespace)
    assert agent.sync(repo.path, *flags).returncode == 0
    assert agent.sync(repo.path, *flags).returncode == 0
    reasons = [r for _, r in told(receiver)]
    assert reasons[0] == "ApplyFailed" and reasons.count("ApplyFailed") == 1 and reasons.count("Recovered") == 1, \
        reasons


def test_a_drop_about_no_application_is_a_warning_event_on_the_agents_pod(agent, repo, namespace, github, files,
                                                                          objects, cluster):
    """A commit whose only file is broken has no Application: its pending and failure statuses,
    refused by GitHub (422), each give a Warning Event on the agent's own Pod, named by the
    downward API's variables (a real Pod here, standing in for the agent's)."""
    cluster.kubectl("-n", namespace, "run", "gitops-agent-0", "--image=nginx", "--restart=Never")
    uid = objects.core.read_namespaced_pod("gitops-agent-0", namespace).metadata.uid
    github.limit = 0
    repo.write("bad.yaml", "kind: [\n")
    head = repo.commit()
    proc = agent.sync(repo.path, "--namespace", namespace, *files[4:],
                      env={"POD_NAMESPACE": namespace, "POD_NAME": "gitops-agent-0", "POD_UID": uid})
    assert proc.returncode == 2, proc.stderr
    dropped = [e for e in objects.events(namespace) if e["reason"] == "NotificationDropped"]
    assert sorted(e["message"].split(":")[0] for e in dropped) == [
        f"dropped commit status {state} for {head[:12]} to github" for state in ("failure", "pending")]
    assert {(e["type"], e["involvedObject"]["kind"], e["involvedObject"]["name"], e["involvedObject"]["uid"])
            for e in dropped} == {("Warning", "Pod", "gitops-agent-0", uid)}
