"""Sync now: ``python -m agent reconcile NAME`` against a real ``python -m agent run`` (with a
long ``--interval``, so only the request can explain a quick pass) and the real control plane.
A request is handled by exactly one pass, recorded in ``status.lastHandledReconcileAt``, and
Git's apply never removes the annotation."""

from __future__ import annotations

import json
import re
import sys
import time

import pytest

from tests.support import api_writes, app_yaml, new_writes, wait_for
from tests.test_run import image_of, remote, start_agent  # noqa: F401 (fixtures)
from tests.test_webhook import passes, started

pytestmark = pytest.mark.usefixtures("crd")
ANNOTATION = "heumsi.github.io/reconcile-requested-at"


def reconcile(agent, name: str, namespace: str, *args: str, timeout: float = 300, env=None):
    """``python -m agent reconcile NAME -n NAMESPACE ARGS`` as a user types it."""
    return agent.run([sys.executable, "-m", "agent", "reconcile", name, "-n", namespace,
                      "--kubeconfig", str(agent.kubeconfig), *args], timeout=timeout, env=env)


def token_of(proc) -> str:
    """The token the command printed on its first line."""
    match = re.search(rf"{re.escape(ANNOTATION)}=(\S+)\)", proc.stdout.splitlines()[0])
    assert match, proc.stdout
    return match.group(1)


def settled(running, seconds: float = 4.0, timeout: float = 120.0) -> float:
    """The pass count once it held still for ``seconds`` (watch passes after a rollout are done)."""
    deadline = time.monotonic() + timeout
    last = passes(running)
    while time.monotonic() < deadline:
        time.sleep(seconds)
        now = passes(running)
        if now == last:
            return now
        last = now
    raise AssertionError("the agent kept passing")


def test_reconcile_wait_picks_up_a_commit_pushed_after_the_agent_started(
        start_agent, agent, repo, remote, namespace, objects):  # noqa: F811
    running = started(start_agent, remote, repo, namespace, objects)  # --interval 300
    repo.write("a.yaml", app_yaml("web", image="nginx:2"))
    head = remote.push()
    proc = reconcile(agent, "web", namespace, "--wait", "--timeout", "120")
    assert proc.returncode == 0, proc.stderr
    token = token_of(proc)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z", token)
    lines = proc.stdout.splitlines()
    assert len(lines) == 3 and lines[1].startswith(f"Application/{namespace}/web: handled: Ready=")
    assert lines[2].startswith(f"Application/{namespace}/web: healthy: Ready=True (Healthy: ")  # then healthy
    assert f"lastSyncedCommit {head}" in lines[1] and proc.stderr == ""
    app = objects.app(namespace, "web")
    assert app["status"]["lastHandledReconcileAt"] == token
    assert app["status"]["lastSyncedCommit"] == head
    assert image_of(objects, namespace, "web") == "nginx:2"
    assert app["metadata"]["annotations"][ANNOTATION] == token  # Git's apply left it alone
    managers = {e["manager"] for e in app["metadata"]["managedFields"]
                if ANNOTATION in str(e.get("fieldsV1", {}).get("f:metadata", {}))}
    assert managers == {"gitops-agent-reconcile"}
    assert '"reconcile-request"' in running.output() or "trigger=reconcile-request" in running.output()


def test_each_request_is_handled_by_one_pass_and_the_status_write_starts_none(
        start_agent, agent, repo, remote, namespace, objects, cluster):  # noqa: F811
    running = started(start_agent, remote, repo, namespace, objects)
    wait_for(lambda: objects.app(namespace, "web")["status"]["readyReplicas"] == 1, timeout=120,
             what="the pod to be ready")
    for _ in range(2):
        before = settled(running)
        writes = api_writes(cluster, resources=("applications",))
        proc = reconcile(agent, "web", namespace, "--wait", "--timeout", "120")
        assert proc.returncode == 0, proc.stderr
        time.sleep(6)  # room for a pass the status write would wrongly start
        assert passes(running) == before + 1
        assert new_writes(writes, api_writes(cluster, resources=("applications",))) == {
            ("PATCH", "applications", ""): 1,  # the request
            ("PATCH", "applications", "status"): 1,  # the record of it
        }
        status = objects.app(namespace, "web")["status"]
        assert status["lastHandledReconcileAt"] == token_of(proc)
        assert status["observedBy"] == "reconcile"  # the pass that wrote it was asked for by reconcile


def test_a_missing_application_exits_2_with_one_line(agent, namespace):
    proc = reconcile(agent, "nope", namespace, "--wait", "--timeout", "5")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"error: Application/{namespace}/nope not found (no such Application in namespace {namespace}, "
        "or the Application CRD is not installed)"]


