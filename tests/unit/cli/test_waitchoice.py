"""waitchoice: which of the pass's Applications ``sync --once --wait`` waits for (issue 46, item 3),
against a real pass into the in-memory cluster (the live labels come from Git)."""

from __future__ import annotations

import argparse

import pytest
import yaml

from agent.cli import flags, waitchoice
from tests.unit.engine.passes import NS, World, app_yaml


def labelled(name: str, namespace: str | None = None, **labels) -> str:
    doc = yaml.safe_load(app_yaml(name))
    doc["metadata"]["labels"] = labels
    if namespace:
        doc["metadata"]["namespace"] = namespace
    return yaml.safe_dump(doc)


@pytest.fixture(scope="module")
def synced(tmp_path_factory):
    world = World(tmp_path_factory.mktemp("choice"))
    world.commit({"a.yaml": labelled("web", team="a"), "b.yaml": labelled("api", team="b"),
                  "c.yaml": labelled("web", "other", team="b", env="prod"), "d.yaml": labelled("job")})
    report = world.sync()
    assert report.ok, report.errors
    return world.kube, sorted(report.synced)


def args(**given) -> argparse.Namespace:
    return argparse.Namespace(**{"selector": None, "app": None, "wait_namespace": None, "wait": 300.0, **given})


@pytest.mark.parametrize("given, keys", [
    ({}, None),  # no choice: the whole pass, as before
    ({"selector": "team=a"}, {f"{NS}/web"}),
    ({"selector": "team!=a"}, {f"{NS}/api", "other/web", f"{NS}/job"}),  # absent counts as another value
    ({"selector": "team in (a,b)"}, {f"{NS}/web", f"{NS}/api", "other/web"}),
    ({"selector": "env"}, {"other/web"}),
    ({"selector": "!team"}, {f"{NS}/job"}),
    ({"selector": "team=b", "wait_namespace": NS}, {f"{NS}/api"}),
    ({"app": ["web"]}, {f"{NS}/web", "other/web"}),  # a bare name, in every namespace
    ({"app": ["other/web", "api"]}, {"other/web", f"{NS}/api"}),
    ({"app": ["web"], "wait_namespace": "other"}, {"other/web"}),
    ({"wait_namespace": "other"}, {"other/web"}),
])
def test_the_choice(synced, given, keys):
    kube, all_keys = synced
    assert waitchoice.chosen(kube, all_keys, args(**given)) == (None if keys is None else frozenset(keys), None)


@pytest.mark.parametrize("given, says", [
    ({"selector": "team=c"}, "-l 'team=c' matches none of the 4 Applications this pass synced from Git: nothing to "
                             "wait for"),
    ({"selector": "team=a", "wait_namespace": "other"},
     "-l 'team=a' matches none of the 4 Applications this pass synced from Git in namespace other"),
    ({"app": ["web", "nope"]}, "--app nope: not one of the 4 Applications this pass synced from Git"),
    ({"wait_namespace": "empty"}, "no Application of the 4 Applications this pass synced from Git in namespace empty"),
])
def test_a_choice_of_nothing_is_one_line(synced, given, says):
    kube, all_keys = synced
    keys, problem = waitchoice.chosen(kube, all_keys, args(**given))
    assert keys is None and says in problem and "\n" not in problem


@pytest.mark.parametrize("given, says", [
    ({"selector": "team=a", "wait": None}, "--selector is allowed only with --wait"),
    ({"app": ["web"], "wait": None}, "--app is allowed only with --wait"),
    ({"wait_namespace": "x", "wait": None}, "--wait-namespace is allowed only with --wait"),
    ({"selector": "team=a", "app": ["web"]}, "--app cannot be provided when a selector is specified"),
])
def test_refused_flags(given, says):
    with pytest.raises(flags.UsageError) as caught:
        waitchoice.check(args(**given))
    assert says in str(caught.value)


def test_describe():
    assert waitchoice.describe(args()) == ""
    assert waitchoice.describe(args(selector="team=a", wait_namespace="shop")) == " (-l team=a -n shop)"
    assert waitchoice.describe(args(app=["web", "x/api"])) == " (--app web --app x/api)"
