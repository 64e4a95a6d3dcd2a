"""``kind: List`` files (agent/manifests/lists.py, agent/manifests/loader.py): each item is a document of its file,
read the same by the C parser, the pure-Python loader and the parse cache."""

from __future__ import annotations

import pytest

from agent.cli import validate
from agent.manifests import lists, loader as manifests, parsecache

ITEM = """\
- apiVersion: heumsi.github.io/v1
  kind: Application
  metadata:
    name: {name}
  spec:
    image: nginx:1
    replicas: {replicas}
    port: 80
"""
HEAD = 'apiVersion: v1\nkind: List\nmetadata:\n  resourceVersion: ""\nitems:\n'


def a_list(*items: str) -> str:
    return HEAD + "".join(items)


def load_both(files: dict[str, str], monkeypatch, **kw) -> manifests.LoadResult:
    """``manifests.load`` with the C parser and with the pure-Python loader: they must agree."""
    data = {p: t.encode() for p, t in files.items()}
    fast = manifests.load(data, "default", **kw)
    with monkeypatch.context() as m:
        m.setattr(manifests, "_FAST", False)
        assert manifests.load(data, "default", **kw) == fast
    return fast


def test_items_are_applications_with_their_own_lines(monkeypatch):
    result = load_both({"apps.yaml": a_list(ITEM.format(name="web", replicas=1), ITEM.format(name="api", replicas=2))},
                       monkeypatch)
    assert result.errors == [] and result.rejected == []
    assert [(m.name, m.line, m.path) for m in result.manifests] == [("api", 14, "apps.yaml"), ("web", 6, "apps.yaml")]
    web = result.manifests[1].body
    assert web == {"apiVersion": "heumsi.github.io/v1", "kind": "Application",
                   "metadata": {"name": "web", "namespace": "default"},
                   "spec": {"image": "nginx:1", "replicas": 1, "port": 80}}


def test_an_items_errors_name_the_file_its_line_and_its_own_field(monkeypatch):
    bad = ITEM.format(name="api", replicas=-1)
    no_spec = "- apiVersion: heumsi.github.io/v1\n  kind: Application\n  metadata: {name: db}\n"
    result = load_both({"apps.yaml": a_list(ITEM.format(name="web", replicas=1), bad, no_spec)}, monkeypatch)
    assert [m.name for m in result.manifests] == ["web"]  # the valid sibling is kept
    assert [str(e) for e in result.errors] == [
        "apps.yaml:20: spec.replicas: must be an integer between 0 and 2147483647 (got -1)",
        "apps.yaml:22: spec: is required"]
    assert [(r.line, r.application) for r in result.rejected] == [(14, "default/api"), (22, "default/db")]


@pytest.mark.parametrize("item, kind", [
    ("- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: x}\n", '"ConfigMap"'),
    ("- apiVersion: v1\n  kind: List\n  items: []\n", '"List"'),  # a List inside a List
])
def test_an_item_that_is_no_application_is_refused_as_such_a_document_is(monkeypatch, item, kind):
    listed = load_both({"l.yaml": a_list(ITEM.format(name="web", replicas=1), item)}, monkeypatch)
    [error] = listed.errors
    assert (error.line, error.field) == (14, None)
    assert error.message == ("only Application (heumsi.github.io/v1) documents are supported, alone or as the items "
                             f'of a List (apiVersion v1, kind List) (found apiVersion "v1", kind {kind})')
    if kind != '"List"':  # a List alone is a List; any other kind alone gets the same error
        [document_error] = load_both({"d.yaml": item[2:].replace("\n  ", "\n")}, monkeypatch).errors
        assert error.message == document_error.message
    assert [m.name for m in listed.manifests] == ["web"]


@pytest.mark.parametrize("text", [HEAD.replace("items:\n", "items: []\n"), HEAD.replace("items:\n", ""),
                                  HEAD])  # items: (null)
def test_an_empty_list_holds_nothing_and_is_no_error(monkeypatch, text):
    result = load_both({"l.yaml": text}, monkeypatch)
    assert result.manifests == [] and result.errors == []


