"""The whole pass (``agent.engine.sync.run``) against the in-memory cluster: create, update,
unchanged, prune and the status it writes, from a real Git repository. The real-cluster suite
(tests/test_sync.py) asserts the same at the speed of a control plane."""

from __future__ import annotations

import re

import pytest

from agent.api.labels import CREATED_BY_AGENT
from agent.engine.report import CONFIGURED, CREATED, FAILED, KEPT, PRUNED, UNCHANGED
from agent.kube.cluster import ApiError
from tests.unit.engine.passes import NS, World, actions, app_yaml, conditions, image, rolled_out

TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


@pytest.fixture
def world(tmp_path):
    return World(tmp_path)


def trio_actions(name: str, app: str, deployment: str, service: str) -> list[tuple[str, str]]:
    return [(f"Application/{NS}/{name}", app), (f"Deployment/{NS}/{name}", deployment),
            (f"Service/{NS}/{name}", service)]


def test_a_first_pass_creates_the_namespace_the_applications_and_their_children(world):
    head = world.commit({"web.yaml": app_yaml("web"), "db.yaml": app_yaml("db", image="postgres:16", port=5432)})
    report = world.sync()
    assert (report.commit, report.errors, report.ok) == (head, [], True)
    assert actions(report) == [(f"Application/{NS}/db", CREATED), (f"Application/{NS}/web", CREATED),
                               (f"Deployment/{NS}/db", CREATED), (f"Service/{NS}/db", CREATED),
                               (f"Deployment/{NS}/web", CREATED), (f"Service/{NS}/web", CREATED)]
    assert world.kube.writes == [("create", f"Namespace/{NS}"),
                                 ("apply", f"Application/{NS}/db"), ("apply", f"Application/{NS}/web"),
                                 ("apply", f"Deployment/{NS}/db"), ("apply", f"Service/{NS}/db"),
                                 ("apply", f"Deployment/{NS}/web"), ("apply", f"Service/{NS}/web"),
                                 ("patch_status", f"Application/{NS}/db"), ("patch_status", f"Application/{NS}/web")]
    assert world.kube.stored("Namespace", "", NS)["metadata"]["labels"] == {CREATED_BY_AGENT: "gitops-agent"}
    app, deployment, service = world.trio("web")
    assert app["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "gitops-agent",
                                         "heumsi.github.io/source": "default"}
    assert app["metadata"]["annotations"]["heumsi.github.io/source-commit"] == head
    assert app["metadata"]["annotations"]["heumsi.github.io/source-path"] == "web.yaml"
    assert app["spec"] == {"image": "nginx:1.27", "replicas": 1, "port": 80}
    assert image(deployment) == "nginx:1.27" and deployment["spec"]["replicas"] == 1
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert service["spec"]["ports"] == [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 80}]
    for child in (deployment, service):
        assert child["metadata"]["ownerReferences"] == [
            {"apiVersion": "heumsi.github.io/v1", "kind": "Application", "name": "web", "uid": app["metadata"]["uid"],
             "controller": True, "blockOwnerDeletion": True}]
        assert child["metadata"]["labels"]["app.kubernetes.io/instance"] == "web"
        owners = [(e["manager"], e["operation"]) for e in child["metadata"]["managedFields"]]
        assert owners == [("gitops-agent", "Apply")]
    writers = {(e["manager"], e["operation"], e.get("subresource", "")) for e in app["metadata"]["managedFields"]}
    assert writers == {("gitops-agent", "Apply", ""), ("gitops-agent", "Update", "status")}  # one field manager
    assert [(e["reason"], e["type"], e["message"]) for e in world.kube.events if e["name"] == "web"] == [
        ("Created", "Normal", f"created Application/{NS}/web, Deployment/{NS}/web, Service/{NS}/web")]
    assert report.summary().splitlines()[-1] == ("sync succeeded: 6 created, 0 configured, 0 unchanged, 0 pruned, "
                                                 "0 failed")


