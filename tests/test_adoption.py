"""Moving under the agent is a non-event: the children the seed's kopf operator made (its
templates, its client calls, ``kopf.adopt``'s controller ownerReference), an earlier install's
and hand-made ones (opted in) are adopted; the pass after writes nothing. The steps of
docs/guides/migrating.md, run as written. Real control plane with the garbage collector."""

from __future__ import annotations

import json
import sys

import pytest
import yaml

from tests.support import api_writes, app_yaml, new_writes, wait_for

pytestmark = pytest.mark.usefixtures("crd")

# The seed operator's templates (deployment.yaml, service.yaml), filled by tmpl.format(name=name, **spec)
SEED_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: "{name}"
  labels:
    app: "{name}"
spec:
  replicas: {replicas}
  selector:
    matchLabels:
      app: "{name}"
  template:
    metadata:
      labels:
        app: "{name}"
    spec:
      containers:
      - name: "{name}"
        image: "{image}"
        ports:
        - containerPort: {port}
"""
SEED_SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: "{name}"
spec:
  selector:
    app: "{name}"
  ports:
  - name: http
    protocol: TCP
    port: {port}
    targetPort: {port}
"""
SPEC = {"image": "nginx:1.27", "replicas": 1, "port": 80}
SELECTOR = {"app.kubernetes.io/instance": "web", "heumsi.github.io/application": "web"}


def kopf_adopt(data: dict, owner: dict) -> None:
    """What ``kopf.adopt(data)`` does to a child: a controller ownerReference to the owner."""
    meta = owner["metadata"]
    data["metadata"].setdefault("ownerReferences", []).append({
        "apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"], "uid": meta["uid"],
        "controller": True, "blockOwnerDeletion": True})
    data["metadata"]["namespace"] = meta["namespace"]


def seed_operator_made(cluster, objects, namespace, name="web"):
    """The seed's user applies the Application with kubectl; the operator's create handler makes
    its Deployment and Service with the official client, as its main.py does."""
    cluster.kubectl("-n", namespace, "apply", "-f", "-", input=app_yaml(name, **SPEC))
    owner = objects.app(namespace, name)
    for template, create in ((SEED_DEPLOYMENT, objects.apps.create_namespaced_deployment),
                             (SEED_SERVICE, objects.core.create_namespaced_service)):
        data = yaml.safe_load(template.format(name=name, **SPEC))
        kopf_adopt(data, owner)
        create(namespace=namespace, body=data)
    wait_for(lambda: (objects.deployment(namespace, name)["status"].get("readyReplicas") or 0) == 1,
             timeout=120, what="the operator's Deployment to be ready")


def replica_sets(objects, namespace):
    return sorted(rs.metadata.name for rs in objects.apps.list_namespaced_replica_set(namespace).items)


def in_git(repo, name="web", annotations=None):
    doc = yaml.safe_load(app_yaml(name, **SPEC))
    if annotations:
        doc["metadata"]["annotations"] = annotations
    repo.write(f"{name}.yaml", yaml.safe_dump(doc, sort_keys=False))
    return repo.commit(f"{name} in Git")


def agent_events(objects, namespace, reason):
    return [e for e in objects.events(namespace) if e["reason"] == reason
            and (e.get("source") or {}).get("component") == "gitops-agent"]


def assert_quiet(agent, repo, namespace, cluster, objects):
    """The pass after the adoption writes nothing but what the Deployment controller does."""
    wait_for(lambda: objects.deployment(namespace, "web")["status"].get("readyReplicas") == 1, timeout=120,
             what="the rollout")
    before = api_writes(cluster, resources=("applications", "deployments", "services"))
    proc = agent.sync(repo.path, "--namespace", namespace)
    after = api_writes(cluster, resources=("applications", "deployments", "services"))
    assert proc.returncode == 0, proc.stderr
    assert "0 created, 0 configured, 3 unchanged, 0 pruned, 0 failed" in proc.stdout
    writes = {k: v for k, v in new_writes(before, after).items() if k[2] != "status"}
    assert writes == {}, f"the pass after the adoption wrote: {writes}"


