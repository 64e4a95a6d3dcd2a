"""agent.kube.client.tenant_of: which requests ``--tenant-service-account`` sends as the tenant."""

from __future__ import annotations

import pytest

from agent.kube.client import tenant_of


@pytest.mark.parametrize("method, path, who", [
    ("PATCH", "/apis/apps/v1/namespaces/team-a/deployments/web", ("team-a", "system:serviceaccount:team-a:tenant")),
    ("POST", "/api/v1/namespaces/team-b/services", ("team-b", "system:serviceaccount:team-b:tenant")),
    ("DELETE", "/api/v1/namespaces/team-a/configmaps/web-files", ("team-a", "system:serviceaccount:team-a:tenant")),
    ("PATCH", "/apis/networking.k8s.io/v1/namespaces/team-a/ingresses/web",
     ("team-a", "system:serviceaccount:team-a:tenant")),
    ("PATCH", "/apis/autoscaling/v2/namespaces/team-a/horizontalpodautoscalers/web",
     ("team-a", "system:serviceaccount:team-a:tenant")),
    ("GET", "/apis/apps/v1/namespaces/team-a/deployments/web", None),  # reads are the agent's
    ("PATCH", "/apis/heumsi.github.io/v1/namespaces/team-a/applications/web", None),  # Applications too
    ("PATCH", "/apis/heumsi.github.io/v1/namespaces/team-a/applications/web/status", None),
    ("POST", "/api/v1/namespaces/team-a/events", None),
    ("POST", "/api/v1/namespaces", None),
    ("PATCH", "/apis/coordination.k8s.io/v1/namespaces/ops/leases/gitops-agent", None),
    ("POST", "/api/v1/namespaces/team-a/secrets", None),  # not a child kind: the agent never writes one
])
def test_child_writes_go_as_the_namespaces_service_account(method, path, who):
    assert tenant_of(method, path, "tenant") == who
    assert tenant_of(method, path, None) is None