def test_the_status_of_a_first_pass_names_the_commit_the_children_and_the_health(world):
    head = world.commit({"web.yaml": app_yaml("web")})
    world.sync()
    status = world.app("web")["status"]
    assert (status["lastSyncedCommit"], status["lastAttemptedCommit"], status["lastChangedCommit"]) == (head,) * 3
    assert (status["lastSyncedCommitShort"], status["lastChangedCommitShort"]) == (head[:7], head[:7])
    assert (status["deployment"], status["service"], status["sourcePath"], status["sourceLine"]) == \
        ("web", "web", "web.yaml", 1)
    assert status["observedGeneration"] == 1 and TIME.fullmatch(status["lastSyncTime"])
    assert (status["replicas"], status["readyReplicas"]) == (0, 0)
    waiting = "Deployment: waiting for the deployment controller to observe the latest spec"
    assert status["health"] == {"status": "Progressing", "message": waiting}
    assert conditions(world.app("web")) == {
        "Ready": ("False", "Progressing", waiting), "Reconciling": ("True", "Progressing", waiting),
        "Synced": ("True", "Synced", f"children applied from commit {head[:12]}")}
    for condition in status["conditions"]:
        assert set(condition) == {"type", "status", "reason", "message", "lastTransitionTime", "observedGeneration"}
        assert condition["observedGeneration"] == 1
    [entry] = status["history"]
    assert (entry["revision"], entry["passes"]) == (head, 1) and entry["digest"].startswith("sha256:")
    assert world.sync().readiness == {f"{NS}/web": ("False", "Progressing")}


def test_once_the_deployment_is_rolled_out_the_next_pass_turns_ready_true(world):
    head = world.commit({"web.yaml": app_yaml("web", replicas=2)})
    world.sync()
    rolled_out(world, "web")
    report = world.sync()
    status = world.app("web")["status"]
    assert (status["replicas"], status["readyReplicas"]) == (2, 2)
    assert status["health"] == {"status": "Healthy", "message": "all children healthy"}
    assert conditions(world.app("web")) == {"Ready": ("True", "Healthy", "all children healthy"),
                                            "Synced": ("True", "Synced", f"children applied from commit {head[:12]}")}
    assert report.readiness == {f"{NS}/web": ("True", "Healthy")}
    assert world.kube.writes == [("patch_status", f"Application/{NS}/web")]  # only the status moved
    assert actions(report) == trio_actions("web", UNCHANGED, UNCHANGED, UNCHANGED)


def test_a_second_pass_without_change_is_all_unchanged_and_writes_nothing(world):
    world.commit({"a.yaml": app_yaml("one") + "---\n" + app_yaml("two", replicas=2)})
    world.sync()
    rolled_out(world, "one")
    rolled_out(world, "two")
    world.sync()  # records readiness
    before = {k: o["metadata"]["resourceVersion"] for k, o in world.kube.objects.items()}
    events = len(world.kube.events)
    report = world.sync()
    assert world.kube.writes == [] and len(world.kube.events) == events
    assert {k: o["metadata"]["resourceVersion"] for k, o in world.kube.objects.items()} == before
    assert [a for _, a in actions(report)] == [UNCHANGED] * 6 and report.ok
    assert report.summary().splitlines()[-1] == ("sync succeeded: 0 created, 0 configured, 6 unchanged, 0 pruned, "
                                                 "0 failed")


def test_a_change_in_git_configures_what_it_changes_and_moves_the_generation(world):
    first = world.commit({"web.yaml": app_yaml("web"), "db.yaml": app_yaml("db")})
    world.sync()
    service = world.child("Service", "web")
    head = world.commit({"web.yaml": app_yaml("web", image="nginx:1.28", replicas=2)})
    report = world.sync()
    assert actions(report) == [(f"Application/{NS}/db", UNCHANGED), (f"Application/{NS}/web", CONFIGURED),
                               (f"Deployment/{NS}/web", CONFIGURED), (f"Service/{NS}/web", UNCHANGED),
                               (f"Deployment/{NS}/db", UNCHANGED), (f"Service/{NS}/db", UNCHANGED)]
    assert world.kube.writes == [("apply", f"Application/{NS}/web"), ("apply", f"Deployment/{NS}/web"),
                                 ("patch_status", f"Application/{NS}/web"), ("patch_status", f"Application/{NS}/db")]
    app, deployment, after = world.trio("web")
    assert image(deployment) == "nginx:1.28" and deployment["spec"]["replicas"] == 2
    assert deployment["metadata"]["generation"] == 2 and app["metadata"]["generation"] == 2
    assert after["metadata"]["resourceVersion"] == service["metadata"]["resourceVersion"]  # not written
    assert app["status"]["observedGeneration"] == 2
    assert (app["status"]["lastSyncedCommit"], app["status"]["lastChangedCommit"]) == (head, head)
    db = world.app("db")["status"]
    assert (db["lastSyncedCommit"], db["lastAttemptedCommit"], db["lastChangedCommit"]) == (head, head, first)
    assert [e["reason"] for e in world.kube.events if e["name"] == "web"] == ["Created", "Updated"]
    assert [e["message"] for e in world.kube.events][-1] == f"configured Application/{NS}/web, Deployment/{NS}/web"


