"""Sharp checks of the pass's stage modules: exact strings and values a looser test lets drift
(what may be written to the cluster, what is asked of the API server)."""

from __future__ import annotations

import shutil
from types import SimpleNamespace

import pytest

from agent.api.labels import REPOSITORY, SOURCE_PATH
from agent.engine import (appapply, apply, appplan, backoff, guards, livestate, news, plan, prune, sourceread, sources,
                          status, statuses, suspend, sync, wantedby, writes)
from agent.engine.passvalues import AppFacts, AppsApplied, ChildIndex, ChildWave, LiveState, Wanted
from agent.engine.plan import Op, Step
from agent.engine.report import CONFIGURED, CREATED, KEPT, PRUNED, UNCHANGED, Report
from agent.kinds import health
from agent.kube.cluster import ApiError
from agent.manifests import loader, parsecache
from agent.manifests.manifest import Manifest
from agent.source import repository, snapshot as snapshots
from agent.source.mirror import Credentials
from tests import faults
from tests.unit.engine.passes import NS, World, app_yaml

REPO = "https://git.example/r.git"


def opts(repo: str = REPO, token: str | None = None) -> SimpleNamespace:
    """What ``redacted`` reads of ``Options``."""
    return SimpleNamespace(repo=repo, credentials=Credentials(token=token) if token else None)


def test_the_user_info_of_the_repository_url_is_redacted_wherever_it_appears():
    url = "https://alice:s3cretpw@git.example/r.git"
    text = f"fetch {url} failed: bad s3cretpw for alice"
    assert sync.redacted(text, opts(url)) == "fetch https://***@git.example/r.git failed: bad *** for ***"


@pytest.mark.parametrize("token, expected", [
    ("abc", "token abc refused; xabcdex"),  # shorter than 4: too likely to be any word
    ("abcd", "token *** refused; x***ex"),
    ("abcde", "token *** refused; x***x"),
])
def test_the_token_of_at_least_four_characters_is_redacted(token, expected):
    assert sync.redacted(f"token {token} refused; xabcdex", opts(token=token)) == expected


def test_no_token_no_redaction():
    assert sync.redacted("token abcd", opts()) == "token abcd"
    assert sync.redacted("token abcd", SimpleNamespace(repo=REPO, credentials=Credentials(token=None))) == "token abcd"


def test_a_failed_fetch_asks_the_api_server_only_for_this_sources_applications(tmp_path):
    world = World(tmp_path, source_id="mine")
    world.commit({"web.yaml": app_yaml("web")})
    world.sync()
    asked = []
    real = world.kube.list

    def spy(group, kind, label_selector=None):
        asked.append((group, kind, label_selector))
        return real(group, kind, label_selector)
    world.kube.list = spy
    shutil.move(str(world.repo.path), str(tmp_path / "away"))
    report = world.sync()
    assert report.fetch_failed and report.notes == ["1 Application marked SourceAvailable=False (FetchFailed)"]
    assert asked == [("heumsi.github.io", "Application", "heumsi.github.io/source=mine")]
    assert world.kube.writes == [("patch_status", f"Application/{NS}/web")]


def doc(name: str, image: str = "nginx:1.27") -> bytes:
    return app_yaml(name, image=image).encode()


def cache_key(blob: str, path: str) -> str:
    return parsecache.key(blob, path, NS, loader.MAX_FILE_BYTES, loader.MAX_DOCUMENTS)


def test_a_read_of_the_changed_files_parses_them_into_the_cache_and_forgets_the_blobs_gone():
    cache = parsecache.ParseCache()
    old_blobs = {"a.yaml": "A1", "b.yaml": "B1", "c.yaml": "C1"}
    old_files = {"a.yaml": doc("a"), "b.yaml": doc("b"), "c.yaml": doc("c")}
    before = sourceread.SourceRead([], old_blobs, loader.load(old_files, NS, blobs=old_blobs, cache=cache), [])
    assert all(cache.get(cache_key(blob, path)) for path, blob in old_blobs.items())
    new_blobs = {"a.yaml": "A2", "b.yaml": "B1", "d.yaml": "D1"}  # a changed, b stays, c gone, d new
    files = snapshots.Files({"a.yaml": doc("a", "nginx:1.28"), "b.yaml": doc("b"), "d.yaml": doc("d")})
    snapshot = snapshots.Snapshot("c" * 40, files=files, blobs=new_blobs)
    loaded = sourceread._load_changed(SimpleNamespace(namespace=NS), before, snapshot, cache)
    assert loaded is not None and [(m.name, m.path) for m in loaded.manifests] == [
        ("a", "a.yaml"), ("b", "b.yaml"), ("d", "d.yaml")]
    assert loaded.manifests[0].body["spec"]["image"] == "nginx:1.28"
    assert cache.get(cache_key("A1", "a.yaml")) is None and cache.get(cache_key("C1", "c.yaml")) is None
    assert all(cache.get(cache_key(blob, path)) for path, blob in new_blobs.items())  # parsed once, kept


def test_a_read_only_a_full_load_can_tell_forgets_nothing():
    cache = parsecache.ParseCache()
    old_blobs = {"a.yaml": "A1", "b.yaml": "B1"}
    before = sourceread.SourceRead([], old_blobs, loader.load({"a.yaml": doc("a"), "b.yaml": doc("b")}, NS,
                                                              blobs=old_blobs, cache=cache), [])
    files = snapshots.Files({"a.yaml": doc("b"), "b.yaml": doc("b")})  # a now holds b's Application: a duplicate
    snapshot = snapshots.Snapshot("c" * 40, files=files, blobs={"a.yaml": "A2", "b.yaml": "B1"})
    assert sourceread._load_changed(SimpleNamespace(namespace=NS), before, snapshot, cache) is None
    assert cache.get(cache_key("A1", "a.yaml")) is not None  # the full load that follows decides


HAND_OVER = "kubectl -n ns label application web heumsi.github.io/source={} --overwrite"


def test_still_wanted_by_one_source_names_it_and_its_file():
    assert statuses.still_wanted("ns", "web", [("a", "x.yaml")]) == (
        f"source 'a' ('x.yaml') still has it in Git; hand it over to that source: {HAND_OVER.format('a')}, "
        "or remove it from that source")


