"""The whole pass (``agent.engine.sync.run``) within ``--allowed-namespaces``, and what it does
child by child: a live spec the schema refuses, a refused child prune, the order of prunes, the
Pruned notice and the one Event per Application. The real-cluster suite asserts the same in
tests/test_sync.py and tests/test_prune_guards.py."""

from __future__ import annotations

import pytest
import yaml

from agent.engine.report import CONFIGURED, CREATED, FAILED, KEPT, PRUNED, UNCHANGED
from agent.kube.cluster import ApiError
from tests.unit.engine.passes import NS, World, actions, app_yaml, conditions


@pytest.fixture
def world(tmp_path):
    return World(tmp_path)


def changes(report) -> list[tuple[str, str, str]]:
    return [(c.subject, c.action, c.message) for c in report.changes]


def app_in(name: str, namespace: str) -> str:
    """An Application document that names its namespace."""
    doc = yaml.safe_load(app_yaml(name))
    doc["metadata"]["namespace"] = namespace
    return yaml.safe_dump(doc, sort_keys=False)


def outside(path: str, line: int, namespace: str, name: str) -> str:
    return (f"{path}:{line}: metadata.namespace: Application {namespace}/{name}: namespace {namespace!r} is not "
            f"allowed (--allowed-namespaces {NS}); nothing was created, changed or pruned there")


# -- --allowed-namespaces ----------------------------------------------------------------------

def test_an_application_outside_the_allowed_namespaces_is_refused_and_blocks_pruning(tmp_path):
    world = World(tmp_path, allowed_namespaces=(NS,))
    world.commit({"web.yaml": app_yaml("web"), "gone.yaml": app_yaml("gone")})
    world.sync()
    head = world.commit({"gone.yaml": None, "x.yaml": app_yaml("ok") + "---\n" + app_in("evil", "elsewhere")})
    report = world.sync()
    refused = outside("x.yaml", 14, "elsewhere", "evil")
    assert report.errors == [refused]
    assert (report.refused, report.invalid) == ({"elsewhere/evil": refused}, [("elsewhere/evil", refused)])
    assert report.notes == ["pruning skipped: 1 Application in Git targets a namespace --allowed-namespaces does not "
                            "allow (refused above; move it under a path no agent with this scope reads, or widen the "
                            "flag)"]
    assert [c for c in changes(report) if c[1] != UNCHANGED] == [
        (f"Application/{NS}/ok", CREATED, ""), (f"Deployment/{NS}/ok", CREATED, ""), (f"Service/{NS}/ok", CREATED, ""),
        (f"Application/{NS}/gone", KEPT, "not in Git; pruning was blocked this pass")]
    assert world.kube.writes == [("apply", f"Application/{NS}/ok"), ("apply", f"Deployment/{NS}/ok"),
                                 ("apply", f"Service/{NS}/ok"), ("patch_status", f"Application/{NS}/ok"),
                                 ("patch_status", f"Application/{NS}/gone"), ("patch_status", f"Application/{NS}/web")]
    assert world.kube.stored("Namespace", "", "elsewhere") is None
    why = f"no longer in Git at commit {head}; kept because pruning was blocked this pass"
    assert conditions(world.app("gone"))["Synced"] == ("False", "PruneBlocked", why)
    assert report.summary().splitlines()[-1] == ("sync failed: 3 created, 0 configured, 5 unchanged, 0 pruned, "
                                                 "1 failed, 1 kept; 1 Application failed: elsewhere/evil")


