"""agent.report: invalid Applications are counted as failed and listed with their reasons; an
invalid file is a file error, never an Application, and text, json and markdown agree."""

from __future__ import annotations

import json

import pytest

from agent.cli import output
from agent.engine.report import Report, printable
from agent.manifests.loader import ManifestError


def mixed() -> Report:
    """One unchanged, one failed write, one invalid Application, one unreadable file, one
    document of another kind, and a live Application kept because its file broke."""
    report = Report(commit="a" * 40)
    report.add("ns/ok", "Application/ns/ok", "unchanged")
    report.add("ns/bad", "Deployment/ns/bad", "failed", "403 Forbidden")
    report.add("ns/bad", "Service/ns/bad", "failed", "403 Forbidden")
    report.invalid += [("ns/web", "apps/web.yaml:5: metadata.namspace: unknown field"),
                       ("apps/broken.yaml", "apps/broken.yaml:1: invalid YAML: ..."),
                       ("apps/cm.yaml:1", "apps/cm.yaml:1: only Application (heumsi.github.io/v1) documents ...")]
    report.refused["ns/web"] = "apps/web.yaml:5: metadata.namspace: unknown field"
    report.refused["ns/old"] = "apps/broken.yaml:1: invalid YAML: ..."  # live, its file broke
    report.errors += ["x"]
    return report


def test_the_closing_line_names_applications_and_files_apart_and_counts_agree():
    report = mixed()
    last = report.summary().splitlines()[-1]
    assert last == ("sync failed: 0 created, 0 configured, 1 unchanged, 0 pruned, 4 failed; "
                    "3 Applications failed: ns/bad, ns/old, ns/web; 2 files failed: apps/broken.yaml, apps/cm.yaml:1")
    # failed: two objects of ns/bad whose writes failed, and ns/web and ns/old once each; no file
    assert report.counts() == {"unchanged": 1, "failed": 4}
    assert report.failing() == ["ns/bad", "ns/old", "ns/web"]
    assert report.file_errors() == ["apps/broken.yaml", "apps/cm.yaml:1"]


def test_json_and_markdown_count_what_the_text_counts():
    report = mixed()
    doc = output.pass_document(report, command="sync", dry_run=False, exit_code=2,
                               source={"repo": "r", "ref": None, "path": "."})
    assert doc["counts"]["failed"] == report.counts()["failed"] == 4
    apps = {a["name"]: [(o["subject"], o["action"], o["message"]) for o in a["objects"]] for a in doc["applications"]}
    assert sorted(apps) == ["ns/bad", "ns/ok", "ns/old", "ns/web"]  # never a file
    assert apps["ns/web"] == [("Application/ns/web", "failed", "apps/web.yaml:5: metadata.namspace: unknown field")]
    # the refusals' errors are the file problems (report.problems); they add no second entry
    assert [(e["subject"], e["message"]) for e in doc["errors"]] == [
        ("Deployment/ns/bad", "403 Forbidden"), ("Service/ns/bad", "403 Forbidden"), (None, "x")]
    markdown = output.render(doc, "markdown")
    assert markdown.startswith("### gitops-agent sync: failed (0 create, 0 update, 1 unchanged, 0 prune, 4 failed)")
    assert "| `ns/web` | Application **failed** | 0 |" in markdown and "broken.yaml` |" not in markdown


def test_an_application_with_a_failed_object_is_not_counted_again_when_refused():
    report = Report(commit="b" * 40)
    report.add("ns/a", "Service/ns/a", "failed", "quota")
    report.refused["ns/a"] = "kept: its file is invalid"
    assert report.counts() == {"failed": 1} and report.failing() == ["ns/a"]


def test_invalid_applications_are_listed_with_their_reasons():
    report = mixed()
    text = report.summary()
    assert "  ns/web: apps/web.yaml:5: metadata.namspace: unknown field" in text
    assert "  apps/broken.yaml:1: invalid YAML: ..." in text  # a file's error already starts with file:line
    assert "  Deployment/ns/bad failed (403 Forbidden)" in text


def test_no_invalid_no_section():
    report = Report(commit="a" * 40)
    report.add("ns/ok", "Application/ns/ok", "created")
    assert "invalid" not in report.summary() and report.summary().endswith("0 failed")


def test_only_a_file_error_lists_no_application():
    report = Report(commit="c" * 40)
    report.invalid = [("list.yaml:1", "list.yaml:1: only Application documents are supported")]
    report.errors = ["list.yaml:1: only Application documents are supported"]
    lines = report.summary().splitlines()
    assert "  list.yaml:1: only Application documents are supported" in lines
    assert lines[-1] == "sync failed: 0 created, 0 configured, 0 unchanged, 0 pruned, 0 failed; 1 file failed: list.yaml:1"


def test_files_are_counted_once_however_many_of_their_documents_failed():
    report = Report(commit="d" * 40)
    report.invalid = [("apps.yaml:22", "apps.yaml:22: only Application documents are supported"),
                      ("apps.yaml:26", "apps.yaml:26: only Application documents are supported"),
                      ("ns/web", "web.yaml:3: spec: is required")]
    report.refused["ns/web"] = "web.yaml:3: spec: is required"
    report.errors = ["x"]
    assert report.file_errors() == ["apps.yaml:22", "apps.yaml:26"] and report.failed_files() == ["apps.yaml"]
    assert report.summary().splitlines()[-1] == ("sync failed: 0 created, 0 configured, 0 unchanged, 0 pruned, 1 failed; "
                                                 "1 Application failed: ns/web; 1 file failed: apps.yaml:22, apps.yaml:26")
    report.invalid.append(("broken.yaml", "broken.yaml:1: invalid YAML: ..."))
    assert report.summary().endswith("; 2 files failed: apps.yaml:22, apps.yaml:26, broken.yaml")


