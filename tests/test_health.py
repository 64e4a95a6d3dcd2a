"""Health and kstatus conditions against the real control plane, read the way tools read them:
``kubectl wait --for=condition=...`` and ``kubectl get app``.

A rollout that cannot finish: the fake node has 64 CPUs allocatable and kwok marks a pod ready
only once it is scheduled, so a LimitRange in the namespace that gives every container a CPU
request of 100 (the rendered Deployment sets none, so the API server's LimitRanger fills it in)
keeps every pod Pending and the Deployment short of its available replicas. It is local to the
test's namespace and needs no controller, unlike a ResourceQuota (this control plane runs no
quota controller).
"""

from __future__ import annotations

import pytest

from tests.support import app_yaml, wait_for

pytestmark = pytest.mark.usefixtures("crd")

TOO_BIG = """\
apiVersion: v1
kind: LimitRange
metadata: {name: more-than-the-node-has}
spec:
  limits:
  - type: Container
    defaultRequest: {cpu: "100"}
    default: {cpu: "100"}
"""


def sync(agent, repo, namespace, code=0):
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == code, proc.stderr
    return proc


def wait_ready(cluster, namespace, name, timeout="20s", condition="Ready"):
    return cluster.kubectl("-n", namespace, "wait", f"--for=condition={condition}", f"--timeout={timeout}",
                           f"application/{name}", check=False, timeout=120)


def conditions(app):
    return {c["type"]: c for c in app["status"]["conditions"]}


def test_kubectl_wait_returns_for_a_synced_healthy_application(agent, repo, namespace, objects, cluster):
    repo.write("web.yaml", app_yaml("web", replicas=2))
    head = repo.commit()
    sync(agent, repo, namespace)
    app = objects.app(namespace, "web")
    assert conditions(app)["Ready"]["status"] == "False"  # pods not ready yet at the first pass
    wait_for(lambda: (objects.deployment(namespace, "web")["status"].get("availableReplicas") or 0) == 2,
             what="both pods to be available")
    sync(agent, repo, namespace)
    proc = wait_ready(cluster, namespace, "web")
    assert proc.returncode == 0, proc.stderr
    app = objects.app(namespace, "web")
    assert app["status"]["health"] == {"status": "Healthy", "message": "all children healthy"}
    assert app["status"]["lastSyncedCommit"] == head
    found = conditions(app)
    assert set(found) == {"Ready", "Synced"}  # kstatus: Reconciling and Stalled removed when not applicable
    assert (found["Ready"]["status"], found["Ready"]["reason"]) == ("True", "Healthy")
    assert found["Ready"]["observedGeneration"] == app["metadata"]["generation"]
    table = cluster.kubectl("-n", namespace, "get", "application", "web").stdout.split("\n")
    assert table[0].split()[:8] == ["NAME", "IMAGE", "REPLICAS", "READY", "COMMIT", "CHANGED", "HEALTH", "STATUS"]
    assert table[1].split()[6:8] == ["Healthy", "Healthy"]


