"""``deploy/`` as shipped: ``kubectl apply -k deploy/`` installs an agent that syncs a public
repository with no Secret, with namespaced Roles (``components/namespaced-rbac``, on by default);
each other component (private HTTPS, SSH) is switched on by uncommenting its one line and renders,
and the cluster-wide ClusterRole is the opt-in of commenting the namespaced one out."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from tests.support import app_yaml

pytestmark = pytest.mark.usefixtures("crd")
ROOT = Path(__file__).resolve().parent.parent


def render(cluster, directory: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(cluster.kubectl("kustomize", str(directory)).stdout) if d]


NAMESPACED_LINE = "  - components/namespaced-rbac  # the default: comment it out for the cluster-wide ClusterRole\n"


def edited(tmp_path: Path, line: str, new: str) -> Path:
    """A copy of deploy/ with ``line`` of its kustomization.yaml (there once) replaced by ``new``."""
    copy = tmp_path / "deploy"
    shutil.copytree(ROOT / "deploy", copy)
    text = (copy / "kustomization.yaml").read_text()
    assert text.count(line) == 1
    (copy / "kustomization.yaml").write_text(text.replace(line, new))
    return copy


def with_component(tmp_path: Path, component: str) -> Path:
    """A copy of deploy/ with the component's one line uncommented."""
    return edited(tmp_path, f"  # - components/{component}\n", f"  - components/{component}\n")


def agent_env(docs: list[dict]) -> dict:
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value") for e in container["env"]}


def test_the_base_needs_no_secret(cluster):
    docs = render(cluster, ROOT / "deploy")
    assert sorted(d["kind"] for d in docs) == sorted(["Namespace", "ServiceAccount", "ClusterRole",
                                                      "ClusterRoleBinding", "Role", "RoleBinding", "Deployment",
                                                      "Service", "NetworkPolicy"]
                                                     + ["Role", "RoleBinding"]  # Events on the agent's Pod
                                                     + ["Namespace", "ServiceAccount"] + ["Role", "RoleBinding"] * 2
                                                     + ["Namespace", "ServiceAccount"] + ["Role", "RoleBinding"] * 2)
    # the tenants team-a and team-b (tenants.yaml), each with the agent's Role (namespaced-rbac) and the tenant's
    env = agent_env(docs)
    assert "GITOPS_AGENT_GIT_TOKEN_FILE" not in env and "GITOPS_AGENT_SSH_KEY_FILE" not in env
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    assert "secret" not in json.dumps(deployment["spec"]["template"]["spec"].get("volumes", [])).lower()
    refs = [e["valueFrom"]["secretKeyRef"] for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]
            if "secretKeyRef" in e.get("valueFrom", {})]
    assert all(ref["optional"] for ref in refs)  # only the optional webhook secret: none is needed
    assert env["GITOPS_AGENT_ALLOWED_NAMESPACES"] == "team-a,team-b"  # an explicit namespace policy (issue 42)
    assert env["GITOPS_AGENT_TENANT_SERVICE_ACCOUNT"] == "gitops-tenant"
    assert {(d["metadata"]["namespace"], d["metadata"]["name"]) for d in docs if d["kind"] == "ServiceAccount"} == {
        ("gitops-agent", "gitops-agent"), ("team-a", "gitops-tenant"), ("team-b", "gitops-tenant")}
    # probes and metrics on a listener of their own, and only the webhook's and the metrics' ports let in
    assert env["GITOPS_AGENT_PROBE_ADDR"] == ":8082"
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["livenessProbe"]["httpGet"]["port"] == container["readinessProbe"]["httpGet"]["port"] == "probes"
    policy = next(d for d in docs if d["kind"] == "NetworkPolicy")
    assert sorted(port["port"] for rule in policy["spec"]["ingress"] for port in rule["ports"]) == ["http", "probes"]


@pytest.mark.parametrize("component, env_name, secret", [
    ("https-token", "GITOPS_AGENT_GIT_TOKEN_FILE", "gitops-agent-repo-token"),
    ("ssh", "GITOPS_AGENT_SSH_KEY_FILE", "gitops-agent-repo-ssh"),
])
def test_private_repository_components_render(cluster, tmp_path, component, env_name, secret):
    docs = render(cluster, with_component(tmp_path, component))
    env = agent_env(docs)
    assert env[env_name].startswith("/etc/gitops-agent/")
    if component == "ssh":
        assert env["GITOPS_AGENT_KNOWN_HOSTS_FILE"].startswith("/etc/gitops-agent/")
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "Secret"] == [secret]
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    volumes = deployment["spec"]["template"]["spec"]["volumes"]
    assert any(v.get("secret", {}).get("secretName") == secret for v in volumes)


def test_the_default_rbac_is_namespaced(cluster):
    """Issue 42: the namespaced-RBAC variant is the default. Its one cluster-wide grant is a list of
    Ingresses; the agent's Roles are in exactly the namespaces it is allowed, and watches (cluster-wide) are off."""
    docs = render(cluster, ROOT / "deploy")
    cluster_wide = [d for d in docs if d["kind"] in ("ClusterRole", "ClusterRoleBinding")]
    assert [(d["kind"], d["metadata"]["name"]) for d in cluster_wide] == [
        ("ClusterRole", "gitops-agent-ingress-hosts"), ("ClusterRoleBinding", "gitops-agent-ingress-hosts")]
    assert cluster_wide[0]["rules"] == [{"apiGroups": ["networking.k8s.io"], "resources": ["ingresses"],
                                         "verbs": ["list"]}]
    roles = {(d["metadata"]["namespace"], d["metadata"]["name"]) for d in docs if d["kind"] == "Role"}
    assert {("team-a", "gitops-agent"), ("team-b", "gitops-agent")} <= roles
    agent_roles = {d["metadata"]["namespace"] for d in docs if d["kind"] == "RoleBinding"
                   and d["subjects"] == [{"kind": "ServiceAccount", "name": "gitops-agent", "namespace": "gitops-agent"}]
                   and d["metadata"]["namespace"] != "gitops-agent"}
    env = agent_env(docs)
    assert set(env["GITOPS_AGENT_ALLOWED_NAMESPACES"].split(",")) == agent_roles == {"team-a", "team-b"}
    assert env["GITOPS_AGENT_WATCH"] == "false"