def test_still_wanted_by_several_sources_names_the_first_three():
    four = [("a", "x.yaml"), ("b", ""), ("c", "z.yaml"), ("d", "w.yaml")]
    for n, named in [(2, "source 'a' ('x.yaml'), source 'b'"),
                     (3, "source 'a' ('x.yaml'), source 'b', source 'c' ('z.yaml')"),
                     (4, "source 'a' ('x.yaml'), source 'b', source 'c' ('z.yaml')")]:
        assert statuses.still_wanted("ns", "web", four[:n]) == (
            f"{named} still have it in Git; hand it over to one of them: {HAND_OVER.format('a')}, "
            "or remove it from them")


def test_still_wanted_cuts_what_it_quotes_to_200_characters():
    long_id, long_path = "s" * 250, "p" * 250
    text = statuses.still_wanted("ns", "web", [(long_id, long_path), (long_id, "")])
    assert text.startswith(f"source '{'s' * 200}' ('{'p' * 200}'), source '{'s' * 200}' still have it")


def test_the_empty_commit_guard_counts_one_or_all():
    assert (appplan.all_owned(1), appplan.all_owned(2), appplan.all_owned(0)) == (
        "the 1 Application", "all 2 Applications", "all 0 Applications")


def test_a_refusal_quotes_what_the_live_object_says_cut_to_200_characters():
    live = {"metadata": {"namespace": "ns", "name": "web", "annotations": {
        REPOSITORY: "r" * 250, SOURCE_PATH: "f" * 250}}}
    step = Step(Op.UPDATE, ("heumsi.github.io", "Application", "ns", "web"), {}, live)
    text = sources._refusal(step, "h" * 250, "mine", "https://git.example/r.git", {"ns/web": "apps/web.yaml:3"})
    assert text == (
        f"apps/web.yaml:3: OwnershipConflict: not applied: source '{'h' * 200}' (repository '{'r' * 200}', "
        f"file '{'f' * 200}') holds it; this source 'mine' (repository 'https://git.example/r.git') has it too. "
        "This source leaves it, its status and its children as they are, and neither source prunes it while the "
        f"other has it in Git. Keep it in one source only, or hand it over to this one: {HAND_OVER.format('mine')}")


class Refusing:
    """A cluster whose annotation patch fails with ``error``."""

    def __init__(self, error: ApiError):
        self.error = error

    def patch_annotations(self, app, annotations):
        raise self.error


WANTED = {"heumsi.github.io/wanted-by.x": "mine apps/web.yaml", "other": None}


def test_a_refused_annotation_patch_is_a_note_naming_each_annotation():
    scratch = writes.Scratch()
    wantedby._annotate(Refusing(ApiError(403, "Forbidden", "no")), scratch, {}, "ns/web", WANTED)
    assert scratch.notes == ["Application/ns/web: could not write heumsi.github.io/wanted-by.x, other: "
                             "403 Forbidden: no"]


@pytest.mark.parametrize("status", [404, 1])
def test_an_application_gone_is_nothing_and_other_statuses_are_notes(status):
    scratch = writes.Scratch()
    wantedby._annotate(Refusing(ApiError(status, "R", "m")), scratch, {}, "ns/web", {"a": "b"})
    assert scratch.notes == ([] if status == 404 else ["Application/ns/web: could not write a: 1 R: m"])


def test_an_unreachable_api_server_while_annotating_raises():
    scratch, down = writes.Scratch(), ApiError(0, "ConnectionRefused", "refused")
    with pytest.raises(ApiError) as raised:
        wantedby._annotate(Refusing(down), scratch, {}, "ns/web", {"a": "b"})
    assert raised.value is down and scratch.notes == []


def test_an_annotation_patch_that_works_notes_nothing():
    scratch, patched = writes.Scratch(), []
    kube = SimpleNamespace(patch_annotations=lambda app, annotations: patched.append((app, annotations)))
    wantedby._annotate(kube, scratch, {"x": 1}, "ns/web", {"a": "b"})
    assert patched == [({"x": 1}, {"a": "b"})] and scratch.notes == []


def notice(**changes) -> news.Notice:
    values = dict(namespace="", name="web", reason=news.NoticeReason.PRUNED, severity=news.Severity.INFO,
                  message="pruned: no longer in Git at commit abcdef1", commit="abcdef1" + "0" * 33,
                  previous_commit=None, source_path=None, uid="")
    values.update(changes)
    return news.Notice(**values)


def test_the_pruned_notice_of_a_bare_application_says_what_is_unknown():
    assert prune.pruned_notice({"metadata": {"name": "web"}}, "abcdef1" + "0" * 33) == notice()


def test_the_pruned_notice_names_the_previous_commit_history_first():
    commit = "abcdef1" + "0" * 33
    meta = {"namespace": "ns", "name": "web", "uid": "u-1"}
    both = {"history": [{"digest": "d", "revision": "h1"}], "lastSyncedCommit": "s1"}
    assert prune.pruned_notice({"metadata": meta, "status": both}, commit) == notice(
        namespace="ns", uid="u-1", previous_commit="h1")
    assert prune.pruned_notice({"metadata": meta, "status": {"lastSyncedCommit": "s1"}}, commit) == notice(
        namespace="ns", uid="u-1", previous_commit="s1")


def test_the_pruned_notice_names_the_file_from_the_status_else_the_annotation():
    commit = "abcdef1" + "0" * 33
    meta = {"name": "web", "annotations": {SOURCE_PATH: "an.yaml"}}
    assert prune.pruned_notice({"metadata": meta, "status": {"sourcePath": "st.yaml"}}, commit) == notice(
        source_path="st.yaml")
    assert prune.pruned_notice({"metadata": meta}, commit) == notice(source_path="an.yaml")


def test_a_prune_records_the_owners_pruned_line():
    scratch, deleted = writes.Scratch(), []
    kube = SimpleNamespace(delete=lambda obj, propagation: deleted.append((obj, propagation)))
    live = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"namespace": "ns", "name": "web"}}
    step = Step(Op.PRUNE, ("apps", "Deployment", "ns", "web"), None, live)
    assert prune._prune(kube, scratch, step, "ns/web", "Foreground") is True
    assert deleted == [(live, "Foreground")] and scratch.added == [(("ns/web", "Deployment/ns/web", PRUNED), {})]


def kept(app: dict, holds: dict, prune: bool = True) -> tuple:
    p = SimpleNamespace(opts=SimpleNamespace(prune=prune, source_id="mine"), report=Report(commit="c1"))
    got = statuses._kept_outcome(p, "ns/web", app, "apps/web.yaml", holds)
    return got, [(c.subject, c.action, c.message) for c in p.report.changes]