def test_json_and_markdown_name_the_applications_the_text_counts_as_failed():
    report = mixed()
    doc = output.pass_document(report, command="sync", dry_run=False, exit_code=2,
                               source={"repo": "r", "ref": None, "path": "."})
    failed = sorted(a["name"] for a in doc["applications"] if any(o["action"] == "failed" for o in a["objects"]))
    assert failed == report.failing() and f"{len(failed)} Applications failed" in report.summary()
    markdown = output.render(doc, "markdown")
    assert sum(line.count("**failed**") > 0 for line in markdown.splitlines() if line.startswith("| `")) == len(failed)


def test_a_documents_error_on_another_line_of_its_file_names_the_file_once():
    report = Report(commit="e" * 40)
    report.invalid = [("m.yaml:1", "m.yaml:4: spec.port: duplicate key 'port' (first defined on line 3)"),
                      ("broken.yaml", "broken.yaml:2: invalid YAML: ..."),
                      ("ns/web", "web.yaml:3: spec: is required")]
    report.refused["ns/web"] = "web.yaml:3: spec: is required"
    text = report.summary().splitlines()
    assert "  m.yaml:4: spec.port: duplicate key 'port' (first defined on line 3)" in text
    assert "  broken.yaml:2: invalid YAML: ..." in text and "  ns/web: web.yaml:3: spec: is required" in text
    # an Application refused by its location keeps it: it is what the closing line names, said
    # as a place so that two locations do not follow each other
    report.invalid.append(("n.yaml:1", "n.yaml:3: metadata.name: bad"))
    report.refused["n.yaml:1"] = "n.yaml:3: metadata.name: bad"
    assert "  Application at n.yaml:1: n.yaml:3: metadata.name: bad" in report.summary().splitlines()
    assert "; 2 Applications failed: n.yaml:1, ns/web;" in report.summary().splitlines()[-1]
    # the same location twice is said once (a document of another kind: refused at its own line)
    report.invalid.append(("k.yaml:1", "k.yaml:1: only Application documents are supported"))
    report.refused["k.yaml:1"] = "k.yaml:1: only Application documents are supported"
    assert "  k.yaml:1: only Application documents are supported" in report.summary().splitlines()


@pytest.mark.parametrize("text, shown", [
    ("apps/web.yaml", "apps/web.yaml"), ("apps/café.yaml", "apps/café.yaml"), ("a b.yaml", "a b.yaml"),
    ("a\nb.yaml", "a\\nb.yaml"), ("a\r\tb", "a\\r\\tb"), ("\x1b[31mred.yaml", "\\x1b[31mred.yaml"),
    ("nul\x00.yaml", "nul\\x00.yaml"), ("del\x7f", "del\\x7f"), ("next\x85line", "next\\x85line"),
    ("rtl\u202eevil", "rtl\\u202eevil"), ("sep\u2028x", "sep\\u2028x"), ("tag\U000e0041", "tag\\U000e0041"),
])
def test_printable_escapes_what_is_not_printable_and_keeps_the_rest(text, shown):
    assert printable(text) == shown


CONTROL = "apps/a\nb\x1b[2J.yaml"  # a newline and ESC in a file name, as Git allows


def control_report() -> Report:
    report = Report(commit="c" * 40)
    error = ManifestError(CONTROL, 3, "spec.port", "must be an integer between 1 and 65535 (got 0)")
    report.problems.append(error)
    report.errors.append(str(error))
    report.invalid.append((f"{CONTROL}:1", str(error)))
    report.notes.append(f"pruning skipped: {CONTROL} could not be read")
    return report


def test_a_file_name_with_control_characters_is_escaped_in_text_and_markdown_and_kept_in_json():
    report = control_report()
    shown = "apps/a\\nb\\x1b[2J.yaml"
    summary = report.summary()
    assert "\x1b" not in summary and f"  {shown}:3: spec.port: must be an integer between 1 and 65535 (got 0)" \
        in summary.splitlines()
    assert f"note: pruning skipped: {shown} could not be read" in summary.splitlines()
    assert summary.splitlines()[-1].endswith(f"1 file failed: {shown}:1")
    doc = output.pass_document(report, command="sync", dry_run=False, exit_code=2,
                               source={"repo": "r", "ref": None, "path": "."})
    assert [output.error_line(e) for e in doc["errors"]] == [f"{shown}:3: spec.port: must be an integer between 1 "
                                                             "and 65535 (got 0)"]
    markdown = output.render(doc, "markdown")
    assert "\x1b" not in markdown and f"- `{shown}:3: spec.port`: must be" in markdown
    # plain text, not a code span: each backslash of the escapes, and the [, escaped to read as it is
    assert "> pruning skipped: apps/a\\\\nb\\\\x1b\\[2J.yaml could not be read" in markdown
    for fmt in ("markdown", "text"):
        assert all(line.isprintable() for line in output.render(doc, fmt).splitlines())
    assert json.loads(output.render(doc, "json"))["errors"][0]["file"] == CONTROL  # the real name


def test_validate_markdown_escapes_a_file_name_in_its_table():
    from agent.cli.validate import Result
    from agent.manifests.loader import Manifest

    result = Result(files=1, manifests=[Manifest("default", "web", {}, CONTROL, 1)])
    markdown = output.render(output.validate_document(result, exit_code=0, source={}), "markdown")
    assert "| `default/web` | `apps/a\\nb\\x1b[2J.yaml:1` |" in markdown
