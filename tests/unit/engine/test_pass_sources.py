"""Two sources, one Application: the whole pass (``agent.engine.sync.run``) of two sources (two
Git repositories, two ``--source-id``s) against one in-memory cluster. The rule
(docs/guides/scale-out.md, "Two sources, one Application"): the source that holds an Application
keeps it; another source whose Git has it too refuses it (``OwnershipConflict``) and marks it
wanted (``wantedby``); its holder never prunes it while that mark is there. The real-cluster suite
asserts the same in tests/test_sources.py."""

from __future__ import annotations

import hashlib

import pytest

from agent.engine.report import CONFIGURED, CREATED, FAILED, KEPT, PRUNED, UNCHANGED
from tests.unit.engine.passes import NS, World, app_yaml, conditions

SOURCE = "heumsi.github.io/source"
HAND_OVER = f"kubectl -n {NS} label application web {SOURCE}=b --overwrite"


def wanted_by(source: str) -> str:
    """The wanted-by annotation key of ``source``, computed here as the docs state it."""
    return "heumsi.github.io/wanted-by-" + hashlib.sha256(source.encode()).hexdigest()[:12]


@pytest.fixture
def two(tmp_path) -> tuple[World, World]:
    """Source ``a`` holds ``web``; source ``b``'s Git has ``web`` (in another file, another spec) and ``other``."""
    a = World(tmp_path / "a", source_id="a")
    b = World(tmp_path / "b", source_id="b")
    b.kube = a.kube  # one cluster
    a.commit({"web.yaml": app_yaml("web")})
    a.sync()
    b.commit({"apps/web.yaml": app_yaml("web", replicas=2), "apps/other.yaml": app_yaml("other")})
    return a, b


def changes(report) -> list[tuple[str, str, str]]:
    return [(c.subject, c.action, c.message) for c in report.changes]


def refusal(a: World, b: World) -> str:
    return (f"apps/web.yaml:1: OwnershipConflict: not applied: source 'a' (repository '{a.opts.repo}', file "
            f"'web.yaml') holds it; this source 'b' (repository '{b.opts.repo}') has it too. This source leaves it, "
            "its status and its children as they are, and neither source prunes it while the other has it in Git. "
            f"Keep it in one source only, or hand it over to this one: {HAND_OVER}")


def hand_over(world: World, name: str, to: str) -> None:
    """``kubectl label application NAME heumsi.github.io/source=TO --overwrite``."""
    live = world.app(name)
    live["metadata"]["labels"][SOURCE] = to
    world.kube.put(live, manager="kubectl-label")


def test_another_sources_application_is_refused_and_marked_wanted_and_nothing_else_is_written(two):
    a, b = two
    before = a.app("web")
    deployment = a.child("Deployment", "web")
    events = len(a.kube.events)
    report = b.sync()
    assert changes(report) == [(f"Application/{NS}/web", FAILED, refusal(a, b)),
                               (f"Application/{NS}/other", CREATED, ""), (f"Deployment/{NS}/other", CREATED, ""),
                               (f"Service/{NS}/other", CREATED, "")]
    assert report.errors == [f"Application/{NS}/web: {refusal(a, b)}"] and report.failed == {f"{NS}/web"}
    assert b.kube.writes == [("apply", f"Application/{NS}/other"), ("apply", f"Deployment/{NS}/other"),
                             ("apply", f"Service/{NS}/other"), ("patch_status", f"Application/{NS}/other"),
                             ("patch_annotations", f"Application/{NS}/web")]  # the mark, after the statuses
    after = a.app("web")
    assert after["metadata"]["annotations"][wanted_by("b")] == "b apps/web.yaml"
    assert {k: v for k, v in after["metadata"]["annotations"].items() if k != wanted_by("b")} == \
        before["metadata"]["annotations"]
    assert (after["spec"], after["status"], after["metadata"]["labels"][SOURCE]) == \
        (before["spec"], before["status"], "a")
    assert a.child("Deployment", "web") == deployment  # its children are the holder's
    assert [e["name"] for e in a.kube.events[events:]] == ["other"]  # no Event for what it refused
    report = b.sync()  # the mark is there: a steady state writes nothing new
    assert b.kube.writes == []
    assert report.summary().splitlines()[-1] == ("sync failed: 0 created, 0 configured, 3 unchanged, 0 pruned, "
                                                 f"1 failed; 1 Application failed: {NS}/web")


