"""The rule that keeps ``run`` from passing on its own writes (``agent/server/triggers.py``)."""

from __future__ import annotations

import pytest

from agent.server import triggers

LABELS = {"app.kubernetes.io/managed-by": "gitops-agent"}


def deployment(replicas=1, ready=1, generation=1, observed=1, rv="10", **meta):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "ns", "uid": "u1", "generation": generation,
                         "resourceVersion": rv, "labels": dict(LABELS), **meta},
            "spec": {"replicas": replicas},
            "status": {"observedGeneration": observed, "replicas": replicas, "updatedReplicas": replicas,
                       "readyReplicas": ready, "availableReplicas": ready}}


def service(port=80, rv="5"):
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "ns", "uid": "u2", "resourceVersion": rv, "labels": dict(LABELS)},
            "spec": {"ports": [{"port": port}]}}


def application(generation=1, status=None, rv="3", labels=None):
    return {"apiVersion": "heumsi.github.io/v1", "kind": "Application",
            "metadata": {"name": "web", "namespace": "ns", "uid": "u0", "generation": generation,
                         "resourceVersion": rv, "labels": labels or {}},
            "spec": {"image": "nginx", "replicas": 1, "port": 80}, "status": status or {}}


@pytest.mark.parametrize("recorded, event, news", [
    (deployment(), deployment(rv="11", managedFields=[{"manager": "x"}]), False),  # only bookkeeping moved
    (deployment(), deployment(generation=2), True),  # kubectl scale / edit
    (deployment(ready=0), deployment(ready=1, rv="12"), True),  # the rollout moved on: status reports it
    (deployment(), deployment(annotations={"note": "by hand"}), True),
    (deployment(), deployment(uid="u9"), True),  # deleted and made again by someone
    (service(), service(rv="6"), False),
    (service(), service(port=81), True),
    (application(), application(status={"observedGeneration": 1}, rv="4"), False),  # a status write
    (application(), application(generation=2), True),
    (application(), application(labels={"team": "a"}), True),
])
def test_news_is_what_a_pass_has_not_seen(recorded, event, news):
    known = triggers.Known()
    known.seen(recorded)
    assert known.news("MODIFIED", event) is news
    assert triggers.Known().news("ADDED", event) is True  # never recorded: news


def test_deletions_are_news_only_for_what_a_pass_saw_live():
    known = triggers.Known()
    assert known.news("DELETED", deployment()) is False  # never seen
    known.seen(deployment())
    assert known.news("DELETED", deployment()) is True  # deleted by hand
    known.gone(deployment())
    assert known.news("DELETED", deployment()) is False  # the agent's own prune


def test_a_relist_is_news_when_something_changed_or_went_away():
    known = triggers.Known()
    known.seen(deployment())
    unlabelled = deployment()
    unlabelled["metadata"].update(name="other", labels={})
    known.seen(unlabelled)  # read by a claim list, not watched
    assert known.relisted("Deployment", [deployment(rv="20")]) is False
    assert known.relisted("Deployment", [deployment(generation=2)]) is True
    assert known.relisted("Deployment", []) is True  # deleted while the watch was away


def test_a_mark_is_a_short_digest_of_the_fingerprint_that_says_whether_the_object_is_watched():
    marks = {triggers.mark(o) for o in (deployment(), deployment(rv="11"), deployment(managedFields=[{"m": 1}]))}
    assert len(marks) == 1 and len(next(iter(marks))) == 17 and next(iter(marks))[:1] == b"w"
    assert triggers.mark(deployment(generation=2)) not in marks
    unlabelled = deployment(labels={})
    assert triggers.mark(unlabelled)[:1] == b"-"
    assert triggers.mark(application(labels={}))[:1] == b"w"  # every Application is watched


def test_a_served_list_recorded_late_never_replaces_a_later_write_or_deletion():
    from agent.kube.livestore import Served

    known = triggers.Known()
    read = [deployment(rv="10"), service(rv="5")]
    recording = triggers.Recording(type("K", (), {"list": lambda self, *a, **k: Served(read)})(), known)
    recording.list("apps", "Deployment")
    written = deployment(generation=2, rv="12")  # the pass's apply, recorded at once
    known.seen(written)
    known.gone(service())  # the pass's prune
    assert known.news("MODIFIED", written) is False  # news flushes first: the write's record stays
    assert known.news("MODIFIED", deployment(rv="10")) is True
    assert known.news("DELETED", service()) is False  # still gone
    assert known.judge(triggers.Sighting.of("MODIFIED", written)) is False


def cluster_with_a_service():
    """The in-memory cluster holding the Service ``ns/web`` (a Service ``ns/other`` labelled c=d)."""
    from tests.unit.fakecluster import FakeCluster

    kube = FakeCluster(namespaces=("ns",))
    for name, labels in (("web", {**LABELS, "a": "b"}), ("other", {"c": "d"})):
        kube.add({"apiVersion": "v1", "kind": "Service", "spec": {"ports": [{"port": 80}]},
                  "metadata": {"name": name, "namespace": "ns", "labels": labels}})
    return kube


def test_recording_records_what_the_pass_reads_and_writes():
    from agent.kinds import registry

    fake, known = cluster_with_a_service(), triggers.Known()
    kube = triggers.Recording(fake, known)
    written = kube.apply(registry.BY_KIND["Deployment"].render("web", "ns", "u0", {"image": "nginx", "port": 80}))
    assert known.news("MODIFIED", written) is False  # its own apply's event
    listed = kube.list("", "Service", "a=b")
    assert [s["metadata"]["name"] for s in listed] == ["web"] and known.news("ADDED", listed[0]) is False
    kube.delete(listed[0])
    assert known.news("DELETED", listed[0]) is False
    assert kube.served("heumsi.github.io", "v1") == {"applications", "applications/status"}  # passed through
    assert fake.writes == [("apply", "Deployment/ns/web"), ("delete", "Service/ns/web")]


