"""The status page's data, as plain dicts: a row per Application, the list (filtered, sorted,
paged, counted) and what ``explain`` says of one Application. Pure: no I/O, no clock (``now``
is given), so the HTML pages and the JSON API show the same values.

The row has the keys of ``gitops-agent get`` (``agent.views.appview.row``: namespace, name,
health, ready, reason, commit, changed, suspended, created, age, message, source, image,
replicas) and two more: ``sync`` (``sync_state``) and ``subject`` (the subject of the commit that
last changed the Application, filled in by the caller from Git, None when unknown).
"""

from __future__ import annotations

import datetime
import math
from dataclasses import dataclass

from agent.kinds import health as health_
from agent.views import appview

HEALTHS = (*reversed(health_.ORDER), health_.Status.UNKNOWN)  # worst first: Degraded, Missing, ..., Healthy, Unknown
SORTS = ("name", "namespace", "health", "sync", "ready", "reason", "commit", "changed", "suspended", "age",
         "message")
PER_PAGE = (10, 25, 50, 100, 200)


def sync_state(app: dict) -> str:
    """``Synced`` when the ``Synced`` condition is True; else the condition's reason
    (``SyncFailed``, ``InvalidManifest``, ``PruneSkipped``, ``PruneBlocked``, ``Suspended``, ...); ``Unknown``
    before a pass wrote one."""
    synced = appview.condition(app, "Synced")
    if synced.get("status") == "True":
        return "Synced"
    return str(synced.get("reason") or "Unknown") if synced else "Unknown"


def row(app: dict, now: datetime.datetime) -> dict:
    """``appview.row`` of ``app`` plus ``sync``, ``subject`` (None: filled by the caller) and
    ``changedSha`` (the full ``status.lastChangedCommit``, to look the subject up)."""
    out = appview.row(app, now)
    status = app.get("status") or {}
    out["health"] = out["health"] or "Unknown"
    out["sync"] = sync_state(app)
    out["subject"] = None
    out["changedSha"] = status.get("lastChangedCommit") if isinstance(status.get("lastChangedCommit"), str) else None
    return out


@dataclass(frozen=True)
class Query:
    """What the list shows: filters (empty: all), sort key and direction, page (1-based) and size.
    ``name`` matches a substring of the name, ignoring case."""

    namespace: str = ""
    health: str = ""
    sync: str = ""
    name: str = ""
    sort: str = "name"
    desc: bool = False
    page: int = 1
    per: int = 50

    @classmethod
    def parse(cls, params: dict[str, list[str]]) -> "Query":
        """From a parsed query string (``urllib.parse.parse_qs``); an unknown sort, a bad page or
        size falls back to the default (``problems`` says which). Each filter is cut at 253 characters.
        ``continue`` (the API's ``metadata.continue``) is the page when ``page`` is not given."""
        def one(name: str) -> str:
            return (params.get(name) or [""])[0][:253]

        def number(name: str, default: int) -> int:
            text = one(name)
            return int(text) if text.isdigit() and 0 < len(text) < 7 else default
        per = number("per", 50)
        return cls(namespace=one("namespace"), health=one("health"), sync=one("sync"), name=one("name").strip(),
                   sort=one("sort") if one("sort") in SORTS else "name", desc=one("order") == "desc",
                   page=max(1, number("page", number("continue", 1))), per=per if per in PER_PAGE else 50)

    @staticmethod
    def problems(params: dict[str, list[str]]) -> list[str]:
        """What ``parse`` would fall back on in ``params``, one phrase each (``per=1000: must be
        one of 10, 25, 50, 100, 200``); empty when every value is valid. The API answers 400 with
        the first, the page shows them above the list."""
        out = []
        for key in ("page", "continue"):
            for text in params.get(key) or []:
                if not (text.isdigit() and 0 < len(text) < 7 and int(text) > 0):
                    out.append(f"{key}={text[:40]}: must be a whole number from 1")
        for text in params.get("per") or []:
            if not (text.isdigit() and int(text[:7]) in PER_PAGE):
                out.append(f"per={text[:40]}: must be one of {', '.join(map(str, PER_PAGE))}")
        for text in params.get("sort") or []:
            if text not in SORTS:
                out.append(f"sort={text[:40]}: must be one of {', '.join(SORTS)}")
        for text in params.get("order") or []:
            if text not in ("", "asc", "desc"):
                out.append(f"order={text[:40]}: must be asc or desc")
        return out

    def params(self, **changes) -> dict[str, str]:
        """The query string's parameters of this query with ``changes``, defaults left out."""
        values = {"namespace": self.namespace, "health": self.health, "sync": self.sync, "name": self.name,
                  "sort": self.sort, "order": "desc" if self.desc else "", "page": self.page, "per": self.per}
        values.update(changes)
        defaults = {"sort": "name", "page": 1, "per": 50, "order": ""}
        return {k: str(v) for k, v in values.items() if v not in ("", None) and defaults.get(k) != v}


def _sort_key(key: str):
    if key == "name":
        return lambda r: (r["name"] or "", r["namespace"] or "")
    if key == "health":
        return lambda r: (HEALTHS.index(r["health"]) if r["health"] in HEALTHS else len(HEALTHS), r["name"] or "")
    if key == "age":  # youngest first, as the smallest age
        return lambda r: ("" if r["created"] is None else r["created"], r["name"] or "")
    return lambda r: (r[key] is None, r[key] or "", r["name"] or "")


def matches(r: dict, q: Query) -> bool:
    return ((not q.namespace or r["namespace"] == q.namespace) and (not q.health or r["health"] == q.health)
            and (not q.sync or r["sync"] == q.sync) and (not q.name or q.name.lower() in (r["name"] or "").lower()))


def listing(rows: list[dict], q: Query, clamp: bool = True) -> dict:
    """The list for ``q`` from every row: ``items`` (the page's rows), ``total`` (rows after the
    filters), ``page``, ``pages``, ``per``, ``counts`` ({"health": {state: n}, "sync": {state: n}}
    over every row, unfiltered) and ``namespaces`` (sorted). A page past the end is the last
    page with ``clamp`` (the HTML page), else itself with no items (the API: a client paging
    until an empty page stops)."""
    chosen = [r for r in rows if matches(r, q)]
    chosen.sort(key=_sort_key(q.sort), reverse=q.desc != (q.sort == "age"))
    pages = max(1, math.ceil(len(chosen) / q.per))
    page = min(q.page, pages) if clamp else q.page
    return {"items": chosen[(page - 1) * q.per: page * q.per], "total": len(chosen), "page": page,
            "pages": pages, "per": q.per, "counts": counts(rows),
            "namespaces": sorted({r["namespace"] or "" for r in rows})}


def counts(rows: list[dict]) -> dict[str, dict[str, int]]:
    """{"health": {state: n}, "sync": {state: n}}, health in ``HEALTHS`` order, sync by name."""
    health: dict[str, int] = {}
    sync: dict[str, int] = {}
    for r in rows:
        health[r["health"]] = health.get(r["health"], 0) + 1
        sync[r["sync"]] = sync.get(r["sync"], 0) + 1
    ordered = {h: health[h] for h in HEALTHS if h in health}
    ordered.update({h: n for h, n in sorted(health.items()) if h not in ordered})
    return {"health": ordered, "sync": dict(sorted(sync.items()))}