def test_a_suspended_application_is_refused_at_once(agent, repo, namespace, objects, cluster):
    """As ``flux reconcile`` refuses a suspended object: one line, exit 2, nothing annotated."""
    repo.write("web.yaml", app_yaml("web"))
    repo.write("db.yaml", app_yaml("db").replace("port: 80", "port: 80\n  suspend: true"))
    repo.commit()
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 0, proc.stderr
    cluster.kubectl("-n", namespace, "annotate", "application", "web", "heumsi.github.io/reconcile=disabled")
    for name, why in (("web", "heumsi.github.io/reconcile: disabled on the Application"), ("db", "spec.suspend: true")):
        proc = reconcile(agent, name, namespace, "--wait", "--timeout", "5")
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr.strip().splitlines() == [
            f"error: Application/{namespace}/{name} is suspended ({why}), so no pass would sync it; resume it "
            "first (see Suspend and hot-fix in the README)"]
        assert ANNOTATION not in (objects.app(namespace, name)["metadata"].get("annotations") or {})


def test_without_a_running_agent_wait_times_out_and_sync_once_handles_the_request(
        agent, repo, namespace, objects):
    repo.write("a.yaml", app_yaml("web"))
    repo.commit()
    assert agent.sync(repo.path, "--namespace", namespace).returncode == 0
    proc = reconcile(agent, "web", namespace, "--wait", "--timeout", "3", timeout=60)  # killed at 60 s otherwise
    assert proc.returncode == 2
    errors = proc.stderr.strip().splitlines()
    assert len(errors) == 1 and "not handled within 3s: no agent run seems to be handling requests" in errors[0]
    token = token_of(proc)
    assert "lastHandledReconcileAt" not in objects.app(namespace, "web")["status"]
    assert agent.sync(repo.path, "--namespace", namespace).returncode == 0  # a one-shot pass handles it too
    app = objects.app(namespace, "web")
    assert app["status"]["lastHandledReconcileAt"] == token
    assert app["metadata"]["annotations"][ANNOTATION] == token
    version = app["metadata"]["resourceVersion"]
    assert agent.sync(repo.path, "--namespace", namespace).returncode == 0  # handled: nothing to record
    assert objects.app(namespace, "web")["metadata"]["resourceVersion"] == version


@pytest.mark.parametrize("args, env, says", [
    (["--timeout", "0"], None, "argument --timeout: '0' is not allowed: must be a number of seconds > 0"),
    (["--timeout", "soon"], None, "argument --timeout: 'soon' is not allowed"),
    (["-n", "Not_A_Namespace"], None, "argument -n/--namespace: 'Not_A_Namespace' is not allowed"),
    ([], {"GITOPS_AGENT_RECONCILE_TIMEOUT": "-3"}, "GITOPS_AGENT_RECONCILE_TIMEOUT='-3' is not allowed"),
    ([], {"GITOPS_AGENT_RECONCILE_WAIT": "maybe"}, "GITOPS_AGENT_RECONCILE_WAIT='maybe' is not allowed"),
])
def test_bad_flags_are_one_line_and_exit_2(agent, args, env, says):
    proc = agent.run([sys.executable, "-m", "agent", "reconcile", "web", "--kubeconfig", str(agent.kubeconfig),
                      *args], env=env)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], proc.stderr


def test_a_bad_name_is_one_line(agent):
    proc = agent.run([sys.executable, "-m", "agent", "reconcile", "Web_1", "--kubeconfig", str(agent.kubeconfig)])
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "python -m agent reconcile: error: argument NAME: 'Web_1' is not allowed: must be a DNS-1123 subdomain "
        "(lowercase letters, digits, '-' and '.', at most 253 characters) (see python -m agent reconcile --help)"]


def test_log_format_json_makes_every_line_on_stderr_json(agent, repo, namespace, tmp_path):
    """``--log-format json`` (or ``GITOPS_AGENT_LOG_FORMAT=json``): every line on stderr, the
    errors and the client's log lines alike, is one JSON object; stdout keeps its plain lines."""
    repo.write("a.yaml", app_yaml("web"))
    repo.commit()
    assert agent.sync(repo.path, "--namespace", namespace).returncode == 0
    runs = [(reconcile(agent, "nope", namespace, "--log-format", "json"), "not found"),
            (reconcile(agent, "web", namespace, "--wait", "--timeout", "2", "--log-level", "info",
                       env={"GITOPS_AGENT_LOG_FORMAT": "json"}), "not handled within 2s"),
            (agent.run([sys.executable, "-m", "agent", "reconcile", "web", "--log-format", "json",
                        "--kubeconfig", str(tmp_path / "missing")]), "the file does not exist")]
    for proc, says in runs:
        assert proc.returncode == 2
        lines = [json.loads(line) for line in proc.stderr.splitlines()]  # each line parses, or this fails
        assert lines[-1]["level"] == "error" and says in lines[-1]["message"], proc.stderr
    assert len(runs[1][0].stderr.splitlines()) >= 2  # the client's INFO line too, as JSON
    assert runs[1][0].stdout.startswith(f"Application/{namespace}/web: sync requested")