def test_kubectl_wait_times_out_while_the_rollout_cannot_finish(agent, repo, namespaces, objects, cluster):
    namespace = namespaces()
    cluster.kubectl("-n", namespace, "apply", "-f", "-", input=TOO_BIG)
    repo.write("web.yaml", app_yaml("web", replicas=2))
    repo.commit()
    sync(agent, repo, namespace)
    wait_for(lambda: (objects.deployment(namespace, "web")["status"].get("updatedReplicas") or 0) == 2,
             what="the controller to create both (unschedulable) pods")
    sync(agent, repo, namespace)
    app = objects.app(namespace, "web")
    health = app["status"]["health"]  # the pass read its pods: no node fits them (issue 44)
    assert health["status"] == "Progressing"
    assert health["message"].startswith("Deployment: waiting for rollout to finish: 0 of 2 replicas available; "
                                        "FailedScheduling: 0/1 nodes are available: 1 Insufficient "), health
    found = conditions(app)
    assert (found["Ready"]["status"], found["Ready"]["reason"]) == ("False", "Progressing")
    assert (found["Reconciling"]["status"], found["Reconciling"]["reason"]) == ("True", "Progressing")
    assert found["Synced"]["status"] == "True" and "Stalled" not in found
    proc = wait_ready(cluster, namespace, "web", timeout="3s")
    assert proc.returncode != 0 and "timed out" in proc.stderr
    assert wait_ready(cluster, namespace, "web", timeout="3s", condition="Reconciling").returncode == 0
    # scaled to zero in Git, nothing is left to wait for: Ready, Reconciling gone
    repo.write("web.yaml", app_yaml("web", replicas=0))
    repo.commit("scale to zero")
    sync(agent, repo, namespace)
    wait_for(lambda: objects.deployment(namespace, "web")["status"].get("replicas") in (0, None),
             what="the pending pods to go")
    sync(agent, repo, namespace)
    assert wait_ready(cluster, namespace, "web").returncode == 0
    assert set(conditions(objects.app(namespace, "web"))) == {"Ready", "Synced"}


def test_a_rollout_past_its_progress_deadline_is_degraded_and_stalled(agent, repo, namespaces, objects, cluster):
    """A real Deployment whose rollout cannot finish (pods that never schedule) and whose
    progress deadline has passed: the Deployment controller sets Progressing=False with reason
    ProgressDeadlineExceeded, the agent reports health Degraded, Ready False, Stalled True (as
    kstatus does), and kubectl wait for Ready times out while Stalled is met. The deadline is
    shortened by hand: progressDeadlineSeconds is a field the agent does not render, so its
    apply leaves it alone."""
    namespace = namespaces()
    cluster.kubectl("-n", namespace, "apply", "-f", "-", input=TOO_BIG)
    repo.write("web.yaml", app_yaml("web", replicas=1))
    repo.commit()
    sync(agent, repo, namespace)
    cluster.kubectl("-n", namespace, "patch", "deployment", "web", "--type=merge",
                    "-p", '{"spec": {"progressDeadlineSeconds": 1}}')

    def deadline_exceeded():
        found = {c["type"]: c for c in (objects.deployment(namespace, "web").get("status") or {}).get("conditions") or []}
        return found.get("Progressing", {}).get("reason") == "ProgressDeadlineExceeded"

    wait_for(deadline_exceeded, timeout=120, what="the Deployment controller to mark the rollout past its deadline")
    sync(agent, repo, namespace)
    app = objects.app(namespace, "web")
    assert app["status"]["health"]["status"] == "Degraded"
    found = conditions(app)
    assert (found["Ready"]["status"], found["Ready"]["reason"]) == ("False", "Degraded")
    assert (found["Stalled"]["status"], found["Stalled"]["reason"]) == ("True", "Degraded")
    assert found["Synced"]["status"] == "True" and "Reconciling" not in found
    assert objects.deployment(namespace, "web")["spec"]["progressDeadlineSeconds"] == 1
    assert wait_ready(cluster, namespace, "web", timeout="3s").returncode != 0
    assert wait_ready(cluster, namespace, "web", timeout="3s", condition="Stalled").returncode == 0


