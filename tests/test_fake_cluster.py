"""The in-memory cluster of the unit tests (``tests/unit/fakecluster.py``) against the real
control plane: each scenario runs on both, through the ``Cluster`` verbs, and the outcomes
(status codes, whether resourceVersion and generation moved, the fields kept, the field
managers) must be the same. What the fake passes, the API server passes; what it refuses, the
API server refuses, with the same status."""

from __future__ import annotations

import json
import time

import pytest

from agent.api.schema import GROUP, VERSION
from agent.kinds import registry
from agent.kube import client
from agent.kube.client import Kube
from agent.kube.cluster import ApiError
from tests.support import wait_for
from tests.unit.fakecluster import FakeCluster

pytestmark = pytest.mark.usefixtures("crd")

UID = "00000000-0000-0000-0000-00000000a001"


@pytest.fixture
def both(cluster, namespace):
    """``run(scenario)``: ``scenario(kube, namespace)`` on a fresh fake and on the real cluster
    (the same namespace name); returns the fake's outcome once both agree."""
    real = Kube(kubeconfig=str(cluster.kubeconfig), retry_seconds=0)

    def run(scenario, **fake_options):
        fake = FakeCluster(namespaces=(namespace,), **fake_options)
        expected, got = scenario(fake, namespace), scenario(real, namespace)
        assert expected == got, f"fake: {expected}\nreal: {got}"
        return expected
    yield run
    real.close()


def outcome(call) -> str:
    """``ok`` or the ApiError's ``status reason`` of ``call()``."""
    try:
        call()
    except ApiError as err:
        return f"{err.status} {err.reason}"
    return "ok"


def as_manager(kube, obj: dict, manager: str, force: bool = False) -> None:
    """A server-side apply by another field manager (``kubectl apply --server-side``)."""
    if isinstance(kube, FakeCluster):
        kube.apply(obj, force, manager=manager)
    else:
        kube.request("PATCH", client._path_of(obj), body=obj, content_type="application/apply-patch+yaml",
                     query={"fieldManager": manager, "force": "true" if force else "false"})


def put(kube, obj: dict, manager: str = "kubectl-edit") -> None:
    """An update (PUT) of the whole object, as ``kubectl edit`` sends it."""
    if isinstance(kube, FakeCluster):
        kube.put(obj, manager=manager)
    else:
        kube.request("PUT", client._path_of(obj), body=obj, query={"fieldManager": manager})


def managers(obj: dict) -> list[tuple[str, str, str]]:
    return sorted((e["manager"], e["operation"], e.get("subresource", "")) for e in obj["metadata"]["managedFields"])


def fields_of(obj: dict, manager: str, operation: str = "Apply") -> dict:
    return next(e["fieldsV1"] for e in obj["metadata"]["managedFields"]
                if (e["manager"], e["operation"]) == (manager, operation) and not e.get("subresource"))


def application(namespace: str, name: str = "web", **spec) -> dict:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Application",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"app.kubernetes.io/managed-by": "gitops-agent"}},
            "spec": {"image": "nginx:1.27", "replicas": 1, "port": 80, **spec}}


def children(namespace: str, uid: str, **spec) -> dict:
    """The agent's rendered children of the Application ``web`` with ``uid``, by kind (a uid
    that exists: the garbage collector deletes a child whose owner is gone)."""
    full = {"image": "nginx:1.27", "replicas": 1, "port": 80, "env": {"A": "1"},
            "files": {"/etc/web/a.conf": {"content": "a = 1\n"}}, "ingress": {"host": "web.example.com"},
            "autoscaling": {"minReplicas": 1, "maxReplicas": 3, "targetCPUUtilizationPercentage": 80},
            "disruptionBudget": {"maxUnavailable": 1},
            "schedules": {"nightly": {"schedule": "0 3 * * *", "command": ["report"]}}, **spec}
    out = {}
    for kind in registry.CHILD_KINDS:
        for made in kind.objects("web", namespace, uid, full):  # the first of a kind with several
            out.setdefault(kind.kind, made)
    return out


