"""The tenant boundary (issue 42), against the real control plane: what one commit to the synced
branch may not do however the flags are left. A system namespace and the agent's own namespace
are refused unless named explicitly."""

from __future__ import annotations

import json

import pytest

from tests.support import app_yaml

pytestmark = pytest.mark.usefixtures("crd")


@pytest.mark.parametrize("flags", [(), ("--allowed-namespaces", "*"), ("--allowed-namespaces", "kube-*,team-*")])
def test_an_application_in_kube_system_is_refused_without_being_named(flags, agent, repo, namespace, objects):
    repo.write("dns.yaml", app_yaml("dns", namespace="kube-system"))
    repo.write("ok.yaml", app_yaml("ok", namespace=namespace))
    repo.commit()
    allowed = ("--allowed-namespaces", f"{namespace},{flags[1]}") if flags else ()
    proc = agent.sync(repo.path, *allowed)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert ("error: dns.yaml:5: metadata.namespace: Application kube-system/dns: namespace 'kube-system' is a system "
            "namespace, refused unless --allowed-namespaces names it as a plain name") in proc.stderr
    assert objects.trio("kube-system", "dns") == (None, None, None)
    assert all(objects.trio(namespace, "ok"))


def test_the_agents_own_namespace_is_refused_unless_named(agent, repo, namespaces, objects):
    own, team = namespaces("own"), namespaces("team")
    repo.write("a.yaml", app_yaml("grab", namespace=own))
    repo.write("b.yaml", app_yaml("web", namespace=team))
    repo.commit()
    env = {"POD_NAMESPACE": own}
    proc = agent.sync(repo.path, env=env)
    assert proc.returncode == 2
    assert (f"error: a.yaml:5: metadata.namespace: Application {own}/grab: namespace '{own}' is the agent's own "
            f"namespace (POD_NAMESPACE), refused unless --allowed-namespaces names it as a plain name (a glob does "
            f"not; add '{own}' to the list to allow it); nothing was created, changed or pruned there") in proc.stderr
    assert objects.trio(own, "grab") == (None, None, None) and all(objects.trio(team, "web"))
    proc = agent.sync(repo.path, "--allowed-namespaces", f"{own},{team}", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert all(objects.trio(own, "grab"))


def test_pods_may_not_run_as_the_agents_own_service_account(agent, repo, namespaces, objects):
    """The agent's own namespace let in by name (it is refused otherwise): an Application there still
    may not name the agent's ServiceAccount, whose token holds the agent's permissions."""
    own = namespaces("own")
    repo.write("a.yaml", app_yaml("grab", namespace=own).replace("spec:\n", "spec:\n  serviceAccountName: gitops-agent\n"))
    repo.write("b.yaml", app_yaml("web", namespace=own).replace("spec:\n", "spec:\n  serviceAccountName: web\n"))
    repo.commit()
    env = {"POD_NAMESPACE": own, "POD_SERVICE_ACCOUNT": "gitops-agent"}
    proc = agent.sync(repo.path, "--allowed-namespaces", own, env=env)
    assert proc.returncode == 2
    assert (f"error: a.yaml:1: spec.serviceAccountName: Application {own}/grab: 'gitops-agent' is the agent's own "
            f"ServiceAccount ({own}/gitops-agent, POD_SERVICE_ACCOUNT)") in proc.stderr
    assert objects.trio(own, "grab") == (None, None, None)
    assert objects.deployment(own, "web")["spec"]["template"]["spec"]["serviceAccountName"] == "web"


def test_the_operators_service_account_list_narrows_what_git_may_name(agent, repo, namespace, objects):
    repo.write("a.yaml", app_yaml("admin", namespace=namespace).replace("spec:\n", "spec:\n  serviceAccountName: ci-admin\n"))
    repo.write("b.yaml", app_yaml("web", namespace=namespace).replace("spec:\n", "spec:\n  serviceAccountName: app-web\n"))
    repo.write("c.yaml", app_yaml("db", namespace=namespace))
    repo.commit()
    proc = agent.sync(repo.path, env={"GITOPS_AGENT_ALLOWED_SERVICE_ACCOUNTS": "app-*"})
    assert proc.returncode == 2
    assert (f"error: a.yaml:1: spec.serviceAccountName: Application {namespace}/admin: 'ci-admin' is not allowed "
            "(--allowed-service-accounts app-*)") in proc.stderr
    assert objects.trio(namespace, "admin") == (None, None, None)
    assert all(objects.trio(namespace, "web")) and all(objects.trio(namespace, "db"))


def ingress(objects, namespace: str, name: str) -> dict | None:
    from kubernetes import client

    return objects._get(client.NetworkingV1Api(objects.api_client).read_namespaced_ingress, name, namespace)


def with_ingress(text: str, host: str, annotations: dict | None = None) -> str:
    extra = "".join(f"\n      {k}: {json.dumps(v)}" for k, v in (annotations or {}).items())
    return text.replace("spec:\n", f"spec:\n  ingress:\n    host: {host}\n" + (f"    annotations:{extra}\n" if extra else ""))


def test_a_host_another_namespace_serves_is_not_claimed(agent, repo, namespaces, objects, cluster):
    theirs, ours = namespaces("theirs"), namespaces("ours")
    cluster.kubectl("-n", theirs, "create", "ingress", "shop", "--rule=shop.example.com/*=shop:80")
    before = ingress(objects, theirs, "shop")["metadata"]["resourceVersion"]
    repo.write("grab.yaml", with_ingress(app_yaml("grab", namespace=ours), "shop.example.com"))
    repo.write("blog.yaml", with_ingress(app_yaml("blog", namespace=ours), "blog.example.com"))
    repo.commit()
    proc = agent.sync(repo.path, "--allowed-namespaces", ours)  # theirs is outside the scope, and still seen
    assert proc.returncode == 2
    assert (f"Ingress/{ours}/grab: claims host 'shop.example.com' path '/', which Ingress {theirs}/shop already serves "
            "('/'): another namespace's host is not taken over (OwnershipConflict)") in proc.stderr
    conditions = {c["type"]: c for c in objects.app(ours, "grab")["status"]["conditions"]}
    assert (conditions["Stalled"]["status"], conditions["Stalled"]["reason"]) == ("True", "OwnershipConflict")
    assert ingress(objects, ours, "blog") is not None and ingress(objects, ours, "grab") is None
    assert ingress(objects, theirs, "shop")["metadata"]["resourceVersion"] == before


def test_a_snippet_annotation_is_refused_unless_the_operator_allows_it(agent, repo, namespace, objects):
    snippet = {"nginx.ingress.kubernetes.io/server-snippet": "location /admin { proxy_pass http://10.0.0.1; }"}
    repo.write("web.yaml", with_ingress(app_yaml("web", namespace=namespace), "web.example.com", snippet))
    repo.commit()
    proc = agent.sync(repo.path)
    assert proc.returncode == 2
    assert (f"error: web.yaml:1: spec.ingress.annotations: Application {namespace}/web: "
            "'nginx.ingress.kubernetes.io/server-snippet' injects configuration into the ingress controller") \
        in proc.stderr
    assert objects.trio(namespace, "web") == (None, None, None)
    proc = agent.sync(repo.path, "--allow-ingress-snippets")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ingress(objects, namespace, "web")["metadata"]["annotations"] == snippet


TENANT_ROLE = """
apiVersion: v1
kind: ServiceAccount
metadata: {name: gitops-tenant, namespace: NS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: gitops-tenant, namespace: NS}
rules:
  - apiGroups: ["", "apps", "networking.k8s.io", "autoscaling"]
    resources: ["configmaps", "services", "deployments", "ingresses", "horizontalpodautoscalers"]
    verbs: ["get", "list", "create", "patch", "delete"]
  - apiGroups: ["heumsi.github.io"]
    resources: ["applications/finalizers"]
    verbs: ["update"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: gitops-tenant, namespace: NS}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: gitops-tenant}
subjects: [{kind: ServiceAccount, name: gitops-tenant, namespace: NS}]
"""


def test_children_are_written_as_the_namespaces_tenant_and_its_rbac_bounds_them(agent, repo, namespaces, objects,
                                                                                 cluster, tmp_path):
    """--tenant-service-account: a namespace whose tenant ServiceAccount may write the children gets them; one
    where it may not gets none, and the refusal names the verb, the object and the ServiceAccount."""
    granted, foreign = namespaces("granted"), namespaces("foreign")
    manifest = tmp_path / "tenant.yaml"
    manifest.write_text(TENANT_ROLE.replace("NS", granted))
    cluster.kubectl("apply", "-f", str(manifest))
    repo.write("a.yaml", app_yaml("web", namespace=granted))
    repo.write("b.yaml", app_yaml("grab", namespace=foreign))
    repo.commit()
    proc = agent.sync(repo.path, "--tenant-service-account", "gitops-tenant")
    assert proc.returncode == 2
    assert all(objects.trio(granted, "web"))
    deployment = objects.deployment(granted, "web")
    assert any(e["manager"] == "gitops-agent" and e["operation"] == "Apply" for e in deployment["metadata"]["managedFields"])
    assert objects.app(foreign, "grab") is not None  # the Application is the agent's own
    assert objects.deployment(foreign, "grab") is None and objects.service(foreign, "grab") is None
    assert (f'User "system:serviceaccount:{foreign}:gitops-tenant" cannot patch resource "deployments" in API group '
            f'"apps" in the namespace "{foreign}" (written as ServiceAccount {foreign}/gitops-tenant, '
            "--tenant-service-account: that namespace's RBAC does not allow it)") in proc.stderr
    assert f'deployments.apps "grab" is forbidden' in proc.stderr
