"""The values a pass hands from stage to stage (``passvalues``): keys, ``Wanted``'s indexes,
``LiveState.by_key`` and ``ChildWave.merged``; and the facts ``livestate`` derives from the live
objects (the previous pass's hits, each child's and Application's facts)."""

from __future__ import annotations

from types import SimpleNamespace

from agent.engine import livestate
from agent.engine.passvalues import AppFacts, AppsApplied, ChildWave, LiveState, Wanted, key_of
from agent.engine.steady import Entry, Steady
from agent.manifests.manifest import Manifest


def test_the_key_of_an_object_is_namespace_slash_name():
    assert key_of({"metadata": {"namespace": "ns", "name": "web"}}) == "ns/web"
    assert key_of({"metadata": {"name": "web"}}) == "/web"  # no namespace: an empty one


def test_the_key_is_interned():
    one = key_of({"metadata": {"namespace": "ns", "name": "w" + "eb"}})
    assert one is key_of({"metadata": {"namespace": "n" + "s", "name": "web"}})


def test_the_sweep_lets_go_of_an_application_keeping_only_what_remember_reads():
    def app(name: str) -> dict:
        return {"apiVersion": "heumsi.github.io/v1", "kind": "Application", "spec": {"image": "x"},
                "metadata": {"namespace": "ns", "name": name, "uid": "u-" + name, "resourceVersion": "4",
                             "labels": {"a": "b"}}, "status": {"health": {}}}
    web, bad, kept = app("web"), app("bad"), app("kept")
    applied = AppsApplied({"ns/web": web, "ns/kept": kept}, {"ns/bad": bad}, frozenset())
    assert applied.let_go(["ns/web", "ns/gone", "ns/bad"]) == [web, bad]
    assert applied.in_scope["ns/web"] == {"apiVersion": "heumsi.github.io/v1", "kind": "Application", "metadata": {
        "namespace": "ns", "name": "web", "uid": "u-web", "resourceVersion": "4"}}
    assert applied.failed["ns/bad"]["metadata"] == {"namespace": "ns", "name": "bad", "uid": "u-bad", "resourceVersion": "4"}
    assert applied.in_scope["ns/kept"] is kept and "ns/gone" not in applied.in_scope and "ns/gone" not in applied.failed
    assert Steady(versions=lambda kind, ns, name, read: read).after(applied.in_scope["ns/web"]) == "4"


def test_wanted_indexes_its_manifests_by_key():
    a, b = Manifest("ns", "a", {}, "apps/a.yaml", 1), Manifest("other", "b", {}, "b.yaml", 7)
    git = Wanted([a, b], blobs={"apps/a.yaml": "x"})
    assert git.keys == ["ns/a", "other/b"]
    assert git.paths == {"ns/a": "apps/a.yaml", "other/b": "b.yaml"}
    assert git.lines == {"ns/a": 1, "other/b": 7}
    assert git.keys[0] is key_of({"metadata": {"namespace": "ns", "name": "a"}})  # the same interned key
    assert (git.blobs, git.problems, git.outside) == ({"apps/a.yaml": "x"}, [], 0)
    empty = Wanted([])
    assert (empty.keys, empty.paths, empty.lines, empty.blobs) == ([], {}, {}, {})


def test_the_live_applications_by_key():
    apps = [{"metadata": {"namespace": "ns", "name": "a"}}, {"metadata": {"namespace": "ns", "name": "b"}}]
    live = LiveState(apps, [AppFacts("ns/a", True, True, True, (), False), AppFacts("ns/b", True, False, False, (), False)],
                     [], [], {}, set())
    assert live.by_key() == {"ns/a": apps[0], "ns/b": apps[1]}