def test_apply_creates_with_identity_and_the_managed_fields_kubernetes_records(both):
    """Every child kind the agent renders and the Application: uid, creationTimestamp,
    generation where the kind has one, and the FieldsV1 of the agent's apply, key for key."""
    def scenario(kube, namespace):
        app = kube.apply(application(namespace, env={"A": "1"}))
        out = {}
        for obj in [application(namespace, env={"A": "1"}), *children(namespace, app["metadata"]["uid"]).values()]:
            kube.apply(obj)
            live = kube.get(obj)
            meta = live["metadata"]
            owned = json.dumps(fields_of(live, "gitops-agent")).replace(app["metadata"]["uid"], "UID")
            # the deployment controller may have written the status by the time it is read: not ours to compare
            ours = [m for m in managers(live) if m[0] != "kube-controller-manager"]
            out[obj["kind"]] = (bool(meta["uid"]), bool(meta["creationTimestamp"]), meta.get("generation"),
                                ours, json.loads(owned))
        return out
    got = both(scenario)
    assert set(got) == {"Application", "ConfigMap", "Deployment", "Service", "Ingress", "HorizontalPodAutoscaler",
                        "PodDisruptionBudget", "CronJob"}
    assert got["Deployment"][:4] == (True, True, 1, [("gitops-agent", "Apply", "")])
    assert [kind for kind, made in got.items() if made[2] is not None] == ["Application", "Deployment", "Ingress",
                                                                           "PodDisruptionBudget", "CronJob"]
    assert got["Deployment"][4]["f:spec"]["f:selector"] == {}  # a LabelSelector is atomic
    assert got["PodDisruptionBudget"][4]["f:spec"]["f:selector"] == {}
    assert got["Service"][4]["f:metadata"]["f:ownerReferences"] == {'k:{"uid":"UID"}': {}}  # so is an owner reference


def test_resource_versions_move_on_every_change_and_only_then(both):
    def scenario(kube, namespace):
        app = application(namespace)
        first = kube.apply(app)
        moved = []
        scaled = application(namespace, replicas=2)
        for change in (app, scaled, {**scaled, "metadata": {**app["metadata"], "labels": {"x": "y"}}}):
            before = kube.get(app)["metadata"]
            kube.apply(change)
            after = kube.get(app)["metadata"]
            moved.append((before["resourceVersion"] != after["resourceVersion"],
                          after["generation"] - before["generation"]))
        stale = {**app, "metadata": {**app["metadata"], "resourceVersion": first["metadata"]["resourceVersion"]}}
        return moved, outcome(lambda: kube.apply(stale)), kube.get(app)["metadata"]["labels"]
    # the same apply moves nothing; a spec change moves both; a label change the version alone
    assert both(scenario) == ([(False, 0), (True, 1), (True, 0)], "409 Conflict", {"x": "y"})


def test_an_update_needs_the_current_resource_version(both):
    def scenario(kube, namespace):
        made = kube.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": namespace},
                            "data": {"a": "1"}})
        current = kube.get(made)
        current["data"]["a"] = "2"
        none = {**current, "metadata": {k: v for k, v in current["metadata"].items() if k != "resourceVersion"}}
        updates = [outcome(lambda: put(kube, current)), outcome(lambda: put(kube, current)),
                   outcome(lambda: put(kube, {**none, "data": {"a": "3"}}))]
        app = kube.apply(application(namespace))
        unconditional = {**app, "metadata": {k: v for k, v in app["metadata"].items() if k != "resourceVersion"}}
        return (updates, outcome(lambda: put(kube, unconditional)), kube.get(made)["data"],
                "generation" in current["metadata"])
    # a built-in kind takes an update without a resourceVersion; a custom resource does not
    assert both(scenario) == (["ok", "409 Conflict", "ok"], "422 Invalid", {"a": "3"}, False)


def test_server_side_apply_conflicts_force_and_removal(both):
    """A field another manager applied with another value is a conflict; force takes it over;
    a field the agent stops applying goes, unless another manager owns it too."""
    def scenario(kube, namespace):
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": namespace},
              "data": {"a": "1", "b": "2", "c": "3"}}
        kube.apply(cm)
        theirs = {**cm, "data": {"a": "other", "c": "3"}}
        conflict = outcome(lambda: as_manager(kube, theirs, "other"))
        as_manager(kube, theirs, "other", force=True)
        live = kube.get(cm)
        taken = (live["data"], fields_of(live, "gitops-agent"), fields_of(live, "other"))
        kube.apply({**cm, "data": {"b": "2"}}, force=True)  # stops applying a and c
        live = kube.get(cm)
        return conflict, taken, live["data"], managers(live)
    conflict, taken, data, owners = both(scenario)
    assert conflict == "409 Conflict"
    assert taken[0] == {"a": "other", "b": "2", "c": "3"}
    assert taken[1] == {"f:data": {"f:b": {}, "f:c": {}}}  # a went to "other"; c is shared
    assert data == {"a": "other", "b": "2", "c": "3"}  # a and c are still "other"'s
    assert owners == [("gitops-agent", "Apply", ""), ("other", "Apply", "")]


