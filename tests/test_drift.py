"""Git is the truth: after one pass every field the agent renders equals Git, whatever tool made
the hand edit, and the pass after it sends no write. Immutable fields, exact ownership and a
status that must be stored. Real control plane, real Git, kubectl as people type it."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest
import yaml

from tests.support import api_writes, app_yaml, new_writes, wait_for

pytestmark = pytest.mark.usefixtures("crd")

SELECTOR = {"app.kubernetes.io/instance": "web", "heumsi.github.io/application": "web"}
GIT_PORTS = [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 80}]


def synced(agent, repo, namespace, *args):
    proc = agent.sync(repo.path, "--namespace", namespace, *args)
    assert proc.returncode == 0, proc.stderr
    return proc


def first_sync(agent, repo, namespace):
    """Git holds one Application, ``web`` (nginx:1.27, 1 replica, port 80), synced once."""
    repo.write("web.yaml", app_yaml("web", image="nginx:1.27"))
    repo.commit()
    return synced(agent, repo, namespace)


def settled(objects, namespace, name="web"):
    """Wait until the Deployment controller has caught up (its own writes are not the agent's)."""
    def done():
        d = objects.deployment(namespace, name)
        want, status = d["spec"]["replicas"], d["status"]
        return status.get("observedGeneration") == d["metadata"]["generation"] and all(
            status.get(k, 0) == want for k in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas"))
    wait_for(done, timeout=120, what="the rollout to settle")


def assert_exactly_git(objects, namespace, image="nginx:1.27", replicas=1):
    app, deployment, service = objects.trio(namespace, "web")
    assert app["spec"] == {"image": image, "replicas": replicas, "port": 80}
    assert deployment["spec"]["replicas"] == replicas
    assert deployment["spec"]["selector"] == {"matchLabels": SELECTOR}
    template = deployment["spec"]["template"]
    assert {k: v for k, v in template["metadata"]["labels"].items()} == {
        **SELECTOR, "app.kubernetes.io/name": "web", "app.kubernetes.io/managed-by": "gitops-agent"}
    [container] = template["spec"]["containers"]
    assert (container["name"], container["image"]) == ("web", image)
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert "env" not in container
    assert service["spec"]["selector"] == SELECTOR
    assert service["spec"]["ports"] == GIT_PORTS


def agent_events(objects, namespace):
    return [e for e in objects.events(namespace) if (e.get("source") or {}).get("component") == "gitops-agent"]


def assert_quiet_second_pass(agent, repo, namespace, objects, cluster):
    """The pass after a converging one sends no write for the trio (counted by the API server
    itself), records no Event and reports nothing configured, also with --exit-code."""
    settled(objects, namespace)
    generations = [o["metadata"].get("generation") for o in objects.trio(namespace, "web")]
    events = len(agent_events(objects, namespace))
    before = api_writes(cluster, resources=("applications", "deployments", "services"))
    proc = agent.sync(repo.path, "--namespace", namespace, "--exit-code")
    after = api_writes(cluster, resources=("applications", "deployments", "services"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 created, 0 configured, 3 unchanged, 0 pruned, 0 failed" in proc.stdout
    writes = {k: v for k, v in new_writes(before, after).items() if k[2] != "status"}
    assert writes == {}, f"the second pass wrote: {writes}"
    assert [o["metadata"].get("generation") for o in objects.trio(namespace, "web")] == generations
    assert len(agent_events(objects, namespace)) == events


def editor(tmp_path, change: str) -> dict:
    """An EDITOR for ``kubectl edit`` that loads the object, runs ``change`` on it (``obj``),
    and writes it back: a person editing the YAML by hand."""
    script = tmp_path / "edit.py"
    script.write_text(textwrap.dedent(f"""\
        import sys, yaml
        path = sys.argv[1]
        obj = yaml.safe_load(open(path))
        {change}
        yaml.safe_dump(obj, open(path, "w"))
    """))
    return {"EDITOR": f"{sys.executable} {script}", "KUBE_EDITOR": f"{sys.executable} {script}"}


def kubectl_edit(cluster, namespace, target, tmp_path, change):
    import os

    env = {**os.environ, **editor(tmp_path, change)}
    cluster.kubectl("-n", namespace, "edit", target, env=env)


HAND_EDITS = {
    # the case: a Service port changed with kubectl edit used to fail every pass (duplicate name)
    "edit-service-port": lambda c, ns, tmp: kubectl_edit(
        c, ns, "service/web", tmp, 'obj["spec"]["ports"][0]["port"] = 8080'),
    "edit-container": lambda c, ns, tmp: kubectl_edit(
        c, ns, "deployment/web", tmp, 'ctr = obj["spec"]["template"]["spec"]["containers"][0]; '
        'ctr["image"] = "nginx:hotfix"; ctr["env"] = [{"name": "DEBUG", "value": "1"}]'),
    "patch-json-container-port": lambda c, ns, tmp: c.kubectl(
        "-n", ns, "patch", "deployment/web", "--type=json", "-p",
        '[{"op":"add","path":"/spec/template/spec/containers/0/ports/-",'
        '"value":{"containerPort":81,"protocol":"TCP"}}]'),
    "patch-merge-selector": lambda c, ns, tmp: c.kubectl(
        "-n", ns, "patch", "service/web", "--type=merge", "-p", '{"spec":{"selector":{"extra":"x"}}}'),
    "patch-strategic-sidecar-and-port": lambda c, ns, tmp: (c.kubectl(
        "-n", ns, "patch", "deployment/web", "-p",
        '{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox"}]}}}}'), c.kubectl(
        "-n", ns, "patch", "service/web", "-p", '{"spec":{"ports":[{"name":"debug","port":81,"targetPort":81}]}}')),
    "client-side-apply-port-list": lambda c, ns, tmp: _client_side_apply(c, ns, tmp),
    "scale": lambda c, ns, tmp: c.kubectl("-n", ns, "scale", "deployment/web", "--replicas=3"),
    "edit-application": lambda c, ns, tmp: kubectl_edit(
        c, ns, "application/web", tmp, 'obj["spec"]["replicas"] = 4'),
}


def _client_side_apply(cluster, namespace, tmp_path):
    manifest = tmp_path / "svc.yaml"
    manifest.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": namespace},
        "spec": {"selector": SELECTOR, "ports": [{"name": "web", "protocol": "TCP", "port": 8080, "targetPort": 80},
                                                 {"name": "metrics", "protocol": "TCP", "port": 9090}]}}))
    cluster.kubectl("apply", "-f", str(manifest))


@pytest.mark.parametrize("tool", sorted(HAND_EDITS))
def test_one_pass_restores_git_exactly_then_the_next_pass_writes_nothing(
        tool, agent, repo, namespace, objects, cluster, tmp_path):
    first_sync(agent, repo, namespace)
    settled(objects, namespace)
    HAND_EDITS[tool](cluster, namespace, tmp_path)
    proc = synced(agent, repo, namespace)
    assert " configured" in proc.stdout and "0 failed" in proc.stdout
    assert_exactly_git(objects, namespace)
    assert_quiet_second_pass(agent, repo, namespace, objects, cluster)


def test_labels_and_annotations_others_add_are_left_alone(agent, repo, namespace, objects, cluster):
    first_sync(agent, repo, namespace)
    for target in ("deployment/web", "service/web", "application/web"):
        cluster.kubectl("-n", namespace, "label", target, "team=payments")
        cluster.kubectl("-n", namespace, "annotate", target, "example.com/owner=alice")
    cluster.kubectl("-n", namespace, "rollout", "restart", "deployment/web")
    restarted = objects.deployment(namespace, "web")["spec"]["template"]["metadata"]["annotations"]
    assert_quiet_second_pass(agent, repo, namespace, objects, cluster)
    for obj in objects.trio(namespace, "web"):
        assert obj["metadata"]["labels"]["team"] == "payments"
        assert obj["metadata"]["annotations"]["example.com/owner"] == "alice"
    assert objects.deployment(namespace, "web")["spec"]["template"]["metadata"]["annotations"] == restarted
    assert_exactly_git(objects, namespace)


def test_a_difference_apply_cannot_remove_is_not_drift_forever(agent, repo, namespace, objects, cluster, tmp_path):
    """Another controller's server-side apply adds a port: its intent, not a hand edit. The
    agent neither removes it nor reports a change on every pass."""
    first_sync(agent, repo, namespace)
    extra = tmp_path / "extra.yaml"
    extra.write_text(json.dumps({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": namespace},
                                 "spec": {"ports": [{"name": "sidecar", "protocol": "TCP", "port": 15000}]}}))
    cluster.kubectl("apply", "--server-side", "--field-manager=mesh-controller", "-f", str(extra))
    sidecar = tmp_path / "sidecar.yaml"
    sidecar.write_text(json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": namespace},
                                   "spec": {"template": {"spec": {"containers": [{"name": "proxy", "image": "envoy:1"}]}}}}))
    cluster.kubectl("apply", "--server-side", "--field-manager=mesh-injector", "-f", str(sidecar))
    port = tmp_path / "port.yaml"  # inside the agent's own container
    port.write_text(json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": namespace},
                                "spec": {"template": {"spec": {"containers": [{"name": "web", "ports": [
                                    {"containerPort": 15090, "protocol": "TCP", "name": "metrics"}]}]}}}}))
    cluster.kubectl("apply", "--server-side", "--field-manager=mesh-metrics", "-f", str(port))
    for _ in range(2):
        before = api_writes(cluster)
        proc = agent.sync(repo.path, "--namespace", namespace, "--exit-code")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "0 configured" in proc.stdout
        sent = {key: n for key, n in new_writes(before, api_writes(cluster)).items() if key[0] == "APPLY"}
        assert sent == {}, f"a pass that changes nothing applied {sent}"  # it used to apply both, every pass
    ports = {p["name"] for p in objects.service(namespace, "web")["spec"]["ports"]}
    assert ports == {"http", "sidecar"}
    containers = objects.deployment(namespace, "web")["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["web", "proxy"]
    assert 15090 in [p["containerPort"] for p in containers[0]["ports"]]


def _older_agents_deployment(cluster, objects, namespace, tmp_path, field_manager="gitops-agent", drop_label=False,
                             owned=True):
    """Replace the Deployment with one whose selector differs (as an older rendering, or a
    hand-made object, would have), keeping the agent's labels (but the managed-by label with
    ``drop_label``) and ownerReference (none unless ``owned``)."""
    current = objects.deployment(namespace, "web")
    if drop_label:
        del current["metadata"]["labels"]["app.kubernetes.io/managed-by"]
    cluster.kubectl("-n", namespace, "delete", "deployment", "web", "--wait=true")
    old = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "web", "namespace": namespace, "labels": current["metadata"]["labels"],
                        "ownerReferences": current["metadata"]["ownerReferences"] if owned else []},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                                 "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]}}}}
    manifest = tmp_path / "old.json"
    manifest.write_text(json.dumps(old))
    cluster.kubectl("apply", "--server-side", f"--field-manager={field_manager}", "-f", str(manifest))
    return objects.deployment(namespace, "web")["metadata"]["uid"]