def test_an_application_gone_from_git_that_only_this_source_marked_is_blocked_not_wanted_elsewhere():
    mine = {"metadata": {"namespace": "ns", "name": "web",
                         "annotations": {sources.wanted_by("mine"): "mine apps/web.yaml"}}}
    got, lines = kept(mine, {})
    assert got == status.Outcome(False, False, "c1", "PruneBlocked",
                                 "no longer in Git at commit c1; kept because pruning was blocked this pass",
                                 "apps/web.yaml")
    assert lines == [("Application/ns/web", KEPT, "not in Git; pruning was blocked this pass")]


def test_a_suspended_application_gone_from_git_keeps_the_suspended_outcome():
    got, lines = kept({"metadata": {"namespace": "ns", "name": "web"}}, {"ns/web": suspend.Hold(suspend.SPEC, False)})
    assert (got.ok, got.changed, got.commit, got.reason, got.suspended, got.source_path) == (
        False, False, "c1", "Suspended", True, "apps/web.yaml")
    assert got.message.startswith("no longer in Git at commit c1; kept because it is suspended (spec.suspend: true): ")
    assert lines == [("Application/ns/web", KEPT, "not in Git; it is suspended (spec.suspend: true)")]


def test_wanted_elsewhere_without_a_source_lists_every_mark():
    live = {"metadata": {"annotations": {sources.wanted_by("a"): "a x.yaml", sources.wanted_by("b"): "b",
                                         "other": "c y.yaml"}}}
    assert sources.wanted_elsewhere(live) == [("a", "x.yaml"), ("b", "")]
    assert sources.wanted_elsewhere(live, "a") == [("b", "")]
    assert sources.wanted_elsewhere({}) == [] and sources.wanted_elsewhere({}, "a") == []


def gone_outcome(reason: str, why: str) -> status.Outcome:
    return status.Outcome(False, False, "c1", reason, f"no longer in Git at commit c1; kept because {why}",
                          "apps/web.yaml")


@pytest.mark.parametrize("prune, annotations, reason, why", [
    (False, {}, "PruneSkipped", "pruning is off (--no-prune)"),
    (True, {"heumsi.github.io/prune": "Disabled"}, "PruneSkipped",
     "it has the annotation heumsi.github.io/prune: disabled"),
    (False, {"heumsi.github.io/prune": "disabled"}, "PruneSkipped",
     "it has the annotation heumsi.github.io/prune: disabled"),
    (True, {sources.wanted_by("other"): "other o.yaml"}, "PruneSkipped",
     f"source 'other' ('o.yaml') still has it in Git; hand it over to that source: {HAND_OVER.format('other')}, "
     "or remove it from that source"),
    (True, {"heumsi.github.io/prune": "disabled", sources.wanted_by("other"): "other"}, "PruneSkipped",
     f"source 'other' still has it in Git; hand it over to that source: {HAND_OVER.format('other')}, "
     "or remove it from that source"),
])
def test_why_an_application_gone_from_git_is_kept(prune, annotations, reason, why):
    got, lines = kept({"metadata": {"namespace": "ns", "name": "web", "annotations": annotations}}, {}, prune)
    assert got == gone_outcome(reason, why)
    assert lines == [("Application/ns/web", KEPT, f"not in Git; {why}")]


def test_a_suspended_application_wanted_elsewhere_says_it_is_suspended():
    app = {"metadata": {"namespace": "ns", "name": "web", "annotations": {sources.wanted_by("other"): "other"}}}
    _, lines = kept(app, {"ns/web": suspend.Hold(suspend.SPEC, False)}, prune=False)
    assert lines == [("Application/ns/web", KEPT, "not in Git; it is suspended (spec.suspend: true)")]


OWNED_BY_WEB = [{"apiVersion": "heumsi.github.io/v1", "kind": "Application", "name": "web", "controller": True,
                 "uid": "u"}]


def delete_of(obj: dict, *, holds=None, failures=None, foreign=frozenset(), waiting=None, keeps=None) -> tuple:
    """``prune._delete_of`` of the prune of ``obj`` (owner ``ns/web``): (result, report lines, keeps_children)."""
    report = Report()
    report.failures.update(failures or {})
    group = obj["apiVersion"].rpartition("/")[0]
    step = Step(Op.PRUNE, (group, obj["kind"], "ns", "web"), None, obj)
    keeps_children = set(keeps or ())
    got = prune._delete_of(SimpleNamespace(report=report), step, SimpleNamespace(waiting=waiting or {}),
                           SimpleNamespace(foreign=foreign, holds=holds or {}), keeps_children)
    return got, [(c.application, c.subject, c.action, c.message) for c in report.changes], keeps_children


def live_obj(kind: str, annotations: dict | None = None) -> dict:
    api = "heumsi.github.io/v1" if kind == "Application" else "apps/v1"
    meta = {"namespace": "ns", "name": "web", **({"ownerReferences": OWNED_BY_WEB} if kind != "Application" else {}),
            **({"annotations": annotations} if annotations else {})}
    return {"apiVersion": api, "kind": kind, "metadata": meta}


def test_a_child_git_dropped_of_a_suspended_application_is_held_not_pruned():
    hold = {"ns/web": suspend.Hold(suspend.SPEC, False)}
    got, lines, _ = delete_of(live_obj("Deployment"), holds=hold)
    assert got is None and lines == [("ns/web", "Deployment/ns/web", "suspended",
                                      "not applied: its Application is suspended (spec.suspend: true)")]
    app = live_obj("Application")
    got, lines, _ = delete_of(app, holds=hold)  # the Application itself: the hold is not the child rule
    assert got == (Step(Op.PRUNE, ("heumsi.github.io", "Application", "ns", "web"), None, app), "ns/web",
                   "Background") and lines == []


def test_a_prune_is_skipped_for_an_owner_failed_foreign_or_waiting():
    for kwargs in ({"failures": {"ns/web": "boom"}}, {"foreign": frozenset({"ns/web"})}, {"waiting": {"ns/web": 1}}):
        assert delete_of(live_obj("Deployment"), **kwargs) == (None, [], set())
    assert delete_of(live_obj("Deployment"), failures={"ns/other": "boom"})[0] is not None


