"""Moving under the agent is a non-event: the children the seed's kopf operator made (its
templates, its client calls, ``kopf.adopt``'s controller ownerReference), an earlier install's
and hand-made ones (opted in) are adopted; the pass after writes nothing. The steps of
docs/guides/migrating.md, run as written. Real control plane with the garbage collector."""

from __future__ import annotations

import contextlib
import json
import re
import shlex
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from agent.kinds import registry
from tests.cluster import NODE_NAME
from tests.support import api_writes, app_yaml, new_writes, wait_for
from tests.test_app_fields import SHOP, get, quiet
from tests.test_deploy import service_account_kubeconfig

ROOT = Path(__file__).resolve().parent.parent

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


def operator_made(objects, app: dict) -> dict:
    """The children the agent renders for the live Application ``app`` (``registry.children``,
    its controller ownerReference with ``app``'s uid), created as an operator creates them: one
    ``create_namespaced_*`` call of the official client each (field manager
    ``OpenAPI-Generator``). Returns {kind: the created object's uid}."""
    from kubernetes import client

    api = objects.api_client
    create = {"ConfigMap": client.CoreV1Api(api).create_namespaced_config_map,
              "Deployment": client.AppsV1Api(api).create_namespaced_deployment,
              "Service": client.CoreV1Api(api).create_namespaced_service,
              "Ingress": client.NetworkingV1Api(api).create_namespaced_ingress,
              "HorizontalPodAutoscaler": client.AutoscalingV2Api(api).create_namespaced_horizontal_pod_autoscaler,
              "CronJob": client.BatchV1Api(api).create_namespaced_cron_job,
              "Job": client.BatchV1Api(api).create_namespaced_job,
              "PodDisruptionBudget": client.PolicyV1Api(api).create_namespaced_pod_disruption_budget}
    meta = app["metadata"]
    assert set(create) == set(registry.BY_KIND), "a kind of the registry this helper cannot create"
    return {child["kind"]: create[child["kind"]](namespace=meta["namespace"], body=child).metadata.uid
            for child in registry.children(meta["name"], meta["namespace"], meta["uid"], app["spec"])}


POLICY = "apiserver_validating_admission_policy_check_total"


@contextlib.contextmanager
def deletes_refused(cluster, namespace: str):
    """While inside: the API server refuses every DELETE of a Deployment or a Service in
    ``namespace`` (a ValidatingAdmissionPolicy and its binding, cluster-scoped, removed on the
    way out). The garbage collector keeps running and keeps trying: this is the agent getting
    there first, which a test cannot otherwise win (the collector deletes a child of a deleted
    Application within a second). Yields a function that answers how many deletes the policy
    has refused since it held (from the API server's ``POLICY`` counter). ``namespace`` must
    hold a Service: a dry-run delete of it tells when the policy holds."""
    name = f"hold-{namespace}"
    documents = [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
         "metadata": {"name": name},
         "spec": {"failurePolicy": "Fail", "matchConstraints": {
             "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
             "resourceRules": [{"apiGroups": [group], "apiVersions": ["v1"], "resources": [resource],
                                "operations": ["DELETE"]} for group, resource in (("apps", "deployments"),
                                                                                  ("", "services"))]},
             "validations": [{"expression": "false", "message": "held by the test: no delete"}]}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
         "metadata": {"name": name}, "spec": {"policyName": name, "validationActions": ["Deny"]}},
    ]
    text = "".join(f"---\n{yaml.safe_dump(d)}" for d in documents)

    def total() -> int:
        metrics = cluster.kubectl("get", "--raw", "/metrics").stdout
        return int(sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
                       if line.startswith(POLICY + "{") and f'policy="{name}"' in line
                       and 'enforcement_action="deny"' in line))

    cluster.kubectl("apply", "-f", "-", input=text)
    try:
        # the policy holds once the API server has loaded it: a dry-run delete is refused
        wait_for(lambda: cluster.kubectl("-n", namespace, "delete", "services", "--all", "--dry-run=server",
                                         check=False).returncode != 0, timeout=30, what="the policy to hold")
        base = total()
        yield lambda: total() - base
    finally:
        cluster.kubectl("delete", "-f", "-", "--ignore-not-found", input=text)


