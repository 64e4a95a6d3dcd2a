"""plan: pairing desired with live by identity, and the ownership rule for pruning."""

import hashlib

import pytest

from agent.api import labels as keys
from agent.api.labels import MANAGED_BY, SOURCE_LABEL
from agent.engine import plan, sources
from agent.kinds import registry, render

APPLIED = [{"manager": "gitops-agent", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {"f:app.kubernetes.io/managed-by": {}}}}}]
"""managedFields of an object the agent's field manager applied."""


def app(name, ns="default", image="nginx:latest", labels=None, annotations=None, managed=None):
    managed = APPLIED if managed is None and (labels or {}).get(MANAGED_BY) else managed
    meta = {"name": name, "namespace": ns, "labels": labels or {}, "annotations": annotations or {}}
    return {"apiVersion": "heumsi.github.io/v1", "kind": "Application",
            "metadata": {**meta, "managedFields": managed} if managed else meta,
            "spec": {"image": image, "replicas": 1, "port": 80}}


def applied(obj):
    """``obj`` as the API server returns it after the agent applied it."""
    return {**obj, "metadata": {**obj["metadata"], "managedFields": APPLIED}}


OWNED = {MANAGED_BY: keys.AGENT_NAME}


def test_identity_uses_group_kind_namespace_name():
    assert plan.identity(app("web", "team")) == ("heumsi.github.io", "Application", "team", "web")
    assert plan.identity({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "n"}}) \
        == ("", "Service", "n", "s")


@pytest.mark.parametrize("live, desired, action", [
    ([], [app("a")], plan.Op.CREATE),
    ([app("a", labels=OWNED)], [app("a")], plan.Op.UNCHANGED),
    ([app("a", image="old")], [app("a", image="new")], plan.Op.UPDATE),
    # provenance annotations alone (a moved file, a new commit) are not a change
    ([app("a", annotations={keys.SOURCE_PATH: "x.yaml"})],
     [app("a", annotations={keys.SOURCE_PATH: "moved/x.yaml", keys.SOURCE_COMMIT: "abc"})], plan.Op.UNCHANGED),
    # a label the user added in Git is a change
    ([app("a")], [app("a", labels={"tier": "web"})], plan.Op.UPDATE),
])
def test_desired_objects(live, desired, action):
    steps = plan.plan(desired, live)
    assert [s.action for s in steps] == [action]


@pytest.mark.parametrize("live, prunes", [
    ([app("gone", labels=OWNED)], ["Application/default/gone"]),
    ([app("handmade")], []),  # applied by hand: never pruned
    ([app("lookalike", labels={"app.kubernetes.io/name": "x"})], []),
    # the agent's labels copied into a hand-applied manifest: no gitops-agent apply, not ours
    ([app("copied", labels=OWNED, managed=[{**APPLIED[0], "manager": "kubectl-client-side-apply",
                                            "operation": "Update"}])], []),
    ([app("server-side-copy", labels=OWNED, managed=[{**APPLIED[0], "manager": "gitops-agent",
                                                      "operation": "Update"}])], []),
])
def test_prune_only_what_the_agent_owns(live, prunes):
    steps = plan.plan([], live)
    assert [s.subject for s in steps if s.action == plan.Op.PRUNE] == prunes


def test_no_prune_when_pass_is_not_clean():
    assert plan.plan([], [app("gone", labels=OWNED)], prune=False) == []


def test_child_needs_label_and_controller_owner_reference_to_be_owned():
    deployment, service = map(applied, registry.children("web", "ns", "uid-1", {"image": "i", "replicas": 1, "port": 80}))
    assert plan.owned(deployment) and plan.owned(service)
    assert plan.owner_name(deployment) == "web"
    meta = deployment["metadata"]
    no_refs = {**deployment, "metadata": {**meta, "ownerReferences": []}}
    not_controller = {**deployment, "metadata": {**meta, "ownerReferences": [
        {**meta["ownerReferences"][0], "controller": False}]}}
    other_kind = {**deployment, "metadata": {**meta, "ownerReferences": [
        {**meta["ownerReferences"][0], "kind": "ReplicaSet"}]}}
    other_group = {**deployment, "metadata": {**meta, "ownerReferences": [
        {**meta["ownerReferences"][0], "apiVersion": "example.com/v1"}]}}
    no_label = {**deployment, "metadata": {**meta, "labels": {}}}
    not_applied = {**deployment, "metadata": {**meta, "managedFields": []}}
    # a canary made from the rendered manifest: same labels and ownerReference, another name
    canary = {**deployment, "metadata": {**meta, "name": "web-canary"}}
    for lookalike in (no_refs, not_controller, other_kind, other_group, no_label, not_applied, canary):
        assert not plan.owned(lookalike)
    assert plan.owner_name(no_refs) is None and plan.owner_name(not_controller) is None
    assert plan.owner_name(canary) == "web"


