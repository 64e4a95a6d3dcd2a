"""Whose an object in a child's slot is (``plan.ownership``), and what adopting it hands over
(``fields.adoption``): the rules of docs/concepts.md, "Adoption"."""

import pytest

from agent.api.labels import ADOPT_ANNOTATION
from agent.engine import plan
from agent.kinds import fields, registry

UID, OLD = "uid-1", "uid-0"
DEPLOYMENT, SERVICE = registry.children("web", "ns", UID, {"image": "i", "replicas": 1, "port": 80})


def ref(kind="Application", name="web", uid=UID, controller=True, api="heumsi.github.io/v1"):
    return {"apiVersion": api, "kind": kind, "name": name, "uid": uid, "controller": controller,
            "blockOwnerDeletion": True}


def entry(manager, operation="Update", fields_v1=None, subresource=None):
    out = {"manager": manager, "operation": operation, "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
           "fieldsV1": fields_v1 or {"f:spec": {"f:replicas": {}}}}
    return {**out, "subresource": subresource} if subresource else out


AGENT = entry("gitops-agent", "Apply")


def live(refs=(), managers=(AGENT,)):
    meta = {"name": "web", "namespace": "ns", "uid": "child-uid", "managedFields": list(managers)}
    if refs:
        meta["ownerReferences"] = list(refs)
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": {}}


KOPF = entry("OpenAPI-Generator")  # the seed operator's create_namespaced_deployment


@pytest.mark.parametrize("obj, opt_in, verdict, why", [
    (live([ref()]), False, plan.Owner.OURS, ""),
    (live([]), False, plan.Owner.OURS, ""),  # the agent's own child whose ownerReference was removed by hand
    (live([ref()], [KOPF]), False, plan.Owner.ADOPT, "its controller ownerReference names this Application"),
    (live([ref()], [KOPF, entry("kopf")]), True, plan.Owner.ADOPT, "its controller ownerReference names this Application"),
    (live([ref(uid=OLD)], [KOPF]), False, plan.Owner.ADOPT,
     "its controller ownerReference names an earlier Application web (uid uid-0), deleted and made again, and no "
     "other controller holds it: the stale reference is replaced by one to this Application (uid uid-1)"),
    (live([ref(uid=OLD)]), False, plan.Owner.ADOPT,
     "its controller ownerReference names an earlier Application web (uid uid-0), deleted and made again, and no "
     "other controller holds it: the stale reference is replaced by one to this Application (uid uid-1)"),
    (live([], [entry("kubectl-create")]), False, plan.Owner.STRANGER, "is controlled by nothing and was not made by the agent"),
    (live([], []), False, plan.Owner.STRANGER, "is controlled by nothing and was not made by the agent"),
    (live([], [entry("kubectl-create")]), True, plan.Owner.ADOPT,
     f'no controller holds it and the Application has {ADOPT_ANNOTATION}: "true"'),
    (live([ref(controller=False)], [KOPF]), True, plan.Owner.ADOPT,
     f'no controller holds it and the Application has {ADOPT_ANNOTATION}: "true"'),
    (live([ref("ReplicaSet", "web-1", "rs", api="apps/v1")], [KOPF]), True, plan.Owner.STRANGER,
     "is controlled by ReplicaSet/web-1 (its controller ownerReference), not by Application ns/web"),
    (live([ref(name="other")]), False, plan.Owner.STRANGER,
     "is controlled by Application/other (its controller ownerReference), not by Application ns/web"),
    (live([ref(api="example.com/v1")]), True, plan.Owner.STRANGER,  # another group's Application
     "is controlled by Application/web (its controller ownerReference), not by Application ns/web"),
])
def test_ownership_of_an_object_in_a_childs_slot(obj, opt_in, verdict, why):
    assert plan.ownership(obj, DEPLOYMENT, opt_in) == plan.Verdict(verdict, why)


@pytest.mark.parametrize("value, expected", [("true", True), ("True", True), (" true ", True), ("false", False),
                                             ("", False), ("yes", False), (None, False)])
def test_opted_in_reads_the_adopt_annotation(value, expected):
    annotations = {} if value is None else {ADOPT_ANNOTATION: value}
    assert plan.opted_in({"metadata": {"annotations": annotations}}) is expected


