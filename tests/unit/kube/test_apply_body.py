"""The body of a server-side apply (``client.apply_body``): characters beyond the Basic
Multilingual Plane as themselves (the API server's YAML reader refuses their surrogate pair
escapes), everything else as ``json.dumps`` writes it."""

import json

import pytest

from agent.kube.client import apply_body


@pytest.mark.parametrize("value, written", [
    ("deploy 🚀", '"deploy 🚀"'),
    ("x😀y😀", '"x😀y😀"'),
    ("\\😀", '"\\\\😀"'),  # a backslash before it stays escaped, the emoji is itself
    ("a\\ud83d\\ude80b", '"a\\\\ud83d\\\\ude80b"'),  # the text of an escape is not an escape
    ("日本語 ✓ \u2028", '"\\u65e5\\u672c\\u8a9e \\u2713 \\u2028"'),  # the rest as json.dumps writes it
])
def test_the_body_reads_back_the_same(value, written):
    body = apply_body({"v": value})
    assert body.decode("utf-8") == '{"v": ' + written + "}"
    assert json.loads(body) == {"v": value}
