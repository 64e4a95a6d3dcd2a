"""The store ``run``'s passes read instead of listing: when it may be read, and what it holds."""

import json
import threading
import time

from agent.kinds import deployment
from agent.kube.livestore import LiveStore, Served, StoreKube
from agent.kube.packed import Head, Packed
from tests.unit.fakecluster import FakeCluster

SELECTOR = "app.kubernetes.io/managed-by=gitops-agent"


def dep(name: str, rv: str, uid: str = "u", namespace: str = "ns", **extra) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "resourceVersion": rv, "uid": uid,
                         "managedFields": [{"manager": "gitops-agent", "operation": "Apply", "fieldsV1": {}}]},
            "spec": {"replicas": 1}, **extra}


def store_with(*items, rv="10") -> LiveStore:
    store = LiveStore()
    store.watching("apps", "Deployment", SELECTOR)
    store.listed("Deployment", [store.item("Deployment", i) for i in items], rv)
    return store


def names(items) -> list[str]:
    return sorted(i["metadata"]["name"] for i in items)


def test_a_kind_is_read_only_after_its_first_list_and_with_the_watchs_selector():
    store = LiveStore()
    store.watching("apps", "Deployment", SELECTOR)
    assert store.read("Deployment", SELECTOR, wait=0) == (None, "its watch has not listed since it started or lost events")
    store.listed("Deployment", [store.item("Deployment", dep("a", "5"))], "10")
    items, why = store.read("Deployment", SELECTOR, wait=0)
    assert names(items) == ["a"] and why == ""
    assert store.read("Deployment", None, wait=0)[0] is None
    assert store.read("Service", SELECTOR, wait=0) == (None, "not watched")
    assert store.reads == {"store": 1, "list": 2}


def test_events_keep_and_forget_and_the_list_replaces_everything():
    store = store_with(dep("a", "5"), dep("b", "6"))
    store.event("Deployment", "MODIFIED", dep("a", "11", spec_changed=True))
    store.event("Deployment", "ADDED", dep("c", "12"))
    store.event("Deployment", "DELETED", dep("b", "13"))
    items, _ = store.read("Deployment", SELECTOR, wait=0)
    assert names(items) == ["a", "c"] and next(i for i in items if i["metadata"]["name"] == "a")["spec_changed"]
    store.listed("Deployment", [store.item("Deployment", dep("z", "20"))], "20")
    assert names(store.read("Deployment", SELECTOR, wait=0)[0]) == ["z"]
    assert store.read("Deployment", SELECTOR, namespace="other", wait=0)[0] == []


def test_a_lost_watch_is_not_read_until_it_lists_again_and_a_dropped_one_until_it_reconnects():
    store = store_with(dep("a", "5"))
    store.interrupted("Deployment", lost=False)
    assert store.read("Deployment", SELECTOR, wait=0) == (None, "its watch is reconnecting")
    store.progress("Deployment", "11")  # the next request answered
    assert store.read("Deployment", SELECTOR, wait=0)[0] is not None
    store.interrupted("Deployment", lost=True)  # 410 Gone: events were lost
    store.event("Deployment", "MODIFIED", dep("a", "12"))  # a late event does not make it whole
    assert store.read("Deployment", SELECTOR, wait=0)[1] == "its watch has not listed since it started or lost events"
    store.listed("Deployment", [store.item("Deployment", dep("a", "30"))], "30")
    assert store.read("Deployment", SELECTOR, wait=0)[0] is not None


def test_a_pass_never_reads_a_kind_before_the_watch_delivered_its_own_last_write():
    store = store_with(dep("a", "5"))
    store.written(dep("a", "15"))
    assert store.read("Deployment", SELECTOR, wait=0) == (
        None, "the watch has not yet delivered resourceVersion 15 (the pass's last write)")
    threading.Timer(0.1, store.event, ("Deployment", "MODIFIED", dep("a", "15"))).start()
    started = time.monotonic()
    items, _ = store.read("Deployment", SELECTOR, wait=60)  # waits for the event, not for the timeout
    # items at all: the event came within the wait; and before it ran out (60 s: no load delays a
    # 0.1 s timer that long), so the read ended on the event
    assert items[0]["metadata"]["resourceVersion"] == "15" and time.monotonic() - started < 60
    store.written(dep("a", "17"))
    store.progress("Deployment", "18")  # a bookmark past it counts as well
    assert store.read("Deployment", SELECTOR, wait=0)[0] is not None