@pytest.mark.parametrize("text, expected", [
    (HEAD.replace("items:\n", "items: {a: 1}\n"), "l.yaml:5: items: must be a list of Application documents, not a mapping"),
    (HEAD + "- 42\n", "l.yaml:6: document must be a mapping, not an integer"),
    (HEAD.replace("items:\n", "itemz: []\n"),
     "l.yaml:5: itemz: unknown field in a List (did you mean items?) (allowed: apiVersion, kind, metadata, items)"),
    (HEAD.replace("items:\n", "yes: 1\n"), "l.yaml:5: yes: key yes is a boolean, not a string (YAML 1.1 reads unquoted "
                                           "yes/no, on/off and, for kubectl, y/n as booleans; kubectl would make it "
                                           '"true"); quote it: "yes"'),
])
def test_problems_of_the_list_itself(monkeypatch, text, expected):
    result = load_both({"l.yaml": text}, monkeypatch)
    assert [str(e) for e in result.errors] == [expected]
    assert len(result.rejected) == 1


def test_an_item_and_a_document_elsewhere_with_one_identity_are_both_refused(monkeypatch):
    other = ITEM.format(name="web", replicas=1)[2:].replace("\n  ", "\n")
    result = load_both({"l.yaml": a_list(ITEM.format(name="web", replicas=3)), "web.yaml": other}, monkeypatch)
    assert result.manifests == []
    assert [(e.path, e.line) for e in result.errors] == [("l.yaml", 9), ("web.yaml", 4)]  # each metadata.name
    assert "defined more than once: l.yaml:9, web.yaml:4" in result.errors[0].message


def test_items_count_as_documents_for_the_limit(monkeypatch):
    text = a_list(*(ITEM.format(name=f"a{i}", replicas=1) for i in range(4)))
    assert len(load_both({"l.yaml": text}, monkeypatch, max_documents=4).manifests) == 4
    [error] = load_both({"l.yaml": text}, monkeypatch, max_documents=3).errors
    assert (error.line, error.message) == (None, "more than 3 YAML documents (each item of a List counts as one)")


def test_a_one_line_list_of_two_items_is_cached_item_by_item(tmp_path):
    """Two items on one line: the cache pairs bodies with items by order, never by line."""
    text = ('{apiVersion: v1, kind: List, items: ['
            '{apiVersion: heumsi.github.io/v1, kind: Application, metadata: {name: a}, spec: {image: x, replicas: 1, port: 1}}, '
            '{apiVersion: heumsi.github.io/v1, kind: Application, metadata: {name: b}, spec: {image: y, replicas: 2, port: 2}}]}\n')
    files, blobs = {"l.yaml": text.encode()}, {"l.yaml": "1" * 40}
    cache = parsecache.ParseCache(tmp_path / "c.json", "1")
    first = manifests.load(files, "default", blobs=blobs, cache=cache)
    cache.save()
    again = manifests.load(files, "default", blobs=blobs, cache=parsecache.ParseCache(tmp_path / "c.json", "1"))
    assert again == first and [m.body["spec"]["image"] for m in again.manifests] == ["x", "y"]


def test_validate_checks_items_against_the_crd_with_their_lines():
    result = validate.check({"l.yaml": a_list(ITEM.format(name="web", replicas=1),
                                              ITEM.format(name="api", replicas=1).replace("nginx:1", '""')).encode()},
                            "default")
    assert [m.name for m in result.manifests] == ["web"]
    assert [(e.line, e.field) for e in result.errors] == [(19, "spec.image")]


def test_items_pairs_each_value_with_its_node():
    import yaml

    node = yaml.compose(a_list(ITEM.format(name="web", replicas=1)))
    data = yaml.safe_load(a_list(ITEM.format(name="web", replicas=1)))
    assert lists.is_list(data) and not lists.is_list({"apiVersion": "v2", "kind": "List"})
    [(item_node, item)], problems = lists.items(node, data)
    assert problems == [] and item["metadata"]["name"] == "web" and item_node.start_mark.line == 5


def test_errors_of_items_on_one_line_belong_to_the_item_that_has_them(monkeypatch):
    """Attribution is by the item whose check found the error, not by line: both items are on line 3."""
    text = ("apiVersion: v1\nkind: List\nitems: [{apiVersion: heumsi.github.io/v1, kind: Application, "
            "metadata: {name: good}, spec: {image: x, replicas: 1, port: 80}}, {apiVersion: heumsi.github.io/v1, "
            "kind: Application, metadata: {name: bad}, spec: {image: x, replicas: -1, port: 80}}]\n")
    result = load_both({"l.yaml": text}, monkeypatch)
    assert [m.name for m in result.manifests] == ["good"]
    assert [(r.line, r.application, r.is_application) for r in result.rejected] == [(3, "default/bad", True)]


