"""Mapping keys as Kubernetes reads them (agent/manifests/keys.py), and as ``manifests.load`` refuses them.

The expected strings are kubectl's: ``sigs.k8s.io/yaml`` YAMLToJSON over its go-yaml v2 fork
(``resolve`` for plain scalars, ``convertToJSONableObject`` for keys, Go's
``strconv.FormatFloat(f, 'g', -1, 32)`` for float keys)."""

from __future__ import annotations

import math

import pytest

from agent.manifests import keys, loader as manifests

INF = math.inf


@pytest.mark.parametrize("text, read", [
    # booleans: YAML 1.1 words, y/n included (PyYAML reads y/n as strings)
    ("y", True), ("Y", True), ("yes", True), ("On", True), ("TRUE", True),
    ("n", False), ("N", False), ("no", False), ("OFF", False), ("False", False),
    # null
    ("", None), ("~", None), ("null", None), ("NULL", None),
    # integers: ParseInt(s, 0, 64) after dropping underscores
    ("1", 1), ("-0", 0), ("+1", 1), ("0", 0), ("00", 0), ("017", 15), ("0o17", 15), ("0O17", 15),
    ("0x1F", 31), ("0X1f", 31), ("-0b101", -5), ("0B11", 3), ("1_000", 1000),
    ("9223372036854775807", 2 ** 63 - 1), ("-9223372036854775808", -2 ** 63),
    ("9223372036854775808", 2 ** 63),  # a uint64
    ("0xFFFFFFFFFFFFFFFFFF", 0xFFFFFFFFFFFFFFFFFF),  # a big.Int
    # floats: yamlStyleFloat, and ParseFloat for a leading '.'
    ("08", 8.0), ("1e3", 1000.0), ("1.5e3", 1500.0), ("1.", 1.0), ("+.5", 0.5), (".5", 0.5), (".5E1", 5.0),
    ("18446744073709551616", 18446744073709551616.0), ("-9223372036854775809", -9223372036854775809.0),
    (".inf", INF), ("+.Inf", INF), ("-.INF", -INF),
    # strings: no number, an overflow, sexagesimal (PyYAML's int 90), timestamps, other words
    ("1:30", "1:30"), ("1e999", "1e999"), (".5e999", ".5e999"), ("2001-01-02", "2001-01-02"),
    ("0x", "0x"), ("0b", "0b"), ("0b2", "0b2"), ("-0x8000000000000001", "-0x8000000000000001"),
    ("._5", "._5"), (".", "."), ("<<", "<<"), ("yes1", "yes1"), ("abc", "abc"), ("_1", "_1"), ("é", "é"),
])
def test_go_yaml_plain_reads_as_go_yaml_v2(text, read):
    got = keys.go_yaml_plain(text)
    assert got == read and type(got) is type(read)


def test_go_yaml_plain_reads_nan():
    assert math.isnan(keys.go_yaml_plain(".NaN"))


@pytest.mark.parametrize("value, key", [
    ("a", "a"), ("", ""), (True, "true"), (False, "false"), (1, "1"), (-5, "-5"), (0, "0"),
    (2 ** 63 - 1, "9223372036854775807"), (-2 ** 63, "-9223372036854775808"),
    (2 ** 63, None), (-2 ** 63 - 1, None), (None, None), (b"hi", None), ([1], None), ({}, None),
    # float64 -> float32 -> the shortest digits, %e below 1e-4 and from 1e6 on
    (1.0, "1"), (1.5, "1.5"), (0.1, "0.1"), (0.3, "0.3"), (2.5, "2.5"), (1 / 3, "0.33333334"),
    (3.14159265358979, "3.1415927"), (100000.0, "100000"), (123456.0, "123456"), (1e6, "1e+06"),
    (1234567.0, "1.234567e+06"), (16777217.0, "1.6777216e+07"), (1e20, "1e+20"), (0.0001, "0.0001"),
    (0.00001, "1e-05"), (-0.0, "-0"), (-1.5, "-1.5"), (3.4028234663852886e38, "3.4028235e+38"),
    (1.4e-45, "1e-45"), (5e-324, "0"), (1e39, ".inf"), (-1e39, "-.inf"), (INF, ".inf"), (-INF, "-.inf"),
    (math.nan, ".nan"), (2 ** -127, "5.877472e-39"), (2 ** -126, "1.1754944e-38"), (2.0 ** 24, "1.6777216e+07"),
])
def test_json_key_is_sigs_k8s_io_yaml_key_string(value, key):
    assert keys.json_key(value) == key