def test_a_child_copied_under_another_name_is_never_pruned():
    deployment, _ = map(applied, registry.children("web", "ns", "uid-1", {"image": "i", "replicas": 1, "port": 80}))
    canary = {**deployment, "metadata": {**deployment["metadata"], "name": "web-canary"}}
    steps = plan.plan([], [deployment, canary])
    assert [s.subject for s in steps if s.action == plan.Op.PRUNE] == ["Deployment/ns/web"]


def test_fields_other_managers_own_where_the_agent_renders_in_full_are_drift():
    desired, service = registry.children("web", "ns", "uid-1", {"image": "i", "replicas": 1, "port": 80})
    extra_port = {"f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"web"}': {"f:ports": {
        'k:{"containerPort":81,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}}}}}}}}
    patched = {"manager": "kubectl-patch", "operation": "Update", "apiVersion": "apps/v1",
               "fieldsType": "FieldsV1", "fieldsV1": extra_port}
    live = {**desired, "metadata": {**desired["metadata"], "managedFields": APPLIED + [patched]}}
    [step] = plan.plan([desired], [live])
    assert step.action == plan.Op.UPDATE and plan.drifted_ownership(live)
    # the same fields held by another controller's server-side apply are its business
    theirs = {**live, "metadata": {**live["metadata"], "managedFields": APPLIED + [
        {**patched, "manager": "autoscaler", "operation": "Apply"}]}}
    assert [s.action for s in plan.plan([desired], [theirs])] == [plan.Op.UNCHANGED]
    # and on an object the agent does not own, nothing is taken over
    foreign = {**live, "metadata": {**live["metadata"], "managedFields": [patched]}}
    assert not plan.drifted_ownership(foreign)
    assert [s.action for s in plan.plan([service], [applied(service)])] == [plan.Op.UNCHANGED]


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
    mine = app("mine", labels={**OWNED, SOURCE_LABEL: "src-a"})
    theirs = app("theirs", labels={**OWNED, SOURCE_LABEL: "src-b"})
    steps = plan.plan([], [mine, theirs], source="src-a")
    assert [s.subject for s in steps if s.action == plan.Op.PRUNE] == ["Application/default/mine"]


def test_owned_both_answers_owned_without_and_with_the_source_at_once():
    mine = app("mine", labels={**OWNED, SOURCE_LABEL: "src-a"})
    theirs = app("theirs", labels={**OWNED, SOURCE_LABEL: "src-b"})
    unlabelled = app("x", labels={SOURCE_LABEL: "src-a"}, managed=APPLIED)
    deployment, _ = map(applied, registry.children("web", "ns", "uid-1", {"image": "i", "replicas": 1, "port": 80}))
    canary = {**deployment, "metadata": {**deployment["metadata"], "name": "web-canary"}}
    for obj, both in ((mine, (True, True)), (theirs, (True, False)), (unlabelled, (False, False)),
                      (deployment, (True, True)), (canary, (False, False))):
        assert plan.owned_both(obj, "src-a") == both
        assert plan.owned_both(obj, None) == (both[0], both[0])
        assert (plan.owned(obj), plan.owned(obj, "src-a")) == both


def test_steps_carry_identity_desired_and_live():
    desired_new, desired_same, desired_changed = app("new"), app("same"), app("changed", image="new")
    live_same, live_changed, live_gone = app("same", labels=OWNED), app("changed", image="old"), app("gone", labels=OWNED)
    steps = plan.plan([desired_new, desired_same, desired_changed], [live_same, live_changed, live_gone])
    assert [(s.action, s.identity, s.desired, s.live) for s in steps] == [
        (plan.Op.CREATE, plan.identity(desired_new), desired_new, None),
        (plan.Op.UNCHANGED, plan.identity(desired_same), desired_same, live_same),
        (plan.Op.UPDATE, plan.identity(desired_changed), desired_changed, live_changed),
        (plan.Op.PRUNE, plan.identity(live_gone), None, live_gone)]
    assert [s.subject for s in steps][-1] == "Application/default/gone"


def test_cluster_scoped_identity_and_subject():
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    assert plan.identity(namespace) == ("", "Namespace", "", "team")
    assert plan.subject(plan.identity(namespace)) == "Namespace/team"


def test_objects_without_metadata_or_references_are_not_owned():
    assert not plan.owned({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}})
    assert plan.owner_name({"kind": "Service"}) is None
    assert plan.owner_name({"metadata": {"ownerReferences": [{"kind": "Application", "name": "x",
                                                             "controller": True}]}}) is None  # no apiVersion
    assert plan.contains({"metadata": {}}, plan._without_provenance({"metadata": {}}))


