"""A kept selector (``agent.kinds.selector``): when a take-over keeps the live selector, and how
every child that selects the Application's serving pods follows it."""

from __future__ import annotations

from agent.api.labels import KEPT_SELECTOR
from agent.kinds import deployment, disruptionbudget, selector, service
from agent.kinds.render import selector_labels

OPERATOR = {"app": "web"}
SPEC = {"image": "nginx:1.27", "replicas": 2, "port": 80, "placement": {"spreadAcross": ["node"]},
        "disruptionBudget": {"minAvailable": 1}}


def rendered(kind) -> dict:
    return kind.render("web", "shop", "uid-1", SPEC)


def live_with(selector_: dict) -> dict:
    return {"kind": "Deployment", "metadata": {"name": "web"}, "spec": {"selector": selector_}}


def test_a_different_match_labels_selector_is_kept_when_adopted_or_kept_before():
    assert selector.kept(live_with({"matchLabels": OPERATOR}), rendered(deployment), adopting=True) == OPERATOR
    assert selector.kept(live_with({"matchLabels": OPERATOR}), rendered(deployment)) is None  # the agent's own
    earlier = live_with({"matchLabels": OPERATOR})
    earlier["metadata"]["annotations"] = {KEPT_SELECTOR: "app=web"}
    assert selector.kept(earlier, rendered(deployment)) == OPERATOR


def test_nothing_is_kept_without_a_live_object_or_with_the_same_selector():
    assert selector.kept(None, rendered(deployment), adopting=True) is None
    assert selector.kept(live_with({"matchLabels": selector_labels("web")}), rendered(deployment), adopting=True) is None
    assert selector.kept(live_with({"matchLabels": OPERATOR}), None, adopting=True) is None


def test_a_selector_with_expressions_or_no_labels_is_not_kept():
    expressions = {"matchLabels": OPERATOR, "matchExpressions": [{"key": "tier", "operator": "Exists"}]}
    assert selector.kept(live_with(expressions), rendered(deployment), adopting=True) is None
    assert selector.kept(live_with({"matchLabels": {}}), rendered(deployment), adopting=True) is None
    assert selector.kept(live_with({"matchLabels": {"app": 1}}), rendered(deployment), adopting=True) is None
    assert selector.kept({"kind": "Deployment", "metadata": {}, "spec": {}}, rendered(deployment), adopting=True) is None


def test_the_deployment_keeps_the_selector_and_its_pods_carry_both_label_sets():
    want = rendered(deployment)
    out = selector.keep(want, {"app": "web", "app.kubernetes.io/instance": "web-prod"})
    spec = out["spec"]
    assert spec["selector"] == {"matchLabels": {"app": "web", "app.kubernetes.io/instance": "web-prod"}}
    labels = spec["template"]["metadata"]["labels"]
    assert labels["app"] == "web" and labels["app.kubernetes.io/instance"] == "web-prod"  # the kept ones win
    assert labels["heumsi.github.io/application"] == "web"
    [spread] = spec["template"]["spec"]["topologySpreadConstraints"]
    assert spread["labelSelector"] == {"matchLabels": {"app": "web", "app.kubernetes.io/instance": "web-prod"}}
    assert out["metadata"]["annotations"][KEPT_SELECTOR] == "app=web,app.kubernetes.io/instance=web-prod"
    assert want["spec"]["selector"] == {"matchLabels": selector_labels("web")}  # a copy: the rendered one is kept
    assert out["spec"]["template"]["spec"]["containers"] == want["spec"]["template"]["spec"]["containers"]


def test_the_service_and_the_budget_select_the_kept_labels():
    assert selector.keep(rendered(service), OPERATOR)["spec"]["selector"] == OPERATOR
    assert selector.keep(rendered(disruptionbudget), OPERATOR)["spec"]["selector"] == {"matchLabels": OPERATOR}
    other = {"kind": "ConfigMap", "metadata": {"name": "web"}, "data": {}}
    assert selector.keep(other, OPERATOR) is other


def test_the_note_names_the_selector_sorted():
    assert selector.described({"b": "2", "a": "1"}) == "a=1,b=2"
    assert "kept its selector app=web (immutable)" in selector.note(OPERATOR)


def test_the_pods_of_a_deployment_are_those_its_live_selector_selects():
    assert deployment.selected(live_with({"matchLabels": OPERATOR}), "web") == OPERATOR
    assert deployment.selected(None, "web") == selector_labels("web")
    assert deployment.selected(live_with({}), "web") == selector_labels("web")


def test_a_take_over_is_known_by_its_annotation_or_by_pods_labelled_both_ways():
    live = live_with({"matchLabels": OPERATOR})
    live["metadata"]["labels"] = {"heumsi.github.io/application": "web"}
    assert not selector.taken_over(live)  # the agent's own, rendered with another selector: recreated
    live["spec"]["template"] = {"metadata": {"labels": {**OPERATOR, "heumsi.github.io/application": "web"}}}
    assert selector.taken_over(live)  # the annotation was removed by hand: the pods still say so
    assert selector.kept(live, rendered(deployment)) == OPERATOR


def test_the_note_names_the_pod_labels_lost_and_a_recreate_strategy():
    live = live_with({"matchLabels": OPERATOR})
    live["spec"]["template"] = {"metadata": {"labels": {**OPERATOR, "tier": "front", "version": "v1"}}}
    live["spec"]["strategy"] = {"type": "Recreate"}
    desired = selector.keep(rendered(deployment), OPERATOR)
    text = selector.note(OPERATOR, live, desired)
    assert "its pods lose the labels tier, version (not in Git: spec.podLabels keeps them)" in text
    assert "its strategy is Recreate, which stops every pod first (spec.rollout sets a rolling update)" in text
    rolling = selector.keep(deployment.render("web", "shop", "u", {**SPEC, "rollout": {"maxSurge": 1}}), OPERATOR)
    assert "Recreate" not in selector.note(OPERATOR, live, rolling)
    assert selector.note(OPERATOR) == selector.note(OPERATOR, None, desired)
