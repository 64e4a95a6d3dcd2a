"""Retries with backoff against the real control plane. A ResourceQuota of ``services: 0``
makes the API server refuse the Application's Service for real (403, exceeded quota), so each
attempt fails the same way until the quota goes. ``run`` retries with growing gaps kept in the
status; a new commit or a sync-now request retries at once; ``sync --once`` always attempts."""

from __future__ import annotations

import datetime
import signal
import time

import pytest

from agent.engine import backoff
from tests.support import api_writes, app_yaml, json_lines, new_writes, wait_for
from tests.test_reconcile_request import reconcile, token_of
from tests.test_run import remote, start_agent  # noqa: F401 (fixtures)
from tests.test_webhook import passes

pytestmark = pytest.mark.usefixtures("crd")


def refuse_services(cluster, namespace):
    """A ResourceQuota allowing no Service in ``namespace``; the API server's quota admission
    refuses a Service with 403 "exceeded quota" from then on. The local control plane runs no
    resource-quota controller, so the quota's usage (none: the namespace is fresh) is written to
    its status here, as that controller would."""
    cluster.kubectl("-n", namespace, "create", "quota", "no-services", "--hard=services=0")
    cluster.kubectl("-n", namespace, "patch", "quota", "no-services", "--subresource=status", "--type=merge",
                    "-p", '{"status":{"hard":{"services":"0"},"used":{"services":"0"}}}')


def allow_services(cluster, namespace):
    cluster.kubectl("-n", namespace, "delete", "quota", "no-services", "--wait=true")


def status(objects, namespace, name="web") -> dict:
    return (objects.app(namespace, name) or {}).get("status") or {}


def synced(st: dict) -> dict:
    return next((c for c in st.get("conditions", []) if c["type"] == "Synced"), {})


def service_writes(cluster) -> float:
    return sum(new_writes({}, api_writes(cluster, resources=("services",))).values())


def at(text: str) -> datetime.datetime:
    return backoff.parse_time(text)


def test_backoff_grows_on_repeated_failure_and_is_kept_in_status(
        start_agent, repo, remote, namespace, objects, cluster):  # noqa: F811
    refuse_services(cluster, namespace)
    repo.write("a.yaml", app_yaml("web"))
    remote.push()
    writes_before = service_writes(cluster)
    running = start_agent(remote.url, "--interval", "600", "--namespace", namespace,
                          "--min-retry-delay", "4", "--max-retry-delay", "60")
    seen: dict[int, tuple[str, float]] = {}  # failures -> (nextRetryTime, wall time first seen)

    def record():
        st = status(objects, namespace)
        count = st.get("failures")
        if count and count not in seen:
            seen[count] = (st["nextRetryTime"], time.time())
        return 4 in seen

    wait_for(record, timeout=240, interval=0.1, what="four failed attempts")
    assert sorted(seen) == [1, 2, 3, 4]  # one more per attempt, never two at once
    # Bounds a loaded machine cannot break, as it only makes the test see a status later and an
    # attempt start later: a retry time is at most the full delay after its attempt (+1 s: it is
    # rounded up), and the status is seen no earlier than written...
    for count, (next_retry, observed) in seen.items():
        wait = at(next_retry).timestamp() - observed
        full = min(4 * 2 ** (count - 1), 60)
        assert wait <= full + 1, (count, next_retry, wait)
    # ...and each attempt starts no earlier than the retry time before it, then waits more than
    # 90 % of its own full delay (the jitter): the gaps grow, 8, 16 and 32 s at least
    retries = [at(seen[n][0]) for n in (1, 2, 3, 4)]
    gaps = [(b - a).total_seconds() for a, b in zip(retries, retries[1:])]
    assert all(gap > 0.9 * min(4 * 2 ** count, 60) for count, gap in zip((1, 2, 3), gaps)), gaps
    st = status(objects, namespace)
    assert synced(st)["status"] == "False" and "exceeded quota" in synced(st)["message"]
    assert objects.service(namespace, "web") is None and objects.deployment(namespace, "web")
    assert service_writes(cluster) - writes_before == 4  # one Service apply per attempt, no more
    assert passes(running) >= 4
    assert "backing off after" in running.output()


def test_a_new_commit_resets_the_backoff_at_once_and_others_keep_syncing(
        start_agent, repo, remote, namespaces, objects, cluster):  # noqa: F811
    stuck, fine = namespaces(), namespaces()
    refuse_services(cluster, stuck)
    repo.write("web.yaml", app_yaml("web", namespace=stuck))
    repo.write("ok.yaml", app_yaml("ok", namespace=fine))
    remote.push()
    running = start_agent(remote.url, "--interval", "5", "--min-retry-delay", "300", "--max-retry-delay", "600")
    wait_for(lambda: status(objects, stuck).get("failures") == 1, timeout=120, what="the first failure")
    wait_for(lambda: objects.service(fine, "ok"), timeout=60, what="the other Application's Service")
    first = status(objects, stuck)
    assert at(first["nextRetryTime"]) > datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=200)

    # interval passes skip it (no attempt, status as it was) and still serve the other Application
    count = passes(running)
    cluster.kubectl("-n", fine, "delete", "deployment", "ok")
    wait_for(lambda: objects.deployment(fine, "ok"), timeout=60, what="the other Deployment to come back")
    wait_for(lambda: passes(running) >= count + 2, timeout=120, what="two more passes")
    assert status(objects, stuck) == first
    allow_services(cluster, stuck)
    count = passes(running)
    wait_for(lambda: passes(running) >= count + 1, timeout=120, what="a pass after the quota went")
    assert status(objects, stuck) == first and objects.service(stuck, "web") is None  # still backing off

    repo.write("web.yaml", app_yaml("web", namespace=stuck, replicas=2))
    head = remote.push()
    wait_for(lambda: synced(status(objects, stuck)).get("status") == "True", timeout=120,
             what="the new commit to sync the Application")
    assert datetime.datetime.now(datetime.timezone.utc) < at(first["nextRetryTime"])  # long before the retry
    st = status(objects, stuck)
    assert st["lastSyncedCommit"] == head and "failures" not in st and "nextRetryTime" not in st
    assert objects.service(stuck, "web") is not None