@pytest.mark.parametrize("obj", [
    {"apiVersion": "v1", "kind": "Service"},
    {"apiVersion": "heumsi.github.io/v1", "kind": "Application"},
])
def test_an_object_without_metadata_is_never_owned(obj):
    assert plan.owned(obj) is False
    assert plan.owned(obj, "repo-path") is False


def _children():
    return registry.children("web", "ns", "uid-1", {"image": "i", "replicas": 1, "port": 80})


NOT_APPLIED = "was not made by the agent: its metadata.managedFields has no Apply entry of the field manager gitops-agent"
NOBODYS = "is controlled by nothing and was not made by the agent"


def _with(obj, **meta):
    return {**obj, "metadata": {**obj["metadata"], **meta}}


def _patched(obj, fields_v1):
    """``obj`` after a ``kubectl patch`` that set ``fields_v1``."""
    entry = {"manager": "kubectl-patch", "operation": "Update", "apiVersion": obj["apiVersion"],
             "fieldsType": "FieldsV1", "fieldsV1": fields_v1}
    return _with(obj, managedFields=[*obj["metadata"].get("managedFields", []), entry])


SIDECAR = {"f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"side"}': {
    ".": {}, "f:image": {}, "f:name": {}}}}}}}


def test_controller_is_the_controller_owner_reference_of_any_kind():
    deployment, _ = _children()
    [ref] = deployment["metadata"]["ownerReferences"]
    assert plan.controller(deployment) is ref
    keeper = {"apiVersion": "v1", "kind": "ConfigMap", "name": "keeper", "uid": "u2", "controller": True}
    plain = {**keeper, "name": "plain", "controller": False}
    assert plan.controller(_with(deployment, ownerReferences=[plain, keeper])) is keeper
    assert plan.controller(_with(deployment, ownerReferences=[plain])) is None
    assert plan.controller(_with(deployment, ownerReferences=None)) is None
    assert plan.controller({"kind": "Service"}) is None


def test_not_ours_needs_the_agents_apply_and_no_other_controller():
    deployment, service = map(applied, _children())
    keeper = {"apiVersion": "v1", "kind": "ConfigMap", "name": "keeper", "uid": "u2", "controller": True}
    # the agent's own, whatever a hand edit removed: the label, the ownerReference, both
    for mine in (deployment, service, _with(deployment, labels={}), _with(deployment, ownerReferences=[]),
                 _with(service, labels={}, ownerReferences=None), applied(app("web")),
                 _with(deployment, ownerReferences=[{**keeper, "controller": False}])):
        assert plan.not_ours(mine) is None
    # never applied by the agent: copied, made with kubectl create, or another manager's apply
    for theirs in (_with(deployment, managedFields=[]), _with(service, managedFields=None),
                   _with(deployment, managedFields=[{**APPLIED[0], "manager": "kubectl"}]),
                   _with(deployment, managedFields=[{**APPLIED[0], "operation": "Update"}]),
                   {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "ns"}},
                   {"apiVersion": "v1", "kind": "Service"}):
        assert plan.not_ours(theirs) == NOT_APPLIED
    # the agent's apply, but another owner controls it now: never taken from it
    assert plan.not_ours(_with(deployment, ownerReferences=[keeper])) == (
        "is controlled by ConfigMap/keeper (its controller ownerReference), not by Application ns/web")
    [ref] = deployment["metadata"]["ownerReferences"]
    assert plan.not_ours(_with(deployment, ownerReferences=[{**ref, "name": "other"}])) == (
        "is controlled by Application/other (its controller ownerReference), not by Application ns/web")