def test_an_immutable_selector_is_fixed_by_recreating_the_agents_own_child(
        agent, repo, namespace, objects, cluster, tmp_path):
    first_sync(agent, repo, namespace)
    old_uid = _older_agents_deployment(cluster, objects, namespace, tmp_path)
    repo.write("web.yaml", app_yaml("web", image="nginx:1.27", replicas=2))
    head = repo.commit("two replicas")
    proc = synced(agent, repo, namespace, "--log-level", "INFO", "--log-format", "json")
    assert f"Deployment/{namespace}/web recreated (spec.selector is immutable" in proc.stdout
    assert "1 recreated" in proc.stdout.splitlines()[-1]
    logged = [json.loads(line) for line in proc.stderr.splitlines() if line.startswith("{")]
    assert any(e.get("event") == "recreate" and e.get("object") == f"Deployment/{namespace}/web" for e in logged)
    app, deployment, _ = objects.trio(namespace, "web")
    assert deployment["metadata"]["uid"] != old_uid
    assert deployment["spec"]["selector"] == {"matchLabels": SELECTOR} and deployment["spec"]["replicas"] == 2
    assert app["status"]["lastSyncedCommit"] == head
    assert {c["type"]: c["status"] for c in app["status"]["conditions"]}["Synced"] == "True"
    events = [e for e in objects.events(namespace) if e["involvedObject"]["name"] == "web"
              and e["reason"] == "Recreated"]
    assert events and "spec.selector is immutable" in events[0]["message"]
    proc = synced(agent, repo, namespace)
    assert "0 configured" in proc.stdout and "recreated" not in proc.stdout


