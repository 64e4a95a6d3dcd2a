"""The suspend decisions (agent/engine/suspend.py): which objects a pass leaves alone, why, and the status."""

from __future__ import annotations

import pytest

from agent.engine import conditions, status, suspend
from agent.kinds import fields, health

ANNOTATION = "heumsi.github.io/reconcile"
SHA = "a" * 40


def owned_by(*managers: str) -> list[dict]:
    """managedFields in which each of ``managers`` owns the reconcile annotation."""
    return [{"manager": m, "operation": "Apply" if m == "gitops-agent" else "Update", "apiVersion": "v1",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:annotations": {f"f:{ANNOTATION}": {}}}}}
            for m in managers]


def obj(kind="Application", value=None, managers=("kubectl-annotate",), spec=None, managed=None):
    meta = {"name": "web", "namespace": "ns"}
    if value is not None:
        meta["annotations"] = {ANNOTATION: value, "other": "x"}
        meta["managedFields"] = owned_by(*managers) if managed is None else managed
    elif managed is not None:
        meta["managedFields"] = managed
    body = {"apiVersion": "heumsi.github.io/v1" if kind == "Application" else "apps/v1", "kind": kind,
            "metadata": meta}
    if spec is not None:
        body["spec"] = spec
    return body


SPEC = {"image": "nginx", "replicas": 1, "port": 80}
AGENT_ONLY = [{"manager": "gitops-agent", "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": {
    "f:metadata": {"f:annotations": {f"f:{ANNOTATION}": {}, "f:other": {}}}}}]
OTHER_KEY_BY_KUBECTL = AGENT_ONLY + [{"manager": "kubectl-annotate", "operation": "Update", "fieldsType": "FieldsV1",
                                      "fieldsV1": {"f:metadata": {"f:annotations": {"f:other": {}}}}}]


@pytest.mark.parametrize("live, expected", [
    (obj(value="disabled"), True),
    (obj(value="Disabled"), True),  # Flux: strings.EqualFold
    (obj(value="DISABLED"), True),
    (obj(value="disabled "), False),
    (obj(value="enabled"), False),
    (obj(value=""), False),
    (obj(value="no"), False),
    (obj(), False),
    (None, False),
    (obj(value="disabled", managers=("gitops-agent",)), False),  # applied from Git
    (obj(value="disabled", managed=AGENT_ONLY), False),
    (obj(value="disabled", managed=OTHER_KEY_BY_KUBECTL), False),  # kubectl owns another key only
    (obj(value="disabled", managers=("gitops-agent", "kubectl-annotate")), True),
    (obj(value="disabled", managers=("kubectl-client-side-apply",)), True),
    (obj(value="disabled", managers=("kubectl-edit",)), True),
    (obj(value="disabled", managed=[]), True),  # nobody recorded: fail safe, left alone
    (obj(kind="Deployment", value="disabled"), True),
])
def test_set_by_hand(live, expected):
    assert suspend.set_by_hand(live) is expected


def test_a_non_string_annotation_value_is_not_disabled():
    live = obj(value="disabled")
    live["metadata"]["annotations"][ANNOTATION] = True
    assert suspend.set_by_hand(live) is False


HAND = obj(value="disabled", spec=SPEC)
FROM_GIT = obj(value="disabled", managers=("gitops-agent",), spec=SPEC)


@pytest.mark.parametrize("desired, live, expected", [
    # nothing suspends
    (obj(spec=SPEC), obj(spec=SPEC), None),
    (obj(spec={**SPEC, "suspend": False}), obj(spec={**SPEC, "suspend": True}), None),  # Git wins over live
    (None, obj(spec={**SPEC, "suspend": False}), None),
    (obj(spec={**SPEC, "suspend": "true"}), None, None),  # only the boolean true
    (obj(spec={**SPEC, "suspend": 1}), None, None),
    (None, None, None),
    (obj(spec=SPEC), obj(value="enabled", spec=SPEC), None),
    # spec.suspend, in Git or (not in Git) live
    (obj(spec={**SPEC, "suspend": True}), None, suspend.Hold(suspend.SPEC, False)),
    (obj(spec={**SPEC, "suspend": True}), obj(spec=SPEC), suspend.Hold(suspend.SPEC, False)),
    (None, obj(spec={**SPEC, "suspend": True}), suspend.Hold(suspend.SPEC, False)),
    # the annotation set by hand: frozen, whatever Git says
    (obj(spec=SPEC), HAND, suspend.Hold(suspend.ON_APPLICATION, True)),
    (obj(spec={**SPEC, "suspend": True}), HAND, suspend.Hold(suspend.ON_APPLICATION, True)),
    (None, HAND, suspend.Hold(suspend.ON_APPLICATION, True)),
    # the annotation in Git: like spec.suspend
    (obj(value="disabled", spec=SPEC), None, suspend.Hold(suspend.IN_GIT, False)),
    (obj(value="disabled", spec=SPEC), FROM_GIT, suspend.Hold(suspend.IN_GIT, False)),
    (None, FROM_GIT, suspend.Hold(suspend.IN_GIT, False)),
    (obj(spec=SPEC), FROM_GIT, None),  # removed from Git: the next apply removes it, no hold
    (obj(value="disabled", spec={**SPEC, "suspend": True}), None, suspend.Hold(suspend.SPEC, False)),
])
def test_application(desired, live, expected):
    assert suspend.application(desired, live) == expected


@pytest.mark.parametrize("live, expected", [
    (obj(spec={**SPEC, "suspend": True}), True),
    (obj(spec={**SPEC, "suspend": False}), False),
    (obj(spec=SPEC), False),
    (HAND, True),
    (FROM_GIT, True),
    (obj(value="enabled", spec=SPEC), False),
])
def test_never_pruned(live, expected):
    assert suspend.never_pruned(live) is expected


def test_hold_messages_name_the_mechanism():
    assert suspend.Hold(suspend.SPEC, False).message == (
        "suspended by spec.suspend: true: its children are not applied, corrected, recreated or pruned; the "
        "Application itself is applied from Git")
    assert suspend.Hold(suspend.ON_APPLICATION, True).message == (
        "suspended by heumsi.github.io/reconcile: disabled on the Application: neither the Application nor its "
        "children are applied from Git, corrected or pruned")
    assert suspend.IN_GIT == "heumsi.github.io/reconcile: disabled in Git"


@pytest.mark.parametrize("hold, live, expected", [
    (None, None, None),
    (None, obj(kind="Deployment"), None),
    (None, obj(kind="Deployment", value="enabled"), None),
    (None, obj(kind="Deployment", value="Disabled"), "not applied, corrected, recreated or pruned: Deployment/ns/web "
                                                      "has heumsi.github.io/reconcile: Disabled"),
    (suspend.Hold(suspend.SPEC, False), None, "not applied: its Application is suspended (spec.suspend: true)"),
    (suspend.Hold(suspend.SPEC, False), obj(kind="Deployment"),
     "not applied: its Application is suspended (spec.suspend: true)"),
    (suspend.Hold(suspend.ON_APPLICATION, True), obj(kind="Deployment", value="disabled"),
     "not applied: its Application is suspended (heumsi.github.io/reconcile: disabled on the Application)"),
])
def test_child(hold, live, expected):
    assert suspend.child(hold, "Deployment/ns/web", live) == expected


HEALTHY_DEPLOYMENT = {"metadata": {"name": "web", "generation": 1}, "spec": {"replicas": 1},
                      "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1,
                                 "availableReplicas": 1, "readyReplicas": 1}}
