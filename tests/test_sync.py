"""`python -m agent sync --once` against the real control plane and real Git repositories."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from tests.support import ORIGINAL_APPLICATION, app_yaml, wait_for

pytestmark = pytest.mark.usefixtures("crd")

ORIGINAL = ORIGINAL_APPLICATION


def sync_ok(agent, repo, namespace, *args):
    proc = agent.sync(repo.path, "--namespace", namespace, *args)
    assert proc.returncode == 0, proc.stderr
    return proc


def container(deployment):
    return deployment["spec"]["template"]["spec"]["containers"][0]


def test_original_application_yaml_syncs_unchanged_with_full_status(agent, repo, namespace, objects):
    repo.write("application.yaml", ORIGINAL)
    head = repo.commit("nginx")
    proc = sync_ok(agent, repo, namespace)
    assert f"commit {head}" in proc.stdout
    app, deployment, service = objects.trio(namespace, "nginx")
    assert app["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gitops-agent"
    assert app["metadata"]["annotations"]["heumsi.github.io/source-commit"] == head
    assert app["metadata"]["annotations"]["heumsi.github.io/source-path"] == "application.yaml"
    assert container(deployment)["image"] == "nginx:latest" and deployment["spec"]["replicas"] == 1
    assert container(deployment)["ports"][0]["containerPort"] == 80
    assert service["spec"]["ports"][0]["port"] == 80 and service["spec"]["ports"][0]["targetPort"] == 80
    for child in (deployment, service):
        ref = child["metadata"]["ownerReferences"][0]
        assert (ref["kind"], ref["name"], ref["uid"], ref["controller"], ref["blockOwnerDeletion"]) == \
            ("Application", "nginx", app["metadata"]["uid"], True, True)
        assert child["metadata"]["labels"]["app.kubernetes.io/instance"] == "nginx"
    status = app["status"]
    assert status["lastSyncedCommit"] == status["lastAttemptedCommit"] == head
    writers = {(e["manager"], e["operation"], e.get("subresource", "")) for e in app["metadata"]["managedFields"]}
    assert writers == {("gitops-agent", "Apply", ""), ("gitops-agent", "Update", "status")}  # one field manager
    assert status["observedGeneration"] == app["metadata"]["generation"]
    assert (status["deployment"], status["service"], status["sourcePath"]) == ("nginx", "nginx", "application.yaml")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", status["lastSyncTime"])
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["Synced"]["status"] == "True" and conditions["Synced"]["reason"] == "Synced"
    for condition in conditions.values():
        assert set(condition) == {"type", "status", "reason", "message", "lastTransitionTime", "observedGeneration"}
    # once the pod is Ready, the next pass reports it and Ready turns True
    wait_for(lambda: (objects.deployment(namespace, "nginx")["status"].get("readyReplicas") or 0) == 1,
             what="the pod to be ready")
    sync_ok(agent, repo, namespace)
    status = objects.app(namespace, "nginx")["status"]
    assert (status["replicas"], status["readyReplicas"]) == (1, 1)
    assert {c["type"]: c["status"] for c in status["conditions"]} == {"Ready": "True", "Synced": "True"}
    events = [e for e in objects.events(namespace) if e["involvedObject"]["name"] == "nginx"
              and e["involvedObject"]["kind"] == "Application"]
    assert {"Created"} <= {e["reason"] for e in events}


def test_changes_in_git_roll_out(agent, repo, namespace, objects):
    repo.write("web.yaml", app_yaml("web", image="nginx:1.26", replicas=1, port=80))
    repo.commit()
    sync_ok(agent, repo, namespace)
    repo.write("web.yaml", app_yaml("web", image="nginx:1.27", replicas=3, port=8080))
    head = repo.commit("bump")
    proc = sync_ok(agent, repo, namespace)
    assert "Deployment/%s/web configured" % namespace in proc.stdout
    app, deployment, service = objects.trio(namespace, "web")
    assert (container(deployment)["image"], deployment["spec"]["replicas"]) == ("nginx:1.27", 3)
    assert container(deployment)["ports"][0]["containerPort"] == 8080
    assert service["spec"]["ports"][0]["port"] == 8080
    assert app["status"]["lastSyncedCommit"] == head


def test_drift_on_children_is_undone_and_deleted_child_recreated(agent, repo, namespace, objects, cluster):
    repo.write("web.yaml", app_yaml("web", replicas=2))
    repo.commit()
    sync_ok(agent, repo, namespace)
    cluster.kubectl("-n", namespace, "scale", "deployment/web", "--replicas=5")
    cluster.kubectl("-n", namespace, "set", "image", "deployment/web", "web=evil:1")
    cluster.kubectl("-n", namespace, "delete", "service", "web")
    proc = sync_ok(agent, repo, namespace)
    assert f"Service/{namespace}/web created" in proc.stdout
    assert f"Deployment/{namespace}/web configured" in proc.stdout
    deployment = objects.deployment(namespace, "web")
    assert (container(deployment)["image"], deployment["spec"]["replicas"]) == ("nginx:latest", 2)
    assert objects.service(namespace, "web") is not None


def test_application_removed_from_git_is_pruned_with_children_in_the_same_pass(agent, repo, namespace, objects):
    repo.write("a.yaml", app_yaml("keep"))
    repo.write("b.yaml", app_yaml("gone"))
    repo.commit()
    sync_ok(agent, repo, namespace)
    assert all(objects.trio(namespace, "gone"))
    repo.remove("b.yaml")
    repo.commit("remove gone")
    proc = sync_ok(agent, repo, namespace)
    for kind in ("Application", "Deployment", "Service"):
        assert f"{kind}/{namespace}/gone pruned" in proc.stdout
    assert objects.trio(namespace, "gone") == (None, None, None)
    assert all(objects.trio(namespace, "keep"))


def test_rename_replaces_the_old_trio(agent, repo, namespace, objects):
    repo.write("a.yaml", app_yaml("old-name"))
    repo.commit()
    sync_ok(agent, repo, namespace)
    repo.write("a.yaml", app_yaml("new-name"))
    repo.commit("rename")
    sync_ok(agent, repo, namespace)
    assert objects.trio(namespace, "old-name") == (None, None, None)
    assert all(objects.trio(namespace, "new-name"))


def test_namespace_move(agent, repo, namespaces, objects):
    first, second = namespaces(), namespaces()
    repo.write("a.yaml", app_yaml("mover", namespace=first))
    repo.commit()
    sync_ok(agent, repo, first)
    repo.write("a.yaml", app_yaml("mover", namespace=second))
    repo.commit("move")
    sync_ok(agent, repo, first)
    assert objects.trio(first, "mover") == (None, None, None)
    assert all(objects.trio(second, "mover"))


def test_missing_namespace_is_created_and_labelled(agent, repo, namespaces, objects, cluster):
    home = namespaces()
    new_ns = f"{home}-new"
    repo.write("a.yaml", app_yaml("web", namespace=new_ns))
    repo.commit()
    try:
        sync_ok(agent, repo, home)
        ns = objects.core.read_namespace(new_ns)
        assert ns.metadata.labels["heumsi.github.io/created-by"] == "gitops-agent"
        assert all(objects.trio(new_ns, "web"))
    finally:
        cluster.kubectl("delete", "namespace", new_ns, "--timeout=120s", check=False)


def test_file_moved_without_content_change_writes_nothing_but_the_commit(agent, repo, namespace, objects):
    repo.write("a.yaml", app_yaml("web"))
    repo.commit()
    sync_ok(agent, repo, namespace)
    wait_for(lambda: (objects.deployment(namespace, "web")["status"].get("readyReplicas") or 0) == 1)
    sync_ok(agent, repo, namespace)
    before = objects.trio(namespace, "web")
    repo.move("a.yaml", "apps/moved.yaml")
    head = repo.commit("move file")
    proc = sync_ok(agent, repo, namespace)
    assert "0 created, 0 configured, 3 unchanged, 0 pruned, 0 failed" in proc.stdout
    app, deployment, service = objects.trio(namespace, "web")
    assert deployment["metadata"]["resourceVersion"] == before[1]["metadata"]["resourceVersion"]
    assert service["metadata"]["resourceVersion"] == before[2]["metadata"]["resourceVersion"]
    assert app["metadata"]["generation"] == before[0]["metadata"]["generation"]
    assert app["spec"] == before[0]["spec"]
    assert app["status"]["lastSyncedCommit"] == head  # only the status records the new commit


def test_history_records_the_commit_that_changed_each_application_not_every_commit(agent, repo, namespace, objects):
    """A monorepo commit moves every Application's lastSyncedCommit, but lastChangedCommit and the
    history move only for the Application whose spec changed; a rollback reuses its entry."""
    repo.write("a.yaml", app_yaml("one") + "---\n" + app_yaml("two"))
    first = repo.commit()
    sync_ok(agent, repo, namespace)
    repo.write("b.yaml", app_yaml("three"))
    repo.write("a.yaml", app_yaml("one") + "---\n" + app_yaml("two", image="nginx:2"))
    second = repo.commit("two to nginx:2, add three")
    sync_ok(agent, repo, namespace)
    one, two = (objects.app(namespace, n)["status"] for n in ("one", "two"))
    assert (one["lastSyncedCommit"], one["lastChangedCommit"], one["lastChangedCommitShort"]) == (second, first, first[:7])
    assert [(e["revision"], e["passes"]) for e in one["history"]] == [(first, 2)]
    assert two["lastChangedCommit"] == second and [e["revision"] for e in two["history"]] == [second, first]
    assert two["history"][0]["digest"].startswith("sha256:") and len(two["history"][0]["digest"]) == 71
    repo.write("a.yaml", app_yaml("one") + "---\n" + app_yaml("two"))
    back = repo.commit("roll two back")
    sync_ok(agent, repo, namespace)
    two = objects.app(namespace, "two")["status"]
    assert two["lastChangedCommit"] == back and [e["revision"] for e in two["history"]] == [first, second]
    wait_for(lambda: objects.deployment(namespace, "two")["status"].get("updatedReplicas") == 1 ==
             objects.deployment(namespace, "two")["status"].get("readyReplicas"))
    sync_ok(agent, repo, namespace)  # records readiness
    before = objects.versions(namespace, ["one", "two", "three"])
    sync_ok(agent, repo, namespace)
    assert objects.versions(namespace, ["one", "two", "three"]) == before  # history costs no write
    assert objects.app(namespace, "two")["status"]["history"][0]["passes"] == 2


def test_second_pass_without_change_is_all_unchanged_and_writes_nothing(agent, repo, namespace, objects):
    repo.write("a.yaml", app_yaml("one") + "---\n" + app_yaml("two", replicas=2))
    repo.commit()
    sync_ok(agent, repo, namespace)
    wait_for(lambda: (objects.deployment(namespace, "two")["status"].get("readyReplicas") or 0) == 2)
    sync_ok(agent, repo, namespace)  # records readiness
    before = objects.versions(namespace, ["one", "two"])
    proc = sync_ok(agent, repo, namespace)
    assert "0 created, 0 configured, 6 unchanged, 0 pruned, 0 failed" in proc.stdout
    assert objects.versions(namespace, ["one", "two"]) == before


def test_hand_applied_application_gets_children_and_is_never_pruned(agent, repo, namespace, objects, cluster,
                                                                     tmp_path):
    manual = tmp_path / "manual.yaml"
    manual.write_text(app_yaml("manual", namespace=namespace, replicas=2))
    cluster.kubectl("apply", "-f", str(manual))
    repo.write("a.yaml", app_yaml("from-git"))
    repo.commit()
    sync_ok(agent, repo, namespace)
    app, deployment, service = objects.trio(namespace, "manual")
    assert deployment["spec"]["replicas"] == 2 and service is not None
    assert "lastSyncedCommit" not in app["status"]
    repo.remove("a.yaml")
    repo.commit("empty")
    sync_ok(agent, repo, namespace, "--allow-empty")
    assert all(objects.trio(namespace, "manual"))
    assert objects.trio(namespace, "from-git") == (None, None, None)


def test_lookalike_objects_not_owned_are_never_pruned(agent, repo, namespace, objects, cluster, tmp_path):
    lookalike = tmp_path / "lookalike.yaml"
    lookalike.write_text(f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: gone
  namespace: {namespace}
  labels: {{app.kubernetes.io/managed-by: gitops-agent, heumsi.github.io/application: gone,
            app.kubernetes.io/instance: gone}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: lookalike}}}}
  template:
    metadata: {{labels: {{app: lookalike}}}}
    spec: {{containers: [{{name: c, image: nginx:latest}}]}}
---
apiVersion: v1
kind: Service
metadata:
  name: gone-svc
  namespace: {namespace}
  labels: {{app.kubernetes.io/managed-by: gitops-agent, heumsi.github.io/application: gone}}
spec:
  ports: [{{port: 80}}]
""")
    cluster.kubectl("apply", "-f", str(lookalike))
    repo.write("a.yaml", app_yaml("web"))
    repo.commit()
    sync_ok(agent, repo, namespace)
    assert objects.deployment(namespace, "gone") is not None
    assert objects.service(namespace, "gone-svc") is not None