def test_a_lists_own_error_and_an_items_error_on_one_line_stay_apart(monkeypatch):
    text = ("{apiVersion: v1, kind: List, extra: 1, items: [{apiVersion: heumsi.github.io/v1, kind: Application, "
            "metadata: {name: a}, spec: {image: x, replicas: -1, port: 80}}]}\n")
    result = load_both({"l.yaml": text}, monkeypatch)
    assert [(r.line, r.application, r.is_application, len(r.reasons)) for r in result.rejected] == [
        (1, None, False, 1), (1, "default/a", True, 1)]
    assert "extra" in result.rejected[0].reasons[0] and "spec.replicas" in result.rejected[1].reasons[0]


def test_a_duplicate_identity_between_items_on_one_line_names_each_item(monkeypatch):
    item = "{apiVersion: heumsi.github.io/v1, kind: Application, metadata: {name: %s}, spec: {image: x, replicas: 1, port: 80}}"
    text = "{apiVersion: v1, kind: List, items: [%s, %s, %s]}\n" % (item % "ok", item % "d", item % "d")
    result = load_both({"l.yaml": text}, monkeypatch)
    assert [m.name for m in result.manifests] == ["ok"]
    assert [(r.line, r.application) for r in result.rejected] == [(1, "default/d"), (1, "default/d")]


def test_an_item_with_a_non_json_value_is_named_from_its_nodes(monkeypatch):
    text = a_list(ITEM.format(name="web", replicas=1).replace("nginx:1", "!!binary aGk="))
    [rejected] = load_both({"l.yaml": text}, monkeypatch).rejected
    assert (rejected.line, rejected.application, rejected.is_application) == (6, "default/web", True)


def test_a_duplicate_key_in_an_item_refuses_only_that_item(monkeypatch):
    """It used to refuse the whole List (``items[1].spec.port``): only its item is refused, with
    its field named from the item, and its other problems are reported with it."""
    dup = ITEM.format(name="api", replicas=-1).replace("    port: 80\n", "    port: 80\n    port: 81\n")
    result = load_both({"apps.yaml": a_list(ITEM.format(name="web", replicas=1), dup,
                                            ITEM.format(name="db", replicas=2))}, monkeypatch)
    assert [m.name for m in result.manifests] == ["db", "web"]  # the other items are read
    assert [str(e) for e in result.errors] == [
        "apps.yaml:20: spec.replicas: must be an integer between 0 and 2147483647 (got -1)",
        "apps.yaml:22: spec.port: duplicate key 'port' (first defined on line 21)"]
    assert [(r.line, r.application, r.is_application, len(r.reasons)) for r in result.rejected] == [
        (14, "default/api", True, 2)]


def test_an_item_with_a_repeated_kind_is_refused_alone_as_no_application(monkeypatch):
    dup = ITEM.format(name="api", replicas=1).replace("  kind: Application\n", "  kind: Application\n  kind: List\n")
    result = load_both({"apps.yaml": a_list(ITEM.format(name="web", replicas=1), dup)}, monkeypatch)
    assert [m.name for m in result.manifests] == ["web"]
    assert [str(e) for e in result.errors] == ["apps.yaml:16: kind: duplicate key 'kind' (first defined on line 15)"]
    assert [(r.line, r.application, r.is_application) for r in result.rejected] == [(14, None, False)]


@pytest.mark.parametrize("text, expected", [
    (HEAD.replace('  resourceVersion: ""\n', '  resourceVersion: ""\n  resourceVersion: "1"\n')
     + ITEM.format(name="web", replicas=1), "l.yaml:5: metadata.resourceVersion: duplicate key 'resourceVersion' "
                                            "(first defined on line 4)"),
    (HEAD + ITEM.format(name="web", replicas=1) + "items: []\n", "l.yaml:14: items: duplicate key 'items' "
                                                                 "(first defined on line 5)"),
])
def test_a_duplicate_key_of_the_list_itself_still_refuses_the_list(monkeypatch, text, expected):
    """Outside the items, which items the List holds is not known: the whole List is refused."""
    result = load_both({"l.yaml": text}, monkeypatch)
    assert result.manifests == [] and [str(e) for e in result.errors] == [expected]
    assert [(r.line, r.is_application) for r in result.rejected] == [(1, False)]