ROLLING = {**HEALTHY_DEPLOYMENT, "status": {**HEALTHY_DEPLOYMENT["status"], "availableReplicas": 0}}
SERVICE = {"metadata": {"name": "web"}, "spec": {"type": "ClusterIP"}}


def test_no_hold_and_nothing_skipped_is_no_outcome():
    assert suspend.outcome(None, {}, {"Deployment": HEALTHY_DEPLOYMENT, "Service": SERVICE}, commit=SHA, path="web.yaml") is None


def test_a_suspended_application_is_suspended_not_ok_and_keeps_its_path():
    hold = suspend.Hold(suspend.SPEC, False)
    out = suspend.outcome(hold, {}, {"Deployment": HEALTHY_DEPLOYMENT, "Service": SERVICE}, commit=SHA, path="web.yaml")
    assert out == status.Outcome(False, False, SHA, "Suspended", hold.message, "web.yaml",
                                 health=health.Health("Suspended", hold.message), suspended=True)


def test_a_suspended_application_no_longer_in_git_says_why_it_is_kept():
    hold = suspend.Hold(suspend.SPEC, False)
    out = suspend.outcome(hold, {}, {"Deployment": None, "Service": None}, commit=SHA, path="web.yaml", gone=True)
    assert out.message == (f"no longer in Git at commit {SHA}; kept because it is suspended (spec.suspend: true): "
                           f"{hold.message}")
    assert (out.reason, out.ok, out.suspended, out.health.status) == ("Suspended", False, True, "Suspended")


