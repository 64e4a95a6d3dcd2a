"""share: equal parts of live objects are one object, frozen, and still plain JSON values."""

import copy
import json

import pytest

from agent.kube import share
from agent.manifests import yamlwrite


def deployment(name: str, uid: str) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "uid": uid, "labels": {"app": name},
                         "managedFields": [{"manager": "gitops-agent", "operation": "Apply", "fieldsV1": {}}]},
            "spec": {"replicas": 1, "strategy": {"type": "RollingUpdate",
                                                 "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}}}


def test_equal_parts_of_two_objects_are_one_object_and_the_result_is_equal():
    memo = share.Memo()
    a, b = memo.share(deployment("a", "1")), memo.share(deployment("b", "2"))
    assert a == deployment("a", "1") and b == deployment("b", "2")
    assert a["spec"] is b["spec"]
    assert a["metadata"]["managedFields"] is b["metadata"]["managedFields"]
    assert a["metadata"] is not b["metadata"] and a["metadata"]["labels"] is not b["metadata"]["labels"]
    assert a["kind"] is b["kind"]


def test_equal_strings_are_one_string():
    memo = share.Memo()
    first, second = memo.share(["".join(["na", "me"])]), memo.share(["".join(["nam", "e"])])
    assert first[0] is second[0]


def test_the_top_level_stays_a_plain_changeable_dict_or_list():
    memo = share.Memo()
    obj = memo.share(deployment("a", "1"))
    assert type(obj) is dict
    obj["status"] = {}
    assert type(memo.share([1, 2])) is list


def test_json_values_of_equal_python_value_but_other_type_are_not_shared():
    memo = share.Memo()
    one, true, one_float = (memo.share({"x": {"v": v}}) for v in (1, True, 1.0))
    assert one["x"] is not true["x"] and one["x"] is not one_float["x"]
    assert json.dumps(true) == '{"x": {"v": true}}' and json.dumps(one_float) == '{"x": {"v": 1.0}}'
    assert type(one["x"]["v"]) is int and type(true["x"]["v"]) is bool
    lists = [memo.share({"x": [v]})["x"] for v in (0, False, 0.0, None)]
    assert len({id(part) for part in lists}) == 4


def test_a_mapping_and_a_list_or_a_different_order_are_not_the_same_part():
    memo = share.Memo()
    assert memo.share({"x": {}})["x"] is not memo.share({"x": []})["x"]
    ab, ba = memo.share({"x": {"a": 1, "b": 2}})["x"], memo.share({"x": {"b": 2, "a": 1}})["x"]
    assert ab == ba and list(ab) == ["a", "b"] and list(ba) == ["b", "a"]  # key order is kept
    assert memo.share({"x": {"a": 1}})["x"] is not memo.share({"x": {"a": 1, "b": 2}})["x"]
    assert memo.share({"x": [1]})["x"] is not memo.share({"x": [1, 1]})["x"]


def test_a_hash_collision_leaves_the_part_unshared_not_wrong(monkeypatch):
    memo = share.Memo()
    monkeypatch.setattr(share, "hash", lambda key: 7, raising=False)  # every part collides
    a = memo.share({"x": {"v": 1}, "y": {"v": True}, "z": [1], "w": [True], "u": {"w": 2}})
    assert a == {"x": {"v": 1}, "y": {"v": True}, "z": [1], "w": [True], "u": {"w": 2}}
    assert type(a["y"]["v"]) is bool and type(a["w"][0]) is bool and a["u"] == {"w": 2}
    b = memo.share({"x": {"v": 1}})
    assert b["x"] is a["x"]  # the first part holding the hash is still shared


@pytest.mark.parametrize("change", [
    lambda d: d.__setitem__("k", 1), lambda d: d.__delitem__("a"), lambda d: d.setdefault("k", 1),
    lambda d: d.pop("a"), lambda d: d.popitem(), lambda d: d.update(k=1), lambda d: d.clear(),
    lambda d: d.__ior__({"k": 1}),
])
def test_a_shared_mapping_refuses_every_change(change):
    part = share.Memo().share({"x": {"a": 1}})["x"]
    with pytest.raises(TypeError, match="shared part of live objects"):
        change(part)
    assert part == {"a": 1}


@pytest.mark.parametrize("change", [
    lambda l: l.__setitem__(0, 9), lambda l: l.__delitem__(0), lambda l: l.append(9), lambda l: l.extend([9]),
    lambda l: l.insert(0, 9), lambda l: l.pop(), lambda l: l.remove(1), lambda l: l.clear(), lambda l: l.sort(),
    lambda l: l.reverse(), lambda l: l.__iadd__([9]), lambda l: l.__imul__(2),
])
def test_a_shared_list_refuses_every_change(change):
    part = share.Memo().share({"x": [2, 1]})["x"]
    with pytest.raises(TypeError, match="shared part of live objects"):
        change(part)
    assert part == [2, 1]


def test_copies_are_plain_and_changeable_and_leave_the_shared_part_alone():
    obj = share.Memo().share(deployment("a", "1"))
    deep = copy.deepcopy(obj)
    deep["spec"]["strategy"]["rollingUpdate"]["maxSurge"] = "50%"
    deep["metadata"]["managedFields"].append({})
    assert type(deep["spec"]) is dict and type(deep["metadata"]["managedFields"]) is list
    assert obj == deployment("a", "1")
    shallow = copy.copy(obj["spec"])
    shallow["replicas"] = 3
    assert type(shallow) is dict and obj["spec"]["replicas"] == 1
    assert type(copy.copy(obj["metadata"]["managedFields"])) is list
    assert type(dict(obj["spec"])) is dict and {**obj["spec"], "replicas": 2}["replicas"] == 2


def test_shared_objects_serialise_as_json_and_yaml_like_plain_ones():
    obj = share.Memo().share(deployment("a", "1"))
    assert json.dumps(obj, sort_keys=True) == json.dumps(deployment("a", "1"), sort_keys=True)
    assert yamlwrite.text(obj) == yamlwrite.text(deployment("a", "1"))
    assert yamlwrite.plain_lines(obj) == yamlwrite.plain_lines(deployment("a", "1"))
    assert isinstance(obj["spec"], dict) and isinstance(obj["metadata"]["managedFields"], list)


def test_scalars_pass_through_and_the_memo_counts_distinct_parts():
    memo = share.Memo()
    assert memo.share(3) == 3 and memo.share(None) is None and memo.share("s") == "s"
    before = len(memo)
    memo.share({"x": {"a": "b"}})
    memo.share({"x": {"a": "b"}})
    assert len(memo) == before + 4  # the strings "x", "a" and "b" once each, and the part {"a": "b"} once


def decoded(uid: str) -> dict:
    """A document as the API's JSON decodes it: new strings, none a constant of this file."""
    return json.loads(json.dumps({"metadata": {"uid": uid, "labels": {"app": "web"}},
                                  "spec": {"strategy": {"type": "RollingUpdate",
                                                        "rollingUpdate": {"maxSurge": "25%", "ports": [{"p": 80}]}}}}))


def test_settle_forgets_what_one_object_uses_and_keeps_what_two_share_with_the_parts_inside():
    memo = share.Memo()
    a, b = memo.share(decoded("uid-a")), memo.share(decoded("uid-b"))
    before = len(memo)
    memo.settle()
    assert len(memo) < before
    kept = list(memo._parts.values())
    assert not any(v in ("uid-a", "uid-b") for v in kept if isinstance(v, str))  # each used by one object only
    assert any(v is a["spec"] for v in kept)  # used by two objects
    assert any(v is a["spec"]["strategy"]["rollingUpdate"]["ports"][0] for v in kept)  # inside a kept part
    c = memo.share(decoded("uid-c"))
    assert c["spec"] is a["spec"] and c["metadata"]["labels"] is b["metadata"]["labels"]
    assert c == decoded("uid-c") and a == decoded("uid-a")


def test_the_memo_settles_by_itself_when_it_has_doubled_and_results_stay_equal(monkeypatch):
    monkeypatch.setattr(share, "SETTLE_AT_LEAST", 40)
    memo = share.Memo()
    objects = [memo.share(decoded(f"uid-{i}")) for i in range(200)]
    assert len(memo) < 100  # 200 uids were seen, and forgotten again
    assert all(obj == decoded(f"uid-{i}") for i, obj in enumerate(objects))
    assert len({id(obj["spec"]) for obj in objects}) == 1  # a part two objects share is never forgotten


def test_top_level_strings_and_lists_of_strings_are_shared_and_equal():
    memo = share.Memo()
    assert memo.share("".join(["a", "b"])) == "ab" and memo.share("".join(["c", "d"])) == "cd"
    first, second = memo.share(["".join(["x", "1"]), "y"]), memo.share(["".join(["x", "1"]), "z"])
    assert first == ["x1", "y"] and second == ["x1", "z"] and first[0] is second[0]
    a = memo.share({"finalizers": ["".join(["f", "1"]), "".join(["f", "2"])]})
    b = memo.share({"finalizers": ["".join(["f", "1"]), "".join(["f", "2"])]})
    assert a == {"finalizers": ["f1", "f2"]} and a["finalizers"] is b["finalizers"]


def test_deep_copies_are_equal_to_the_original():
    obj = share.Memo().share({"x": {"list": [1, {"a": "b"}], "map": {"k": [2]}}})
    assert copy.deepcopy(obj) == {"x": {"list": [1, {"a": "b"}], "map": {"k": [2]}}}
    assert copy.deepcopy(obj["x"]["list"]) == [1, {"a": "b"}]


def test_the_references_settle_subtracts_are_measured_on_this_interpreter():
    held = share._held()
    assert held == share._HELD and set(held) == {True, False}
    assert held[True] > held[False] >= 1  # a string is its own key too


def test_different_lists_are_each_shared():
    memo = share.Memo()
    a, b = memo.share({"p": [1], "q": ["x"]}), memo.share({"p": [1], "q": ["x"]})
    c, d = memo.share({"p": [2], "q": ["y"]}), memo.share({"p": [2], "q": ["y"]})
    assert a["p"] is b["p"] and c["p"] is d["p"] and a["q"] is b["q"] and c["q"] is d["q"]
    assert a["p"] is not c["p"] and c == {"p": [2], "q": ["y"]}


def test_threads_sharing_through_one_memo_while_it_settles_get_equal_objects(monkeypatch):
    # parallel writes share what they applied through the pass's one memo (Kube.sharing); a
    # settle that ran while another thread added a part used to end the pass in
    # "RuntimeError: dictionary changed size during iteration" (a cold pass at 10,000)
    import sys
    import threading

    monkeypatch.setattr(share, "SETTLE_AT_LEAST", 40)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch often, as a loaded pass's writers do
    memo, failures, kept = share.Memo(), [], []

    def work(t: int) -> None:
        try:
            for i in range(300):
                obj = deployment(f"d{t}-{i}", f"uid-{t}-{i}")
                shared = memo.share(obj)
                assert shared == deployment(f"d{t}-{i}", f"uid-{t}-{i}")
                kept.append(shared)
        except Exception as err:  # noqa: BLE001 - reported below
            failures.append(err)

    try:
        threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(switch)
    assert failures == []
    assert len(kept) == 2400 and kept[0]["spec"] is kept[-1]["spec"]


def test_an_object_shared_over_the_one_it_replaces_keeps_that_one_s_equal_parts():
    """``share_over``: each top-level and metadata value equal to the replaced object's is that
    object's own (even once the memo forgot it), the changed ones are new; the whole is equal to
    the new object and frozen below its top level as ``share`` makes it."""
    memo = share.Memo()
    old = memo.share({**deployment("a", "1"), "status": {"replicas": 1}})
    memo.settle()  # forgets what only ``old`` uses: its labels, its uid
    new_plain = {**deployment("a", "1"), "status": {"replicas": 2}}
    new_plain["metadata"]["resourceVersion"] = "9"
    new = memo.share_over(copy.deepcopy(new_plain), old)
    assert new == new_plain and list(new) == list(new_plain) and list(new["metadata"]) == list(new_plain["metadata"])
    assert new["spec"] is old["spec"] and new["metadata"]["labels"] is old["metadata"]["labels"]
    assert new["metadata"]["uid"] is old["metadata"]["uid"]
    assert new["status"] is not old["status"] and new["status"] == {"replicas": 2}
    assert type(new) is dict and type(new["metadata"]) is share.FrozenDict and type(new["status"]) is share.FrozenDict
    with pytest.raises(TypeError):
        new["metadata"]["labels"] = {}
    assert memo.share_over(copy.deepcopy(new_plain), None) == new_plain


@pytest.mark.parametrize("was, now", [
    ({"replicas": 1}, {"replicas": 1.0}), ({"replicas": 1}, {"replicas": True}), ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
    ([1, 2], [1, 2, 3]), ({"a": [1]}, {"a": [True]}), ({"a": {"b": "x"}}, {"a": {"b": "y"}}), ({"a": None}, {"a": 0}),
])
def test_a_part_that_differs_as_json_is_not_reused(was, now):
    """1, 1.0 and True are equal in Python, not in JSON; key order is kept as the new object has it."""
    memo = share.Memo()
    old = memo.share({"kind": "X", "spec": was})
    new = memo.share_over({"kind": "X", "spec": copy.deepcopy(now)}, old)
    assert new["spec"] is not old["spec"] and json.dumps(new["spec"]) == json.dumps(now)
    assert not share.equal(was, now) and share.equal(now, copy.deepcopy(now))


def test_an_object_shared_over_another_has_the_memo_s_key_strings_even_for_a_key_the_old_one_lacks():
    """Every key of the new object, new ones included, is the memo's string (the one equal key
    of every object), never a placeholder."""
    memo = share.Memo()
    old = memo.share({"kind": "X", "metadata": {"name": "a"}})
    new = memo.share_over(json.loads('{"kind": "X", "metadata": {"name": "a", "uid": "u"}, "status": {"ok": null}}'),
                          old)
    assert list(new) == ["kind", "metadata", "status"] and list(new["metadata"]) == ["name", "uid"]
    assert new["status"] == {"ok": None}
    again = memo.share(json.loads('{"status": {}, "metadata": {"uid": "v"}}'))
    assert next(k for k in new if k == "status") is next(k for k in again if k == "status")
    assert next(k for k in new["metadata"] if k == "uid") is next(k for k in again["metadata"] if k == "uid")
