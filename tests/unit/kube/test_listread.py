"""listread: a list response read item by item, whatever the chunks it arrives in."""

import io
import json

import pytest

from agent.kube import listread


def reader(text: str, sizes=None):
    """A ``read(size)`` over ``text`` as UTF-8 bytes, giving at most ``sizes[i]`` bytes on call i."""
    data = io.BytesIO(text.encode())
    calls = iter(sizes or [])

    def read(size):
        return data.read(min(size, next(calls, size)))
    return read


LIST = {"kind": "DeploymentList", "apiVersion": "apps/v1", "metadata": {"resourceVersion": "42"},
        "items": [{"metadata": {"name": f"app-{i}", "labels": {"é": "ü" * i}}, "spec": {"replicas": i, "on": True,
                                                                                    "x": None, "f": 1.5e3}}
                  for i in range(30)]}


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64, 1 << 20])
def test_every_chunking_gives_the_same_list(monkeypatch, chunk):
    monkeypatch.setattr(listread, "CHUNK", chunk)
    seen = []
    out = listread.read(reader(json.dumps(LIST, ensure_ascii=False)), lambda item: seen.append(item) or {"n": len(seen)})
    assert seen == LIST["items"]
    assert out["items"] == [{"n": i + 1} for i in range(30)]
    assert {k: v for k, v in out.items() if k != "items"} == {k: v for k, v in LIST.items() if k != "items"}


def test_a_number_or_literal_cut_by_a_chunk_is_read_whole(monkeypatch):
    monkeypatch.setattr(listread, "CHUNK", 1)
    out = listread.read(reader('{"a": 12345, "b": true, "c": null, "items": []}'), lambda item: item)
    assert out == {"a": 12345, "b": True, "c": None, "items": []}


def test_whitespace_member_order_and_empty_lists():
    text = ' \n{ "items" : [ ] ,\t"kind":"ServiceList" ,"metadata" : {} }\n'
    assert listread.read(reader(text), lambda item: item) == {"items": [], "kind": "ServiceList", "metadata": {}}
    assert listread.read(reader("{}"), lambda item: item) == {}
    assert listread.read(reader('{"items": null}'), lambda item: item) == {"items": None}


def test_each_is_called_as_each_item_arrives(monkeypatch):
    monkeypatch.setattr(listread, "CHUNK", 16)
    reads = []
    base = reader(json.dumps(LIST))

    def read(size):
        reads.append(size)
        return base(size)
    seen_at = []
    listread.read(read, lambda item: seen_at.append(len(reads)) or item)
    assert seen_at == sorted(seen_at) and seen_at[0] < seen_at[-1]  # items came out while it was still reading


@pytest.mark.parametrize("text", ['', '[]', '{"items": [{"a": 1}', '{"items": [{"a": 1},', '{"items": [{"a": 1}]',
                                  '{"a" 1}', '{1: 2}', '{"items": [{"a": 1} {"b": 2}]}', '{"a": tru}', '{"a": 1,}'])
def test_a_response_that_is_not_one_json_object_or_ends_early_is_unreadable(text):
    with pytest.raises(listread.Unreadable):
        listread.read(reader(text), lambda item: item)


@pytest.mark.parametrize("text, message", [
    ('{"items": [{"a": 1}', "ended early"), ('{"items": [{"a": 1},', "ended early"), ("", "ended early"),
    ('[]', "expected one of '{'"), ('{"a" 1}', "expected one of ':'"), ('{"a": 1 "b": 2}', "expected one of ',}'"),
    ('{"items": [{"a": 1} {"b": 2}]}', "expected one of ',]'"), ('{1: 2}', "expected a member name"),
    ('{"a": tru}', "not JSON"),
])
def test_an_unreadable_response_says_what_was_wrong(text, message):
    with pytest.raises(listread.Unreadable, match=message):
        listread.read(reader(text), lambda item: item)


@pytest.mark.parametrize("text", ['X{"a": 1}', '{"a"X1}', '{"a": 1X"b": 2}', '{"items": [{"a": 1}X{"b": 2}]}'])
def test_only_jsons_own_punctuation_separates(text):
    with pytest.raises(listread.Unreadable):
        listread.read(reader(text), lambda item: item)


def test_members_after_an_empty_or_full_list_without_whitespace():
    assert listread.read(reader('{"items":[],"kind":"X"}'), lambda item: item) == {"items": [], "kind": "X"}
    assert listread.read(reader('{"items":[{"a":1}],"kind":"X"}'), lambda item: item) == {"items": [{"a": 1}], "kind": "X"}


@pytest.mark.parametrize("data", [b'{"a": "\\xc3', b'{"a": "\xc3', b'{"a": "\xff"}'])
def test_a_response_that_is_not_utf8_is_unreadable_not_a_traceback(data, monkeypatch):
    monkeypatch.setattr(listread, "CHUNK", 4)
    stream = io.BytesIO(data)
    with pytest.raises(listread.Unreadable):
        listread.read(stream.read, lambda item: item)