def test_the_pruning_note_counts_the_applications_outside_and_the_files_that_failed(tmp_path):
    world = World(tmp_path, allowed_namespaces=(NS,))
    world.commit({"web.yaml": app_yaml("web"), "x.yaml": app_in("evil", "elsewhere"),
                  "y.yaml": app_in("more", "ops")})
    report = world.sync()
    assert report.errors == [outside("x.yaml", 5, "elsewhere", "evil"), outside("y.yaml", 5, "ops", "more")]
    assert report.notes == ["pruning skipped: 2 Applications in Git target a namespace --allowed-namespaces does not "
                            "allow (refused above; move them under a path no agent with this scope reads, or widen "
                            "the flag)"]
    world.commit({"z.yaml": "kind: [\n"})
    report = world.sync()
    assert report.notes == ["pruning skipped: not every file could be read and validated and 2 Applications in Git "
                            "target a namespace --allowed-namespaces does not allow (refused above; move them under a "
                            "path no agent with this scope reads, or widen the flag)"]
    world.commit({"x.yaml": None, "y.yaml": None})
    report = world.sync()
    assert report.notes == []  # a refused file alone holds back only what it could hide: here nothing (hidden.py)
    world.commit({"web.yaml": None, "new.yaml": app_yaml("new")})  # z.yaml is older than web's last sync
    report = world.sync()
    assert report.notes == [] and (f"Application/{NS}/web", PRUNED, "") in changes(report)


# -- child by child ----------------------------------------------------------------------------

def test_a_live_spec_the_schema_refuses_fails_with_invalid_spec_and_renders_no_children(world):
    world.commit({"web.yaml": app_yaml("web"), "gone.yaml": app_yaml("gone")})
    world.sync()
    world.commit({"gone.yaml": None})
    live = world.app("gone")  # kept from the cluster (--no-prune): its children come from the live spec
    live["spec"]["replicas"] = "two"
    world.kube.put(live)
    deployment = world.child("Deployment", "gone")
    report = world.sync(prune=False)
    why = ('its spec does not match the Application schema (spec.replicas: must be an integer between 0 and '
           '2147483647 (got "two")); children not rendered')
    assert changes(report) == [(f"Application/{NS}/web", UNCHANGED, ""), (f"Application/{NS}/gone", FAILED, why),
                               (f"Deployment/{NS}/web", UNCHANGED, ""), (f"Service/{NS}/web", UNCHANGED, "")]
    assert report.errors == [f"Application/{NS}/gone: {why}"] and report.failed == {f"{NS}/gone"}
    assert world.kube.writes == [("patch_status", f"Application/{NS}/gone"), ("patch_status", f"Application/{NS}/web")]
    assert conditions(world.app("gone")) == {"Ready": ("False", "InvalidSpec", why),
                                             "Stalled": ("True", "InvalidSpec", why),
                                             "Synced": ("False", "InvalidSpec", why)}
    assert world.child("Deployment", "gone") == deployment
    [event] = [e for e in world.kube.events if e["name"] == "gone"][-1:]
    assert (event["type"], event["reason"], event["message"]) == ("Warning", "InvalidSpec", why)


def test_a_refused_child_prune_is_prune_failed_for_its_application(world):
    world.commit({"web.yaml": app_yaml("web"), "gone.yaml": app_yaml("gone")})
    world.sync()
    world.commit({"gone.yaml": None})
    refused = ApiError(403, "Forbidden", 'deployments.apps "gone" is forbidden: admission says no')
    world.kube.fail("delete", f"Deployment/{NS}/gone", refused)
    report = world.sync()
    why = f"prune failed: {refused}"
    assert [c for c in changes(report) if "gone" in c[0]] == [
        (f"Service/{NS}/gone", PRUNED, ""), (f"Deployment/{NS}/gone", FAILED, why),
        # today its Application is pruned after that; the garbage collector then takes the Deployment
        (f"Application/{NS}/gone", PRUNED, "")]
    assert report.errors == [f"Deployment/{NS}/gone: {why}"] and report.failed == {f"{NS}/gone"}
    assert world.kube.writes == [("delete", f"Service/{NS}/gone"), ("delete", f"Deployment/{NS}/gone"),
                                 ("delete", f"Application/{NS}/gone"), ("patch_status", f"Application/{NS}/web")]
    assert world.kube.events[-1]["message"] == f"pruned Service/{NS}/gone, Application/{NS}/gone"


