"""bench.push and its table: the signed webhook, the pushes' spread, the log's pass lines."""

import hashlib
import hmac
import json

from agent.server import webhook
from bench import push, report, stats, workload


def test_the_signature_is_githubs_and_the_agent_accepts_it():
    secret, body = b"s3cret", push.HOOK_BODY
    header = push.signature(secret, body)
    assert header == "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
    assert webhook.authenticate(secret, body, {"X-Hub-Signature-256": header}) == "github"
    assert webhook.authenticate(b"other", body, {"X-Hub-Signature-256": header}) is None


def test_the_pushes_spread_over_the_range():
    assert push.push_indices(1000) == [0, 100, 200, 300, 400, 500, 600, 700, 800, 900]
    assert push.push_indices(10000)[-1] == 9000
    assert push.push_indices(3) == [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]  # fewer Applications than pushes


def test_a_push_flips_between_the_two_tags():
    assert push.other_image(workload.IMAGE) == workload.CHANGED_IMAGE
    assert push.other_image(workload.CHANGED_IMAGE) == workload.IMAGE


def test_pass_lines_keeps_only_whole_pass_events():
    text = "\n".join([
        json.dumps({"event": "webhook", "result": "accepted"}),
        "a plain text line",
        json.dumps({"event": "pass", "trigger": "interval", "duration_seconds": 1.5}),
        "[1, 2]",
        json.dumps({"event": "pass", "trigger": "webhook", "duration_seconds": 0.2}),
        '{"event": "pass", "trigger": "watch"',  # half written
    ])
    assert [p["trigger"] for p in push.pass_lines(text)] == ["interval", "webhook"]


def test_status_writes_count_only_application_status_writes():
    before = {("PATCH", "heumsi.github.io", "applications", "status"): 10.0,
              ("LIST", "heumsi.github.io", "applications", ""): 3.0}
    after = {("PATCH", "heumsi.github.io", "applications", "status"): 25.0,
             ("LIST", "heumsi.github.io", "applications", ""): 4.0,
             ("APPLY", "apps", "deployments", ""): 1.0,
             ("APPLY", "heumsi.github.io", "applications", "status"): 2.0}
    assert push.status_writes(before, after) == 17


def test_the_push_table_has_one_row_per_size_and_agent():
    samples = stats.Samples()
    for value in (1.0, 2.0, 6.0):
        samples.add(1000, "agent:this", "push_applied_s", value)
        samples.add(1000, "agent:this", "push_passend_s", value + 1)
        samples.add(1000, "agent:this", "push_status_share", value / 10)
    samples.add(1000, "agent:this", "push_floor_s", 0.5)
    samples.add(1000, "agent:this", "changeone_s", 4.0)
    samples.add(1000, "agent:this", "run_nochange_s", 0.3)
    samples.add(1000, "agent:this", "run_nochange_lists", 4)
    samples.add(1000, "agent:this", "run_nochange_writes", 0)
    samples.add(1000, "agent:this", "run_peak_rss_mib", 120.4)
    samples.add(1000, "kubectl", "cold_s", 3.0)
    lines = report.push_table(samples, {"1000|agent:this|run_nochange": "LIST applications 1"})
    rows = [line for line in lines if line.startswith("| 1,000")]
    assert rows == ["| 1,000 | agent:this | 2.00 / 6.00 | 3.00 / 7.00 | 0.50 | 4.0 | 4.00 | 0.30 | 4, 0 | "
                    "20.0% / 60.0% | 120 | LIST applications 1 |"]
    assert report.push_table(stats.Samples(), {}) == ["Not measured in this run.", ""]