def replica_sets(objects, namespace):
    return sorted(rs.metadata.name for rs in objects.apps.list_namespaced_replica_set(namespace).items)


def in_git(repo, name="web", annotations=None, namespace=None):
    doc = yaml.safe_load(app_yaml(name, namespace=namespace, **SPEC))
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


GUIDE = ROOT / "docs" / "guides" / "migrating.md"
PLACEHOLDER = re.compile(r"\b(ARGOCD_NAMESPACE|OPERATOR_NAMESPACE|OPERATOR|REPO|NAMESPACE|NAME)\b")


def guide_steps(section: str = "From the original kopf operator") -> dict[int, list[str]]:
    """The commands of each numbered step of ``section`` of docs/guides/migrating.md:
    {step number: [the lines of its fenced code blocks, in order]}, comments left out."""
    body = GUIDE.read_text(encoding="utf-8").split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    steps: dict[int, list[str]] = {}
    step, fence = 0, False
    for line in body.splitlines():
        stripped = line.strip()
        number = re.match(r"(\d+)\. ", line)
        if number and not fence:
            step = int(number.group(1))
            steps[step] = []
        elif stripped.startswith("```"):
            fence = not fence
        elif fence and stripped and not stripped.startswith("#") and step:  # not an example before the steps
            steps[step].append(stripped)
    return steps


def run_step(step: int, values: dict, agent, cluster, cwd: Path = ROOT,
             section: str = "From the original kopf operator") -> list:
    """Run the commands of the guide's step ``step`` (of ``section``) as written there, their placeholders
    (``PLACEHOLDER``) replaced from ``values``: ``kubectl`` against the cluster (in ``cwd``,
    where ``deploy/`` is), ``python -m agent`` with this interpreter, the cluster's kubeconfig
    and a cache directory given in their variables (GITOPS_AGENT_KUBECONFIG,
    GITOPS_AGENT_CACHE_DIR). Returns the CompletedProcesses; a failing kubectl raises."""
    done = []
    for command in guide_steps(section)[step]:
        argv = shlex.split(PLACEHOLDER.sub(lambda m: values[m.group(1)], command))
        if argv[0] == "kubectl":
            proc = cluster.kubectl(*argv[1:], cwd=cwd)
            print(f"$ {command}\n{proc.stdout}{proc.stderr}")
        else:
            assert argv[:3] == ["python", "-m", "agent"], f"step {step}: a command this test cannot run: {command}"
            proc = agent.run([sys.executable, *argv[1:]], env={"GITOPS_AGENT_KUBECONFIG": str(agent.kubeconfig),
                                                               "GITOPS_AGENT_CACHE_DIR": str(agent.cache_dir)})
        done.append(proc)
    return done