def test_fetch_failure_prunes_nothing_and_exits_2(agent, repo, namespace, objects, tmp_path):
    repo.write("a.yaml", app_yaml("web"))
    first = repo.commit()
    sync_ok(agent, repo, namespace)
    uid = objects.app(namespace, "web")["metadata"]["uid"]
    shutil.move(repo.path, tmp_path / "away")
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 2
    assert "fetching" in proc.stderr and "nothing was changed or pruned" in proc.stderr
    app, deployment, service = objects.trio(namespace, "web")
    assert app["metadata"]["uid"] == uid and deployment and service
    assert app["status"]["lastSyncedCommit"] == first


def test_invalid_file_fails_only_its_application_and_blocks_pruning(agent, repo, namespace, objects):
    repo.write("good.yaml", app_yaml("good"))
    repo.write("later-removed.yaml", app_yaml("stays"))
    repo.commit()
    sync_ok(agent, repo, namespace)
    repo.remove("later-removed.yaml")
    repo.write("bad.yaml", app_yaml("bad", replicas=-1))
    repo.write("good.yaml", app_yaml("good", replicas=2))
    repo.commit("one bad file")
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 2
    assert "bad.yaml" in proc.stderr and "spec.replicas" in proc.stderr
    assert objects.deployment(namespace, "good")["spec"]["replicas"] == 2
    assert all(objects.trio(namespace, "stays"))  # pruning blocked
    assert objects.trio(namespace, "bad") == (None, None, None)