def test_the_applications_child_someone_else_made_is_adopted_and_keeps_its_selector(
        agent, repo, namespace, objects, cluster, tmp_path):
    """Another manager's Deployment with the Application's controller ownerReference (an older
    install) is the Application's child: adopted in place, its different selector kept
    (``kinds.selector``: no serving gap), and the Service selects the same."""
    first_sync(agent, repo, namespace)
    uid = _older_agents_deployment(cluster, objects, namespace, tmp_path, field_manager="someone")
    head = repo.commit("again")
    proc = synced(agent, repo, namespace)
    assert (f"Deployment/{namespace}/web adopted (its controller ownerReference names this Application; kept its "
            "selector app=web (immutable)") in proc.stdout
    assert "1 adopted" in proc.stdout.splitlines()[-1] and "recreated" not in proc.stdout
    deployment = objects.deployment(namespace, "web")
    assert deployment["metadata"]["uid"] == uid and deployment["spec"]["selector"] == {"matchLabels": {"app": "web"}}
    assert deployment["metadata"]["annotations"]["heumsi.github.io/kept-selector"] == "app=web"
    assert objects.service(namespace, "web")["spec"]["selector"] == {"app": "web"}
    assert objects.app(namespace, "web")["status"]["lastSyncedCommit"] == head
    [event] = [e for e in agent_events(objects, namespace) if e["reason"] == "Adopted"]
    assert f"adopted Deployment/{namespace}/web (its controller ownerReference" in event["message"]
    proc = synced(agent, repo, namespace)
    assert "0 configured" in proc.stdout and "recreated" not in proc.stdout


