"""guards: the prune annotation, the mass-prune share, the propagation policy."""

import pytest

from agent.api import labels
from agent.engine import guards


@pytest.mark.parametrize("annotations, disabled", [
    ({"heumsi.github.io/prune": "disabled"}, True),
    ({"heumsi.github.io/prune": "Disabled"}, True),
    ({"heumsi.github.io/prune": "DISABLED"}, True),
    ({"heumsi.github.io/prune": " disabled"}, False),
    ({"heumsi.github.io/prune": "disabledx"}, False),
    ({"heumsi.github.io/prune": "enabled"}, False),
    ({"heumsi.github.io/prune": ""}, False),
    ({"prune": "disabled"}, False),
    ({}, False),
    (None, False),
])
def test_prune_annotation(annotations, disabled):
    assert guards.prune_disabled({"metadata": {"annotations": annotations}}) is disabled


def test_prune_annotation_on_objects_without_metadata():
    assert guards.prune_disabled({}) is False
    assert guards.prune_disabled({"metadata": None}) is False


@pytest.mark.parametrize("prunes, owned, share, refused", [
    (11, 12, 0.5, True),
    (11, 22, 0.5, False),  # exactly half is allowed
    (11, 21, 0.5, True),
    (10, 12, 0.5, False),  # ten or fewer always allowed
    (10, 10, 0.0, False),
    (11, 11, 0.0, True),
    (11, 11, 0.99, True),
    (11, 11, 1.0, False),  # 1.0 disables
    (100, 100, 1.0, False),
    (11, 100, 0.1, True),
    (11, 110, 0.1, False),
    (0, 0, 0.0, False),
    (9, 9, 0.5, False),
    (5, 6, 0.0, False),
    (11, 100, 0.5, False),
    (11, 12, 1.0, False),
])
def test_too_many(prunes, owned, share, refused):
    assert guards.too_many(prunes, owned, share) is refused


def test_refusal_says_what_and_how_to_proceed():
    text = guards.refusal(11, 12, 0.5, "a" * 40)
    assert text == (f"commit {'a' * 40} would prune 11 of the 12 Applications this source owns, more than "
                    "--max-prune-share 0.5 of them and more than 10; nothing was pruned (the rest of the pass "
                    "was applied). If the commit and --path are right, run again with --max-prune-share 1.0 "
                    "(1.0 turns the guard off), or keep single Applications with the annotation "
                    "heumsi.github.io/prune: disabled")


@pytest.mark.parametrize("text, value", [("0", 0.0), ("0.5", 0.5), ("1", 1.0), ("1.0", 1.0), ("0.25", 0.25)])
def test_share_parses(text, value):
    assert guards.share(text) == value


@pytest.mark.parametrize("text", ["-0.1", "1.01", "2", "abc", "", "nan"])
def test_share_refuses(text):
    with pytest.raises(ValueError, match="is not a share from 0 to 1"):
        guards.share(text)


@pytest.mark.parametrize("kind, keeps, policy", [
    ("Deployment", False, "Background"),
    ("Deployment", True, "Background"),
    ("Service", True, "Background"),
    ("Application", False, "Background"),
    ("Application", True, "Orphan"),
    ("APIService", True, "Background"),
])
def test_propagation(kind, keeps, policy):
    assert guards.propagation(kind, keeps) == policy


def test_defaults():
    assert (guards.DEFAULT_MAX_PRUNE_SHARE, guards.MIN_PRUNES_GUARDED) == (0.5, 10)
    assert (labels.PRUNE_ANNOTATION, guards.PRUNE_DISABLED) == ("heumsi.github.io/prune", "disabled")
