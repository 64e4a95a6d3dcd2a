"""agent.metadata and its use in manifests.load: metadata as strict as spec, with file:line:field."""

from __future__ import annotations

import pytest

from agent.manifests import loader as manifests, metadata

EXAMPLE = "apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata:\n  name: web\n{extra}spec:\n" \
          "  image: nginx:1\n  replicas: 1\n  port: 80\n"


@pytest.mark.parametrize("key, ok", [
    ("app", True), ("app.kubernetes.io/name", True), ("example.com/tier_1.x", True), ("a" * 63, True),
    ("a" * 64, False), ("", False), ("/x", False), ("Example.com/x", False), ("x/", False), ("-x", False),
    ("a/b/c", False), ("has space", False), ("ok_", False),
])
def test_qualified_names(key, ok):
    assert metadata.qualified_name_ok(key) is ok


@pytest.mark.parametrize("value, ok", [("", True), ("v1.2_3-a", True), ("a" * 63, True), ("a" * 64, False),
                                       ("-x", False), ("x.", False), ("a b", False), ("a/b", False)])
def test_label_values(value, ok):
    assert metadata.label_value_ok(value) is ok


@pytest.mark.parametrize("extra, line, field, says", [
    ("  namspace: billing\n", 5, "metadata.namspace", "unknown field (did you mean metadata.namespace?)"),
    ("  generateName: web-\n", 5, "metadata.generateName", "allowed: name, namespace, labels, annotations"),
    ("  uid: 1234\n", 5, "metadata.uid", "unknown field"),
    ("  labels: [a, b]\n", 5, "metadata.labels", "must be a mapping of strings to strings, not a list"),
    ("  labels:\n    tier: 3\n", 6, "metadata.labels.tier", "must be a string, not an integer"),
    ("  labels:\n    tier: true\n", 6, "metadata.labels.tier", "not a boolean"),
    ("  labels:\n    tier: null\n", 6, "metadata.labels.tier", "must be a string, not null"),
    ("  labels:\n    tier: front end\n", 6, "metadata.labels.tier", "value 'front end' must be at most 63"),
    ("  labels:\n    Bad_Prefix.com/x: a\n", 6, "metadata.labels.Bad_Prefix.com/x", "qualified name"),
    ("  annotations:\n    note: 5\n", 6, "metadata.annotations.note", "must be a string"),
    ("  annotations:\n    'a b': x\n", 6, "metadata.annotations.a b", "qualified name"),
    ("  annotations:\n    big: '" + "x" * 262_200 + "'\n", 5, "metadata.annotations", "above the limit"),
])
def test_metadata_problems_name_file_line_and_field(extra, line, field, says):
    result = manifests.load({"apps/web.yaml": EXAMPLE.format(extra=extra).encode()}, "default")
    assert result.manifests == []
    assert [(e.path, e.line, e.field) for e in result.errors] == [("apps/web.yaml", line, field)]
    assert says in result.errors[0].message
    assert str(result.errors[0]).startswith(f"apps/web.yaml:{line}: {field}: ")


@pytest.mark.parametrize("extra", [
    "", "  namespace: billing\n", "  labels:\n    tier: ''\n    app.kubernetes.io/part-of: shop\n",
    "  annotations:\n    description: 'any text: at all, even \"quotes\"'\n", "  labels: {}\n  annotations: null\n",
])
def test_valid_metadata_is_accepted(extra):
    result = manifests.load({"a.yaml": EXAMPLE.format(extra=extra).encode()}, "default")
    assert result.errors == [] and len(result.manifests) == 1


ALLOWED_TEXT = "(allowed: name, namespace, labels, annotations)"


@pytest.mark.parametrize("key, hint", [
    ("namspace", True),      # a letter left out
    ("namepsace", True),     # two letters swapped
    ("namespaze", True),     # one letter wrong
    ("namespacee", True),    # one letter too many
    ("nomespaze", False),    # two letters wrong
    ("namespacexx", False),  # two letters too many, even though it starts with namespace
    ("resource", False),     # the same length give or take one, but other letters
    ("selfLinks", False),
])
def test_unknown_metadata_key_message_and_typo_hint(key, hint):
    says = "unknown field (did you mean metadata.namespace?) " if hint else "unknown field "
    assert metadata.problems({"name": "web", key: "x"}) == [((key,), says + ALLOWED_TEXT)]


