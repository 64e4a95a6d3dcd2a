"""``remember``: which Applications a ``run`` pass keeps for the next one, and the exact entry kept."""

from __future__ import annotations

import pytest

from agent.engine import remember as remember_
from agent.engine.passvalues import AppPlan, AppsApplied, ChildWave, LiveState, Pass, Wanted
from agent.engine.report import CONFIGURED, FAILED, UNCHANGED, Change, Report
from agent.engine.steady import Entry, Steady
from agent.manifests.manifest import Manifest

KEY = "ns/web"
BLOB = "b" * 40
HEALTH = {"status": "Healthy"}
DEPLOY = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"namespace": "ns", "name": "web",
                                                                      "resourceVersion": "5"}}
SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"namespace": "ns", "name": "web",
                                                               "resourceVersion": "3"}}


def app() -> dict:
    return {"apiVersion": "x/v1", "kind": "Application", "metadata": {"namespace": "ns", "name": "web",
                                                                       "resourceVersion": "7"}}


def versions(kind, namespace, name, read):
    return None if read is None else str(int(read) + 1)  # every object written once by the pass


def report(**changes) -> Report:
    r = Report(commit="c1", source_seen=True)
    r.health[KEY] = HEALTH
    r.readiness[KEY] = ("True", "Synced")
    r.synced[KEY] = {"revision": "c1"}
    r.changes = [Change(KEY, "Application/ns/web", CONFIGURED), Change(KEY, "Deployment/ns/web", UNCHANGED),
                 Change(KEY, "Service/ns/web", CONFIGURED)]
    for name, value in changes.items():
        setattr(r, name, value)
    return r


def hit(**changes) -> Entry:
    values = dict(document=("apps/web.yaml", 3, BLOB), version="1", children=(), commit="c1", source_seen=True,
                  lines=("old",), health={"status": "Old"}, readiness=None, synced="old", notes=("from the hit",))
    values.update(changes)
    return Entry(**values)


def run(r: Report | None = None, *, manifests=None, blobs=None, hits=None, notes_of=None, waiting=None,
        in_scope=None, holds=None, live_of=None, held=None, steady_versions=versions) -> dict[str, Entry]:
    r = report() if r is None else r
    if manifests is None:
        manifests = [Manifest("ns", "web", {}, "apps/web.yaml", 3)]
    git = Wanted(manifests, blobs={"apps/web.yaml": BLOB} if blobs is None else blobs)
    p = Pass(kube=None, opts=None, report=r, git=git)
    steady = Steady(versions=steady_versions)
    planned = AppPlan(prune=False, live={}, hits=hits or {}, desired=(),
                      notes_of={KEY: ["labelled"]} if notes_of is None else notes_of, waiting=waiting or {},
                      steps=[], refused=frozenset())
    applied = AppsApplied(in_scope={KEY: app()} if in_scope is None else in_scope, failed={}, written=frozenset(),
                          holds=holds or {})
    children = ChildWave(live_of={KEY: {"Service": SERVICE, "Deployment": DEPLOY}} if live_of is None else live_of,
                         held=held or {})
    remember_.remember(p, steady, planned, applied, children)
    return steady.entries


def test_a_clean_application_is_kept_as_the_pass_left_it():
    assert run() == {KEY: Entry(
        document=("apps/web.yaml", 3, BLOB), version="8",
        children=((("", "Service", "ns", "web"), "4"), (("apps", "Deployment", "ns", "web"), "6")),
        commit="c1", source_seen=True, lines=("Deployment/ns/web", "Service/ns/web"), health=HEALTH,
        readiness=("True", "Synced"), synced={"revision": "c1"}, notes=("labelled",))}


def test_an_application_with_no_lines_and_no_children_is_kept():
    entries = run(report(changes=[]), live_of={})
    assert entries[KEY].lines == () and entries[KEY].children == () and entries[KEY].version == "8"


def test_an_offline_pass_keeps_the_source_seen_it_had():
    assert run(report(source_seen=False))[KEY].source_seen is False


def test_the_notes_of_an_unchanged_but_unsettled_application_are_its_hits():
    entries = run(hits={KEY: hit(commit="c0")}, notes_of={KEY: ["labelled"]})
    assert entries[KEY].notes == ("from the hit",) and entries[KEY].version == "8"


def test_no_notes_when_the_pass_had_none():
    assert run(notes_of={})[KEY].notes == ()


def test_a_settled_hit_is_kept_as_it_was_even_when_nothing_else_is_known():
    kept = hit()
    bare = Report(commit="c1", source_seen=True)  # no health, no synced: a full decision would drop it
    assert run(bare, hits={KEY: kept})[KEY] is kept


def test_a_settled_hit_of_a_failed_application_is_decided_again():
    r = report(failed={KEY})
    assert run(r, hits={KEY: hit()}) == {}


def test_a_hit_seen_offline_is_not_settled_once_git_is_seen_again():
    bare = Report(commit="c1", source_seen=True)
    assert run(bare, hits={KEY: hit(source_seen=False)}) == {}
    assert run(report(), hits={KEY: hit(source_seen=False)})[KEY].version == "8"  # decided again, in full


def test_a_hit_of_another_commit_is_decided_again():
    bare = Report(commit="c2", source_seen=True)
    assert run(bare, hits={KEY: hit()}) == {}