def test_the_holder_keeps_an_application_another_sources_git_still_has_and_names_the_hand_over(two):
    a, b = two
    b.sync()
    head = a.commit({"web.yaml": None, "db.yaml": app_yaml("db")})
    report = a.sync()
    why = (f"source 'b' ('apps/web.yaml') still has it in Git; hand it over to that source: {HAND_OVER}, or remove "
           "it from that source")
    assert [c for c in changes(report) if "/web" in c[0]] == [
        (f"Deployment/{NS}/web", UNCHANGED, ""), (f"Service/{NS}/web", UNCHANGED, ""),
        (f"Application/{NS}/web", KEPT, f"not in Git; {why}")]
    assert not [w for w in a.kube.writes if w[0] == "delete"] and all(a.trio("web"))
    assert ("patch_status", f"Application/{NS}/web") in a.kube.writes
    kept = f"no longer in Git at commit {head}; kept because {why}"
    assert conditions(a.app("web")) == {"Ready": ("False", "PruneSkipped", kept),
                                        "Synced": ("False", "PruneSkipped", kept)}
    assert report.errors == [] and report.failed == set()


def test_handing_over_lets_the_other_source_apply_it_and_take_its_mark_off(two):
    a, b = two
    b.sync()
    a.commit({"web.yaml": None, "db.yaml": app_yaml("db")})
    a.sync()
    uid = a.app("web")["metadata"]["uid"]
    hand_over(a, "web", "b")
    report = b.sync()
    assert changes(report) == [
        (f"Application/{NS}/other", UNCHANGED, ""), (f"Application/{NS}/web", CONFIGURED, ""),
        (f"Deployment/{NS}/web", CONFIGURED, ""), (f"Service/{NS}/web", UNCHANGED, ""),
        (f"Deployment/{NS}/other", UNCHANGED, ""), (f"Service/{NS}/other", UNCHANGED, "")]
    assert report.errors == [] and report.failed == set()
    assert b.kube.writes == [("apply", f"Application/{NS}/web"), ("apply", f"Deployment/{NS}/web"),
                             ("patch_status", f"Application/{NS}/web"), ("patch_annotations", f"Application/{NS}/web")]
    app, deployment, _ = b.trio("web")
    assert app["metadata"]["uid"] == uid and deployment["spec"]["replicas"] == 2
    assert wanted_by("b") not in app["metadata"]["annotations"]
    assert app["metadata"]["annotations"]["heumsi.github.io/source-path"] == "apps/web.yaml"
    assert app["status"]["sourcePath"] == "apps/web.yaml"
    assert conditions(app)["Synced"] == ("True", "Synced", f"children applied from commit {report.commit[:12]}")
    report = a.sync()  # no longer the holder and not in its Git: left alone, never pruned
    assert a.kube.writes == [] and all(a.trio("web"))
    assert [c for c in changes(report) if "/web" in c[0]] == []


def test_a_mark_is_kept_while_a_file_of_its_source_is_invalid_and_taken_off_once_all_are_valid(two):
    a, b = two
    b.sync()
    a.commit({"web.yaml": None, "db.yaml": app_yaml("db")})
    a.sync()
    b.commit({"apps/web.yaml": None, "apps/broken.yaml": "kind: [\n"})
    report = b.sync()  # web may still be in the file that failed: the mark stays (fail closed)
    assert report.errors[0].startswith("apps/broken.yaml:2: invalid YAML")
    assert not [w for w in b.kube.writes if w[0] == "patch_annotations"]
    assert a.app("web")["metadata"]["annotations"][wanted_by("b")] == "b apps/web.yaml"
    a.sync()
    assert all(a.trio("web")) and not [w for w in a.kube.writes if w[0] == "delete"]
    b.commit({"apps/broken.yaml": None})
    report = b.sync()
    assert report.errors == []
    assert b.kube.writes == [("patch_annotations", f"Application/{NS}/web"),  # before the sweep's statuses
                             ("patch_status", f"Application/{NS}/other")]
    assert wanted_by("b") not in a.app("web")["metadata"]["annotations"]
    report = a.sync()  # wanted by no other source now: its holder prunes it
    assert [(s, act) for s, act, _ in changes(report) if "/web" in s] == [
        (f"Service/{NS}/web", PRUNED), (f"Deployment/{NS}/web", PRUNED), (f"Application/{NS}/web", PRUNED)]
    assert a.trio("web") == (None, None, None)


def test_two_other_sources_are_named_with_the_first_to_hand_over_to(two, tmp_path):
    a, b = two
    c = World(tmp_path / "c", source_id="c")
    c.kube = a.kube
    c.commit({"web.yaml": app_yaml("web")})
    b.sync()
    c.sync()
    assert {k: v for k, v in a.app("web")["metadata"]["annotations"].items() if "wanted-by" in k} == {
        wanted_by("b"): "b apps/web.yaml", wanted_by("c"): "c web.yaml"}
    head = a.commit({"web.yaml": None, "db.yaml": app_yaml("db")})
    report = a.sync()
    why = (f"source 'b' ('apps/web.yaml'), source 'c' ('web.yaml') still have it in Git; hand it over to one of "
           f"them: {HAND_OVER}, or remove it from them")
    assert changes(report)[-1] == (f"Application/{NS}/web", KEPT, f"not in Git; {why}")
    kept = f"no longer in Git at commit {head}; kept because {why}"
    assert conditions(a.app("web"))["Synced"] == ("False", "PruneSkipped", kept)


