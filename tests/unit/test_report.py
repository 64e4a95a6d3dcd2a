"""agent.report: invalid Applications are counted as failed and listed with their reasons."""

from __future__ import annotations

from agent.report import Report


def test_invalid_applications_are_counted_and_listed_with_their_reasons():
    report = Report(commit="a" * 40)
    report.add("ns/ok", "Application/ns/ok", "unchanged")
    report.add("ns/bad", "Deployment/ns/bad", "failed", "403 Forbidden")
    report.invalid += [("ns/web", "apps/web.yaml:5: metadata.namspace: unknown field"),
                       ("apps/broken.yaml", "apps/broken.yaml:1: invalid YAML: ...")]
    report.errors += ["x"]
    text = report.summary()
    assert text.splitlines()[-1] == ("sync failed: 0 created, 0 configured, 1 unchanged, 0 pruned, 3 failed; "
                                     "3 Applications failed: apps/broken.yaml, ns/bad, ns/web")
    assert "  ns/web: apps/web.yaml:5: metadata.namspace: unknown field" in text
    assert "  Deployment/ns/bad failed (403 Forbidden)" in text
    assert report.counts()["failed"] == 3


def test_no_invalid_no_section():
    report = Report(commit="a" * 40)
    report.add("ns/ok", "Application/ns/ok", "created")
    assert "invalid" not in report.summary() and report.summary().endswith("0 failed")


def test_an_invalid_file_is_named_once():
    from agent.report import Report

    report = Report(commit="c" * 40)
    report.invalid = [("list.yaml:1", "list.yaml:1: only Application documents are supported"),
                      ("shop/web", "apps/web.yaml:5: spec.port: must be an integer")]
    lines = report.summary().splitlines()
    assert "  list.yaml:1: only Application documents are supported" in lines
    assert "  shop/web: apps/web.yaml:5: spec.port: must be an integer" in lines
