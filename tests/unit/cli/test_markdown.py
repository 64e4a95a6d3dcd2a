"""``-o markdown`` (agent/cli/output.py) as CommonMark and GitHub (GFM) read it: code spans whose
fence outlasts every backtick inside, ``|`` escaped only in table cells, backslashes and other
markup characters escaped in plain text. The expected outputs were checked by rendering them with
GitHub's own cmark-gfm (the cmarkgfm bindings): every name and message reads back as it is."""

from __future__ import annotations

import pytest

from agent.cli import output
from agent.cli.validate import Result
from agent.manifests.loader import Manifest, ManifestError


@pytest.mark.parametrize("value, span", [
    ("a", "`a`"),
    ("a`b", "``a`b``"),  # one backtick inside: a fence of two
    ("a``b`c", "```a``b`c```"),  # longest run two: a fence of three
    ("`x", "`` `x ``"), ("x`", "`` x` ``"), ("`", "`` ` ``"),  # a backtick at an end: padded
    (" a ", "`  a  `"),  # a space at both ends would be stripped once: padded
    (" a", "` a`"), ("   ", "`   `"),  # one end, or only spaces: nothing is stripped
    ("a|b", "`a|b`"), ("a\\b", "`a\\b`"), ("*x*", "`*x*`"),  # literal in a span
    ("a\nb\x1b", "`a\\nb\\x1b`"),  # printable
])
def test_code_span(value, span):
    assert output.code(value) == span


@pytest.mark.parametrize("value, text", [
    ("must be an integer (got -1)", "must be an integer (got -1)"),
    ("a\\b", "a\\\\b"), ("a\\nb", "a\\\\nb"), ("a\nb", "a\\\\nb"),  # a backslash, also printable's
    ("`x` *y* _z_ ~s~ [l](u) <b> &amp;", "\\`x\\` \\*y\\* \\_z\\_ \\~s\\~ \\[l\\](u) \\<b\\> \\&amp;"),
    ("a|b", "a|b"),  # no table here
    ("# h", "\\# h"), ("- x", "\\- x"), ("+ x", "\\+ x"), ("= x", "\\= x"), ("> x", "\\> x"),
    ("1. x", "1\\. x"), ("12) x", "12\\) x"), ("x 1. #", "x 1. #"),  # a block marker only first
])
def test_plain_text(value, text):
    assert output.plain(value) == text


@pytest.mark.parametrize("markdown, in_cell", [
    ("`a|b`", "`a\\|b`"), ("a\\\\|b", "a\\\\\\|b"), ("`p\\|q`", "`p\\\\|q`"), ("x", "x")])
def test_cell_escapes_every_pipe(markdown, in_cell):
    assert output.cell(markdown) == in_cell


def test_validate_markdown_exactly():
    names = ["a`b|c\\d.yaml", "`x|.yaml", "p\\|q.yaml"]
    messages = ["value `x|y` \\ *not* _em_ <i> &amp; a\\|b", "# heading", "1. list"]
    result = Result(files=3, manifests=[Manifest("default", f"web{i}", {}, n, i + 1) for i, n in enumerate(names)],
                    errors=[ManifestError(n, 3, "metadata.labels.a|b`", m) for n, m in zip(names, messages)])
    doc = output.validate_document(result, exit_code=2, source={})
    assert output.render(doc, "markdown") == (
        "### gitops-agent validate: 3 problems in 3 files\n"
        "\n"
        "| Application | File |\n"
        "|---|---|\n"
        "| `default/web0` | ``a`b\\|c\\d.yaml:1`` |\n"
        "| `default/web1` | `` `x\\|.yaml:2 `` |\n"
        "| `default/web2` | `p\\\\|q.yaml:3` |\n"
        "\n"
        "**Errors**\n"
        "\n"
        "- `` a`b|c\\d.yaml:3: metadata.labels.a|b` ``: value \\`x|y\\` \\\\ \\*not\\* \\_em\\_ \\<i\\> \\&amp; a\\\\|b\n"
        "- `` `x|.yaml:3: metadata.labels.a|b` ``: \\# heading\n"
        "- `` p\\|q.yaml:3: metadata.labels.a|b` ``: 1\\. list\n")


def test_diff_markdown_exactly():
    doc = {"command": "diff", "dryRun": True, "ok": False, "changes": True, "commit": "0123456789abcdef",
           "counts": {**dict.fromkeys(output.COUNTED, 0), "update": 1},
           "applications": [{"name": "ns/web", "objects": [
               {"subject": "Deployment/ns/web", "kind": "Deployment", "action": "update", "message": None,
                "diff": " a: 1\n-```\n+````x\n"},
               {"subject": "Service/ns/web", "kind": "Service", "action": "unchanged", "message": None, "diff": None}]}],
           "errors": [{"message": "boom <x> | y", "file": None, "line": None, "field": None,
                       "subject": "Deployment/ns/web"},
                      {"message": "--path 'a|b' does not exist", "file": None, "line": None, "field": None,
                       "subject": None}],
           "notes": ["pruning skipped: a\nb|`c`.yaml could not be read", "# two notes, two quotes"],
           "timings": {"totalSeconds": 0.1, "fetchSeconds": None}}
    assert output.render(doc, "markdown") == (
        "### gitops-agent diff: failed (0 create, 1 update, 0 prune, 0 failed)\n"
        "\n"
        "Commit `0123456789ab`\n"
        "\n"
        "| Application | Changes | Unchanged |\n"
        "|---|---|---|\n"
        "| `ns/web` | Deployment **update** | 1 |\n"
        "\n"
        "**Errors**\n"
        "\n"
        "- `Deployment/ns/web`: boom \\<x\\> | y\n"
        "- \\--path 'a|b' does not exist\n"
        "\n"
        "> pruning skipped: a\\\\nb|\\`c\\`.yaml could not be read\n"
        "\n"
        "> \\# two notes, two quotes\n"
        "\n"
        "<details><summary>Deployment/ns/web (update)</summary>\n"
        "\n"
        "`````diff\n"  # longer than the four backticks inside
        " a: 1\n"
        "-```\n"
        "+````x\n"
        "`````\n"
        "\n"
        "</details>\n")


@pytest.mark.parametrize("files, bad, verdict", [
    (2, ["a.yaml", "a.yaml"], "invalid: 2 problems in 1 of 2 files"),  # the files with problems, of those read
    (2, ["a.yaml", "b.yaml"], "invalid: 2 problems in 2 files"),
    (1, ["a.yaml"], "invalid: 1 problem in 1 file"),
    (3, ["a.yaml", "b.yaml", "b.yaml"], "invalid: 3 problems in 2 of 3 files"),
])
def test_the_validate_verdict_counts_the_files_with_problems(files, bad, verdict):
    result = Result(files=files, manifests=[], errors=[ManifestError(n, 1, "spec", "must be a mapping") for n in bad])
    doc = output.validate_document(result, exit_code=2, source={})
    assert output.render(doc, "text").splitlines()[0] == verdict
