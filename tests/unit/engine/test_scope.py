"""agent.scope: which namespaces --allowed-namespaces lets in, and the refusals it makes; its
writes and reads against the in-memory cluster (``tests/unit/fakecluster.py``)."""

from __future__ import annotations

import pytest

from agent.engine import scope
from agent.kinds import deployment, render
from agent.manifests import loader as manifests
from tests.unit.fakecluster import FakeCluster


@pytest.mark.parametrize("namespace, patterns, ok", [
    ("team-web", None, True), ("team-web", ("team-*",), True), ("kube-system", ("team-*",), False),
    ("web", ("web", "db"), True), ("web2", ("web",), False), ("app-1", ("app-?",), True),
    ("app-12", ("app-?",), False), ("app-b", ("app-[ab]",), True), ("app-c", ("app-[ab]",), False),
])
def test_allowed(namespace, patterns, ok):
    assert scope.allowed(namespace, patterns) is ok


@pytest.mark.parametrize("patterns, names", [(None, None), (("b", "a", "a"), ["a", "b"]), (("a", "t-*"), None),
                                             (("a?",), None), (("[ab]",), None)])
def test_literal(patterns, names):
    assert scope.literal(patterns) == names


def test_split_names_file_line_and_namespace():
    text = (b"apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata: {name: web, namespace: ops-tools}\n"
            b"spec: {image: nginx, replicas: 1, port: 80}\n")
    loaded = manifests.load({"apps/web.yaml": text, "apps/ok.yaml": text.replace(b"ops-tools", b"team-a")},
                            "default")
    inside, outside = scope.split(loaded.manifests, ("team-*",))
    assert [m.namespace for m in inside] == ["team-a"]
    assert [str(e) for e in outside] == [
        "apps/web.yaml:3: metadata.namespace: Application ops-tools/web: namespace 'ops-tools' is not "
        "allowed (--allowed-namespaces team-*); nothing was created, changed or pruned there"]


@pytest.mark.parametrize("metadata, line", [
    ("metadata:\n  name: web\n  namespace: kube-system\n", 6),  # its own line
    ("metadata:\n  name: web\n", 2),  # the default namespace: the document's first key
])
def test_a_refused_namespace_is_cited_at_its_own_line(metadata, line):
    text = f"# comment\napiVersion: heumsi.github.io/v1\nkind: Application\n{metadata}spec: {{image: nginx, replicas: 1, port: 80}}\n"
    default = "kube-system"
    loaded = manifests.load({"w.yaml": text.encode()}, default)
    _, [refused] = scope.split(loaded.manifests, ("team-*",))
    assert (refused.path, refused.line, refused.field) == ("w.yaml", line, "metadata.namespace")


_APP = {"apiVersion": "heumsi.github.io/v1", "kind": "Application",
        "metadata": {"name": "web", "namespace": "team-new"}, "spec": {"image": "nginx:1.27", "replicas": 1}}
_WRITE = ("apply", "Application/team-new/web")


def _cluster(*namespaces: str) -> FakeCluster:
    """The in-memory cluster with only ``namespaces``: a write elsewhere is 404 ``namespaces
    "NAME" not found``, as the API server answers."""
    return FakeCluster(namespaces=namespaces)


def test_plain_names_create_a_missing_namespace_and_write_again_once():
    kube = _cluster()
    assert scope.ScopedKube(kube, ("team-new",)).apply(_APP)["metadata"]["name"] == "web"
    assert kube.writes == [_WRITE, ("create", "Namespace/team-new"), _WRITE]
    made = kube.stored("Namespace", "", "team-new")
    assert made["metadata"]["labels"] == {"heumsi.github.io/created-by": "gitops-agent"}
    assert kube.stored("Application", "team-new", "web") is not None


def test_a_namespace_another_write_just_made_is_written_into():
    kube = _cluster()
    # another write makes it just before the agent's create, which the API server answers 409 AlreadyExists
    kube.on("create", "Namespace", lambda request: kube.add(render.namespace(request.name), manager="kubectl"))
    assert scope.ScopedKube(kube, ("team-new",)).apply(_APP)["metadata"]["name"] == "web"
    assert kube.writes == [_WRITE, ("create", "Namespace/team-new"), _WRITE]
    assert kube.stored("Application", "team-new", "web") is not None


def test_a_namespace_the_agent_may_not_create_is_named_with_how_to_make_it():
    kube = _cluster()
    kube.fail("create", "Namespace/team-new", scope.ApiError(
        403, "Forbidden", "namespaces is forbidden: User cannot create", "POST /api/v1/namespaces"))
    with pytest.raises(scope.ApiError) as caught:
        scope.ScopedKube(kube, ("team-new",)).apply(_APP)
    assert (caught.value.status, caught.value.reason) == (403, "Forbidden")
    assert caught.value.message == ("namespace 'team-new' does not exist and the agent could not create it "
                                    "(namespaces is forbidden: User cannot create); create it (kubectl create "
                                    "namespace team-new) or allow the agent to create namespaces")
    assert kube.writes == [_WRITE, ("create", "Namespace/team-new")]