@pytest.mark.parametrize("plain, text, value, read", [
    (True, "y", "y", True), (True, "1", 1, 1), (False, "1", "1", "1"), (False, "1", 1, 1),
    (False, "2001-01-01", __import__("datetime").date(2001, 1, 1), "2001-01-01"),  # !!timestamp: its text
    (False, "aGk=", b"hi", "hi"),  # !!binary: the string of its bytes
])
def test_kubectl_reads_plain_keys_by_its_own_rules_and_tagged_ones_as_constructed(plain, text, value, read):
    assert keys.kubectl_reads(plain, text, value) == read


BOOL_WORDS = "YAML 1.1 reads unquoted yes/no, on/off and, for kubectl, y/n as booleans; "


@pytest.mark.parametrize("text, value, read, message", [
    ("a", "a", "a", None), ("1", "1", "1", None),
    ("1", 1, 1, 'key 1 is an integer, not a string (kubectl would make it "1"); quote it: "1"'),
    ("true", True, True, 'key true is a boolean, not a string (kubectl would make it "true"); quote it: "true"'),
    ("on", True, True, f'key on is a boolean, not a string ({BOOL_WORDS}kubectl would make it "true"); quote it: "on"'),
    ("y", "y", True, f'key y is a boolean, not a string ({BOOL_WORDS}kubectl would make it "true"); quote it: "y"'),
    ("1.0", 1.0, 1.0, 'key 1.0 is a number, not a string (kubectl would make it "1"); quote it: "1.0"'),
    ("08", "08", 8.0, 'key 08 is a number, not a string (kubectl would make it "8"); quote it: "08"'),
    ("~", None, None, 'key ~ is null, not a string (kubectl refuses such a key); quote it: "~"'),
    ("", None, None, 'an empty key is null, not a string (kubectl refuses such a key); quote it: ""'),
    ("9223372036854775808", 2 ** 63, 2 ** 63,
     'key 9223372036854775808 is an integer, not a string (kubectl refuses such a key); quote it: "9223372036854775808"'),
    ("1:30", 90, "1:30", 'key 1:30 is an integer, not a string (kubectl would read it as the string "1:30"); '
                         'quote it: "1:30"'),
    ("aGk=", b"hi", "hi", 'key aGk= is binary data, not a string (kubectl would read it as the string "hi"); '
                          'quote it: "aGk="'),
])
def test_problem_names_what_each_reader_makes_of_the_key(text, value, read, message):
    assert keys.problem(text, value, read) == message


# -- as loaded --------------------------------------------------------------------------------------

APP = """\
apiVersion: heumsi.github.io/v1
kind: Application
metadata:
  name: a
  labels:
{labels}spec: {{image: nginx:1, replicas: 1, port: 80}}
"""


def errors(text: str, monkeypatch) -> list[str]:
    """The errors of ``text`` as ``a.yaml``; the C parser and the pure-Python loader must agree."""
    fast = manifests.load({"a.yaml": text.encode()}, "default")
    with monkeypatch.context() as m:
        m.setattr(manifests, "_FAST", False)
        assert manifests.load({"a.yaml": text.encode()}, "default") == fast
    return [str(e) for e in fast.errors]


def test_an_int_and_a_bool_key_are_two_keys_each_refused_by_its_line_and_field(monkeypatch):
    """``1`` and ``true`` were one duplicate key (Python's 1 == True); kubectl makes "1" and "true"."""
    text = APP.format(labels="    1: x\n    true: y\n")
    assert errors(text, monkeypatch) == [
        'a.yaml:6: metadata.labels.1: key 1 is an integer, not a string (kubectl would make it "1"); quote it: "1"',
        'a.yaml:7: metadata.labels.true: key true is a boolean, not a string (kubectl would make it "true"); '
        'quote it: "true"']
    [rejected] = manifests.load({"a.yaml": text.encode()}, "default").rejected
    assert (rejected.line, rejected.application, rejected.is_application) == (1, "default/a", True)