def test_fields_an_update_took_are_handed_back_by_patch_managed_fields_then_removed(both):
    def scenario(kube, namespace):
        svc = children(namespace, kube.apply(application(namespace))["metadata"]["uid"])["Service"]
        kube.apply(svc)
        live = kube.get(svc)
        live["spec"]["ports"].append({"name": "extra", "port": 81, "targetPort": 81, "protocol": "TCP"})
        put(kube, live, "kubectl-edit")
        live = kube.get(svc)
        theirs = fields_of(live, "kubectl-edit", "Update")
        older = str(int(live["metadata"]["resourceVersion"]) - 1)
        stale = {**live, "metadata": {**live["metadata"], "resourceVersion": older}}
        refused = outcome(lambda: kube.patch_managed_fields(stale, []))
        entries = [e for e in live["metadata"]["managedFields"] if e["manager"] == "gitops-agent"]
        ours = {**entries[0], "fieldsV1": {"f:spec": {**entries[0]["fieldsV1"]["f:spec"], "f:ports": {
            **entries[0]["fieldsV1"]["f:spec"]["f:ports"], **theirs["f:spec"]["f:ports"]}}, "f:metadata":
            entries[0]["fieldsV1"]["f:metadata"]}}
        kube.patch_managed_fields(live, [ours])
        kube.apply(svc)
        return theirs, refused, [p["port"] for p in kube.get(svc)["spec"]["ports"]], managers(kube.get(svc))
    theirs, refused, ports, owners = both(scenario)
    assert theirs == {"f:spec": {"f:ports": {'k:{"port":81,"protocol":"TCP"}': {
        ".": {}, "f:name": {}, "f:port": {}, "f:protocol": {}, "f:targetPort": {}}}}}
    assert refused == "422 Invalid" and ports == [80] and owners == [("gitops-agent", "Apply", "")]


def test_status_is_written_only_through_its_subresource(both):
    def scenario(kube, namespace):
        app = application(namespace)
        kube.apply({**app, "status": {"health": {"status": "Healthy"}}})
        ignored = kube.get(app).get("status")
        before = kube.get(app)["metadata"]
        kube.patch_status(kube.get(app), {"health": {"status": "Progressing", "message": "m"}, "replicas": 1})
        kube.patch_status(kube.get(app), {"health": {"message": None}})
        live = kube.get(app)
        return (ignored, live["status"], live["metadata"]["generation"] == before["generation"],
                live["metadata"]["resourceVersion"] != before["resourceVersion"], managers(live),
                {"applications", "applications/status"} <= kube.served(GROUP, VERSION),
                kube.served("nothing.example.com", "v1"))
    assert both(scenario) == (None, {"health": {"status": "Progressing"}, "replicas": 1}, True, True,
                              [("gitops-agent", "Apply", ""), ("gitops-agent", "Update", "status")], True, set())


def test_patch_annotations_sets_and_removes_as_an_update(both):
    def scenario(kube, namespace):
        app = application(namespace)
        kube.apply(app)
        kube.patch_annotations(app, {"a": "1", "b": "2"})
        kube.patch_annotations(app, {"a": None})
        live = kube.get(app)
        kube.apply(app)  # the agent's apply never drops what its update wrote
        return live["metadata"]["annotations"], managers(live), kube.get(app)["metadata"].get("annotations")
    assert both(scenario) == ({"b": "2"}, [("gitops-agent", "Apply", ""), ("gitops-agent", "Update", "")], {"b": "2"})


