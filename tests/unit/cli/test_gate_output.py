"""Health per Application and ``--wait``'s result in the text summary, ``-o json`` and
``-o markdown``; the markdown plan's cap (issue 32: 40 new Applications made 104 KB, GitHub
refuses a comment over 65,536 characters)."""

import json
from pathlib import Path

import jsonschema
import pytest

from agent.cli import output
from agent.engine import readiness
from agent.engine.report import CREATED, UNCHANGED, Report

ROOT = Path(__file__).resolve().parents[3]
SCHEMA = json.loads((ROOT / "agent" / "report.schema.json").read_text())
SHA = "5f0c2e3d9a1b4c6d8e7f00112233445566778899"
SOURCE = {"repo": None, "ref": None, "path": "."}
PROGRESSING = {"status": "Progressing", "message": "Deployment: waiting for rollout to finish: 0 of 2 replicas available"}
HEALTHY = {"status": "Healthy", "message": "all children healthy"}


def valid(doc):
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    return doc


def report_of(health):
    report = Report(commit=SHA)
    for key in health:
        report.add(key, f"Application/{key}", CREATED)
        report.add(key, f"Deployment/{key}", UNCHANGED)
    report.health = dict(health)
    return report


def test_the_text_summary_gives_each_applications_health_after_its_objects():
    report = report_of({"ns/web": PROGRESSING, "ns/api": HEALTHY})
    assert report.summary().splitlines() == [
        f"commit {SHA}", "ns/api:", "  Application/ns/api created", "  Deployment/ns/api unchanged",
        "  health: Healthy (all children healthy)", "ns/web:", "  Application/ns/web created",
        "  Deployment/ns/web unchanged",
        "  health: Progressing (Deployment: waiting for rollout to finish: 0 of 2 replicas available)",
        "sync succeeded: 2 created, 0 configured, 2 unchanged, 0 pruned, 0 failed"]


def test_json_has_health_per_application_and_null_in_a_dry_run():
    report = report_of({"ns/web": PROGRESSING})
    doc = valid(output.pass_document(report, command="sync", dry_run=False, exit_code=0, source=SOURCE))
    assert doc["applications"][0]["health"] == PROGRESSING and doc["wait"] is None
    assert list(doc["applications"][0]) == ["name", "health", "objects"]
    dry = valid(output.pass_document(report, command="diff", dry_run=True, exit_code=1, source=SOURCE))
    assert dry["applications"][0]["health"] is None


def waited(result, seconds=4.25, states=None, skipped=(), error=None, timeout=90.0):
    return readiness.Result(result, seconds, timeout, states or {}, error, list(skipped))


@pytest.mark.parametrize("result, verdict", [
    (waited("healthy", states={"ns/web": "healthy"}), "wait succeeded: every Application healthy after 4.2s"),
    (waited("timeout", 90.4, {"ns/web": "waiting", "ns/api": "healthy"}),
     "wait failed: 1 Application not healthy after 1m30s (timed out: --wait=1m30s): ns/web"),
    (waited("failed", states={"ns/web": "failed", "ns/db": "waiting"}),
     "wait failed: 2 Applications not healthy after 4.2s (Degraded or Stalled: waiting cannot help): ns/db, ns/web"),
    (waited("interrupted", states={"ns/web": "waiting"}),
     "wait failed: 1 Application not healthy after 4.2s (interrupted by a signal): ns/web"),
    (waited("error", error="reading the Applications while waiting failed: boom"),
     "wait failed: reading the Applications while waiting failed: boom"),
])
def test_the_wait_verdict(result, verdict):
    doc = output.wait_document(result, {"ns/web": PROGRESSING})
    assert output.wait_verdict(doc) == verdict


def test_wait_lines_and_document():
    result = waited("timeout", 90.4, {"ns/web": "waiting", "ns/api": "healthy"}, skipped=["ns/held"])
    doc = output.wait_document(result, {"ns/web": PROGRESSING, "ns/api": HEALTHY})
    assert doc == {"result": "timeout", "seconds": 90.4, "timeoutSeconds": 90.0, "error": None,
                   "notHealthy": [{"name": "ns/web", "health": PROGRESSING}], "skipped": ["ns/held"]}
    assert output.wait_lines(doc) == [
        "  ns/web: Progressing (Deployment: waiting for rollout to finish: 0 of 2 replicas available)",
        "  ns/held: not waited for (suspended, or a child held by its annotation)",
        "wait failed: 1 Application not healthy after 1m30s (timed out: --wait=1m30s): ns/web"]
    report = report_of({"ns/web": PROGRESSING, "ns/api": HEALTHY})
    full = valid(output.pass_document(report, command="sync", dry_run=False, exit_code=1, source=SOURCE, wait=doc))
    assert full["wait"] == doc
    md = output.markdown(full)
    assert "| Application | Changes | Unchanged | Health |\n|---|---|---|---|\n" in md
    assert "| `ns/web` | Application **create** | 1 | Progressing (Deployment: waiting for rollout to finish: 0 of 2 " \
           "replicas available) |" in md
    assert "**Wait**: wait failed: 1 Application not healthy after 1m30s (timed out: --wait=1m30s): ns/web\n" in md
    assert md.startswith("### gitops-agent sync: changed, but the wait failed: timeout (")
    assert full["ok"] is True and full["wait"]["result"] == "timeout"  # ok is the pass's (report.md)
    assert output.text(full).splitlines()[-1].startswith("sync: changed, but the wait failed: timeout (")


