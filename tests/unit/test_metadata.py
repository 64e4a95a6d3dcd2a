"""agent.metadata and its use in manifests.load: metadata as strict as spec, with file:line:field."""

from __future__ import annotations

import pytest

from agent import manifests, metadata

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
    ("  namspace: billing\n", 5, "metadata.namspace", "unknown field (did you mean namespace?)"),
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