def test_the_seed_operators_children_are_adopted_without_deleting_the_service(agent, repo, namespace, cluster,
                                                                               objects):
    seed_operator_made(cluster, objects, namespace)
    app_uid = objects.app(namespace, "web")["metadata"]["uid"]
    _, deployment, service = objects.trio(namespace, "web")
    # Step 2 of the guide: preview; nothing is written
    head = in_git(repo)
    proc = agent.sync(repo.path, "--namespace", namespace, "--dry-run")
    assert proc.returncode in (0, 1), proc.stderr
    assert f"Service/{namespace}/web adopt (" in proc.stdout and "2 adopt" in proc.stdout
    assert objects.service(namespace, "web")["metadata"]["resourceVersion"] == service["metadata"]["resourceVersion"]
    # Step 3: sync
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 0, proc.stderr
    assert (f"Deployment/{namespace}/web adopted (its controller ownerReference names this Application; fields taken "
            "from OpenAPI-Generator; spec.selector is immutable and differs from Git, so recreated)") in proc.stdout
    assert (f"Service/{namespace}/web adopted (its controller ownerReference names this Application; fields taken "
            "from OpenAPI-Generator)") in proc.stdout
    app, new_deployment, new_service = objects.trio(namespace, "web")
    assert app["metadata"]["uid"] == app_uid and app["status"]["lastSyncedCommit"] == head
    assert new_service["metadata"]["uid"] == service["metadata"]["uid"]  # the Service and its clusterIP stay
    assert new_service["spec"]["clusterIP"] == service["spec"]["clusterIP"]
    assert new_service["spec"]["selector"] == SELECTOR  # follows the recreated Deployment's pods
    assert new_deployment["metadata"]["uid"] != deployment["metadata"]["uid"]
    assert new_deployment["spec"]["selector"] == {"matchLabels": SELECTOR}
    managers = {e["manager"] for e in new_service["metadata"]["managedFields"] if e["operation"] == "Apply"}
    assert managers == {"gitops-agent"}
    [event] = agent_events(objects, namespace, "Adopted")
    assert f"adopted Deployment/{namespace}/web (" in event["message"] and f"Service/{namespace}/web (" in event["message"]
    assert_quiet(agent, repo, namespace, cluster, objects)
    # the adopted children are the agent's own now: removed from Git, they are pruned
    repo.remove("web.yaml")
    repo.write("other.yaml", app_yaml("other"))
    repo.commit("web removed")
    assert agent.sync(repo.path, "--namespace", namespace).returncode == 0
    assert objects.trio(namespace, "web") == (None, None, None)


def test_an_earlier_installs_children_are_adopted_in_place(agent, repo, namespace, cluster, objects, tmp_path):
    """Children made with kubectl create from what the agent renders, with the Application's
    controller ownerReference: adopted in place (same uid, no new ReplicaSet)."""
    in_git(repo)
    assert agent.sync(repo.path, "--namespace", namespace).returncode == 0
    app = objects.app(namespace, "web")
    made = []
    for kind in ("deployment", "service"):
        live = json.loads(cluster.kubectl("-n", namespace, "get", kind, "web", "-o", "json").stdout)
        meta = live["metadata"]
        copy = {"apiVersion": live["apiVersion"], "kind": live["kind"],
                "metadata": {k: meta[k] for k in ("name", "namespace", "labels", "ownerReferences")},
                "spec": {k: v for k, v in live["spec"].items() if k not in ("clusterIP", "clusterIPs")}}
        made.append(copy)
    cluster.kubectl("-n", namespace, "delete", "deployment,service", "web", "--cascade=orphan", "--wait=true")
    for copy in made:
        cluster.kubectl("create", "-f", "-", input=json.dumps(copy))
    wait_for(lambda: objects.deployment(namespace, "web")["status"].get("readyReplicas") == 1, timeout=120,
             what="the copy to be ready")
    uids = [o["metadata"]["uid"] for o in objects.trio(namespace, "web")]
    sets = replica_sets(objects, namespace)
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 0, proc.stderr
    assert "2 adopted" in proc.stdout.splitlines()[-1] and "recreated" not in proc.stdout
    assert [o["metadata"]["uid"] for o in objects.trio(namespace, "web")] == uids
    assert replica_sets(objects, namespace) == sets
    assert objects.app(namespace, "web")["metadata"]["uid"] == app["metadata"]["uid"]
    assert_quiet(agent, repo, namespace, cluster, objects)


