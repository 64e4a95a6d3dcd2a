"""selectors: kubectl's label selector syntax, parsed and matched as the API server does."""

import pytest

from agent.api import selectors
from tests.unit.fakecluster import selects  # the fake's own reading of a selector, for a cross-check

A = {"team": "a", "env": "prod"}
B = {"team": "b"}
NONE: dict = {}


@pytest.mark.parametrize("selector, a, b, none", [
    ("", True, True, True),
    ("team=a", True, False, False),
    ("team==a", True, False, False),
    ("team!=b", True, False, True),  # absent counts as another value, as in Kubernetes
    ("team in (a,b)", True, True, False),
    ("team in (a, b )", True, True, False),
    ("team notin (a)", False, True, True),
    ("env", True, False, False),
    ("!env", False, True, True),
    ("! env", False, True, True),
    ("team=a,env=prod", True, False, False),
    ("team in (a,b), !env", False, True, False),
    ("team=", False, False, False),  # an empty value: the label with an empty value
    ("example.com/tier", False, False, False),
])
def test_matches_as_kubernetes_reads_it(selector, a, b, none):
    parsed = selectors.parse(selector)
    assert [selectors.matches(parsed, labels) for labels in (A, B, NONE)] == [a, b, none]
    if selector not in ("! env", "team in (a, b )"):  # the fake reads the simple forms alike
        assert [selects(selector, labels) for labels in (A, B, NONE)] == [a, b, none]


def test_an_empty_label_value_matches_key_equals_nothing():
    assert selectors.matches(selectors.parse("team="), {"team": ""})
    assert selectors.matches(selectors.parse("x"), {"x": ""})
    assert selectors.matches(selectors.parse("team"), None) is False


@pytest.mark.parametrize("selector, says", [
    ("team=a,,env", "an empty requirement"),
    ("team=a,", "an empty requirement"),
    ("team in (a,b", "unbalanced parentheses"),
    ("team in a", "not a requirement"),
    ("team in ()", "needs at least one value"),
    ("=a", "not a requirement"),
    ("team=a b", "not a requirement"),
    ("-team=a", "is not a label key"),
    ("team=" + "x" * 64, "is not a label value"),
    ("team=a/b", "is not a label value"),
    ("Bad_Prefix/team=a", "is not a label key"),
])
def test_a_wrong_selector_is_one_line_naming_the_part(selector, says):
    with pytest.raises(ValueError) as caught:
        selectors.parse(selector)
    message = str(caught.value)
    assert says in message and "\n" not in message