def test_refusals(both):
    def scenario(kube, namespace):
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": namespace}}
        kube.create(cm)
        deployment = children(namespace, kube.apply(application(namespace))["metadata"]["uid"])["Deployment"]
        no_selector = {**deployment, "spec": {k: v for k, v in deployment["spec"].items() if k != "selector"}}
        kube.apply(deployment)
        moved = {**deployment, "spec": {**deployment["spec"], "selector": {"matchLabels": {"other": "x"}}}}
        return [outcome(lambda: kube.create(cm)),
                outcome(lambda: kube.apply({**cm, "metadata": {**cm["metadata"], "name": "Not_Valid"}})),
                outcome(lambda: kube.apply({**cm, "metadata": {"name": "c", "namespace": "absent-ns-x1"}})),
                outcome(lambda: kube.apply({**no_selector, "metadata": {**deployment["metadata"], "name": "other"}})),
                outcome(lambda: kube.apply(moved)),
                outcome(lambda: kube.patch_status({**cm, "metadata": {**cm["metadata"], "name": "gone"},
                                                   "apiVersion": f"{GROUP}/{VERSION}", "kind": "Application"}, {}))]
    assert both(scenario) == ["409 AlreadyExists", "422 Invalid", "404 NotFound", "422 Invalid", "422 Invalid",
                              "404 NotFound"]


def test_deletion_and_the_garbage_collector(both):
    def scenario(kube, namespace):
        app = kube.apply(application(namespace))
        kids = children(namespace, uid=app["metadata"]["uid"])
        for kind in ("Deployment", "Service"):
            kube.apply(kids[kind])
        wrong = {**app, "metadata": {**app["metadata"], "uid": UID}}
        out = [kube.delete(wrong), kube.delete(kids["Service"] | {"metadata": {**kids["Service"]["metadata"],
                                                                               "name": "absent"}})]
        out.append(kube.delete(app, "Orphan"))
        wait_for(lambda: kube.get(kids["Deployment"]) and not kube.get(kids["Deployment"])["metadata"].get(
            "ownerReferences"), timeout=30, what="the orphaned Deployment")
        wait_for(lambda: kube.get(app) is None, timeout=30, what="the Application (its orphan finalizer)")
        app = kube.apply(application(namespace))
        for kind in ("Deployment", "Service"):  # the orphans, owned again
            kube.apply(children(namespace, uid=app["metadata"]["uid"])[kind])
        out.append(kube.delete(app, "Background"))
        wait_for(lambda: kube.get(kids["Deployment"]) is None and kube.get(kids["Service"]) is None, timeout=30,
                 what="the garbage collector")
        out.append(kube.wait_gone(app, timeout=10))
        return out
    assert both(scenario) == [False, False, True, True, True]


