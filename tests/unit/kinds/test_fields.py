"""fields: which managers' fields the agent takes over, where, and the managedFields it writes."""

import copy
import datetime

import pytest

from agent.kinds import fields

PORT_81 = 'k:{"containerPort":81,"protocol":"TCP"}'
CONTAINER = 'k:{"name":"web"}'
NOW = datetime.datetime(2026, 12, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)


def entry(manager, operation="Update", fields_v1=None, subresource=None, **extra):
    out = {"manager": manager, "operation": operation, "apiVersion": "apps/v1", "time": "2026-01-01T00:00:00Z",
           "fieldsType": "FieldsV1", "fieldsV1": fields_v1 or {}, **extra}
    if subresource is not None:
        out["subresource"] = subresource
    return out


def deployment(*entries):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "ns", "managedFields": list(entries)}}


def container_fields(**inner):
    return {"f:spec": {"f:template": {"f:spec": {"f:containers": {CONTAINER: inner}}}}}


EXTRA_PORT = container_fields(**{"f:ports": {PORT_81: {".": {}, "f:containerPort": {}, "f:protocol": {}}}})
REVISION = {"f:metadata": {"f:annotations": {".": {}, "f:deployment.kubernetes.io/revision": {}}}}
OURS = entry("gitops-agent", "Apply", container_fields(**{".": {}, "f:image": {}, "f:name": {}}))


@pytest.mark.parametrize("e, expected", [
    (entry("kubectl-edit"), True),
    (entry("kubectl-patch"), True),
    (entry("kubectl-client-side-apply"), True),
    (entry("before-first-apply"), True),
    (entry("some-script"), True),  # any Update writer: a hand edit through the API
    (entry("kubectl", "Apply"), True),  # kubectl apply --server-side
    (entry("kubectl-scale", subresource="scale"), True),
    (entry("kube-controller-manager", subresource="status"), False),  # a controller's status
    (entry("kubectl-edit", subresource="status"), False),
    (entry("gitops-agent", "Apply"), False),
    (entry("gitops-agent", "Update"), False),
    (entry("autoscaler", "Apply"), False),  # another controller's server-side apply
    (entry("kubectl-edit", fieldsType="FieldsV2"), False),
])
def test_eligible_managers(e, expected):
    assert fields.eligible(e) is expected


def test_entry_without_fields_type_or_subresource_counts_as_fieldsv1_on_the_object():
    e = entry("kubectl-edit")
    del e["fieldsType"]
    assert fields.eligible(e)


DOMAIN = (("f:spec", "f:ports"), ("f:spec", "f:selector"))


@pytest.mark.parametrize("trie, inside, outside", [
    ({}, {}, {}),
    ({"f:spec": {"f:ports": {"k:{}": {}}}}, {"f:spec": {"f:ports": {"k:{}": {}}}}, {}),
    ({"f:spec": {"f:type": {}}}, {}, {"f:spec": {"f:type": {}}}),
    ({"f:spec": {"f:type": {}, "f:selector": {"f:a": {}}}},
     {"f:spec": {"f:selector": {"f:a": {}}}}, {"f:spec": {"f:type": {}}}),
    # an emptied parent is dropped, not kept as a leaf that would claim it
    ({"f:spec": {".": {}, "f:ports": {}}}, {"f:spec": {"f:ports": {}}}, {"f:spec": {".": {}}}),
    # a leaf at a parent of the domain stays where it is
    ({"f:spec": {}}, {}, {"f:spec": {}}),
    ({"f:metadata": {"f:labels": {"f:x": {}}}}, {}, {"f:metadata": {"f:labels": {"f:x": {}}}}),
])
def test_split(trie, inside, outside):
    assert fields.split(trie, DOMAIN) == (inside, outside)