def test_quoted_keys_are_the_labels_kubectl_sends(monkeypatch):
    text = APP.format(labels="    '1': x\n    \"true\": y\n    !!str on: z\n")
    assert errors(text, monkeypatch) == []
    [m] = manifests.load({"a.yaml": text.encode()}, "default").manifests
    assert m.body["metadata"]["labels"] == {"1": "x", "true": "y", "on": "z"}


@pytest.mark.parametrize("labels, expected", [
    ("    '1': x\n    1: y\n", [
        "a.yaml:7: metadata.labels.1: duplicate key 1 (first defined on line 6 as '1'; kubectl reads both as \"1\")",
        'a.yaml:7: metadata.labels.1: key 1 is an integer, not a string (kubectl would make it "1"); quote it: "1"']),
    ("    1: x\n    '1': y\n", [
        'a.yaml:6: metadata.labels.1: key 1 is an integer, not a string (kubectl would make it "1"); quote it: "1"',
        "a.yaml:7: metadata.labels.1: duplicate key '1' (first defined on line 6 as 1; kubectl reads both as \"1\")"]),
    ("    'true': x\n    True: y\n", [
        "a.yaml:7: metadata.labels.True: duplicate key True (first defined on line 6 as 'true'; kubectl reads both "
        "as \"true\")",
        'a.yaml:7: metadata.labels.True: key True is a boolean, not a string (kubectl would make it "true"); '
        'quote it: "True"']),
    ("    '16': x\n    0x10: y\n", [
        "a.yaml:7: metadata.labels.0x10: duplicate key 0x10 (first defined on line 6 as '16'; kubectl reads both "
        "as \"16\")",
        'a.yaml:7: metadata.labels.0x10: key 0x10 is an integer, not a string (kubectl would make it "16"); '
        'quote it: "0x10"']),
    ("    a: x\n    a: y\n", ["a.yaml:7: metadata.labels.a: duplicate key 'a' (first defined on line 6)"]),
    ("    a: x\n    \"a\": y\n", ["a.yaml:7: metadata.labels.a: duplicate key 'a' (first defined on line 6)"]),
])
def test_duplicates_are_found_by_the_json_key_kubectl_sends(monkeypatch, labels, expected):
    assert errors(APP.format(labels=labels), monkeypatch) == expected


def test_one_float_and_one_int_key_of_one_json_key_are_both_named(monkeypatch):
    assert errors(APP.format(labels="    1.0: x\n    1: y\n"), monkeypatch) == [
        'a.yaml:6: metadata.labels.1.0: key 1.0 is a number, not a string (kubectl would make it "1"); '
        'quote it: "1.0"',
        'a.yaml:7: metadata.labels.1: duplicate key 1 (first defined on line 6 as 1.0; kubectl reads both as "1")',
        'a.yaml:7: metadata.labels.1: key 1 is an integer, not a string (kubectl would make it "1"); quote it: "1"']


@pytest.mark.parametrize("labels, field, fragment", [
    ("    y: x\n", "metadata.labels.y", 'key y is a boolean'),  # a string to PyYAML only
    ("    08: x\n", "metadata.labels.08", 'kubectl would make it "8"'),
    ("    1e3: x\n", "metadata.labels.1e3", 'kubectl would make it "1000"'),
    ("    ~: x\n", "metadata.labels.~", "kubectl refuses such a key"),
    ("    ? \n    : x\n", "metadata.labels", "an empty key is null"),
    ("    1:30: x\n", "metadata.labels.1:30", 'kubectl would read it as the string "1:30"'),
    ("    99999999999999999999: x\n", "metadata.labels.99999999999999999999", 'kubectl would make it "1e+20"'),
    ("    .nan: x\n", "metadata.labels..nan", 'kubectl would make it ".nan"'),
    ("    !!binary aGk=: x\n", "metadata.labels.aGk=", "binary data"),
    ("    !!timestamp 2001-01-01: x\n", "metadata.labels.2001-01-01", "a timestamp"),
    ("    <<: {b: c}\n", "metadata.labels.<<", "merge keys (<<) are not supported: write the keys out"),
])
def test_every_key_that_is_no_string_to_some_reader_is_refused_by_line_and_field(monkeypatch, labels, field, fragment):
    [error] = errors(APP.format(labels=labels), monkeypatch)
    assert error.startswith(f"a.yaml:6: {field}: ") and fragment in error, error


