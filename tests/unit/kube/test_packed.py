"""A watched object kept packed (``agent.kube.packed``): read as the plain dict it stands for,
its metadata decoded, the rest decoded only when read and shed again beyond the pool's limit."""

import copy
import json
import threading

import pytest

from agent.kube.packed import Codec, Deferred, Loaded, Packed, pack
from agent.kube.share import Memo


def deployment(name: str = "web", replicas: int = 2) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}", "resourceVersion": "7",
                         "labels": {"app": name}, "annotations": {"a": "1"}},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "web", "image": "nginx"}]}}},
            "status": {"replicas": replicas, "conditions": [{"type": "Available", "status": "True"}]}}


def packed(obj: dict | None = None, limit: int = 8) -> tuple[Packed, Codec, Loaded]:
    codec, pool = Codec(), Loaded(limit)
    return pack(copy.deepcopy(obj or deployment()), codec, pool, Memo()), codec, pool


def test_it_reads_as_the_object_it_stands_for():
    obj, _, _ = packed()
    want = deployment()
    assert obj == want and want == obj and not (obj != want)
    assert dict(obj) == want and {**obj} == want and copy.deepcopy(obj) == want
    assert type(copy.deepcopy(obj)) is dict and type(obj.copy()) is dict
    assert json.loads(json.dumps(obj)) == want
    assert list(obj) == list(want) and len(obj) == len(want) and sorted(obj.keys()) == sorted(want)
    assert obj["spec"]["replicas"] == 2 and obj.get("status")["replicas"] == 2
    assert "status" in obj and "nothing" not in obj and obj.get("nothing", 5) == 5
    with pytest.raises(KeyError):
        obj["nothing"]


def test_metadata_reads_decode_nothing_and_the_rest_is_decoded_once_until_shed():
    obj, codec, pool = packed()
    assert obj["metadata"]["labels"] == {"app": "web"} and obj.get("kind") == "Deployment"
    assert bool(obj) and (obj or {}) is obj and "metadata" in obj
    assert codec.loads == 0
    assert obj["spec"]["replicas"] == 2 and obj["status"]["replicas"] == 2 and obj.get("spec")
    assert codec.loads == 1 and len(pool) == 1
    obj.shed()
    assert dict.keys(obj) == {"apiVersion", "kind", "metadata"}
    assert obj["status"]["replicas"] == 2 and codec.loads == 2


def test_the_pool_keeps_at_most_its_limit_decoded_the_oldest_shed_first():
    codec, pool, memo = Codec(), Loaded(2), Memo()
    objs = [pack(deployment(f"web-{i}", i), codec, pool, memo) for i in range(4)]
    for obj in objs:
        obj.get("spec")
    assert len(pool) == 2
    assert [dict.__contains__(o, "spec") for o in objs] == [False, False, True, True]
    assert [o["spec"]["replicas"] for o in objs] == [0, 1, 2, 3]  # a shed one decodes again


def test_a_part_read_before_a_shed_stays_whole():
    obj, _, _ = packed()
    spec = obj["spec"]
    obj.shed()
    assert spec["replicas"] == 2 and spec["template"]["spec"]["containers"][0]["image"] == "nginx"


def test_it_refuses_changes_as_a_shared_part_does():
    obj, _, _ = packed()
    for change in (lambda: obj.__setitem__("spec", {}), lambda: obj.pop("spec"), lambda: obj.update(a=1),
                   lambda: obj.__delitem__("kind"), lambda: obj.setdefault("new", 1), obj.clear,
                   lambda: obj["metadata"].__setitem__("name", "x")):
        with pytest.raises(TypeError):
            change()
    assert obj.setdefault("kind", "Other") == "Deployment"  # present: no change, as a list's reader asks


def test_similar_objects_pack_small_against_the_kinds_dictionary():
    codec, pool, memo = Codec(), Loaded(), Memo()
    first = pack(deployment("web-0"), codec, pool, memo)
    later = [pack(deployment(f"web-{i}", i), codec, pool, memo) for i in range(1, 50)]
    rest = len(json.dumps({k: v for k, v in deployment().items() if k not in ("apiVersion", "kind", "metadata")}))
    assert all(len(o._blob) < rest / 3 for o in later) and first["status"]["replicas"] == 2


