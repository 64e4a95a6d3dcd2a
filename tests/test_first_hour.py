"""The first hour of a new user (issue 10), against the real control plane: a metadata typo is
refused by file and line with nothing created, the summary counts and lists invalid
Applications, ``--allowed-namespaces`` keeps the agent out of other namespaces."""

from __future__ import annotations

import json
import os

import pytest

from tests.support import app_yaml, wait_for
from tests.test_run import start_agent  # noqa: F401 (fixture)

pytestmark = pytest.mark.usefixtures("crd")


def test_a_metadata_typo_is_refused_with_file_and_line_and_nothing_is_created(agent, repo, namespace, objects):
    other = f"{namespace}-billing"
    repo.write("apps/web.yaml", f"""\
apiVersion: heumsi.github.io/v1
kind: Application
metadata:
  name: web
  namspace: {other}
spec:
  image: nginx:1
  replicas: 1
  port: 80
""")
    repo.write("apps/ok.yaml", app_yaml("ok"))
    repo.commit()
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 2
    assert "error: apps/web.yaml:5: metadata.namspace: unknown field (did you mean metadata.namespace?)" in proc.stderr
    assert objects.trio(namespace, "web") == (None, None, None)  # not synced into the default either
    assert objects.app(other, "web") is None
    assert all(objects.trio(namespace, "ok"))  # the valid one still syncs
    assert f"{namespace}/web: apps/web.yaml:5: metadata.namspace" in proc.stdout


def test_summary_counts_and_lists_invalid_applications(agent, repo, namespace, objects):
    repo.write("a.yaml", app_yaml("good"))
    repo.write("b.yaml", app_yaml("bad-port", port=0))
    repo.write("c.yaml", app_yaml("bad-label").replace("name: bad-label", "name: bad-label\n  labels: {tier: 3}"))
    repo.commit()
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 2
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("sync failed: 3 created, 0 configured, 0 unchanged, 0 pruned, 2 failed;"), last
    assert f"2 Applications failed: {namespace}/bad-label, {namespace}/bad-port" in last
    assert f"  {namespace}/bad-port: b.yaml:" in proc.stdout and "spec.port: must be an integer" in proc.stdout
    assert f"  {namespace}/bad-label: c.yaml:" in proc.stdout and "metadata.labels.tier: must be a string" \
        in proc.stdout
    assert all(objects.trio(namespace, "good")) and objects.app(namespace, "bad-port") is None