def test_a_mark_without_a_file_names_the_source_alone(two):
    """A wanted-by value without a space is a source id with no file (``sources.wanted_elsewhere``)."""
    a, _ = two
    a.kube.patch_annotations(a.app("web"), {wanted_by("z"): "z"})
    head = a.commit({"web.yaml": None, "db.yaml": app_yaml("db")})
    report = a.sync()
    why = (f"source 'z' still has it in Git; hand it over to that source: kubectl -n {NS} label application web "
           f"{SOURCE}=z --overwrite, or remove it from that source")
    assert changes(report)[-1] == (f"Application/{NS}/web", KEPT, f"not in Git; {why}")
    assert conditions(a.app("web"))["Ready"] == ("False", "PruneSkipped",
                                                 f"no longer in Git at commit {head}; kept because {why}")


def test_a_former_source_id_is_this_sources_and_its_applications_are_relabelled_alone(tmp_path):
    """Upgrade of a checkout with an origin (issue 46): its Applications carry the id the path made
    (``former``); the new id's pass takes them as its own, rewrites only their label and repository
    annotation (no child is written: no pod restarts), and then has nothing to do."""
    world = World(tmp_path, source_id="src-path", repository="/ci/checkout")
    world.commit({"web.yaml": app_yaml("web"), "api.yaml": app_yaml("api")})
    world.sync()
    deployment = world.child("Deployment", "web")
    report = world.sync(source_id="src-origin", repository="github.com/Org/repo", former_source_ids=("src-path",))
    assert report.ok and not report.errors
    assert sorted(c.subject for c in report.changes if c.action == CONFIGURED) == \
        [f"Application/{NS}/api", f"Application/{NS}/web"]
    assert [w for w in world.kube.writes if w[0] == "apply"] == [
        ("apply", f"Application/{NS}/api"), ("apply", f"Application/{NS}/web")]
    app = world.app("web")
    assert app["metadata"]["labels"][SOURCE] == "src-origin"
    assert app["metadata"]["annotations"]["heumsi.github.io/repository"] == "github.com/Org/repo"
    assert world.child("Deployment", "web") == deployment
    report = world.sync(source_id="src-origin", repository="github.com/Org/repo", former_source_ids=("src-path",))
    assert {c.action for c in report.changes} == {UNCHANGED} and not world.kube.writes


def test_without_the_former_id_the_upgraded_source_is_refused(tmp_path):
    """What ``former_source_ids`` prevents: the new id alone meets the old label as another source's."""
    world = World(tmp_path, source_id="src-path")
    world.commit({"web.yaml": app_yaml("web")})
    world.sync()
    report = world.sync(source_id="src-origin")
    assert [c.action for c in report.changes] == [FAILED] and "OwnershipConflict" in report.errors[0]


def test_a_former_source_ids_application_git_no_longer_has_is_pruned_in_the_upgrade_pass(tmp_path):
    """The former id's Applications are this source's for pruning too: one removed from Git in the
    upgrade pass is pruned with its children, and one whose port Git dropped loses its Service."""
    world = World(tmp_path, source_id="src-path")
    world.commit({"web.yaml": app_yaml("web"), "old.yaml": app_yaml("old")})
    world.sync()
    world.commit({"web.yaml": app_yaml("web", port=None), "old.yaml": None})
    report = world.sync(source_id="src-origin", former_source_ids=("src-path",))
    assert report.ok, report.errors
    pruned = sorted(c.subject for c in report.changes if c.action == PRUNED)
    assert pruned == [f"Application/{NS}/old", f"Deployment/{NS}/old", f"Service/{NS}/old", f"Service/{NS}/web"]
    assert world.app("old") is None and world.child("Service", "web") is None
    assert world.app("web")["metadata"]["labels"][SOURCE] == "src-origin"


def test_another_sources_application_is_not_a_former_ids(tmp_path):
    """Only the listed former ids: another source's Application Git no longer has stays."""
    world = World(tmp_path, source_id="other")
    world.commit({"web.yaml": app_yaml("web")})
    world.sync()
    world.commit({"web.yaml": None, "api.yaml": app_yaml("api")})
    report = world.sync(source_id="src-origin", former_source_ids=("src-path",))
    assert report.ok and world.app("web") is not None
    assert not [c for c in report.changes if c.action == PRUNED]
