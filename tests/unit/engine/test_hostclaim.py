"""agent.engine.hostclaim: an Ingress may not take over a host and path another namespace serves;
the whole pass against the in-memory cluster, and what it costs (one list, only when an Ingress is
written)."""

from __future__ import annotations

import pytest

from agent.engine import hostclaim
from agent.engine.report import CREATED, FAILED
from tests.unit.engine.passes import NS, World, app_yaml, conditions


def ingress(namespace: str, name: str, host: str | None, *paths: str) -> dict:
    rule = {**({"host": host} if host else {}),
            "http": {"paths": [{"path": p, "pathType": "Prefix",
                                "backend": {"service": {"name": name, "port": {"number": 80}}}} for p in paths]}}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": namespace}, "spec": {"rules": [rule]}}


@pytest.mark.parametrize("a, b, overlap", [
    ("/", "/", True), ("/", "/login", True), ("/api", "/api/v1", True), ("/api/", "/api", True),
    ("/api", "/apis", False), ("/web", "/api", False), ("/apiX", "/api", False),
])
def test_overlaps(a, b, overlap):
    assert hostclaim.overlaps(a, b) is overlap and hostclaim.overlaps(b, a) is overlap


SHOP = [ingress("team-b", "shop", "shop.example.com", "/checkout", "/")]
CHECKOUT = [ingress("team-b", "shop", "shop.example.com", "/checkout")]
CATCH_ALL = [ingress("team-c", "default", None, "/")]


@pytest.mark.parametrize("desired, live, others, refused", [
    (ingress("team-a", "web", "shop.example.com", "/"), None, SHOP, "Ingress team-b/shop"),
    (ingress("team-a", "web", "shop.example.com", "/login"), None, SHOP, "Ingress team-b/shop"),  # under theirs
    (ingress("team-a", "web", "shop.example.com", "/api"), None, CHECKOUT, None),  # beside theirs
    (ingress("team-a", "web", "shop.example.com", "/checkout/pay"), None, CHECKOUT, "Ingress team-b/shop"),
    (ingress("team-a", "web", "blog.example.com", "/"), None, SHOP, None),
    (ingress("team-b", "web", "shop.example.com", "/"), None, SHOP, None),  # the same namespace: its own business
    (ingress("team-a", "web", "shop.example.com", "/"), ingress("team-a", "web", "shop.example.com", "/"), SHOP,
     None),  # served already: not a new claim
    (ingress("team-a", "web", None, "/"), None, CATCH_ALL, "claims every host (a rule with no host) path '/'"),
    (ingress("team-a", "web", "shop.example.com"), None, CHECKOUT, "path '/', which Ingress team-b/shop"),  # no path: /
    (ingress("team-a", "web", "shop.example.com", "/"), None, CATCH_ALL, None),
    # its own namespace's Ingress listed first does not hide another namespace's after it
    (ingress("team-b", "web", "shop.example.com", "/"), None,
     [ingress("team-b", "blog", "blog.example.com", "/"), ingress("team-c", "shop", "shop.example.com", "/")],
     "Ingress team-c/shop"),
])
def test_claims(desired, live, others, refused):
    why = hostclaim.claims(desired, live, others)
    assert (why is None) if refused is None else (refused in why)


def test_the_message_names_host_path_and_the_ingress_serving_it():
    why = hostclaim.claims(ingress("team-a", "web", "shop.example.com", "/login"), None,
                           [ingress("team-b", "shop", "shop.example.com", "/")])
    assert why == ("claims host 'shop.example.com' path '/login', which Ingress team-b/shop already serves ('/'): "
                   "another namespace's host is not taken over (OwnershipConflict); choose another host or path, "
                   "or remove that Ingress first")


class Counting(World):
    """A ``World`` whose cluster counts its cluster-wide Ingress lists."""

    def __init__(self, tmp_path):
        super().__init__(tmp_path)
        self.lists = 0
        unscoped = self.kube.list_unscoped

        def counted(group, kind):
            self.lists += 1
            return unscoped(group, kind)
        self.kube.list_unscoped = counted


def with_ingress(name: str, host: str) -> str:
    return app_yaml(name).replace("spec:\n", f"spec:\n  ingress: {{host: {host}}}\n")


def test_a_host_another_namespace_serves_fails_the_application_with_ownership_conflict(tmp_path):
    world = Counting(tmp_path)
    world.kube.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b"}})
    world.kube.add(ingress("team-b", "shop", "shop.example.com", "/"))
    world.commit({"web.yaml": with_ingress("web", "shop.example.com"), "blog.yaml": with_ingress("blog", "blog.example.com")})
    report = world.sync()
    refused = sorted((c.subject, c.action) for c in report.changes if c.subject.startswith("Ingress/"))
    assert refused == [(f"Ingress/{NS}/blog", CREATED), (f"Ingress/{NS}/web", FAILED)]
    assert any("claims host 'shop.example.com' path '/'" in e and "Ingress team-b/shop" in e for e in report.errors)
    assert world.kube.stored("Ingress", NS, "web") is None and world.kube.stored("Ingress", NS, "blog") is not None
    assert conditions(world.app("web"))["Stalled"][:2] == ("True", "OwnershipConflict")
    assert world.lists == 1  # one list for the pass, whatever the number of Ingresses written
    world.commit({"web.yaml": app_yaml("web"), "blog.yaml": with_ingress("blog", "blog.example.com")})
    world.lists = 0
    world.sync()
    world.sync()
    assert world.lists == 0  # no Ingress written: no list


def test_two_applications_of_one_pass_cannot_claim_one_host(tmp_path):
    world = Counting(tmp_path)
    world.commit({"a.yaml": with_ingress("a", "shop.example.com"),
                  "b.yaml": with_ingress("b", "shop.example.com").replace("name: b\n", "name: b\n  namespace: other\n")})
    report = world.sync()
    assert sorted((c.subject, c.action) for c in report.changes if c.subject.startswith("Ingress/")) == [
        ("Ingress/other/b", CREATED), (f"Ingress/{NS}/a", FAILED)]  # the first in the pass's order wins


def test_an_agent_that_may_not_list_every_ingress_writes_none(tmp_path):
    from agent.kube.cluster import ApiError

    world = World(tmp_path)

    def refused(group, kind):
        raise ApiError(403, "Forbidden", 'ingresses.networking.k8s.io is forbidden: User cannot list resource '
                       '"ingresses" at the cluster scope', "GET /apis/networking.k8s.io/v1/ingresses")
    world.kube.list_unscoped = refused
    world.commit({"web.yaml": with_ingress("web", "shop.example.com"), "db.yaml": app_yaml("db")})
    report = world.sync()
    assert [(c.subject, c.action) for c in report.changes if c.action == FAILED] == [(f"Ingress/{NS}/web", FAILED)]
    assert world.kube.stored("Ingress", NS, "web") is None and world.kube.stored("Deployment", NS, "db") is not None
    assert any("listing Ingresses in every namespace was refused" in e for e in report.errors)


@pytest.mark.parametrize("theirs, host, covered", [
    ("shop.example.com", "shop.example.com", True), ("*.example.com", "shop.example.com", True),
    ("*.example.com", "a.shop.example.com", False), ("*.example.com", "example.com", False),
    ("shop.example.com", "*.example.com", False),  # a wildcard yields to the exact host: nothing is taken
    ("*.example.com", "*.example.com", True), ("", "", True), ("", "shop.example.com", False),
    ("*.example", "example", False), ("*.example", "shop.example", True),
])
def test_covers(theirs, host, covered):
    assert hostclaim.covers(theirs, host) is covered