def test_the_agents_child_that_lost_its_label_or_owner_reference_has_its_kubectl_fields_handed_over():
    deployment, _ = map(applied, _children())
    drifted = _patched(deployment, SIDECAR)
    keeper = {"apiVersion": "v1", "kind": "ConfigMap", "name": "keeper", "uid": "u2", "controller": True}
    for mine in (drifted, _with(drifted, labels={}), _with(drifted, ownerReferences=[]),
                 _with(drifted, labels={}, ownerReferences=[])):
        assert plan.drifted_ownership(mine)
    for theirs in (deployment, _with(drifted, ownerReferences=[keeper]),
                   _patched(_with(deployment, managedFields=[]), SIDECAR)):
        assert not plan.drifted_ownership(theirs)
    # an Application from Git that lost its label: the same rule
    edited = _patched(applied(app("web")), {"f:spec": {"f:extra": {}}})
    assert plan.drifted_ownership(edited) and plan.drifted_ownership(_with(edited, labels={}))
    # one applied with kubectl (the original operator's users): Git's is applied over it, spec handed over at once
    assert plan.drifted_ownership(_patched(app("web"), {"f:spec": {"f:extra": {}}}))


def test_claim_decides_a_create_over_the_agents_unlabelled_child_as_for_a_listed_one():
    deployment, service = _children()
    mine = _with(_patched(applied(deployment), SIDECAR), labels={}, resourceVersion="7")
    steps = plan.plan([deployment, service], [])
    out, conflicts = plan.claim(steps, [mine])
    assert conflicts == []
    assert [(s.action, s.subject) for s in out] == [("update", "Deployment/ns/web"), ("create", "Service/ns/web")]
    assert out[0] == plan.decide(deployment, mine) and out[0].live is mine and out[0].desired is deployment
    assert out[1].live is None
    # its ownerReference gone too: still the agent's, decided the same way
    orphan = _with(mine, ownerReferences=[])
    out, conflicts = plan.claim(steps, [orphan])
    assert conflicts == [] and out[0] == plan.decide(deployment, orphan) == plan.Step(
        plan.Op.UPDATE, plan.identity(deployment), deployment, orphan)
    # listed after all (its label back, nothing to hand over): the same decision, unchanged
    same = applied(deployment)
    out, _ = plan.claim(steps, [same])
    assert out[0] == plan.Step(plan.Op.UNCHANGED, plan.identity(deployment), deployment, same)


def test_claim_refuses_a_create_over_someone_elses_object_and_says_why():
    deployment, service = _children()
    theirs = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "ns"}}
    elsewhere = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "other"}}
    keeper = {"apiVersion": "v1", "kind": "ConfigMap", "name": "keeper", "uid": "u2", "controller": True}
    kept = _with(applied(deployment), labels={}, ownerReferences=[keeper])
    steps = plan.plan([deployment, service], [])
    out, conflicts = plan.claim(steps, [theirs, elsewhere])
    assert [s.subject for s in out] == ["Deployment/ns/web"]
    assert [(s.action, s.subject, why) for s, why in conflicts] == [("conflict", "Service/ns/web", NOBODYS)]
    out, conflicts = plan.claim(steps, [kept, theirs])
    assert out == []
    assert [(s.subject, why) for s, why in conflicts] == [
        ("Deployment/ns/web", "is controlled by ConfigMap/keeper (its controller ownerReference), "
                              "not by Application ns/web"),
        ("Service/ns/web", NOBODYS)]
    assert [(s.identity, s.desired, s.live) for s, _ in conflicts] == [
        (step.identity, step.desired, live) for step, live in zip(steps, [kept, theirs])]
    out, conflicts = plan.claim(steps, [theirs], opted={"ns/web"})  # the Application opted in: adopted
    assert conflicts == [] and [(s.action, s.adopting) for s in out] == [("create", False), ("update", True)]