def test_the_migration_guide_from_the_seed_operator_step_by_step(agent, repo, namespace, cluster, objects, tmp_path):
    """docs/guides/migrating.md, "From the original kopf operator": every command of its five
    steps run as written. The operator is a Deployment standing for it (kwok runs its pod); its
    children are made as the seed's operator makes them; the agent in the cluster (step 5) is
    deploy/ applied, and a pass run here with its ServiceAccount's token and its Deployment's
    variables stands in for its pod (tests/test_deploy.py: no image runs here)."""
    steps = guide_steps()
    assert sorted(steps) == [1, 2, 3, 4, 5] and all(steps.values()), steps
    values = {"OPERATOR_NAMESPACE": namespace, "OPERATOR": "app-operator", "REPO": str(repo.path),
              "NAMESPACE": namespace, "NAME": "web"}
    cluster.kubectl("-n", namespace, "create", "deployment", "app-operator", "--image=app-operator:1")
    seed_operator_made(cluster, objects, namespace)
    wait_for(lambda: objects.deployment(namespace, "app-operator")["status"].get("readyReplicas") == 1, timeout=60,
             what="the operator to run")
    app_uid = objects.app(namespace, "web")["metadata"]["uid"]
    _, deployment, service = objects.trio(namespace, "web")

    run_step(1, values, agent, cluster)  # stop the operator
    wait_for(lambda: not objects.core.list_namespaced_pod(namespace, label_selector="app=app-operator").items,
             timeout=60, what="the operator's pods to go")
    assert objects.deployment(namespace, "app-operator")["spec"]["replicas"] == 0
    assert objects.deployment(namespace, "web")["status"]["readyReplicas"] == 1  # the children keep running

    head = in_git(repo, namespace=namespace)  # step 2: into Git as they are, and preview; nothing is written
    [proc] = run_step(2, values, agent, cluster)
    assert proc.returncode in (0, 1), proc.stderr
    assert f"Service/{namespace}/web adopt (" in proc.stdout and "2 adopt" in proc.stdout
    assert objects.service(namespace, "web")["metadata"]["resourceVersion"] == service["metadata"]["resourceVersion"]

    [proc] = run_step(3, values, agent, cluster)  # sync
    assert proc.returncode == 0, proc.stderr
    kept = "kept its selector app=web (immutable), so one rolling update replaces its pods and the Service selects the same pods"
    assert (f"Deployment/{namespace}/web adopted (its controller ownerReference names this Application; {kept}; "
            "fields taken from OpenAPI-Generator)") in proc.stdout
    assert (f"Service/{namespace}/web adopted (its controller ownerReference names this Application; fields taken "
            "from OpenAPI-Generator)") in proc.stdout
    app, new_deployment, new_service = objects.trio(namespace, "web")
    assert app["metadata"]["uid"] == app_uid and app["status"]["lastSyncedCommit"] == head
    assert new_service["metadata"]["uid"] == service["metadata"]["uid"]  # the Service and its clusterIP stay
    assert new_service["spec"]["clusterIP"] == service["spec"]["clusterIP"]
    assert new_service["spec"]["selector"] == {"app": "web"}  # the kept selector: the old pods and the new ones
    assert new_deployment["metadata"]["uid"] == deployment["metadata"]["uid"]  # kept, not recreated
    assert new_deployment["spec"]["selector"] == {"matchLabels": {"app": "web"}}
    assert new_deployment["spec"]["template"]["metadata"]["labels"].items() >= {"app": "web", **SELECTOR}.items()
    managers = {e["manager"] for e in new_service["metadata"]["managedFields"] if e["operation"] == "Apply"}
    assert managers == {"gitops-agent"}
    [event] = agent_events(objects, namespace, "Adopted")  # names each child and the managers it took fields from
    assert event["message"].startswith(
        f"adopted Deployment/{namespace}/web (its controller ownerReference names this Application; {kept}; "
        f"fields taken from OpenAPI-Generator), Service/{namespace}/web (its controller ownerReference names this "
        "Application; fields taken from OpenAPI-Generator)"), event["message"]

    # step 4, once the new pods are ready: the next pass writes nothing, and the Application is Ready
    wait_for(lambda: (objects.deployment(namespace, "web")["status"].get("updatedReplicas") == 1
                      and objects.deployment(namespace, "web")["status"].get("replicas") == 1), timeout=120,
             what="the rolling update")
    before = api_writes(cluster)
    proc, ready = run_step(4, values, agent, cluster)
    after = api_writes(cluster)
    assert proc.returncode == 0, proc.stderr
    assert "0 created, 0 configured, 3 unchanged, 0 pruned, 0 failed" in proc.stdout
    writes = {k: v for k, v in new_writes(before, after).items() if k[2] != "status"}
    assert writes == {}, f"the pass after the adoption wrote: {writes}"
    assert ready.stdout.strip() == "application.heumsi.github.io/web condition met"

    # step 5: deploy/ with GITOPS_AGENT_REPO set to REPO, applied; its first pass writes nothing
    shutil.copytree(ROOT / "deploy", tmp_path / "deploy")
    manifest = tmp_path / "deploy" / "deployment.yaml"
    shipped = '"https://github.com/example/apps.git"'
    assert manifest.read_text().count(shipped) == 1
    manifest.write_text(manifest.read_text().replace(shipped, json.dumps(str(repo.path))))
    kustomization = tmp_path / "deploy" / "kustomization.yaml"  # cluster-wide, as the operator ran (step 5)
    kept_text = kustomization.read_text()
    kustomization.write_text(kept_text.replace("  - components/namespaced-rbac", "  # - components/namespaced-rbac"))
    try:
        run_step(5, values, agent, cluster, cwd=tmp_path)
        pod = objects.deployment("gitops-agent", "gitops-agent")["spec"]["template"]["spec"]
        env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]
               if e["name"] in ("GITOPS_AGENT_REPO", "GITOPS_AGENT_REF", "GITOPS_AGENT_PATH")}
        assert env["GITOPS_AGENT_REPO"] == str(repo.path)
        env.update(GITOPS_AGENT_KUBECONFIG=str(service_account_kubeconfig(cluster, tmp_path)),
                   GITOPS_AGENT_CACHE_DIR=str(tmp_path / "pod-cache"))
        before = api_writes(cluster)
        proc = agent.run([sys.executable, "-m", "agent", "sync", "--once"], env=env)
        after = api_writes(cluster)
    finally:
        cluster.kubectl("delete", "deployment", "gitops-agent", "-n", "gitops-agent", "--ignore-not-found",
                        check=False)
    assert proc.returncode == 0, proc.stderr
    assert "0 created, 0 configured, 3 unchanged, 0 pruned, 0 failed" in proc.stdout
    writes = {k: v for k, v in new_writes(before, after).items() if k[2] != "status"}
    assert writes == {}, f"the in-cluster agent's first pass wrote: {writes}"

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