def test_an_invalid_file_is_a_file_error_and_text_json_and_markdown_count_alike(agent, repo, namespace, objects):
    repo.write("a.yaml", app_yaml("good"))
    repo.write("b.yaml", app_yaml("bad-port", port=0))
    repo.write("broken.yaml", "a: [\n")
    repo.write("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    repo.commit()
    text = agent.sync(repo.path, "--namespace", namespace)
    assert text.returncode == 2
    assert text.stdout.splitlines()[-1] == (
        f"sync failed: 3 created, 0 configured, 0 unchanged, 0 pruned, 1 failed; 1 Application failed: "
        f"{namespace}/bad-port; 2 files failed: broken.yaml, cm.yaml:1")
    doc = json.loads(agent.sync(repo.path, "--namespace", namespace, "-o", "json").stdout)
    assert doc["counts"]["failed"] == 1 and doc["counts"]["unchanged"] == 3
    assert sorted(a["name"] for a in doc["applications"]) == [f"{namespace}/bad-port", f"{namespace}/good"]
    assert {e["file"] for e in doc["errors"]} == {"b.yaml", "broken.yaml", "cm.yaml"}
    markdown = agent.sync(repo.path, "--namespace", namespace, "-o", "markdown").stdout
    assert markdown.startswith("### gitops-agent sync: failed (0 create, 0 update, 3 unchanged, 0 prune, 1 failed)")
    assert f"| `{namespace}/bad-port` | Application **failed** | 0 |" in markdown


@pytest.mark.parametrize("how", ["names", "glob"])
def test_allowed_namespaces_refuses_and_prunes_nothing_outside(how, agent, repo, namespaces, objects):
    inside, outside = namespaces("in"), namespaces("out")
    allowed = inside if how == "names" else "in-*"
    repo.write("a.yaml", app_yaml("a", namespace=inside))
    repo.write("b.yaml", app_yaml("b", namespace=outside))
    repo.commit()
    assert agent.sync(repo.path).returncode == 0  # unrestricted: both synced, both owned by this source
    repo.remove("b.yaml")
    repo.commit()
    proc = agent.sync(repo.path, "--allowed-namespaces", allowed)
    assert proc.returncode == 0, proc.stderr
    assert all(objects.trio(outside, "b"))  # gone from Git, but outside: never pruned
    repo.write("c.yaml", app_yaml("c", namespace=outside))
    repo.write("a.yaml", app_yaml("a", namespace=inside, image="nginx:2"))
    repo.commit()
    proc = agent.sync(repo.path, env={"GITOPS_AGENT_ALLOWED_NAMESPACES": allowed})
    assert proc.returncode == 2
    assert f"error: c.yaml:5: metadata.namespace: Application {outside}/c: namespace '{outside}' is not allowed" \
        in proc.stderr
    assert objects.trio(outside, "c") == (None, None, None)
    assert all(objects.trio(outside, "b"))
    assert objects.deployment(inside, "a")["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2"
    assert f"{outside}/c" in proc.stdout.splitlines()[-1]
    # nothing unreadable: the note names the refusal that held pruning back, not the files
    assert "note: pruning skipped: 1 Application in Git targets a namespace --allowed-namespaces does not allow" \
        in proc.stdout, proc.stdout
    assert "could be read" not in proc.stdout


def test_plain_allowed_namespaces_create_a_missing_namespace_like_globs_do(agent, repo, cluster, objects):
    """With plain names the agent cannot list Namespaces; a namespace in Git that does not
    exist yet used to fail the pass with a raw 404 while a glob created it."""
    import uuid

    missing = f"new-{uuid.uuid4().hex[:8]}"
    repo.write("a.yaml", app_yaml("a", namespace=missing, replicas=0))
    repo.commit()
    try:
        dry = agent.sync(repo.path, "--allowed-namespaces", f"{missing},other", "--dry-run")
        assert dry.returncode == 1 and "3 create" in dry.stdout, dry.stdout + dry.stderr  # a plan, nothing made
        assert cluster.kubectl("get", "namespace", missing, check=False).returncode != 0
        proc = agent.sync(repo.path, "--allowed-namespaces", f"{missing},other")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert all(objects.trio(missing, "a"))
        made = json.loads(cluster.kubectl("get", "namespace", missing, "-o", "json").stdout)
        assert made["metadata"]["labels"]["heumsi.github.io/created-by"] == "gitops-agent"
        again = agent.sync(repo.path, "--allowed-namespaces", f"{missing},other")
        assert again.returncode == 0 and "0 created, 0 configured, 3 unchanged" in again.stdout
    finally:
        cluster.kubectl("delete", "namespace", missing, "--wait=false", "--ignore-not-found", check=False)


def test_a_missing_namespace_the_agent_may_not_create_is_named_with_how_to_make_it(agent, repo, cluster, namespace,
                                                                                   objects, tmp_path, request):
    """A ClusterRole for the agent's resources without Namespaces, and one allowed namespace
    missing."""
    import uuid
    from pathlib import Path

    missing = f"new-{uuid.uuid4().hex[:8]}"
    cluster.kubectl("create", "serviceaccount", "agent", "-n", namespace)
    cluster.kubectl("create", "clusterrole", f"agent-{namespace}", "--verb=*",
                    "--resource=applications.heumsi.github.io,applications.heumsi.github.io/status,"
                    "deployments.apps,services,configmaps,ingresses.networking.k8s.io,"
                    "horizontalpodautoscalers.autoscaling,poddisruptionbudgets.policy,cronjobs.batch,jobs.batch,events")
    request.addfinalizer(lambda: cluster.kubectl("delete", "clusterrolebinding,clusterrole", f"agent-{namespace}",
                                                 check=False))
    cluster.kubectl("create", "clusterrolebinding", f"agent-{namespace}", f"--clusterrole=agent-{namespace}",
                    f"--serviceaccount={namespace}:agent")
    token = cluster.kubectl("create", "token", "agent", "-n", namespace).stdout.strip()
    config = json.loads(Path(cluster.kubeconfig).read_text())
    config["users"][0]["user"] = {"token": token}
    kubeconfig = tmp_path / "agent-kubeconfig"
    kubeconfig.write_text(json.dumps(config))
    repo.write("a.yaml", app_yaml("a", namespace=namespace, replicas=0))
    repo.write("b.yaml", app_yaml("b", namespace=missing, replicas=0))
    repo.write("c.yaml", app_yaml("c", namespace=missing, replicas=0))
    repo.commit()
    # a dry run fails both as the real run does (a namespace it could not make is not taken as made)
    dry = agent.sync(repo.path, "--allowed-namespaces", f"{namespace},{missing}", "--kubeconfig", str(kubeconfig),
                     "--dry-run")
    assert dry.returncode == 2 and dry.stdout.count("does not exist and the agent could not create it") == 2, dry.stdout
    proc = agent.sync(repo.path, "--allowed-namespaces", f"{namespace},{missing}", "--kubeconfig", str(kubeconfig))
    assert proc.returncode == 2
    assert proc.stdout.count("does not exist and the agent could not create it") == 2
    assert f"namespace '{missing}' does not exist and the agent could not create it (" in proc.stdout
    assert f"create it (kubectl create namespace {missing}) or allow the agent to create namespaces" in proc.stderr
    assert all(objects.trio(namespace, "a"))  # the other namespace still syncs
    assert cluster.kubectl("get", "namespace", missing, check=False).returncode != 0


def test_sync_logs_each_api_retry_with_what_failed_and_when_the_next_try_is(agent, repo, cluster, tmp_path):
    import json
    import sys
    from pathlib import Path

    from tests.cluster import free_port

    config = json.loads(Path(cluster.kubeconfig).read_text())
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{free_port()}"  # nothing listens
    kubeconfig = tmp_path / "unreachable"
    kubeconfig.write_text(json.dumps(config))
    repo.write("a.yaml", app_yaml("web"))
    repo.commit()
    proc = agent.run([sys.executable, "-m", "agent", "sync", "--repo", str(repo.path), "--kubeconfig",
                      str(kubeconfig), "--cache-dir", str(tmp_path / "c"), "--api-retry-seconds", "3"])
    assert proc.returncode == 2
    retries = [line for line in proc.stderr.splitlines() if "retrying in" in line]
    assert len(retries) >= 2, proc.stderr
    assert all("INFO agent.retry" in line and "Unreachable" in line and "(at " in line for line in retries)


def test_an_exec_credential_plugin_is_used_and_a_missing_one_stops_the_sync_before_any_request(
        agent, repo, namespace, objects, cluster, tmp_path):
    """A user whose kubeconfig authenticates with an ``exec`` plugin (as EKS, GKE and AKS
    kubeconfigs do) syncs; when the plugin's command is missing the client would go on without
    credentials: the agent stops with one line naming the command, exit 2, nothing created."""
    import sys
    from pathlib import Path

    config = json.loads(Path(cluster.kubeconfig).read_text())
    token = config["users"][0]["user"].pop("token")
    plugin = tmp_path / "bin" / "token-plugin"
    plugin.parent.mkdir()
    plugin.write_text("#!/bin/sh\nprintf '%s' '" + json.dumps({
        "apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {"token": token}}) + "'\n")
    plugin.chmod(0o755)
    config["users"][0]["user"]["exec"] = {"apiVersion": "client.authentication.k8s.io/v1", "command": "./bin/token-plugin",
                                          "interactiveMode": "Never"}
    (tmp_path / "exec.kubeconfig").write_text(json.dumps(config))
    config["users"][0]["user"]["exec"]["command"] = "gitops-agent-test-no-such-plugin"
    (tmp_path / "missing.kubeconfig").write_text(json.dumps(config))
    repo.write("apps/web.yaml", app_yaml("web"))
    repo.commit()

    def sync(kubeconfig: str):
        return agent.run([sys.executable, "-m", "agent", "sync", "--repo", str(repo.path), "--path", "apps",
                          "--namespace", namespace, "--kubeconfig", str(tmp_path / kubeconfig),
                          "--cache-dir", str(tmp_path / "cache")])

    missing = sync("missing.kubeconfig")
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.splitlines() == [
        f"error: loading the cluster configuration from {tmp_path / 'missing.kubeconfig'}: user "
        "'admin': its exec credential plugin command 'gitops-agent-test-no-such-plugin' was not found on PATH "
        f"({os.environ['PATH']}); install it or correct users[].user.exec.command"]
    assert objects.app(namespace, "web") is None
    assert sync("exec.kubeconfig").returncode == 0
    assert all(objects.trio(namespace, "web"))


def test_a_kubeconfig_user_missing_or_half_written_stops_the_sync_and_a_token_file_from_echo_works(
        agent, repo, namespace, objects, cluster, tmp_path):
    """Each of these kubeconfigs used to send every request as system:anonymous (a context whose
    user is not in ``users:``, a user with only a ``username``), or to end in a traceback
    (``echo TOKEN > file`` as its ``tokenFile``: the client sent the newline in the header).
    Now the first two stop before any request with one line naming the user, the last syncs."""
    import sys
    from pathlib import Path

    config = json.loads(Path(cluster.kubeconfig).read_text())
    token = config["users"][0]["user"]["token"]
    (tmp_path / "token").write_text(token + "\n")
    variants = {
        "no-such-user": ({**config, "users": []}, "context 'local' names user 'admin', which is not one of its users "
                                                  "(it has none); the agent does not connect without its credentials"),
        "only-username": ({**config, "users": [{"name": "admin", "user": {"username": "admin"}}]},
                          "user 'admin' has a username but no password: basic authentication sends both (the agent "
                          "would connect without them)"),
        "token-file": ({**config, "users": [{"name": "admin", "user": {"tokenFile": "token"}}]}, None),
    }
    repo.write("apps/web.yaml", app_yaml("web"))
    repo.commit()
    for name, (kubeconfig, message) in variants.items():
        (tmp_path / name).write_text(json.dumps(kubeconfig))
        proc = agent.run([sys.executable, "-m", "agent", "sync", "--repo", str(repo.path), "--path", "apps",
                          "--namespace", namespace, "--kubeconfig", str(tmp_path / name),
                          "--cache-dir", str(tmp_path / "cache")])
        if message is None:
            assert proc.returncode == 0, proc.stderr
            assert all(objects.trio(namespace, "web"))
        else:
            assert proc.returncode == 2 and proc.stdout == "" and "anonymous" not in proc.stderr
            assert proc.stderr.splitlines() == [f"error: loading the cluster configuration from {tmp_path / name}: "
                                                f"{message}"]
            assert objects.app(namespace, "web") is None


@pytest.mark.parametrize("how", ["names", "glob"])
def test_run_with_allowed_namespaces_syncs_and_its_passes_succeed(how, start_agent, repo, namespace, objects):
    """``deploy/components/namespaced-rbac`` sets plain names; every pass of ``run`` with them
    used to end in a TypeError that only the scheduler's log showed (and /readyz never 200)."""
    repo.write("a.yaml", app_yaml("a", namespace=namespace, replicas=0))
    repo.commit()
    allowed = namespace if how == "names" else namespace[:6] + "*"
    agent = start_agent(str(repo.path), "--allowed-namespaces", allowed, "--interval", "2s")  # a Go duration
    wait_for(lambda: agent.metric("gitops_agent_passes_total", result="success") >= 2, timeout=60,
             what="two successful passes")
    assert all(objects.trio(namespace, "a"))
    assert agent.get("/readyz")[0] == 200
    assert "Traceback" not in agent.output() and "internal error" not in agent.output()


def test_a_label_the_agent_sets_is_not_taken_from_git_and_the_summary_says_so(agent, repo, namespace, objects):
    repo.write("a.yaml", app_yaml("web").replace("name: web", "name: web\n  labels: {app.kubernetes.io/managed-by: helm}"))
    repo.commit()
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 0, proc.stderr
    assert ("note: a.yaml:1: metadata.labels.app.kubernetes.io/managed-by: set by the agent to 'gitops-agent'; "
            "the value in Git ('helm') is not applied") in proc.stdout.splitlines()
    assert objects.app(namespace, "web")["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gitops-agent"


@pytest.mark.parametrize("image", ["nginx latest", " nginx:1", "nginx:1\t"])
def test_the_crd_refuses_by_hand_an_image_the_agent_refuses_from_git(cluster, namespace, image):
    """crd.yaml's ``spec.image`` rule is the README's: no whitespace anywhere, so an
    Application applied by hand cannot get a Deployment that Git could not."""
    doc = json.dumps({"apiVersion": "heumsi.github.io/v1", "kind": "Application",
                      "metadata": {"name": "web", "namespace": namespace},
                      "spec": {"image": image, "replicas": 0, "port": 80}})
    proc = cluster.kubectl("apply", "-f", "-", input=doc, check=False)
    assert proc.returncode != 0 and "spec.image" in proc.stderr and "should match" in proc.stderr, proc.stderr


def test_a_repo_variable_ending_in_a_newline_is_read_without_it(agent, repo, namespace, objects):
    """A Secret made with ``--from-file`` ends its value in a newline."""
    import sys

    repo.write("a.yaml", app_yaml("web", replicas=0))
    repo.commit()
    proc = agent.run([sys.executable, "-m", "agent", "sync", "--kubeconfig", str(agent.kubeconfig), "--cache-dir",
                      str(agent.cache_dir), "--namespace", namespace], env={"GITOPS_AGENT_REPO": f"  {repo.path}\n"})
    assert proc.returncode == 0, proc.stderr
    assert all(objects.trio(namespace, "web"))


def test_an_empty_repository_is_named_as_such(agent, tmp_path, namespace):
    import subprocess

    empty = tmp_path / "empty"
    subprocess.run(["git", "init", "-q", "-b", "main", str(empty)], check=True)
    proc = agent.sync(empty, "--namespace", namespace)
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[-1] == (
        f"error: fetching {empty} failed: the repository's HEAD names no branch that exists (an empty repository "
        "with no commit, or its default branch was deleted); push a commit, or set its default branch (fatal: "
        "couldn't find remote ref HEAD); nothing was changed or pruned")