@pytest.mark.parametrize("key", metadata.SERVER_SET)
def test_a_key_the_api_server_sets_is_refused_saying_so(key):
    assert metadata.problems({"name": "web", key: "x"}) == [
        ((key,), "unknown field: the API server sets it (kubectl get -o yaml prints it); remove it from Git "
                 + ALLOWED_TEXT)]


@pytest.mark.parametrize("key, close", [("lables", "labels"), ("label", "labels"), ("annotation", "annotations"),
                                        ("nmae", "name"), ("generateName", None), ("finalizers", None)])
def test_a_typo_of_any_metadata_key_is_hinted(key, close):
    hint = f"(did you mean metadata.{close}?) " if close else ""
    assert metadata.problems({"name": "web", key: {}}) == [((key,), f"unknown field {hint}{ALLOWED_TEXT}")]


def _subdomain(length):
    """A valid DNS-1123 subdomain of exactly ``length`` characters (labels of 63, dot-separated)."""
    labels, left = [], length
    while left > 64:
        labels.append("a" * 63)
        left -= 64
    return ".".join(labels + ["b" * left])


@pytest.mark.parametrize("prefix_length, ok", [(1, True), (253, True), (254, False), (300, False)])
def test_qualified_name_prefix_is_at_most_253_characters(prefix_length, ok):
    prefix = _subdomain(prefix_length)
    assert len(prefix) == prefix_length
    assert metadata.qualified_name_ok(f"{prefix}/name") is ok


@pytest.mark.parametrize("meta, expected", [
    ({"labels": "tier"}, [(("labels",), "must be a mapping of strings to strings, not a string")]),
    ({"annotations": 3}, [(("annotations",), "must be a mapping of strings to strings, not an integer")]),
    ({"labels": {"tier": None}}, [(("labels", "tier"), "must be a string, not null")]),
    ({"labels": {"tier": 1.5}}, [(("labels", "tier"), 'must be a string, not a number (quote it: "1.5")')]),
    # a boolean was written true, yes or on: no spelling is guessed (never "False")
    ({"labels": {"tier": False}}, [(("labels", "tier"), "must be a string, not a boolean (YAML 1.1 reads unquoted "
                                    "true/false, yes/no and on/off as booleans; quote it)")]),
    # quoting a list or mapping makes no label value: no hint
    ({"labels": {"tier": [1]}}, [(("labels", "tier"), "must be a string, not a list")]),
    ({"labels": {"tier": {"a": "b"}}}, [(("labels", "tier"), "must be a string, not a mapping")]),
    # YAML reads an unquoted 2024-01-31 as a date: the message names the type as Python does
    ({"annotations": {"since": __import__("datetime").date(2024, 1, 31)}},
     [(("annotations", "since"), 'must be a string, not date (quote it: "2024-01-31")')]),
    # labels: null is skipped, and the annotations after it are still checked
    ({"labels": None, "annotations": {"note": 7}},
     [(("annotations", "note"), 'must be a string, not an integer (quote it: "7")')]),
    # labels that are not a mapping do not stop the annotations from being checked
    ({"labels": ["a"], "annotations": {"note": 7}},
     [(("labels",), "must be a mapping of strings to strings, not a list"),
      (("annotations", "note"), 'must be a string, not an integer (quote it: "7")')]),
    ({"labels": {"-x": "a b"}}, [(("labels", "-x"), f"key '-x' {metadata.KEY_RULE}"),
                                 (("labels", "-x"), f"value 'a b' {metadata.VALUE_RULE}")]),
    ({"annotations": {"a b": "any text at all"}}, [(("annotations", "a b"), f"key 'a b' {metadata.KEY_RULE}")]),
])
def test_problem_messages_exactly(meta, expected):
    assert metadata.problems(meta) == expected


@pytest.mark.parametrize("extra_bytes, refused", [(0, False), (1, True)])
def test_annotations_total_size_limit_boundary(extra_bytes, refused):
    value = "x" * (metadata.ANNOTATIONS_MAX_BYTES - 1 + extra_bytes)  # key "a" is the one byte more
    found = metadata.problems({"annotations": {"a": value}})
    size = metadata.ANNOTATIONS_MAX_BYTES + extra_bytes
    assert found == ([(("annotations",), f"annotations total {size} bytes, above the limit of 262144 bytes")]
                     if refused else [])
