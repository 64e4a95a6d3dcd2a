"""A watched object kept packed (``agent.kube.packed``): read as the plain dict it stands for,
its identity decoded, the rest of its metadata and the rest of it decoded only when read and shed
again beyond the pool's limit."""

import copy
import json
import sys
import threading

import pytest

from agent.kube.packed import HEAD_KEYS, Codec, Head, Loaded, Packed, pack
from agent.kube.share import Memo


def deployment(name: str = "web", replicas: int = 2) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}", "resourceVersion": "7",
                         "labels": {"app": name}, "annotations": {"a": "1"}},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "web", "image": "nginx"}]}}},
            "status": {"replicas": replicas, "conditions": [{"type": "Available", "status": "True"}]}}


def packed(obj: dict | None = None, limit: int = 8) -> tuple[Packed, Codec, Loaded]:
    codec, pool = Codec(), Loaded(limit)
    return pack(copy.deepcopy(obj or deployment()), codec, pool, Memo(), Codec()), codec, pool


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


def test_identity_reads_decode_nothing_and_the_rest_is_decoded_once_until_shed():
    obj, codec, pool = packed()
    assert obj["metadata"]["name"] == "web" and obj.get("kind") == "Deployment"
    assert bool(obj) and (obj or {}) is obj and "metadata" in obj
    assert codec.loads == 0
    assert obj["spec"]["replicas"] == 2 and obj["status"]["replicas"] == 2 and obj.get("spec")
    assert codec.loads == 1 and len(pool) == 1
    obj.shed()
    assert dict.keys(obj) == {"apiVersion", "kind", "metadata"}
    assert obj["status"]["replicas"] == 2 and codec.loads == 2


def test_a_load_leaves_the_dict_s_own_table_at_its_head():
    """The decoded rest is held beside the dict, never in it: a dict's table grows for new keys
    and does not shrink when they go, so an object loaded once would stay larger for good."""
    obj, codec, _ = packed()
    meta, size, meta_size = obj["metadata"], sys.getsizeof(obj), sys.getsizeof(obj["metadata"])
    assert obj["spec"]["replicas"] == 2 and meta["labels"] is not None and obj.get("status") is obj["status"]
    assert dict.keys(obj) == {"apiVersion", "kind", "metadata"} and dict.keys(meta) <= set(HEAD_KEYS)
    obj.shed()
    meta.shed()
    assert sys.getsizeof(obj) == size and sys.getsizeof(meta) == meta_size and obj._rest is None


def test_the_pool_keeps_at_most_its_limit_decoded_the_oldest_shed_first():
    codec, pool, memo = Codec(), Loaded(2), Memo()
    objs = [pack(deployment(f"web-{i}", i), codec, pool, memo, Codec()) for i in range(4)]
    for obj in objs:
        obj.get("spec")
    assert len(pool) == 2
    assert [o._rest is not None for o in objs] == [False, False, True, True]
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
    first = pack(deployment("web-0"), codec, pool, memo, Codec())
    later = [pack(deployment(f"web-{i}", i), codec, pool, memo, Codec()) for i in range(1, 50)]
    rest = len(json.dumps({k: v for k, v in deployment().items() if k not in ("apiVersion", "kind", "metadata")}))
    assert all(len(o._blob) < rest / 3 for o in later) and first["status"]["replicas"] == 2


def test_reads_racing_sheds_never_see_half_an_object():
    codec, pool, memo = Codec(), Loaded(1), Memo()
    objs = [pack(deployment(f"web-{i}", i), codec, pool, memo, Codec()) for i in range(3)]
    wrong, stop = [], threading.Event()

    def read(obj, replicas):
        while not stop.is_set():
            if obj.get("spec", {}).get("replicas") != replicas or obj["status"]["replicas"] != replicas \
                    or "spec" not in obj:
                wrong.append(replicas)
    for_half_a_second([lambda o=o, i=i: read(o, i) for i, o in enumerate(objs)], stop)
    assert wrong == [] and codec.loads > 3


def for_half_a_second(targets, stop: threading.Event) -> None:
    """Run each of ``targets`` in a thread of its own for half a second, then set ``stop`` and join them."""
    threads = [threading.Thread(target=target) for target in targets]
    for t in threads:
        t.start()
    threading.Event().wait(0.5)
    stop.set()
    for t in threads:
        t.join()