def _list_of(*documents: str) -> str:
    """A ``kind: List`` holding ``documents`` (each a YAML mapping) as its items."""
    return "apiVersion: v1\nkind: List\nitems:\n" + "".join(
        "- " + d.replace("\n", "\n  ").rstrip(" ") for d in documents)


def test_a_kind_list_file_syncs_each_item_and_a_bad_item_fails_alone_by_its_line(agent, repo, namespace, objects):
    repo.write("apps.yaml", _list_of(app_yaml("web"), app_yaml("api", port=8080)))
    repo.commit("a List of two Applications")
    sync_ok(agent, repo, namespace)
    web, api = objects.app(namespace, "web"), objects.app(namespace, "api")
    assert all(objects.trio(namespace, "web")) and all(objects.trio(namespace, "api"))
    assert web["status"]["sourcePath"] == api["status"]["sourcePath"] == "apps.yaml"
    repo.write("apps.yaml", _list_of(app_yaml("web", replicas=2), app_yaml("api", replicas=-1),
                                     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"))
    repo.commit("one bad item and one that is no Application")
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 2
    assert "error: apps.yaml:18: spec.replicas: must be an integer" in proc.stderr
    assert 'error: apps.yaml:20: only Application (heumsi.github.io/v1) documents are supported' in proc.stderr
    assert objects.deployment(namespace, "web")["spec"]["replicas"] == 2  # the good item synced
    assert objects.deployment(namespace, "api")["spec"]["replicas"] == 1  # the bad one kept as it was


def test_a_duplicate_key_in_one_list_item_fails_that_item_alone(agent, repo, namespace, objects):
    """It used to refuse the whole List: the other items are still synced; the item is a failed
    Application named with every problem it has."""
    bad = app_yaml("api", replicas=-1).replace("  port: 80\n", "  port: 80\n  port: 81\n")
    repo.write("apps.yaml", _list_of(app_yaml("web"), bad))
    repo.commit("an item with a duplicate key")
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 2
    assert "error: apps.yaml:18: spec.replicas: must be an integer" in proc.stderr
    assert "error: apps.yaml:20: spec.port: duplicate key 'port' (first defined on line 19)" in proc.stderr
    assert f"1 Application failed: {namespace}/api" in proc.stdout
    assert all(objects.trio(namespace, "web"))  # the good item synced
    assert objects.app(namespace, "api") is None


def test_label_keys_that_are_no_strings_are_refused_and_quoted_ones_are_the_labels_kubectl_sends(
        agent, repo, namespace, objects):
    """Labels ``1`` and ``true`` were one duplicate key to the agent; unquoted, each is refused by
    its line and field and nothing is applied; quoted, the API server holds the labels "1" and
    "true" (what kubectl would send for the unquoted keys)."""
    labeled = app_yaml("web").replace("  name: web\n", "  name: web\n  labels:\n    1: x\n    true: y\n")
    repo.write("web.yaml", labeled)
    repo.commit("keys that are no strings")
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert [line for line in proc.stderr.splitlines() if line.startswith("error: web.yaml")] == [
        'error: web.yaml:6: metadata.labels.1: key 1 is an integer, not a string (kubectl would make it "1"); '
        'quote it: "1"',
        'error: web.yaml:7: metadata.labels.true: key true is a boolean, not a string (kubectl would make it '
        '"true"); quote it: "true"']
    assert objects.app(namespace, "web") is None
    repo.write("web.yaml", labeled.replace("1: x", "'1': x").replace("true: y", '"true": y'))
    repo.commit("quoted")
    sync_ok(agent, repo, namespace)
    labels = objects.app(namespace, "web")["metadata"]["labels"]
    assert (labels["1"], labels["true"]) == ("x", "y")


def test_a_file_name_with_control_characters_is_escaped_on_stderr_and_in_the_summary(agent, repo, namespace):
    """A newline or ESC in a file name in Git reached the terminal as it is (a broken line, a
    cleared screen); every line shown is escaped, the json report keeps the real name."""
    name = "bad\n\x1b[2J.yaml"
    repo.write("web.yaml", app_yaml("web"))
    repo.write(name, "kind: [\n")
    repo.commit("a file name with control characters")
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 2 and "\x1b" not in proc.stdout + proc.stderr
    assert "error: bad\\n\\x1b[2J.yaml:2: invalid YAML: " in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert proc.stdout.splitlines()[-1].endswith("; 1 file failed: bad\\n\\x1b[2J.yaml")
    assert any(line.startswith("  bad\\n\\x1b[2J.yaml:2: invalid YAML: ") for line in proc.stdout.splitlines())
    doc = json.loads(agent.sync(repo.path, "--namespace", namespace, "-o", "json").stdout)
    assert [e["file"] for e in doc["errors"]] == [name]


def test_empty_desired_set_is_refused_without_allow_empty(agent, repo, namespace, objects):
    repo.write("a.yaml", app_yaml("web"))
    repo.commit()
    sync_ok(agent, repo, namespace)
    repo.remove("a.yaml")
    repo.write("README.md", "no apps\n")
    repo.commit("remove the last Application")
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 2 and "--allow-empty" in proc.stderr
    assert all(objects.trio(namespace, "web"))
    sync_ok(agent, repo, namespace, "--allow-empty")
    assert objects.trio(namespace, "web") == (None, None, None)


def test_help_documents_exit_codes_and_environment(agent):
    proc = agent.run([*agent_cmd(), "sync", "--help"])
    assert proc.returncode == 0
    assert "exit codes" in proc.stdout and "GITOPS_AGENT_REPO" in proc.stdout


def agent_cmd():
    import sys
    return [sys.executable, "-m", "agent"]


def test_flags_from_environment(agent, repo, namespace, objects, cluster):
    repo.write("a.yaml", app_yaml("web"))
    repo.commit()
    proc = agent.run([*agent_cmd(), "sync", "--once"], env={
        "GITOPS_AGENT_REPO": str(repo.path), "GITOPS_AGENT_NAMESPACE": namespace,
        "GITOPS_AGENT_KUBECONFIG": str(cluster.kubeconfig), "GITOPS_AGENT_CACHE_DIR": str(agent.cache_dir)})
    assert proc.returncode == 0, proc.stderr
    assert all(objects.trio(namespace, "web"))


def test_ref_tag_and_sha_and_force_push(agent, repo, namespace, objects):
    repo.write("a.yaml", app_yaml("web", image="nginx:1"))
    first = repo.commit()
    repo.git("tag", "v1")
    repo.write("a.yaml", app_yaml("web", image="nginx:2"))
    repo.commit()
    sync_ok(agent, repo, namespace, "--ref", "v1")
    assert container(objects.deployment(namespace, "web"))["image"] == "nginx:1"
    sync_ok(agent, repo, namespace, "--ref", first[:10])
    assert objects.app(namespace, "web")["status"]["lastSyncedCommit"] == first
    sync_ok(agent, repo, namespace, "--ref", "main")
    assert container(objects.deployment(namespace, "web"))["image"] == "nginx:2"
    repo.git("reset", "-q", "--hard", first)  # history rewritten upstream
    repo.write("a.yaml", app_yaml("web", image="nginx:3"))
    rewritten = repo.commit("rewrite")
    sync_ok(agent, repo, namespace, "--ref", "main")
    assert objects.app(namespace, "web")["status"]["lastSyncedCommit"] == rewritten
    assert container(objects.deployment(namespace, "web"))["image"] == "nginx:3"


@pytest.mark.parametrize("where", ["deleted-branch", "pull-ref"])
def test_a_commit_on_no_branch_gives_the_same_result_from_a_fresh_and_a_warm_cache(where, agent, repo, namespace,
                                                                                   objects, tmp_path):
    """``--ref SHA`` of a commit no branch or tag holds (its branch deleted: advertised by no ref;
    or only under ``refs/pull/1/head``) is fetched by itself: a fresh cache and a warm one, in
    both orders, sync it; an abbreviated SHA of it or a SHA the remote lacks fails the same way."""
    repo.write("a.yaml", app_yaml("web", image="nginx:1"))
    repo.commit()
    repo.git("checkout", "-q", "-b", "feature")
    repo.write("a.yaml", app_yaml("web", image="nginx:2"))
    off = repo.commit("on a branch about to go")
    repo.git("checkout", "-q", "main")
    warm = str(tmp_path / "warm")
    sync_ok(agent, repo, namespace, "--ref", "feature", "--cache-dir", warm)  # the warm mirror holds it
    if where == "pull-ref":
        repo.git("update-ref", "refs/pull/1/head", off)
    repo.git("branch", "-q", "-D", "feature")
    sync_ok(agent, repo, namespace, "--ref", "main", "--cache-dir", warm)  # the fetch prunes the branch
    for cache in (warm, str(tmp_path / "fresh"), str(tmp_path / "fresh")):  # warm, fresh, then warmed by it
        proc = sync_ok(agent, repo, namespace, "--ref", off, "--cache-dir", cache)
        assert proc.stdout.startswith(f"commit {off}\n"), proc.stdout
        assert container(objects.deployment(namespace, "web"))["image"] == "nginx:2"
        sync_ok(agent, repo, namespace, "--ref", "main", "--cache-dir", cache)
    for ref, words in ((off[:12], "give the full 40-character SHA"), ("1" * 40, "would not send it by itself")):
        errors = {agent.sync(repo.path, "--namespace", namespace, "--ref", ref, "--cache-dir", cache).stderr
                  for cache in (warm, str(tmp_path / f"fresh-{ref}"))}
        assert len(errors) == 1 and words in errors.pop()


def test_bad_name_is_reported_and_others_sync(agent, repo, namespace, objects):
    repo.write("a.yaml", app_yaml("good"))
    repo.write("b.yaml", app_yaml("Office_Back"))
    repo.commit()
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 2 and "DNS-1123" in proc.stderr and "b.yaml" in proc.stderr
    assert all(objects.trio(namespace, "good"))


def test_label_removed_in_git_is_removed_from_the_application(agent, repo, namespace, objects):
    doc = app_yaml("web").replace("metadata:\n", "metadata:\n  labels: {tier: web}\n  annotations: {team: a}\n")
    repo.write("a.yaml", doc)
    repo.commit()
    sync_ok(agent, repo, namespace)
    meta = objects.app(namespace, "web")["metadata"]
    assert meta["labels"]["tier"] == "web" and meta["annotations"]["team"] == "a"
    repo.write("a.yaml", app_yaml("web"))
    repo.commit("drop the label and annotation")
    proc = sync_ok(agent, repo, namespace)
    assert f"Application/{namespace}/web configured" in proc.stdout
    meta = objects.app(namespace, "web")["metadata"]
    assert "tier" not in meta["labels"] and "team" not in meta.get("annotations", {})


def test_another_repository_never_prunes_this_ones_applications(agent, repo, namespace, objects, tmp_path):
    from tests.support import GitRepo

    repo.write("a.yaml", app_yaml("from-a"))
    repo.commit()
    sync_ok(agent, repo, namespace)
    other = GitRepo.create(tmp_path / "other-repo")
    other.write("b.yaml", app_yaml("from-b"))
    other.commit()
    proc = agent.sync(other.path, "--namespace", namespace)
    assert proc.returncode == 0 and "pruned" not in proc.stdout.replace("0 pruned", "")
    assert all(objects.trio(namespace, "from-a")) and all(objects.trio(namespace, "from-b"))
    labels = {n: objects.app(namespace, n)["metadata"]["labels"]["heumsi.github.io/source"] for n in ("from-a", "from-b")}
    assert labels["from-a"] != labels["from-b"]
    # the same holds for another --path of the same repository
    repo.write("sub/c.yaml", app_yaml("from-sub"))
    repo.commit()
    assert agent.sync(repo.path, "--namespace", namespace, "--path", "sub").returncode == 0
    assert all(objects.trio(namespace, "from-a")) and all(objects.trio(namespace, "from-sub"))


def test_hidden_directories_such_as_ci_config_are_skipped(agent, repo, namespace, objects):
    repo.write(".github/workflows/ci.yml", "on: push\njobs: {build: {runs-on: ubuntu-latest}}\n")
    repo.write(".gitlab-ci.yml", "stages: [test]\n")
    repo.write("a.yaml", app_yaml("web"))
    repo.commit()
    sync_ok(agent, repo, namespace)
    assert all(objects.trio(namespace, "web"))


def test_a_child_name_taken_by_someone_elses_object_is_never_applied_over(agent, repo, namespace, objects, cluster,
                                                                           tmp_path):
    """A Service the user made before the Application existed is not adopted by server-side
    apply (nor pruned later): the Application fails, Stalled with reason OwnershipConflict, and
    its Deployment still syncs. Once the user removes their Service, the agent creates its own."""
    theirs = tmp_path / "theirs.yaml"
    theirs.write_text(f"""\
apiVersion: v1
kind: Service
metadata: {{name: web, namespace: {namespace}, labels: {{team: mine}}}}
spec:
  selector: {{app: mine}}
  ports: [{{port: 8080, targetPort: 9090}}]
""")
    cluster.kubectl("apply", "-f", str(theirs))
    before = objects.service(namespace, "web")
    repo.write("web.yaml", app_yaml("web", port=80))
    repo.write("other.yaml", app_yaml("other"))
    repo.commit("web and other")
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 2
    assert f"Service/{namespace}/web: exists and is controlled by nothing and was not made by the agent" in proc.stderr
    after = objects.service(namespace, "web")
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert after["metadata"]["labels"] == {"team": "mine"} and not after["metadata"].get("ownerReferences")
    assert objects.deployment(namespace, "web") is not None and objects.service(namespace, "other") is not None
    conditions = {c["type"]: c for c in objects.app(namespace, "web")["status"]["conditions"]}
    assert (conditions["Stalled"]["status"], conditions["Stalled"]["reason"]) == ("True", "OwnershipConflict")
    assert conditions["Ready"]["status"] == "False"
    # health names the clash, not a Service that "does not exist"
    assert objects.app(namespace, "web")["status"]["health"] == {
        "status": "Missing",
        "message": "Service: another Service of this name exists and is not the agent's, so the agent's is not created"}
    # removing web from Git never prunes the user's Service
    repo.remove("web.yaml")
    repo.commit("web gone")
    sync_ok(agent, repo, namespace)
    assert objects.service(namespace, "web")["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert objects.app(namespace, "web") is None
    # the user deletes theirs and Git has web again: the agent makes its own
    cluster.kubectl("-n", namespace, "delete", "service", "web")
    repo.write("web.yaml", app_yaml("web", port=80))
    repo.commit("web again")
    sync_ok(agent, repo, namespace)
    service = objects.service(namespace, "web")
    assert service["spec"]["ports"][0]["port"] == 80
    assert service["metadata"]["ownerReferences"][0]["name"] == "web"


def test_a_child_whose_managed_by_label_was_removed_is_updated_in_place(agent, repo, namespace, objects, cluster):
    repo.write("web.yaml", app_yaml("web"))
    repo.commit("web")
    sync_ok(agent, repo, namespace)
    uid = objects.deployment(namespace, "web")["metadata"]["uid"]
    cluster.kubectl("-n", namespace, "label", "deployment", "web", "app.kubernetes.io/managed-by-")
    cluster.kubectl("-n", namespace, "scale", "deployment", "web", "--replicas=3")
    proc = sync_ok(agent, repo, namespace)
    assert f"Deployment/{namespace}/web configured" in proc.stdout
    deployment = objects.deployment(namespace, "web")
    assert deployment["metadata"]["uid"] == uid
    assert deployment["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gitops-agent"
    assert deployment["spec"]["replicas"] == 1


def test_an_emoji_in_an_env_value_and_a_task_arg_is_applied_as_written(agent, repo, namespace, objects):
    """A character beyond the Basic Multilingual Plane reaches the cluster as itself (the API
    server's YAML reader refused the surrogate pair escapes of the apply's body: HTTP 400)."""
    import yaml

    body = yaml.safe_load(app_yaml("emo"))
    body["spec"]["env"] = {"MSG": "deploy 🚀 日本語"}
    repo.write("emo.yaml", yaml.safe_dump(body, allow_unicode=True, sort_keys=False))
    repo.commit()
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    env = objects.deployment(namespace, "emo")["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "MSG", "value": "deploy 🚀 日本語"} in env
    assert objects.app(namespace, "emo")["spec"]["env"]["MSG"] == "deploy 🚀 日本語"