def test_a_stranger_in_a_childs_slot_is_never_recreated(agent, repo, namespace, objects, cluster, tmp_path):
    """The same object without the ownerReference is nobody's child: never applied over, so
    the immutable selector is never reached (nor the object deleted to recreate it)."""
    first_sync(agent, repo, namespace)
    uid = _older_agents_deployment(cluster, objects, namespace, tmp_path, field_manager="someone", owned=False)
    head = repo.commit("again")
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 2
    assert (f"Deployment/{namespace}/web: exists and is controlled by nothing and was not made by the agent; "
            "field managers: someone; left alone" in proc.stderr and "immutable" not in proc.stderr)
    assert objects.deployment(namespace, "web")["metadata"]["uid"] == uid
    assert objects.app(namespace, "web")["status"]["lastSyncedCommit"] != head


def test_a_copy_of_a_child_under_another_name_is_not_ours(agent, repo, namespace, objects, cluster, tmp_path):
    """A canary made from the rendered manifest carries the agent's labels and ownerReference:
    it is left alone, and so is a copy of a Service."""
    repo.write("web.yaml", app_yaml("web", image="nginx:1.27"))
    repo.write("other.yaml", app_yaml("other"))
    repo.commit()
    synced(agent, repo, namespace)
    for kind in ("deployment", "service"):
        live = json.loads(cluster.kubectl("-n", namespace, "get", kind, "web", "-o", "json").stdout)
        meta = live["metadata"]
        live["metadata"] = {"name": "web-canary", "namespace": namespace, "labels": meta["labels"],
                            "ownerReferences": meta["ownerReferences"]}
        live.pop("status", None)
        live["spec"].pop("clusterIP", None), live["spec"].pop("clusterIPs", None)
        copy = tmp_path / f"{kind}.json"
        copy.write_text(json.dumps(live))
        cluster.kubectl("create", "-f", str(copy))
    proc = synced(agent, repo, namespace)
    assert f"Deployment/{namespace}/web-canary carries the agent's labels but is not a child it made" in proc.stdout
    assert "not ours, left alone" in proc.stdout and "pruned" not in proc.stdout.replace("0 pruned", "")
    assert objects.deployment(namespace, "web-canary") and objects.service(namespace, "web-canary")


CRD_WITHOUT_STATUS = "drop the status subresource"
CRD_PRUNING_STATUS = "keep the subresource, prune every status field"
CRD_OLDER = "an older CRD: its status schema lacks a few fields"


