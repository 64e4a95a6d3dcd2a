"""``gitops-agent explain`` against the real control plane: the verdict, Git, children, pods
(failing by kwok's test stages or the scheduler), drift, Events, history and exit codes."""

from __future__ import annotations

import datetime
import json
import sys

import yaml

from tests.cluster import FAIL_LABEL
from tests.inspect_support import crd_with_history, patch_status  # noqa: F401 (a fixture)
from tests.support import app_yaml, wait_for
from tests.test_backoff import refuse_services
from tests.test_run import remote, start_agent  # noqa: F401 (fixtures)


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
    assert any(line.startswith("  Deployment/pull  Progressing  Available: 0/1  (waiting for rollout to finish: 0 of 1 "
                               'replicas available; ImagePullBackOff: container pull: Back-off pulling image '
                               '"registry.invalid/x:1" (Degraded at ') for line in said["pull"])  # within its grace
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


REFUSED_REGISTRY = "refused.example/"
REFUSAL = "spec.template.spec.containers[0].image: images from refused.example are not allowed here"


def refuse_registry(cluster, namespace: str) -> str:
    """A ValidatingAdmissionPolicy (and its binding) that makes the API server refuse, with 422
    Invalid and ``REFUSAL`` as its message, any Deployment in ``namespace`` whose image comes
    from ``REFUSED_REGISTRY``, as a cluster's admission policy does; returns its name (both
    objects are cluster-scoped: delete them after the test). Waits until the policy is in force
    (a server-side dry run is refused)."""
    name = f"refuse-{namespace}"
    policy = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
              "metadata": {"name": name},
              "spec": {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": [{
                  "apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                  "resources": ["deployments"]}]},
                  "validations": [{"expression": "object.spec.template.spec.containers.all(c, "
                                                 f"!c.image.startsWith('{REFUSED_REGISTRY}'))",
                                   "message": REFUSAL, "reason": "Invalid"}]}}
    binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
               "metadata": {"name": name},
               "spec": {"policyName": name, "validationActions": ["Deny"], "matchResources": {
                   "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}}}}
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([policy, binding]))

    def refused() -> bool:
        proc = cluster.kubectl("-n", namespace, "create", "deployment", "probe", f"--image={REFUSED_REGISTRY}x:1",
                               "--dry-run=server", "-o", "name", check=False)
        return proc.returncode != 0 and REFUSAL in proc.stderr
    wait_for(refused, timeout=60, interval=1, what="the admission policy to be in force")
    return name


def test_each_verdict_that_needs_a_person_or_a_wait(agent, start_agent, remote, repo, namespaces, cluster, objects,
                                                     crd_with_history):
    """One ``run`` over seven Applications, each stuck its own real way, then ``explain`` of each:
    its first line and exit 1. Degraded: pods kwok keeps crash-looping, past a 1 s
    ``progressDeadlineSeconds``; Suspended: ``spec.suspend`` in Git; In backoff: a quota refuses its
    Service (403, retried only after ``--min-retry-delay``); Blocked: removed from Git in a commit
    whose other file is refused (a pass with a refused file prunes nothing); Apply failed at FIELD: an
    admission policy refuses its Deployment with 422 naming the field; Ownership conflict: a
    hand-made Deployment holds its child's name; Invalid in Git: its document refused by a later
    commit (Git has it, so it is not "Not in Git")."""
    main, quota = namespaces(), namespaces()
    refuse_services(cluster, quota)
    policy = refuse_registry(cluster, main)
    try:
        cluster.kubectl("-n", main, "create", "deployment", "taken", "--image=nginx:1.27")
        repo.write("stalled.yaml", failing("stalled", podLabels={FAIL_LABEL: "crash-loop"},
                                           rollout={"progressDeadlineSeconds": 1}))
        repo.write("paused.yaml", failing("paused", suspend=True))
        repo.write("refused.yaml", failing("refused", image=REFUSED_REGISTRY + "web:1"))
        repo.write("taken.yaml", app_yaml("taken"))
        repo.write("gone.yaml", app_yaml("gone"))
        repo.write("retry.yaml", app_yaml("retry", namespace=quota))
        repo.write("invalid.yaml", app_yaml("invalid"))
        first = remote.push()
        start_agent(remote.url, "--namespace", main, "--interval", "2", "--min-retry-delay", "600",
                    "--max-retry-delay", "600")
        wait_for(lambda: (objects.app(main, "gone") or {}).get("status", {}).get("lastSyncedCommit") == first,
                 timeout=60, what="the first pass")
        repo.remove("gone.yaml")
        repo.write("broken.yaml", failing("broken", port=0))
        repo.write("invalid.yaml", app_yaml("invalid", replicas=-1))
        remote.push()
        want = {(main, "stalled"): "Degraded: ",
                (main, "paused"): "Suspended",
                (quota, "retry"): "In backoff until ",
                (main, "gone"): "Blocked: pruning held back",
                (main, "refused"): "Apply failed at spec.template.spec.containers[0].image",
                (main, "taken"): "Ownership conflict",
                (main, "invalid"): "Invalid in Git: invalid.yaml:"}
        said: dict[str, tuple[int, str]] = {}  # name -> (exit code, first line)
        for (namespace, name), start in want.items():
            def verdict_is_there(namespace=namespace, name=name, start=start) -> bool:
                proc = explain(agent, name, namespace)
                said[name] = (proc.returncode, (proc.stdout.splitlines() or [""])[0])
                return said[name][1].startswith(start)
            try:
                wait_for(verdict_is_there, timeout=90, interval=1, what=f"{name}'s verdict")
            except AssertionError:
                pass  # shown below, with the others
        assert {name: (code, line.startswith(want[(ns, name)])) for (ns, name) in want
                for code, line in [said[name]]} == {name: (1, True) for _, name in want}, said
        assert "exceeded its progress deadline" in said["stalled"][1], said["stalled"]
        assert "spec.replicas" in said["invalid"][1], said["invalid"]
        until = said["retry"][1].removeprefix("In backoff until ")
        wait = (datetime.datetime.fromisoformat(until) - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
        assert 400 < wait <= 600, said["retry"]
    finally:
        cluster.kubectl("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", policy, check=False)


def test_a_task_running_then_failed_is_progressing_then_degraded_with_its_job_and_pod(agent, repo, namespace, objects,
                                                                                      crd_with_history):
    """Issue 43: ``explain`` and ``get -o wide`` tell a task: first the gate (Progressing, the
    rollout held), then its failed Job (Degraded, naming the Job) and its pod's exit code, which
    never carries the Application's label and is read apart."""
    from kubernetes import client

    repo.write("web.yaml", failing("web", podLabels={FAIL_LABEL: "job-fail"},
                                   tasks={"migrate": {"command": ["/migrate"], "retries": 0}}))
    repo.commit("web with a migration")
    sync(agent, repo, namespace)
    proc = explain(agent, "web", namespace, "--repo", str(repo.path))
    lines = proc.stdout.splitlines()
    assert proc.returncode == 1 and lines[0].startswith("Progressing: waiting for task migrate (Job web-migrate-")
    assert lines[0].endswith(") to complete before the rollout"), lines[0]
    assert any(line.startswith("  migrate  Pending  Job/web-migrate-") or line.startswith("  migrate  Running  Job/")
               for line in lines), lines
    batch = client.BatchV1Api(objects.api_client)

    def failed() -> bool:
        return any(c.type == "Failed" and c.status == "True" for j in batch.list_namespaced_job(namespace).items
                   for c in (j.status.conditions or []))
    wait_for(failed, what="the migration's Job to fail")
    agent.sync(repo.path, "--namespace", namespace)  # records the failure: TaskFailed
    proc = explain(agent, "web", namespace, "--repo", str(repo.path))
    lines = proc.stdout.splitlines()
    assert proc.returncode == 1 and lines[0].startswith("Degraded: task migrate failed (Job web-migrate-"), lines[0]
    assert "BackoffLimitExceeded" in lines[0]
    assert any(line.startswith("  migrate  Failed  Job/web-migrate-") for line in lines), lines
    assert any(line.startswith("  web-migrate-") and line.endswith("  Failed  migrate: Error (exit code 1)")
               for line in lines), lines
    wide = agent.run([sys.executable, "-m", "agent", "get", "-n", namespace, "-o", "wide", "--kubeconfig",
                      str(agent.kubeconfig)]).stdout.splitlines()
    assert wide[0].split()[-3:] == ["SCHEDULES", "TASKS", "MESSAGE"]
    assert "   migrate failed   task migrate failed (Job web-migrate-" in next(w for w in wide if w.startswith("web "))
