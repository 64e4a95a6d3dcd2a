"""The whole pass (``agent.engine.sync.run``) against the in-memory cluster where it holds back:
the prune guards, suspend, adoption and backoff. The real-cluster suite asserts the same in
tests/test_prune_guards.py, test_sync.py, test_suspend.py, test_adoption.py and test_backoff.py."""

from __future__ import annotations

import pytest

from agent.engine import backoff
from agent.engine.report import ADOPTED, CONFIGURED, CREATED, FAILED, KEPT, PRUNED, SKIPPED, SUSPENDED, UNCHANGED
from agent.kube.cluster import ApiError
from tests.unit.engine.passes import NS, World, actions, app_yaml, conditions, image

RECONCILE = "heumsi.github.io/reconcile"
PRUNE = "heumsi.github.io/prune"
ADOPT = {"heumsi.github.io/adopt": "true"}


@pytest.fixture
def world(tmp_path):
    return World(tmp_path)


def annotate(world: World, kind: str, name: str, key: str, value: str, manager: str = "kubectl-annotate") -> None:
    """``kubectl annotate``: an update of the live object by ``manager``."""
    live = world.kube.stored(kind, NS, name)
    live["metadata"].setdefault("annotations", {})[key] = value
    world.kube.put(live, manager=manager)


def changes(report) -> list[tuple[str, str, str]]:
    return [(c.subject, c.action, c.message) for c in report.changes]


# -- prune guards ------------------------------------------------------------------------------

def test_a_commit_without_applications_prunes_nothing_until_allow_empty(world):
    world.commit({"a.yaml": app_yaml("web")})
    world.sync()
    head = world.commit({"a.yaml": None, "README.md": "no apps\n"})
    report = world.sync()
    assert report.errors == [f"commit {head} has no Applications under '.', so pruning would delete the 1 Application "
                             "the agent owns; nothing was changed. If that is intended, run again with --allow-empty"]
    assert (report.changes, world.kube.writes) == ([], [])
    assert all(world.trio("web"))
    report = world.sync(allow_empty=True)
    assert actions(report) == [(f"Service/{NS}/web", PRUNED), (f"Deployment/{NS}/web", PRUNED),
                               (f"Application/{NS}/web", PRUNED)]
    assert report.errors == [] and world.trio("web") == (None, None, None)


def test_a_mass_prune_is_refused_and_the_rest_of_the_pass_applies(world):
    names = [f"app-{i:02d}" for i in range(12)]
    world.commit({f"{n}.yaml": app_yaml(n, replicas=0) for n in names})
    world.sync()
    head = world.commit({**{f"{n}.yaml": None for n in names[1:]},
                         "app-00.yaml": app_yaml("app-00", replicas=0, image="nginx:1.28")})
    report = world.sync()
    assert report.errors == [
        f"commit {head} would prune 11 of the 12 Applications this source owns, more than --max-prune-share 0.5 of "
        "them and more than 10; nothing was pruned (the rest of the pass was applied). If the commit and --path are "
        "right, run again with --max-prune-share 1.0 (1.0 turns the guard off), or keep single Applications with the "
        "annotation heumsi.github.io/prune: disabled"]
    assert [c for c in changes(report) if c[1] != UNCHANGED] == [
        (f"Application/{NS}/app-00", CONFIGURED, ""), (f"Deployment/{NS}/app-00", CONFIGURED, "")] + [
        (f"Application/{NS}/{n}", KEPT, "not in Git; pruning was blocked this pass") for n in names[1:]]
    assert not [w for w in world.kube.writes if w[0] == "delete"]
    assert image(world.child("Deployment", "app-00")) == "nginx:1.28"
    why = f"no longer in Git at commit {head}; kept because pruning was blocked this pass"
    assert conditions(world.app("app-05")) == {"Ready": ("False", "PruneBlocked", why),
                                               "Synced": ("False", "PruneBlocked", why)}
    assert world.sync(max_prune_share=0.9).errors[0].startswith(f"commit {head} would prune 11 of the 12")
    report = world.sync(max_prune_share=1.0)
    assert report.counts() == {UNCHANGED: 3, PRUNED: 33} and report.errors == []
    assert all(world.trio(n) == (None, None, None) for n in names[1:]) and all(world.trio("app-00"))