def test_a_prune_the_annotation_keeps_is_a_kept_line_and_orphans_the_owners_children():
    got, lines, keeps = delete_of(live_obj("Deployment", {"heumsi.github.io/prune": "Disabled"}))
    assert got is None and keeps == {"ns/web"}
    assert lines == [("ns/web", "Deployment/ns/web", "kept", "not in Git; heumsi.github.io/prune: Disabled")]
    got, lines, keeps = delete_of(live_obj("Deployment", {"heumsi.github.io/reconcile": "disabled"}))
    assert got is None and keeps == {"ns/web"}
    assert lines == [("ns/web", "Deployment/ns/web", "kept", "not in Git; heumsi.github.io/reconcile: disabled")]
    app = live_obj("Application")
    assert delete_of(app, keeps={"ns/web"})[0][1:] == ("ns/web", "Orphan")
    assert delete_of(app)[0][1:] == ("ns/web", "Background")


def test_an_outcome_gets_the_documents_line_only_with_the_documents_path():
    git = Wanted([Manifest("ns", "web", {}, "apps/web.yaml", 3)])
    p = SimpleNamespace(git=git)
    outcome = status.Outcome(True, False, "c1", "Synced", "ok", "apps/web.yaml")
    assert statuses._located(p, "ns/web", outcome).source_line == 3
    moved = status.Outcome(True, False, "c1", "Synced", "ok", "apps/old.yaml")  # a path that is not the document's
    assert statuses._located(p, "ns/web", moved) is moved
    assert statuses._located(p, "ns/gone", status.Outcome(True, False, "c1", "Synced", "ok", None)).source_line is None


AGENT_APPLIED = [{"manager": "gitops-agent", "operation": "Apply"}]


def application(name: str = "web", *, owned: bool = True, source: str | None = "mine",
                annotations: dict | None = None) -> dict:
    labels = {"app.kubernetes.io/managed-by": "gitops-agent", **({"heumsi.github.io/source": source} if source else {})}
    meta = {"namespace": "ns", "name": name, "labels": labels, "annotations": annotations or {},
            **({"managedFields": AGENT_APPLIED} if owned else {})}
    return {"apiVersion": "heumsi.github.io/v1", "kind": "Application", "metadata": meta,
            "spec": {"image": "x", "port": 80}}


def test_the_source_holding_an_application_is_another_only_when_the_agent_applied_it():
    assert sources.other_source(application(source="other"), "mine") == "other"
    assert sources.other_source(application(source="mine"), "mine") is None
    assert sources.other_source(application(source=None), "mine") is None  # no label: taken over
    assert sources.other_source(application(source="other", owned=False), "mine") is None  # hand-applied
    assert sources.other_source(None, "mine") is None
    child = {**application(source="other"), "apiVersion": "apps/v1", "kind": "Deployment"}
    assert sources.other_source(child, "mine") is None


def outcome_of(key: str, app: dict, *, failures=None, reasons=None, broken=None, written=frozenset(),
               children: ChildWave | None = None, holds=None) -> tuple[status.Outcome, Report]:
    report = Report(commit="c1")
    report.failures.update(failures or {})
    report.reasons.update(reasons or {})
    p = SimpleNamespace(report=report, git=Wanted([Manifest("ns", "web", {}, "apps/web.yaml", 3)]),
                        opts=SimpleNamespace(source_id="mine", prune=True))
    got = statuses._outcome(p, key, app, broken or {}, "synced!", AppsApplied({}, {}, written, holds=holds or {}),
                            children or ChildWave())
    return got, report


def test_the_outcome_of_a_failed_application_from_git():
    got, _ = outcome_of("ns/web", application(), failures={"ns/web": "boom"})
    assert got == status.Outcome(False, False, "c1", "SyncFailed", "boom", "apps/web.yaml")
    got, _ = outcome_of("ns/web", application(), failures={"ns/web": "boom"}, reasons={"ns/web": "Invalid"},
                        children=ChildWave(taken={"ns/web": {"Service"}}))
    assert got == status.Outcome(False, False, "c1", "Invalid", "boom", "apps/web.yaml", health=health.Health(
        health.Status.MISSING, "Deployment: Deployment does not exist"))


def test_the_outcome_of_a_failed_hand_applied_application_names_no_commit_or_file():
    hand = application("hand", owned=False, annotations={SOURCE_PATH: "hand.yaml"})
    got, _ = outcome_of("ns/hand", hand, failures={"ns/hand": "boom"})
    assert got == status.Outcome(False, False, None, "SyncFailed", "boom", None)
    owned = application("gone", annotations={SOURCE_PATH: "gone.yaml"})  # this source's, gone from Git
    got, _ = outcome_of("ns/gone", owned, failures={"ns/gone": "boom"})
    assert got == status.Outcome(False, False, "c1", "SyncFailed", "boom", "gone.yaml")


def test_the_outcome_of_an_application_whose_file_git_refused():
    gone = application("gone", annotations={SOURCE_PATH: "gone.yaml"})
    got, report = outcome_of("ns/gone", gone, broken={"gone.yaml": "gone.yaml: bad YAML"})
    assert got == status.Outcome(False, False, "c1", "InvalidManifest", "gone.yaml: bad YAML", "gone.yaml")
    assert report.refused == {"ns/gone": "gone.yaml: bad YAML"}
    got, report = outcome_of("ns/gone", gone, broken={"other.yaml": "other.yaml: bad YAML"})
    assert got.reason == "PruneBlocked" and report.refused == {}


def test_the_outcome_of_a_synced_application_says_whether_it_changed():
    for written, children in [(frozenset({"ns/web"}), ChildWave()),
                              (frozenset(), ChildWave(written=frozenset({"ns/web"})))]:
        got, _ = outcome_of("ns/web", application(), written=written, children=children)
        assert got == status.Outcome(True, True, "c1", "Synced", "synced!", "apps/web.yaml")
    got, _ = outcome_of("ns/web", application(), written=frozenset({"ns/other"}))
    assert got == status.Outcome(True, False, "c1", "Synced", "synced!", "apps/web.yaml")
    got, _ = outcome_of("ns/hand", application("hand", owned=False))
    assert got == status.Outcome(True, False, None, "Synced", "synced!", None)


def test_the_outcome_of_a_held_application():
    got, _ = outcome_of("ns/web", application(), holds={"ns/web": suspend.Hold(suspend.SPEC, False)})
    assert (got.ok, got.commit, got.reason, got.source_path, got.suspended) == (
        False, "c1", "Suspended", "apps/web.yaml", True)
    got, _ = outcome_of("ns/web", application(), children=ChildWave(held={"ns/web": {"Service": "Service/ns/web"}}))
    assert (got.ok, got.commit, got.reason, got.source_path, got.suspended) == (
        False, "c1", "Suspended", "apps/web.yaml", False)
    assert got.message.startswith("Service/ns/web has heumsi.github.io/reconcile: disabled")