@pytest.mark.parametrize("seconds, shown", [(0, "0s"), (4.25, "4.2s"), (59.94, "59.9s"), (60, "1m0s"), (20.0, "20s"),
                                            (8.0, "8s"), (59.97, "1m0s"), (0.04, "0s"),
                                            (90.4, "1m30s"), (300, "5m0s"), (3723, "1h2m3s"), (7200, "2h0m0s")])
def test_duration(seconds, shown):
    assert output.duration(seconds) == shown


DIFF = "".join(f"+  line {i}: {'x' * 60}\n" for i in range(40))


def plan_of(apps: int) -> dict:
    report = Report(commit=SHA)
    for i in range(apps):
        for kind in ("Application", "Deployment", "Service"):
            report.add(f"ns/app{i:02}", f"{kind}/ns/app{i:02}", CREATED)
    diffs = {f"{kind}/ns/app{i:02}": DIFF for i in range(apps) for kind in ("Application", "Deployment", "Service")}
    return output.pass_document(report, command="diff", dry_run=True, exit_code=1, source=SOURCE, diffs=diffs)


def test_a_plan_of_45_applications_is_cut_under_60000_characters_after_its_whole_table():
    doc = plan_of(45)
    whole = output.markdown(doc, limit=10**9)
    assert len(whole) > 300_000  # 135 diffs
    md = output.markdown(doc)
    assert len(md) <= output.MARKDOWN_LIMIT == 60_000
    assert md.startswith("### gitops-agent diff: changes pending")
    for i in range(45):  # the summary table is whole
        assert f"| `ns/app{i:02}` | Application **create**, Deployment **create**, Service **create** | 0 |" in md
    kept = md.count("<details>")
    assert 0 < kept < 135 and md.count("</details>") == kept and md.count("```diff") == kept  # whole diffs only
    last = md.rstrip("\n").splitlines()[-1]
    assert last == (f"**Cut to stay under 60,000 characters** (GitHub refuses a comment over 65,536): {135 - kept} "
                    f"diffs left out ({len(whole) - len(md[:md.rindex('**Cut')].rstrip()):,} characters). The full "
                    "report is in the CI log (`-o text`) or `-o json`.")


def test_a_plan_that_fits_is_not_cut_and_a_huge_table_is_cut_by_rows():
    small = output.markdown(plan_of(3))
    assert "Cut to stay" not in small and small.count("<details>") == 9
    md = output.markdown(plan_of(45), limit=3_000)
    assert len(md) <= 3_000 and "| `ns/app00` |" in md and "| `ns/app44` |" not in md
    assert "table rows, 135 diffs left out" in md and "<details>" not in md


def test_errors_and_notes_are_cut_whole_and_counted():
    report = Report(commit=SHA)
    report.errors += [f"error number {i} " + "e" * 100 for i in range(50)]
    report.notes += [f"note {i}" for i in range(3)]
    doc = output.pass_document(report, command="sync", dry_run=False, exit_code=2, source=SOURCE)
    md = output.markdown(doc, limit=2_500)
    assert len(md) <= 2_500 and "- error number 0 " in md
    kept = md.count("- error number")
    assert f"{50 - kept} errors, 3 notes left out" in md


def test_a_child_held_by_its_task_is_held_in_every_format():
    """A BeforeRollout task holds the Application's other children (``engine.taskgate``): the
    action ``held`` is a word of the schema, counted, and said in the summaries."""
    from agent.engine.report import HELD

    report = Report(commit=SHA)
    report.add("ns/web", "Job/ns/web-migrate-3f2a9c1e", CREATED)
    report.add("ns/web", "Deployment/ns/web", HELD, "waits for task migrate (Job web-migrate-3f2a9c1e) to succeed")
    doc = valid(output.pass_document(report, command="diff", dry_run=True, exit_code=1, source=SOURCE))
    assert doc["counts"]["held"] == 1 and list(doc["counts"]) == list(output.COUNTED)
    assert doc["applications"][0]["objects"][1]["action"] == "held"
    text = output.render(doc, "text")
    assert "  Deployment/ns/web held (waits for task migrate (Job web-migrate-3f2a9c1e) to succeed)" in text
    assert text.endswith("(1 create, 0 update, 0 prune, 0 failed, 1 held)")
    assert report.summary().endswith("0 pruned, 0 failed, 1 held")
    assert "held" in output.render(doc, "markdown")