def test_an_invalid_file_new_since_the_last_sync_fails_its_application_and_blocks_the_prune(world):
    first = world.commit({"good.yaml": app_yaml("good"), "later.yaml": app_yaml("stays")})
    world.sync()
    head = world.commit({"later.yaml": None, "bad.yaml": app_yaml("bad", replicas=-1),
                         "good.yaml": app_yaml("good", replicas=2)})
    report = world.sync()
    refused = "bad.yaml:7: spec.replicas: must be an integer between 0 and 2147483647 (got -1)"
    held = (f"pruning was blocked: {refused}; that file changed since commit {first[:7]}, the last this "
            "Application was synced from, so it may hold it")
    assert (report.errors, report.refused, report.failing()) == ([refused], {f"{NS}/bad": refused}, [f"{NS}/bad"])
    assert changes(report) == [
        (f"Application/{NS}/good", CONFIGURED, ""), (f"Deployment/{NS}/good", CONFIGURED, ""),
        (f"Service/{NS}/good", UNCHANGED, ""), (f"Deployment/{NS}/stays", UNCHANGED, ""),
        (f"Service/{NS}/stays", UNCHANGED, ""),
        (f"Application/{NS}/stays", KEPT, f"not in Git; {held}")]
    assert world.child("Deployment", "good")["spec"]["replicas"] == 2
    assert all(world.trio("stays")) and world.trio("bad") == (None, None, None)
    why = f"no longer in Git at commit {head}; kept because {held}"
    assert conditions(world.app("stays"))["Synced"] == ("False", "PruneBlocked", why)


def test_an_application_with_prune_disabled_is_kept_with_its_children(world):
    world.commit({"keep.yaml": app_yaml("keep"), "gone.yaml": app_yaml("gone")})
    world.sync()
    annotate(world, "Application", "keep", PRUNE, "disabled")
    head = world.commit({"keep.yaml": None, "gone.yaml": None, "other.yaml": app_yaml("other")})
    report = world.sync()
    assert [c for c in changes(report) if "other" not in c[0]] == [
        (f"Deployment/{NS}/keep", UNCHANGED, ""), (f"Service/{NS}/keep", UNCHANGED, ""),
        (f"Service/{NS}/gone", PRUNED, ""), (f"Deployment/{NS}/gone", PRUNED, ""),
        (f"Application/{NS}/gone", PRUNED, ""),
        (f"Application/{NS}/keep", KEPT, f"not in Git; it has the annotation {PRUNE}: disabled")]
    assert all(world.trio("keep")) and world.trio("gone") == (None, None, None)
    why = f"no longer in Git at commit {head}; kept because it has the annotation {PRUNE}: disabled"
    assert conditions(world.app("keep")) == {"Ready": ("False", "PruneSkipped", why),
                                             "Synced": ("False", "PruneSkipped", why)}
    annotated = world.app("keep")
    del annotated["metadata"]["annotations"][PRUNE]
    world.kube.put(annotated, manager="kubectl-annotate")
    report = world.sync()
    assert [c for c in actions(report) if "keep" in c[0]] == [
        (f"Service/{NS}/keep", PRUNED), (f"Deployment/{NS}/keep", PRUNED), (f"Application/{NS}/keep", PRUNED)]


def test_a_child_with_prune_disabled_outlives_its_application_orphaned(world):
    world.commit({"web.yaml": app_yaml("web", replicas=0)})
    world.sync()
    annotate(world, "Deployment", "web", PRUNE, "disabled")
    world.commit({"web.yaml": None, "other.yaml": app_yaml("other", replicas=0)})
    report = world.sync()
    assert [c for c in changes(report) if "other" not in c[0]] == [
        (f"Deployment/{NS}/web", KEPT, f"not in Git; {PRUNE}: disabled"),
        (f"Service/{NS}/web", PRUNED, ""), (f"Application/{NS}/web", PRUNED, "")]
    assert [w for w in world.kube.writes if w[0] == "delete"] == [("delete", f"Service/{NS}/web"),
                                                                  ("delete", f"Application/{NS}/web")]
    kept = world.child("Deployment", "web")
    assert kept is not None and "ownerReferences" not in kept["metadata"]  # deleted with propagation Orphan
    report = world.sync()  # no longer the agent's child: left alone
    assert world.kube.writes == [] and world.child("Deployment", "web") is not None
    assert [s for s, _ in actions(report)] == [f"Application/{NS}/other", f"Deployment/{NS}/other",
                                               f"Service/{NS}/other"]


# -- suspend -----------------------------------------------------------------------------------