@pytest.mark.parametrize("a, b, merged", [
    ({}, {}, {}),
    ({"f:a": {}}, {"f:b": {}}, {"f:a": {}, "f:b": {}}),
    ({"f:a": {"f:x": {}}}, {"f:a": {"f:y": {}}}, {"f:a": {"f:x": {}, "f:y": {}}}),
    ({"f:a": {}}, {"f:a": {}}, {"f:a": {}}),
    ({"f:a": {}}, {"f:a": {"f:y": {}}}, {"f:a": {".": {}, "f:y": {}}}),
    ({"f:a": {"f:x": {}}}, {"f:a": {}}, {"f:a": {".": {}, "f:x": {}}}),
])
def test_merge(a, b, merged):
    assert fields.merge(a, b) == merged


def test_foreign_fields_are_those_of_eligible_managers_inside_the_domain():
    live = deployment(OURS, entry("kubectl-patch", fields_v1=EXTRA_PORT),
                      entry("kube-controller-manager", fields_v1=REVISION),
                      entry("kubectl-label", fields_v1={"f:metadata": {"f:labels": {"f:team": {}}}}))
    assert fields.foreign(live) == EXTRA_PORT
    assert fields.foreign(deployment(OURS, entry("kube-controller-manager", fields_v1=REVISION))) == {}
    assert fields.foreign({"kind": "Secret", "metadata": {"managedFields": [
        entry("kubectl-edit", fields_v1={"f:data": {"f:x": {}}})]}}) == {}


def test_handover_moves_domain_fields_to_the_agent_and_keeps_the_rest():
    patched = entry("kubectl-patch", fields_v1={**EXTRA_PORT, **REVISION})
    status = entry("kube-controller-manager", fields_v1={"f:status": {"f:replicas": {}}}, subresource="status")
    entries = fields.handover(deployment(OURS, patched, status), "apps/v1", NOW)
    by_manager = {e["manager"]: e for e in entries}
    assert set(by_manager) == {"gitops-agent", "kubectl-patch", "kube-controller-manager"}
    ours = by_manager["gitops-agent"]
    assert ours["operation"] == "Apply" and ours["time"] == "2026-12-01T12:00:00Z"
    assert ours["fieldsV1"] == container_fields(**{".": {}, "f:image": {}, "f:name": {}, "f:ports": {
        PORT_81: {".": {}, "f:containerPort": {}, "f:protocol": {}}}})
    assert by_manager["kubectl-patch"]["fieldsV1"] == REVISION  # outside the domain: left alone
    assert by_manager["kubectl-patch"]["manager"] == "kubectl-patch"
    assert by_manager["kube-controller-manager"] == status
    assert [e["manager"] for e in entries] == ["gitops-agent", "kubectl-patch", "kube-controller-manager"]


def test_handover_drops_an_entry_left_with_no_fields_and_creates_the_agents_entry():
    entries = fields.handover(deployment(entry("kubectl-edit", fields_v1=EXTRA_PORT)), "apps/v1", NOW)
    assert entries == [{"manager": "gitops-agent", "operation": "Apply", "apiVersion": "apps/v1",
                        "time": "2026-12-01T12:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": EXTRA_PORT}]


def test_handover_merges_several_managers_and_ignores_the_agents_update_entry():
    edit = entry("kubectl-edit", fields_v1=container_fields(**{"f:image": {}}))
    agent_update = entry("gitops-agent", "Update", {"f:metadata": {"f:labels": {"f:x": {}}}})
    entries = fields.handover(deployment(agent_update, OURS, edit, entry("kubectl-patch", fields_v1=EXTRA_PORT)),
                              "apps/v1", NOW)
    assert [(e["manager"], e["operation"]) for e in entries] == [("gitops-agent", "Update"), ("gitops-agent", "Apply")]
    assert entries[0] == agent_update
    assert entries[1]["fieldsV1"] == container_fields(**{".": {}, "f:image": {}, "f:name": {}, "f:ports": {
        PORT_81: {".": {}, "f:containerPort": {}, "f:protocol": {}}}})