def test_the_cluster_wide_clusterrole_is_the_opt_in_of_commenting_the_namespaced_rbac_out(cluster, tmp_path):
    docs = render(cluster, edited(tmp_path, NAMESPACED_LINE, "  # - components/namespaced-rbac\n"))
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "ClusterRole"] == ["gitops-agent"]
    [binding] = [d for d in docs if d["kind"] == "ClusterRoleBinding"]
    assert binding["roleRef"]["name"] == "gitops-agent"
    roles = {(d["metadata"]["namespace"], d["metadata"]["name"]) for d in docs if d["kind"] == "Role"}
    assert ("team-a", "gitops-agent") not in roles and ("team-a", "gitops-tenant") in roles
    env = agent_env(docs)
    assert env["GITOPS_AGENT_ALLOWED_NAMESPACES"] == "team-*" and "GITOPS_AGENT_WATCH" not in env


def service_account_kubeconfig(cluster, tmp_path: Path) -> Path:
    """A kubeconfig for the cluster whose user is deploy/'s ServiceAccount ``gitops-agent`` (a
    token from the TokenRequest API): what the agent's pod runs with, for a process here
    standing in for it (kwok simulates the pods; no image runs)."""
    token = cluster.kubectl("create", "token", "gitops-agent", "-n", "gitops-agent").stdout.strip()
    config = json.loads(Path(cluster.kubeconfig).read_text())
    config["users"][0]["user"] = {"token": token}
    kubeconfig = tmp_path / "agent-kubeconfig"
    kubeconfig.write_text(json.dumps(config))
    return kubeconfig


TEAM = "team-a"  # deploy/'s first tenant namespace, where its namespaced Role lets the agent work


def clear_team(cluster) -> None:
    """No Application (hence, through their ownerReferences, no child) left in ``TEAM``."""
    cluster.kubectl("delete", "applications", "--all", "-n", TEAM, "--wait", "--ignore-not-found", check=False)


def test_apply_k_deploy_then_sync_a_public_repo_with_the_service_accounts_token(cluster, agent, repo, objects,
                                                                             tmp_path):
    """As shipped (namespaced RBAC), the ServiceAccount's token syncs into a tenant namespace with the
    namespace policy deploy/ sets; as itself it may write no child."""
    cluster.kubectl("apply", "-k", str(ROOT / "deploy"))
    clear_team(cluster)
    try:
        secrets = json.loads(cluster.kubectl("get", "secrets", "-n", "gitops-agent", "-o", "json").stdout)["items"]
        assert secrets == []
        env = agent_env(render(cluster, ROOT / "deploy"))
        kubeconfig = service_account_kubeconfig(cluster, tmp_path)
        repo.write("a.yaml", app_yaml("web") + "  schedules:\n    nightly: {schedule: '@daily'}\n")
        head = repo.commit()
        command = [sys.executable, "-m", "agent", "sync", "--once", "--repo", f"file://{repo.path}",
                   "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "c"), "--namespace", TEAM,
                   "--allowed-namespaces", env["GITOPS_AGENT_ALLOWED_NAMESPACES"]]
        proc = agent.run(command)  # as itself the agent may write no child (issue 42)
        assert proc.returncode == 2
        assert (f'User "system:serviceaccount:gitops-agent:gitops-agent" cannot patch resource "deployments" in API '
                f'group "apps" in the namespace "{TEAM}"') in proc.stderr
        assert objects.deployment(TEAM, "web") is None
        command += ["--tenant-service-account", env["GITOPS_AGENT_TENANT_SERVICE_ACCOUNT"]]
        proc = agent.run(command)
        assert proc.returncode == 0, proc.stderr
        assert objects.app(TEAM, "web")["status"]["lastSyncedCommit"] == head
        assert all(objects.trio(TEAM, "web"))
        cronjob = json.loads(cluster.kubectl("-n", TEAM, "get", "cronjob", "web-nightly", "-o", "json").stdout)
        assert cronjob["spec"]["schedule"] == "@daily"  # the tenant may write CronJobs
        proc = agent.run(command)  # a CronJob exists: Jobs read
        assert proc.returncode == 0, proc.stderr
        assert objects.app(TEAM, "web")["status"]["schedules"][0]["cronJob"] == "web-nightly"
        repo.write("a.yaml", app_yaml("web", namespace="team-c"))  # a namespace no Role of the agent's covers
        repo.commit()
        proc = agent.run(command)
        assert proc.returncode == 2 and "team-c" in proc.stderr, proc.stderr
        assert objects.app(TEAM, "web") is not None  # nothing pruned
    finally:
        clear_team(cluster)
        cluster.kubectl("delete", "deployment", "gitops-agent", "-n", "gitops-agent", "--ignore-not-found",
                        check=False)