def test_drift_is_undone_and_a_deleted_child_is_created_again(world):
    world.commit({"web.yaml": app_yaml("web")})
    world.sync()
    deployment = world.child("Deployment", "web")
    deployment["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:hotfix"
    world.kube.put(deployment, manager="kubectl-set")
    world.kube.delete(world.child("Service", "web"))
    report = world.sync()
    assert actions(report) == trio_actions("web", UNCHANGED, CONFIGURED, CREATED)
    assert image(world.child("Deployment", "web")) == "nginx:1.27"
    managers = [e["manager"] for e in world.child("Deployment", "web")["metadata"]["managedFields"]]
    assert "kubectl-set" not in managers  # its field was taken over, then applied


def test_an_application_removed_from_git_is_pruned_with_its_children(world):
    world.commit({"keep.yaml": app_yaml("keep"), "gone.yaml": app_yaml("gone")})
    world.sync()
    head = world.commit({"gone.yaml": None})
    report = world.sync()
    assert actions(report) == trio_actions("keep", UNCHANGED, UNCHANGED, UNCHANGED) + [
        (f"Service/{NS}/gone", PRUNED), (f"Deployment/{NS}/gone", PRUNED), (f"Application/{NS}/gone", PRUNED)]
    assert world.kube.writes == [("delete", f"Service/{NS}/gone"), ("delete", f"Deployment/{NS}/gone"),
                                 ("delete", f"Application/{NS}/gone"), ("patch_status", f"Application/{NS}/keep")]
    assert world.trio("gone") == (None, None, None) and all(world.trio("keep"))
    assert world.app("keep")["status"]["lastAttemptedCommit"] == head
    assert [(n.application, n.reason) for n in report.notices] == [(f"{NS}/gone", "Pruned")]
    assert world.kube.events[-1]["message"] == f"pruned Service/{NS}/gone, Deployment/{NS}/gone, Application/{NS}/gone"


def test_a_child_git_no_longer_renders_is_pruned_alone(world):
    world.commit({"web.yaml": app_yaml("web", files={"/etc/web/a.conf": {"content": "a = 1\n"}})})
    report = world.sync()
    assert (f"ConfigMap/{NS}/web", CREATED) in actions(report), report.errors
    world.commit({"web.yaml": app_yaml("web")})
    report = world.sync()
    assert actions(report) == trio_actions("web", CONFIGURED, CONFIGURED, UNCHANGED) + [(f"ConfigMap/{NS}/web", PRUNED)]
    assert world.child("ConfigMap", "web") is None and all(world.trio("web"))


def test_a_worker_has_no_service_until_git_gives_it_a_port_and_loses_it_with_the_port(world):
    world.commit({"jobs.yaml": app_yaml("jobs", port=None)})
    report = world.sync()
    assert actions(report) == [(f"Application/{NS}/jobs", CREATED), (f"Deployment/{NS}/jobs", CREATED)]
    assert "ports" not in world.child("Deployment", "jobs")["spec"]["template"]["spec"]["containers"][0]
    rolled_out(world, "jobs")
    world.sync()
    status = world.app("jobs")["status"]
    assert "service" not in status and status["health"] == {"status": "Healthy", "message": "all children healthy"}
    world.commit({"jobs.yaml": app_yaml("jobs", port=8080)})
    report = world.sync()
    assert actions(report) == trio_actions("jobs", CONFIGURED, CONFIGURED, CREATED)
    assert world.app("jobs")["status"]["service"] == "jobs"
    deployment = world.child("Deployment", "jobs")
    world.commit({"jobs.yaml": app_yaml("jobs", port=None)})
    report = world.sync()
    assert actions(report) == [(f"Application/{NS}/jobs", CONFIGURED), (f"Deployment/{NS}/jobs", CONFIGURED),
                               (f"Service/{NS}/jobs", PRUNED)]
    assert world.child("Service", "jobs") is None
    assert world.child("Deployment", "jobs")["metadata"]["uid"] == deployment["metadata"]["uid"]
    assert "ports" not in world.child("Deployment", "jobs")["spec"]["template"]["spec"]["containers"][0]
    rolled_out(world, "jobs")
    world.sync()
    assert "service" not in world.app("jobs")["status"]
    report = world.sync()
    assert world.kube.writes == [] and [a for _, a in actions(report)] == [UNCHANGED] * 2


def test_prune_off_keeps_what_left_git_and_says_so_in_its_status(world):
    world.commit({"keep.yaml": app_yaml("keep"), "gone.yaml": app_yaml("gone")})
    world.sync()
    head = world.commit({"gone.yaml": None})
    report = world.sync(prune=False)
    assert [(c.subject, c.action, c.message) for c in report.changes if "gone" in c.subject] == [
        (f"Deployment/{NS}/gone", UNCHANGED, ""), (f"Service/{NS}/gone", UNCHANGED, ""),
        (f"Application/{NS}/gone", KEPT, "not in Git; pruning is off (--no-prune)")]
    assert all(world.trio("gone"))
    assert world.kube.writes == [("patch_status", f"Application/{NS}/gone"), ("patch_status", f"Application/{NS}/keep")]
    why = f"no longer in Git at commit {head}; kept because pruning is off (--no-prune)"
    assert conditions(world.app("gone")) == {"Ready": ("False", "PruneSkipped", why),
                                             "Synced": ("False", "PruneSkipped", why)}


def test_a_write_the_api_server_refuses_fails_that_application_alone(world):
    refused = '403 Forbidden: services "web" is forbidden: exceeded quota: no-services'
    world.kube.fail("apply", f"Service/{NS}/web", ApiError(403, "Forbidden", refused.split(": ", 1)[1]), times=None)
    world.commit({"web.yaml": app_yaml("web"), "db.yaml": app_yaml("db")})
    report = world.sync()
    assert report.failed == {f"{NS}/web"} and report.errors == [f"Service/{NS}/web: {refused}"]
    assert actions(report) == [(f"Application/{NS}/db", CREATED), (f"Application/{NS}/web", CREATED),
                               (f"Deployment/{NS}/db", CREATED), (f"Service/{NS}/db", CREATED),
                               (f"Deployment/{NS}/web", CREATED), (f"Service/{NS}/web", FAILED)]
    assert world.child("Service", "web") is None and world.child("Deployment", "web") is not None
    assert conditions(world.app("web")) == {"Ready": ("False", "SyncFailed", refused),
                                            "Synced": ("False", "SyncFailed", refused)}
    status = world.app("web")["status"]
    assert "lastSyncedCommit" not in status and status["lastAttemptedCommit"] == report.commit
    assert status["failures"] == 1 and TIME.fullmatch(status["nextRetryTime"])
    assert status["health"] == {"status": "Missing", "message": "Service: Service does not exist"}
    db = world.app("db")["status"]
    assert db["lastSyncedCommit"] == report.commit and "failures" not in db


def test_parallel_writes_do_what_one_writer_does(tmp_path):
    """``concurrency`` 4 (the write pool): the same report, the same writes in another order."""
    files = {f"app-{i}.yaml": app_yaml(f"app-{i}", replicas=i % 3) for i in range(8)}
    one, four = World(tmp_path / "one"), World(tmp_path / "four", concurrency=4)
    for world in (one, four):
        world.commit(files)
    first, second = one.sync(), four.sync()
    assert actions(first) == actions(second) and [a for _, a in actions(first)] == [CREATED] * 24
    assert sorted(one.kube.writes) == sorted(four.kube.writes) and len(four.kube.writes) == 1 + 24 + 8
    assert four.sync().changed is False and four.kube.writes == []