def test_two_waves_merged_hold_both():
    one = ChildWave(frozenset({("", "Service", "ns", "a")}), {"ns/a": {"Service": {"s": 1}}}, frozenset({"ns/a"}),
                    {"ns/a": {"Deployment": "Deployment/ns/a"}}, {"ns/a": {"Service"}}, frozenset({"ns/a"}))
    two = ChildWave(frozenset({("apps", "Deployment", "ns", "b")}), {"ns/b": {"Deployment": {"d": 2}}},
                    frozenset({"ns/b"}), {"ns/b": {"Service": "Service/ns/b"}}, {"ns/b": {"Deployment"}},
                    frozenset({"ns/b"}))
    assert one.merged(two) == ChildWave(
        frozenset({("", "Service", "ns", "a"), ("apps", "Deployment", "ns", "b")}),
        {"ns/a": {"Service": {"s": 1}}, "ns/b": {"Deployment": {"d": 2}}}, frozenset({"ns/a", "ns/b"}),
        {"ns/a": {"Deployment": "Deployment/ns/a"}, "ns/b": {"Service": "Service/ns/b"}},
        {"ns/a": {"Service"}, "ns/b": {"Deployment"}}, frozenset({"ns/a", "ns/b"}))
    assert ChildWave().merged(ChildWave()) == ChildWave()


BLOB = "b" * 40
DEPLOY_ID = ("apps", "Deployment", "ns", "web")


def steady_with(entries: dict) -> Steady:
    return Steady(entries=entries)


def entry(**changes) -> Entry:
    values = dict(document=("apps/web.yaml", 3, BLOB), version="7", children=((DEPLOY_ID, "5"),), commit="c1",
                  source_seen=True, lines=(), health={}, readiness=None, synced=None)
    values.update(changes)
    return Entry(**values)


def unchanged_hits(*, steady: Steady | None, this: bool = True, blobs=None, live_apps=None, children_of=None) -> dict:
    git = Wanted([Manifest("ns", "web", {}, "apps/web.yaml", 3)], blobs={"apps/web.yaml": BLOB} if blobs is None
                 else blobs)
    p = SimpleNamespace(steady=steady, git=git)
    app = {"metadata": {"namespace": "ns", "name": "web", "resourceVersion": "7"}}
    live = LiveState([app], [AppFacts("ns/web", True, this, this, (), False)], [], [],
                     {"ns/web": [({}, DEPLOY_ID, (DEPLOY_ID, "5"))]} if children_of is None else children_of, set())
    return livestate.unchanged(p, live, {"ns/web": app} if live_apps is None else live_apps)


def test_an_application_as_the_previous_pass_left_it_is_a_hit():
    kept = entry()
    assert unchanged_hits(steady=steady_with({"ns/web": kept})) == {"ns/web": kept}
    bare = entry(children=())
    assert unchanged_hits(steady=steady_with({"ns/web": bare}), children_of={}) == {"ns/web": bare}


def test_no_hit_without_a_previous_pass_or_when_anything_moved():
    assert unchanged_hits(steady=None) == {}
    assert unchanged_hits(steady=steady_with({})) == {}
    kept = {"ns/web": entry()}
    assert unchanged_hits(steady=steady_with(kept), this=False) == {}  # another source took it
    assert unchanged_hits(steady=steady_with(kept), blobs={}) == {}  # no blob id: cannot tell
    assert unchanged_hits(steady=steady_with(kept), live_apps={}) == {}  # gone from the cluster
    assert unchanged_hits(steady=steady_with(kept), children_of={}) == {}  # its child is gone
    assert unchanged_hits(steady=steady_with({"ns/web": entry(version="8")})) == {}