# -- the metadata, packed but for its identity (issue 48) --------------------------------------------

OWN = {"f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"web"}': {".": {}, "f:image": {}}}}}}}


def with_fields(name: str = "web") -> dict:
    obj = deployment(name)
    obj["metadata"] = {"name": name, "namespace": "ns", "uid": f"u-{name}", "resourceVersion": "7", "generation": 3,
                       "labels": {"app": name},
                       "ownerReferences": [{"kind": "Application", "name": name, "uid": "u0", "controller": True}],
                       "managedFields": [{"manager": "gitops-agent", "operation": "Apply", "fieldsV1": OWN}]}
    return obj


def test_the_metadata_holds_its_identity_decoded_and_the_rest_until_read():
    heads, pool = Codec(), Loaded(8)
    obj = pack(with_fields(), Codec(), pool, Memo(), heads)
    meta = obj["metadata"]
    assert isinstance(meta, Head) and set(dict.keys(meta)) == {"name", "namespace", "resourceVersion", "generation"}
    assert (meta["name"], meta.get("namespace"), meta["resourceVersion"], meta["generation"]) == ("web", "ns", "7", 3)
    assert "deletionTimestamp" not in meta and meta.get("finalizers") is None and "uid" in meta and bool(meta)
    with pytest.raises(KeyError):
        meta["finalizers"]
    assert heads.loads == 0  # a key it lacks, or its identity: nothing decoded
    assert meta["labels"] == {"app": "web"} and meta["managedFields"][0]["fieldsV1"] == OWN
    assert heads.loads == 1 and len(pool) == 1
    meta.shed()
    assert set(dict.keys(meta)) == set(HEAD_KEYS) - {"deletionTimestamp"}
    assert meta["uid"] == "u-web" and heads.loads == 2


def test_a_packed_metadata_reads_whole_in_its_order_and_refuses_changes():
    obj = pack(with_fields(), Codec(), Loaded(), Memo(), Codec())
    want = with_fields()
    assert obj == want and obj["metadata"] == want["metadata"] and list(obj["metadata"]) == list(want["metadata"])
    assert json.dumps(obj) == json.dumps(want) and copy.deepcopy(obj) == want
    assert dict(obj["metadata"]) == want["metadata"]
    assert type(copy.deepcopy(obj)["metadata"]) is dict and {**obj["metadata"]} == want["metadata"]
    for change in (lambda: obj["metadata"].__setitem__("name", "x"), lambda: obj["metadata"].pop("labels"),
                   lambda: obj["metadata"].setdefault("finalizers", [])):
        with pytest.raises(TypeError):
            change()


def test_the_identity_strings_are_the_memos_and_shared_between_objects():
    memo = Memo()
    a, b = (pack(json.loads(json.dumps(with_fields("web-app"))), Codec(), Loaded(), memo, Codec()) for _ in "ab")
    assert a["metadata"]["name"] is b["metadata"]["name"] and a["metadata"]["namespace"] is b["metadata"]["namespace"]


def test_whole_reads_and_key_reads_of_a_metadata_racing_sheds_see_all_of_it():
    meta = pack(with_fields(), Codec(), Loaded(), Memo(), Codec())["metadata"]
    want = with_fields()["metadata"]
    wrong, stop = [], threading.Event()

    def read():
        while not stop.is_set():
            try:
                if dict(meta) != want or meta["labels"] != {"app": "web"} or meta.get("uid") != "u-web":
                    wrong.append("differs")
            except Exception as err:  # noqa: BLE001 (any error is the finding)
                wrong.append(repr(err))

    def shed():
        while not stop.is_set():
            try:
                meta.shed()
            except Exception as err:  # noqa: BLE001
                wrong.append(repr(err))
    for_half_a_second([read, read, shed], stop)
    assert wrong == []


def test_a_packed_object_merges_as_the_plain_dict_it_stands_for():
    obj, _, _ = packed()
    assert obj | {"x": 1} == {**deployment(), "x": 1} and {"x": 1} | obj == {"x": 1, **deployment()}
    assert json.loads(json.dumps(pack(with_fields(), Codec(), Loaded(), Memo(), Codec()))) == with_fields()