@pytest.mark.parametrize("case", [
    "not in git", "blob unknown", "failure", "waiting", "held", "child held", "failed", "no health", "not synced",
    "bad line"])
def test_an_application_not_synced_cleanly_is_not_kept(case):
    r = report()
    kwargs: dict = {}
    if case == "not in git":
        kwargs["manifests"] = []
    elif case == "blob unknown":
        kwargs["blobs"] = {}
    elif case == "failure":
        r.failures[KEY] = "boom"
    elif case == "waiting":
        kwargs["waiting"] = {KEY: object()}
    elif case == "held":
        kwargs["holds"] = {KEY: object()}
    elif case == "child held":
        kwargs["held"] = {KEY: {"Deployment": "Deployment/ns/web"}}
    elif case == "failed":
        r.failed.add(KEY)
    elif case == "no health":
        del r.health[KEY]
    elif case == "not synced":
        del r.synced[KEY]
    elif case == "bad line":
        r.changes.append(Change(KEY, "Service/ns/web", FAILED, "boom"))
    assert run(r, **kwargs) == {}


def test_a_bad_line_of_another_application_does_not_matter():
    r = report()
    r.changes.append(Change("ns/other", "Service/ns/other", FAILED, "boom"))
    assert KEY in run(r)


def test_nothing_is_kept_when_a_version_after_the_pass_is_unknown():
    assert run(steady_versions=lambda kind, ns, name, read: None if kind == "Application" else "1") == {}
    assert run(steady_versions=lambda kind, ns, name, read: None if kind == "Service" else "1") == {}
    assert run(report(commit=None)) == {}


def test_an_entry_of_a_document_whose_blob_is_unknown_names_no_blob():
    p = Pass(kube=None, opts=None, report=report(), git=Wanted([], blobs={}))
    planned = AppPlan(prune=False, live={}, hits={}, desired=(), notes_of={}, waiting={}, steps=[],
                      refused=frozenset())
    m = Manifest("ns", "web", {}, "apps/web.yaml", 3)
    entry = remember_._entry(p, Steady(versions=versions), KEY, m, app(), (), ChildWave(), planned, {})
    assert entry is not None and entry.document == ("apps/web.yaml", 3, "")


def test_a_child_the_pass_did_not_write_keeps_the_version_tuple_the_pass_read():
    """The entry's (identity, resourceVersion) of an unwritten child is the pass's own read tuple
    (one tuple per child kept, not two); a written child's is new, at the written version."""
    read_deploy = (("apps", "Deployment", "ns", "web"), "5")
    read_service = (("", "Service", "ns", "web"), "3")
    live = LiveState(apps=[], app_facts=[], children=[DEPLOY, SERVICE],
                     child_facts=[(read_deploy[0], KEY, read_deploy), (read_service[0], KEY, read_service)],
                     children_of={}, namespaces=set(), related={})

    def only_the_service_written(kind, namespace, name, read):
        return "4" if kind == "Service" else read
    r = report()
    p = Pass(kube=None, opts=None, report=r, git=Wanted([Manifest("ns", "web", {}, "apps/web.yaml", 3)],
                                                        blobs={"apps/web.yaml": BLOB}))
    steady = Steady(versions=only_the_service_written)
    planned = AppPlan(prune=False, live={}, hits={}, desired=(), notes_of={}, waiting={}, steps=[], refused=frozenset())
    applied = AppsApplied(in_scope={KEY: app()}, failed={}, written=frozenset(), holds={})
    children = ChildWave(live_of={KEY: {"Service": SERVICE, "Deployment": DEPLOY}}, held={})
    remember_.remember(p, steady, planned, applied, children, live)
    service, deploy = steady.entries[KEY].children  # sorted by identity: the core group first
    assert deploy is read_deploy
    assert service == (read_service[0], "4") and service[0] is read_service[0]


def test_an_entry_equal_in_parts_to_the_hit_holds_the_hit_s_parts():
    """A new entry of an unchanged Application (a new commit) is built over the previous one:
    every equal part is the previous entry's object, every other the new one."""
    old = hit(document=("apps/web.yaml", 3, BLOB), lines=("Deployment/ns/web",), notes=("a",))
    new = Entry(document=("apps/web.yaml", 3, BLOB), version="9", children=(), commit="c2", source_seen=True,
                lines=("Deployment/ns/web",), health={"status": "Healthy"}, readiness=None, synced="new",
                notes=("a",))
    both = Entry.over(old, new)
    assert both == new
    assert both.document is old.document and both.lines is old.lines and both.notes is old.notes
    assert both.health is new.health and both.commit is new.commit and both.synced is new.synced


def test_the_entry_of_an_unchanged_application_holds_the_previous_entry_s_equal_parts():
    """``remember`` builds a hit's new entry over it (``Entry.over``): the equal document and lines
    are the previous entry's own objects, the rest is this pass's."""
    previous = hit(document=("apps/web.yaml", 3, BLOB), commit="c0", lines=("Deployment/ns/web", "Service/ns/web"))
    kept = run(hits={KEY: previous}, notes_of={})[KEY]  # a new commit: not settled, a new entry
    assert kept.document is previous.document and kept.lines is previous.lines
    assert kept.version == "8" and kept.commit == "c1" and kept.health is HEALTH