def test_reads_racing_sheds_never_see_half_an_object():
    codec, pool, memo = Codec(), Loaded(1), Memo()
    objs = [pack(deployment(f"web-{i}", i), codec, pool, memo) for i in range(3)]
    wrong, stop = [], threading.Event()

    def read(obj, replicas):
        while not stop.is_set():
            if obj.get("spec", {}).get("replicas") != replicas or obj["status"]["replicas"] != replicas \
                    or "spec" not in obj:
                wrong.append(replicas)
    threads = [threading.Thread(target=read, args=(o, i)) for i, o in enumerate(objs)]
    for t in threads:
        t.start()
    threading.Event().wait(0.5)
    stop.set()
    for t in threads:
        t.join()
    assert wrong == [] and codec.loads > 3


# -- the agent's own fieldsV1 trie, deferred (issue 48) ---------------------------------------------

OWN = {"f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"web"}': {".": {}, "f:image": {}}}}}}}
THEIRS = {"f:metadata": {"f:annotations": {"f:deployment.kubernetes.io/revision": {}}}}


def with_fields(name: str = "web") -> dict:
    obj = deployment(name)
    obj["metadata"]["managedFields"] = [
        {"manager": "gitops-agent", "operation": "Apply", "apiVersion": "apps/v1", "fieldsV1": copy.deepcopy(OWN)},
        {"manager": "kube-controller-manager", "operation": "Update", "subresource": "status",
         "fieldsV1": copy.deepcopy(THEIRS)},
        {"manager": "gitops-agent", "operation": "Apply", "fieldsV1": {}}]
    return obj


def test_the_agents_own_trie_is_kept_compressed_and_reads_as_the_plain_trie():
    tries = Codec()
    obj = pack(with_fields(), Codec(), Loaded(), Memo(), tries)
    own, theirs, empty = (e["fieldsV1"] for e in obj["metadata"]["managedFields"])
    assert isinstance(own, Deferred) and type(theirs) is not Deferred and type(empty) is not Deferred
    assert own == OWN and OWN == own and not (own != OWN) and repr(own) == repr(OWN)
    assert dict(own) == OWN and {**own} == OWN and own | {} == OWN and {} | own == OWN
    assert list(own) == list(OWN) and len(own) == 1 and bool(own) and "f:spec" in own and "f:x" not in own
    assert own["f:spec"] == OWN["f:spec"] and own.get("f:x", 3) == 3 and list(own.items()) == list(OWN.items())
    assert type(copy.deepcopy(own)) is dict and type(own.copy()) is dict and copy.copy(own) == OWN
    assert json.dumps(own) == json.dumps(OWN) and json.loads(json.dumps(obj)) == with_fields()
    assert copy.deepcopy(obj) == with_fields() and tries.loads > 0
    with pytest.raises(KeyError):
        own["f:x"]
    with pytest.raises(TypeError):
        own["f:x"] = {}


def test_each_read_of_a_deferred_trie_is_a_new_dict_a_reader_may_change():
    own = pack(with_fields(), Codec(), Loaded(), Memo(), Codec())["metadata"]["managedFields"][0]["fieldsV1"]
    first = own.value()
    first["f:spec"]["f:x"] = {}
    assert own == OWN and own.value() is not first


def test_without_a_codec_for_tries_nothing_is_deferred_and_others_tries_stay_shared():
    memo = Memo()
    a = pack(with_fields("a"), Codec(), Loaded(), memo)
    assert not any(isinstance(e["fieldsV1"], Deferred) for e in a["metadata"]["managedFields"])
    tries = Codec()
    b, c = (pack(with_fields(n), Codec(), Loaded(), memo, tries) for n in "bc")
    assert b["metadata"]["managedFields"][1] is c["metadata"]["managedFields"][1]  # equal parts still shared
    assert b["metadata"]["managedFields"][0]["fieldsV1"] is not c["metadata"]["managedFields"][0]["fieldsV1"]


def test_a_packed_object_merges_as_the_plain_dict_it_stands_for():
    obj, _, _ = packed()
    assert obj | {"x": 1} == {**deployment(), "x": 1} and {"x": 1} | obj == {"x": 1, **deployment()}
    assert "\0deferred" not in json.dumps(pack(with_fields(), Codec(), Loaded(), Memo(), Codec()))