def test_a_child_whose_reference_names_an_earlier_application_of_its_name_is_adopted_and_the_reference_replaced(
        agent, repo, namespace, cluster, objects):
    """The Application is deleted and made again (here by the agent, from Git) while its
    children stand: their controller ownerReference names it by group, kind and name but with
    the old uid, and no other controller holds them. They are adopted in place (uid kept, no
    new ReplicaSet), the stale reference replaced by the new one, and the report and the
    ``Adopted`` Event say so (docs/concepts.md, "Adoption"; issue 30)."""
    cluster.kubectl("-n", namespace, "apply", "-f", "-", input=app_yaml("web", **SPEC))
    earlier = objects.app(namespace, "web")
    uids = operator_made(objects, earlier)
    wait_for(lambda: objects.deployment(namespace, "web")["status"].get("readyReplicas") == 1, timeout=120,
             what="the earlier install's Deployment to be ready")
    sets = replica_sets(objects, namespace)
    with deletes_refused(cluster, namespace) as refused:
        cluster.kubectl("-n", namespace, "delete", "application", "web", "--wait=true")
        wait_for(lambda: refused() >= 2, timeout=120, what="the garbage collector to try to delete both children")
        in_git(repo)
        proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 0, proc.stderr
    new = objects.app(namespace, "web")["metadata"]["uid"]
    old = earlier["metadata"]["uid"]
    why = (f"its controller ownerReference names an earlier Application web (uid {old}), deleted and made again, "
           f"and no other controller holds it: the stale reference is replaced by one to this Application (uid "
           f"{new}); fields taken from OpenAPI-Generator")
    for kind in ("Deployment", "Service"):
        assert f"{kind}/{namespace}/web adopted ({why})" in proc.stdout
    [event] = agent_events(objects, namespace, "Adopted")
    assert event["message"].startswith(f"adopted Deployment/{namespace}/web ({why}), Service/{namespace}/web ({why})")
    _, deployment, service = objects.trio(namespace, "web")
    for child in (deployment, service):
        assert child["metadata"]["uid"] == uids[child["kind"]]
        assert [(r["kind"], r["name"], r["uid"], r["controller"]) for r in child["metadata"]["ownerReferences"]] == \
            [("Application", "web", new, True)]
    assert replica_sets(objects, namespace) == sets
    assert_quiet(agent, repo, namespace, cluster, objects)  # the collector runs freely again by now
    assert [o["metadata"]["uid"] for o in objects.trio(namespace, "web")[1:]] == [uids["Deployment"], uids["Service"]]


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
    proc = agent.sync(repo.path, "--namespace", namespace)  # Git consents; the operator has not (issue 42)
    assert proc.returncode == 2
    assert (f'Service/{namespace}/web: exists and is controlled by nothing and was not made by the agent; the '
            f'Application has heumsi.github.io/adopt: "true", but the operator has not consented to adoption in '
            f"namespace '{namespace}' (--adopt-namespaces names where the annotation is honoured; it is not set), so "
            "it was not adopted") in proc.stderr
    assert objects.service(namespace, "web")["metadata"]["resourceVersion"] == service["metadata"]["resourceVersion"]
    consent = {"GITOPS_AGENT_ADOPT_NAMESPACES": namespace}
    proc = agent.run([sys.executable, "-m", "agent", "diff", "--repo", str(repo.path), "--kubeconfig",
                      str(agent.kubeconfig), "--cache-dir", str(agent.cache_dir), "--namespace", namespace], env=consent)
    assert proc.returncode == 1, proc.stderr  # the diff of an adopted object is against the live one
    assert f"--- live/Service/{namespace}/web" in proc.stdout and "/dev/null" not in proc.stdout
    proc = agent.sync(repo.path, "--namespace", namespace, env=consent)
    assert proc.returncode == 0, proc.stderr
    assert (f'Service/{namespace}/web adopted (no controller holds it and the Application has heumsi.github.io/adopt: '
            '"true"; fields taken from kubectl-create)') in proc.stdout
    [event] = agent_events(objects, namespace, "Adopted")
    assert (f'Service/{namespace}/web (no controller holds it and the Application has heumsi.github.io/adopt: "true"; '
            "fields taken from kubectl-create)") in event["message"], event["message"]
    after = objects.service(namespace, "web")
    assert after["metadata"]["uid"] == service["metadata"]["uid"]
    assert after["spec"]["selector"] == {"app": "web"}  # kubectl create's selector, kept by the Deployment
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


