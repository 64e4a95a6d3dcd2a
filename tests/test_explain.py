"""``gitops-agent explain`` against the real control plane: the verdict, Git, children, pods
(failing by kwok's test stages or the scheduler), drift, Events, history and exit codes."""

from __future__ import annotations

import json
import sys

import yaml

from tests.cluster import FAIL_LABEL
from tests.inspect_support import crd_with_history, patch_status  # noqa: F401 (a fixture)
from tests.support import app_yaml, wait_for


def explain(agent, name, namespace, *args):
    return agent.run([sys.executable, "-m", "agent", "explain", name, "-n", namespace, "--kubeconfig",
                      str(agent.kubeconfig), "--cache-dir", str(agent.cache_dir), *args])


def sync(agent, repo, namespace, *args):
    proc = agent.sync(repo.path, "--namespace", namespace, *args)
    assert proc.returncode == 0, proc.stderr
    return proc


def failing(name: str, **spec) -> str:
    doc = yaml.safe_load(app_yaml(name))
    doc["spec"].update(spec)
    return yaml.safe_dump(doc, sort_keys=False)


def test_a_healthy_application_is_synced_with_its_commit_and_change(agent, repo, namespace, objects,
                                                                   crd_with_history):
    repo.write("apps.yaml", app_yaml("other") + "---\n" + app_yaml("web", replicas=2))
    head = repo.commit("add web")
    sync(agent, repo, namespace)
    wait_for(lambda: (objects.deployment(namespace, "web")["status"].get("availableReplicas") or 0) == 2,
             what="both pods to be available")
    sync(agent, repo, namespace)
    proc = explain(agent, "web", namespace, "--repo", str(repo.path))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "Synced and healthy"
    assert lines[2] == f"Application  {namespace}/web"
    assert lines[3].startswith("Source       apps.yaml:10  repository ")
    assert lines[4].startswith(f"Synced       {head[:8]}  ") and lines[4].endswith("  Dev <dev@example.com>  add web")
    assert any(line.startswith("  Deployment/web  Healthy  Deployment is available. Replicas: 2") for line in lines)
    assert f"Change {head[:8]} to apps.yaml:" in lines and "  +  name: web" in lines
    doc = json.loads(explain(agent, "web", namespace, "-o", "json").stdout)  # the repository from its annotation
    assert doc["verdict"] == {"state": "Synced", "text": "Synced and healthy", "ok": True}
    assert doc["commits"]["synced"] == {"sha": head, "short": head[:8], "author": "Dev <dev@example.com>",
                                        "date": doc["commits"]["synced"]["date"], "subject": "add web"}
    assert doc["git"]["available"] and doc["source"]["line"] == 10 and doc["drift"] == []


def test_pods_that_cannot_pull_crash_or_be_scheduled_say_why(agent, repo, namespace, objects, crd_with_history):
    repo.write("pull.yaml", failing("pull", podLabels={FAIL_LABEL: "image-pull"}, image="registry.invalid/x:1"))
    repo.write("crash.yaml", failing("crash", podLabels={FAIL_LABEL: "crash-loop"}))
    repo.write("big.yaml", failing("big", resources={"requests": {"cpu": "100"}}))
    repo.commit("three that fail")
    sync(agent, repo, namespace)
    wait_for(lambda: all(objects.deployment(namespace, n)["status"].get("replicas") for n in ("pull", "crash", "big")),
             what="pods to be made")
    sync(agent, repo, namespace)
    said = {}
    for name in ("pull", "crash", "big"):
        proc = wait_for(lambda: (p := explain(agent, name, namespace, "--repo", str(repo.path))) and
                        "Pods not ready:" in p.stdout and p, what=f"{name}'s pod reason")
        assert proc.returncode == 1 and proc.stdout.splitlines()[0] == "Progressing"
        said[name] = proc.stdout.splitlines()
    assert any(line.startswith("  pull-") and line.endswith(
        'Pending  pull: ImagePullBackOff: Back-off pulling image "registry.invalid/x:1"') for line in said["pull"])
    assert any(line.startswith("  crash-") and "Running  crash: CrashLoopBackOff: back-off 2m40s restarting failed "
               "container=crash pod=crash-" in line and line.endswith("; restarted 5 times") for line in said["crash"])
    assert any(line.startswith("  big-") and "Pending  Unschedulable: 0/1 nodes are available: 1 Insufficient cpu."
               in line for line in said["big"])
    assert "  Deployment/pull  Progressing  Available: 0/1  (waiting for rollout to finish: 0 of 1 replicas " \
           "available)" in said["pull"]
    assert any("Warning  FailedScheduling  Pod/big-" in line for line in said["big"])