def test_claim_leaves_every_step_but_creates_alone():
    deployment, service = map(applied, _children())
    changed = {**deployment, "spec": {**deployment["spec"], "replicas": 3}}
    steps = plan.plan([deployment, service], [changed, service])
    out, conflicts = plan.claim(steps, [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "ns"}}])
    assert out == steps and conflicts == []
    assert plan.claim([], []) == ([], [])


REPO_A, REPO_B = "github.com/org/a", "github.com/org/b"


def theirs(labels=None, annotations=None, **kw):
    """An Application source "a" of REPO_A applied (unless ``labels``/``annotations`` say otherwise)."""
    return app("web", labels={**OWNED, SOURCE_LABEL: "a"} if labels is None else labels,
               annotations={keys.REPOSITORY: REPO_A} if annotations is None else annotations, **kw)


@pytest.mark.parametrize("live, source, holder", [
    # another source id holds it, whatever the repository: two repositories, two --paths of one
    # repository, a changed --path
    (theirs(), "b", "a"),
    (theirs(annotations={}), "b", "a"),  # no repository recorded (an older agent): still another source
    # this source's own (also a --source-id shared by two repositories): as before
    (theirs(), "a", None),
    # no source label: hand-applied or an agent before source labels; taken over
    (theirs(labels=OWNED), "b", None),
    (theirs(labels={**OWNED, SOURCE_LABEL: ""}), "b", None),
    # no agent ownership (copied labels and annotation, no gitops-agent apply): taken over
    (theirs(managed=[{"manager": "kubectl-client-side-apply", "operation": "Update"}]), "b", None),
    (theirs(labels={SOURCE_LABEL: "a"}), "b", None),
    (None, "b", None),  # nothing live: a create
])
def test_other_source_is_the_holder_of_an_application_the_agent_applied_for_another_source_id(live, source, holder):
    assert sources.other_source(live, source) == holder


def test_other_source_is_only_about_applications():
    child = {"apiVersion": "apps/v1", "kind": "Deployment",
             "metadata": {"name": "web", "namespace": "default", "managedFields": APPLIED,
                          "ownerReferences": [render.owner_reference("web", "u1")],
                          "labels": {**OWNED, SOURCE_LABEL: "a"}, "annotations": {keys.REPOSITORY: REPO_A}}}
    assert plan.owned(child)  # the agent's child, but children have no source: never refused
    assert sources.other_source(child, "b") is None


def test_refuse_takes_out_another_sources_application_with_a_one_line_message():
    live = [theirs(annotations={keys.REPOSITORY: REPO_A, keys.SOURCE_PATH: "web.yaml"}),
            app("mine", labels={**OWNED, SOURCE_LABEL: "b"}),
            app("gone", labels={**OWNED, SOURCE_LABEL: "b"}),
            app("old", labels={**OWNED, SOURCE_LABEL: "a"}, annotations={keys.REPOSITORY: REPO_A})]
    desired = [app("new"), app("web", image="evil"), app("mine")]
    steps = plan.plan(desired, live, source="b")
    out, refused = sources.refuse(steps, "b", REPO_B, {"default/web": "apps/web.yaml:3"})
    assert [(s.action, s.identity[3]) for s in out] == [
        (plan.Op.CREATE, "new"), (plan.Op.UNCHANGED, "mine"), (plan.Op.PRUNE, "gone")]
    [(step, why)] = refused
    assert step.identity == ("heumsi.github.io", "Application", "default", "web") and step.action == plan.Op.UPDATE
    assert why == (
        f"apps/web.yaml:3: OwnershipConflict: not applied: source 'a' (repository '{REPO_A}', file 'web.yaml') "
        f"holds it; this source 'b' (repository '{REPO_B}') has it too. This source leaves it, its status and its "
        "children as they are, and neither source prunes it while the other has it in Git. Keep it in one source "
        f"only, or hand it over to this one: kubectl -n default label application web {SOURCE_LABEL}=b --overwrite")
    # "old" (another source's, not in this Git) is neither refused nor pruned: plan never prunes it
    assert all(s.identity[3] != "old" for s in out)