def recorded(outcome: status.Outcome, key: str = "ns/web", failures=None, held=None) -> Report:
    report = Report(commit="c1")
    report.failures.update(failures or {})
    p = SimpleNamespace(report=report, git=Wanted([Manifest("ns", "web", {}, "apps/web.yaml", 3)]))
    statuses.record_health(p, [(key, application(), outcome, {}, False)], ChildWave(held=held or {}))
    return report


def test_a_synced_application_from_git_is_recorded_for_sync_wait_unchanged():
    ok = status.Outcome(True, True, "c1", "Synced", "synced!", "apps/web.yaml")
    report = recorded(ok)
    assert report.synced == {"ns/web": status.Outcome(True, False, "c1", "Synced", "synced!", "apps/web.yaml")}
    assert report.health == {"ns/web": status.health_of(application(), ok, {}).as_status()}
    assert report.health["ns/web"]["status"] == "Missing"


def test_an_application_not_waited_for_is_recorded_as_none():
    ok = status.Outcome(True, False, "c1", "Synced", "synced!", "apps/web.yaml")
    assert recorded(ok, held={"ns/web": {"Service": "Service/ns/web"}}).synced == {"ns/web": None}
    suspended = status.Outcome(False, False, "c1", "Suspended", "held", "apps/web.yaml", suspended=True)
    assert recorded(suspended).synced == {"ns/web": None}
    with_health = status.Outcome(True, False, "c1", "Synced", "ok", "apps/web.yaml",
                                 health=health.Health(health.Status.HEALTHY, ""))
    assert recorded(with_health).synced == {"ns/web": None}
    flagged = status.Outcome(True, False, "c1", "Synced", "ok", "apps/web.yaml", suspended=True)
    assert recorded(flagged).synced == {"ns/web": None}


def test_a_failed_or_hand_applied_application_is_not_recorded_as_synced():
    failed = status.Outcome(False, False, "c1", "SyncFailed", "boom", "apps/web.yaml")
    assert recorded(failed).synced == {} and "ns/web" in recorded(failed).health
    suspended = status.Outcome(False, False, "c1", "Suspended", "held", "apps/web.yaml", suspended=True)
    assert recorded(suspended, failures={"ns/web": "boom"}).synced == {}
    ok = status.Outcome(True, False, None, "Synced", "ok", None)
    assert recorded(ok, key="ns/hand").synced == {}


MARK = sources.wanted_by("mine")


def marked(apps: dict[str, dict | None], refused: set[str], problems: list | None = None) -> list:
    """The annotation patches ``mark_wanted`` sends: (key, annotations), in order. ``apps``: name -> annotations
    (None: being deleted, with the mark); Git has ``web`` (apps/web.yaml) and ``api`` (api.yaml)."""
    patched = []
    kube = SimpleNamespace(dry_run=False, patch_annotations=lambda app, annotations: patched.append(
        (app["metadata"]["name"], annotations)))
    git = Wanted([Manifest("ns", "web", {}, "apps/web.yaml", 3), Manifest("ns", "api", {}, "api.yaml", 1)],
                 problems=problems or [])
    p = SimpleNamespace(kube=kube, opts=SimpleNamespace(source_id="mine"), git=git, report=Report())
    live = []
    for name, wanted in apps.items():
        meta = {"namespace": "ns", "name": name, "annotations": wanted or {MARK: "mine x"}}
        if wanted is None:
            meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        live.append({"metadata": meta})
    state = LiveState(live, [AppFacts(f"ns/{name}", True, False, False, (), False) for name in apps], [], [], {}, set())
    wantedby.mark_wanted(p, state, frozenset(f"ns/{name}" for name in refused))
    return patched


def test_the_mark_is_set_on_each_application_another_source_holds_that_git_has():
    assert marked({"web": {}, "api": {"other": "x"}}, {"web", "api"}) == [
        ("web", {MARK: "mine apps/web.yaml"}), ("api", {MARK: "mine api.yaml"})]
    assert marked({"web": {MARK: "mine apps/web.yaml"}}, {"web"}) == []  # already says so
    assert marked({"web": {MARK: "mine old.yaml"}}, {"web"}) == [("web", {MARK: "mine apps/web.yaml"})]


def test_the_mark_is_removed_once_held_or_gone_from_git_unless_a_file_failed():
    assert marked({"web": {MARK: "mine apps/web.yaml"}, "gone": {MARK: "mine gone.yaml"}, "bare": {"a": "b"}},
                  set()) == [("web", {MARK: None}), ("gone", {MARK: None})]
    assert marked({"web": {MARK: "mine apps/web.yaml"}, "gone": {MARK: "mine gone.yaml"}}, set(),
                  problems=["bad.yaml: broken"]) == [("web", {MARK: None})]  # gone may be in the broken file
    assert marked({"gone": {MARK: "mine gone.yaml"}, "web": {}}, {"web"},
                  problems=["bad.yaml: broken"]) == [("web", {MARK: "mine apps/web.yaml"})]  # the next one still


def test_an_application_being_deleted_is_not_marked():
    assert marked({"web": None}, set()) == []
    assert marked({"web": None}, {"web"}) == []


def test_refuse_takes_out_the_applications_another_source_holds_but_never_a_prune():
    ident = ("heumsi.github.io", "Application", "ns", "web")
    theirs, mine = application(source="other"), application(source="mine")
    update, create = Step(Op.UPDATE, ident, {}, theirs), Step(Op.CREATE, ident, {}, None)
    prune_step, own = Step(Op.PRUNE, ident, None, theirs), Step(Op.UPDATE, ident, {}, mine)
    out, refused = sources.refuse([create, update, prune_step, own], "mine", "repo", {"ns/web": "web.yaml:1"})
    assert out == [create, prune_step, own]
    assert refused == [(update, sources._refusal(update, "other", "mine", "repo", {"ns/web": "web.yaml:1"}))]
    assert refused[0][1].startswith("web.yaml:1: OwnershipConflict: not applied: source 'other' holds it; this "
                                    "source 'mine' (repository 'repo') has it too.")
    assert sources.refuse([], "mine", "repo", {}) == ([], [])