def test_reconcile_disabled_on_the_application_leaves_it_and_its_children_as_they_are(world):
    world.commit({"web.yaml": app_yaml("web"), "other.yaml": app_yaml("other")})
    world.sync()
    annotate(world, "Application", "web", RECONCILE, "disabled")
    live = world.app("web")
    live["spec"]["replicas"] = 2
    world.kube.put(live, manager="kubectl-patch")
    deployment = world.child("Deployment", "web")
    deployment["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:hotfix"
    world.kube.put(deployment, manager="kubectl-set")
    world.commit({"web.yaml": app_yaml("web", image="nginx:1.28")})
    report = world.sync()
    why = f"{RECONCILE}: disabled on the Application"
    assert [c for c in changes(report) if "other" not in c[0]] == [
        (f"Application/{NS}/web", SUSPENDED, f"suspended by {why}: neither the Application nor its children are "
                                             "applied from Git, corrected or pruned"),
        (f"Deployment/{NS}/web", SUSPENDED, f"not applied: its Application is suspended ({why})"),
        (f"Service/{NS}/web", SUSPENDED, f"not applied: its Application is suspended ({why})")]
    assert world.kube.writes == [("patch_status", f"Application/{NS}/other"), ("patch_status", f"Application/{NS}/web")]
    app = world.app("web")
    assert app["spec"] == {"image": "nginx:1.27", "replicas": 2, "port": 80}  # the hand edit survives
    assert image(world.child("Deployment", "web")) == "nginx:hotfix"
    message = (f"suspended by {why}: neither the Application nor its children are applied from Git, corrected or "
               "pruned")
    assert conditions(app) == {"Ready": ("False", "Suspended", message), "Synced": ("False", "Suspended", message)}
    assert app["status"]["suspended"] is True
    report = world.sync()
    assert world.kube.writes == []
    assert report.summary().splitlines()[-1] == ("sync succeeded: 0 created, 0 configured, 3 unchanged, 0 pruned, "
                                                 "0 failed, 3 suspended")
    world.commit({"web.yaml": None})
    report = world.sync()
    assert changes(report)[-1] == (f"Application/{NS}/web", KEPT, f"not in Git; it is suspended ({why})")
    assert all(world.trio("web")) and not [w for w in world.kube.writes if w[0] == "delete"]


def test_an_annotation_the_agent_itself_wrote_suspends_nothing(world):
    """Only someone else's ``reconcile: disabled`` suspends (``suspend.set_by_hand``)."""
    world.commit({"web.yaml": app_yaml("web")})
    world.sync()
    world.kube.patch_annotations(world.app("web"), {RECONCILE: "disabled"})  # as the agent's manager
    world.commit({"web.yaml": app_yaml("web", image="nginx:1.28")})
    report = world.sync()
    assert [a for _, a in actions(report)] == [CONFIGURED, CONFIGURED, UNCHANGED]
    assert image(world.child("Deployment", "web")) == "nginx:1.28"


def test_reconcile_disabled_on_one_child_keeps_that_child_while_the_rest_syncs(world):
    world.commit({"web.yaml": app_yaml("web"), "other.yaml": app_yaml("other")})
    world.sync()
    deployment = world.child("Deployment", "web")
    deployment["metadata"].setdefault("annotations", {})[RECONCILE] = "disabled"
    deployment["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:hotfix"
    world.kube.put(deployment, manager="kubectl-edit")
    report = world.sync()
    held = f"Deployment/{NS}/web has {RECONCILE}: disabled"
    kept = f"not applied, corrected, recreated or pruned: {held}"
    assert (f"Deployment/{NS}/web", SUSPENDED, kept) in changes(report)
    assert world.kube.writes == [("patch_status", f"Application/{NS}/web")]
    assert image(world.child("Deployment", "web")) == "nginx:hotfix"
    message = f"{held}: not applied, corrected, recreated or pruned; the rest of the Application synced"
    app = world.app("web")
    assert conditions(app) == {"Ready": ("False", "Suspended", message), "Synced": ("False", "Suspended", message)}
    assert "suspended" not in app["status"]
    assert app["status"]["health"] == {"status": "Suspended",
                                       "message": f"Deployment: not reconciled ({RECONCILE}: disabled)"}
    report = world.sync()
    assert world.kube.writes == []
    assert report.summary().splitlines()[-1] == ("sync succeeded: 0 created, 0 configured, 5 unchanged, 0 pruned, "
                                                 "0 failed, 1 suspended")


def test_spec_suspend_applies_the_application_and_none_of_its_children(world):
    first = world.commit({"web.yaml": app_yaml("web")})
    world.sync()
    head = world.commit({"web.yaml": app_yaml("web", image="nginx:1.28", suspend=True)})
    report = world.sync()
    not_applied = "not applied: its Application is suspended (spec.suspend: true)"
    assert changes(report) == [(f"Application/{NS}/web", CONFIGURED, ""),
                               (f"Deployment/{NS}/web", SUSPENDED, not_applied),
                               (f"Service/{NS}/web", SUSPENDED, not_applied)]
    assert world.kube.writes == [("apply", f"Application/{NS}/web"), ("patch_status", f"Application/{NS}/web")]
    app = world.app("web")
    assert app["spec"]["suspend"] is True and image(world.child("Deployment", "web")) == "nginx:1.27"
    status = app["status"]
    assert (status["suspended"], status["lastSyncedCommit"], status["lastAttemptedCommit"]) == (True, first, head)
    message = ("suspended by spec.suspend: true: its children are not applied, corrected, recreated or pruned; "
               "the Application itself is applied from Git")
    assert conditions(app) == {"Ready": ("False", "Suspended", message), "Synced": ("False", "Suspended", message)}


# -- adoption ----------------------------------------------------------------------------------

def hand_made(world: World) -> tuple[dict, dict]:
    """What ``kubectl create deployment web`` and ``kubectl create service clusterip web`` leave."""
    world.kube.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    deployment = world.kube.add({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
        "name": "web", "namespace": NS, "labels": {"app": "web"}}, "spec": {
        "replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}}}})
    service = world.kube.add({"apiVersion": "v1", "kind": "Service", "metadata": {
        "name": "web", "namespace": NS, "labels": {"app": "web"}}, "spec": {
        "selector": {"app": "web"}, "ports": [{"name": "80-80", "port": 80, "protocol": "TCP", "targetPort": 80}]}})
    return deployment, service


def test_hand_made_children_are_adopted_only_when_the_application_opts_in(world):
    _, service = hand_made(world)
    world.commit({"web.yaml": app_yaml("web")})
    report = world.sync()
    left = ('exists and is controlled by nothing and was not made by the agent; field managers: kubectl-create; left '
            'alone. To hand it to the agent, set the annotation heumsi.github.io/adopt: "true" on the Application in '
            "Git; or delete or rename it, or rename the Application")
    assert changes(report) == [(f"Application/{NS}/web", CREATED, ""), (f"Deployment/{NS}/web", FAILED, left),
                               (f"Service/{NS}/web", FAILED, left)]
    assert report.errors == [f"Deployment/{NS}/web: {left}", f"Service/{NS}/web: {left}"]
    assert world.kube.writes == [("apply", f"Application/{NS}/web"), ("patch_status", f"Application/{NS}/web")]
    found = conditions(world.app("web"))
    assert {t: c[:2] for t, c in found.items()} == {"Ready": ("False", "OwnershipConflict"),
                                                    "Stalled": ("True", "OwnershipConflict"),
                                                    "Synced": ("False", "OwnershipConflict")}
    assert world.child("Service", "web")["metadata"]["resourceVersion"] == service["metadata"]["resourceVersion"]
    world.commit({"web.yaml": app_yaml("web", annotations=ADOPT)})
    report = world.sync()  # Git consents, the operator does not (--adopt-namespaces): still left alone
    denied = ('exists and is controlled by nothing and was not made by the agent; the Application has '
              f'heumsi.github.io/adopt: "true", but the operator has not consented to adoption in namespace {NS!r} '
              "(--adopt-namespaces names where the annotation is honoured; it is not set), so it was not adopted; "
              "field managers: kubectl-create; left alone. To hand it to the agent, the operator adds its namespace "
              "to --adopt-namespaces; or delete or rename it, or rename the Application")
    assert changes(report) == [(f"Application/{NS}/web", CONFIGURED, ""), (f"Deployment/{NS}/web", FAILED, denied),
                               (f"Service/{NS}/web", FAILED, denied)]
    assert [w for w in world.kube.writes if w[1] != f"Application/{NS}/web"] == []
    assert conditions(world.app("web"))["Stalled"][:2] == ("True", "OwnershipConflict")
    report = world.sync(adopt_namespaces=("other", "sh*"))
    taken = ('no controller holds it and the Application has heumsi.github.io/adopt: "true"; fields taken from '
             "kubectl-create")
    assert changes(report) == [
        (f"Application/{NS}/web", UNCHANGED, ""),  # configured (annotated) by the pass before
        (f"Deployment/{NS}/web", ADOPTED, taken.replace("; fields", "; kept its selector app=web (immutable), so one "
                                                         "rolling update replaces its pods and the Service selects the "
                                                         "same pods; fields")),
        (f"Service/{NS}/web", ADOPTED, taken)]
    assert world.kube.writes == [  # the Deployment keeps its selector (kinds.selector): not deleted
        ("patch_managed_fields", f"Deployment/{NS}/web"), ("apply", f"Deployment/{NS}/web"),
        ("patch_managed_fields", f"Service/{NS}/web"), ("apply", f"Service/{NS}/web"),
        ("patch_status", f"Application/{NS}/web")]
    after, app = world.child("Service", "web"), world.app("web")
    assert after["metadata"]["uid"] == service["metadata"]["uid"]  # adopted in place
    assert after["spec"] == {"selector": {"app": "web"},
                             "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 80}]}
    assert after["metadata"]["ownerReferences"][0]["uid"] == app["metadata"]["uid"]
    assert world.kube.events[-1]["reason"] == "Adopted"
    assert f"Service/{NS}/web ({taken})" in world.kube.events[-1]["message"]
    world.sync()
    assert world.kube.writes == []


def test_a_child_another_controller_holds_is_never_adopted(world):
    world.kube.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    keeper = world.kube.add({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "keeper", "namespace": NS}})
    service = world.kube.add({"apiVersion": "v1", "kind": "Service", "metadata": {
        "name": "web", "namespace": NS, "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "keeper",
                                                            "uid": keeper["metadata"]["uid"], "controller": True}]},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}]}})
    world.commit({"web.yaml": app_yaml("web", annotations=ADOPT), "other.yaml": app_yaml("other")})
    report = world.sync()
    held = ("exists and is controlled by ConfigMap/keeper (its controller ownerReference), not by Application "
            f"{NS}/web; field managers: kubectl-create; left alone. Delete or rename it to let the agent create its "
            "own, or rename the Application")
    assert report.errors == [f"Service/{NS}/web: {held}"] and report.failed == {f"{NS}/web"}
    assert (f"Service/{NS}/web", FAILED, held) in changes(report)
    assert (f"Deployment/{NS}/web", CREATED, "") in changes(report)
    assert ("apply", f"Service/{NS}/web") not in world.kube.writes
    assert world.child("Service", "web")["metadata"]["resourceVersion"] == service["metadata"]["resourceVersion"]
    assert all(world.trio("other"))


