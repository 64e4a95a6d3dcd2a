"""What ``validate`` refuses in ``spec.schedules``, offline, as ``file:line: field: rule``
(agent.manifests.schedulerules and the schema): names, the CronJob name's length, cron
expressions parsed by APScheduler, TZ= prefixes, time zones, out-of-range numbers."""

from __future__ import annotations

import pytest

from agent.manifests.loader import load
from agent.manifests.schedulerules import cron_problem, zone_problem

HEAD = "apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata:\n  name: {name}\nspec:\n  image: shop:1\n" \
       "  port: 80\n  schedules:\n"


def errors(schedules: str, name: str = "shop") -> list[tuple[int, str, str]]:
    result = load({"a.yaml": (HEAD.format(name=name) + schedules).encode()}, "default")
    return [(e.line, e.field, e.message) for e in result.errors]


@pytest.mark.parametrize("expression", ["* * * * *", "0 3 * * *", "*/5 9-17 * * 1-5", "0 0 1 JAN,JUL *",
                                        "0 0 * * SUN", "@daily", "@hourly", "@yearly", "@annually", "@monthly",
                                        "@weekly", "@midnight", "0 0 31 2 *"])
def test_a_cron_expression_or_a_macro_is_a_schedule(expression):
    assert cron_problem(expression) is None


@pytest.mark.parametrize("expression, words", [
    ("61 * * * *", "the last value (61) is higher than the maximum value (59)"),
    ("0 24 * * *", "higher than the maximum value (23)"),
    ("0 0 0 * *", "lower than the minimum value (1)"),
    ("0 0 * 13 *", "higher than the maximum value (12)"),
    ("0 0 * * 8", "higher than the maximum value (6)"),
    ("* * *", "Wrong number of fields; got 3, expected 5"),
    ("every day", "Wrong number of fields"),
    ("@every 1h", "or one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly"),
    ("TZ=UTC 0 3 * * *", "must not start with TZ= or CRON_TZ="),
    ("CRON_TZ=Europe/Berlin 0 3 * * *", "set timeZone instead"),
])
def test_a_field_out_of_range_or_a_time_zone_prefix_is_refused(expression, words):
    assert words in (cron_problem(expression) or "")


def test_time_zones_are_the_iana_ones():
    assert zone_problem("Europe/Berlin") is None and zone_problem("UTC") is None
    for bad in ("Mars/Olympus", "Local", "../etc/passwd", "europe/berlin "):
        assert "must be an IANA time zone" in (zone_problem(bad) or ""), bad


def test_each_refusal_names_its_file_line_and_field():
    found = errors("    Nightly_Report:\n      schedule: '@daily'\n"
                   "    report:\n      schedule: 61 3 * * *\n      timeZone: Mars/Olympus\n"
                   "      retries: 101\n      timeoutSeconds: 0\n      keep: {succeeded: -1, failed: 101}\n"
                   "      concurrencyPolicy: Sometimes\n      startingDeadlineSeconds: 0\n"
                   "    tz:\n      schedule: TZ=UTC 0 3 * * *\n"
                   "    nameless: {}\n")
    fields = {field: (line, message) for line, field, message in found}
    assert fields["spec.schedules.Nightly_Report"][0] == 9
    assert "DNS-1123 label" in fields["spec.schedules.Nightly_Report"][1]
    assert fields["spec.schedules.report.schedule"][0] == 12
    assert "higher than the maximum value (59)" in fields["spec.schedules.report.schedule"][1]
    assert fields["spec.schedules.report.timeZone"][0] == 13
    assert fields["spec.schedules.report.retries"][1] == "must be an integer between 0 and 100 (got 101)"
    assert fields["spec.schedules.report.timeoutSeconds"][1] == "must be an integer between 1 and 2147483647 (got 0)"
    assert fields["spec.schedules.report.keep.succeeded"][1] == "must be an integer between 0 and 100 (got -1)"
    assert fields["spec.schedules.report.keep.failed"][1] == "must be an integer between 0 and 100 (got 101)"
    assert fields["spec.schedules.report.concurrencyPolicy"][1] == \
        'must be one of Allow, Forbid, Replace (got "Sometimes")'
    assert fields["spec.schedules.report.startingDeadlineSeconds"][1].startswith("must be an integer between 1")
    assert "TZ=" in fields["spec.schedules.tz.schedule"][1]
    assert fields["spec.schedules.nameless.schedule"][1] == "is required"


def test_a_cronjob_name_over_52_characters_is_refused():
    name = "a" * 40
    assert errors(f"    {'b' * 11}:\n      schedule: '@daily'\n", name) == []  # 40 + 1 + 11 = 52
    [(line, field, message)] = errors(f"    {'b' * 12}:\n      schedule: '@daily'\n", name)
    assert (line, field) == (9, f"spec.schedules.{'b' * 12}")
    assert message.startswith(f"the CronJob name '{name}-{'b' * 12}' must be at most 52 characters (got 53)")


def test_a_schedules_container_fields_follow_the_applications_rules():
    found = errors("    report:\n      schedule: '@daily'\n      image: 'shop 2'\n      env: {1A: x, B: 2}\n"
                   "      resources: {requests: {cpu: lots}}\n")
    fields = {field: message for _, field, message in found}
    assert "no whitespace" in fields["spec.schedules.report.image"]
    assert "C identifier" in fields["spec.schedules.report.env.1A"]
    assert fields["spec.schedules.report.env.B"].startswith("must be a string, or a mapping")
    assert "quantity" in fields["spec.schedules.report.resources.requests.cpu"]