def test_refuse_names_the_holders_file_from_its_status_first_and_the_same_repository_too():
    live = {**theirs(annotations={keys.REPOSITORY: REPO_A, keys.SOURCE_PATH: "a/web.yaml"}),
            "status": {"sourcePath": "b.yaml"}}
    _, [(_, why)] = sources.refuse(plan.plan([app("web")], [live], source="b"), "b", REPO_A, {})
    assert why.startswith(f"?: OwnershipConflict: not applied: source 'a' (repository '{REPO_A}', file 'b.yaml') "
                          f"holds it; this source 'b' (repository '{REPO_A}')")


def test_refuse_keeps_steps_it_has_no_reason_to_refuse():
    steps = plan.plan([app("web")], [theirs()], source="a")
    assert sources.refuse(steps, "a", REPO_A, {}) == (steps, [])
    assert sources.refuse([], "b", REPO_B, {}) == ([], [])
    steps = plan.plan([app("web")], [theirs(annotations={})], source="b")
    out, [(_, why)] = sources.refuse(steps, "b", REPO_B, {})  # nothing known of the holder: said so, still one line
    assert out == [] and why.startswith("?: OwnershipConflict: not applied: source 'a' holds it; ")


def test_refuse_quotes_a_hand_edited_repository_annotation_on_one_line():
    steps = plan.plan([app("web")], [theirs(annotations={keys.REPOSITORY: "x\ny" + "z" * 500})], source="b")
    _, [(_, why)] = sources.refuse(steps, "b", REPO_B, {})
    assert "\n" not in why and "'x\\ny" in why and "z" * 300 not in why


def test_wanted_by_is_one_key_per_source_id_and_wanted_elsewhere_reads_the_others():
    key = sources.wanted_by("b")
    assert key == keys.WANTED_BY_PREFIX + hashlib.sha256(b"b").hexdigest()[:12]
    assert len(key.split("/")[1]) <= 63 and sources.wanted_by("x" * 300) != sources.wanted_by("x" * 299)
    live = theirs(annotations={key: "b apps/web.yaml", sources.wanted_by("c"): "c", "other": "x"})
    assert sources.wanted_elsewhere(live, "a") == [("b", "apps/web.yaml"), ("c", "")]
    assert sources.wanted_elsewhere(live, "b") == [("c", "")]  # its own annotation is not another's
    assert sources.wanted_elsewhere(theirs(), "a") == []


def test_plan_prunes_an_application_another_source_wants_and_the_pass_reads_why_not():
    # plan prunes it (it is this source's); the pass keeps it by wanted_elsewhere (sync's guard)
    live = app("web", labels={**OWNED, SOURCE_LABEL: "a"}, annotations={sources.wanted_by("b"): "b x.yaml"})
    [step] = plan.plan([], [live], source="a")
    assert step.action == plan.Op.PRUNE and sources.wanted_elsewhere(step.live, "a") == [("b", "x.yaml")]


def test_the_repository_annotation_is_compared_so_the_first_pass_records_it():
    # an Application an older agent applied (no annotation) is updated once to get it
    desired = [app("web", annotations={keys.REPOSITORY: REPO_A})]
    assert plan.plan(desired, [app("web", labels=OWNED)])[0].action == plan.Op.UPDATE
    assert plan.plan(desired, [app("web", labels=OWNED, annotations={keys.REPOSITORY: REPO_A})])[0].action \
        == plan.Op.UNCHANGED


def test_decide_is_plans_rule_for_one_object():
    desired = app("web", labels=OWNED)
    assert plan.decide(desired, None) == plan.Step(plan.Op.CREATE, plan.identity(desired), desired, None)
    same = applied(desired)
    assert plan.decide(desired, same) == plan.Step(plan.Op.UNCHANGED, plan.identity(desired), desired, same)
    other = applied(app("web", image="nginx:2", labels=OWNED))
    assert plan.decide(desired, other) == plan.Step(plan.Op.UPDATE, plan.identity(desired), desired, other)
    for live in (None, same, other):
        assert [plan.decide(desired, live)] == plan.plan([desired], [live] if live else [], prune=False)