# -- backoff -----------------------------------------------------------------------------------

def test_a_failing_application_is_skipped_until_its_retry_time_and_a_new_commit_resets_it(world):
    world.kube.fail("apply", f"Service/{NS}/web", ApiError(403, "Forbidden", 'services "web" is forbidden: exceeded '
                                                                              "quota: no-services"), times=None)
    world.commit({"web.yaml": app_yaml("web"), "ok.yaml": app_yaml("ok")})
    policy = backoff.Policy(base=300, cap=600, jitter=0, skip=True)
    report = world.sync(retry=policy)
    status = world.app("web")["status"]
    assert report.failed == {f"{NS}/web"} and status["failures"] == 1
    retry = backoff.parse_time(status["nextRetryTime"])
    assert report.retry_at == retry
    # 300 s after the failure: both times are taken in the one status write, one after the other, in
    # whole seconds (the transition's cut, the retry's rounded up); 10 s leave a loaded machine room
    assert 295 <= (retry - backoff.parse_time(status["conditions"][0]["lastTransitionTime"])).total_seconds() <= 310
    report = world.sync(retry=policy)  # before the retry time: skipped, nothing written
    assert changes(report)[0] == (f"Application/{NS}/web", SKIPPED,
                                  f"backing off after 1 failure, next retry at {status['nextRetryTime']}")
    assert [s for s, _ in actions(report)][1:] == [f"Application/{NS}/ok", f"Deployment/{NS}/ok", f"Service/{NS}/ok"]
    assert report.backing_off == {f"{NS}/web": backoff.Waiting(1, status["nextRetryTime"])} and not report.ok
    assert report.summary().splitlines()[-1] == ("sync failed: 0 created, 0 configured, 3 unchanged, 0 pruned, "
                                                 f"0 failed, 1 skipped; 1 Application skipped: {NS}/web")
    assert world.kube.writes == [] and world.app("web")["status"] == status
    report = world.sync()  # sync --once attempts everything
    assert ("apply", f"Service/{NS}/web") in world.kube.writes and world.app("web")["status"]["failures"] == 2
    world.kube.hooks.clear()
    head = world.commit({"web.yaml": app_yaml("web", replicas=2)})
    report = world.sync(retry=policy)  # a new commit: attempted at once
    assert (f"Service/{NS}/web", CREATED) in actions(report) and report.ok
    status = world.app("web")["status"]
    assert status["lastSyncedCommit"] == head and "failures" not in status and "nextRetryTime" not in status
