"""The rule of which prunes a refused file could hide (``agent.engine.hidden.decide``), table-tested."""

from __future__ import annotations

import pytest

from agent.engine import hidden
from agent.engine.hidden import Broken, Verdict

S, T, H = "a" * 40, "b" * 40, "c" * 40
BAD = Broken("team-b/bad.yaml", "team-b/bad.yaml:3: spec: expected a mapping", "1" * 40)
NEW = Broken("team-b/new.yaml", "team-b/new.yaml:1: could not parse YAML", "2" * 40)
TEXT = {BAD.path: "kind: Application\nmetadata: {name: other}\nspec: [\n", NEW.path: "kind: ["}


def changed(commit: str, file: Broken = BAD) -> str:
    return (f"{file.where}; that file changed since commit {commit[:7]}, the last this Application was synced "
            "from, so it may hold it")


@pytest.mark.parametrize("trees, texts, want", [
    # the refused file has the same content as at the commit web was last synced from: web is pruned
    ({S: {BAD.path: BAD.blob}}, TEXT, Verdict({})),
    # it changed since (a move into it, or a break after a move into it): held back, naming file and line
    ({S: {BAD.path: "9" * 40}}, TEXT, Verdict({"shop/web": changed(S)})),
    # it is new since
    ({S: {}}, TEXT, Verdict({"shop/web": changed(S)})),
    # unchanged, but its text names web (copied in, then removed from its own file)
    ({S: {BAD.path: BAD.blob}}, {BAD.path: "metadata:\n  name: web\nspec: [\n"},
     Verdict({"shop/web": f"{BAD.where}; that file names it, so it may hold it"})),
    # unchanged and its text could not be read: it may name web
    ({S: {BAD.path: BAD.blob}}, {}, Verdict({"shop/web": f"{BAD.where}; that file could not be read, so it may hold it"})),
    # the history from web's commit cannot be read (a force-push, not in the mirror): every prune is held back
    ({S: None}, TEXT, Verdict({}, hidden.unreadable("shop/web", (S,)))),
    ({}, TEXT, Verdict({}, hidden.unreadable("shop/web", (S,)))),
])
def test_one_refused_file_and_one_candidate(trees, texts, want):
    assert hidden.decide({"shop/web": (S,)}, [BAD], trees, texts) == want


def test_a_file_that_is_not_one_blob_could_hide_anything():
    unknown = Broken("sub/app.yaml", "sub/app.yaml: symlink leaves the repository", None)
    assert hidden.decide({"shop/web": (S,)}, [unknown], {S: {"sub/app.yaml": "1" * 40}}, {}) == \
        Verdict({"shop/web": changed(S, unknown)})


def test_any_readable_commit_of_a_candidate_is_evidence():
    # web's status names T (unreadable: another line of history); its annotation S is readable and shows no change
    assert hidden.decide({"shop/web": (T, S)}, [BAD], {T: None, S: {BAD.path: BAD.blob}}, TEXT) == Verdict({})


def test_a_candidate_with_no_record_holds_back_every_prune():
    verdict = hidden.decide({"shop/a": (S,), "shop/b": ()}, [BAD], {S: {BAD.path: BAD.blob}}, TEXT)
    assert verdict == Verdict({}, "shop/b records no commit it was synced from, so what moved since cannot be told")


def test_each_candidate_is_judged_on_its_own_commit_and_every_file():
    trees = {S: {BAD.path: BAD.blob}, T: {BAD.path: BAD.blob, NEW.path: NEW.blob}}
    verdict = hidden.decide({"shop/old": (S,), "shop/recent": (T,)}, [BAD, NEW], trees, TEXT)
    assert verdict == Verdict({"shop/old": changed(S, NEW)})  # new.yaml came after old's last sync, not recent's
    both = hidden.decide({"shop/x": (S,)}, [BAD, NEW], {S: {}}, TEXT)
    assert both.blocked["shop/x"] == changed(S) + " (1 more such file)"


def test_unreadable_names_the_commit():
    assert hidden.unreadable("shop/web", (S,)) == (
        f"the history from commit {S[:7]} (shop/web was last synced from it) to this commit cannot be read "
        "(rewritten by a force-push, another ref, or not in the mirror)")


@pytest.mark.parametrize("text, name, want", [
    ("metadata:\n  name: web\n", "web", True),
    ("metadata: {name: 'web'}", "web", True),
    ('"name": "web"', "web", True),
    ("apiVersion: heumsi.github.io/v1", "api", False),
    ("name: web-2", "web", False),
    ("host: web.example.com", "web", False),
    ("name: my_web", "web", False),
    ("image: registry/web:1", "web", True),  # a false match only blocks: fail closed
])
def test_names(text, name, want):
    assert hidden.names(text, name) is want


@pytest.mark.parametrize("app, want", [
    ({"metadata": {}, "status": {"lastSyncedCommit": S}}, (S,)),
    ({"metadata": {"annotations": {"heumsi.github.io/source-commit": T}}, "status": {"lastSyncedCommit": S}}, (S, T)),
    ({"metadata": {"annotations": {"heumsi.github.io/source-commit": S}}, "status": {"lastSyncedCommit": S}}, (S,)),
    ({"metadata": {"annotations": {"heumsi.github.io/source-commit": "main"}}, "status": {"lastSyncedCommit": 7}}, ()),
    ({"metadata": {}}, ()),
    ({"metadata": {}, "status": {"lastSyncedCommit": "d" * 64}}, ("d" * 64,)),  # SHA-256 repositories
])
def test_seen_at(app, want):
    assert hidden.seen_at(app) == want