@pytest.mark.parametrize("wrapper", ["agent.server.triggers:Recording", "agent.engine.diff:Recording", "agent.engine.scope:ScopedKube"])
def test_every_wrapper_of_kube_takes_every_argument_kube_takes(wrapper):
    """The wrappers stand in for ``Kube`` in a pass; ``run``'s Recording once took three of
    ``list_in``'s four arguments, and every pass of ``run --allowed-namespaces a,b`` ended in a
    TypeError."""
    import importlib
    import inspect

    from agent.kube.client import Kube

    module, name = wrapper.split(":")
    cls = getattr(importlib.import_module(module), name)
    own = [m for m, value in vars(cls).items() if inspect.isfunction(value) and not m.startswith("_")]
    checked = [m for m in own if hasattr(Kube, m)]
    assert checked, f"{wrapper} wraps no Kube method"
    for method in checked:
        params = list(inspect.signature(getattr(Kube, method)).parameters.values())[1:]
        positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        keywords = {p.name: None for p in params if p.kind is p.KEYWORD_ONLY}
        try:
            inspect.signature(getattr(cls, method)).bind(None, *positional, **keywords)
        except TypeError as err:
            pytest.fail(f"{wrapper}.{method} does not take Kube.{method}'s arguments {positional} {keywords}: {err}")


def test_recording_passes_list_ins_label_selector_on():
    known = triggers.Known()
    kube = triggers.Recording(cluster_with_a_service(), known)
    assert [s["metadata"]["name"] for s in kube.list_in("", "Service", "ns", "a=b")] == ["web"]
    assert [s["metadata"]["name"] for s in kube.list_in("", "Service", "ns", label_selector="c=d")] == ["other"]
    assert known.news("ADDED", kube.list_in("", "Service", "ns", "a=b")[0]) is False


def test_a_list_served_by_the_store_records_only_the_objects_it_did_not_serve_before():
    from agent.kube.livestore import Served

    known, fingerprinted = triggers.Known(), []
    real = triggers.fingerprint
    recording = triggers.Recording(type("K", (), {"list": lambda self, *a, **k: served[0]})(), known)
    app, child = application(), deployment()
    served = [Served([app, child])]
    try:
        triggers.fingerprint = lambda obj: fingerprinted.append(obj["kind"]) or real(obj)
        recording.list("", "Deployment")
        recording.list("", "Deployment")  # the same objects: not looked at again
        assert fingerprinted == []  # recorded later, not on the pass's way to its first apply
        known.flush()
        assert fingerprinted == ["Application", "Deployment"]
        served = [Served([application(), deployment()])]  # relisted: other objects, the same versions
        recording.list("", "Deployment")
        known.flush()
        assert fingerprinted == ["Application", "Deployment"]
        newer = deployment(replicas=3, rv="11")  # a watch event replaced it
        served = [Served([app, newer])]
        recording.list("", "Deployment")
        known.flush()
        assert fingerprinted == ["Application", "Deployment", "Deployment"]
        assert not known.news("MODIFIED", newer) and known.news("MODIFIED", child)
    finally:
        triggers.fingerprint = real


def test_a_served_list_once_recorded_does_not_keep_its_objects():
    import gc
    import weakref

    from agent.kube.livestore import Served

    class Obj(dict):
        pass
    known, obj = triggers.Known(), Obj(deployment())
    known.seen_served(("Deployment", None), Served([obj]))
    known.flush()
    gone = weakref.ref(obj)
    del obj
    gc.collect()
    assert gone() is None and not known.news("MODIFIED", deployment())


def test_a_served_list_is_recorded_once_a_pass_has_written_a_sweep_s_worth_of_objects():
    """A status sweep writes every Application: the lists kept back are recorded during it, not
    held through it (their objects are the ones the watches replace, issue 48)."""
    from agent.kube.livestore import Served
    known = triggers.Known()
    listed = deployment()
    known.seen_served(("Deployment", None), Served([listed]))
    apps = [{"apiVersion": "heumsi.github.io/v1", "kind": "Application",
             "metadata": {"namespace": "ns", "name": f"a{i}", "resourceVersion": "2"}} for i in range(triggers.FLUSH_AFTER)]
    for app in apps[:-1]:
        known.seen(app)
    assert known._pending  # a push's handful of writes: kept back
    known.seen(apps[-1])
    assert not known._pending and not known._touched
    assert not known.news("MODIFIED", deployment()) and not known.news("MODIFIED", apps[0])


def test_the_sightings_of_a_sweep_share_their_kind_and_namespace_strings():
    """Events decoded one by one bring their own strings; a Sighting keeps the interned ones
    (10,000 waiting events name one kind and a few namespaces), equal to the identity."""
    import json
    raw = '{"kind": "Application", "metadata": {"namespace": "team-a", "name": "web-%d", "resourceVersion": "1"}}'
    a, b = (triggers.Sighting.of("MODIFIED", json.loads(raw % i)) for i in (1, 2))
    assert a.key == ("Application", "team-a", "web-1") and b.key == ("Application", "team-a", "web-2")
    assert a.key[0] is b.key[0] and a.key[1] is b.key[1]
    assert triggers.Sighting.of("DELETED", {"kind": "X", "metadata": {"name": "n"}}).key == ("X", "", "n")
