"""agent.scope: which namespaces --allowed-namespaces lets in, and the refusals it makes."""

from __future__ import annotations

import pytest

from agent import manifests, scope


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
    text = (b"apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata: {name: web, namespace: kube-system}\n"
            b"spec: {image: nginx, replicas: 1, port: 80}\n")
    loaded = manifests.load({"apps/web.yaml": text, "apps/ok.yaml": text.replace(b"kube-system", b"team-a")},
                            "default")
    inside, outside = scope.split(loaded.manifests, ("team-*",))
    assert [m.namespace for m in inside] == ["team-a"]
    assert [str(e) for e in outside] == [
        "apps/web.yaml:3: metadata.namespace: Application kube-system/web: namespace 'kube-system' is not "
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