def test_prunes_are_the_owned_live_objects_not_desired_sorted_by_identity():
    owned = {plan.identity(o): o for o in (app("b", labels=OWNED), app("a", labels=OWNED), app("c", labels=OWNED))}
    hand = app("hand")
    live = {**owned, plan.identity(hand): hand}
    steps = plan.prunes(live, {plan.identity(app("c"))})
    assert [s.identity[3] for s in steps] == ["a", "b"]
    assert all(s.action == plan.Op.PRUNE and s.desired is None and s.live is live[s.identity] for s in steps)
    assert plan.prunes(live, set(live)) == []
    theirs = app("t", labels={**OWNED, plan.SOURCE_LABEL: "other"})
    assert plan.prunes({plan.identity(theirs): theirs}, set(), source="mine") == []
    assert [s.identity[3] for s in plan.prunes({plan.identity(theirs): theirs}, set(), source="other")] == ["t"]


def test_owner_key_is_the_application_itself_or_the_childs_controller_owner():
    deployment, service = _children()
    assert plan.owner_key(app("web", "team")) == "team/web"
    assert plan.owner_key(deployment) == plan.owner_key(service) == "ns/web"
    renamed = {**deployment, "metadata": {**deployment["metadata"], "name": "web-copy"}}
    assert plan.owner_key(renamed) == "ns/web"  # the reference names the owner, not the child's own name
    orphan = {**deployment, "metadata": {**deployment["metadata"], "name": "lone", "ownerReferences": []}}
    assert plan.owner_key(orphan) == "ns/lone"


def _declared(obj, manager, fields_v1, operation="Apply", subresource=None):
    """``obj`` with a managedFields entry of ``manager`` owning ``fields_v1``."""
    entry = {"manager": manager, "operation": operation, "apiVersion": obj["apiVersion"],
             "fieldsType": "FieldsV1", "fieldsV1": fields_v1, **({"subresource": subresource} if subresource else {})}
    return _with(obj, managedFields=[*APPLIED, entry])


METRICS_PORT = {"name": "metrics", "port": 9100, "protocol": "TCP", "targetPort": 9100}
METRICS_FIELDS = {"f:spec": {"f:ports": {'k:{"port":9100,"protocol":"TCP"}': {".": {}, "f:name": {}, "f:port": {}}}}}


def _service_with(extra, manager="mesh-controller", fields_v1=METRICS_FIELDS, **how):
    _, service = _children()
    live = {**service, "spec": {**service["spec"], "ports": [*service["spec"]["ports"], extra]}}
    return service, _declared(live, manager, fields_v1, **how)


def test_a_list_entry_another_controller_declared_is_not_drift_so_no_apply_is_planned():
    """The agent's apply cannot remove it (it is the other manager's), so planning an update
    meant one apply on every pass, forever."""
    desired, live = _service_with(METRICS_PORT)
    assert not plan.contains(live, desired)
    assert [s.action for s in plan.plan([desired], [live])] == [plan.Op.UNCHANGED]


def test_a_sidecar_another_controller_declared_is_not_drift():
    deployment, _ = _children()
    sidecar = {"name": "side", "image": "envoy:1"}
    spec = deployment["spec"]
    template = {**spec["template"], "spec": {**spec["template"]["spec"],
                                             "containers": [*spec["template"]["spec"]["containers"], sidecar]}}
    live = _declared({**deployment, "spec": {**spec, "template": template}}, "mesh-injector", SIDECAR)
    assert [s.action for s in plan.plan([deployment], [live])] == [plan.Op.UNCHANGED]
    # the same sidecar from a hand edit is drift: the agent takes it over and removes it
    patched = _declared({**deployment, "spec": {**spec, "template": template}}, "kubectl-patch", SIDECAR,
                        operation="Update")
    assert [s.action for s in plan.plan([deployment], [patched])] == [plan.Op.UPDATE]


@pytest.mark.parametrize("case", ["no record", "kubectl", "an update", "status", "our port changed",
                                  "partly theirs", "one of ours"])