def test_the_version_after_a_pass_counts_its_own_writes():
    store = store_with(dep("a", "5"))
    assert store.version_after("Deployment", "ns", "a", "5") == "5"
    store.written(dep("a", "15"))
    assert store.version_after("Deployment", "ns", "a", "5") == "15"
    assert store.version_after("Deployment", "ns", "a", "20") == "20"  # changed since by someone else
    assert store.version_after("Service", "ns", "a", "5") is None
    assert store.version_after("Deployment", "ns", "a", None) is None


def test_a_deletion_hides_the_object_until_its_deleted_event_and_only_that_uid():
    store = store_with(dep("a", "5", uid="old"))
    store.deleted(dep("a", "5", uid="old"))
    assert store.read("Deployment", SELECTOR, wait=0)[0] == []
    store.event("Deployment", "MODIFIED", dep("a", "6", uid="old", metadata_deleting=True))  # the GC's update
    assert store.read("Deployment", SELECTOR, wait=0)[0] == []
    store.event("Deployment", "ADDED", dep("a", "8", uid="new"))  # made again
    assert names(store.read("Deployment", SELECTOR, wait=0)[0]) == ["a"]


def test_a_resource_version_that_is_not_an_integer_makes_the_kind_listed_always():
    store = store_with(dep("a", "5"))
    store.event("Deployment", "MODIFIED", dep("a", "abc"))
    assert store.read("Deployment", SELECTOR, wait=0)[1] == "the API server's resourceVersions are not integers"


def test_the_store_keeps_a_copy_of_an_event_and_leaves_the_watchs_object_alone():
    store, original = store_with(), dep("a", "11", status={"conditions": [{"type": "X", "status": "True"}] * 3})
    before = repr(original)
    store.event("Deployment", "ADDED", original)
    assert repr(original) == before
    items, _ = store.read("Deployment", SELECTOR, wait=0)
    assert items[0] is not original and items[0]["metadata"]["name"] == "a"


def test_list_items_are_kept_in_the_form_a_pass_reads():
    store = store_with()
    kept = store.item("Deployment", {"metadata": {"name": "a", "namespace": "ns", "resourceVersion": "3"}})
    assert kept["kind"] == "Deployment" and kept["apiVersion"] == "apps/v1"
    assert store.item("Pod", {"x": 1}) == {"x": 1}  # not watched: as it is


def test_children_keep_their_metadata_packed_but_their_identity_and_share_its_strings_through_one_memo():
    store = LiveStore()
    store.watching("apps", "Deployment", SELECTOR)
    store.watching("", "Service", SELECTOR)
    labels = {"app.kubernetes.io/instance": "web", "heumsi.github.io/application": "web"}
    owner = [{"kind": "Application", "name": "web-app", "uid": "u0", "controller": True}]
    d = store.item("Deployment", json.loads(json.dumps({"metadata": {
        "name": "web-app", "namespace": "team-a", "labels": labels, "resourceVersion": "10007",
        "ownerReferences": owner}})))
    s = store.item("Service", json.loads(json.dumps({"metadata": {
        "name": "web-app", "namespace": "team-a", "labels": labels, "ownerReferences": owner},
        "spec": {"selector": labels}})))  # decoded apart: equal strings, not the same ones
    assert isinstance(s, Packed) and isinstance(s["metadata"], Head)
    assert dict.keys(s["metadata"]) == {"name", "namespace"} and dict.keys(d["metadata"]) == {"name", "namespace",
                                                                                               "resourceVersion"}
    assert s["metadata"]["name"] is d["metadata"]["name"] and s["metadata"]["namespace"] is d["metadata"]["namespace"]
    assert s["metadata"]["labels"] == labels and s["metadata"]["ownerReferences"] == owner
    assert s.get("spec") == {"selector": labels} and list(d["metadata"]) == ["name", "namespace", "labels",
                                                                           "resourceVersion", "ownerReferences"]


def test_the_pass_kube_reads_the_store_or_lists_and_tells_the_store_its_writes():
    cluster = FakeCluster(namespaces=("ns",))
    cluster.add(deployment.KIND.render("listed", "ns", "u", {"image": "nginx:1.27", "replicas": 1}))
    store = store_with(dep("a", "5"))
    kube = StoreKube(cluster, store)
    served = kube.list("apps", "Deployment", SELECTOR)
    assert isinstance(served, Served) and names(served) == ["a"] and cluster.requests == []
    assert names(kube.list("apps", "Deployment", None)) == ["listed"]  # the store keeps only the selector's
    assert [(r.verb, r.kind, r.selector) for r in cluster.requests] == [("list", "Deployment", None)]
    written = kube.apply(deployment.KIND.render("a", "ns", "u", {"image": "nginx:1.27", "replicas": 1}))
    version = written["metadata"]["resourceVersion"]
    assert store.read("Deployment", SELECTOR, wait=0)[0] is None  # its version not delivered yet
    assert names(kube.list("apps", "Deployment", SELECTOR)) == ["a", "listed"]  # so listed from the cluster
    store.event("Deployment", "MODIFIED", dep("a", version, uid=written["metadata"]["uid"]))  # the watch delivers it
    kube.delete(written)
    sent = len(cluster.requests)
    assert kube.list_in("apps", "Deployment", "ns", SELECTOR) == []  # from the store, the deleted one hidden
    assert len(cluster.requests) == sent and cluster.stored("Deployment", "ns", "a") is None