def test_nothing_to_hand_over_is_none():
    assert fields.handover(deployment(OURS, entry("kube-controller-manager", fields_v1=REVISION)), "apps/v1") is None
    assert fields.handover(deployment(), "apps/v1") is None
    assert fields.handover({"kind": "Deployment", "metadata": {}}, "apps/v1") is None


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def test_handover_without_a_clock_stamps_the_current_time():
    before = utc_now().replace(microsecond=0)  # the stamp has whole seconds
    entries = fields.handover(deployment(entry("kubectl-edit", fields_v1=EXTRA_PORT)), "apps/v1")
    after = utc_now()
    stamp = datetime.datetime.strptime(entries[0]["time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    assert before <= stamp <= after  # taken during the call, however long a loaded machine makes it


@pytest.mark.parametrize("kind, path, taken", [
    ("Deployment", ("f:spec", "f:replicas"), True),
    ("Deployment", ("f:spec", "f:selector", "f:matchLabels", "f:x"), True),
    ("Deployment", ("f:spec", "f:template", "f:metadata", "f:labels", "f:x"), True),
    ("Deployment", ("f:spec", "f:template", "f:metadata", "f:annotations", "f:kubectl.kubernetes.io/restartedAt"), False),
    ("Deployment", ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"sidecar"}', "."), True),
    ("Deployment", ("f:spec", "f:template", "f:spec", "f:volumes"), False),
    ("Deployment", ("f:metadata", "f:labels", "f:team"), False),
    ("Service", ("f:spec", "f:ports", 'k:{"port":81,"protocol":"TCP"}', "."), True),
    # spec.ports and startupProbe (issue 44 item 5) lie inside what the agent owns: drift on them is undone
    ("Service", ("f:spec", "f:ports", 'k:{"port":9090,"protocol":"TCP"}', "f:targetPort"), True),
    ("Deployment", ("f:spec", "f:template", "f:spec", "f:containers", CONTAINER, "f:ports",
                    'k:{"containerPort":9090,"protocol":"TCP"}', "f:name"), True),
    ("Deployment", ("f:spec", "f:template", "f:spec", "f:containers", CONTAINER, "f:startupProbe",
                    "f:failureThreshold"), True),
    ("Service", ("f:spec", "f:selector", "f:extra"), True),
    ("Service", ("f:spec", "f:type"), False),
    ("Application", ("f:spec", "f:image"), True),
    ("Application", ("f:metadata", "f:annotations", "f:note"), False),
])
def test_authoritative_subtrees(kind, path, taken):
    trie: dict = {}
    node = trie
    for key in path:
        node = node.setdefault(key, {})
    live = {"kind": kind, "metadata": {"managedFields": [entry("kubectl-edit", fields_v1=trie)]}}
    assert (fields.foreign(live) == trie) is taken
    assert (fields.foreign(live) == {}) is (not taken)


@pytest.mark.parametrize("managed, expected", [
    ([OURS], True),
    ([entry("gitops-agent", "Update")], False),
    ([entry("kubectl-client-side-apply")], False),
    ([], False),
])
def test_applied_by_agent(managed, expected):
    assert fields.applied_by_agent(deployment(*managed)) is expected
    assert fields.applied_by_agent({"metadata": {}}) is False


POD_OWNED = ("f:securityContext", "f:nodeSelector", "f:tolerations", "f:topologySpreadConstraints",
             "f:priorityClassName", "f:terminationGracePeriodSeconds")
"""The pod fields owned in full while rendered (spec.security, spec.placement,
spec.terminationGracePeriodSeconds); never volumes (the files' since before spec.volumes)."""
DEPLOYMENT_POD = tuple(("f:spec", "f:template", "f:spec", field) for field in POD_OWNED)
CRONJOB_POD = tuple(("f:spec", "f:jobTemplate", "f:spec", "f:template", "f:spec", field) for field in POD_OWNED)


def test_the_authoritative_subtrees_are_these():
    assert fields.AUTHORITATIVE == {
        "Deployment": (("f:spec", "f:replicas"), ("f:spec", "f:selector"),
                       ("f:spec", "f:template", "f:metadata", "f:labels"),
                       ("f:spec", "f:template", "f:spec", "f:containers"), *DEPLOYMENT_POD),
        "Service": (("f:spec", "f:selector"), ("f:spec", "f:ports")),
        "ConfigMap": (("f:data",),),
        "Ingress": (("f:spec", "f:rules"), ("f:spec", "f:tls")),
        "HorizontalPodAutoscaler": (("f:spec", "f:metrics"), ("f:spec", "f:scaleTargetRef")),
        "PodDisruptionBudget": (("f:spec", "f:selector"),),
        "CronJob": (("f:spec", "f:jobTemplate", "f:spec", "f:template", "f:metadata", "f:labels"),
                    ("f:spec", "f:jobTemplate", "f:spec", "f:template", "f:spec", "f:containers"), *CRONJOB_POD),
        "Job": (),  # created once, never re-applied with another spec: its name is its content's digest
        "Application": (("f:spec",),)}
    assert fields.RELEASED == {"Deployment": (("f:spec", "f:replicas"),), "Service": (), "ConfigMap": (),
                               "Ingress": (), "HorizontalPodAutoscaler": (), "PodDisruptionBudget": (), "CronJob": (),
                               "Job": ()}
    assert fields.WHEN_RENDERED == {
        "Deployment": DEPLOYMENT_POD, "Service": (), "ConfigMap": (), "Ingress": (), "HorizontalPodAutoscaler": (),
        "PodDisruptionBudget": (), "CronJob": CRONJOB_POD, "Job": ()}
    assert fields.RENDERED["ConfigMap"] == (("f:data",), ("f:metadata", "f:annotations"))
    assert fields.RENDERED["Deployment"] == (("f:spec",), ("f:metadata", "f:annotations"))


def test_objects_without_kind_or_metadata_have_nothing_foreign():
    assert fields.foreign({"kind": "Deployment"}) == {}
    assert fields.foreign({"metadata": {"managedFields": [entry("kubectl-edit", fields_v1={"f:spec": {}})]}}) == {}
    assert fields.handover({"kind": "Deployment"}, "apps/v1") is None
    assert fields.split({"f:spec": {"f:ports": {}}}, ((),)) == ({"f:spec": {"f:ports": {}}}, {})
    # a domain path equal to the node: covered, not merely leading to it
    assert fields.split({"f:spec": {"f:x": {}}}, (("f:spec",),)) == ({"f:spec": {"f:x": {}}}, {})


def test_handover_keeps_the_agents_entry_in_place_and_its_other_keys():
    ours = {**OURS, "subresource": "", "extra": "kept"}
    entries = fields.handover(deployment(entry("kube-controller-manager", fields_v1=REVISION), ours,
                                         entry("kubectl-patch", fields_v1=EXTRA_PORT)), "apps/v1", NOW)
    assert [e["manager"] for e in entries] == ["kube-controller-manager", "gitops-agent"]
    assert entries[1]["extra"] == "kept" and entries[1]["apiVersion"] == "apps/v1"
    # the agent's status-subresource entry is not its Apply entry
    status_entry = {**OURS, "subresource": "status"}
    entries = fields.handover(deployment(status_entry, entry("kubectl-patch", fields_v1=EXTRA_PORT)), "apps/v1", NOW)
    assert entries[0] == status_entry and entries[1]["fieldsV1"] == EXTRA_PORT


@pytest.mark.parametrize("live", [
    {"kind": "Secret", "metadata": {"managedFields": [entry("kubectl-edit", fields_v1={"f:data": {"f:x": {}}})]}},
    {"metadata": {"managedFields": [entry("kubectl-patch", fields_v1=EXTRA_PORT)]}},  # no kind at all
])
def test_a_kind_the_agent_does_not_render_has_nothing_to_hand_over(live):
    assert fields.foreign(live) == {}
    assert fields.handover(live, "v1", NOW) is None


@pytest.mark.parametrize("obj", [{}, {"kind": "Deployment"}, {"metadata": {"managedFields": None}}])
def test_an_object_without_managed_fields_was_not_applied_by_the_agent(obj):
    assert fields.applied_by_agent(obj) is False


def test_handover_stamps_utc_whatever_the_machines_timezone(monkeypatch):
    import time
    monkeypatch.setenv("TZ", "JST-9")  # UTC+9, a POSIX rule: needs no timezone database
    time.tzset()
    try:
        before = utc_now().replace(microsecond=0)
        entries = fields.handover(deployment(entry("kubectl-edit", fields_v1=EXTRA_PORT)), "apps/v1")
        after = utc_now()
    finally:
        monkeypatch.undo()
        time.tzset()
    stamp = datetime.datetime.strptime(entries[0]["time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    assert before <= stamp <= after  # local time (UTC+9) would be 9 hours after


STATUS_FIELDS = {"f:status": {"f:replicas": {}, "f:conditions": {".": {}}}}
OUTSIDE = {"f:spec": {"f:strategy": {"f:type": {}}, "f:revisionHistoryLimit": {}}}


def test_compact_keeps_authoritative_subtrees_and_annotations_of_every_entry():
    edit = entry("kubectl-edit", fields_v1=fields.merge(EXTRA_PORT, OUTSIDE))
    status = entry("kube-controller-manager", fields_v1=STATUS_FIELDS, subresource="status")
    controller = entry("kube-controller-manager", fields_v1=REVISION)
    obj = copy.deepcopy(deployment(OURS, edit, status, controller))  # compact changes entries in place
    foreign_before = fields.foreign(obj)
    assert fields.compact(obj) is obj
    kept = obj["metadata"]["managedFields"]
    assert [e["manager"] for e in kept] == ["gitops-agent", "kubectl-edit", "kube-controller-manager",
                                            "kube-controller-manager"]
    assert kept[0]["fieldsV1"] == OURS["fieldsV1"]  # the agent's own spec: what it still renders (dropped)
    assert kept[1]["fieldsV1"] == EXTRA_PORT  # the strategy and history limit are outside: dropped
    assert kept[1]["operation"] == "Update" and kept[2]["subresource"] == "status"
    assert kept[2]["fieldsV1"] == {}  # status is read by no pure step
    assert kept[3]["fieldsV1"] == REVISION  # who owns each annotation stays known
    assert fields.foreign(obj) == foreign_before
    assert fields.applied_by_agent(obj)


def test_compact_of_a_service_and_of_an_object_without_managed_fields():
    ports = {"f:spec": {"f:ports": {'k:{"port":80,"protocol":"TCP"}': {}}, "f:sessionAffinity": {}}}
    svc = {"kind": "Service", "metadata": {"managedFields": [entry("kubectl-patch", fields_v1=ports)]}}
    fields.compact(svc)
    assert svc["metadata"]["managedFields"][0]["fieldsV1"] == {"f:spec": {"f:ports": ports["f:spec"]["f:ports"]}}
    assert fields.compact({"kind": "Service", "metadata": {}}) == {"kind": "Service", "metadata": {}}
    unknown = {"kind": "Secret", "metadata": {"managedFields": [entry("x", fields_v1=fields.merge(REVISION, OUTSIDE))]}}
    assert fields.compact(unknown)["metadata"]["managedFields"][0]["fieldsV1"] == REVISION


def test_compact_keeps_what_another_controller_declared_inside_the_authoritative_subtrees():
    """``plan`` sets those list entries aside (``theirs``), so a listed object must keep them."""
    mesh = entry("mesh-injector", operation="Apply", fields_v1=fields.merge(EXTRA_PORT, OUTSIDE))
    scale = entry("hpa", operation="Apply", fields_v1=EXTRA_PORT, subresource="scale")
    obj = copy.deepcopy(deployment(OURS, mesh, scale))
    theirs_before = fields.theirs(obj)
    assert theirs_before == EXTRA_PORT  # the scale subresource's entry is not a declaration on the object
    fields.compact(obj)
    kept = obj["metadata"]["managedFields"]
    assert kept[1]["fieldsV1"] == EXTRA_PORT and kept[2]["fieldsV1"] == {}
    assert fields.theirs(obj) == theirs_before
    assert [fields.declared_by_others(e) for e in kept] == [False, True, False]


def test_without_theirs_sets_aside_only_whole_entries_that_git_does_not_have():
    trie = {"f:spec": {"f:ports": {'k:{"port":9100,"protocol":"TCP"}': {".": {}},
                                   'k:{"port":80,"protocol":"TCP"}': {".": {}},
                                   'k:{"port":7,"protocol":"UDP"}': {"f:name": {}},
                                   "k:not json": {".": {}}}}}
    live = {"spec": {"ports": [{"port": 80, "protocol": "TCP"}, {"port": 9100, "protocol": "TCP"},
                               {"port": 7, "protocol": "UDP"}], "type": "ClusterIP"}}
    desired = {"spec": {"ports": [{"port": 80}]}}
    out = fields.without_theirs(live, trie, desired)
    assert out == {"spec": {"ports": [{"port": 80, "protocol": "TCP"}, {"port": 7, "protocol": "UDP"}],
                            "type": "ClusterIP"}}
    assert len(live["spec"]["ports"]) == 3  # a copy
    assert fields.without_theirs(live, {}, desired) is live
    assert fields.without_theirs({"spec": {"ports": "x"}}, trie, desired) == {"spec": {"ports": "x"}}
    # an entry whose key Git gives only in part is Git's: kept
    assert fields.without_theirs(live, trie, {"spec": {"ports": [{"protocol": "TCP"}]}})["spec"]["ports"] == \
        live["spec"]["ports"]


# -- fields Git no longer sets (dropped) and fields the agent lets go of (release) -------------

ENV_A = 'k:{"name":"A"}'
APPLIED = entry("gitops-agent", "Apply", {
    "f:metadata": {"f:labels": {"f:app": {}}, "f:annotations": {"f:x.io/y": {}}},
    "f:spec": {"f:replicas": {}, "f:selector": {},
               "f:template": {"f:spec": {"f:containers": {CONTAINER: {
                   ".": {}, "f:name": {}, "f:image": {}, "f:command": {},
                   "f:env": {ENV_A: {".": {}, "f:name": {}, "f:value": {}}},
                   "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}},
                   "f:resources": {"f:requests": {"f:cpu": {}}}}}}}}})


def desired(**container):
    spec = {"replicas": 2, "selector": {"matchLabels": {}},
            "template": {"spec": {"containers": [{"name": "web", "image": "i", "command": ["x"],
                                                  "env": [{"name": "A", "value": "1"}],
                                                  "ports": [{"containerPort": 80, "protocol": "TCP"}],
                                                  "resources": {"requests": {"cpu": "1"}}, **container}]}}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "annotations": {"x.io/y": "1"}},
            "spec": spec}


def drop(obj, *path):
    node = obj
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return obj


CONTAINER_PATH = ("spec", "template", "spec", "containers", 0)


@pytest.mark.parametrize("want, expected", [
    (desired(), False),
    (desired(args=["more"]), False),  # set by Git, not yet applied: an update by its value
    (drop(desired(), *CONTAINER_PATH, "command"), True),
    (drop(desired(), *CONTAINER_PATH, "env"), True),
    (desired(env=[{"name": "B", "value": "1"}]), True),  # A removed
    (desired(env=[{"name": "A", "value": "2"}]), False),  # A kept (its value changes: an update by value)
    (desired(env=[{"name": "A", "valueFrom": {}}]), True),  # A.value dropped for valueFrom
    (drop(desired(), *CONTAINER_PATH, "resources", "requests"), True),
    (desired(ports=[{"containerPort": 80}]), False),  # a key field left to its default still matches
    (desired(ports=[{"containerPort": 81, "protocol": "TCP"}]), True),
    (drop(desired(), "metadata", "annotations"), True),
    (drop(desired(), "spec", "replicas"), False),  # released, not dropped (see release)
])
def test_dropped(want, expected):
    assert fields.dropped(deployment(APPLIED), want) is expected


def test_dropped_reads_only_the_agents_own_apply_and_rendered_subtrees():
    other = entry("kubectl-edit", fields_v1=APPLIED["fieldsV1"])
    assert not fields.dropped(deployment(other), drop(desired(), *CONTAINER_PATH, "command"))
    assert not fields.dropped({"kind": "Secret", "metadata": {"managedFields": [APPLIED]}}, {})
    labels_only = entry("gitops-agent", "Apply", {"f:metadata": {"f:labels": {"f:app": {}}}})
    assert not fields.dropped(deployment(labels_only), {"kind": "Deployment"})
    status = entry("gitops-agent", "Apply", APPLIED["fieldsV1"], subresource="status")
    assert not fields.dropped(deployment(status), drop(desired(), *CONTAINER_PATH, "command"))
    data = {"kind": "ConfigMap", "metadata": {"managedFields": [entry("gitops-agent", "Apply", {
        "f:data": {"f:a": {}, "f:b": {}}})]}}
    assert fields.dropped(data, {"data": {"a": "1"}}) and not fields.dropped(data, {"data": {"a": "1", "b": "2"}})


def test_set_entries_and_unreadable_keys():
    node = {"f:finalizers": {'v:"x"': {}}}
    assert fields._all_set({"finalizers": ["x"]}, node) and not fields._all_set({"finalizers": ["y"]}, node)
    assert not fields._all_set({"finalizers": "x"}, node)
    assert fields._all_set({}, {"k:{bad": {}, "v:{bad": {}, ".": {}, "i:0": {}})
    assert not fields._all_set({"a": {}}, {"f:a": {'k:{"name":"x"}': {}}})


def test_release_hands_replicas_back_when_git_leaves_them_out():
    scale = entry("kube-controller-manager", fields_v1={"f:spec": {"f:replicas": {}}}, subresource="scale")
    live = deployment(APPLIED, scale)
    want = drop(desired(), "spec", "replicas")
    assert fields.releasable(live, want) and not fields.releasable(live, desired())
    entries = fields.release(live, want)
    assert entries[1] == scale and entries[0]["manager"] == "gitops-agent"
    assert "f:replicas" not in entries[0]["fieldsV1"]["f:spec"]
    assert fields.release(live, desired()) is None
    assert fields.release({**live, "metadata": {"managedFields": entries}}, want) is None
    assert not fields.releasable({**live, "metadata": {"managedFields": entries}}, want)
    assert fields.release({"kind": "Service", "metadata": {"managedFields": [APPLIED]}}, {}) is None
    assert not fields.dropped({**live, "metadata": {"managedFields": entries}}, want)


def test_replicas_are_authoritative_only_while_git_sets_them():
    scale = entry("kube-controller-manager", fields_v1={"f:spec": {"f:replicas": {}}}, subresource="scale")
    live = deployment(APPLIED, scale)
    assert fields.foreign(live) == {"f:spec": {"f:replicas": {}}}  # unknown wish: every subtree
    assert fields.foreign(live, desired()) == {"f:spec": {"f:replicas": {}}}  # Git takes the field again
    assert fields.foreign(live, drop(desired(), "spec", "replicas")) == {}  # the autoscaler's: not drift
    assert fields.handover(live, "apps/v1", NOW, desired=drop(desired(), "spec", "replicas")) is None
    assert fields.domains("Deployment", drop(desired(), "spec", "replicas")) == fields.AUTHORITATIVE["Deployment"][1:4]
    assert fields.domains("Deployment") == fields.AUTHORITATIVE["Deployment"]
    assert fields.domains("Nothing") == ()