@pytest.mark.parametrize("labels, kind", [
    ("    ? [a, b]\n    : z\n", "list"), ("    ? {a: 1, a: 2}\n    : z\n", "mapping"),
    ("    ? !!set {a, b}\n    : z\n", "mapping"), ("    [a]: z\n", "list"),
])
def test_a_list_or_mapping_as_a_key_names_its_mapping_and_line(monkeypatch, labels, kind):
    assert errors(APP.format(labels=labels), monkeypatch) == [
        f"a.yaml:6: metadata.labels: a {kind} cannot be a key: keys must be strings (JSON, and so Kubernetes, "
        "has no other keys)"]


def test_the_other_problems_next_to_a_bad_key_are_still_reported(monkeypatch):
    text = APP.format(labels="    ? [a, b]\n    : z\n    ok: '1'\n    bad: true\n    2: x\n")
    assert errors(text, monkeypatch) == [
        "a.yaml:6: metadata.labels: a list cannot be a key: keys must be strings (JSON, and so Kubernetes, has no "
        "other keys)",
        "a.yaml:9: metadata.labels.bad: must be a string, not a boolean (YAML 1.1 reads unquoted true/false, yes/no "
        "and on/off as booleans; quote it)",
        'a.yaml:10: metadata.labels.2: key 2 is an integer, not a string (kubectl would make it "2"); quote it: "2"']


@pytest.mark.parametrize("text, expected", [
    # spec, annotations and the top level follow the same rule
    (APP.format(labels="    a: b\n").replace("spec: {", "spec: {1: 2, "),
     'a.yaml:7: spec.1: key 1 is an integer, not a string (kubectl would make it "1"); quote it: "1"'),
    (APP.format(labels="    a: b\n").replace("  labels:\n    a: b\n", "  annotations: {no: x}\n"),
     f'a.yaml:5: metadata.annotations.no: key no is a boolean, not a string ({BOOL_WORDS}kubectl would make it '
     '"false"); quote it: "no"'),
    (APP.format(labels="    a: b\n") + "? [x]\n: 1\n",
     "a.yaml:8: a list cannot be a key: keys must be strings (JSON, and so Kubernetes, has no other keys)"),
])
def test_keys_are_checked_everywhere_in_a_document(monkeypatch, text, expected):
    assert errors(text, monkeypatch) == [expected]


ITEM = """\
- apiVersion: heumsi.github.io/v1
  kind: Application
  metadata:
    name: {name}
  spec: {{image: nginx:1, replicas: 1, port: 80}}
"""


def test_a_bad_key_in_a_list_item_refuses_only_that_item(monkeypatch):
    bad = ITEM.format(name="b").replace("  metadata:\n", "  ? [k]\n  : v\n  metadata:\n    labels: {true: x}\n")
    text = "apiVersion: v1\nkind: List\nitems:\n" + ITEM.format(name="a") + bad
    assert errors(text, monkeypatch) == [
        "a.yaml:11: a list cannot be a key: keys must be strings (JSON, and so Kubernetes, has no other keys)",
        'a.yaml:14: metadata.labels.true: key true is a boolean, not a string (kubectl would make it "true"); '
        'quote it: "true"']
    result = manifests.load({"a.yaml": text.encode()}, "default")
    assert [m.name for m in result.manifests] == ["a"]
    assert [(r.line, r.application) for r in result.rejected] == [(9, "default/b")]


def test_a_bad_key_outside_the_items_refuses_the_whole_list(monkeypatch):
    text = "apiVersion: v1\nkind: List\n1: x\nitems:\n" + ITEM.format(name="a")
    assert errors(text, monkeypatch) == [
        'a.yaml:3: 1: key 1 is an integer, not a string (kubectl would make it "1"); quote it: "1"']
    assert manifests.load({"a.yaml": text.encode()}, "default").manifests == []


def test_json_only_still_leaves_out_a_key_that_is_no_string():
    """The loader leaves such keys out itself; ``nodes.json_only`` keeps refusing them for any other caller."""
    from agent.manifests.nodes import json_only

    data, problems = json_only({"a": {1: "x", "b": "y"}})
    assert data == {"a": {"b": "y"}}
    assert [(where, left_out) for where, _, left_out in problems] == [(("a",), ("a", 1))]
    assert problems[0][1].startswith("key 1 is not a string")
