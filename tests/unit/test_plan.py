"""plan: pairing desired with live by identity, and the ownership rule for pruning."""

import pytest

from agent import plan, render


def app(name, ns="default", image="nginx:latest", labels=None, annotations=None):
    return {"apiVersion": "heumsi.github.io/v1", "kind": "Application",
            "metadata": {"name": name, "namespace": ns, "labels": labels or {}, "annotations": annotations or {}},
            "spec": {"image": image, "replicas": 1, "port": 80}}


OWNED = {render.MANAGED_BY: render.AGENT_NAME}


def test_identity_uses_group_kind_namespace_name():
    assert plan.identity(app("web", "team")) == ("heumsi.github.io", "Application", "team", "web")
    assert plan.identity({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "n"}}) \
        == ("", "Service", "n", "s")


@pytest.mark.parametrize("live, desired, action", [
    ([], [app("a")], plan.CREATE),
    ([app("a", labels=OWNED)], [app("a")], plan.UNCHANGED),
    ([app("a", image="old")], [app("a", image="new")], plan.UPDATE),
    # provenance annotations alone (a moved file, a new commit) are not a change
    ([app("a", annotations={render.SOURCE_PATH: "x.yaml"})],
     [app("a", annotations={render.SOURCE_PATH: "moved/x.yaml", render.SOURCE_COMMIT: "abc"})], plan.UNCHANGED),
    # a label the user added in Git is a change
    ([app("a")], [app("a", labels={"tier": "web"})], plan.UPDATE),
])
def test_desired_objects(live, desired, action):
    steps = plan.plan(desired, live)
    assert [s.action for s in steps] == [action]


@pytest.mark.parametrize("live, prunes", [
    ([app("gone", labels=OWNED)], ["Application/default/gone"]),
    ([app("handmade")], []),  # applied by hand: never pruned
    ([app("lookalike", labels={"app.kubernetes.io/name": "x"})], []),
])
def test_prune_only_what_the_agent_owns(live, prunes):
    steps = plan.plan([], live)
    assert [s.subject for s in steps if s.action == plan.PRUNE] == prunes


def test_no_prune_when_pass_is_not_clean():
    assert plan.plan([], [app("gone", labels=OWNED)], prune=False) == []


def test_child_needs_label_and_controller_owner_reference_to_be_owned():
    deployment, _ = render.children("web", "ns", "uid-1", {"image": "i", "replicas": 1, "port": 80})
    assert plan.owned(deployment)
    lookalike = {**deployment, "metadata": {**deployment["metadata"], "ownerReferences": []}}
    assert not plan.owned(lookalike)


@pytest.mark.parametrize("live, desired, expected", [
    ({"a": 1, "b": 2}, {"a": 1}, True),
    ({"a": 1}, {"a": 2}, False),
    ({"l": [{"x": 1, "y": 2}]}, {"l": [{"x": 1}]}, True),
    ({"l": [{"x": 1}, {"x": 2}]}, {"l": [{"x": 1}]}, False),
    ({}, {"a": None}, False),
])
def test_contains(live, desired, expected):
    assert plan.contains(live, desired) is expected


def test_applications_of_another_source_are_never_pruned():
    mine = app("mine", labels={**OWNED, render.SOURCE_LABEL: "src-a"})
    theirs = app("theirs", labels={**OWNED, render.SOURCE_LABEL: "src-b"})
    steps = plan.plan([], [mine, theirs], source="src-a")
    assert [s.subject for s in steps if s.action == plan.PRUNE] == ["Application/default/mine"]