def application(name: str, spec: dict) -> str:
    return yaml.safe_dump({"apiVersion": "heumsi.github.io/v1", "kind": "Application", "metadata": {"name": name},
                           "spec": spec}, sort_keys=False)


def test_every_child_kind_an_operator_made_is_adopted_in_place(agent, repo, namespace, cluster, objects):
    """The rules hold for every kind of the registry (agent/kinds/registry.py), not only the
    Deployment and the Service: an Application with every field, its eight children (ConfigMap
    of spec.files, a task's Job, Deployment, Service, Ingress, HorizontalPodAutoscaler, PodDisruptionBudget, a
    schedule's CronJob) made
    as an operator makes them (``operator_made``), all adopted in one pass, each keeping its uid, no new
    ReplicaSet; the next pass writes nothing (``test_app_fields.quiet``). The operator's Job has
    completed, so the task is done and holds nothing (``taskgate``)."""
    spec = {**SHOP, "schedules": {"nightly": {"schedule": "0 3 * * *", "command": ["report"]}},
            "tasks": {"migrate": {"command": ["migrate"]}}, "disruptionBudget": {"maxUnavailable": 1},
            "ports": {"metrics": 9090}, "startupProbe": {"tcpSocket": {"port": "metrics"}, "failureThreshold": 30},
            "placement": {"nodeSelector": {"kubernetes.io/hostname": NODE_NAME}, "spreadAcross": ["zone", "node"],
                          "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]},
            "terminationGracePeriodSeconds": 10, "volumes": {"/tmp": {"emptyDir": {"sizeLimit": "64Mi"}}}}
    cluster.kubectl("-n", namespace, "apply", "-f", "-", input=application("shop", spec))
    live_app = objects.app(namespace, "shop")
    names = {c["kind"]: c["metadata"]["name"] for c in registry.children("shop", namespace, live_app["metadata"]["uid"],
                                                                          live_app["spec"])}
    uids = operator_made(objects, live_app)
    assert set(uids) == set(registry.BY_KIND)
    wait_for(lambda: (objects.deployment(namespace, "shop")["status"].get("readyReplicas") or 0) >= 1, timeout=120,
             what="the operator's Deployment to be ready")
    wait_for(lambda: (get(cluster, namespace, "job", names["Job"]).get("status") or {}).get("succeeded"),
             timeout=120, what="the operator's Job to complete")
    sets = replica_sets(objects, namespace)
    repo.write("shop.yaml", application("shop", spec))
    repo.commit("shop in Git")
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    why = "its controller ownerReference names this Application; fields taken from OpenAPI-Generator"
    for kind, uid in uids.items():
        assert f"{kind}/{namespace}/{names[kind]} adopted ({why})" in proc.stdout, kind
        live = get(cluster, namespace, registry.BY_KIND[kind].kind.lower(), names[kind])
        assert live["metadata"]["uid"] == uid, f"{kind} was not adopted in place"
        assert [e["operation"] for e in live["metadata"]["managedFields"] if e["manager"] == "gitops-agent"
                and not e.get("subresource")] == ["Apply"], kind
    assert "8 adopted" in proc.stdout.splitlines()[-1]
    [event] = agent_events(objects, namespace, "Adopted")
    for kind in uids:
        assert f"{kind}/{namespace}/{names[kind]} ({why})" in event["message"], event["message"]
    assert replica_sets(objects, namespace) == sets
    quiet(agent, repo, namespace, cluster)


def test_a_stranger_configmap_and_autoscaler_are_never_touched(agent, repo, namespace, cluster, objects):
    """A ConfigMap and a HorizontalPodAutoscaler in the Application's slots, controlled by
    something else: not modified or deleted, the Application fails with ``OwnershipConflict``
    naming each (exit 2), its other children and the other Applications sync, and nothing is
    pruned because of them."""
    from kubernetes import client

    keeper = client.CoreV1Api(objects.api_client).create_namespaced_config_map(
        namespace, {"metadata": {"name": "keeper"}}).metadata
    held = {"name": "shop", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "keeper",
                                                 "uid": keeper.uid, "controller": True}]}
    client.CoreV1Api(objects.api_client).create_namespaced_config_map(
        namespace, {"metadata": held, "data": {"theirs": "1"}})
    client.AutoscalingV2Api(objects.api_client).create_namespaced_horizontal_pod_autoscaler(namespace, {
        "metadata": held, "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "theirs"},
                                   "minReplicas": 1, "maxReplicas": 2}})
    before = {kind: get(cluster, namespace, kind)["metadata"]["resourceVersion"] for kind in ("configmap", "hpa")}
    repo.write("shop.yaml", application("shop", SHOP))
    repo.write("other.yaml", app_yaml("other"))
    repo.commit("shop and other")
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    for kind in ("ConfigMap", "HorizontalPodAutoscaler"):
        assert (f"{kind}/{namespace}/shop: exists and is controlled by ConfigMap/keeper (its controller "
                f"ownerReference), not by Application {namespace}/shop; field managers: OpenAPI-Generator; left alone. "
                "Delete or rename it") in proc.stderr, kind
    assert {kind: get(cluster, namespace, kind)["metadata"]["resourceVersion"] for kind in before} == before
    synced = {c["type"]: c for c in objects.app(namespace, "shop")["status"]["conditions"]}["Synced"]
    assert (synced["status"], synced["reason"]) == ("False", "OwnershipConflict")
    assert synced["message"].startswith(f"ConfigMap/{namespace}/shop: exists and ") and \
        f"or rename the Application; HorizontalPodAutoscaler/{namespace}/shop: exists and " in synced["message"]
    assert all(get(cluster, namespace, kind) for kind in ("deployment", "service", "ingress"))
    assert all(objects.trio(namespace, "other")) and " 0 pruned" in proc.stdout
