"""The status page's HTML: the list (``/``) and one Application (``/applications/NS/NAME``). Pure.

Every value from Git or the cluster goes through ``t`` (``html.escape`` with quotes, inside
``<bdi>`` so right-to-left text cannot reorder what is around it) or ``attr``; links are only
ones this module builds (``/applications/...`` with each part percent-encoded) or the ``https://``
addresses of ``gitinfo``. No inline script or style: the page's one script and style sheet are
``/static/page.js`` and ``/static/page.css`` (``agent/server/static``), so the
Content-Security-Policy can forbid everything else. The script never renders a value itself:
it asks ``/_parts/`` for ``list_parts`` (this module's HTML of the parts that change, each
marked ``data-part`` with an ``id``) and swaps them in, so there is one row implementation.
"""

from __future__ import annotations

import datetime
import html
import urllib.parse

from agent.server import views

COLUMNS = (("namespace", "Namespace"), ("name", "Name"), ("health", "Health"), ("sync", "Sync"),
           ("ready", "Ready"), ("reason", "Reason"), ("commit", "Commit"), ("changed", "Changed"),
           ("subject", "Last change"), ("suspended", "Suspended"), ("age", "Age"), ("observed", "Observed"),
           ("message", "Message"))
"""(row key, heading) of the list's columns, in order; ``subject`` and ``observed`` (when and by what
the status was observed: ``12m ago by run``) cannot be sorted on (``UNSORTED``)."""
UNSORTED = ("subject", "observed")


def t(value) -> str:
    """``value`` as escaped text isolated for bidi (``-`` for None)."""
    return "<bdi>" + html.escape("-" if value is None else str(value), quote=True) + "</bdi>"


def attr(value) -> str:
    return html.escape("" if value is None else str(value), quote=True)


STATE_CLASSES = frozenset((
    "Healthy", "Synced", "True", "Normal", "Progressing", "Suspended", "Missing", "Unknown", "Warning", "Degraded",
    "SyncFailed", "InvalidManifest", "InvalidSpec", "OwnershipConflict", "ImmutableConflict", "Invalid", "False",
    "Succeeded", "Pending", "Running", "Failed", "TaskRunning", "TaskFailed"))
"""The values (health, sync, condition status, Event type, a task's phase) that have a ``s-VALUE`` class."""


def state_class(value) -> str:
    """The class for a state ``value``: ``s-VALUE`` when ``value`` is exactly one of
    ``STATE_CLASSES``, else the neutral ``s-other``. Never any other text of a value in a class."""
    return f"s-{value}" if isinstance(value, str) and value in STATE_CLASSES else "s-other"


def app_href(namespace: str, name: str) -> str:
    return "/applications/" + urllib.parse.quote(namespace or "", safe="") + "/" + urllib.parse.quote(name or "", safe="")


def link(url: str | None, text) -> str:
    """An ``https://`` link (from ``gitinfo``) opened without a referrer, else the text alone."""
    if not url or not url.startswith("https://"):
        return t(text)
    return f'<a href="{attr(url)}" rel="noopener noreferrer" target="_blank">{t(text)}</a>'


def layout(title: str, body: str, page: str) -> str:
    """A whole document: ``page`` names it for the script (``list`` or ``detail``)."""
    return ('<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<meta name="color-scheme" content="light dark">'
            f'<title>{html.escape(title)} - gitops-agent</title>'
            '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">'
            '<link rel="stylesheet" href="/static/page.css"><script src="/static/page.js" defer></script>'
            f'</head><body data-page="{page}"><header><a class="home" href="/">gitops-agent</a></header>'
            f'<main>{body}</main></body></html>\n')


def fragment(parts: str) -> str:
    """A document of ``parts`` alone (elements with ``data-part`` and an ``id``) for the script
    to parse and swap in; tables' parts inside a ``<table>`` so the parser keeps them."""
    return f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"></head><body>{parts}</body></html>\n'


