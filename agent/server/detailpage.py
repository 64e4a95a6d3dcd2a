"""The HTML of ``/applications/NS/NAME``: ``detail.detail``'s answer as a page. Pure; escaping
as in ``pages`` (every value through ``pages.t``/``pages.attr``, links only ``https://``)."""

from __future__ import annotations

from agent.server.pages import attr, layout, link, t

HIDDEN_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)  # large and shown elsewhere


def commit_block(label: str, c: dict | None) -> str:
    if not c:
        return f"<dt>{label}</dt><dd>-</dd>"
    sha = link(c["url"], c["sha"][:12])
    who = f' by {t(c["author"])}' if c.get("author") else ""
    when = f' on {t(c["date"])}' if c.get("date") else ""
    subject = f'<div class="subject">{t(c["subject"])}</div>' if c.get("subject") else ""
    return f"<dt>{label}</dt><dd><code>{sha}</code>{who}{when}{subject}</dd>"


def diff_block(diff: dict, changed: dict | None) -> str:
    if diff["text"] is None:
        return f'<p class="muted">No diff: {t(diff["why"])}.</p>'
    lines = []
    for line in diff["text"].splitlines():
        cls = "add" if line.startswith("+") and not line.startswith("+++") else \
            "del" if line.startswith("-") and not line.startswith("---") else "hunk" if line.startswith("@@") else ""
        lines.append(f'<span class="{cls}">{attr(line)}</span>' if cls else attr(line))
    more = f' <span class="muted">(also on {link(changed["url"], "the Git host")})</span>' if changed and changed.get("url") else ""
    return f'<p>The change to this file{more}:</p><pre class="diff" id="diff">' + "\n".join(lines) + "</pre>"


def table(headings: tuple[str, ...], keys: tuple[str, ...], items: list[dict], empty: str, css: str = "") -> str:
    if not items:
        return f'<p class="muted">{empty}</p>'
    head = "".join(f"<th>{h}</th>" for h in headings)
    body = "".join("<tr>" + "".join(f'<td class="c-{k} s-{attr(i.get(k))}">{t(i.get(k))}</td>' for k in keys) + "</tr>"
                   for i in items)
    return f'<div class="scroll"><table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def pairs(values: dict) -> str:
    items = [(k, v) for k, v in sorted(values.items()) if k not in HIDDEN_ANNOTATIONS]
    if not items:
        return '<span class="muted">none</span>'
    return '<ul class="pairs">' + "".join(f"<li><code>{t(k)}</code>: {t(v)}</li>" for k, v in items) + "</ul>"


def detail_page(d: dict) -> str:
    r = d["row"]
    healthy = d["verdict"] == "Synced and healthy"
    source = link(d["source"]["url"], d["source"]["path"])
    body = (f'<p class="crumbs"><a href="/">Applications</a> / {t(d["namespace"])}</p>'
            f'<h1>{t(d["name"])}</h1>'
            f'<p id="verdict" class="verdict {"ok" if healthy else "bad"}">{t(d["verdict"])}</p>'
            f'<dl class="facts"><dt>Health</dt><dd class="s-{attr(r["health"])}">{t(r["health"])}</dd>'
            f'<dt>Sync</dt><dd class="s-{attr(r["sync"])}">{t(r["sync"])}</dd>'
            f'<dt>Ready</dt><dd>{t(r["ready"])} {t(r["reason"])}</dd><dt>Message</dt><dd>{t(r["message"])}</dd>'
            f'<dt>Source</dt><dd>{source} in {t(d["source"]["repository"])}</dd>'
            f'<dt>Image</dt><dd>{t(r["image"])}</dd><dt>Replicas</dt><dd>{t(r["replicas"])}</dd>'
            f'{commit_block("Synced commit", d["synced"])}{commit_block("Last changed by", d["changed"])}</dl>'
            f'<h2>Last change</h2>{diff_block(d["diff"], d["changed"])}'
            '<h2>Children</h2>' + table(("Kind", "Name", "Health", "Message"), ("kind", "name", "health", "message"),
                                        d["children"], "No children.") +
            '<h2>Pods</h2>' + table(("Pod", "Phase", "Ready", "Reason", "Message"),
                                    ("name", "phase", "ready", "reason", "message"), d["pods"], "No pods.", "pods") +
            '<h2>Conditions</h2>' + table(("Type", "Status", "Reason", "Message", "Since"),
                                          ("type", "status", "reason", "message", "lastTransitionTime"),
                                          d["conditions"], "No conditions yet.") +
            '<h2>History</h2>' + table(("Commit", "First synced", "Last synced", "Passes"),
                                       ("revision", "firstSyncedAt", "lastSyncedAt", "passes"), d["history"],
                                       "No history yet.") +
            f'<h2>Labels</h2>{pairs(d["labels"])}<h2>Annotations</h2>{pairs(d["annotations"])}')
    return layout(f'{d["namespace"]}/{d["name"]}', body, "detail")
