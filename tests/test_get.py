"""``gitops-agent get`` against the real control plane: kubectl's spelling and behaviour."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import yaml

from tests.inspect_support import crd_with_history, patch_status  # noqa: F401 (a fixture)
from tests.support import app_yaml

CHANGED = "9a1b4c6d8e7f001122334455667788995f0c2e3d"


def get(agent, *args, kubeconfig=None):
    return agent.run([sys.executable, "-m", "agent", "get", "--kubeconfig", str(kubeconfig or agent.kubeconfig),
                      *args])


def synced(agent, repo, namespace):
    repo.write("apps.yaml", app_yaml("web", replicas=2) + "---\n" + app_yaml("api").replace(
        "metadata:\n  name: api\n", "metadata:\n  name: api\n  labels:\n    tier: backend\n"))
    head = repo.commit("two apps")
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 0, proc.stderr
    return head


def test_the_table_lists_the_namespaces_applications(agent, repo, namespace, cluster, crd_with_history):
    head = synced(agent, repo, namespace)
    patch_status(cluster, namespace, "web", {"lastChangedCommit": CHANGED})
    proc = get(agent, "-n", namespace)
    assert proc.returncode == 0 and proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("NAME   HEALTH ") and lines[0].split()[-3:] == ["AGE", "OBSERVED", "MESSAGE"]
    assert [line.split()[0] for line in lines[1:]] == ["api", "web"]
    web = lines[2].split()
    assert web[4:8] == [head[:8], CHANGED[:8], "False", web[7]] and web[7].endswith("s")
    assert lines[1].split()[5] == head[:8]  # api: changed by the commit that created it
    assert get(agent, "-n", namespace, "--no-headers").stdout.splitlines()[0].split()[0] == "api"


def test_wide_all_namespaces_and_a_selector(agent, repo, namespace, crd_with_history):
    synced(agent, repo, namespace)
    proc = get(agent, "-A", "-o", "wide")
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:2] == ["NAMESPACE", "NAME"]
    assert lines[0].split()[-6:] == ["SOURCE", "IMAGE", "REPLICAS", "SCHEDULES", "TASKS", "MESSAGE"]
    web = next(line.split() for line in lines if line.split()[:2] == [namespace, "web"])
    assert web[10:14] == ["ago", "by", "sync", "--once"]  # OBSERVED: the age of status.observedAt, and by what
    assert web[14:19] == ["apps.yaml:1", "nginx:latest", web[16], "-", "-"] and web[16].endswith("/2")
    proc = get(agent, "-n", namespace, "-l", "tier=backend", "-o", "name")
    assert proc.stdout == "application.heumsi.github.io/api\n"


def test_json_and_yaml_print_a_v1_list_of_the_applications(agent, repo, namespace, crd_with_history):
    synced(agent, repo, namespace)
    doc = json.loads(get(agent, "-n", namespace, "-o", "json").stdout)
    assert (doc["apiVersion"], doc["kind"]) == ("v1", "List")
    assert [i["metadata"]["name"] for i in doc["items"]] == ["api", "web"]
    assert all(i["kind"] == "Application" and "managedFields" not in i["metadata"] for i in doc["items"])
    assert yaml.safe_load(get(agent, "-n", namespace, "-o", "yaml").stdout)["items"][1]["spec"]["replicas"] == 2
    one = json.loads(get(agent, "web", "-n", namespace, "-o", "json").stdout)
    assert (one["kind"], one["metadata"]["name"]) == ("Application", "web")


def test_not_found_and_nothing_found_as_kubectl_says_them(agent, namespace, crd_with_history):
    proc = get(agent, "nope", "-n", namespace)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == 'Error from server (NotFound): applications.heumsi.github.io "nope" not found\n'
    proc = get(agent, "-n", namespace)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", f"No resources found in {namespace} namespace.\n")
    proc = get(agent, "web", "-A")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert "a resource cannot be retrieved by name across all namespaces" in proc.stderr


def test_the_namespace_defaults_to_the_contexts(agent, repo, namespace, tmp_path, crd_with_history):
    synced(agent, repo, namespace)
    config = json.loads(agent.kubeconfig.read_text())
    config["contexts"][0]["context"]["namespace"] = namespace
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps(config))
    proc = get(agent, "-o", "name", kubeconfig=kubeconfig)
    assert proc.stdout.splitlines() == ["application.heumsi.github.io/api", "application.heumsi.github.io/web"]


def test_watch_prints_changed_rows_until_sigterm(agent, repo, namespace, cluster, crd_with_history):
    synced(agent, repo, namespace)
    cmd = [sys.executable, "-m", "agent", "get", "-w", "-n", namespace, "--kubeconfig", str(agent.kubeconfig)]
    proc = subprocess.Popen(cmd, cwd=agent.cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = [proc.stdout.readline() for _ in range(3)]
        assert [line.split()[0] for line in first] == ["NAME", "api", "web"]
        patch_status(cluster, namespace, "web", {"lastChangedCommit": CHANGED})
        changed = proc.stdout.readline().split()
        assert changed[0] == "web" and changed[5] == CHANGED[:8]
        time.sleep(1)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)  # it ends on the signal (a watch never ends by itself)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert out == "" and "Traceback" not in err
