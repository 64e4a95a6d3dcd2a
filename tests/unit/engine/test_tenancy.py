"""agent.engine.tenancy: the ServiceAccounts an Application's pods may run as."""

from __future__ import annotations

import pytest

from agent.engine import tenancy
from agent.manifests import loader as manifests
from tests.unit.engine.passes import NS, World, app_yaml

_OWN = tenancy.Policy("ops", "gitops-agent")


@pytest.mark.parametrize("namespace, account, policy, refused", [
    ("ops", "gitops-agent", _OWN, "the agent's own ServiceAccount"),
    ("team-a", "gitops-agent", _OWN, None),  # another namespace's account of that name is not the agent's
    ("ops", "web", _OWN, None), ("ops", None, _OWN, None),
    ("ops", "gitops-agent", tenancy.Policy("ops", None), None),  # not known: nothing to compare with
    ("team-a", "ci-admin", tenancy.Policy(allowed_service_accounts=("app-*", "web")), "is not allowed"),
    ("team-a", "app-x", tenancy.Policy(allowed_service_accounts=("app-*", "web")), None),
    ("team-a", "web", tenancy.Policy(allowed_service_accounts=("app-*", "web")), None),
    ("team-a", None, tenancy.Policy(allowed_service_accounts=("app-*",)), None),  # the namespace's default
    ("ops", "gitops-agent", tenancy.Policy("ops", "gitops-agent", ("*",)), "the agent's own ServiceAccount"),
])
def test_service_account_problem(namespace, account, policy, refused):
    problem = tenancy.service_account_problem(namespace, account, policy)
    assert (problem is None) if refused is None else (refused in problem)


def test_refuse_names_file_line_field_and_application():
    text = (b"apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata: {name: grab, namespace: ops}\n"
            b"spec: {image: nginx, port: 80, serviceAccountName: gitops-agent}\n")
    loaded = manifests.load({"a.yaml": text, "b.yaml": text.replace(b"gitops-agent}", b"web}").replace(b"grab", b"web")}, "default")
    kept, refused = tenancy.refuse(loaded.manifests, _OWN)
    assert [m.path for m in kept] == ["b.yaml"]
    assert [str(e) for e in refused] == [
        "a.yaml:1: spec.serviceAccountName: Application ops/grab: 'gitops-agent' is the agent's own ServiceAccount "
        "(ops/gitops-agent, POD_SERVICE_ACCOUNT): its token holds the agent's permissions, so no Application may run "
        "pods as it; use a ServiceAccount of the Application's own; nothing was created, changed or pruned for it"]


@pytest.mark.parametrize("annotations, refused", [
    ({"nginx.ingress.kubernetes.io/server-snippet": "x"}, ["nginx.ingress.kubernetes.io/server-snippet"]),
    ({"nginx.ingress.kubernetes.io/configuration-snippet": "x", "nginx.ingress.kubernetes.io/auth-snippet": "y",
      "nginx.ingress.kubernetes.io/rewrite-target": "/"},
     ["nginx.ingress.kubernetes.io/auth-snippet", "nginx.ingress.kubernetes.io/configuration-snippet"]),
    ({"haproxy.org/backend-config-snippet": "x"}, ["haproxy.org/backend-config-snippet"]),
    ({"nginx.ingress.kubernetes.io/Server-Snippet": "x"}, ["nginx.ingress.kubernetes.io/Server-Snippet"]),
    ({"example.com/snippets-enabled": "true", "nginx.ingress.kubernetes.io/ssl-redirect": "true"}, []),
])
def test_snippet_annotations_are_refused_unless_allowed(annotations, refused):
    spec = {"image": "nginx", "port": 80, "ingress": {"host": "a.example.com", "annotations": annotations}}
    assert [w for f, w in tenancy.problems("team-a", spec, tenancy.Policy())] == [
        f"{k!r} injects configuration into the ingress controller, which serves every namespace's hosts from it; "
        "refused unless the operator allows it (--allow-ingress-snippets)" for k in refused]
    assert tenancy.problems("team-a", spec, tenancy.Policy(allow_ingress_snippets=True)) == []


@pytest.mark.parametrize("namespace, patterns, now", [
    ("team-a", ("team-*",), None),
    ("prod", ("team-*", "dev"), "it is team-*,dev"),
    ("prod", (), "it is "),
    ("prod", None, "it is not set"),
])
def test_adoption_denied_says_what_the_consent_is_now(namespace, patterns, now):
    why = tenancy.adoption_denied(namespace, patterns)
    if now is None:
        assert why is None
    else:
        assert why == ('the Application has heumsi.github.io/adopt: "true", but the operator has not consented to '
                       f"adoption in namespace {namespace!r} (--adopt-namespaces names where the annotation is "
                       f"honoured; {now}), so it was not adopted")


def test_a_pass_refuses_an_application_that_runs_as_the_agents_own_service_account(tmp_path):
    world = World(tmp_path, agent_namespace=NS, agent_service_account="gitops-agent", allowed_namespaces=(NS,))
    world.commit({"grab.yaml": app_yaml("grab", serviceAccountName="gitops-agent"), "web.yaml": app_yaml("web")})
    report = world.sync()
    assert [e for e in report.errors if "the agent's own ServiceAccount" in e] == [
        f"grab.yaml:1: spec.serviceAccountName: Application {NS}/grab: 'gitops-agent' is the agent's own "
        f"ServiceAccount ({NS}/gitops-agent, POD_SERVICE_ACCOUNT): its token holds the agent's permissions, so no "
        "Application may run pods as it; use a ServiceAccount of the Application's own; nothing was created, "
        "changed or pruned for it"]
    assert world.app("grab") is None and world.app("web") is not None