def child(kind: str, name: str, *, ours: bool = True) -> dict:
    group = "apps/v1" if kind == "Deployment" else "v1"
    meta = {"namespace": "ns", "name": name, "labels": {"app.kubernetes.io/managed-by": "gitops-agent"},
            "managedFields": AGENT_APPLIED}
    if ours:
        meta["ownerReferences"] = OWNED_BY_WEB if name == "web" else [{**OWNED_BY_WEB[0], "name": name}]
    return {"apiVersion": group, "kind": kind, "metadata": meta}


def test_the_child_prunes_are_the_unpaired_owned_children_and_a_note_for_each_one_not_ours():
    paired, gone, stray = child("Deployment", "web"), child("Service", "web"), child("Service", "stray", ours=False)
    objs = {ident: obj for obj in (paired, gone, stray) for ident in [plan.identity(obj)]}
    live = LiveState([], [], list(objs.values()), [livestate.child_facts(o) for o in objs.values()], {}, set())
    idx = ChildIndex(objs, {})
    wave = ChildWave(paired=frozenset({plan.identity(paired)}))
    note = "Service/ns/stray carries the agent's labels but is not a child it made: not ours, left alone"
    for prune_on, expected in [(True, [Step(Op.PRUNE, plan.identity(gone), None, gone)]), (False, [])]:
        p = SimpleNamespace(report=Report())
        assert prune.plan_prunes(p, live, idx, wave, prune_on) == expected
        assert p.report.notes == [note]
    p = SimpleNamespace(report=Report())
    stray_paired = ChildWave(paired=frozenset({plan.identity(paired), plan.identity(stray)}))
    assert prune.plan_prunes(p, live, idx, stray_paired, True) == [Step(Op.PRUNE, plan.identity(gone), None, gone)]
    assert p.report.notes == []  # desired: it pairs with a child Git wants


class Deleting:
    """A cluster that deletes (``refuse``: names whose delete is refused) and notes each change."""

    def __init__(self, refuse: frozenset[str] = frozenset()):
        self.deleted, self.changes, self.refuse = [], [], refuse

    def delete(self, obj, propagation):
        if obj["metadata"]["name"] in self.refuse:
            raise ApiError(403, "Forbidden", "no")
        self.deleted.append((obj["kind"], obj["metadata"]["name"], propagation))

    def change(self, app, key, action, subject):
        self.changes.append((app, key, action, subject))


def test_prune_all_prunes_children_first_then_applications_and_tells_of_each():
    web_app, gone_app = application(), application("gone", annotations={SOURCE_PATH: "gone.yaml"})
    dep, svc = child("Deployment", "web"), child("Service", "gone")
    kube, report = Deleting(), Report(commit="abcdef1" + "0" * 33)
    p = SimpleNamespace(kube=kube, report=report)
    app_steps = [Step(Op.PRUNE, plan.identity(gone_app), None, gone_app),
                 Step(Op.UPDATE, plan.identity(web_app), web_app, web_app)]
    planned = SimpleNamespace(steps=app_steps, waiting={})
    applied = SimpleNamespace(in_scope={"ns/web": web_app}, foreign=frozenset(), holds={})
    child_steps = [Step(Op.PRUNE, plan.identity(dep), None, dep), Step(Op.UNCHANGED, plan.identity(svc), svc, svc),
                   Step(Op.PRUNE, plan.identity(svc), None, svc)]
    prune.prune_all(p, child_steps, planned, applied)
    assert kube.deleted == [("Deployment", "web", "Background"), ("Service", "gone", "Background"),
                            ("Application", "gone", "Background")]
    assert kube.changes == [(web_app, "ns/web", PRUNED, "Deployment/ns/web"),
                            (None, "ns/gone", PRUNED, "Service/ns/gone"),  # not in scope: only noted
                            (gone_app, "ns/gone", PRUNED, "Application/ns/gone")]
    assert report.notices == [prune.pruned_notice(gone_app, report.commit)]
    assert report.notices[0].source_path == "gone.yaml"


def test_a_refused_prune_tells_of_nothing():
    gone_app = application("gone")
    kube, report = Deleting(refuse=frozenset({"gone"})), Report(commit="c1")
    p = SimpleNamespace(kube=kube, report=report)
    planned = SimpleNamespace(steps=[Step(Op.PRUNE, plan.identity(gone_app), None, gone_app)], waiting={})
    prune.prune_all(p, [], planned, SimpleNamespace(in_scope={}, foreign=frozenset(), holds={}))
    assert (kube.deleted, kube.changes, report.notices) == ([], [], [])
    assert [(c.subject, c.action, c.message) for c in report.changes] == [
        ("Application/ns/gone", "failed", "prune failed: 403 Forbidden: no")]


def guarded(steps: list, *, manifests: int = 1, owned: int = 10, share: float = 0.5) -> tuple:
    git = Wanted([Manifest("ns", f"a{i}", {}, f"a{i}.yaml", 1) for i in range(manifests)])
    p = SimpleNamespace(opts=SimpleNamespace(source_id="mine", max_prune_share=share), git=git,
                        report=Report(commit="c1"))
    kept, prune_on = appplan._guarded(p, steps, True, owned)
    return kept, prune_on, p.report.errors


def prune_of(name: str, **annotations) -> Step:
    app = application(name, annotations=annotations)
    return Step(Op.PRUNE, plan.identity(app), None, app)


def test_the_guards_keep_annotated_suspended_and_wanted_elsewhere_applications():
    update = Step(Op.UPDATE, ("heumsi.github.io", "Application", "ns", "web"), application(), application())
    plain = prune_of("plain")
    suspended = prune_of("held")
    suspended.target["spec"]["suspend"] = True
    steps = [update, prune_of("kept", **{"heumsi.github.io/prune": "disabled"}), suspended,
             prune_of("wanted", **{sources.wanted_by("other"): "other"}),
             prune_of("mine", **{sources.wanted_by("mine"): "mine x.yaml"}), plain]
    kept, prune_on, errors = guarded(steps)
    assert [s.target["metadata"]["name"] for s in kept] == ["web", "mine", "plain"]
    assert prune_on is True and errors == []


def test_a_mass_prune_is_refused_whole():
    many = [prune_of(f"p{i}") for i in range(12)]
    update = Step(Op.UPDATE, ("heumsi.github.io", "Application", "ns", "web"), application(), application())
    kept, prune_on, errors = guarded([update, *many], owned=20, share=0.5)
    assert kept == [update] and prune_on is False
    assert errors == [guards.refusal(12, 20, 0.5, "c1")]
    assert errors[0].startswith("commit c1 would prune 12 of the 20 Applications this source owns, more than "
                                "--max-prune-share 0.5 of them")
    assert guarded(many[:11], owned=22, share=0.5)[1:] == (True, [])  # half: not more than the share
    assert guarded(many[:10], owned=10, share=0.5)[1:] == (True, [])  # not more than the guard's minimum
    assert guarded(many, owned=20, share=0.5, manifests=0)[1:] == (True, [])  # an empty commit: its own guard