def test_hand_made_children_are_adopted_only_when_the_application_opts_in(agent, repo, namespace, cluster, objects):
    cluster.kubectl("-n", namespace, "create", "deployment", "web", "--image=nginx:1.27", "--port=80")
    cluster.kubectl("-n", namespace, "create", "service", "clusterip", "web", "--tcp=80:80")
    service = objects.service(namespace, "web")
    in_git(repo)
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 2
    assert (f"Deployment/{namespace}/web: exists and is controlled by nothing and was not made by the agent; field "
            "managers: kubectl-create; left alone. To hand it to the agent, set the annotation "
            'heumsi.github.io/adopt: "true" on the Application in Git') in proc.stderr
    conditions = {c["type"]: c for c in objects.app(namespace, "web")["status"]["conditions"]}
    assert (conditions["Synced"]["status"], conditions["Synced"]["reason"]) == ("False", "OwnershipConflict")
    assert objects.service(namespace, "web")["metadata"]["resourceVersion"] == service["metadata"]["resourceVersion"]
    in_git(repo, annotations={"heumsi.github.io/adopt": "true"})
    proc = agent.run([sys.executable, "-m", "agent", "diff", "--repo", str(repo.path), "--kubeconfig",
                      str(agent.kubeconfig), "--cache-dir", str(agent.cache_dir), "--namespace", namespace])
    assert proc.returncode == 1, proc.stderr  # the diff of an adopted object is against the live one
    assert f"--- live/Service/{namespace}/web" in proc.stdout and "/dev/null" not in proc.stdout
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 0, proc.stderr
    assert (f'Service/{namespace}/web adopted (no controller holds it and the Application has heumsi.github.io/adopt: '
            '"true"; fields taken from kubectl-create)') in proc.stdout
    after = objects.service(namespace, "web")
    assert after["metadata"]["uid"] == service["metadata"]["uid"] and after["spec"]["selector"] == SELECTOR
    assert after["metadata"]["ownerReferences"][0]["uid"] == objects.app(namespace, "web")["metadata"]["uid"]
    assert_quiet(agent, repo, namespace, cluster, objects)


def test_a_child_another_controller_holds_is_never_adopted_even_when_opted_in(agent, repo, namespace, cluster,
                                                                              objects):
    cluster.kubectl("-n", namespace, "create", "configmap", "keeper")
    keeper = objects.core.read_namespaced_config_map("keeper", namespace)
    cluster.kubectl("-n", namespace, "create", "service", "clusterip", "web", "--tcp=80:80")
    cluster.kubectl("-n", namespace, "patch", "service", "web", "--type=merge", "-p", json.dumps({"metadata": {
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "keeper", "uid": keeper.metadata.uid,
                             "controller": True}]}}))
    before = objects.service(namespace, "web")["metadata"]["resourceVersion"]
    in_git(repo, annotations={"heumsi.github.io/adopt": "true"})
    repo.write("other.yaml", app_yaml("other"))
    repo.commit("other")
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 2
    assert (f"Service/{namespace}/web: exists and is controlled by ConfigMap/keeper (its controller ownerReference), "
            f"not by Application {namespace}/web; field managers: kubectl-create, kubectl-patch; left alone. Delete or "
            "rename it") in proc.stderr
    assert objects.service(namespace, "web")["metadata"]["resourceVersion"] == before
    assert objects.deployment(namespace, "web") is not None and all(objects.trio(namespace, "other"))