def test_applications_are_kept_decoded_and_children_packed():
    store = LiveStore()
    store.watching("heumsi.github.io", "Application", None)
    store.watching("apps", "Deployment", SELECTOR)
    app = store.item("Application", {"metadata": {"name": "web", "namespace": "ns"}, "status": {"failures": 1}})
    kept = store.item("Deployment", dep("web", "5"))
    assert type(app) is dict and app["status"] == {"failures": 1}  # every pass reads its status
    assert isinstance(kept, Packed)


def test_settle_lets_the_memo_forget_the_parts_of_replaced_objects():
    old = "-".join(["team", "old"])  # made here: no constant of this module holds it
    store = store_with(dep("a", "10005", namespace=old), dep("a", "10005", namespace="team-new"))
    store.event("Deployment", "DELETED", dep("a", "10006", namespace="team-old"))  # ``old`` used by nothing now
    del old
    before = set(store._memo._parts)
    store.settle()
    assert before - set(store._memo._parts) == {"team-old"}
    assert [o["metadata"]["namespace"] for o in store.read("Deployment", SELECTOR, wait=0)[0]] == ["team-new"]


def test_the_version_after_the_passes_writes_is_the_read_string_itself_unless_a_write_is_newer():
    store = store_with(dep("a", "10005"))
    read = "".join(["100", "05"])
    assert store.version_after("Deployment", "ns", "a", read) is read
    store.written(dep("a", "10009"))
    assert store.version_after("Deployment", "ns", "a", read) == "10009"
    assert store.version_after("Deployment", "ns", "a", "10012") == "10012"
    assert store.version_after("Service", "ns", "a", read) is None
    assert store.version_after("Deployment", "ns", "a", "x") is None


def test_a_replaced_application_keeps_the_parts_of_the_one_it_replaces():
    """A MODIFIED Application (its status written) holds the spec and annotations objects of the
    Application it replaces; what changed is new."""
    store = LiveStore()
    store.watching("heumsi.github.io", "Application", None)

    def app(rv: str, revision: str) -> dict:
        return {"apiVersion": "heumsi.github.io/v1", "kind": "Application",
                "metadata": {"name": "web", "namespace": "ns", "resourceVersion": rv, "uid": "u1",
                             "annotations": {"heumsi.github.io/source-path": "apps/web.yaml"}},
                "spec": {"image": "nginx:1", "port": 80}, "status": {"revision": revision}}
    store.listed("Application", [store.item("Application", app("5", "c1"))], "5")
    (old,), _ = store.read("Application", None, wait=0)
    store.settle()  # between passes: the memo forgets what one object alone uses
    store.event("Application", "MODIFIED", app("6", "c2"))
    (new,), _ = store.read("Application", None, wait=0)
    assert new == app("6", "c2")
    assert new["spec"] is old["spec"] and new["metadata"]["annotations"] is old["metadata"]["annotations"]
    assert new["status"] is not old["status"] and new["metadata"]["resourceVersion"] == "6"


def test_a_relist_keeps_each_object_the_store_holds_at_the_same_resource_version():
    """A re-list hands back the store's own object for every unchanged item (same
    resourceVersion), a new one for a changed item; the new list still replaces everything."""
    store = store_with(dep("a", "5"), dep("b", "6"))
    before, _ = store.read("Deployment", SELECTOR, wait=0)
    old = {i["metadata"]["name"]: i for i in before}
    again = [store.item("Deployment", dep("a", "5")), store.item("Deployment", dep("b", "9", spec_changed=True)),
             store.item("Deployment", dep("c", "10"))]
    assert again[0] is old["a"] and again[1] is not old["b"] and again[1]["spec_changed"]
    store.listed("Deployment", again, "20")
    after, _ = store.read("Deployment", SELECTOR, wait=0)
    assert names(after) == ["a", "b", "c"] and next(i for i in after if i["metadata"]["name"] == "a") is old["a"]
    assert store.item("Deployment", dep("a", "")) is not old["a"]  # no version: nothing to tell it by
