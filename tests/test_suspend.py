"""Suspend and hot-fix against the real control plane: ``spec.suspend`` in Git and on a
hand-applied Application, and the annotation ``heumsi.github.io/reconcile: disabled`` on a live
Application and on one child. Hand edits survive, nothing is pruned, status says Suspended,
``kubectl wait --for=condition=Ready`` times out, the pass after sends no write, and taking the
switch away converges everything."""

from __future__ import annotations

import re

import pytest

from tests.support import api_writes, app_yaml, new_writes, wait_for
from tests.test_drift import agent_events, settled
from tests.test_health import conditions, wait_ready

pytestmark = pytest.mark.usefixtures("crd")

RECONCILE = "heumsi.github.io/reconcile"


def suspended_yaml(name: str, image: str = "nginx:1.27", value: str = "true") -> str:
    return app_yaml(name, image=image) + f"  suspend: {value}\n"


def sync(agent, repo, namespace, code=0):
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == code, proc.stdout + proc.stderr
    return proc


def image(objects, namespace, name="web"):
    return objects.deployment(namespace, name)["spec"]["template"]["spec"]["containers"][0]["image"]


def assert_quiet_pass(agent, repo, namespace, objects, cluster, last_line: str):
    """The next pass sends no write at all (objects, the Application's status, Events), counted
    by the API server itself; the Deployment controller's own status writes are not the agent's."""
    settled(objects, namespace)
    events = len(agent_events(objects, namespace))
    before = api_writes(cluster)
    proc = agent.sync(repo.path, "--namespace", namespace, "--exit-code")
    after = api_writes(cluster)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == last_line
    writes = {k: v for k, v in new_writes(before, after).items()
              if k != ("PUT", "deployments", "status") and k[1] != "events"}
    assert writes == {}, f"the pass wrote: {writes}"
    assert len(agent_events(objects, namespace)) == events


def test_spec_suspend_in_git_leaves_the_children_as_they_are_until_it_is_false(
        agent, repo, namespace, objects, cluster):
    repo.write("web.yaml", app_yaml("web", image="nginx:1.27"))
    synced_at = repo.commit()
    sync(agent, repo, namespace)
    settled(objects, namespace)
    # an incident: a person hot-fixes the image and scales; Git suspends and moves on meanwhile
    cluster.kubectl("-n", namespace, "set", "image", "deployment/web", "web=nginx:hotfix")
    cluster.kubectl("-n", namespace, "scale", "deployment/web", "--replicas=2")
    cluster.kubectl("-n", namespace, "delete", "service", "web", "--wait=true")
    repo.write("web.yaml", suspended_yaml("web", image="nginx:1.28"))
    head = repo.commit("suspend web")
    proc = sync(agent, repo, namespace)
    assert f"Application/{namespace}/web configured" in proc.stdout
    assert f"Deployment/{namespace}/web suspended (not applied: its Application is suspended (spec.suspend: " \
           "true))" in proc.stdout
    assert f"Service/{namespace}/web suspended" in proc.stdout
    assert proc.stdout.splitlines()[-1] == ("sync succeeded: 0 created, 1 configured, 0 unchanged, 0 pruned, "
                                            "0 failed, 2 suspended")
    app = objects.app(namespace, "web")
    assert app["spec"] == {"image": "nginx:1.28", "replicas": 1, "port": 80, "suspend": True}  # recorded live
    assert image(objects, namespace) == "nginx:hotfix"  # the hand edit survives
    assert objects.deployment(namespace, "web")["spec"]["replicas"] == 2
    assert objects.service(namespace, "web") is None  # not recreated
    status = app["status"]
    assert status["suspended"] is True and status["health"]["status"] == "Suspended"
    assert (status["lastSyncedCommit"], status["lastAttemptedCommit"]) == (synced_at, head)
    found = conditions(app)
    assert set(found) == {"Ready", "Synced"}
    assert (found["Ready"]["status"], found["Ready"]["reason"]) == ("False", "Suspended")
    assert "spec.suspend" in found["Ready"]["message"] and found["Synced"]["reason"] == "Suspended"
    proc = wait_ready(cluster, namespace, "web", timeout="5s")
    assert proc.returncode != 0 and "timed out" in proc.stderr
    table = cluster.kubectl("-n", namespace, "get", "application", "web").stdout.split("\n")
    assert table[1].split()[6:8] == ["Suspended", "Suspended"]
    assert_quiet_pass(agent, repo, namespace, objects, cluster,
                      "sync succeeded: 0 created, 0 configured, 1 unchanged, 0 pruned, 0 failed, 2 suspended")
    assert image(objects, namespace) == "nginx:hotfix"
    # Git sets it back to false: one pass converges everything
    repo.write("web.yaml", suspended_yaml("web", image="nginx:1.28", value="false"))
    head = repo.commit("resume web")
    proc = sync(agent, repo, namespace)
    assert f"Service/{namespace}/web created" in proc.stdout and f"Deployment/{namespace}/web configured" in proc.stdout
    assert image(objects, namespace) == "nginx:1.28" and objects.deployment(namespace, "web")["spec"]["replicas"] == 1
    assert objects.service(namespace, "web")["spec"]["ports"][0]["port"] == 80
    status = objects.app(namespace, "web")["status"]
    assert "suspended" not in status and status["lastSyncedCommit"] == head
    assert conditions(objects.app(namespace, "web"))["Synced"]["status"] == "True"
    settled(objects, namespace)
    sync(agent, repo, namespace)
    assert wait_ready(cluster, namespace, "web").returncode == 0