def last_pass(info: dict) -> str:
    """The last pass's line; its end as a UTC time, not an age, so that the list's parts change
    only when something did (the script's poll then answers 304)."""
    if not info:
        return '<p class="pass" id="pass" data-part>No pass has finished yet.</p>'
    end = datetime.datetime.fromtimestamp(info["end"], datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    result = "succeeded" if info["ok"] else "failed"
    commit = (info.get("commit") or "")[:8] or "-"
    return (f'<p class="pass" id="pass" data-part>Last pass {result} at {end}, commit <code>{t(commit)}</code> '
            f'({t(info["trigger"])}, {info["seconds"]:.1f}s).</p>')


def counts(listing: dict, q: views.Query) -> str:
    parts = []
    for group, label in (("health", "Health"), ("sync", "Sync")):
        chips = "".join(f'<a class="chip {state_class(state)}" href="/?{attr(urllib.parse.urlencode(q.params(**{group: state}, page=1)))}">'
                        f'{t(state)} <b>{n}</b></a>' for state, n in listing["counts"][group].items())
        parts.append(f'<div class="counts" data-group="{group}"><span class="label">{label}</span>{chips}</div>')
    return '<section id="counts" data-part>' + "".join(parts) + "</section>"


def _options(values, chosen: str, everything: str) -> str:
    out = [f'<option value="">{html.escape(everything)}</option>']
    for v in values:
        sel = " selected" if v == chosen else ""
        out.append(f'<option value="{attr(v)}"{sel}>{html.escape(v)}</option>')
    return "".join(out)


def filters(listing: dict, q: views.Query) -> str:
    healths = list(dict.fromkeys([*views.HEALTHS, *listing["counts"]["health"]]))
    syncs = sorted({"Synced", *listing["counts"]["sync"]})
    namespaces = list(dict.fromkeys([*listing["namespaces"], *([q.namespace] if q.namespace else [])]))
    return ('<form id="filters" method="get" action="/" role="search">'
            f'<label>Namespace <select name="namespace">{_options(namespaces, q.namespace, "all")}</select></label>'
            f'<label>Health <select name="health">{_options(healths, q.health, "all")}</select></label>'
            f'<label>Sync <select name="sync">{_options(syncs, q.sync, "all")}</select></label>'
            f'<label>Name <input type="search" name="name" value="{attr(q.name)}" maxlength="253"></label>'
            f'<input type="hidden" name="sort" value="{attr(q.sort)}">'
            f'<input type="hidden" name="order" value="{"desc" if q.desc else ""}">'
            f'<label>Per page <select name="per">{_options([str(p) for p in views.PER_PAGE], str(q.per), "50")}</select></label>'
            '<button type="submit">Filter</button></form>')


def head(q: views.Query) -> str:
    cells = []
    for key, label in COLUMNS:
        if key in UNSORTED:
            cells.append(f'<th data-key="{key}">{label}</th>')
            continue
        desc = not q.desc if q.sort == key else False
        mark = (" ▼" if q.desc else " ▲") if q.sort == key else ""
        href = "/?" + urllib.parse.urlencode(q.params(sort=key, order="desc" if desc else "", page=1))
        cells.append(f'<th data-key="{key}"><a class="sort" href="{attr(href)}">{label}{mark}</a></th>')
    return '<thead id="head" data-part><tr>' + "".join(cells) + "</tr></thead>"


def cell(key: str, r: dict) -> str:
    if key == "name":
        return f'<td class="c-name"><a href="{attr(app_href(r["namespace"], r["name"]))}">{t(r["name"])}</a></td>'
    cls = f" {state_class(r[key])}" if key in ("health", "sync") else ""
    title = f' title="{attr(r[key])}"' if key in ("message", "subject") and r[key] else ""
    return f'<td class="c-{key}{cls}"{title}>{t(r[key])}</td>'


def rows(items: list[dict]) -> str:
    if not items:
        return (f'<tbody id="rows" data-part><tr><td class="empty" colspan="{len(COLUMNS)}">'
                'No Application matches.</td></tr></tbody>')
    return '<tbody id="rows" data-part>' + "".join(
        "<tr>" + "".join(cell(k, r) for k, _ in COLUMNS) + "</tr>" for r in items) + "</tbody>"


def pager(listing: dict, q: views.Query) -> str:
    def go(page: int, text: str) -> str:
        href = "/?" + urllib.parse.urlencode(q.params(page=page))
        return f'<a class="page" rel="{text.lower()}" href="{attr(href)}">{text}</a>'
    prev = go(listing["page"] - 1, "Prev") if listing["page"] > 1 else '<span class="page off">Prev</span>'
    nxt = go(listing["page"] + 1, "Next") if listing["page"] < listing["pages"] else '<span class="page off">Next</span>'
    return (f'<nav id="pager" data-part aria-label="pages">{prev}<span id="where">page {listing["page"]} of {listing["pages"]}, '
            f'{listing["total"]} Application{"" if listing["total"] == 1 else "s"}</span>{nxt}</nav>')


def list_page(listing: dict, q: views.Query, pass_info: dict, problems: list[str] = ()) -> str:
    """The whole document of ``/`` for ``listing`` (``views.listing``) of query ``q``;
    ``problems`` (``views.Query.problems``): the query's values that fell back to a default."""
    said = (f'<p class="notice" id="notice">Ignored: {t("; ".join(problems))}; the default is shown.</p>'
            if problems else "")
    body = (f'<h1>Applications</h1>{said}{last_pass(pass_info)}{counts(listing, q)}{filters(listing, q)}'
            f'<div class="scroll"><table id="apps">{head(q)}{rows(listing["items"])}</table></div>{pager(listing, q)}')
    return layout("Applications", body, "list")


def list_parts(listing: dict, q: views.Query, pass_info: dict) -> str:
    """``/_parts/``: the list's parts that change (the last pass, counts, headings with their
    sort links, rows, pager) for query ``q``, as ``list_page`` renders them."""
    return fragment(f'{last_pass(pass_info)}{counts(listing, q)}'
                    f'<table>{head(q)}{rows(listing["items"])}</table>{pager(listing, q)}')