def test_hand_applied_suspended_application_has_no_commit():
    out = suspend.outcome(suspend.Hold(suspend.ON_APPLICATION, True), {}, {}, commit=None, path=None)
    assert (out.commit, out.source_path, out.suspended) == (None, None, True)


@pytest.mark.parametrize("skipped, deployment, expected_health, verb", [
    ({"Deployment": "Deployment/ns/web"}, HEALTHY_DEPLOYMENT,
     health.Health("Suspended", "Deployment: not reconciled (heumsi.github.io/reconcile: disabled)"), "has"),
    ({"Service": "Service/ns/web"}, HEALTHY_DEPLOYMENT,
     health.Health("Suspended", "Service: not reconciled (heumsi.github.io/reconcile: disabled)"), "has"),
    ({"Service": "Service/ns/web"}, ROLLING,  # a worse sibling wins (health.ORDER)
     health.Health("Progressing", "Deployment: waiting for rollout to finish: 0 of 1 replicas available"), "has"),
    ({"Deployment": "Deployment/ns/web", "Service": "Service/ns/web"}, None,
     health.Health("Suspended", "Deployment: not reconciled (heumsi.github.io/reconcile: disabled)"), "have"),
])
def test_a_held_child_names_the_child_and_the_rest_synced(skipped, deployment, expected_health, verb):
    out = suspend.outcome(None, skipped, {"Deployment": deployment, "Service": SERVICE}, commit=SHA, path="web.yaml")
    names = " and ".join(skipped[k] for k in sorted(skipped))
    assert out == status.Outcome(False, False, SHA, "Suspended", f"{names} {verb} heumsi.github.io/reconcile: "
                                 "disabled: not applied, corrected, recreated or pruned; the rest of the "
                                 "Application synced", "web.yaml", health=expected_health, suspended=False)


def conds(out: status.Outcome, old: dict | None = None) -> tuple[dict, dict]:
    app = {"metadata": {"name": "web", "namespace": "ns", "generation": 3}, "status": old or {}}
    new = status.compute(app, out, {"Deployment": HEALTHY_DEPLOYMENT, "Service": SERVICE}, "2026-12-01T10:00:00Z")
    return new, {c["type"]: c for c in new["conditions"]}


@pytest.mark.parametrize("hold", [suspend.Hold(suspend.SPEC, False), suspend.Hold(suspend.IN_GIT, False),
                                  suspend.Hold(suspend.ON_APPLICATION, True)])
def test_status_of_a_suspended_application(hold):
    old = {"lastSyncedCommit": "b" * 40, "lastSyncTime": "2026-11-30T10:00:00Z"}
    new, found = conds(suspend.outcome(hold, {}, {"Deployment": HEALTHY_DEPLOYMENT, "Service": SERVICE}, commit=SHA, path="web.yaml"), old)
    assert set(found) == {"Ready", "Synced"}  # never Stalled, never Reconciling
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in new["conditions"]] == [
        ("Ready", "False", "Suspended", hold.message), ("Synced", "False", "Suspended", hold.message)]
    assert found["Ready"]["observedGeneration"] == 3
    assert new["health"] == {"status": "Suspended", "message": hold.message}
    assert new["suspended"] is True
    assert (new["lastSyncedCommit"], new["lastAttemptedCommit"]) == ("b" * 40, SHA)  # synced commit kept
    assert new["lastSyncTime"] == "2026-11-30T10:00:00Z"
    assert "Suspended" not in conditions.STALLED_REASONS