def test_a_suspended_application_that_leaves_git_is_kept(agent, repo, namespace, objects, cluster):
    repo.write("web.yaml", suspended_yaml("web"))
    repo.write("other.yaml", app_yaml("other"))
    repo.commit()
    proc = sync(agent, repo, namespace)
    # created suspended: the Application is applied, its children are never made
    assert f"Application/{namespace}/web created" in proc.stdout
    assert objects.deployment(namespace, "web") is None and objects.service(namespace, "web") is None
    assert objects.app(namespace, "web")["status"]["health"]["status"] == "Suspended"
    repo.remove("web.yaml")
    head = repo.commit("remove web")
    proc = sync(agent, repo, namespace)
    assert f"Application/{namespace}/web kept (not in Git; it is suspended (spec.suspend: true))" in proc.stdout
    app = objects.app(namespace, "web")
    assert app is not None and app["status"]["suspended"] is True
    synced = conditions(app)["Synced"]
    assert (synced["status"], synced["reason"]) == ("False", "Suspended")
    assert synced["message"].startswith(f"no longer in Git at commit {head}; kept because it is suspended")
    assert "Stalled" not in conditions(app)
    # resumed by hand while out of Git: the next pass prunes it as usual
    cluster.kubectl("-n", namespace, "patch", "application", "web", "--type=merge", "-p", '{"spec":{"suspend":false}}')
    proc = sync(agent, repo, namespace)
    assert f"Application/{namespace}/web pruned" in proc.stdout and objects.app(namespace, "web") is None


def test_spec_suspend_on_a_hand_applied_application(agent, repo, namespace, objects, cluster):
    repo.write("other.yaml", app_yaml("other"))
    repo.commit()
    cluster.kubectl("-n", namespace, "apply", "-f", "-", input=suspended_yaml("hand"))
    proc = sync(agent, repo, namespace)
    assert f"Deployment/{namespace}/hand suspended" in proc.stdout
    assert objects.deployment(namespace, "hand") is None and objects.service(namespace, "hand") is None
    status = objects.app(namespace, "hand")["status"]
    assert status["suspended"] is True and "lastAttemptedCommit" not in status
    assert conditions(objects.app(namespace, "hand"))["Ready"]["reason"] == "Suspended"
    cluster.kubectl("-n", namespace, "patch", "application", "hand", "--type=merge", "-p", '{"spec":{"suspend":false}}')
    proc = sync(agent, repo, namespace)
    assert f"Deployment/{namespace}/hand created" in proc.stdout and objects.service(namespace, "hand") is not None
    assert "suspended" not in objects.app(namespace, "hand")["status"]