def test_the_facts_of_a_live_child():
    owned = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
        "namespace": "ns", "name": "web", "resourceVersion": "5", "labels": {"app.kubernetes.io/managed-by":
                                                                            "gitops-agent"},
        "managedFields": [{"manager": "gitops-agent", "operation": "Apply"}],
        "ownerReferences": [{"apiVersion": "heumsi.github.io/v1", "kind": "Application", "name": "web",
                             "controller": True, "uid": "u"}]}}
    assert livestate.child_facts(owned) == (DEPLOY_ID, "ns/web", (DEPLOY_ID, "5"))
    copied = {**owned, "metadata": {**owned["metadata"], "managedFields": []}}  # labels copied: not the agent's
    assert livestate.child_facts(copied) == (DEPLOY_ID, None, (DEPLOY_ID, "5"))
    no_version = {**owned, "metadata": {k: v for k, v in owned["metadata"].items() if k != "resourceVersion"}}
    assert livestate.child_facts(no_version) == (DEPLOY_ID, "ns/web", (DEPLOY_ID, None))
    steady = Steady()
    assert livestate._facts(steady, owned) == livestate.child_facts(owned) == livestate._facts(None, owned)
    assert steady.fact(owned, lambda obj: "not derived again") == livestate.child_facts(owned)


def test_the_facts_of_a_live_application():
    app = {"apiVersion": "heumsi.github.io/v1", "kind": "Application", "metadata": {
        "namespace": "ns", "name": "web", "labels": {"app.kubernetes.io/managed-by": "gitops-agent",
                                                     "heumsi.github.io/source": "other"},
        "managedFields": [{"manager": "gitops-agent", "operation": "Apply"}]}}
    p = SimpleNamespace(steady=None, opts=SimpleNamespace(source_id="mine", former_source_ids=()))
    assert livestate.app_facts(p, [app])[0] == AppFacts("ns/web", True, False, False, (), False)
    p = SimpleNamespace(steady=None, opts=SimpleNamespace(source_id="mine", former_source_ids=("other",)))
    # a former id of this source (issue 46): this source's, not this id's
    assert livestate.app_facts(p, [app])[0] == AppFacts("ns/web", True, True, False, (), False)
    p = SimpleNamespace(steady=Steady(), opts=SimpleNamespace(source_id="other", former_source_ids=()))
    assert livestate.app_facts(p, [app])[0] == AppFacts("ns/web", True, True, True, (), False)
    assert p.steady.fact(app, lambda obj: "not derived again") == AppFacts("ns/web", True, True, True, (), False)
    hand = {**app, "metadata": {**app["metadata"], "labels": {}}}
    assert livestate.app_facts(p, [hand])[0] == AppFacts("ns/web", False, False, False, (), False)
    p = SimpleNamespace(steady=None, opts=SimpleNamespace(source_id="mine", former_source_ids=("before",)))
    assert not livestate.app_facts(p, [app])[0].this  # another id than a former one
    failing = {**app, "status": {"lastSyncedCommit": "c" * 40, "failures": 2, "observedGeneration": 3},
               "metadata": {**app["metadata"], "generation": 3}}
    assert livestate.app_facts(p, [failing])[0] == AppFacts("ns/web", True, False, False, ("c" * 40,), True)


def test_equal_recorded_commits_are_one_tuple():
    derive = livestate.deriver(SimpleNamespace(source_id="mine", former_source_ids=()))
    apps = [{"metadata": {"namespace": "ns", "name": n, "generation": 1},
             "status": {"lastSyncedCommit": "c" * 40, "observedGeneration": 1}} for n in ("a", "b")]
    one, two = (derive(app).recorded for app in apps)
    assert one == ("c" * 40,) and one is two
    for i in range(livestate.SHARED_RECORDS + 2):  # distinct ones: kept up to a bound
        derive({"metadata": {"namespace": "ns", "name": "x", "generation": 1},
                "status": {"lastSyncedCommit": f"{i:040d}", "observedGeneration": 1}})
    assert derive(apps[0]).recorded == ("c" * 40,)
    other = {"metadata": {"namespace": "ns", "name": "d", "generation": 1},
             "status": {"lastSyncedCommit": "d" * 40, "observedGeneration": 1}}
    assert derive(other).recorded == ("d" * 40,) and derive(apps[1]).recorded == ("c" * 40,)  # each its own