def test_sync_now_resets_the_backoff_and_sync_once_always_attempts(
        start_agent, agent, repo, remote, namespace, objects, cluster):  # noqa: F811
    refuse_services(cluster, namespace)
    repo.write("a.yaml", app_yaml("web"))
    remote.push()
    running = start_agent(remote.url, "--interval", "600", "--namespace", namespace,
                          "--min-retry-delay", "600", "--max-retry-delay", "600")
    wait_for(lambda: status(objects, namespace).get("failures") == 1, timeout=120, what="the first failure")
    first = status(objects, namespace)
    writes = service_writes(cluster)
    proc = reconcile(agent, "web", namespace, "--wait", "--timeout", "120")
    assert proc.returncode == 2
    errors = proc.stderr.strip().splitlines()
    assert len(errors) == 1 and "handled, sync failed:" in errors[0] and "exceeded quota" in errors[0]
    st = status(objects, namespace)
    assert st["lastHandledReconcileAt"] == token_of(proc)  # handled although the sync failed
    assert service_writes(cluster) - writes == 1  # attempted at once, although backing off
    assert st["failures"] == 1  # the count began again; its retry is one first delay (600 s, less jitter) away
    wait = (at(st["nextRetryTime"]) - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
    assert 0.9 * 600 - 30 <= wait <= 601, (st["nextRetryTime"], first["nextRetryTime"])
    assert running.stop(signal.SIGTERM, timeout=60) == 0

    proc = agent.sync(remote.url, "--namespace", namespace)  # a person asks: attempted, still counted
    assert proc.returncode == 2 and "exceeded quota" in proc.stderr
    assert "backing off" not in proc.stdout + proc.stderr
    assert status(objects, namespace)["failures"] == 2
    allow_services(cluster, namespace)
    assert agent.sync(remote.url, "--namespace", namespace).returncode == 0
    st = status(objects, namespace)
    assert "failures" not in st and "nextRetryTime" not in st and synced(st)["status"] == "True"


def test_a_pass_that_skips_a_failing_application_is_a_failed_pass(
        start_agent, repo, remote, namespace, objects, cluster):  # noqa: F811
    refuse_services(cluster, namespace)
    repo.write("a.yaml", app_yaml("web"))
    remote.push()
    running = start_agent(remote.url, "--interval", "2", "--namespace", namespace, "--no-watch",
                          "--min-retry-delay", "600", "--max-retry-delay", "600")
    wait_for(lambda: status(objects, namespace).get("failures") == 1, timeout=120, what="the first failure")
    wait_for(lambda: "backing off after 1 failure" in running.output(), timeout=30, what="a pass that skips web")
    assert f'skipped=1 skipped_applications=["{namespace}/web"]' in running.output()  # the text log line
    failures = running.metric("gitops_agent_passes_total", result="failure")
    time.sleep(5)  # two or more interval passes, each skipping web
    assert running.metric("gitops_agent_passes_total", result="success") == 0
    assert running.metric("gitops_agent_passes_total", result="failure") >= failures + 2
    assert running.metric("gitops_agent_last_synced_commit_timestamp_seconds") == 0
    assert running.get("/readyz")[0] == 200  # the loop runs: ready, as with any pass that found errors
    assert status(objects, namespace)["failures"] == 1  # skipped, not attempted
    allow_services(cluster, namespace)
    repo.write("a.yaml", app_yaml("web", image="nginx:2"))  # a new commit resets the backoff
    remote.push()
    wait_for(lambda: running.metric("gitops_agent_passes_total", result="success") >= 1, timeout=60,
             what="a successful pass")
    assert running.metric("gitops_agent_last_synced_commit_timestamp_seconds") > 0
    assert "failures" not in status(objects, namespace)


def test_a_skipped_application_is_listed_as_skipped_and_every_count_matches_its_list(
        start_agent, repo, remote, namespaces, objects, cluster):  # noqa: F811
    stuck, fine = namespaces(), namespaces()
    refuse_services(cluster, stuck)
    repo.write("web.yaml", app_yaml("web", namespace=stuck))
    repo.write("ok.yaml", app_yaml("ok", namespace=fine))
    remote.push()
    running = start_agent(remote.url, "--interval", "2", "--no-watch", "--log-format", "json",
                          "--min-retry-delay", "600", "--max-retry-delay", "600")

    def pass_lines() -> list[dict]:
        return json_lines(running.output(), "pass")

    wait_for(lambda: len(pass_lines()) >= 3, timeout=120, what="three passes")
    first, skipping = pass_lines()[0], pass_lines()[1:]
    assert first["failed_applications"] == [f"{stuck}/web"] and first["skipped_applications"] == []
    for line in skipping:  # web in backoff: skipped, never unchanged or succeeded; ok synced
        assert line["result"] == "failure" and line["failed_applications"] == [], line
        assert line["skipped_applications"] == [f"{stuck}/web"] and line["skipped"] == len(line["backing_off"]) == 1
        assert line["unchanged"] == 3 and "failed" not in line and line["notes"] == [], line  # ok's three objects
        assert line["backing_off"][0].startswith(f"{stuck}/web: backing off after 1 failure, next retry at ")
    assert status(objects, stuck)["failures"] == 1
