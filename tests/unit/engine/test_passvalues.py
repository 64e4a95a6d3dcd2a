"""The values a pass hands from stage to stage (``passvalues``): keys, ``Wanted``'s indexes,
``LiveState.by_key`` and ``ChildWave.merged``."""

from __future__ import annotations

from agent.engine.passvalues import ChildWave, LiveState, Wanted, key_of
from agent.manifests.manifest import Manifest


def test_the_key_of_an_object_is_namespace_slash_name():
    assert key_of({"metadata": {"namespace": "ns", "name": "web"}}) == "ns/web"
    assert key_of({"metadata": {"name": "web"}}) == "/web"  # no namespace: an empty one


def test_the_key_is_interned():
    one = key_of({"metadata": {"namespace": "ns", "name": "w" + "eb"}})
    assert one is key_of({"metadata": {"namespace": "n" + "s", "name": "web"}})


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
    live = LiveState(apps, [("ns/a", True, True), ("ns/b", True, False)], [], [], {}, set())
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