@pytest.mark.parametrize("change", [CRD_WITHOUT_STATUS, CRD_PRUNING_STATUS, CRD_OLDER])
def test_a_status_the_api_server_does_not_store_fails_the_pass(change, agent, repo, namespace, objects, cluster,
                                                               tmp_path, crd):
    from tests.conftest import ROOT

    crd_doc = yaml.safe_load((ROOT / "crd.yaml").read_text())
    version = crd_doc["spec"]["versions"][0]
    status_schema = version["schema"]["openAPIV3Schema"]["properties"]["status"]
    if change == CRD_WITHOUT_STATUS:
        del version["subresources"]
    elif change == CRD_PRUNING_STATUS:
        version["schema"]["openAPIV3Schema"]["properties"]["status"] = {"type": "object"}
    else:  # no x-kubernetes-preserve-unknown-fields: the API server prunes what the schema lacks
        del status_schema["properties"]["health"], status_schema["properties"]["sourcePath"]
        del status_schema["properties"]["conditions"]["items"]["properties"]["observedGeneration"]
    broken = tmp_path / "crd.yaml"
    broken.write_text(yaml.safe_dump(crd_doc))
    resources = lambda: json.loads(cluster.kubectl("get", "--raw", "/apis/heumsi.github.io/v1").stdout)["resources"]
    has_status = lambda: any(r["name"] == "applications/status" for r in resources())
    repo.write("web.yaml", app_yaml("web"))
    repo.commit()
    cluster.kubectl("apply", "-f", str(broken))
    try:
        wait_for(lambda: has_status() is (change != CRD_WITHOUT_STATUS), what="discovery to follow the CRD")
        proc = agent.sync(repo.path, "--namespace", namespace)
        assert proc.returncode == 2, proc.stdout
        assert "CustomResourceDefinition applications.heumsi.github.io" in proc.stderr
        assert "kubectl apply -f crd.yaml" in proc.stderr
        assert "sync succeeded" not in proc.stdout
        if change == CRD_WITHOUT_STATUS:
            assert "no status subresource" in proc.stderr and objects.app(namespace, "web") is None
        elif change == CRD_PRUNING_STATUS:
            assert "but dropped status." in proc.stderr and "status.lastSyncedCommit," in proc.stderr
        else:
            assert (f"error: Application/{namespace}/web: the API server accepted the status write but dropped "
                    "status.sourcePath, status.health, status.conditions[].observedGeneration: the "
                    "CustomResourceDefinition applications.heumsi.github.io in the cluster is older than this "
                    "agent's crd.yaml (its status schema lacks these fields, so the API server prunes them); "
                    "apply this agent's crd.yaml (kubectl apply -f crd.yaml)") in proc.stderr.splitlines()
        if change != CRD_WITHOUT_STATUS:
            assert "subresource" not in proc.stderr
    finally:
        cluster.kubectl("apply", "-f", str(ROOT / "crd.yaml"))
        wait_for(has_status, what="the CRD's status subresource to be back")
    proc = synced(agent, repo, namespace)
    assert objects.app(namespace, "web")["status"]["lastSyncedCommit"] == repo.head()


def test_dry_run_and_diff_see_a_recreate_and_a_take_over_and_write_nothing(
        agent, repo, namespace, objects, cluster, tmp_path):
    first_sync(agent, repo, namespace)
    old_uid = _older_agents_deployment(cluster, objects, namespace, tmp_path)
    cluster.kubectl("-n", namespace, "patch", "service/web", "-p",
                    '{"spec":{"ports":[{"name":"debug","port":81,"targetPort":81}]}}')
    settled(objects, namespace)
    before = api_writes(cluster, resources=("applications", "deployments", "services"))
    dry = agent.sync(repo.path, "--namespace", namespace, "--dry-run")
    diff = agent.run([sys.executable, "-m", "agent", "diff", "--repo", str(repo.path), "--namespace", namespace,
                      "--kubeconfig", str(agent.kubeconfig), "--cache-dir", str(agent.cache_dir)])
    assert new_writes(before, api_writes(cluster, resources=("applications", "deployments", "services"))) == {}
    assert (dry.returncode, diff.returncode) == (1, 1), dry.stderr + diff.stderr
    assert f"Deployment/{namespace}/web recreate" in dry.stdout and f"Service/{namespace}/web update" in dry.stdout
    assert objects.deployment(namespace, "web")["metadata"]["uid"] == old_uid
    assert {p["port"] for p in objects.service(namespace, "web")["spec"]["ports"]} == {80, 81}
    proc = synced(agent, repo, namespace)
    assert "1 recreated" in proc.stdout and f"Service/{namespace}/web configured" in proc.stdout
    assert_exactly_git(objects, namespace)
    assert_quiet_second_pass(agent, repo, namespace, objects, cluster)