def test_a_failed_application_keeps_the_children_git_dropped_and_the_others_are_pruned(world):
    world.commit({"web.yaml": app_yaml("web", files={"/etc/web/a.conf": {"content": "a = 1\n"}}),
                  "gone.yaml": app_yaml("gone")})
    world.sync()
    assert world.child("ConfigMap", "web") is not None
    world.commit({"web.yaml": app_yaml("web", replicas=2), "gone.yaml": None})
    world.kube.fail("apply", f"Deployment/{NS}/web", ApiError(403, "Forbidden", "no"))
    report = world.sync()
    assert [w for w in world.kube.writes if w[0] == "delete"] == [
        ("delete", f"Service/{NS}/gone"), ("delete", f"Deployment/{NS}/gone"), ("delete", f"Application/{NS}/gone")]
    assert world.child("ConfigMap", "web") is not None  # its Application failed: nothing of it is pruned
    assert (f"ConfigMap/{NS}/web", PRUNED) not in actions(report)


def test_children_are_pruned_before_their_applications_with_one_notice_each(world):
    first = world.commit({"a.yaml": app_yaml("a"), "b.yaml": app_yaml("b"), "keep.yaml": app_yaml("keep")})
    world.sync()
    uids = {name: world.app(name)["metadata"]["uid"] for name in "ab"}
    head = world.commit({"a.yaml": None, "b.yaml": None})
    report = world.sync()
    assert world.kube.writes == [("delete", f"Service/{NS}/a"), ("delete", f"Service/{NS}/b"),
                                 ("delete", f"Deployment/{NS}/a"), ("delete", f"Deployment/{NS}/b"),
                                 ("delete", f"Application/{NS}/a"), ("delete", f"Application/{NS}/b"),
                                 ("patch_status", f"Application/{NS}/keep")]
    assert [(n.namespace, n.name, n.reason, n.severity, n.message, n.commit, n.previous_commit, n.source_path, n.uid)
            for n in report.notices] == [
        (NS, name, "Pruned", "info", f"pruned: no longer in Git at commit {head[:7]}", head, first, f"{name}.yaml",
         uids[name]) for name in "ab"]


def test_one_event_per_application_names_everything_the_pass_did_to_it(world):
    world.commit({"web.yaml": app_yaml("web"), "gone.yaml": app_yaml("gone"), "bad.yaml": app_yaml("bad"),
                  "same.yaml": app_yaml("same")})
    world.sync()
    refused = ApiError(403, "Forbidden", 'deployments.apps "bad" is forbidden: no')
    world.kube.fail("apply", f"Deployment/{NS}/bad", refused)
    world.commit({"gone.yaml": None, "new.yaml": app_yaml("new"), "web.yaml": app_yaml("web", replicas=3),
                  "bad.yaml": app_yaml("bad", replicas=2)})
    events = len(world.kube.events)
    report = world.sync()
    assert (f"Application/{NS}/bad", CONFIGURED) in actions(report)
    assert [(e["name"], e["type"], e["reason"], e["message"]) for e in world.kube.events[events:]] == [
        ("bad", "Warning", "SyncFailed", f"{refused}; configured Application/{NS}/bad"),
        ("gone", "Normal", "Pruned", f"pruned Service/{NS}/gone, Deployment/{NS}/gone, Application/{NS}/gone"),
        ("new", "Normal", "Created", f"created Application/{NS}/new, Deployment/{NS}/new, Service/{NS}/new"),
        ("web", "Normal", "Updated", f"configured Application/{NS}/web, Deployment/{NS}/web")]  # none for same
    assert {e["uid"] for e in world.kube.events[events:] if e["name"] == "web"} == {world.app("web")["metadata"]["uid"]}
    events = len(world.kube.events)
    world.sync()  # the refusal was once: bad's Deployment is applied now, and only bad has something to say
    assert [(e["name"], e["reason"]) for e in world.kube.events[events:]] == [("bad", "Updated")]