def test_the_annotation_on_the_application_keeps_it_and_its_children_as_they_are(
        agent, repo, namespace, objects, cluster):
    repo.write("web.yaml", app_yaml("web", image="nginx:1.27"))
    repo.write("other.yaml", app_yaml("other"))
    repo.commit()
    sync(agent, repo, namespace)
    settled(objects, namespace)
    cluster.kubectl("-n", namespace, "annotate", "application", "web", f"{RECONCILE}=disabled")
    cluster.kubectl("-n", namespace, "patch", "application", "web", "--type=merge", "-p", '{"spec":{"replicas":2}}')
    cluster.kubectl("-n", namespace, "set", "image", "deployment/web", "web=nginx:hotfix")
    cluster.kubectl("-n", namespace, "patch", "service/web", "--type=merge", "-p", '{"spec":{"selector":{"x":"y"}}}')
    repo.write("web.yaml", app_yaml("web", image="nginx:1.28"))
    repo.commit("new image")
    for _ in range(3):
        proc = sync(agent, repo, namespace)
        assert f"Application/{namespace}/web suspended (suspended by {RECONCILE}: disabled on the Application" \
               in proc.stdout
        app = objects.app(namespace, "web")
        assert app["spec"] == {"image": "nginx:1.27", "replicas": 2, "port": 80}  # the hand edit survives
        assert app["metadata"]["annotations"][RECONCILE] == "disabled"
        assert image(objects, namespace) == "nginx:hotfix" and objects.deployment(namespace, "web")["spec"]["replicas"] == 1
        assert objects.service(namespace, "web")["spec"]["selector"]["x"] == "y"
    found = conditions(objects.app(namespace, "web"))
    assert (found["Ready"]["status"], found["Ready"]["reason"]) == ("False", "Suspended")
    assert f"{RECONCILE}: disabled on the Application" in found["Ready"]["message"] and "Stalled" not in found
    assert objects.app(namespace, "web")["status"]["suspended"] is True
    assert wait_ready(cluster, namespace, "web", timeout="5s").returncode != 0
    assert_quiet_pass(agent, repo, namespace, objects, cluster,
                      "sync succeeded: 0 created, 0 configured, 3 unchanged, 0 pruned, 0 failed, 3 suspended")
    # removed from Git while annotated: kept, children too
    repo.remove("web.yaml")
    repo.commit("remove web")
    proc = sync(agent, repo, namespace)
    assert f"Application/{namespace}/web kept (not in Git; it is suspended ({RECONCILE}: disabled on the " \
           "Application))" in proc.stdout
    assert all(objects.trio(namespace, "web")) and not re.search(r"^  \S+ pruned", proc.stdout, re.M)
    assert image(objects, namespace) == "nginx:hotfix"
    # the annotation taken off: the next pass prunes it as usual
    cluster.kubectl("-n", namespace, "annotate", "application", "web", f"{RECONCILE}-")
    sync(agent, repo, namespace)
    wait_for(lambda: objects.trio(namespace, "web") == (None, None, None), what="web and its children to be pruned")


