"""The rules of ``spec.schedules`` the schema cannot say: names, the CronJob's name, the cron
expression and the time zone. Pure.

A cron expression is parsed by APScheduler's ``CronTrigger.from_crontab`` (a well-kept parser,
not one by hand): 5 fields, each in its range (minute 0-59, hour 0-23, day of month 1-31, month
1-12 or JAN-DEC, day of week 0-6 or SUN-SAT, as the CronJob controller's parser reads them), or a
macro (``cronjob.MACROS``). A ``TZ=`` or ``CRON_TZ=`` prefix is refused: Kubernetes refuses it
in a CronJob's ``schedule`` since 1.25 (``timeZone`` says it). A time zone must be one the
IANA database (``zoneinfo``) knows.
"""

from __future__ import annotations

import re
import zoneinfo

from apscheduler.triggers.cron import CronTrigger

from agent.kinds import cronjob
from agent.manifests.nodes import show as _show

LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
LABEL_RULE = ("a DNS-1123 label: at most 63 lowercase letters, digits and '-', starting and ending with a "
              "letter or digit")
FIELDS = "minute hour day-of-month month day-of-week"


def cron_problem(expression: str) -> str | None:
    """Why ``expression`` is not a schedule the CronJob controller runs, or None when it is."""
    text = expression.strip()
    if text.upper().startswith(("TZ=", "CRON_TZ=")):
        return (f"must not start with TZ= or CRON_TZ= (Kubernetes refuses it; set timeZone instead) "
                f"(got {_show(expression)})")
    if text.startswith("@"):
        if text in cronjob.MACROS:
            return None
        return (f"must be 5 cron fields ({FIELDS}) or one of {', '.join(cronjob.MACROS)} "
                f"(got {_show(expression)})")
    try:
        CronTrigger.from_crontab(text, timezone="UTC")
    except ValueError as err:
        return f"must be 5 cron fields ({FIELDS}), each in its range, or a macro such as @daily: {err} " \
               f"(got {_show(expression)})"
    return None


def zone_problem(name: str) -> str | None:
    """Why ``name`` is not an IANA time zone ``zoneinfo`` knows, or None when it is."""
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return f"must be an IANA time zone such as Europe/Berlin or UTC (got {_show(name)})"
    return None


def problems(schedules, app: str | None = None) -> list[tuple[tuple, str]]:
    """(path inside spec, message) of each rule ``spec.schedules`` (``schedules``) breaks: a
    name that is not a DNS label, a CronJob name ``<app>-<name>`` over ``cronjob.MAX_NAME``
    characters (when the Application's name ``app`` is known), a schedule that is not a cron
    expression (``cron_problem``), an unknown ``timeZone`` (``zone_problem``). Only values of
    the right type are looked at (a wrong type is the schema's problem)."""
    out: list[tuple[tuple, str]] = []
    if not isinstance(schedules, dict):
        return out
    for name, schedule in schedules.items():
        where = ("schedules", name)
        if not isinstance(name, str) or len(name) > 63 or not LABEL.fullmatch(name):
            out.append((where, f"the name must be {LABEL_RULE} (got {_show(name)})"))
        elif app is not None and len(cronjob.object_name(app, name)) > cronjob.MAX_NAME:
            out.append((where, f"the CronJob name {cronjob.object_name(app, name)!r} must be at most "
                               f"{cronjob.MAX_NAME} characters (got {len(cronjob.object_name(app, name))}): "
                               "shorten the schedule's or the Application's name"))
        if not isinstance(schedule, dict):
            continue
        if isinstance(schedule.get("schedule"), str) and (why := cron_problem(schedule["schedule"])):
            out.append((where + ("schedule",), why))
        if isinstance(schedule.get("timeZone"), str) and (why := zone_problem(schedule["timeZone"])):
            out.append((where + ("timeZone",), why))
    return out
