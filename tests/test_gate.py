"""Know it before telling it (issue 32, item 0), against the real control plane:
``sync --once --wait`` exits 0 once the Deployment it applied is ready, leaving the status true;
1 when it can never be (pods that never schedule: the LimitRange of test_health.py), promptly on
SIGTERM; ``reconcile --wait`` exits 1 on Ready=False; a source that cannot be fetched shows on its
Applications as SourceAvailable=False, written once, removed when Git is back; the markdown plan
of 45 new Applications stays under 60,000 characters."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from tests.support import app_yaml, wait_for
from tests.test_ci import run, schema_valid
from tests.test_health import TOO_BIG
from tests.test_reconcile_request import reconcile
from tests.test_run import remote, start_agent  # noqa: F401 (fixtures)
from tests.test_webhook import started

pytestmark = pytest.mark.usefixtures("crd")


def conditions(app):
    return {c["type"]: c for c in app["status"]["conditions"]}


def test_wait_exits_0_once_the_deployment_is_ready_and_leaves_the_status_true(agent, repo, namespace, objects):
    repo.write("web.yaml", app_yaml("web", replicas=2))
    head = repo.commit()
    proc = agent.sync(repo.path, "--namespace", namespace, "--wait=2m")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert f"  Deployment/{namespace}/web created" in lines
    assert lines[-2] == "sync succeeded: 3 created, 0 configured, 0 unchanged, 0 pruned, 0 failed"
    assert lines[-1].startswith("wait succeeded: every Application healthy after ")
    assert "waiting up to 2m0s for 1 Application to be healthy" in proc.stderr
    assert f"{namespace}/web: Healthy (all children healthy) after " in proc.stderr
    app = objects.app(namespace, "web")  # no stale snapshot: the wait rewrote it
    assert app["status"]["health"] == {"status": "Healthy", "message": "all children healthy"}
    assert (conditions(app)["Ready"]["status"], conditions(app)["Ready"]["reason"]) == ("True", "Healthy")
    assert set(conditions(app)) == {"Ready", "Synced"} and app["status"]["lastSyncedCommit"] == head
    assert app["status"]["readyReplicas"] == 2
    version = app["metadata"]["resourceVersion"]
    doc = schema_valid(json.loads(agent.sync(repo.path, "--namespace", namespace, "--wait", "-o", "json").stdout))
    assert (doc["exitCode"], doc["wait"]["result"], doc["wait"]["notHealthy"]) == (0, "healthy", [])
    assert doc["applications"][0]["health"] == {"status": "Healthy", "message": "all children healthy"}
    assert objects.app(namespace, "web")["metadata"]["resourceVersion"] == version  # nothing moved: nothing written


def test_wait_exits_1_in_time_for_a_deployment_that_can_never_be_ready(agent, repo, namespaces, objects, cluster):
    namespace = namespaces()
    cluster.kubectl("-n", namespace, "apply", "-f", "-", input=TOO_BIG)
    repo.write("web.yaml", app_yaml("web", replicas=1))
    repo.write("ok.yaml", app_yaml("ok", replicas=0))
    repo.commit()
    # in time: killed at 60 s otherwise (ten times the wait; the default --wait is 5 minutes); the
    # wait's own seconds show it waited its 6 s, a lower bound no load can break
    proc = agent.sync(repo.path, "--namespace", namespace, "--wait=6s", "-o", "json", timeout=60)
    assert proc.returncode == 1, proc.stderr
    doc = schema_valid(json.loads(proc.stdout))
    assert (doc["ok"], doc["exitCode"], doc["wait"]["result"], doc["wait"]["timeoutSeconds"]) == (
        True, 1, "timeout", 6)
    assert doc["wait"]["seconds"] >= 6
    assert [a["name"] for a in doc["wait"]["notHealthy"]] == [f"{namespace}/web"]
    assert doc["wait"]["notHealthy"][0]["health"]["status"] == "Progressing"
    health = {a["name"]: a["health"]["status"] for a in doc["applications"]}
    assert health == {f"{namespace}/ok": "Healthy", f"{namespace}/web": "Progressing"}
    found = conditions(objects.app(namespace, "web"))
    assert (found["Ready"]["status"], found["Reconciling"]["status"]) == ("False", "True")
    text = agent.sync(repo.path, "--namespace", namespace, "--wait=2s")
    assert text.returncode == 1
    last = text.stdout.splitlines()[-1]
    assert last.startswith("wait failed: 1 Application not healthy after 2") and last.endswith(
        f"s (timed out: --wait=2s): {namespace}/web")
    assert f"  {namespace}/web: Progressing (" in text.stdout


def test_sigterm_ends_the_wait_promptly_with_exit_1_and_the_report(agent, repo, namespaces, objects, cluster):
    namespace = namespaces()
    cluster.kubectl("-n", namespace, "apply", "-f", "-", input=TOO_BIG)
    repo.write("web.yaml", app_yaml("web"))
    repo.commit()
    cmd = [sys.executable, "-m", "agent", "sync", "--once", "--repo", str(repo.path), "--namespace", namespace,
           "--kubeconfig", str(agent.kubeconfig), "--cache-dir", str(agent.cache_dir), "--wait=5m"]
    proc = subprocess.Popen(cmd, cwd=agent.cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: objects.app(namespace, "web") is not None and "status" in objects.app(namespace, "web"),
             timeout=60, what="the pass to write status")
    time.sleep(1.5)  # waiting now
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)  # promptly: a tenth of the 5 minutes it would wait, however loaded
    print(out, err)
    assert proc.returncode == 1 and "Traceback" not in err
    assert out.splitlines()[-1].endswith(f"(interrupted by a signal): {namespace}/web")


@pytest.mark.parametrize("args, says", [
    (["--wait", "soon"], "argument --wait: 'soon' is not allowed: must be a number of seconds > 0 and <= 86400, "
                         "or a duration such as 90s, 5m or 1h30m"),
    (["--wait=0s"], "argument --wait: '0s' is not allowed"),
    (["--wait", "--dry-run"], "argument --wait: --wait is not allowed with --dry-run"),
])
def test_a_bad_wait_is_one_line_and_exit_2(agent, repo, namespace, args, says):
    repo.write("web.yaml", app_yaml("web"))
    repo.commit()
    proc = agent.sync(repo.path, "--namespace", namespace, *args)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], proc.stderr


def test_the_wait_variable_is_ignored_by_a_dry_run(agent, repo, namespace):
    repo.write("web.yaml", app_yaml("web"))
    repo.commit()
    proc = agent.sync(repo.path, "--namespace", namespace, "--dry-run", env={"GITOPS_AGENT_WAIT": "1m"})
    assert proc.returncode == 1 and "waiting" not in proc.stderr  # would create: a plan, no wait
    bad = agent.sync(repo.path, "--namespace", namespace, "--dry-run", env={"GITOPS_AGENT_WAIT": "later"})
    assert bad.returncode == 2 and "GITOPS_AGENT_WAIT='later' is not allowed" in bad.stderr


def test_diff_has_no_wait(agent, repo, namespace):
    repo.write("web.yaml", app_yaml("web"))
    repo.commit()
    proc = run(agent, "diff", repo, namespace, "--wait")
    assert proc.returncode == 2 and "unrecognized arguments: --wait" in proc.stderr


def test_reconcile_wait_exits_1_on_ready_false(start_agent, agent, repo, remote, namespaces, objects,  # noqa: F811
                                               cluster):
    namespace = namespaces()
    cluster.kubectl("-n", namespace, "apply", "-f", "-", input=TOO_BIG)
    started(start_agent, remote, repo, namespace, objects)
    proc = reconcile(agent, "web", namespace, "--wait", "--timeout", "8s", timeout=60)  # in time: killed at 60 s
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines()[1].startswith(f"Application/{namespace}/web: handled: Ready=False (")
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"error: Application/{namespace}/web: handled and synced, but not healthy within 8s: "
                           "Ready=False (Progressing: ")


@pytest.mark.parametrize("fault", ["FetchFailed", "ReadFailed"])
def test_an_unreachable_source_marks_its_applications_once_and_recovery_removes_it(agent, repo, namespace, objects,
                                                                                   tmp_path, fault):
    """``FetchFailed``: the repository is gone. ``ReadFailed``: its new commit cannot be read
    (``--path`` is no longer in it); then the repository goes too: the condition is rewritten
    with the new reason and keeps its lastTransitionTime (False since the first failure)."""
    repo.write("apps/web.yaml", app_yaml("web"))
    repo.commit()
    flags = ["--namespace", namespace, "--path", "apps"]
    assert agent.sync(repo.path, *flags, "--wait=1m").returncode == 0
    away = tmp_path / "moved-away"
    if fault == "FetchFailed":
        repo.path.rename(away)
    else:
        repo.move("apps", "elsewhere")
        repo.commit()
    try:
        proc = agent.sync(repo.path, *flags, "-o", "json")
        assert proc.returncode == 2
        app = objects.app(namespace, "web")
        found = conditions(app)
        down = found["SourceAvailable"]
        assert (down["status"], down["reason"]) == ("False", fault)
        assert (str(repo.path) if fault == "FetchFailed" else "apps") in down["message"]
        assert [c["type"] for c in app["status"]["conditions"]] == ["Ready", "SourceAvailable", "Synced"]
        assert found["Ready"]["status"] == "True"  # the cluster still runs the last commit read
        assert objects.deployment(namespace, "web") is not None  # nothing pruned
        version = app["metadata"]["resourceVersion"]
        time.sleep(1.1)
        assert agent.sync(repo.path, *flags).returncode == 2
        again = objects.app(namespace, "web")
        assert again["metadata"]["resourceVersion"] == version  # the same failure: written once
        assert conditions(again)["SourceAvailable"] == down
        if fault == "ReadFailed":
            repo.path.rename(away)
            assert agent.sync(repo.path, *flags).returncode == 2
            fetch = conditions(objects.app(namespace, "web"))["SourceAvailable"]
            assert (fetch["reason"], fetch["lastTransitionTime"]) == ("FetchFailed", down["lastTransitionTime"])
    finally:
        if away.exists():
            away.rename(repo.path)
    if fault == "ReadFailed":
        repo.move("elsewhere", "apps")
        repo.commit()
    assert agent.sync(repo.path, *flags).returncode == 0
    app = objects.app(namespace, "web")
    assert set(conditions(app)) == {"Ready", "Synced"}


def test_the_markdown_plan_of_45_new_applications_stays_under_60000_characters(agent, repo, namespace):
    for i in range(45):
        repo.write(f"app{i:02}.yaml", app_yaml(f"app{i:02}", replicas=2))
    repo.commit()
    proc = run(agent, "diff", repo, namespace, "-o", "markdown")
    assert proc.returncode == 1, proc.stderr
    md = proc.stdout
    assert len(md) <= 60_000
    assert md.startswith("### gitops-agent diff: changes pending (135 create")
    for i in range(45):
        assert f"| `{namespace}/app{i:02}` | Application **create**, Deployment **create**, Service **create** | 0 |" in md
    assert md.count("<details>") == md.count("</details>")
    whole = json.loads(run(agent, "diff", repo, namespace, "-o", "json").stdout)
    diffs = sum(bool(o["diff"]) for a in whole["applications"] for o in a["objects"])
    if "**Cut to stay under 60,000 characters**" in md:
        assert f"{diffs - md.count('<details>')} diffs left out" in md.rstrip().splitlines()[-1]
    else:
        assert md.count("<details>") == diffs


def test_run_marks_an_unreachable_source_and_serves_its_last_success(start_agent, repo, remote, namespace,  # noqa: F811
                                                                     objects, tmp_path):
    repo.write("a.yaml", app_yaml("web"))
    remote.push()
    began = time.time()
    running = start_agent(remote.url, "--interval", "1", "--namespace", namespace, "--fetch-timeout", "5")
    wait_for(lambda: running.metric("gitops_agent_passes_total", result="success") >= 1, timeout=30, what="a pass")
    wait_for(lambda: {c["type"]: c["status"] for c in (objects.app(namespace, "web").get("status") or {}).get(
        "conditions", [])}.get("Ready") == "True", timeout=60, what="Ready (so no rollout moves the status later)")
    source = objects.app(namespace, "web")["metadata"]["labels"]["heumsi.github.io/source"]
    seen = running.metric("gitops_agent_source_last_success_timestamp_seconds", source=source)
    assert seen >= began  # a success of this agent (a lower bound: no load can break it)
    away = tmp_path / "remote-away.git"
    remote.path.rename(away)
    try:
        def down():
            app = objects.app(namespace, "web")
            return {c["type"]: c for c in app["status"]["conditions"]}.get("SourceAvailable")
        condition = wait_for(down, timeout=30, what="SourceAvailable=False")
        assert (condition["status"], condition["reason"]) == ("False", "FetchFailed")
        time.sleep(1.5)  # the watch pass the write itself starts (offline: it keeps the condition) is done
        version = objects.app(namespace, "web")["metadata"]["resourceVersion"]
        assert down() == condition
        failures = running.metric("gitops_agent_git_fetch_failures_total")
        wait_for(lambda: running.metric("gitops_agent_git_fetch_failures_total") >= failures + 3, timeout=30,
                 what="three more failed passes")
        assert objects.app(namespace, "web")["metadata"]["resourceVersion"] == version  # written once
        stale = running.metric("gitops_agent_source_last_success_timestamp_seconds", source=source)
        assert stale <= time.time() - 2
    finally:
        away.rename(remote.path)
    wait_for(lambda: "SourceAvailable" not in {c["type"] for c in objects.app(namespace, "web")["status"]["conditions"]},
             timeout=30, what="SourceAvailable to be removed")
    assert running.metric("gitops_agent_source_last_success_timestamp_seconds", source=source) > stale


def test_a_suspended_application_is_not_waited_for_and_is_named(agent, repo, namespace):
    repo.write("ok.yaml", app_yaml("ok", replicas=0))
    repo.write("db.yaml", app_yaml("db", replicas=0).replace("port: 80", "port: 80\n  suspend: true"))
    repo.commit()
    doc = schema_valid(json.loads(agent.sync(repo.path, "--namespace", namespace, "--wait=30s", "-o", "json").stdout))
    assert (doc["exitCode"], doc["wait"]["result"], doc["wait"]["skipped"]) == (0, "healthy", [f"{namespace}/db"])
    text = agent.sync(repo.path, "--namespace", namespace, "--wait=30s")
    assert text.returncode == 0, text.stderr
    assert f"  {namespace}/db: not waited for (suspended, or a child held by its annotation)" in text.stdout
    assert "waiting up to 30s for 1 Application to be healthy" in text.stderr