def test_drift_names_the_field_and_who_changed_it(agent, repo, namespace, cluster, crd_with_history):
    repo.write("web.yaml", app_yaml("web", image="nginx:1.27"))
    repo.commit()
    sync(agent, repo, namespace)
    cluster.kubectl("-n", namespace, "patch", "deployment", "web", "--type=json", "-p", json.dumps(
        [{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "nginx:by-hand"}]))
    proc = explain(agent, "web", namespace, "--repo", str(repo.path))
    assert "  Deployment/web spec.template.spec.containers[web].image: Git nginx:1.27, live nginx:by-hand " \
           "(changed by kubectl-patch)" in proc.stdout.splitlines()
    assert proc.returncode == 1


def test_a_patched_application_drifts_from_its_spec_in_git(agent, repo, namespace, cluster, crd_with_history):
    """``kubectl patch app`` (Git says 1 replica): explain compares the live spec with Git's,
    names the manager, and says Drifted (exit 1) until the next pass puts it back."""
    repo.write("web.yaml", app_yaml("web"))
    repo.commit()
    sync(agent, repo, namespace)
    cluster.kubectl("-n", namespace, "patch", "applications.heumsi.github.io", "web", "--type=merge", "-p",
                    json.dumps({"spec": {"replicas": 4}}))
    proc = explain(agent, "web", namespace, "--repo", str(repo.path))
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("Drifted: ") and "differ" in lines[0] and "from Git" in lines[0], lines
    assert "  Application/web spec.replicas: Git 1, live 4 (changed by kubectl-patch)" in lines
    assert not any(line.startswith("  Deployment/web spec.replicas: Git 4") for line in lines)
    assert proc.returncode == 1


def test_history_and_the_last_changed_commit_from_status(agent, repo, namespace, cluster, crd_with_history):
    repo.write("web.yaml", app_yaml("web"))
    first = repo.commit("first")
    sync(agent, repo, namespace)
    entries = [{"digest": "sha256:" + "b" * 64, "revision": first, "firstSyncedAt": "2026-12-01T10:00:00Z",
                "lastSyncedAt": "2026-12-01T11:00:00Z", "passes": 7}]
    patch_status(cluster, namespace, "web", {"lastChangedCommit": first, "history": entries})
    doc = json.loads(explain(agent, "web", namespace, "-o", "json").stdout)
    assert doc["history"] == entries
    assert doc["commits"]["changed"]["subject"] == "first"
    lines = explain(agent, "web", namespace).stdout.splitlines()
    at = lines.index("History (newest first):")
    assert lines[at + 1].split() == ["REVISION", "FIRST", "SYNCED", "LAST", "SYNCED", "PASSES", "DIGEST"]
    assert lines[at + 2].split() == [first[:8], "2026-12-01T10:00:00Z", "2026-12-01T11:00:00Z", "7",
                                     "sha256:bbbbbbbbbbbb"]


def test_not_in_git_unreachable_git_and_bad_input(agent, repo, namespace, crd_with_history):
    repo.write("web.yaml", app_yaml("web"))
    repo.write("keep.yaml", app_yaml("keep"))
    repo.commit()
    sync(agent, repo, namespace)
    repo.remove("web.yaml")
    repo.commit("drop web")
    sync(agent, repo, namespace, "--no-prune")
    proc = explain(agent, "web", namespace)
    assert (proc.returncode, proc.stdout.splitlines()[0]) == (1, "Not in Git")
    proc = explain(agent, "keep", namespace, "--repo", str(repo.path / "missing"))
    assert proc.returncode == (0 if proc.stdout.startswith("Synced and healthy\n") else 1)
    assert any(line.startswith("Git          not read: fetching ") for line in proc.stdout.splitlines())
    proc = explain(agent, "nope", namespace)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == 'Error from server (NotFound): applications.heumsi.github.io "nope" not found\n'
    proc = explain(agent, "Bad_Name", namespace)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and proc.stdout == ""