@pytest.mark.parametrize("patterns, err", [
    (("team-*",), scope.ApiError(404, "NotFound", 'namespaces "team-new" not found')),  # globs: the pass made it
    (("team-new",), scope.ApiError(404, "NotFound", 'applications "web" not found')),  # another 404
    (("team-new",), scope.ApiError(403, "Forbidden", 'namespaces "team-new" not found')),
])
def test_other_failures_are_raised_as_they_are(patterns, err):
    kube = _cluster()
    kube.fail("apply", "Application/team-new/web", err)
    with pytest.raises(scope.ApiError) as caught:
        scope.ScopedKube(kube, patterns).apply(_APP)
    assert caught.value is err and kube.writes == [_WRITE]


def test_events_go_through_the_scope_and_none_is_written_outside(caplog):
    kube = _cluster()
    scoped = scope.ScopedKube(kube, ("team-*",))
    inside = {"kind": "Application", "metadata": {"name": "web", "namespace": "team-a"}}
    assert scoped.event(inside, "Normal", "Created", "made") is None
    assert scoped.event(_APP | {"metadata": {"name": "db", "namespace": "other"}}, "Normal", "Created", "x") is None
    assert [(e["namespace"], e["reason"], e["message"]) for e in kube.events] == [("team-a", "Created", "made")]
    assert [r.getMessage() for r in caplog.records] == [
        f"could not record event Created on db: {scope.refusal('other', ('team-*',))}"]


@pytest.mark.parametrize("namespace, patterns, agent_namespace, ok", [
    ("kube-system", None, None, False), ("kube-public", None, None, False), ("kube-node-lease", None, None, False),
    ("kube-system", ("*",), None, False), ("kube-system", ("kube-*",), None, False),  # a glob does not let it in
    ("kube-system", ("kube-system",), None, True), ("kube-system", ("team-*", "kube-system"), None, True),
    ("gitops-agent", None, "gitops-agent", False), ("gitops-agent", ("*",), "gitops-agent", False),
    ("gitops-agent", ("gitops-agent",), "gitops-agent", True), ("gitops-agent", None, None, True),
    ("team-a", None, "gitops-agent", True), ("team-a", ("*",), "gitops-agent", True), ("kube-systemx", None, None, True),
])
def test_system_and_own_namespaces_only_by_their_plain_name(namespace, patterns, agent_namespace, ok):
    assert scope.permitted(namespace, patterns, agent_namespace) is ok


def test_split_refuses_a_system_namespace_without_the_flag_naming_the_rule_and_how_to_allow_it():
    text = (b"apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata: {name: dns, namespace: kube-system}\n"
            b"spec: {image: nginx, replicas: 1, port: 80}\n")
    loaded = manifests.load({"apps/dns.yaml": text, "apps/own.yaml": text.replace(b"kube-system", b"gitops-agent"),
                             "apps/ok.yaml": text.replace(b"kube-system", b"team-a")}, "default")
    inside, outside = scope.split(loaded.manifests, None, "gitops-agent")
    assert [m.namespace for m in inside] == ["team-a"]
    assert sorted(str(e) for e in outside) == [
        "apps/dns.yaml:3: metadata.namespace: Application kube-system/dns: namespace 'kube-system' is a system "
        "namespace, refused unless --allowed-namespaces names it as a plain name (a glob does not; add "
        "'kube-system' to the list to allow it); nothing was created, changed or pruned there",
        "apps/own.yaml:3: metadata.namespace: Application gitops-agent/dns: namespace 'gitops-agent' is the agent's "
        "own namespace (POD_NAMESPACE), refused unless --allowed-namespaces names it as a plain name (a glob does "
        "not; add 'gitops-agent' to the list to allow it); nothing was created, changed or pruned there"]
    inside, outside = scope.split(loaded.manifests, ("kube-system", "team-*"), "gitops-agent")
    assert sorted(m.namespace for m in inside) == ["kube-system", "team-a"] and len(outside) == 1


def test_without_the_flag_the_scope_still_refuses_writes_and_hides_reads_in_protected_namespaces():
    kube = _cluster("kube-system", "team-a", "ops")
    for namespace in ("kube-system", "team-a", "ops"):
        kube.add(deployment.KIND.render("x", namespace, "u", {"image": "nginx:1.27", "replicas": 1}))
    scoped = scope.ScopedKube(kube, None, "ops")
    assert [o["metadata"]["namespace"] for o in scoped.list("apps", "Deployment")] == ["team-a"]
    assert scoped.list_in("apps", "Deployment", "kube-system") == []
    with pytest.raises(scope.ApiError) as caught:
        scoped.apply({"kind": "Deployment", "metadata": {"name": "x", "namespace": "kube-system"}})
    assert (caught.value.status, caught.value.reason) == (403, "OutsideAllowedNamespaces")
    assert [(r.verb, r.namespace) for r in kube.requests] == [("list", "")]  # nothing sent for kube-system