def test_decide_adopts_or_refuses_before_it_compares():
    same = {**DEPLOYMENT, "metadata": {**DEPLOYMENT["metadata"], "managedFields": [KOPF]}}
    step = plan.decide(DEPLOYMENT, same)  # every value already as Git wants: adopted all the same
    assert (step.action, step.adopting, step.live) == (plan.Op.UPDATE, True, same)
    nobodys = live([], [entry("kubectl-create")])
    assert plan.decide(DEPLOYMENT, nobodys).action == plan.Op.CONFLICT
    assert plan.decide(DEPLOYMENT, nobodys, opt_in=True).adopting
    mine = {**DEPLOYMENT, "metadata": {**DEPLOYMENT["metadata"], "managedFields": [AGENT]}}
    assert plan.decide(DEPLOYMENT, mine).action == plan.Op.UNCHANGED
    conflict = plan.decide(DEPLOYMENT, nobodys)
    assert not conflict.adopting and conflict.why == "is controlled by nothing and was not made by the agent"


def test_managers_are_listed_once_and_sorted():
    assert plan.managers(live([], [entry("b"), entry("a"), entry("b", "Apply"), {"operation": "Update"},
                                   entry("kube-controller-manager", subresource="status")])) == ["?", "a", "b"]
    assert plan.managers({"metadata": {}}) == []


def kopf_deployment(uid=UID):
    """The seed operator's Deployment as the API server records it: made by
    ``create_namespaced_deployment`` (manager OpenAPI-Generator, Update) with ``kopf.adopt``'s
    ownerReference, then scaled by kubectl."""
    owner = ref(uid=uid)
    made = {"f:metadata": {"f:labels": {".": {}, "f:app": {}},
                           "f:ownerReferences": {".": {}, f'k:{{"uid":"{uid}"}}': {}}},
            "f:spec": {"f:selector": {}, "f:strategy": {"f:type": {}},
                       "f:template": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                                      "f:spec": {"f:containers": {'k:{"name":"web"}': {".": {}, "f:image": {}}}}}}}
    scaled = {"f:spec": {"f:replicas": {}}}
    status = {"f:status": {"f:replicas": {}}}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "ns", "ownerReferences": [owner],
                         "managedFields": [entry("OpenAPI-Generator", fields_v1=made),
                                           entry("kubectl-scale", fields_v1=scaled, subresource="scale"),
                                           entry("kube-controller-manager", fields_v1=status, subresource="status"),
                                           entry("mesh", "Apply", {"f:metadata": {"f:annotations": {"f:mesh": {}}}})]},
            "spec": {}}


def test_adoption_hands_every_rendered_field_to_the_agent_and_names_whom_from():
    entries, managers = fields.adoption(kopf_deployment(), DEPLOYMENT)
    assert managers == ["OpenAPI-Generator", "kubectl-scale"]
    by = {e["manager"]: e for e in entries}
    ours = by["gitops-agent"]["fieldsV1"]
    assert ours["f:spec"]["f:replicas"] == {} and "f:selector" in ours["f:spec"] and "f:template" in ours["f:spec"]
    assert ours["f:metadata"]["f:ownerReferences"] == {f'k:{{"uid":"{UID}"}}': {}}
    assert by["gitops-agent"]["operation"] == "Apply" and by["gitops-agent"]["apiVersion"] == "apps/v1"
    # what the agent does not render stays theirs: the operator's own label; status and others' applies untouched
    assert by["OpenAPI-Generator"]["fieldsV1"]["f:metadata"]["f:labels"] == {".": {}, "f:app": {}}
    assert by["OpenAPI-Generator"]["fieldsV1"]["f:spec"] == {"f:strategy": {"f:type": {}}}  # not rendered
    assert "kubectl-scale" not in by
    assert by["kube-controller-manager"] == kopf_deployment()["metadata"]["managedFields"][2]
    assert by["mesh"] == kopf_deployment()["metadata"]["managedFields"][3]


def test_adoption_takes_the_reference_to_an_earlier_application_so_the_apply_drops_it():
    stale = kopf_deployment(uid=OLD)
    other = ref("ConfigMap", "keeper", "cm-uid", controller=False, api="v1")
    stale["metadata"]["ownerReferences"].append(other)
    stale["metadata"]["managedFields"][0]["fieldsV1"]["f:metadata"]["f:ownerReferences"]['k:{"uid":"cm-uid"}'] = {}
    entries, _ = fields.adoption(stale, DEPLOYMENT)
    by = {e["manager"]: e for e in entries}
    assert by["gitops-agent"]["fieldsV1"]["f:metadata"]["f:ownerReferences"] == {f'k:{{"uid":"{OLD}"}}': {}}
    assert by["OpenAPI-Generator"]["fieldsV1"]["f:metadata"]["f:ownerReferences"] == {".": {}, 'k:{"uid":"cm-uid"}': {}}


def test_adoption_of_an_object_nobody_else_owns_fields_of_changes_nothing():
    mine = live([ref()], [AGENT, entry("kube-controller-manager", subresource="status")])
    assert fields.adoption(mine, DEPLOYMENT) == (None, [])