def test_another_sources_applications_are_failed_lines_naming_the_file_in_git():
    theirs, mine = application(source="other"), application("api", source="mine")
    steps = [Step(Op.UPDATE, plan.identity(theirs), theirs, theirs), Step(Op.UPDATE, plan.identity(mine), mine, mine)]
    git = Wanted([Manifest("ns", "web", {}, "apps/web.yaml", 3), Manifest("ns", "api", {}, "api.yaml", 1)])
    p = SimpleNamespace(opts=sync.Options(source_id="mine", repo=REPO, cache_dir="/cache"), git=git, report=Report())
    kept, keys = appplan._refused(p, steps)
    assert kept == [steps[1]] and keys == {"ns/web"}
    [line] = p.report.changes
    assert (line.application, line.subject, line.action) == ("ns/web", "Application/ns/web", "failed")
    assert line.message == sources._refusal(steps[0], "other", "mine", repository.identity(REPO),
                                            {"ns/web": "apps/web.yaml:3", "ns/api": "api.yaml:1"})
    assert line.message.startswith("apps/web.yaml:3: OwnershipConflict: ")


class Applying:
    """A cluster whose apply answers ``answer`` (an object, or an ApiError to raise)."""

    def __init__(self, answer):
        self.answer, self.changes = answer, []

    def apply(self, desired):
        if isinstance(self.answer, ApiError):
            raise self.answer
        return self.answer

    def change(self, app, key, action, subject, why=""):
        self.changes.append((app, key, action, subject, why))

    def take_warnings(self):
        return []

    def warned(self, app, key, subject, texts):
        self.warnings = getattr(self, "warnings", []) + [(key, subject, texts)]


def test_converge_runs_before_only_for_a_write_and_records_a_refusal():
    app = application()
    ident = plan.identity(app)
    befores = []
    report = Report()
    done = appapply.converge(Applying(app), report, "ns/web", Step(Op.UNCHANGED, ident, app, app),
                             before=lambda: befores.append(1))
    assert (done.action, done.live, befores) == ("unchanged", app, [])
    done = appapply.converge(Applying(app), report, "ns/web", Step(Op.CREATE, ident, app, None),
                             before=lambda: befores.append(1))
    assert (done.action, befores) == ("created", [1])
    invalid = ApiError(422, "Invalid", "spec.port: bad")
    assert appapply.converge(Applying(invalid), report, "ns/web", Step(Op.CREATE, ident, app, None)) is None
    assert report.failures == {"ns/web": "422 Invalid: spec.port: bad"} and report.reasons == {"ns/web": "Invalid"}
    assert [(c.subject, c.action, c.message) for c in report.changes] == [
        ("Application/ns/web", "failed", "422 Invalid: spec.port: bad")]
    other = Report()
    assert appapply.converge(Applying(ApiError(409, "Conflict", "x")), other, "ns/web",
                             Step(Op.CREATE, ident, app, None)) is None
    assert other.failures == {"ns/web": "409 Conflict: x"} and other.reasons == {}
    with pytest.raises(ApiError):
        appapply.converge(Applying(ApiError(0, "ConnectionRefused", "down")), Report(), "ns/web",
                          Step(Op.CREATE, ident, app, None))


def test_record_reports_each_action_and_notes_only_writes_for_the_event():
    kube, report = Applying(None), Report()
    p = SimpleNamespace(kube=kube, report=report)
    app = application()
    assert appapply.record(p, "ns/web", "Deployment/ns/web", apply.Applied({}, UNCHANGED), app) is False
    assert appapply.record(p, "ns/web", "Service/ns/web", apply.Applied({}, CONFIGURED, "why"), app) is True
    assert [(c.application, c.subject, c.action, c.message) for c in report.changes] == [
        ("ns/web", "Deployment/ns/web", "unchanged", ""), ("ns/web", "Service/ns/web", "configured", "why")]
    assert kube.changes == [(app, "ns/web", "configured", "Service/ns/web", "why")]
    assert kube.warnings == [("ns/web", "Service/ns/web", ())]  # a write said nothing: its warnings may come again
    appapply.record(p, "ns/web", "Deployment/ns/web", apply.Applied({}, UNCHANGED, warnings=("w",)), app)
    assert kube.warnings[1:] == [("ns/web", "Deployment/ns/web", ("w",))]  # a no-op write that was warned of


def test_the_hits_are_reported_unchanged_in_their_order():
    report = Report()
    appapply.report_unchanged(SimpleNamespace(report=report), {"ns/b": None, "ns/a": None})
    assert [(c.application, c.subject, c.action) for c in report.changes] == [
        ("ns/b", "Application/ns/b", "unchanged"), ("ns/a", "Application/ns/a", "unchanged")]


# -- the whole pass: what each stage must hand on (issue #41, the survivors of a mutation run) ------------

def namespace_made(world: World) -> None:
    world.kube.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})


def hand_made(world: World, kind: str, name: str, **spec) -> None:
    """``kubectl create`` of a ``kind`` (Application, Deployment, Service) ``name``: without the agent's labels."""
    api = {"Application": "heumsi.github.io/v1", "Deployment": "apps/v1", "Service": "v1"}[kind]
    world.kube.add({"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": NS}, "spec": spec})


def synced(app: dict) -> tuple:
    return next((c["status"], c["reason"], c["message"]) for c in app["status"]["conditions"] if c["type"] == "Synced")


def test_a_file_that_no_longer_parses_keeps_its_application_and_says_why_on_it(tmp_path):
    world = World(tmp_path)
    world.commit({"web.yaml": app_yaml("web")})
    world.sync()
    world.commit({"web.yaml": "a: ["})
    report = world.sync()
    broken = "web.yaml:1: invalid YAML: expected the node content, but found '<stream end>' (while parsing a flow node)"
    assert report.errors == [broken] and world.app("web") is not None
    assert synced(world.app("web")) == ("False", "InvalidManifest", broken)
    assert report.refused[f"{NS}/web"] == broken