def test_whatever_the_agents_apply_would_change_stays_drift(case):
    _, service = _children()
    if case == "no record":  # who set the extra port is not known: apply
        live = {**service, "spec": {**service["spec"], "ports": [*service["spec"]["ports"], METRICS_PORT]}}
        live = _with(live, managedFields=APPLIED)
    elif case == "kubectl":  # kubectl apply --server-side is a hand edit (its fields are taken over)
        _, live = _service_with(METRICS_PORT, manager="kubectl")
    elif case == "an update":  # an Update is taken over too
        _, live = _service_with(METRICS_PORT, operation="Update")
    elif case == "status":  # a status writer's entry does not own spec entries
        _, live = _service_with(METRICS_PORT, subresource="status")
    elif case == "our port changed":  # theirs is set aside, ours still differs
        _, live = _service_with(METRICS_PORT)
        live["spec"]["ports"][0] = {**live["spec"]["ports"][0], "port": 8080}
    elif case == "partly theirs":  # they own a field of the entry, not the entry itself
        _, live = _service_with(METRICS_PORT, fields_v1={"f:spec": {"f:ports": {
            'k:{"port":9100,"protocol":"TCP"}': {"f:name": {}}}}})
    else:  # they declared a port the agent renders too, with another value: ours
        port = service["spec"]["ports"][0]
        _, live = _service_with({**port, "name": "x"}, fields_v1={"f:spec": {"f:ports": {
            f'k:{{"port":{port["port"]},"protocol":"TCP"}}': {".": {}}}}})
    assert [s.action for s in plan.plan([service], [live])] == [plan.Op.UPDATE], case


def test_a_port_another_controller_declared_inside_the_agents_container_is_not_drift():
    deployment, _ = _children()
    spec = deployment["spec"]
    [web] = spec["template"]["spec"]["containers"]
    metrics = {"containerPort": 15090, "protocol": "TCP", "name": "metrics"}
    container = {**web, "ports": [*web.get("ports", []), metrics]}
    live_spec = {**spec, "template": {**spec["template"], "spec": {**spec["template"]["spec"], "containers": [container]}}}
    declared = {"f:spec": {"f:template": {"f:spec": {"f:containers": {f'k:{{"name":"{web["name"]}"}}': {
        ".": {}, "f:name": {}, "f:ports": {'k:{"containerPort":15090,"protocol":"TCP"}': {
            ".": {}, "f:containerPort": {}, "f:name": {}}}}}}}}}
    live = _declared({**deployment, "spec": live_spec}, "mesh-controller", declared)
    assert [s.action for s in plan.plan([deployment], [live])] == [plan.Op.UNCHANGED]
    # the agent's own port changed under it is still drift
    changed = [{**p, "containerPort": 81} for p in web.get("ports", [])] + [metrics]
    live_spec["template"]["spec"]["containers"] = [{**web, "ports": changed}]
    assert web.get("ports"), "the rendered container has a port"
    assert [s.action for s in plan.plan([deployment], [_declared({**deployment, "spec": live_spec}, "mesh-controller",
                                                                 declared)])] == [plan.Op.UPDATE]


def test_claim_refuses_a_listed_object_that_is_someone_elses_and_adopts_the_applications():
    """The label-selected list shows the agent's child now controlled by another owner (never
    applied over, changed or not) and a Service someone else made with the Application's
    controller ownerReference (adopted: an update that says why)."""
    deployment, service = _children()
    copied = {**service, "spec": {**service["spec"], "ports": [{"port": 1}]}}  # made by another, no Apply entry
    keeper = {"apiVersion": "v1", "kind": "ConfigMap", "name": "keeper", "uid": "u2", "controller": True}
    for live in (_with(applied(deployment), ownerReferences=[keeper]),
                 _with(applied({**deployment, "spec": {**deployment["spec"], "replicas": 3}}), ownerReferences=[keeper])):
        steps = plan.plan([deployment, service], [live, copied])
        assert [(s.action, s.adopting) for s in steps] == [(plan.Op.CONFLICT, False), (plan.Op.UPDATE, True)]
        out, conflicts = plan.claim(steps, [])
        assert out == steps[1:]
        assert out[0].why == "its controller ownerReference names this Application"
        assert [(s.subject, why) for s, why in conflicts] == [
            ("Deployment/ns/web", "is controlled by ConfigMap/keeper (its controller ownerReference), "
                                  "not by Application ns/web")]