def test_label_selectors(both):
    def scenario(kube, namespace):
        for name, labels in (("one", {"a": "1"}), ("two", {"a": "2", "b": "x"}), ("three", {})):
            kube.apply({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": name, "namespace": namespace, "labels": labels}})
        return {selector: sorted(o["metadata"]["name"] for o in kube.list_in("", "ConfigMap", namespace, selector)
                                 if o["metadata"]["name"] != "kube-root-ca.crt")
                for selector in ("a=1", "a==2", "a!=1", "a", "!a", "a in (1,2),b", "a notin (1)", None)}
    assert both(scenario) == {"a=1": ["one"], "a==2": ["two"], "a!=1": ["three", "two"], "a": ["one", "two"],
                              "!a": ["three"], "a in (1,2),b": ["two"], "a notin (1)": ["three", "two"],
                              None: ["one", "three", "two"]}


def test_a_dry_run_answers_and_keeps_nothing(both, cluster):
    def scenario(kube, namespace):
        dry = FakeCluster(namespaces=(namespace,), dry_run=True) if isinstance(kube, FakeCluster) else \
            Kube(kubeconfig=str(cluster.kubeconfig), dry_run=True)
        app = dry.apply(application(namespace))
        status = dry.patch_status(app, {"replicas": 1})
        dry.event(app, "Normal", "Created", "x")
        return (bool(app["metadata"].get("uid")), dry.get(app), status["status"],
                outcome(lambda: dry.apply({**application(namespace), "metadata": {"name": "Bad_Name",
                                                                                   "namespace": namespace}})))
    assert both(scenario) == (True, None, {"replicas": 1}, "422 Invalid")


def test_events_are_recorded_on_their_object(both, objects):
    def scenario(kube, namespace):
        app = kube.apply(application(namespace))
        kube.event(app, "Warning", "SyncFailed", "it failed")
        if isinstance(kube, FakeCluster):
            found = [(e["kind"], e["name"], e["uid"] == app["metadata"]["uid"], e["type"], e["reason"], e["message"])
                     for e in kube.events]
        else:
            time.sleep(0.1)
            found = [(e["involvedObject"]["kind"], e["involvedObject"]["name"],
                      e["involvedObject"]["uid"] == app["metadata"]["uid"], e["type"], e["reason"], e["message"])
                     for e in objects.events(namespace)]
        return found
    assert both(scenario) == [("Application", "web", True, "Warning", "SyncFailed", "it failed")]


def test_a_kind_that_is_not_served_is_404(both):
    """The fake without the CRD against the real server asked for a resource it does not serve
    (the session's control plane has the CRD; another plural of its group is not served)."""
    def scenario(kube, namespace):
        app = application(namespace)
        if isinstance(kube, FakeCluster):
            return (outcome(lambda: kube.apply(app))[:3], outcome(lambda: kube.list(GROUP, "Application")),
                    kube.served(GROUP, VERSION))
        unserved = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/nothings"
        return (outcome(lambda: kube.request("PATCH", f"{unserved}/web", body=app, query={"fieldManager": "x"},
                                             content_type="application/apply-patch+yaml"))[:3],  # no Status body
                "404 NotFound" if kube.request("GET", unserved) is None else "served",  # as Kube.list says it
                kube.served("nothing.example.com", VERSION))
    assert both(scenario, crd=False) == ("404", "404 NotFound", set())


def test_within_sharing_applied_objects_share_their_equal_parts_frozen(both):
    """As ``Kube`` does (``share.Memo``): a pass that changed a shared part would fail here too."""
    def configmap(name, namespace):
        return {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"},
                "metadata": {"name": name, "namespace": namespace, "labels": {"x": "y"}}}

    def scenario(kube, namespace):
        with kube.sharing() as shared:
            one, two = shared.apply(configmap("one", namespace)), shared.apply(configmap("two", namespace))
        outside = kube.apply(configmap("three", namespace))
        try:
            one["data"]["b"] = "2"
            changed = "changed"
        except TypeError:
            changed = "refused"
        return one["data"] is two["data"], changed, type(outside["data"]) is dict
    assert both(scenario) == (True, "refused", True)


def test_placement_fields_are_owned_as_kubernetes_owns_them(both):
    """A pod's nodeSelector and tolerations are atomic (a hand edit takes the whole field from
    the agent), a topology spread constraint is keyed by topologyKey and whenUnsatisfiable and a
    volume by name (spec.placement, spec.volumes)."""
    spec = {"placement": {"nodeSelector": {"pool": "web"}, "tolerations": [{"key": "pool", "operator": "Exists"}],
                          "spreadAcross": ["zone"]}, "volumes": {"/tmp": {"emptyDir": {"sizeLimit": "64Mi"}}}}

    def scenario(kube, namespace):
        dep = children(namespace, kube.apply(application(namespace))["metadata"]["uid"], **spec)["Deployment"]
        kube.apply(dep)
        pod = fields_of(kube.get(dep), "gitops-agent")["f:spec"]["f:template"]["f:spec"]
        applied = {k: pod[k] for k in ("f:nodeSelector", "f:tolerations", "f:topologySpreadConstraints", "f:volumes")}
        for _ in range(10):  # the deployment controller writes the status meanwhile: 409, read again
            live = kube.get(dep)
            live["spec"]["template"]["spec"]["nodeSelector"]["disk"] = "ssd"
            live["spec"]["template"]["spec"]["tolerations"].append({"key": "spot", "operator": "Exists"})
            if outcome(lambda: put(kube, live)) == "ok":
                break
            time.sleep(0.2)
        live = kube.get(dep)
        edited = fields_of(live, "kubectl-edit", "Update")["f:spec"]["f:template"]["f:spec"]
        left = fields_of(live, "gitops-agent")["f:spec"]["f:template"]["f:spec"]
        return applied, edited, sorted(left)
    applied, edited, left = both(scenario)
    assert applied["f:nodeSelector"] == {} and applied["f:tolerations"] == {}  # atomic: owned whole
    assert list(applied["f:topologySpreadConstraints"]) == [
        'k:{"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"ScheduleAnyway"}']
    assert edited == {"f:nodeSelector": {}, "f:tolerations": {}}
    assert "f:nodeSelector" not in left and "f:tolerations" not in left  # taken whole by the edit