MANAGED_BY = "app.kubernetes.io/managed-by"
UNLABEL = {"metadata": {"labels": {MANAGED_BY: None}}}


def _patch(cluster, namespace, target, body, kind="strategic"):
    cluster.kubectl("-n", namespace, "patch", target, f"--type={kind}", "-p", json.dumps(body))


def _disown(cluster, namespace, target):
    """Remove the controller ownerReference and the managed-by label with one JSON patch."""
    _patch(cluster, namespace, target, [{"op": "remove", "path": "/metadata/ownerReferences"},
                                        {"op": "remove", "path": "/metadata/labels/app.kubernetes.io~1managed-by"}],
           kind="json")


UNLABELLED_HAND_EDITS = {
    # the label removed in the same patch as the edit
    "sidecar": lambda c, ns: _patch(c, ns, "deployment/web", {**UNLABEL, "spec": {"template": {"spec": {
        "containers": [{"name": "side", "image": "busybox"}]}}}}),
    "patched-env": lambda c, ns: _patch(c, ns, "deployment/web", {**UNLABEL, "spec": {"template": {"spec": {
        "containers": [{"name": "web", "env": [{"name": "DEBUG", "value": "1"}]}]}}}}),
    "service-port": lambda c, ns: _patch(c, ns, "service/web", {**UNLABEL, "spec": {"ports": [
        {"name": "debug", "port": 9999, "targetPort": 9999}]}}),
    # the label removed by one command, the edit made by another
    "set-env": lambda c, ns: (c.kubectl("-n", ns, "label", "deployment/web", f"{MANAGED_BY}-"),
                              c.kubectl("-n", ns, "set", "env", "deployment/web", "DEBUG=1")),
    # the ownerReference and the label removed, then edits: the child stays the agent's
    "disowned-sidecar-and-port": lambda c, ns: (
        _disown(c, ns, "deployment/web"), _disown(c, ns, "service/web"),
        _patch(c, ns, "deployment/web", {"spec": {"template": {"spec": {
            "containers": [{"name": "side", "image": "busybox"}]}}}}),
        _patch(c, ns, "service/web", {"spec": {"ports": [{"name": "debug", "port": 9999, "targetPort": 9999}]}})),
    # the ownerReference alone removed (the child stays in the label-selected list), then an edit
    "orphaned-sidecar": lambda c, ns: (
        _patch(c, ns, "deployment/web", [{"op": "remove", "path": "/metadata/ownerReferences"}], kind="json"),
        _patch(c, ns, "deployment/web", {"spec": {"template": {"spec": {
            "containers": [{"name": "side", "image": "busybox"}]}}}})),
}


def assert_the_agents_own(objects, namespace):
    """Both children carry the agent's label and its controller ownerReference to the Application."""
    app, *children = objects.trio(namespace, "web")
    for child in children:
        assert child["metadata"]["labels"][MANAGED_BY] == "gitops-agent"
        [ref] = child["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == (
            "Application", "web", app["metadata"]["uid"], True)


@pytest.mark.parametrize("edit", sorted(UNLABELLED_HAND_EDITS))
def test_a_child_that_lost_its_label_or_owner_reference_is_restored_in_one_pass(
        edit, agent, repo, namespace, objects, cluster):
    first_sync(agent, repo, namespace)
    settled(objects, namespace)
    uids = [o["metadata"]["uid"] for o in objects.trio(namespace, "web")]
    UNLABELLED_HAND_EDITS[edit](cluster, namespace)
    proc = synced(agent, repo, namespace)
    assert " configured" in proc.stdout and "0 failed" in proc.stdout
    assert_exactly_git(objects, namespace)
    assert_the_agents_own(objects, namespace)
    assert [o["metadata"]["uid"] for o in objects.trio(namespace, "web")] == uids
    assert_quiet_second_pass(agent, repo, namespace, objects, cluster)