def test_a_hand_applied_application_syncs_from_its_live_spec_and_says_so(tmp_path):
    world = World(tmp_path)
    world.commit({"web.yaml": app_yaml("web")})
    world.sync()
    hand_made(world, "Application", "hand", image="nginx:1.27", port=80)
    report = world.sync()
    assert (f"Deployment/{NS}/hand", CREATED) in [(c.subject, c.action) for c in report.changes]
    assert synced(world.app("hand")) == ("True", "Synced", "children applied from the live Application")
    assert synced(world.app("web"))[2] == f"children applied from commit {world.repo.head()[:12]}"


def test_a_service_name_someone_else_holds_makes_the_applications_health_say_so(tmp_path):
    world = World(tmp_path)
    namespace_made(world)
    hand_made(world, "Service", "web", ports=[{"port": 80}])
    world.commit({"web.yaml": app_yaml("web")})
    report = world.sync()
    assert f"{NS}/web" in report.failures and world.child("Deployment", "web") is not None
    assert world.app("web")["status"]["health"] == {
        "status": "Missing",
        "message": "Service: another Service of this name exists and is not the agent's, so the agent's is not created"}


def test_a_held_childs_application_takes_the_health_of_every_kind_its_spec_has(tmp_path):
    world = World(tmp_path)
    world.commit({"web.yaml": app_yaml("web", ingress={"host": "web.example.com"})})
    world.sync()
    deployment = world.child("Deployment", "web")
    deployment["metadata"].setdefault("annotations", {})["heumsi.github.io/reconcile"] = "disabled"
    world.kube.put(deployment, manager="kubectl-annotate")
    world.sync()
    # the Ingress has no address yet: Progressing is worse than the held Deployment's Suspended
    assert world.app("web")["status"]["health"] == {
        "status": "Progressing", "message": "Ingress: waiting for an ingress controller to give the Ingress an address"}


def test_the_retry_time_of_a_pass_is_its_earliest_whatever_the_order_of_the_statuses(tmp_path):
    world = World(tmp_path)
    world.kube.fail("apply", f"Service/{NS}/a", ApiError(403, "Forbidden", "quota"), times=None)
    world.commit({"a.yaml": app_yaml("a"), "b.yaml": app_yaml("b")})
    report = world.sync(retry=backoff.Policy(base=300, cap=600, jitter=0, skip=True))
    stored = world.app("a")["status"]["nextRetryTime"]
    assert "nextRetryTime" not in world.app("b")["status"]  # b's status is written after a's
    assert report.retry_at == backoff.parse_time(stored)


def test_a_deployment_without_the_agents_labels_is_not_noted_as_carrying_them(tmp_path):
    world = World(tmp_path)
    namespace_made(world)
    labels = {"app": "legacy"}
    hand_made(world, "Deployment", "legacy", replicas=1, selector={"matchLabels": labels},
              template={"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    world.commit({"web.yaml": app_yaml("web")})
    report = world.sync()
    assert report.ok and not [n for n in report.notes if "carries the agent's labels" in n]
    assert world.child("Deployment", "legacy") is not None


def test_another_sources_applications_do_not_count_as_this_sources_prunes(tmp_path):
    other = World(tmp_path / "b", source_id="b")
    other.commit({f"app-{i:02d}.yaml": app_yaml(f"app-{i:02d}", replicas=0) for i in range(11)})
    other.sync()
    world = World(tmp_path / "a", source_id="a")
    world.kube = other.kube  # one cluster
    world.commit({"web.yaml": app_yaml("web")})
    report = world.sync()
    assert report.errors == [] and report.ok
    assert len(world.kube.of_kind("Application")) == 12


def test_a_fetch_is_timed_and_skipped_while_the_remote_stays_at_the_known_commit(tmp_path):
    world = World(tmp_path)
    head = world.commit({"web.yaml": app_yaml("web")})
    report = world.sync()
    assert isinstance(report.fetch_seconds, float) and report.fetch_seconds >= 0
    report = world.sync(known_commit=head)
    assert (report.commit, report.source_seen, report.fetch_seconds) == (head, True, None)  # ls-remote only


def test_a_pass_with_nothing_to_write_starts_no_write_thread(tmp_path, monkeypatch):
    world = World(tmp_path, concurrency=4)
    world.commit({"web.yaml": app_yaml("web"), "db.yaml": app_yaml("db"), "api.yaml": app_yaml("api")})
    pools = []

    class Counted(writes.ThreadPoolExecutor):
        def __init__(self, *args, **kwargs):
            pools.append(kwargs.get("max_workers"))
            super().__init__(*args, **kwargs)
    monkeypatch.setattr(writes, "ThreadPoolExecutor", Counted)
    world.sync()
    assert pools  # the first pass writes, in the pool
    pools.clear()
    report = world.sync()
    assert (world.kube.writes, report.changed, pools) == ([], False, [])


def test_the_applied_child_a_pass_keeps_for_the_status_is_cut_to_what_health_reads():
    full = {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "ns", "generation": 2, "managedFields": [{"manager": "x"}]},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "web", "image": "nginx"}]}}},
            "status": {"readyReplicas": 2}}
    kept = appapply.health_only(apply.Applied(full, CONFIGURED))
    assert kept == apply.Applied(health.view(full), CONFIGURED)
    assert "template" not in kept.live["spec"] and "managedFields" not in kept.live["metadata"]
    unchanged = apply.Applied(full, UNCHANGED)  # the live object the pass read: nothing new is held
    assert appapply.health_only(unchanged) is unchanged and appapply.health_only(None) is None


def test_a_source_with_a_token_reads_the_mirror_its_token_fetched(tmp_path):
    with faults.GitHttpServer(tmp_path / "srv") as server:
        world = World(tmp_path, credentials=Credentials(token="s3cret-token"))
        world.commit({"web.yaml": app_yaml("web")})
        faults.bare_clone(world.repo.path, tmp_path / "srv" / "apps.git")
        report = world.sync(repo=server.url("apps.git"))
    assert report.errors == [] and world.app("web") is not None


def test_a_pass_over_files_the_parse_cache_holds_reads_none_of_their_bytes_from_git(tmp_path, monkeypatch):
    world = World(tmp_path)
    world.commit({"web.yaml": app_yaml("web"), "db.yaml": app_yaml("db")})
    world.sync()
    read = []
    put = snapshots.Files.put

    def spy(files, path, data):
        read.append(path)
        put(files, path, data)
    monkeypatch.setattr(snapshots.Files, "put", spy)
    world.commit({"db.yaml": app_yaml("db", replicas=2)})
    report = world.sync()  # a full read (no steady): only the changed file's bytes are read
    assert report.ok and read == ["db.yaml"]