def test_the_annotation_on_one_child_keeps_that_child_while_the_rest_syncs(agent, repo, namespace, objects, cluster):
    repo.write("web.yaml", app_yaml("web", image="nginx:1.27"))
    repo.write("other.yaml", app_yaml("other"))
    repo.commit()
    sync(agent, repo, namespace)
    settled(objects, namespace)
    cluster.kubectl("-n", namespace, "annotate", "deployment", "web", f"{RECONCILE}=disabled")
    cluster.kubectl("-n", namespace, "set", "image", "deployment/web", "web=nginx:hotfix")
    cluster.kubectl("-n", namespace, "patch", "service/web", "--type=merge",
                    "-p", '{"spec":{"ports":[{"name":"http","port":8080,"targetPort":80}]}}')
    proc = sync(agent, repo, namespace)
    assert f"Deployment/{namespace}/web suspended (not applied, corrected, recreated or pruned: " \
           f"Deployment/{namespace}/web has {RECONCILE}: disabled)" in proc.stdout
    assert f"Service/{namespace}/web configured" in proc.stdout
    deployment = objects.deployment(namespace, "web")
    assert image(objects, namespace) == "nginx:hotfix" and deployment["metadata"]["annotations"][RECONCILE] == "disabled"
    assert [p["port"] for p in objects.service(namespace, "web")["spec"]["ports"]] == [80]  # the sibling is corrected
    app = objects.app(namespace, "web")
    found = conditions(app)
    assert (found["Ready"]["status"], found["Ready"]["reason"]) == ("False", "Suspended")
    assert f"Deployment/{namespace}/web has {RECONCILE}: disabled" in found["Ready"]["message"]
    assert "suspended" not in app["status"] and app["status"]["health"]["status"] == "Suspended"
    assert wait_ready(cluster, namespace, "web", timeout="5s").returncode != 0
    assert_quiet_pass(agent, repo, namespace, objects, cluster,
                      "sync succeeded: 0 created, 0 configured, 5 unchanged, 0 pruned, 0 failed, 1 suspended")
    assert objects.deployment(namespace, "web")["metadata"]["annotations"][RECONCILE] == "disabled"
    # the annotation taken off: the next pass undoes the hot-fix
    cluster.kubectl("-n", namespace, "annotate", "deployment", "web", f"{RECONCILE}-")
    proc = sync(agent, repo, namespace)
    assert f"Deployment/{namespace}/web configured" in proc.stdout and image(objects, namespace) == "nginx:1.27"
    assert "Suspended" not in {c["reason"] for c in objects.app(namespace, "web")["status"]["conditions"]}
    # an annotated child whose Application leaves Git is kept (orphaned, as with heumsi.github.io/prune)
    cluster.kubectl("-n", namespace, "annotate", "deployment", "web", f"{RECONCILE}=disabled")
    repo.remove("web.yaml")
    repo.commit("remove web")
    proc = sync(agent, repo, namespace)
    assert f"Deployment/{namespace}/web kept (not in Git; {RECONCILE}: disabled)" in proc.stdout
    assert f"Application/{namespace}/web pruned" in proc.stdout
    wait_for(lambda: not objects.deployment(namespace, "web")["metadata"].get("ownerReferences"),
             what="the kept Deployment to be orphaned")


def test_the_annotation_written_in_git_suspends_like_spec_suspend(agent, repo, namespace, objects, cluster):
    repo.write("web.yaml", app_yaml("web", image="nginx:1.27"))
    repo.commit()
    sync(agent, repo, namespace)
    settled(objects, namespace)
    cluster.kubectl("-n", namespace, "set", "image", "deployment/web", "web=nginx:hotfix")
    annotated = app_yaml("web", image="nginx:1.28").replace("metadata:\n", f"metadata:\n  annotations:\n"
                                                                          f"    {RECONCILE}: disabled\n")
    repo.write("web.yaml", annotated)
    repo.commit("disable in Git")
    proc = sync(agent, repo, namespace)
    assert f"Application/{namespace}/web configured" in proc.stdout  # applied: the cluster records it
    assert f"Deployment/{namespace}/web suspended (not applied: its Application is suspended ({RECONCILE}: " \
           "disabled in Git))" in proc.stdout
    app = objects.app(namespace, "web")
    assert app["spec"]["image"] == "nginx:1.28" and app["metadata"]["annotations"][RECONCILE] == "disabled"
    assert image(objects, namespace) == "nginx:hotfix" and app["status"]["suspended"] is True
    assert_quiet_pass(agent, repo, namespace, objects, cluster,
                      "sync succeeded: 0 created, 0 configured, 1 unchanged, 0 pruned, 0 failed, 2 suspended")
    # removed from Git: the agent's apply removes it (it owns it), and the same pass resumes
    repo.write("web.yaml", app_yaml("web", image="nginx:1.28"))
    repo.commit("enable in Git")
    proc = sync(agent, repo, namespace)
    assert RECONCILE not in (objects.app(namespace, "web")["metadata"].get("annotations") or {})
    assert image(objects, namespace) == "nginx:1.28" and "suspended" not in proc.stdout