@pytest.mark.parametrize("labelled", [False, True], ids=["unlabelled", "with-the-agents-labels"])
def test_a_look_alike_without_the_agents_apply_is_still_refused(labelled, agent, repo, namespace, objects, cluster,
                                                                tmp_path):
    """An object at a child's name that the agent never applied (made with kubectl create or
    kubectl's own server-side apply, from a copy of the rendered child), or one another owner
    controls, is never applied over: the message names what is missing. With the managed-by
    label copied too, the label-selected list shows them; they were applied over then."""
    first_sync(agent, repo, namespace)
    live = json.loads(cluster.kubectl("-n", namespace, "get", "service", "web", "-o", "json").stdout)
    labels = {k: v for k, v in live["metadata"]["labels"].items() if labelled or k != MANAGED_BY}
    copy = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": namespace, "labels": labels},
            "spec": {"selector": live["spec"]["selector"], "ports": live["spec"]["ports"]}}
    manifest = tmp_path / "copy.json"
    manifest.write_text(json.dumps(copy))
    # another owner's: the Deployment keeps the agent's apply, but a ConfigMap controls it now
    cluster.kubectl("-n", namespace, "create", "configmap", "keeper")
    keeper = json.loads(cluster.kubectl("-n", namespace, "get", "configmap", "keeper", "-o", "json").stdout)
    _patch(cluster, namespace, "deployment/web", [
        *([] if labelled else [{"op": "remove", "path": "/metadata/labels/app.kubernetes.io~1managed-by"}]),
        {"op": "replace", "path": "/metadata/ownerReferences", "value": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "keeper", "uid": keeper["metadata"]["uid"],
             "controller": True}]}], kind="json")
    deployment = objects.deployment(namespace, "web")
    for make in (["create", "-f", str(manifest)], ["apply", "--server-side", "-f", str(manifest)]):
        cluster.kubectl("-n", namespace, "delete", "service", "web", "--wait=true")
        cluster.kubectl(*make)
        before = objects.service(namespace, "web")
        for _ in range(2):
            proc = agent.sync(repo.path, "--namespace", namespace)
            assert proc.returncode == 2, proc.stdout + proc.stderr
            assert (f"Service/{namespace}/web: exists and is controlled by nothing and was not made by the agent; "
                    "field managers: ") in proc.stderr and 'heumsi.github.io/adopt: "true"' in proc.stderr
            assert (f"Deployment/{namespace}/web: exists and is controlled by ConfigMap/keeper (its controller "
                    f"ownerReference), not by Application {namespace}/web") in proc.stderr
            after = objects.service(namespace, "web")
            assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
            assert (MANAGED_BY in after["metadata"]["labels"]) is labelled and not after["metadata"].get("ownerReferences")
            assert objects.deployment(namespace, "web")["metadata"]["resourceVersion"] == \
                deployment["metadata"]["resourceVersion"]
    conditions = {c["type"]: c for c in objects.app(namespace, "web")["status"]["conditions"]}
    assert (conditions["Stalled"]["status"], conditions["Stalled"]["reason"]) == ("True", "OwnershipConflict")


def test_an_immutable_selector_on_the_agents_unlabelled_child_is_fixed_by_recreating_it(
        agent, repo, namespace, objects, cluster, tmp_path):
    """The child the agent made, its label removed: the same path as for a labelled one."""
    first_sync(agent, repo, namespace)
    old_uid = _older_agents_deployment(cluster, objects, namespace, tmp_path, drop_label=True)
    assert MANAGED_BY not in objects.deployment(namespace, "web")["metadata"]["labels"]
    proc = synced(agent, repo, namespace)
    assert f"Deployment/{namespace}/web recreated (spec.selector is immutable" in proc.stdout
    deployment = objects.deployment(namespace, "web")
    assert deployment["metadata"]["uid"] != old_uid
    assert_exactly_git(objects, namespace)
    assert_the_agents_own(objects, namespace)
    assert_quiet_second_pass(agent, repo, namespace, objects, cluster)