def test_status_with_a_held_child_is_suspended_but_not_status_suspended():
    new, found = conds(suspend.outcome(None, {"Deployment": "Deployment/ns/web"}, {"Deployment": HEALTHY_DEPLOYMENT, "Service": SERVICE},
                                       commit=SHA, path="web.yaml"))
    assert (found["Ready"]["status"], found["Ready"]["reason"]) == ("False", "Suspended")
    assert "Deployment/ns/web has" in found["Ready"]["message"] and "Stalled" not in found
    assert "suspended" not in new and new["health"]["status"] == "Suspended"
    assert "lastSyncedCommit" not in new and new["lastAttemptedCommit"] == SHA


def test_status_without_suspension_has_no_suspended_field():
    new, _ = conds(status.Outcome(True, False, SHA, "Synced", "children applied"))
    assert "suspended" not in new and new["health"]["status"] == "Healthy"


def test_field_take_over_never_hands_annotations_over():
    """The reconcile annotation (and every other annotation) kubectl owns stays kubectl's: the
    agent's apply can then never remove it (agent/kinds/fields.py takes only AUTHORITATIVE subtrees)."""
    assert all(path[0] != "f:metadata" for paths in fields.AUTHORITATIVE.values() for path in paths)
    annotate = {"manager": "kubectl-annotate", "operation": "Update", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:annotations": {f"f:{ANNOTATION}": {}}}}}
    edit = {"manager": "kubectl-edit", "operation": "Update", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:annotations": {"f:note": {}}},
                         "f:spec": {"f:replicas": {}}}}
    for kind in ("Deployment", "Service", "Application"):
        live = {"kind": kind, "metadata": {"managedFields": [annotate, edit]}}
        entries = fields.handover(live, "v1")
        assert annotate in (entries or [annotate])
        taken = fields.foreign(live)
        assert "f:metadata" not in taken
        if entries:
            kubectl_edit = next(e for e in entries if e["manager"] == "kubectl-edit")
            assert kubectl_edit["fieldsV1"]["f:metadata"] == {"f:annotations": {"f:note": {}}}
            ours = next(e for e in entries if e["manager"] == "gitops-agent")
            assert "f:metadata" not in ours["fieldsV1"]


def test_sync_wait_lists_suspended_and_held_applications_as_skipped():
    """``sync --once --wait``: a suspended Application and one with a held child are in
    ``report.synced`` as None (``readiness`` lists them as skipped); a failed one is not."""
    from agent.engine import statuses as statuses_
    from agent.engine.options import Options
    from agent.engine.passvalues import ChildWave, Pass, Wanted
    from agent.engine.report import Report
    from agent.engine.status import Outcome
    from agent.manifests.manifest import Manifest

    report = Report(commit="a" * 40, failures={"ns/bad": "boom"})
    wanted = [Manifest("ns", n, {}, "apps.yaml", 1) for n in ("ok", "whole", "held", "bad")]
    p = Pass(None, Options(repo=".", cache_dir="."), report, Wanted(wanted))
    children = ChildWave(held={"ns/held": {"Deployment": "Deployment ns/held"}})
    app = {"metadata": {"name": "x", "namespace": "ns"}, "spec": {}}
    whole = suspend.outcome(suspend.Hold(suspend.SPEC, False), {}, {}, commit="a" * 40, path="apps.yaml")
    held = suspend.outcome(None, {"Deployment": "Deployment ns/held"}, {}, commit="a" * 40, path="apps.yaml",
                           spec={})
    statuses = [("ns/ok", app, Outcome(True, True, "a" * 40, "Synced", "synced", "apps.yaml"), {}, False),
                ("ns/whole", app, whole, {}, False), ("ns/held", app, held, {}, False),
                ("ns/bad", app, Outcome(False, False, "a" * 40, "SyncFailed", "boom", "apps.yaml"), {}, True)]
    statuses_.record_health(p, statuses, children)
    assert sorted(report.synced) == ["ns/held", "ns/ok", "ns/whole"]
    assert report.synced["ns/whole"] is None and report.synced["ns/held"] is None
    assert report.synced["ns/ok"].changed is False