def test_a_hand_made_child_is_stalled_and_never_applied_over_even_with_the_agents_labels(
        agent, repo, namespace, objects, cluster):
    cluster.kubectl("-n", namespace, "create", "deployment", "web", "--image=nginx:1.27")  # selector app=web
    repo.write("web.yaml", app_yaml("web"))
    repo.commit()
    # someone else's Deployment under the child's name is never applied over: OwnershipConflict
    sync(agent, repo, namespace, code=2)
    assert wait_ready(cluster, namespace, "web", timeout="10s", condition="Stalled").returncode == 0
    found = conditions(objects.app(namespace, "web"))
    assert (found["Stalled"]["reason"], found["Ready"]["status"], found["Ready"]["reason"]) == \
        ("OwnershipConflict", "False", "OwnershipConflict")
    assert "exists and is controlled by nothing and was not made by the agent" in found["Stalled"]["message"]
    # with the agent's labels copied onto it, it is listed as a child, and still never applied over
    cluster.kubectl("-n", namespace, "label", "deployment", "web", "app.kubernetes.io/managed-by=gitops-agent")
    before = objects.deployment(namespace, "web")["metadata"]["resourceVersion"]
    sync(agent, repo, namespace, code=2)
    found = conditions(objects.app(namespace, "web"))
    assert (found["Stalled"]["reason"], found["Ready"]["status"], found["Ready"]["reason"]) == \
        ("OwnershipConflict", "False", "OwnershipConflict")
    assert "exists and is controlled by nothing and was not made by the agent" in found["Stalled"]["message"] and "Reconciling" not in found
    assert objects.deployment(namespace, "web")["metadata"]["resourceVersion"] == before
    assert "another Deployment of this name exists" in objects.app(namespace, "web")["status"]["health"]["message"]
    assert objects.deployment(namespace, "web")["spec"]["selector"] == {"matchLabels": {"app": "web"}}
    # the person deletes the foreign Deployment: the next pass creates the agent's, Stalled goes
    cluster.kubectl("-n", namespace, "delete", "deployment", "web", "--wait=true")
    sync(agent, repo, namespace)
    assert "Stalled" not in conditions(objects.app(namespace, "web"))


def test_invalid_manifest_is_stalled_and_a_fixed_commit_clears_it(agent, repo, namespace, objects, cluster):
    repo.write("web.yaml", app_yaml("web"))
    repo.commit()
    sync(agent, repo, namespace)
    repo.write("web.yaml", app_yaml("web", replicas=-1))
    repo.commit("break it")
    sync(agent, repo, namespace, code=2)
    found = conditions(objects.app(namespace, "web"))
    assert (found["Stalled"]["status"], found["Stalled"]["reason"]) == ("True", "InvalidManifest")
    assert found["Ready"]["status"] == "False" and found["Stalled"]["observedGeneration"] >= 1
    repo.write("web.yaml", app_yaml("web", replicas=1))
    repo.commit("fix it")
    sync(agent, repo, namespace)
    assert "Stalled" not in conditions(objects.app(namespace, "web"))


HOLD = "example.com/hold"


def test_a_child_and_an_application_held_in_deletion_are_progressing_not_ready(agent, repo, namespace, objects,
                                                                             cluster):
    """A finalizer keeps a deleted object with a deletionTimestamp: it is about to go, so its
    Application is Progressing and not Ready (gitops-engine's first rule), not Healthy."""
    repo.write("web.yaml", app_yaml("web", replicas=0))
    repo.commit()
    sync(agent, repo, namespace)
    sync(agent, repo, namespace)
    assert objects.app(namespace, "web")["status"]["health"]["status"] == "Healthy"
    held = []
    try:
        for kind in ("service", "application"):
            cluster.kubectl("-n", namespace, "patch", kind, "web", "--type=merge",
                            "-p", f'{{"metadata":{{"finalizers":["{HOLD}"]}}}}')
            held.append(kind)
            cluster.kubectl("-n", namespace, "delete", kind, "web", "--wait=false")
            sync(agent, repo, namespace)
            app = objects.app(namespace, "web")
            if kind == "application":
                assert app["metadata"].get("deletionTimestamp")  # held, and still applied over
            health = app["status"]["health"]
            subject = "Service: Service web" if kind == "service" else "Application web"
            assert health["status"] == "Progressing", health
            assert health["message"].startswith(f"{subject} is pending deletion (since "), health
            assert conditions(app)["Ready"]["status"] == "False"
            assert wait_ready(cluster, namespace, "web", timeout="2s").returncode != 0
    finally:
        for kind in held:  # let them go, or the namespace could never be deleted
            cluster.kubectl("-n", namespace, "patch", kind, "web", "--type=json",
                            "-p", '[{"op":"remove","path":"/metadata/finalizers"}]', check=False)
